"""Parity with ragas 0.4's collections metrics: the same judge verdicts must give the same scores.

One scripted OpenAI-compatible server (``openai_stub.StubServer``) answers both sides over real
HTTP: our metrics through a real :class:`Judge` (and :class:`OpenAIEmbedder`), ragas'
``Faithfulness``, ``AnswerRelevancy``, ``ContextPrecision`` and ``ContextRecall`` through an
``AsyncOpenAI`` client (``llm_factory``, ``embedding_factory``). The script recognises each prompt
(ours by its ``[qa-eval:...]`` marker, ragas' by its instruction text), reads what is being judged
from it and answers with the verdicts of a :class:`Judgments` table, in each side's reply format.
Embeddings come from the stub's ``/embeddings`` endpoint (``embedding_of``) for both sides.

Where ragas and qa-eval differ on purpose (no claims, no classifications, inputs ragas refuses),
the difference is asserted explicitly.

ragas is not a dependency of qa-eval, so this module is skipped where ragas is not importable,
unless ``QA_EVAL_REQUIRE_RAGAS=1`` is set: then a missing ragas fails the run instead (CI's ragas
step sets it, so the parity tests cannot pass by being skipped). ragas 0.4.3 installs next to
qa-eval's judge (ragas resolves openai 1.x; qa-eval's ``judge`` extra takes 1.55.3 up to 3.x)::

    python3 -m venv /tmp/rv
    /tmp/rv/bin/pip install -e '.[judge]' ragas==0.4.3 langchain-community==0.4.1 pytest
    QA_EVAL_REQUIRE_RAGAS=1 /tmp/rv/bin/python -m pytest tests/integration/test_ragas_parity.py

(langchain-community 0.4.2 lacks ``chat_models.vertexai``, which ragas 0.4.3 imports.)
"""

from __future__ import annotations

import asyncio
import math
import os
import re
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

# ragas' analytics read this once (lru_cache) and would otherwise post usage events.
os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
if os.environ.get("QA_EVAL_REQUIRE_RAGAS") == "1":
    import ragas  # noqa: F401  # CI's ragas step: a missing ragas is an error, not a skip
else:
    pytest.importorskip("ragas")

from openai import AsyncOpenAI
from ragas.embeddings.base import embedding_factory
from ragas.llms import llm_factory
from ragas.metrics.collections import (
    AnswerRelevancy,
    ContextPrecision,
    ContextPrecisionWithoutReference,
    ContextRecall,
    Faithfulness,
)

import parity_script
from openai_stub import StubServer, embedding_of
from parity_script import tagged
from qa_eval.config import parse_config
from qa_eval.embeddings import embedding_factory as our_embedding_factory
from qa_eval.judge.calls import Judge
from qa_eval.judge.embeddings import OpenAIEmbedder
from qa_eval.judge.settings import EmbeddingConfig
from qa_eval.llms import llm_factory as our_llm_factory
from qa_eval.metrics.answer.relevance import answer_relevance, cosine
from qa_eval.metrics.retrieval.faithfulness import NO_CLAIMS, faithfulness
from qa_eval.metrics.retrieval.flat_context import (
    context_judgement,
    context_precision,
    context_recall_metric,
)

# instructor 1.3 (the newest the resolver finds for openai < 2) compares modes with a deprecated one
pytestmark = pytest.mark.filterwarnings("ignore:FUNCTIONS is deprecated:DeprecationWarning")

TIGHT = 1e-12
EMBEDDING_MODEL = "text-embedding-3-small"

OUR_MARKERS = {
    "[qa-eval:faithfulness-statements]": "statements",
    "[qa-eval:faithfulness-verdicts]": "verdicts",
    "[qa-eval:answer-relevance]": "questions",
    "[qa-eval:context-relevance]": "usefulness",
    "[qa-eval:statements-attribution]": "attribution",
    "[qa-eval:context-quality]": "combined",
}
RAGAS_INSTRUCTIONS = {
    # StatementGeneratorPrompt, NLIStatementPrompt (faithfulness/util.py)
    "analyze the complexity of each sentence in the answer": "statements",
    "judge the faithfulness of a series of statements": "verdicts",
    # AnswerRelevancePrompt (answer_relevancy/util.py)
    "Generate a question for the given answer and identify if the answer is noncommittal": (
        "questions"
    ),
    # ContextPrecisionPrompt (context_precision/util.py)
    "verify if the context was useful in arriving at the given answer": "usefulness",
    # ContextRecallPrompt (context_recall/util.py)
    "classify if the statement can be attributed to the given context": "attribution",
}


@dataclass
class Judgments:
    """What the judge decides, keyed by the judged text, whichever side asks."""

    statements: dict[str, list[str]] = field(default_factory=dict)
    """answer -> its statements (faithfulness, step 1)"""
    supported: dict[str, int] = field(default_factory=dict)
    """statement -> 1 if the contexts support it (faithfulness, step 2)"""
    questions: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    """answer -> generated (question, noncommittal), in order (answer relevancy)"""
    useful: dict[str, int] = field(default_factory=dict)
    """retrieved chunk -> 1 if useful for the reference or answer (context precision)"""
    attributed: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    """reference -> its (statement, attributed) (context recall)"""


class ParityScript(parity_script.ParityScript[Judgments]):
    """A StubServer script answering our prompts and ragas' from the same :class:`Judgments`."""

    OUR_MARKERS = OUR_MARKERS
    RAGAS_PHRASES = RAGAS_INSTRUCTIONS

    def __init__(self) -> None:
        super().__init__(Judgments())
        self._asked: dict[str, int] = {}  # answer -> ragas relevancy calls so far

    @property
    def j(self) -> Judgments:
        """The judgments answered from."""
        return self.table

    def use(self, judgments: Judgments) -> None:
        """Answer from these judgments from now on, with the call records cleared."""
        super().use(judgments)
        with self.lock:
            self._asked.clear()

    def ours(self, kind: str, text: str) -> dict[str, Any]:
        j = self.j
        if kind == "statements":
            return {"statements": j.statements[tagged(text, "answer")]}
        if kind == "verdicts":
            found = re.findall(r'<statement id="(\d+)">\n(.*?)\n</statement>', text, re.S)
            return {
                "verdicts": [
                    {"statement": int(i), "reason": "r", "verdict": j.supported[s]}
                    for i, s in found
                ]
            }
        if kind == "questions":
            pairs = j.questions[tagged(text, "answer")]
            return {"questions": [{"question": q, "noncommittal": nc} for q, nc in pairs]}
        found = re.findall(r'<chunk id="(\d+)">\n(.*?)\n</chunk>', text, re.S)
        verdicts = [
            {"chunk": int(i), "relevant": bool(j.useful[c]), "reason": "r"}
            for i, c in found
            if kind != "attribution"  # recall alone judges no chunk
        ]
        if kind == "usefulness":
            return {"verdicts": verdicts}
        pairs = j.attributed[tagged(text, "reference")]
        statements = [{"statement": s, "attributed": bool(a), "reason": "r"} for s, a in pairs]
        if kind == "combined":  # context precision and recall in one call
            return {"verdicts": verdicts, "statements": statements, "reason": "overall"}
        return {"statements": statements, "reason": "overall"}

    def theirs(self, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        j = self.j
        if kind == "statements":
            return {"statements": j.statements[data["answer"]]}
        if kind == "verdicts":
            return {
                "statements": [
                    {"statement": s, "reason": "r", "verdict": j.supported[s]}
                    for s in data["statements"]
                ]
            }
        if kind == "questions":
            # ragas asks the same prompt `strictness` times: give the questions in turn.
            answer = data["response"]
            turn = self._asked.get(answer, 0)
            self._asked[answer] = turn + 1
            question, noncommittal = j.questions[answer][turn]
            return {"question": question, "noncommittal": noncommittal}
        if kind == "usefulness":
            return {"reason": "r", "verdict": j.useful[data["context"]]}
        return {
            "classifications": [
                {"statement": s, "reason": "r", "attributed": a}
                for s, a in j.attributed[data["answer"]]
            ]
        }


@dataclass
class Sides:
    """Our judge and embedder and ragas' LLM and embeddings, all pointed at one stub."""

    judge: Judge
    embedder: OpenAIEmbedder
    llm: Any
    embeddings: Any
    our_llm: Any = None
    """qa-eval's ``llm_factory`` judge (no cache) over the same client as ragas'."""
    our_embeddings: Any = None
    """qa-eval's ``embedding_factory`` embeddings over the same client as ragas'."""


@dataclass
class Outcome:
    """What both sides gave for one case, and what they asked the stub."""

    ours: dict[str, Any]
    theirs: Any  # ragas' MetricResult, or the ValueError it raised
    calls: dict[str, int]  # chat requests by side
    embedding_requests: int
    requests: int


@dataclass
class Harness:
    """One stub, one event loop and one set of clients for the whole module (a server takes
    half a second to shut down, and each SDK client ~30 ms to make)."""

    server: StubServer
    script: ParityScript
    loop: asyncio.AbstractEventLoop
    sides: Sides

    def run(
        self,
        judgments: Judgments,
        ours: Callable[[Sides], Awaitable[dict[str, Any]]],
        theirs: Callable[[Sides], Awaitable[Any]],
    ) -> Outcome:
        """Our keys and ragas' result for one case answered from ``judgments``."""
        self.script.use(judgments)
        first = len(self.server.requests)
        mine = self.loop.run_until_complete(ours(self.sides))
        try:
            result: Any = self.loop.run_until_complete(theirs(self.sides))
        except ValueError as e:  # ragas refuses some inputs
            result = e
        finally:
            assert not self.script.problems, self.script.problems
        paths = self.server.paths[first:]
        return Outcome(
            ours=mine,
            theirs=result,
            calls={side: self.script.count(side) for side in ("ours", "ragas")},
            embedding_requests=sum(1 for p in paths if p.endswith("/embeddings")),
            requests=len(paths),
        )


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    script = ParityScript()
    loop = asyncio.new_event_loop()
    with pytest.MonkeyPatch.context() as mp, StubServer(script) as server:
        # ragas makes an analytics user id (uuid.json) under the user data dir even when it
        # does not track: keep it out of the home directory
        mp.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("xdg-data")))
        url = server.url
        config = parse_config(
            {"llm": {"generation": {"provider": "openai", "base_url": url, "api_key": "test"}}}
        )
        client = AsyncOpenAI(base_url=url, api_key="test", max_retries=0)
        sides = Sides(
            judge=Judge(config),
            embedder=OpenAIEmbedder(
                EmbeddingConfig(
                    provider="openai", model=EMBEDDING_MODEL, base_url=url, api_key="test"
                )
            ),
            llm=llm_factory("gpt-4o-mini", client=client),
            embeddings=embedding_factory("openai", model=EMBEDDING_MODEL, client=client),
            our_llm=our_llm_factory("gpt-4o-mini", client=client, cache=False),
            our_embeddings=our_embedding_factory("openai", model=EMBEDDING_MODEL, client=client),
        )
        try:
            yield Harness(server, script, loop, sides)
        finally:
            # OpenAIEmbedder has no close(): its SDK client is private
            for sdk in (client, sides.judge.client, getattr(sides.embedder, "_client", None)):
                if sdk is not None:
                    loop.run_until_complete(sdk.close())
            loop.close()


# --- faithfulness ---------------------------------------------------------------------------

QUESTION = "Where and when was Albert Einstein born?"
ANSWER = "Albert Einstein was born in Ulm in 1879. He won the Nobel Prize in 1922."
STATEMENTS = [
    "Albert Einstein was born in Ulm.",
    "Albert Einstein won the Nobel Prize in 1922.",
    "Albert Einstein was born in 1879.",
]
CONTEXTS = [
    "Albert Einstein (born 14 March 1879 in Ulm) was a theoretical physicist.",
    "Einstein received the 1921 Nobel Prize in Physics.",
    "Ulm is a city on the Danube in Baden-Wuerttemberg.",
]


def faithfulness_case(
    harness: Harness, verdicts: list[int], statements: list[str] = STATEMENTS
) -> Outcome:
    return harness.run(
        Judgments(statements={ANSWER: statements}, supported=dict(zip(statements, verdicts))),
        lambda s: faithfulness(s.judge, QUESTION, ANSWER, CONTEXTS),
        lambda s: Faithfulness(llm=s.llm).ascore(
            user_input=QUESTION, response=ANSWER, retrieved_contexts=CONTEXTS
        ),
    )


@pytest.mark.parametrize(
    ("verdicts", "expected"),
    [([1, 0, 1], 2 / 3), ([1, 1, 1], 1.0), ([0, 0, 0], 0.0)],
    ids=["101", "111", "000"],
)
def test_faithfulness_matches_ragas(harness: Harness, verdicts: list[int], expected: float) -> None:
    out = faithfulness_case(harness, verdicts)
    assert out.theirs.value == pytest.approx(expected, abs=TIGHT)
    assert out.ours["faithfulness"] == pytest.approx(out.theirs.value, abs=TIGHT)
    assert [s["statement"] for s in out.ours["faithfulness_statements"]] == STATEMENTS
    assert [s["supported"] for s in out.ours["faithfulness_statements"]] == [
        bool(v) for v in verdicts
    ]
    # both sides: one call for the statements, one for all the verdicts
    assert out.calls == {"ours": 2, "ragas": 2}


def test_faithfulness_without_claims_is_nan_in_ragas_and_not_computed_in_qa_eval(
    harness: Harness,
) -> None:
    out = faithfulness_case(harness, [], statements=[])
    assert math.isnan(out.theirs.value)
    assert "faithfulness" not in out.ours
    assert out.ours["faithfulness_reason"] == NO_CLAIMS
    assert out.ours["faithfulness_statements"] == []
    assert out.calls == {"ours": 1, "ragas": 1}


# --- context precision ----------------------------------------------------------------------

REFERENCE = "Albert Einstein was born in Ulm, Germany, on 14 March 1879."


def precision_case(harness: Harness, contexts: list[str], verdicts: list[int]) -> Outcome:
    return harness.run(
        Judgments(useful=dict(zip(contexts, verdicts))),
        lambda s: context_precision(s.judge, QUESTION, contexts, reference=REFERENCE),
        lambda s: ContextPrecision(llm=s.llm).ascore(
            user_input=QUESTION, reference=REFERENCE, retrieved_contexts=contexts
        ),
    )


@pytest.mark.parametrize(
    "verdicts",
    [[1, 0, 1], [0, 1, 1], [0, 0, 1], [0, 0, 0], [1]],
    ids=lambda v: "".join(map(str, v)),
)
def test_context_precision_ap_matches_ragas(harness: Harness, verdicts: list[int]) -> None:
    out = precision_case(harness, CONTEXTS[: len(verdicts)], verdicts)
    assert out.ours["context_precision_ap"] == pytest.approx(out.theirs.value, abs=TIGHT)
    hits, total = 0, 0.0
    for rank, v in enumerate(verdicts, 1):
        hits += v
        total += v * hits / rank
    assert out.theirs.value == pytest.approx(total / (hits + 1e-10), abs=TIGHT)
    # the rank-blind mean is ours only (the GraphRAG document's formula), not ragas'
    assert out.ours["context_precision"] == pytest.approx(sum(verdicts) / len(verdicts))
    assert out.ours["context_precision_basis"] == "reference"
    # ragas asks once per chunk, qa-eval once for all
    assert out.calls == {"ours": 1, "ragas": len(verdicts)}


def test_all_useful_chunks_score_ragas_epsilon_short_of_one(harness: Harness) -> None:
    out = precision_case(harness, CONTEXTS[:2], [1, 1])
    assert out.theirs.value == out.ours["context_precision_ap"] == 2 / (2 + 1e-10)
    assert out.ours["context_precision_ap"] < 1.0 == out.ours["context_precision"]


def test_context_precision_without_reference_matches_ragas(harness: Harness) -> None:
    """With the system's answer instead of a reference (ragas' ContextPrecisionWithoutReference,
    alias ContextUtilization): the same average precision."""
    contexts, verdicts = CONTEXTS, [0, 1, 1]
    out = harness.run(
        Judgments(useful=dict(zip(contexts, verdicts))),
        lambda s: context_precision(s.judge, QUESTION, contexts, reference=None, answer=ANSWER),
        lambda s: ContextPrecisionWithoutReference(llm=s.llm).ascore(
            user_input=QUESTION, response=ANSWER, retrieved_contexts=contexts
        ),
    )
    assert out.theirs.value == pytest.approx((1 / 2 + 2 / 3) / (2 + 1e-10), abs=TIGHT)
    assert out.ours["context_precision_ap"] == pytest.approx(out.theirs.value, abs=TIGHT)
    assert out.ours["context_precision_basis"] == "answer"


# --- context recall -------------------------------------------------------------------------

REFERENCE_STATEMENTS = [
    "Albert Einstein was born in Ulm.",
    "Albert Einstein was born on 14 March 1879.",
    "Ulm is in Germany.",
]


def recall_case(harness: Harness, attributed: list[int]) -> Outcome:
    pairs = list(zip(REFERENCE_STATEMENTS, attributed))
    return harness.run(
        Judgments(attributed={REFERENCE: pairs}),
        lambda s: context_recall_metric(s.judge, QUESTION, REFERENCE, CONTEXTS),
        lambda s: ContextRecall(llm=s.llm).ascore(
            user_input=QUESTION, retrieved_contexts=CONTEXTS, reference=REFERENCE
        ),
    )


@pytest.mark.parametrize(
    "attributed", [[1, 1, 0], [1, 1, 1], [0, 0, 0]], ids=lambda v: "".join(map(str, v))
)
def test_context_recall_matches_ragas(harness: Harness, attributed: list[int]) -> None:
    out = recall_case(harness, attributed)
    assert out.theirs.value == pytest.approx(sum(attributed) / len(attributed), abs=TIGHT)
    assert out.ours["context_recall"] == pytest.approx(out.theirs.value, abs=TIGHT)
    assert out.calls == {"ours": 1, "ragas": 1}


async def _ours_combined(s: Sides, contexts: list[str]) -> dict[str, Any]:
    shared = context_judgement(s.judge, QUESTION, contexts, REFERENCE, precision=True, recall=True)
    assert shared is not None
    precision, recall = await asyncio.gather(
        context_precision(s.judge, QUESTION, contexts, reference=REFERENCE, shared=shared),
        context_recall_metric(s.judge, QUESTION, REFERENCE, contexts, shared=shared),
    )
    return precision | recall


async def _theirs_both(s: Sides, contexts: list[str]) -> tuple[Any, Any]:
    precision = await ContextPrecision(llm=s.llm).ascore(
        user_input=QUESTION, reference=REFERENCE, retrieved_contexts=contexts
    )
    recall = await ContextRecall(llm=s.llm).ascore(
        user_input=QUESTION, retrieved_contexts=contexts, reference=REFERENCE
    )
    return precision, recall


@pytest.mark.parametrize(
    ("verdicts", "attributed"),
    [([1, 0, 1], [1, 1, 0]), ([0, 1, 1], [1, 1, 1]), ([0, 0, 0], [0, 0, 0]), ([1], [0, 1, 0])],
    ids=lambda v: "".join(map(str, v)),
)
def test_precision_and_recall_in_one_call_match_ragas(
    harness: Harness, verdicts: list[int], attributed: list[int]
) -> None:
    """Both metrics on: one combined call for both; the same verdicts give ragas' values."""
    contexts = CONTEXTS[: len(verdicts)]
    out = harness.run(
        Judgments(
            useful=dict(zip(contexts, verdicts)),
            attributed={REFERENCE: list(zip(REFERENCE_STATEMENTS, attributed))},
        ),
        lambda s: _ours_combined(s, contexts),
        lambda s: _theirs_both(s, contexts),
    )
    precision, recall = out.theirs
    assert out.ours["context_precision_ap"] == pytest.approx(precision.value, abs=TIGHT)
    assert out.ours["context_precision"] == pytest.approx(sum(verdicts) / len(verdicts))
    assert out.ours["context_recall"] == pytest.approx(recall.value, abs=TIGHT)
    assert out.calls == {"ours": 1, "ragas": len(verdicts) + 1}
    assert harness.script.count("ours", "combined") == 1


def test_reference_without_statements_is_nan_in_ragas_and_an_error_in_qa_eval(
    harness: Harness,
) -> None:
    out = recall_case(harness, [])
    assert math.isnan(out.theirs.value)
    # qa-eval's reply schema wants at least one statement: asked again once, then an error
    assert "context_recall" not in out.ours
    assert "invalid judge reply" in out.ours["context_recall_error"]
    assert out.calls == {"ours": 2, "ragas": 1}


# --- answer relevancy -----------------------------------------------------------------------

RELEVANCY_QUESTION = "Where was Albert Einstein born?"
RELEVANCY_ANSWER = "Albert Einstein was born in Ulm, in the Kingdom of Wuerttemberg."
GENERATED = [
    ("Where was Albert Einstein born?", 0),
    ("In which city was Einstein born?", 1),
    ("What kingdom was Ulm part of when Einstein was born?", 0),
]


def relevancy_case(harness: Harness, generated: list[tuple[str, int]]) -> Outcome:
    return harness.run(
        Judgments(questions={RELEVANCY_ANSWER: generated}),
        lambda s: answer_relevance(
            s.judge, s.embedder, RELEVANCY_QUESTION, RELEVANCY_ANSWER, len(generated)
        ),
        lambda s: AnswerRelevancy(
            llm=s.llm, embeddings=s.embeddings, strictness=len(generated)
        ).ascore(user_input=RELEVANCY_QUESTION, response=RELEVANCY_ANSWER),
    )


def relevancy(question: str, generated: list[str]) -> float:
    """Mean cosine of the stub's embeddings, computed here without either implementation."""
    base = embedding_of(question)
    return sum(cosine(base, embedding_of(g)) for g in generated) / len(generated)


def test_answer_relevancy_matches_ragas_with_one_noncommittal_question(harness: Harness) -> None:
    out = relevancy_case(harness, GENERATED)
    expected = relevancy(RELEVANCY_QUESTION, [q for q, _ in GENERATED])
    assert 0.1 < expected < 0.99
    assert out.theirs.value == pytest.approx(expected, abs=TIGHT)
    assert out.ours["answer_relevance"] == pytest.approx(out.theirs.value, abs=TIGHT)
    assert out.ours["answer_relevance_questions"] == [q for q, _ in GENERATED]
    # ragas: one call per question, then the question and the generated ones embedded apart;
    # qa-eval: one call for all the questions, one embedding request
    assert out.calls == {"ours": 1, "ragas": 3}
    assert out.embedding_requests == 1 + 2


def test_all_noncommittal_scores_zero_on_both_sides(harness: Harness) -> None:
    out = relevancy_case(harness, [(q, 1) for q, _ in GENERATED])
    assert out.theirs.value == 0.0
    assert out.ours["answer_relevance"] == 0.0


def test_empty_generated_questions_are_dropped_on_both_sides(harness: Harness) -> None:
    kept = GENERATED[2][0]
    out = relevancy_case(harness, [("", 1), (kept, 0), ("", 0)])
    assert out.theirs.value == pytest.approx(relevancy(RELEVANCY_QUESTION, [kept]), abs=TIGHT)
    assert out.ours["answer_relevance"] == pytest.approx(out.theirs.value, abs=TIGHT)
    assert out.ours["answer_relevance_questions"] == [kept]


def test_no_generated_question_scores_zero_without_embeddings(harness: Harness) -> None:
    out = relevancy_case(harness, [("", 0), ("", 0), ("", 1)])
    assert out.theirs.value == 0.0
    assert out.ours["answer_relevance"] == 0.0
    assert out.embedding_requests == 0


# --- inputs ragas refuses -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ours", "theirs", "expected"),
    [
        (
            lambda s: faithfulness(s.judge, QUESTION, "", CONTEXTS),
            lambda s: Faithfulness(llm=s.llm).ascore(
                user_input=QUESTION, response="", retrieved_contexts=CONTEXTS
            ),
            {"faithfulness_reason": "the answer is empty", "faithfulness_cost": 0.0},
        ),
        (
            lambda s: faithfulness(s.judge, QUESTION, ANSWER, []),
            lambda s: Faithfulness(llm=s.llm).ascore(
                user_input=QUESTION, response=ANSWER, retrieved_contexts=[]
            ),
            {"faithfulness_error": "no contexts"},
        ),
        (
            lambda s: answer_relevance(s.judge, s.embedder, QUESTION, " ", 3),
            lambda s: AnswerRelevancy(llm=s.llm, embeddings=s.embeddings).ascore(
                user_input=QUESTION, response=""
            ),
            {"answer_relevance": 0.0, "answer_relevance_cost": 0.0},
        ),
        (
            lambda s: context_precision(s.judge, QUESTION, [], reference=REFERENCE),
            lambda s: ContextPrecision(llm=s.llm).ascore(
                user_input=QUESTION, reference=REFERENCE, retrieved_contexts=[]
            ),
            {"context_precision": 0.0, "context_precision_ap": 0.0},
        ),
        (
            lambda s: context_recall_metric(s.judge, QUESTION, "", CONTEXTS),
            lambda s: ContextRecall(llm=s.llm).ascore(
                user_input=QUESTION, retrieved_contexts=CONTEXTS, reference=""
            ),
            {"context_recall_reason": "no reference answer"},
        ),
        (
            lambda s: context_recall_metric(s.judge, QUESTION, REFERENCE, []),
            lambda s: ContextRecall(llm=s.llm).ascore(
                user_input=QUESTION, retrieved_contexts=[], reference=REFERENCE
            ),
            {"context_recall": 0.0},
        ),
    ],
    ids=[
        "faithfulness-empty-answer",
        "faithfulness-no-contexts",
        "relevancy-empty-answer",
        "precision-no-contexts",
        "recall-no-reference",
        "recall-no-contexts",
    ],
)
def test_inputs_ragas_refuses_follow_qa_eval_policies(
    harness: Harness,
    ours: Callable[[Sides], Awaitable[dict[str, Any]]],
    theirs: Callable[[Sides], Awaitable[Any]],
    expected: dict[str, Any],
) -> None:
    out = harness.run(Judgments(), ours, theirs)
    assert isinstance(out.theirs, ValueError)  # ragas raises before any call
    assert out.ours.items() >= expected.items()
    assert out.requests == 0


# --- the per-sample classes of qa_eval.metrics.collections against ragas' -------------------


async def _value(result: Any) -> dict[str, Any]:
    """Our per-sample result as the keys a case compares."""
    got = await result
    return {"value": got.value, "reason": got.reason, "calls": got.usage.calls}


@pytest.mark.parametrize("verdicts", [[1, 0, 1], [0, 0, 0]], ids=["101", "000"])
def test_collections_faithfulness_matches_ragas(harness: Harness, verdicts: list[int]) -> None:
    from qa_eval.metrics.collections import Faithfulness as OurFaithfulness

    out = harness.run(
        Judgments(statements={ANSWER: STATEMENTS}, supported=dict(zip(STATEMENTS, verdicts))),
        lambda s: _value(
            OurFaithfulness(llm=s.our_llm).ascore(
                user_input=QUESTION, response=ANSWER, retrieved_contexts=CONTEXTS
            )
        ),
        lambda s: Faithfulness(llm=s.llm).ascore(
            user_input=QUESTION, response=ANSWER, retrieved_contexts=CONTEXTS
        ),
    )
    assert out.ours["value"] == pytest.approx(out.theirs.value, abs=TIGHT)
    assert out.ours["reason"].startswith(f"{sum(verdicts)} of 3 statements")
    assert out.theirs.reason is None  # ragas computes the reasons, then drops them


@pytest.mark.parametrize("verdicts", [[1, 0, 1], [0, 1, 1]], ids=["101", "011"])
def test_collections_context_precision_matches_ragas(harness: Harness, verdicts: list[int]) -> None:
    from qa_eval.metrics.collections import ContextPrecision as OurPrecision

    contexts = CONTEXTS[: len(verdicts)]
    out = harness.run(
        Judgments(useful=dict(zip(contexts, verdicts))),
        lambda s: _value(
            OurPrecision(llm=s.our_llm).ascore(
                user_input=QUESTION, reference=REFERENCE, retrieved_contexts=contexts
            )
        ),
        lambda s: ContextPrecision(llm=s.llm).ascore(
            user_input=QUESTION, reference=REFERENCE, retrieved_contexts=contexts
        ),
    )
    assert out.ours["value"] == pytest.approx(out.theirs.value, abs=TIGHT)
    assert out.ours["calls"] == 1 and out.calls == {"ours": 1, "ragas": len(verdicts)}


@pytest.mark.parametrize(
    "attributed", [[1, 1, 0], [1, 1, 1], [0, 0, 0], [0, 1, 0]], ids=lambda v: "".join(map(str, v))
)
def test_collections_context_recall_matches_ragas(harness: Harness, attributed: list[int]) -> None:
    from qa_eval.metrics.collections import ContextRecall as OurRecall

    pairs = list(zip(REFERENCE_STATEMENTS, attributed))
    inputs = {"user_input": QUESTION, "retrieved_contexts": CONTEXTS, "reference": REFERENCE}
    out = harness.run(
        Judgments(attributed={REFERENCE: pairs}),
        lambda s: _value(OurRecall(llm=s.our_llm).ascore(**inputs)),
        lambda s: ContextRecall(llm=s.llm).ascore(**inputs),
    )
    assert out.theirs.value == pytest.approx(sum(attributed) / len(attributed), abs=TIGHT)
    assert out.ours["value"] == pytest.approx(out.theirs.value, abs=TIGHT)
    assert out.ours["calls"] == 1 and out.calls == {"ours": 1, "ragas": 1}
    assert out.ours["reason"]  # ragas: None


@pytest.mark.parametrize(
    "generated",
    [
        GENERATED,
        [(q, 1) for q, _ in GENERATED],
        [("", 1), (GENERATED[2][0], 0), ("", 0)],
        [(q, 0) for q, _ in GENERATED[:2]],
    ],
    ids=["one-noncommittal", "all-noncommittal", "blanks-dropped", "strictness-2"],
)
def test_collections_answer_relevancy_matches_ragas(
    harness: Harness, generated: list[tuple[str, int]]
) -> None:
    from qa_eval.metrics.collections import AnswerRelevancy as OurRelevancy

    inputs = {"user_input": RELEVANCY_QUESTION, "response": RELEVANCY_ANSWER}
    strictness = len(generated)

    def ours(s: Sides) -> Awaitable[dict[str, Any]]:
        metric = OurRelevancy(llm=s.our_llm, embeddings=s.our_embeddings, strictness=strictness)
        return _value(metric.ascore(**inputs))

    out = harness.run(
        Judgments(questions={RELEVANCY_ANSWER: generated}),
        ours,
        lambda s: AnswerRelevancy(llm=s.llm, embeddings=s.embeddings, strictness=strictness).ascore(
            **inputs
        ),
    )
    kept = [q for q, _ in generated if q]
    expected = 0.0 if all(nc for _, nc in generated) else relevancy(RELEVANCY_QUESTION, kept)
    assert out.theirs.value == pytest.approx(expected, abs=TIGHT)
    assert out.ours["value"] == pytest.approx(out.theirs.value, abs=TIGHT)
    assert out.ours["calls"] == 1 and out.calls == {"ours": 1, "ragas": strictness}
    assert out.ours["reason"]
