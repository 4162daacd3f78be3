"""Parity with ragas 0.4.3 for ContextEntityRecall, ContextRelevance, NoiseSensitivity and
SQLSemanticEquivalence: the same judge verdicts must give the same values.

One scripted OpenAI-compatible server answers both sides over real HTTP: ours through
``qa_eval.llms.llm_factory``, ragas' through its ``llm_factory``, both over one ``AsyncOpenAI``
client. The script recognises each prompt (ours by its ``[qa-eval:...]`` marker, ragas' by the
first line of its instruction), reads what is judged from it and answers from one :class:`Verdicts`
table in each side's reply format. The two sides ask differently (qa-eval judges every statement
against every chunk in one call, ragas one call per chunk and statement list), so the table is
keyed by what is judged (a statement and the text it is judged against), never by the call.

Skipped unless ragas is importable; see ``test_ragas_parity.py`` for the separate environment.
"""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
pytest.importorskip("ragas")

from ragas.llms import llm_factory
from ragas.metrics.collections import (
    ContextEntityRecall,
    ContextRelevance,
    NoiseSensitivity,
    SQLSemanticEquivalence,
)

from openai_stub import StubServer
from parity_script import ParityScript, numbered, parity_stub, tagged
from qa_eval.llms import llm_factory as our_llm_factory
from qa_eval.metrics import collections as ours

pytestmark = pytest.mark.filterwarnings("ignore:FUNCTIONS is deprecated:DeprecationWarning")

RAGAS_FIRST_LINES = {
    "Given a text, extract unique entities without repetition.": "entities",
    "You are a world class expert designed to evaluate the relevance score": "rating-direct",
    "As a specially designed expert to assess the relevance score": "rating-second",
    "analyze the complexity of each sentence in the answer": "statements",
    "judge the faithfulness of a series of statements": "nli",
    "Explain and compare two SQL queries": "sql",
}


@dataclass
class Verdicts:
    """What the judge decides, whichever side asks."""

    entities: dict[str, list[str]] = field(default_factory=dict)
    ratings: dict[str, int] = field(default_factory=dict)
    """"direct" / "second" -> 0, 1 or 2"""
    statements: dict[str, list[str]] = field(default_factory=dict)
    support: dict[str, set[str]] = field(default_factory=dict)
    """statement -> the texts (chunks, or the reference) it can be inferred from"""
    sql: dict[str, Any] = field(default_factory=dict)


class Script(ParityScript[Verdicts]):
    """Answers our prompts and ragas' from the same :class:`Verdicts`."""

    RAGAS_PHRASES = RAGAS_FIRST_LINES

    def ours(self, kind: str, text: str) -> Any:
        v = self.table
        if kind == "entities":
            return {"entities": v.entities[tagged(text, "text")]}
        if kind.startswith("context-rating-"):
            return {"rating": v.ratings[kind.rsplit("-", 1)[1]]}
        if kind == "faithfulness-statements":
            return {"statements": v.statements[tagged(text, "answer")]}
        if kind == "statements-support":
            chunks = numbered(text, "chunk")
            return {
                "verdicts": [
                    {"statement": i, "chunks": [k for k, c in chunks if c in v.support[s]]}
                    for i, s in numbered(text, "statement")
                ]
            }
        if kind == "faithfulness-verdicts":
            context = tagged(text, "context")
            return {
                "verdicts": [
                    {"statement": i, "reason": "r", "verdict": int(context in v.support[s])}
                    for i, s in numbered(text, "statement")
                ]
            }
        if kind == "sql-equivalence":
            return v.sql
        raise ValueError(kind)

    def theirs(self, kind: str, data: dict[str, Any]) -> Any:
        v = self.table
        if kind == "entities":
            return {"entities": v.entities[data["text"]]}
        if kind.startswith("rating-"):
            return {"rating": v.ratings[kind.split("-", 1)[1]]}
        if kind == "statements":
            return {"statements": v.statements[data["answer"]]}
        if kind == "nli":
            context = data["context"]
            return {
                "statements": [
                    {"statement": s, "reason": "r", "verdict": int(context in v.support[s])}
                    for s in data["statements"]
                ]
            }
        if kind == "sql":
            return v.sql
        raise ValueError(kind)


@dataclass
class Harness:
    server: StubServer
    script: Script
    loop: asyncio.AbstractEventLoop
    llm: Any
    our_llm: Any

    def both(
        self,
        verdicts: Verdicts,
        theirs: Callable[[Any], Any],
        mine: Callable[[Any], Any],
    ) -> tuple[Any, Any]:
        """ragas' result and ours for one case answered from ``verdicts``."""
        self.script.use(verdicts)
        their = self.loop.run_until_complete(theirs(self.llm))
        our = self.loop.run_until_complete(mine(self.our_llm))
        assert not self.script.problems, self.script.problems
        return their, our


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    script = Script(Verdicts())
    with parity_stub(script, tmp_path_factory) as (server, loop, client):
        yield Harness(
            server,
            script,
            loop,
            llm_factory("gpt-4o-mini", client=client),
            our_llm_factory("gpt-4o-mini", client=client, cache=False),
        )


WORDS = [
    "Paris",
    "France",
    "Ulm",
    "Einstein",
    "1879",
    "Nobel",
    "Danube",
    "Berlin",
    "1921",
    "Zurich",
    "Bern",
    "Physics",
]


@pytest.mark.parametrize("seed", range(12))
def test_context_entity_recall_matches_ragas(harness: Harness, seed: int) -> None:
    rng = random.Random(seed)
    reference = "The reference text."
    contexts = ["First chunk.", "Second chunk."]
    wanted = rng.sample(WORDS, rng.randint(1, 6))
    found = rng.sample(WORDS, rng.randint(0, 8))
    verdicts = Verdicts(entities={reference: wanted, "\n".join(contexts): found})
    their, our = harness.both(
        verdicts,
        lambda llm: ContextEntityRecall(llm=llm).ascore(
            reference=reference, retrieved_contexts=contexts
        ),
        lambda llm: ours.ContextEntityRecall(llm=llm).ascore(
            reference=reference, retrieved_contexts=contexts
        ),
    )
    assert our.value == their.value  # the same float operations: equal to the last bit
    assert our.usage.calls == 2 and our.reason


def test_entity_recall_without_reference_entities_is_zero_in_ragas_not_computed_here(
    harness: Harness,
) -> None:
    verdicts = Verdicts(entities={"r": [], "c": ["Paris"]})
    their, our = harness.both(
        verdicts,
        lambda llm: ContextEntityRecall(llm=llm).ascore(reference="r", retrieved_contexts=["c"]),
        lambda llm: ours.ContextEntityRecall(llm=llm).ascore(
            reference="r", retrieved_contexts=["c"]
        ),
    )
    assert their.value == 0.0 and our.value is None and our.reason


@pytest.mark.parametrize("direct", [0, 1, 2])
@pytest.mark.parametrize("second", [0, 1, 2])
def test_context_relevance_matches_ragas(harness: Harness, direct: int, second: int) -> None:
    verdicts = Verdicts(ratings={"direct": direct, "second": second})
    inputs = {
        "user_input": "When was Einstein born?",
        "retrieved_contexts": ["Albert Einstein was born in 1879.", "He was born in Ulm."],
    }
    their, our = harness.both(
        verdicts,
        lambda llm: ContextRelevance(llm=llm).ascore(**inputs),
        lambda llm: ours.ContextRelevance(llm=llm).ascore(**inputs),
    )
    assert our.value == their.value
    assert harness.script.count("ours") == 2 == harness.script.count("ragas")


@pytest.mark.parametrize(
    "contexts", [["When was Einstein born?"], ["Einstein"], ["   "]], ids=["same", "in", "blank"]
)
def test_context_relevance_edge_cases_match_ragas_without_calls(
    harness: Harness, contexts: list[str]
) -> None:
    inputs = {"user_input": "When was Einstein born?", "retrieved_contexts": contexts}
    their, our = harness.both(
        Verdicts(),
        lambda llm: ContextRelevance(llm=llm).ascore(**inputs),
        lambda llm: ours.ContextRelevance(llm=llm).ascore(**inputs),
    )
    assert our.value == their.value == 0.0 and not harness.script.calls


def _noise_case(seed: int) -> tuple[Verdicts, dict[str, Any]]:
    """Random statements and random support of each by each chunk and by the reference."""
    rng = random.Random(seed)
    question, response, reference = "Q?", "The response.", "The reference."
    contexts = [f"Chunk {k}." for k in range(rng.randint(1, 4))]
    ref_statements = [f"Reference fact {i}." for i in range(rng.randint(1, 3))]
    resp_statements = [f"Response claim {j}." for j in range(rng.randint(1, 4))]
    support = {
        s: {t for t in [*contexts, reference] if rng.random() < 0.45}
        for s in [*ref_statements, *resp_statements]
    }
    verdicts = Verdicts(
        statements={reference: ref_statements, response: resp_statements}, support=support
    )
    inputs = {
        "user_input": question,
        "response": response,
        "reference": reference,
        "retrieved_contexts": contexts,
    }
    return verdicts, inputs


@pytest.mark.parametrize("mode", ["relevant", "irrelevant"])
@pytest.mark.parametrize("seed", range(15))
def test_noise_sensitivity_matches_ragas(harness: Harness, seed: int, mode: str) -> None:
    verdicts, inputs = _noise_case(seed)
    their, our = harness.both(
        verdicts,
        lambda llm: NoiseSensitivity(llm=llm, mode=mode).ascore(**inputs),  # type: ignore[arg-type]
        lambda llm: ours.NoiseSensitivity(llm=llm, mode=mode).ascore(**inputs),  # type: ignore[arg-type]
    )
    assert our.value == pytest.approx(their.value, abs=1e-15)
    chunks = len(inputs["retrieved_contexts"])
    assert harness.script.count("ragas") == 3 + 2 * chunks  # ours: four, whatever chunks
    assert harness.script.count("ours") == 4 and our.reason


@pytest.mark.parametrize("equivalent", [True, False])
def test_sql_semantic_equivalence_matches_ragas(harness: Harness, equivalent: bool) -> None:
    verdicts = Verdicts(
        sql={
            "response_explanation": "ids of active users",
            "reference_explanation": "ids of users whose flag is 1",
            "equivalent": equivalent,
        }
    )
    inputs = {
        "response": "SELECT id FROM users WHERE active = true;",
        "reference": "SELECT id FROM users WHERE active = 1;",
        "reference_contexts": ["Table users: id (INT), active (BOOLEAN)"],
    }
    their, our = harness.both(
        verdicts,
        lambda llm: SQLSemanticEquivalence(llm=llm).ascore(**inputs),
        lambda llm: ours.SQLSemanticEquivalence(llm=llm).ascore(**inputs),
    )
    assert our.value == their.value
    assert "ids of active users" in our.reason and "ids of active users" in their.reason
