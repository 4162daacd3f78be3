"""Parity with ragas 0.4.3 for the answer-side collections metrics: AnswerAccuracy,
ResponseGroundedness, FactualCorrectness, AnswerCorrectness and SummaryScore must give ragas'
value when the judge gives both the same verdicts.

One scripted server (``openai_stub.StubServer``) answers both sides over real HTTP: ours through
``qa_eval.llms.llm_factory`` and ragas' through its own ``llm_factory``, both over one
``AsyncOpenAI`` client. The script recognises our prompts by their ``[qa-eval:...]`` marker and
ragas' by a phrase of their instruction, reads what is judged from the prompt (ours: the tagged
blocks; ragas': the JSON input after "Now perform the same with the following input") and answers
from one :class:`Table` of verdicts in each side's reply format. Tables are drawn at random from a
seeded generator, so many verdict patterns are compared, including the edges.

Where qa-eval's policy differs on purpose (no claims or statements, no questions), the test
asserts the difference explicitly. Skipped unless ragas is importable (see
``test_ragas_parity.py`` for the separate environment it needs).
"""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
pytest.importorskip("ragas")

from ragas.embeddings.base import embedding_factory
from ragas.llms import llm_factory
from ragas.metrics import collections as theirs

from openai_stub import StubServer
from parity_script import ParityScript, numbered, parity_stub, tagged
from qa_eval.embeddings import embedding_factory as our_embedding_factory
from qa_eval.llms import llm_factory as our_llm_factory
from qa_eval.metrics import collections as ours

pytestmark = pytest.mark.filterwarnings("ignore:FUNCTIONS is deprecated:DeprecationWarning")

EMBEDDING_MODEL = "text-embedding-3-small"
CASES = 12
"""Random verdict tables per metric (each case is a handful of calls on both sides)."""

OUR_MARKERS = {
    "[qa-eval:answer-accuracy-rater1]": "accuracy1",
    "[qa-eval:answer-accuracy-rater2]": "accuracy2",
    "[qa-eval:groundedness-rater1]": "grounded1",
    "[qa-eval:groundedness-rater2]": "grounded2",
    "[qa-eval:claim-decomposition]": "claims",
    "[qa-eval:faithfulness-verdicts]": "nli",
    "[qa-eval:faithfulness-statements]": "statements",
    "[qa-eval:correctness-classification]": "classify",
    "[qa-eval:summary-keyphrases]": "keyphrases",
    "[qa-eval:summary-questions]": "questions",
    "[qa-eval:summary-answers]": "answers",
}
RAGAS_PHRASES = {  # a phrase of each ragas prompt's instruction (ragas.metrics.collections.*.util)
    "I will rate the User Answer in comparison to the Reference Answer": "accuracy2",
    "rating a User Answer given a Question": "accuracy1",
    "evaluate the groundedness of an assertion": "grounded1",
    "assessing the strength of connections between statements": "grounded2",
    "Decompose and break down each of the input sentences": "claims",
    "judge the faithfulness of a series of statements": "nli",
    "analyze the complexity of each sentence in the answer": "statements",
    "Given a ground truth and an answer statements": "classify",
    "Extract keyphrases of type": "keyphrases",
    "generate closed-ended questions": "questions",
    "Based on the list of close-ended": "answers",
}


@dataclass
class Table:
    """What the judge decides, keyed by what is judged, whichever side asks."""

    ratings: dict[tuple[str, str], int] = field(default_factory=dict)
    """(rater, the answer it rates) -> rating (accuracy: the answer under test; groundedness:
    the response)"""
    claims: dict[str, list[str]] = field(default_factory=dict)
    """text -> its claims (factual correctness) or statements (answer correctness)"""
    supported: dict[str, int] = field(default_factory=dict)
    """claim -> 1 if the other text supports it (NLI)"""
    tp: set[str] = field(default_factory=set)
    """answer statements the reference supports (answer correctness; the others are FP)"""
    stated: set[str] = field(default_factory=set)
    """reference statements the answer states (answer correctness; the others are FN)"""
    keyphrases: list[str] = field(default_factory=list)
    questions: list[str] = field(default_factory=list)
    answered: dict[str, int] = field(default_factory=dict)
    """question -> 1 if the summary answers it"""


class Script(ParityScript[Table]):
    """Answers our prompts and ragas' from one :class:`Table`."""

    OUR_MARKERS = OUR_MARKERS
    RAGAS_PHRASES = RAGAS_PHRASES
    FIRST_LINE = False

    def ours(self, kind: str, text: str) -> dict[str, Any]:
        t = self.table
        if kind in ("accuracy1", "accuracy2"):
            return {"rating": t.ratings[(kind, tagged(text, "answer"))]}
        if kind in ("grounded1", "grounded2"):
            return {"rating": t.ratings[(kind, tagged(text, "response"))]}
        if kind == "claims":
            return {"claims": t.claims[tagged(text, "text")]}
        if kind == "statements":
            return {"statements": t.claims[tagged(text, "answer")]}
        if kind == "nli":
            return {
                "verdicts": [
                    {"statement": i, "reason": "r", "verdict": t.supported[s]}
                    for i, s in numbered(text, "statement")
                ]
            }
        if kind == "classify":
            answer = numbered(tagged(text, "answer_statements"), "statement")
            truth = numbered(tagged(text, "reference_statements"), "statement")
            return {
                "answer": [
                    {"statement": i, "reason": "r", "verdict": int(s in t.tp)} for i, s in answer
                ],
                "reference": [
                    {"statement": i, "reason": "r", "verdict": int(s in t.stated)} for i, s in truth
                ],
            }
        if kind == "keyphrases":
            return {"keyphrases": t.keyphrases}
        if kind == "questions":
            return {"questions": t.questions}
        return {
            "verdicts": [
                {"question": i, "verdict": t.answered[q]} for i, q in numbered(text, "question")
            ]
        }

    def theirs(self, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        t = self.table
        if kind in ("accuracy1", "accuracy2"):
            return {"rating": t.ratings[(kind, data["user_answer"])]}
        if kind in ("grounded1", "grounded2"):
            return {"rating": t.ratings[(kind, data["response"])]}
        if kind == "claims":
            return {"claims": t.claims[data["response"]]}
        if kind == "statements":
            return {"statements": t.claims[data["answer"]]}
        if kind == "nli":
            return {
                "statements": [
                    {"statement": s, "reason": "r", "verdict": t.supported[s]}
                    for s in data["statements"]
                ]
            }
        if kind == "classify":
            return {
                "TP": [{"statement": s, "reason": "r"} for s in data["answer"] if s in t.tp],
                "FP": [{"statement": s, "reason": "r"} for s in data["answer"] if s not in t.tp],
                "FN": [
                    {"statement": s, "reason": "r"}
                    for s in data["ground_truth"]
                    if s not in t.stated
                ],
            }
        if kind == "keyphrases":
            return {"keyphrases": t.keyphrases}
        if kind == "questions":
            return {"questions": t.questions}
        return {"answers": [str(t.answered[q]) for q in data["questions"]]}


@dataclass
class Harness:
    """One stub, one loop and both sides' LLMs and embeddings for the module."""

    server: StubServer
    script: Script
    loop: asyncio.AbstractEventLoop
    our_llm: Any
    our_embeddings: Any
    llm: Any
    embeddings: Any

    def both(self, table: Table, mine: Any, theirs_: Any) -> tuple[Any, Any]:
        """Our result and ragas' (or the exception it raised) for one table."""
        self.script.use(table)
        ours_result = self.loop.run_until_complete(mine)
        try:
            their_result: Any = self.loop.run_until_complete(theirs_)
        except Exception as e:  # ragas raises where qa-eval's policy gives None
            their_result = e
        assert not self.script.problems, self.script.problems
        return ours_result, their_result


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    script = Script(Table())
    with parity_stub(script, tmp_path_factory) as (server, loop, client):
        yield Harness(
            server,
            script,
            loop,
            our_llm_factory("gpt-4o-mini", client=client, cache=False),
            our_embedding_factory("openai", model=EMBEDDING_MODEL, client=client),
            llm_factory("gpt-4o-mini", client=client),
            embedding_factory("openai", model=EMBEDDING_MODEL, client=client),
        )


def _sentences(rng: random.Random, prefix: str, low: int, high: int) -> list[str]:
    return [
        f"{prefix} fact number {i} ({rng.randrange(10**6)})." for i in range(rng.randint(low, high))
    ]


# --- AnswerAccuracy and ResponseGroundedness ---------------------------------------------------


@pytest.mark.parametrize("seed", range(CASES))
def test_answer_accuracy_equals_ragas(harness: Harness, seed: int) -> None:
    rng = random.Random(seed)
    response, reference = f"Answer {seed}.", f"Reference {seed}."
    table = Table(
        ratings={
            ("accuracy1", response): rng.choice((0, 2, 4)),
            ("accuracy2", reference): rng.choice((0, 2, 4)),  # the second rater: swapped
        }
    )
    row = {"user_input": "What is it?", "response": response, "reference": reference}
    mine, their = harness.both(
        table,
        ours.AnswerAccuracy(llm=harness.our_llm).ascore(**row),
        theirs.AnswerAccuracy(llm=harness.llm).ascore(**row),
    )
    assert mine.value == their.value
    assert mine.reason


@pytest.mark.parametrize("seed", range(CASES))
def test_response_groundedness_equals_ragas(harness: Harness, seed: int) -> None:
    rng = random.Random(100 + seed)
    response = f"Response {seed}."
    table = Table(
        ratings={
            ("grounded1", response): rng.choice((0, 1, 2)),
            ("grounded2", response): rng.choice((0, 1, 2)),
        }
    )
    row = {"response": response, "retrieved_contexts": ["One context.", "Another."]}
    mine, their = harness.both(
        table,
        ours.ResponseGroundedness(llm=harness.our_llm).ascore(**row),
        theirs.ResponseGroundedness(llm=harness.llm).ascore(**row),
    )
    assert mine.value == their.value


# --- FactualCorrectness ------------------------------------------------------------------------


def _factual_table(rng: random.Random, response: str, reference: str) -> Table:
    mine = _sentences(rng, "Response", 0, 5)
    truth = _sentences(rng, "Reference", 0, 5)
    supported = {c: int(rng.random() < 0.6) for c in mine + truth}
    return Table(claims={response: mine, reference: truth}, supported=supported)


@pytest.mark.parametrize("mode", ["precision", "recall", "f1"])
@pytest.mark.parametrize("seed", range(CASES))
def test_factual_correctness_equals_ragas(harness: Harness, seed: int, mode: str) -> None:
    rng = random.Random(200 + seed)
    response, reference = f"The response {seed}.", f"The reference {seed}."
    table = _factual_table(rng, response, reference)
    beta = rng.choice((0.5, 1.0, 2.0))
    atomicity, coverage = rng.choice(("low", "high")), rng.choice(("low", "high"))
    options = {"mode": mode, "beta": beta, "atomicity": atomicity, "coverage": coverage}
    row = {"response": response, "reference": reference}
    mine, their = harness.both(
        table,
        ours.FactualCorrectness(llm=harness.our_llm, **options).ascore(**row),
        theirs.FactualCorrectness(llm=harness.llm, **options).ascore(**row),
    )
    if mine.value is None:  # qa-eval: undefined where the mode's denominator is 0; ragas: 0
        assert their.value == 0.0 and "not computed" in mine.reason
    else:
        assert mine.value == their.value


# --- AnswerCorrectness -------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(CASES))
def test_answer_correctness_equals_ragas(harness: Harness, seed: int) -> None:
    rng = random.Random(300 + seed)
    response, reference = f"The answer {seed} says things.", f"The truth {seed} is this."
    answer = _sentences(rng, "Answer", 1, 5)
    truth = _sentences(rng, "Truth", 1, 5)
    table = Table(
        claims={response: answer, reference: truth},
        tp={s for s in answer if rng.random() < 0.5},
        stated={s for s in truth if rng.random() < 0.5},
    )
    weights = rng.choice(([0.75, 0.25], [1.0, 0.0], [0.4, 0.6]))
    beta = rng.choice((0.5, 1.0, 2.0))
    row = {"user_input": "What is true?", "response": response, "reference": reference}
    mine, their = harness.both(
        table,
        ours.AnswerCorrectness(
            llm=harness.our_llm, embeddings=harness.our_embeddings, weights=weights, beta=beta
        ).ascore(**row),
        theirs.AnswerCorrectness(
            llm=harness.llm, embeddings=harness.embeddings, weights=weights, beta=beta
        ).ascore(**row),
    )
    assert mine.value == pytest.approx(their.value, abs=1e-12)  # cosines summed differently
    assert mine.details.factuality is not None and mine.reason


# --- SummaryScore ------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(CASES))
def test_summary_score_equals_ragas(harness: Harness, seed: int) -> None:
    rng = random.Random(400 + seed)
    contexts = [f"Context {seed} part {i} " * rng.randint(1, 20) for i in range(rng.randint(1, 3))]
    summary = f"Summary {seed} " * rng.randint(1, 30)
    questions = [f"Is fact {i} of case {seed} true?" for i in range(rng.randint(1, 6))]
    table = Table(
        keyphrases=[f"phrase {i}" for i in range(rng.randint(0, 4))],
        questions=questions,
        answered={q: int(rng.random() < 0.6) for q in questions},
    )
    options = {"length_penalty": rng.random() < 0.7, "coeff": rng.choice((0.0, 0.3, 0.5, 1.0))}
    row = {"reference_contexts": contexts, "response": summary}
    mine, their = harness.both(
        table,
        ours.SummaryScore(llm=harness.our_llm, **options).ascore(**row),
        theirs.SummaryScore(llm=harness.llm, **options).ascore(**row),
    )
    assert mine.value == their.value


# --- where the policies differ, on purpose ------------------------------------------------------


def test_no_claims_on_either_side_is_undefined_where_ragas_gives_zero(harness: Harness) -> None:
    response, reference = "I do not know.", "Nothing to say."
    table = Table(claims={response: [], reference: []})
    row = {"response": response, "reference": reference}
    for mode in ("precision", "recall", "f1"):
        mine, their = harness.both(
            table,
            ours.FactualCorrectness(llm=harness.our_llm, mode=mode).ascore(**row),
            theirs.FactualCorrectness(llm=harness.llm, mode=mode).ascore(**row),
        )
        assert their.value == 0.0 and mine.value is None and "not computed" in mine.reason


def test_a_response_without_statements_is_undefined_where_ragas_gives_full_factuality(
    harness: Harness,
) -> None:
    response, reference = "I cannot say.", "The truth is this."
    table = Table(claims={response: [], reference: ["The truth is this."]})
    row = {"user_input": "What is true?", "response": response, "reference": reference}
    mine, their = harness.both(
        table,
        ours.AnswerCorrectness(llm=harness.our_llm, weights=[1.0, 0.0]).ascore(**row),
        theirs.AnswerCorrectness(llm=harness.llm, weights=[1.0, 0.0]).ascore(**row),
    )
    assert their.value == 1.0 and mine.value is None and "no statements" in mine.reason


def test_no_questions_is_undefined_where_ragas_divides_by_zero(harness: Harness) -> None:
    table = Table(keyphrases=[], questions=[])
    row = {"reference_contexts": ["A text without keyphrases."], "response": "A summary."}
    mine, their = harness.both(
        table,
        ours.SummaryScore(llm=harness.our_llm).ascore(**row),
        theirs.SummaryScore(llm=harness.llm).ascore(**row),
    )
    assert isinstance(their, ZeroDivisionError)
    assert mine.value is None and "no questions" in mine.reason
