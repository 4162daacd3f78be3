"""Factual accuracy (GEval): three criteria scored by the judge, weighted by us, then graded.

Source: ``../shared/spec/graphrag-metrics.md``, section 6 ("Factual Accuracy Percentage"). The
judge scores the candidate answer against the reference answer on three criteria, each on 0-100
with the spec's rubric (90-100 best ... 0-29 worst):

    correctness   C_cr  are the facts in the answer accurate?
    completeness  C_cp  is the essential information of the reference there?
    consistency   C_cs  is the answer free of internal contradictions?

    factual_accuracy = (0.5 * C_cr + 0.3 * C_cp + 0.2 * C_cs) / (0.5 + 0.3 + 0.2)      (0-100)

    grade = A if >= 80, B if >= 60, C if >= 40, D if >= 20, else E

The weighted score is computed here from the three criterion scores; a ``final_score`` the judge
might add is never used (the spec's prompt asks the judge for one, which it may get wrong). The
weighted mean is rounded to 9 decimals so that binary fractions do not move a score across a
grade boundary (0.5 * 62 + 0.3 * 62 + 0.2 * 62 is 61.99999999999999 in floating point, not 62).

qa-eval stores ``factual_accuracy`` and the three criteria on 0-1 (the judge's number / 100); the
grade is taken on 0-100 as in the spec. An empty answer scores 0 on every criterion (grade E)
without a judge call; an empty reference answer is recorded as ``factual_accuracy_error``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from numbers import Real
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, Field

from ...judge.calls import Judge
from ...prompts import render
from ..output import Output, measure, serialize

__all__ = [
    "CRITERIA",
    "DEFAULT_CUTOFFS",
    "DEFAULT_WEIGHTS",
    "CriterionScore",
    "GEvalReply",
    "factual_accuracy",
    "factual_accuracy_metric",
    "factual_accuracy_output",
    "letter_grade",
    "score",
]

METRIC = "factual_accuracy"

CRITERIA = ("correctness", "completeness", "consistency")
DEFAULT_WEIGHTS = (0.5, 0.3, 0.2)
DEFAULT_CUTOFFS: Mapping[str, float] = MappingProxyType({"A": 80, "B": 60, "C": 40, "D": 20})


class CriterionScore(BaseModel):
    """One criterion's score on 0-100, with the judge's reason."""

    score: float = Field(ge=0, le=100)
    reason: str = ""


class GEvalReply(BaseModel):
    """The judge's scores for the three criteria."""

    correctness: CriterionScore
    completeness: CriterionScore
    consistency: CriterionScore


def _check_score(name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"{name} is not a number: {value!r}")
    if not 0 <= value <= 100:  # also rejects NaN
        raise ValueError(f"{name} must be on 0-100, got {value}")


def factual_accuracy(
    correctness: float,
    completeness: float,
    consistency: float,
    weights: Sequence[float] = DEFAULT_WEIGHTS,
) -> float:
    """The weighted mean of the three criterion scores (each on 0-100), on 0-100.

    ``weights`` are three finite, non-negative numbers with a positive sum; they are divided by
    their sum, so ``(5, 3, 2)`` is the same as the default ``(0.5, 0.3, 0.2)``."""
    scores = (correctness, completeness, consistency)
    for name, value in zip(CRITERIA, scores):
        _check_score(name, value)
    if len(weights) != 3:
        raise ValueError(f"factual_accuracy takes 3 weights, got {len(weights)}")
    if any(not math.isfinite(w) or w < 0 for w in weights) or not any(w > 0 for w in weights):
        raise ValueError(f"weights must be finite, >= 0 and not all 0, got {tuple(weights)}")
    total = math.fsum(weights)
    return round(math.fsum(w * s for w, s in zip(weights, scores)) / total, 9)


def letter_grade(
    score: float, cutoffs: Mapping[str, float] = DEFAULT_CUTOFFS, fallback: str = "E"
) -> str:
    """The grade of a 0-100 score: the grade with the highest cutoff that the score reaches
    (``score >= cutoff``), else ``fallback``."""
    if isinstance(score, bool) or not isinstance(score, Real) or not 0 <= score <= 100:
        raise ValueError(f"a grade is given to a score on 0-100, got {score!r}")
    for grade, cutoff in cutoffs.items():
        if isinstance(cutoff, bool) or not isinstance(cutoff, Real):
            raise ValueError(f"the cutoff of grade {grade} is not a number: {cutoff!r}")
        if not math.isfinite(cutoff):
            raise ValueError(f"the cutoff of grade {grade} is not finite: {cutoff}")
    for grade, cutoff in sorted(cutoffs.items(), key=lambda item: item[1], reverse=True):
        if score >= cutoff:
            return grade
    return fallback


def _record(
    scores: Mapping[str, float],
    reasons: Mapping[str, str],
    weights: Sequence[float],
    cutoffs: Mapping[str, float],
) -> dict[str, Any]:
    correctness, completeness, consistency = (scores[c] for c in CRITERIA)
    value = factual_accuracy(correctness, completeness, consistency, weights=weights)
    out: dict[str, Any] = {
        "factual_accuracy": value / 100,
        "factual_accuracy_grade": letter_grade(value, cutoffs),
    }
    for criterion in CRITERIA:
        out[f"factual_accuracy_{criterion}"] = scores[criterion] / 100
        out[f"factual_accuracy_{criterion}_reason"] = reasons[criterion]
    return out


async def factual_accuracy_output(
    judge: Judge,
    question: str,
    reference: str,
    answer: str,
    weights: Sequence[float] = DEFAULT_WEIGHTS,
    cutoffs: Mapping[str, float] = DEFAULT_CUTOFFS,
) -> Output:
    """The ``factual_accuracy*`` record of one question; ``JudgeError`` when the judge gives no
    usable reply, ``ValueError`` for an empty reference answer."""
    if not answer.strip():
        values = _record(
            dict.fromkeys(CRITERIA, 0.0),
            dict.fromkeys(CRITERIA, "the answer is empty"),
            weights,
            cutoffs,
        )
        return Output(METRIC, values, costs=(0.0,))
    if not reference.strip():
        raise ValueError("the reference answer is empty")
    text = render("geval", question=question, reference_answer=reference, candidate_answer=answer)
    verdict = await judge.ask("factual_accuracy", [{"role": "user", "content": text}], GEvalReply)
    reply = verdict.value
    criteria = {c: getattr(reply, c) for c in CRITERIA}
    values = _record(
        {c: s.score for c, s in criteria.items()},
        {c: s.reason for c, s in criteria.items()},
        weights,
        cutoffs,
    )
    return Output.judged(METRIC, values, verdict)  # a cost of None: the price is unknown


async def score(judge: Judge, inputs: Mapping[str, Any], options: Mapping[str, Any]) -> Output:
    """The registry's entry point (``options``: ``weights``, ``cutoffs``)."""
    return await factual_accuracy_output(
        judge,
        inputs["question"],
        inputs["reference_answer"],
        inputs["answer"],
        options.get("weights", DEFAULT_WEIGHTS),
        options.get("cutoffs", DEFAULT_CUTOFFS),
    )


async def factual_accuracy_metric(
    judge: Judge,
    question: str,
    reference: str,
    answer: str,
    weights: Sequence[float] = DEFAULT_WEIGHTS,
    cutoffs: Mapping[str, float] = DEFAULT_CUTOFFS,
) -> dict[str, Any]:
    """The ``factual_accuracy*`` keys of one question (or ``factual_accuracy_error``)."""
    job = factual_accuracy_output(judge, question, reference, answer, weights, cutoffs)
    return serialize(await measure(METRIC, job))
