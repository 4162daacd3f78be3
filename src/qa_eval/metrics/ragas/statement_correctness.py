"""Answer correctness as ragas 0.4.3 computes it (``ragas.metrics.collections.answer_correctness``):
a weighted mean of a factuality F-beta and the semantic similarity of the response to the
reference. qa-eval's ``answer_correctness`` (``correctness.py``) asks the judge for claim counts
with graphrag-eval's prompt and formula; this one follows ragas', so it is an engine of its own.

1. The response and the reference are each broken into statements (the faithfulness statement
   prompt: same task as ragas' statement generator).
2. One call classifies them: an answer statement is TP when the reference supports it, FP when
   not; a reference statement the answer leaves out is FN.
3. With P = tp / (tp + fp) (1 when tp + fp = 0 and fn = 0, else 0 there) and R = tp / (tp + fn)
   (1 when tp + fn = 0 and fp = 0, else 0 there):

       factuality = (1 + β²) · P · R / (β² · P + R)     (0 when P + R = 0)
       similarity = cos(embedding(response), embedding(reference))   (0 for a zero vector)
       answer_correctness = (w₀ · factuality + w₁ · similarity) / (w₀ + w₁)

   with ``weights`` = [w₀, w₁] (default [0.75, 0.25]); similarity is not computed (0) when w₁ = 0.

Policy: ragas scores factuality 1.0 when the response or the reference has no statements (a
refusal scores full factuality); qa-eval leaves it undefined: the value is ``None`` with a reason.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, Field, create_model

from ...prompts import numbered_blocks, render
from ..retrieval.faithfulness import StatementsReply, StatementVerdict

__all__ = [
    "Classified",
    "classification_schema",
    "factuality_fbeta",
    "statement_correctness",
    "weighted_correctness",
]

METRIC = "answer_correctness"


def factuality_fbeta(tp: int, fp: int, fn: int, beta: float = 1.0) -> float:
    """ragas' factuality F-beta of TP/FP/FN counts (see the module docstring)."""
    precision = tp / (tp + fp) if tp + fp else (1.0 if fn == 0 else 0.0)
    recall = tp / (tp + fn) if tp + fn else (1.0 if fp == 0 else 0.0)
    if precision + recall == 0:
        return 0.0
    b2 = beta**2
    return float((1 + b2) * (precision * recall) / (b2 * precision + recall))


def weighted_correctness(factuality: float, similarity: float, weights: Sequence[float]) -> float:
    """``numpy.average([factuality, similarity], weights=weights)``."""
    w0, w1 = weights
    return (factuality * w0 + similarity * w1) / (w0 + w1)


def _numbered(field: str, n: int) -> Any:
    def one_each(value: list[Any]) -> list[Any]:
        if sorted(v.statement for v in value) != list(range(1, len(value) + 1)):
            raise ValueError(f"give one verdict for each {field} statement number 1..{n}")
        return value

    return Annotated[
        list[StatementVerdict], Field(min_length=n, max_length=n), AfterValidator(one_each)
    ]


def classification_schema(answer: int, reference: int) -> type[BaseModel]:
    """The reply schema: one verdict per answer statement (1 TP, 0 FP) and one per reference
    statement (1 stated, 0 FN), numbered 1..n in each list."""
    return create_model(
        "StatementClassification",
        __doc__="Verdicts on the answer's and the reference's statements.",
        answer=(_numbered("answer", answer), ...),
        reference=(_numbered("reference", reference), ...),
    )


@dataclass(frozen=True)
class Classified:
    """The statements of both sides with their verdicts."""

    answer: tuple[tuple[str, bool, str], ...]
    """(statement, TP, reason) per answer statement (not TP: FP)."""
    reference: tuple[tuple[str, bool, str], ...]
    """(statement, stated in the answer, reason) per reference statement (not stated: FN)."""

    @property
    def counts(self) -> tuple[int, int, int]:
        """(tp, fp, fn)."""
        tp = sum(1 for _, ok, _ in self.answer if ok)
        fn = sum(1 for _, ok, _ in self.reference if not ok)
        return tp, len(self.answer) - tp, fn


async def _statements(judge: Any, question: str, text: str) -> list[str]:
    content = render("faithfulness_statements", question=question, answer=text)
    reply = await judge.ask(METRIC, [{"role": "user", "content": content}], StatementsReply)
    return [s.strip() for s in reply.value.statements if s.strip()]


async def statement_correctness(
    judge: Any, question: str, response: str, reference: str
) -> Classified:
    """The statements of ``response`` and ``reference`` and their classification (no
    classification call when either side has no statements: both tuples of that side empty)."""
    sides = await asyncio.gather(
        _statements(judge, question, response),
        _statements(judge, question, reference),
        return_exceptions=True,
    )
    for outcome in sides:
        if isinstance(outcome, BaseException):
            raise outcome
    answer, truth = sides[0], sides[1]
    assert isinstance(answer, list) and isinstance(truth, list)
    if not answer or not truth:
        return Classified(
            tuple((s, False, "") for s in answer), tuple((s, False, "") for s in truth)
        )
    trusted = {
        "answer": numbered_blocks(answer, "statement"),
        "reference": numbered_blocks(truth, "statement"),
    }
    content = render("correctness_classification", trusted, question=question)
    reply = await judge.ask(
        METRIC,
        [{"role": "user", "content": content}],
        classification_schema(len(answer), len(truth)),
    )
    got: Any = reply.value
    a = sorted(got.answer, key=lambda v: v.statement)
    r = sorted(got.reference, key=lambda v: v.statement)
    return Classified(
        tuple((s, v.verdict == 1, v.reason) for s, v in zip(answer, a)),
        tuple((s, v.verdict == 1, v.reason) for s, v in zip(truth, r)),
    )
