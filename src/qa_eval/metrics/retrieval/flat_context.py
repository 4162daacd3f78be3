"""Context precision and context recall of flat inputs (a question, its retrieved contexts in rank
order, and optionally a reference answer and the system's answer).

Source: sections 2 and 3 of ``../shared/spec/graphrag-metrics.md`` ("RAGAS Context Precision",
"RAGAS Context Recall") and ragas 0.4's collections ``ContextPrecision`` (with a reference),
``ContextPrecisionWithoutReference`` (with the answer instead) and ``ContextRecall``
(``../shared/spec/ragas-collections-usage.md``). With v_i = 1 when chunk i is useful:

    context_precision    = Σ_i v_i / N                            (the document's simple mean;
                                                                   0 when N = 0)
    context_precision_ap = Σ_i precision@i · v_i / (Σ_i v_i + 1e-10)   (ragas' average precision,
                           precision@i = Σ_{j<=i} v_j / i;  all useful → 0.9999999999, none → 0)
    context_recall       = reference statements attributed to the contexts / reference statements

Scores are fractions in [0, 1], as ragas returns them (the document multiplies by 100). The two
precision formulas have two names on purpose: the document's mean ignores rank, ragas' AP rewards
useful chunks ranked first. ``context.average_precision`` is the same AP without the epsilon.

A chunk is judged useful for arriving at the reference answer when one is given (ragas
``ContextPrecision``), else at the system's answer (``ContextPrecisionWithoutReference``), else at
an answer to the question (the document's pseudo code); ``context_precision_basis`` says which.
Unlike ragas, which asks once per chunk, all chunks are judged in one call, and the reply must
carry one verdict per chunk, numbered 1..N, or it is asked again once.

One call for both: when context precision and context recall run for the same question, with a
reference answer and at least one context, both read the same inputs (the question, the
contexts, the reference), so they are judged in one call (``context_quality`` prompt, metric
``context_precision+recall`` in the judge's usage and the dry run): one reply with the per-chunk
usefulness verdicts and the per-reference-statement attributions, validated as the two separate
replies are (one verdict per chunk 1..N, at least one statement). The formulas above read the
same verdicts either way. :class:`ContextJudgement` makes that call once per question and both
metrics await it; when it fails, both get their ``*_error``; its cost is split evenly between
``context_precision_cost`` and ``context_recall_cost`` (null when the price is unknown), so the
question's ``llm_cost`` counts it once. ``combined: false`` in the ``context_precision`` or the
``context_recall`` block keeps the two calls separate; with only one metric on, or no reference
answer, each metric makes its own call as above.

Policies: no contexts score 0 for precision and recall, without a call (the document's pseudo
code); recall without a reference answer is not computed (no ``context_recall`` key, a
``context_recall_reason`` saying why), as ragas cannot compute it either. A judge failure is
``<metric>_error``.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from pydantic import BaseModel, Field, create_model

from ...errors import JudgeError
from ...judge.calls import Judge
from ...judge.usage import Verdict
from ...prompts import delimit, render
from ..output import Output
from .step_context import (
    Attribution,
    ChunkVerdict,
    ask_recall,
    context_recall,
    numbered_chunks,
    numbered_schema,
)

__all__ = [
    "COMBINED_METRIC",
    "RAGAS_EPSILON",
    "ContextJudgement",
    "combined_schema",
    "combines",
    "context_judgement",
    "context_precision",
    "context_precision_score",
    "context_recall_metric",
    "context_recall_score",
    "mean_precision",
    "ragas_average_precision",
    "relevance_schema",
]

RAGAS_EPSILON = 1e-10
"""What ragas adds to the denominator of its average precision."""


def mean_precision(verdicts: Sequence[bool]) -> float:
    """Share of the chunks that are useful (the document's formula); 0 when there are none."""
    if not verdicts:
        return 0.0
    return sum(1 for v in verdicts if v) / len(verdicts)


def ragas_average_precision(verdicts: Sequence[bool]) -> float:
    """Σ_i precision@i · v_i / (Σ_i v_i + 1e-10), summed in ragas' order; 0 if none is useful."""
    v = [1 if x else 0 for x in verdicts]
    numerator = sum((sum(v[: i + 1]) / (i + 1)) * v[i] for i in range(len(v)))
    return numerator / (sum(v) + RAGAS_EPSILON)


def relevance_schema(n: int) -> type[BaseModel]:
    """The reply schema for ``n`` chunks: exactly ``n`` verdicts, numbered 1..n."""
    return numbered_schema("ChunkRelevance", ChunkVerdict, "chunk", n)


@functools.lru_cache(maxsize=128)
def combined_schema(n: int) -> type[BaseModel]:
    """The combined reply for ``n`` chunks: :func:`relevance_schema`'s ``verdicts`` (exactly
    ``n``, numbered 1..n) plus the reference's ``statements`` (at least one) and a ``reason``."""
    return create_model(  # type: ignore[no-any-return, call-overload]
        "ContextQuality",
        __base__=relevance_schema(n),
        __doc__="One usefulness verdict per chunk and one attribution per reference statement.",
        statements=(Annotated[list[Attribution], Field(min_length=1)], ...),
        reason=(str, ""),
    )


COMBINED_METRIC = "context_precision+recall"
"""The name the combined call has in the judge's usage, the dry run and batch planning."""


class ContextJudgement:
    """The combined context precision + recall call of one question: made at most once, by the
    first metric that awaits it; the other awaits the same reply (or the same error)."""

    def __init__(
        self, judge: Judge, question: str, contexts: Sequence[str], reference: str
    ) -> None:
        self.judge = judge
        self.question = question
        self.contexts = list(contexts)
        self.reference = reference
        self._lock = asyncio.Lock()
        self._outcome: Verdict[Any] | Exception | None = None

    async def verdict(self) -> Verdict[Any]:
        """The combined reply; raises the call's error (``JudgeError`` and others) to each
        awaiter."""
        async with self._lock:
            if self._outcome is None:
                try:
                    self._outcome = await self._ask()
                except Exception as e:  # kept for the other metric, then raised to both
                    self._outcome = e
        if isinstance(self._outcome, Exception):
            raise self._outcome
        return self._outcome

    async def verdict_for(self, contexts: Sequence[str], reference: str | None) -> Verdict[Any]:
        """:meth:`verdict`, for a metric of these inputs; ``ValueError`` when they are not the
        ones this call judges (a caller's mistake, not the judge's)."""
        if list(contexts) != self.contexts or reference != self.reference:
            raise ValueError("a shared context judgement was given other contexts or reference")
        return await self.verdict()

    async def _ask(self) -> Verdict[Any]:
        trusted = {"chunks": numbered_chunks(self.contexts)}
        text = render("context_quality", trusted, question=self.question, reference=self.reference)
        messages = [{"role": "user", "content": text}]
        return await self.judge.ask(COMBINED_METRIC, messages, combined_schema(len(self.contexts)))


def context_judgement(
    judge: Judge,
    question: str,
    contexts: Sequence[str],
    reference: str | None,
    *,
    precision: bool,
    recall: bool,
    options: Mapping[str, Mapping[str, Any]] | None = None,
) -> ContextJudgement | None:
    """The shared combined call of one question when it applies (both metrics on, a non-blank
    reference, at least one context, neither block's ``combined`` option false), else ``None``:
    each metric then makes its own call."""
    if not contexts or not combines(precision, recall, reference, options):
        return None
    assert reference is not None
    return ContextJudgement(judge, question, contexts, reference)


_BOTH = ("context_precision", "context_recall")


def combines(
    precision: bool,
    recall: bool,
    reference: Any,
    options: Mapping[str, Mapping[str, Any]] | None = None,
) -> bool:
    """Whether a question with retrieved chunks gets the combined call: both metrics on, a
    non-blank reference answer, and neither block's ``combined`` option false."""
    options = options or {}
    if any(options.get(m, {}).get("combined") is False for m in _BOTH):
        return False
    return precision and recall and isinstance(reference, str) and bool(reference.strip())


def _half(cost: float | None) -> float | None:
    return None if cost is None else cost / 2


def _basis(reference: str | None, answer: str | None) -> tuple[str, str, str]:
    """(basis name, what the chunks are useful for, the block that shows it)."""
    if reference and reference.strip():
        block = f"<reference_answer>\n{delimit(reference)}\n</reference_answer>\n"
        return "reference", "the reference answer", block
    if answer and answer.strip():
        return "answer", "the answer", f"<answer>\n{delimit(answer)}\n</answer>\n"
    return "question", "an answer to the question", ""


async def context_precision(
    judge: Judge,
    question: str,
    contexts: Sequence[str],
    reference: str | None = None,
    answer: str | None = None,
    *,
    shared: ContextJudgement | None = None,
) -> dict[str, Any]:
    """The ``context_precision`` keys of one question (or ``context_precision_error``); from the
    ``shared`` combined call when one is given."""
    basis, target, given = _basis(reference, answer)
    if not contexts:
        return {
            "context_precision": 0.0,
            "context_precision_ap": 0.0,
            "context_precision_verdicts": [],
            "context_precision_basis": basis,
            "context_precision_reason": "no contexts were retrieved",
            "context_precision_cost": 0.0,
        }
    try:
        if shared is not None:
            verdict = await shared.verdict_for(contexts, reference)
            cost = _half(verdict.cost)
        else:
            trusted = {"target": target, "given": given, "chunks": numbered_chunks(contexts)}
            text = render("context_relevance", trusted, question=question)
            messages = [{"role": "user", "content": text}]
            schema = relevance_schema(len(contexts))
            verdict = await judge.ask("context_precision", messages, schema)
            cost = verdict.cost
    except JudgeError as e:
        return {"context_precision_error": str(e)}
    ordered = sorted(verdict.value.verdicts, key=lambda v: v.chunk)  # type: ignore[attr-defined]
    useful = [v.relevant for v in ordered]
    out: dict[str, Any] = {
        "context_precision": mean_precision(useful),
        "context_precision_ap": ragas_average_precision(useful),
        "context_precision_verdicts": [
            {"chunk": v.chunk, "relevant": v.relevant, "reason": v.reason} for v in ordered
        ],
        "context_precision_basis": basis,
    }
    out["context_precision_cost"] = cost  # None: the price is unknown
    return out


async def context_recall_metric(
    judge: Judge,
    question: str,
    reference: str | None,
    contexts: Sequence[str],
    *,
    shared: ContextJudgement | None = None,
) -> dict[str, Any]:
    """The ``context_recall`` keys of one question (or ``context_recall_error``); from the
    ``shared`` combined call when one is given."""
    if not reference or not reference.strip():
        return {"context_recall_reason": "no reference answer"}
    if not contexts:
        return {
            "context_recall": 0.0,
            "context_recall_statements": [],
            "context_recall_reason": "no contexts were retrieved",
            "context_recall_cost": 0.0,
        }
    try:
        if shared is not None:
            verdict = await shared.verdict_for(contexts, reference)
            cost = _half(verdict.cost)
        else:
            verdict = await ask_recall(judge, "context_recall", question, reference, contexts)
            cost = verdict.cost
    except JudgeError as e:
        return {"context_recall_error": str(e)}
    statements = verdict.value.statements
    out: dict[str, Any] = {
        "context_recall": context_recall([s.attributed for s in statements]),
        "context_recall_statements": [
            {"statement": s.statement, "attributed": s.attributed, "reason": s.reason}
            for s in statements
        ],
        "context_recall_reason": verdict.value.reason,
    }
    out["context_recall_cost"] = cost  # None: the price is unknown
    return out


async def context_precision_score(
    judge: Judge, inputs: Mapping[str, Any], options: Mapping[str, Any]
) -> Output:
    """The registry's entry point of ``context_precision``: its result keys read back as a record
    (``inputs["context_judgement"]``, when set, is the question's combined call)."""
    keys = await context_precision(
        judge,
        inputs["question"],
        inputs["contexts"],
        inputs["reference_answer"],
        inputs["answer"],
        shared=inputs.get("context_judgement"),
    )
    return Output.from_keys("context_precision", keys)


async def context_recall_score(
    judge: Judge, inputs: Mapping[str, Any], options: Mapping[str, Any]
) -> Output:
    """The registry's entry point of ``context_recall``: its result keys read back as a record
    (with the question's combined call when ``inputs["context_judgement"]`` is set)."""
    keys = await context_recall_metric(
        judge,
        inputs["question"],
        inputs["reference_answer"],
        inputs["contexts"],
        shared=inputs.get("context_judgement"),
    )
    return Output.from_keys("context_recall", keys)
