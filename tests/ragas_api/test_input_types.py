"""Every argument of every per-sample metric's ``ascore`` is type-checked at the call, as ragas'
input models check theirs: one ``ValueError`` naming the argument, the type expected and what was
given, before anything is computed or asked (a text is never split into characters, ``None`` is
never a text, a number in a list of texts is never joined)."""

from __future__ import annotations

import inspect
import typing
from typing import Any

import pytest

pytest.importorskip("openai")
pytest.importorskip("pydantic")

from openai import AsyncOpenAI

from openai_stub import StubServer, oracle
from qa_eval.embeddings import embedding_factory
from qa_eval.errors import SetupError
from qa_eval.extras import MissingExtra
from qa_eval.llms import llm_factory
from qa_eval.messages import HumanMessage
from qa_eval.metrics import collections
from qa_eval.metrics.collections import BaseMetric, DeterministicMetric

GOOD: dict[str, Any] = {
    "user_input": "When was it?",
    "response": "It was in 1967.",
    "reference": "It was in 1967.",
    "retrieved_contexts": ["The game was played in 1967."],
    "reference_contexts": ["The game was played in 1967."],
    "reference_topics": ["sports"],
    "reference_tool_calls": [],
    "rubrics": {"score1_description": "bad", "score5_description": "good"},
}
METRICS = sorted(
    name
    for name in collections.__all__
    if isinstance(getattr(collections, name), type)
    and issubclass(getattr(collections, name), BaseMetric)
    and getattr(collections, name) not in (BaseMetric, DeterministicMetric)
)


@pytest.fixture(scope="module")
def server() -> Any:
    with StubServer(oracle()) as stub:
        yield stub


def _metric(name: str, url: str) -> Any:
    cls = getattr(collections, name)
    parameters = inspect.signature(cls.__init__).parameters
    client = AsyncOpenAI(base_url=url, api_key="sk-test")
    arguments: dict[str, Any] = {}
    if "llm" in parameters:
        arguments["llm"] = llm_factory("gpt-4o-mini", client=client, cache=False)
    if "embeddings" in parameters:
        arguments["embeddings"] = embedding_factory("openai", client=client)
    try:
        return cls(**arguments)
    except MissingExtra as e:  # DataCompyScore without pandas and datacompy
        pytest.skip(str(e))


def _wrong(expected: Any) -> Any:
    """A value of the wrong type for an annotation: a number for a text, a text for a list."""
    words = str(expected)
    if "list" in words:
        return "a string"
    if "dict" in words:
        return ["not", "a", "dict"]
    return 123


@pytest.mark.parametrize("name", METRICS)
def test_every_argument_of_every_metric_is_checked(name: str, server: Any) -> None:
    metric = _metric(name, server.url)
    hints = typing.get_type_hints(type(metric).ascore)
    hints.pop("return", None)
    parameters = [p for p in inspect.signature(metric.ascore).parameters if p in hints]
    assert parameters, name
    user_input = "When was it?"
    if "list" in str(hints.get("user_input", "")):
        user_input = [HumanMessage(content="When was it?")]
    before = len(server.chat_requests)
    for parameter in parameters:
        row = {p: GOOD[p] for p in parameters}
        if "user_input" in row:
            row["user_input"] = user_input
        row[parameter] = _wrong(hints[parameter])
        own = type(metric).__name__  # AgentGoalAccuracy is AgentGoalAccuracyWithReference
        with pytest.raises(ValueError, match=f"^{own}: {parameter} must be ") as caught:
            metric.score(**row)
        assert isinstance(caught.value, SetupError) and "\n" not in str(caught.value)
    assert len(server.chat_requests) == before  # refused before any call


@pytest.mark.parametrize(
    ("metric", "inputs", "message"),
    [
        (
            "Faithfulness",
            {"retrieved_contexts": "a string"},
            "retrieved_contexts must be a list of str, got str 'a string'",
        ),
        ("Faithfulness", {"response": None}, "response must be str, got None"),
        (
            "Faithfulness",
            {"retrieved_contexts": [1, 2]},
            "retrieved_contexts must be a list of str, got list with int 1 at [0]",
        ),
        ("ExactMatch", {"response": None}, "response must be str, got None"),
        ("BleuScore", {"reference": 123}, "reference must be str, got int 123"),
        (
            "QuotedSpansAlignment",
            {"retrieved_contexts": [1, 2]},
            "retrieved_contexts must be a list of str, got list with int 1 at [0]",
        ),
        (
            "InstanceSpecificRubrics",
            {"rubrics": {"score1_description": 1}},
            "rubrics must be a dict of str to str, got dict with str 'score1_description': int 1",
        ),
        (
            "ToolCallAccuracy",
            {"user_input": "hi"},
            "user_input must be a list of messages, got str 'hi'",
        ),
    ],
)
def test_what_a_new_user_tripped_on(
    metric: str, inputs: dict[str, Any], message: str, server: Any
) -> None:
    scorer = _metric(metric, server.url)
    parameters = inspect.signature(scorer.ascore).parameters
    row = {p: GOOD[p] for p in parameters if p in GOOD}
    row.update(inputs)
    with pytest.raises(ValueError) as caught:
        scorer.score(**row)
    assert str(caught.value) == f"{metric}: {message}"


def test_none_where_the_signature_allows_it_is_taken(server: Any) -> None:
    """``InstanceSpecificRubrics`` takes ``retrieved_contexts=None`` (its annotation says so):
    whatever the scripted judge makes of the rubric, the inputs are not refused."""
    scorer = _metric("InstanceSpecificRubrics", server.url)
    try:
        scorer.score(rubrics=GOOD["rubrics"], user_input="q", response="r", retrieved_contexts=None)
    except SetupError as e:
        pytest.fail(f"refused: {e}")
    except Exception:  # the judge's reply: not what is tested here
        pass
