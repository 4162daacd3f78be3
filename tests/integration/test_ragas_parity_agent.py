"""Parity with ragas 0.4.3's agent and rubric collections metrics on identical verdicts:
AgentGoalAccuracyWithReference / WithoutReference, TopicAdherence (precision, recall, f1),
DomainSpecificRubrics (RubricsScoreWith(out)Reference) and InstanceSpecificRubrics.

One scripted OpenAI-compatible server (``openai_stub.StubServer``) answers both sides over real
HTTP, ours through ``qa_eval.metrics.collections`` and ragas' through its own classes, each with an
``AsyncOpenAI`` client. The script recognises each prompt (ours by its ``[qa-eval:...]`` marker,
ragas' by its instruction), reads what is judged from it and answers from one table of verdicts,
in each side's reply format. The conversation is keyed by its transcript, so both sides must also
render the messages identically. Cases are drawn at random (seeded).

Skipped unless ragas is importable (it cannot share qa-eval's environment; see
``test_ragas_parity.py`` for the separate venv).
"""

from __future__ import annotations

import asyncio
import math
import os
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
pytest.importorskip("ragas")

from ragas import messages as rm
from ragas.llms import llm_factory
from ragas.metrics import collections as rc

from openai_stub import StubServer
from parity_script import ParityScript, numbered, parity_stub, tagged
from qa_eval import messages as qm
from qa_eval.llms import llm_factory as our_llm_factory
from qa_eval.metrics import collections as qc

pytestmark = pytest.mark.filterwarnings("ignore:FUNCTIONS is deprecated:DeprecationWarning")

RAGAS_INSTRUCTIONS = {
    "Given an agentic workflow comprised of Human, AI and Tools, identify": "workflow",
    "Given user goal, desired outcome and achieved outcome compare them": "compare",
    "Given an interaction between Human, Tool and AI, extract the topics": "topics",
    "Given a topic, classify if the AI refused to answer": "refused",
    "Given a set of topics classify if the topic falls into any": "classify",
    "Your task is to assign an appropriate score and provide feedback": "rubric",
}
OUR_MARKERS = {
    "[qa-eval:agent-goal-outcome]": "workflow",
    "[qa-eval:agent-goal-compare]": "compare",
    "[qa-eval:topic-extraction]": "topics",
    "[qa-eval:topic-refused]": "refused",
    "[qa-eval:topic-classification]": "classify",
    "[qa-eval:rubric-score]": "rubric",
}


@dataclass
class Table:
    """The judge's decisions, keyed by what is judged, whichever side asks."""

    workflows: dict[str, tuple[str, str]] = field(default_factory=dict)
    """transcript -> (user goal, end state)"""
    matches: dict[tuple[str, str], int] = field(default_factory=dict)
    """(desired, arrived) -> 1 when the arrived outcome achieves the desired one"""
    topics: dict[str, list[str]] = field(default_factory=dict)
    """transcript -> the topics the human raises"""
    refused: set[str] = field(default_factory=set)
    in_reference: set[str] = field(default_factory=set)
    scores: dict[str, int] = field(default_factory=dict)
    """response -> rubric score"""


class Script(ParityScript[Table]):
    """Answers both sides' prompts from the current :class:`Table`."""

    OUR_MARKERS = OUR_MARKERS
    RAGAS_PHRASES = RAGAS_INSTRUCTIONS

    def ours(self, kind: str, text: str) -> dict[str, Any]:
        t = self.table
        if kind == "workflow":
            goal, end = t.workflows[tagged(text, "conversation")]
            return {"user_goal": goal, "end_state": end}
        if kind == "compare":
            pair = (tagged(text, "desired_outcome"), tagged(text, "arrived_outcome"))
            return {"reason": "r", "verdict": t.matches[pair]}
        if kind == "topics":
            return {"topics": t.topics[tagged(text, "conversation")]}
        if kind == "refused":
            topics = numbered(text, "topic")
            return {"verdicts": [{"topic": i, "refused": s in t.refused} for i, s in topics]}
        if kind == "classify":
            topics = numbered(text, "topic")
            verdicts = [{"topic": i, "in_reference": s in t.in_reference} for i, s in topics]
            return {"verdicts": verdicts}
        return {"feedback": "f", "score": t.scores[tagged(text, "response")]}

    def theirs(self, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        t = self.table
        if kind == "workflow":
            goal, end = t.workflows[data["workflow"]]
            return {"user_goal": goal, "end_state": end}
        if kind == "compare":
            pair = (data["desired_outcome"], data["arrived_outcome"])
            return {"reason": "r", "verdict": str(t.matches[pair])}
        if kind == "topics":
            return {"topics": t.topics[data["user_input"]]}
        if kind == "refused":
            return {"refused_to_answer": data["topic"] in t.refused}
        if kind == "classify":
            return {"classifications": [s in t.in_reference for s in data["topics"]]}
        return {"feedback": "f", "score": t.scores[data["response"]]}


@dataclass
class Harness:
    """One stub, one loop and both sides' judges for the module."""

    server: StubServer
    script: Script
    loop: asyncio.AbstractEventLoop
    ours: Any
    theirs: Any

    def run(self, table: Table, ours: Any, theirs: Any) -> tuple[Any, Any, dict[str, int]]:
        """Our result and ragas' for one case answered from ``table``, and the calls of each."""
        self.script.use(table)
        mine = self.loop.run_until_complete(ours)
        result = self.loop.run_until_complete(theirs)
        assert not self.script.problems, self.script.problems
        return mine, result, {s: self.script.count(s) for s in ("ours", "ragas")}


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    script = Script(Table())
    with parity_stub(script, tmp_path_factory) as (server, loop, client):
        ours = our_llm_factory("gpt-4o-mini", client=client, cache=False)
        yield Harness(server, script, loop, ours, llm_factory("gpt-4o-mini", client=client))


def conversation(rng: random.Random) -> tuple[list[Any], list[Any]]:
    """The same random conversation as qa-eval's messages and as ragas'."""
    ours: list[Any] = []
    theirs: list[Any] = []
    for turn in range(rng.randint(1, 3)):
        text = f"request {turn} {rng.choice(['book', 'find', 'cancel'])} {rng.randint(1, 99)}"
        ours.append(qm.HumanMessage(content=text))
        theirs.append(rm.HumanMessage(content=text))
        if rng.random() < 0.6:
            args = {"item": rng.choice(["table", "flight"]), "n": rng.randint(1, 9)}
            ours.append(qm.AIMessage(content="", tool_calls=[qm.ToolCall(name="tool", args=args)]))
            theirs.append(
                rm.AIMessage(content="", tool_calls=[rm.ToolCall(name="tool", args=args)])
            )
            ours.append(qm.ToolMessage(content=f"done {args['n']}"))
            theirs.append(rm.ToolMessage(content=f"done {args['n']}"))
        reply = f"answer {turn}"
        ours.append(qm.AIMessage(content=reply))
        theirs.append(rm.AIMessage(content=reply))
    return ours, theirs


def _transcript(messages: list[Any]) -> str:
    return "\n".join(m.pretty_repr() for m in messages)


@pytest.mark.parametrize("seed", range(6))
def test_agent_goal_accuracy_matches_ragas(harness: Harness, seed: int) -> None:
    rng = random.Random(seed)
    ours, theirs = conversation(rng)
    goal, end, reference = f"goal {seed}", f"end {seed}", f"reference {seed}"
    verdict = rng.randint(0, 1)
    table = Table(
        workflows={_transcript(theirs): (goal, end)},
        matches={(reference, end): verdict, (goal, end): 1 - verdict},
    )
    mine, result, calls = harness.run(
        table,
        qc.AgentGoalAccuracyWithReference(llm=harness.ours).ascore(
            user_input=ours, reference=reference
        ),
        rc.AgentGoalAccuracyWithReference(llm=harness.theirs).ascore(
            user_input=theirs, reference=reference
        ),
    )
    assert mine.value == result.value == float(verdict)
    assert calls == {"ours": 2, "ragas": 2}
    mine, result, calls = harness.run(
        table,
        qc.AgentGoalAccuracyWithoutReference(llm=harness.ours).ascore(user_input=ours),
        rc.AgentGoalAccuracyWithoutReference(llm=harness.theirs).ascore(user_input=theirs),
    )
    assert mine.value == result.value == float(1 - verdict)
    assert calls == {"ours": 2, "ragas": 2}
    assert qc.AgentGoalAccuracy is qc.AgentGoalAccuracyWithReference
    assert rc.AgentGoalAccuracy is rc.AgentGoalAccuracyWithReference


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("mode", ["precision", "recall", "f1"])
def test_topic_adherence_matches_ragas(harness: Harness, seed: int, mode: str) -> None:
    rng = random.Random(seed)
    ours, theirs = conversation(rng)
    topics = [f"topic {i}" for i in range(rng.randint(1, 6))]
    table = Table(
        topics={_transcript(theirs): topics},
        refused={t for t in topics if rng.random() < 0.4},
        in_reference={t for t in topics if rng.random() < 0.6},
    )
    references = ["reference a", "reference b"]
    mine, result, calls = harness.run(
        table,
        qc.TopicAdherence(llm=harness.ours, mode=mode).ascore(  # type: ignore[arg-type]
            user_input=ours, reference_topics=references
        ),
        rc.TopicAdherence(llm=harness.theirs, mode=mode).ascore(
            user_input=theirs, reference_topics=references
        ),
    )
    assert mine.value == result.value  # the same arithmetic, to the last bit
    # ragas asks the refusal of each topic apart; qa-eval asks all in one call
    assert calls == {"ours": 3, "ragas": 2 + len(topics)}


def test_topic_adherence_without_topics_is_nan_in_ragas_and_none_in_qa_eval(
    harness: Harness,
) -> None:
    ours, theirs = conversation(random.Random(99))
    mine, result, calls = harness.run(
        Table(topics={_transcript(theirs): []}),
        qc.TopicAdherence(llm=harness.ours).ascore(user_input=ours, reference_topics=["a"]),
        rc.TopicAdherence(llm=harness.theirs).ascore(user_input=theirs, reference_topics=["a"]),
    )
    assert math.isnan(result.value) and mine.value is None
    assert calls == {"ours": 1, "ragas": 1}


RUBRIC_CLASSES = [
    ("DomainSpecificRubrics", {}),
    ("DomainSpecificRubrics", {"with_reference": True}),
    ("RubricsScoreWithoutReference", {}),
    ("RubricsScoreWithReference", {}),
]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(("name", "kwargs"), RUBRIC_CLASSES, ids=lambda v: str(v or ""))
def test_domain_rubrics_match_ragas(
    harness: Harness, seed: int, name: str, kwargs: dict[str, Any]
) -> None:
    rng = random.Random(seed)
    response = f"response {seed} {name} {kwargs}"
    row = {
        "user_input": f"question {seed}",
        "response": response,
        "retrieved_contexts": [f"context {i}" for i in range(rng.randint(0, 3))],
        "reference": f"reference {seed}",
    }
    mine, result, calls = harness.run(
        Table(scores={response: rng.randint(1, 5)}),
        getattr(qc, name)(llm=harness.ours, **kwargs).ascore(**row),
        getattr(rc, name)(llm=harness.theirs, **kwargs).ascore(**row),
    )
    assert mine.value == result.value and mine.reason == result.reason == "f"
    assert calls == {"ours": 1, "ragas": 1}
    ours_metric = getattr(qc, name)(llm=harness.ours, **kwargs)
    theirs_metric = getattr(rc, name)(llm=harness.theirs, **kwargs)
    assert ours_metric.name == theirs_metric.name
    assert ours_metric.rubrics.keys() == theirs_metric.rubrics.keys()


@pytest.mark.parametrize("seed", range(4))
def test_instance_rubrics_match_ragas(harness: Harness, seed: int) -> None:
    rng = random.Random(seed)
    levels = sorted(rng.sample(range(1, 11), rng.randint(2, 5)))
    rubrics = {f"score{n}_description": f"criterion {n}" for n in levels}
    response = f"instance response {seed}"
    mine, result, calls = harness.run(
        Table(scores={response: rng.choice(levels)}),
        qc.InstanceSpecificRubrics(llm=harness.ours).ascore(
            rubrics=rubrics, user_input="q", response=response
        ),
        rc.InstanceSpecificRubrics(llm=harness.theirs).ascore(
            rubrics=rubrics, user_input="q", response=response
        ),
    )
    assert mine.value == result.value
    assert calls == {"ours": 1, "ragas": 1}
