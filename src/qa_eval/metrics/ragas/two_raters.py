"""Two-rater judge scales: ragas 0.4.3's ``AnswerAccuracy`` and ``ResponseGroundedness``
(``ragas.metrics.collections.answer_accuracy`` / ``response_groundedness``, after NVIDIA's
"dual judge" metrics). Two prompts rate the same sample on a small integer scale; each rating is
scaled to [0, 1] and the two are averaged:

    answer_accuracy       = (r1 / 4 + r2 / 4) / 2      r in {0, 2, 4}
    response_groundedness = (r1 / 2 + r2 / 2) / 2      r in {0, 1, 2}

For answer accuracy the second rater sees the two answers swapped (the reference in the place of
the answer under test), as in ragas, so neither side is favoured. A rater that gives no usable
rating after ``tries`` asks is left out and the other's rating is the score; ragas returns NaN when
both fail, qa-eval raises ``JudgeError`` (the sample gets an ``error``, never a NaN value).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel

from ...errors import BudgetExceeded, DryRunSkip, JudgeError
from ...prompts import render

__all__ = [
    "AccuracyRating",
    "GroundednessRating",
    "answer_accuracy_ratings",
    "groundedness_ratings",
    "two_rater_score",
]


class AccuracyRating(BaseModel):
    """One rater's accuracy rating: 0 no match, 2 partial match, 4 exact match."""

    rating: Literal[0, 2, 4]


class GroundednessRating(BaseModel):
    """One rater's groundedness rating: 0 not grounded, 1 partly, 2 fully."""

    rating: Literal[0, 1, 2]


def two_rater_score(first: int | None, second: int | None, top: int) -> float | None:
    """The mean of the two ratings scaled by ``top``; one rating alone when the other is missing;
    ``None`` when both are."""
    scaled = [r / top for r in (first, second) if r is not None]
    if not scaled:
        return None
    return (scaled[0] + scaled[1]) / 2.0 if len(scaled) == 2 else scaled[0]


async def _rating(
    judge: Any, metric: str, prompt: str, schema: type[Any], tries: int, **texts: str
) -> tuple[int | None, JudgeError | None]:
    """One rater's rating, asked up to ``tries`` times; ``(None, last error)`` when none came."""
    messages = [{"role": "user", "content": render(prompt, None, **texts)}]
    error: JudgeError | None = None
    for _ in range(max(1, tries)):
        try:
            verdict = await judge.ask(metric, messages, schema)
        except (DryRunSkip, BudgetExceeded):
            raise
        except JudgeError as e:
            error = e
            continue
        return int(verdict.value.rating), None
    return None, error


async def _both(
    first: Any, second: Any
) -> tuple[tuple[int | None, JudgeError | None], tuple[int | None, JudgeError | None]]:
    """Both raters at once (ragas asks one after the other; the verdicts do not depend on the
    order). A dry run plans both calls; a skip or a spent budget is raised after both ended."""
    pair = await asyncio.gather(first, second, return_exceptions=True)
    for outcome in pair:
        if isinstance(outcome, BaseException):
            raise outcome
    return pair[0], pair[1]  # type: ignore[return-value]


def _settled(pair: Sequence[tuple[int | None, JudgeError | None]]) -> tuple[int | None, ...]:
    ratings = tuple(r for r, _ in pair)
    if all(r is None for r in ratings):
        error = next(e for _, e in pair if e is not None)
        raise JudgeError(f"neither rater gave a usable rating: {error}")
    return ratings


async def answer_accuracy_ratings(
    judge: Any, question: str, response: str, reference: str, tries: int = 5
) -> tuple[int | None, int | None]:
    """The two raters' accuracy ratings (the second with the answers swapped); ``JudgeError``
    when neither gives one."""
    metric = "answer_accuracy"
    pair = await _both(
        _rating(
            judge,
            metric,
            "answer_accuracy_rater1",
            AccuracyRating,
            tries,
            question=question,
            answer=response,
            reference=reference,
        ),
        _rating(
            judge,
            metric,
            "answer_accuracy_rater2",
            AccuracyRating,
            tries,
            question=question,
            answer=reference,
            reference=response,
        ),
    )
    first, second = _settled(pair)
    return first, second


async def groundedness_ratings(
    judge: Any, response: str, context: str, tries: int = 5
) -> tuple[int | None, int | None]:
    """The two raters' groundedness ratings of ``response`` in ``context``; ``JudgeError`` when
    neither gives one."""
    metric = "response_groundedness"
    pair = await _both(
        _rating(
            judge,
            metric,
            "groundedness_rater1",
            GroundednessRating,
            tries,
            response=response,
            context=context,
        ),
        _rating(
            judge,
            metric,
            "groundedness_rater2",
            GroundednessRating,
            tries,
            response=response,
            context=context,
        ),
    )
    first, second = _settled(pair)
    return first, second
