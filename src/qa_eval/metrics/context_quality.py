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

Policies: no contexts score 0 for precision and recall, without a call (the document's pseudo
code); recall without a reference answer is not computed (no ``context_recall`` key, a
``context_recall_reason`` saying why), as ragas cannot compute it either. A judge failure is
``<metric>_error``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from ..judge import Judge, JudgeError
from ..prompts import delimit, render
from .context import ChunkVerdict, _numbered, ask_recall, context_recall, numbered_schema

__all__ = [
    "RAGAS_EPSILON",
    "context_precision",
    "context_recall_metric",
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
) -> dict[str, Any]:
    """The ``context_precision`` keys of one question (or ``context_precision_error``)."""
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
    trusted = {"target": target, "given": given, "chunks": _numbered(contexts)}
    messages = [
        {"role": "user", "content": render("context_relevance", trusted, question=question)}
    ]
    try:
        verdict = await judge.ask("context_precision", messages, relevance_schema(len(contexts)))
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
    out["context_precision_cost"] = verdict.cost  # None: the price is unknown
    return out


async def context_recall_metric(
    judge: Judge, question: str, reference: str | None, contexts: Sequence[str]
) -> dict[str, Any]:
    """The ``context_recall`` keys of one question (or ``context_recall_error``)."""
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
        verdict = await ask_recall(judge, "context_recall", question, reference, contexts)
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
    out["context_recall_cost"] = verdict.cost  # None: the price is unknown
    return out
