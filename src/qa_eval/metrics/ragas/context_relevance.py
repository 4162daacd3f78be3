"""Context relevance: how relevant the retrieved contexts are to the question, by two raters.

Source: ragas 0.4.3 ``ContextRelevance`` (``ragas.metrics.collections``, NVIDIA's two-judge
design). The contexts are joined by newlines; two differently worded prompts each rate them
0 (not relevant), 1 (partly) or 2 (relevant), and

    context_relevance = (r1 / 2 + r2 / 2) / 2

When one rater gives no usable rating, the other's alone is the value (r / 2), as in ragas.
As in ragas, no call is made and the value is 0.0 when the question or the joined contexts are
blank, or when the contexts are contained in the question (a context that only repeats the
question holds nothing new).

Policies: ragas asks each rater up to ``max_retries`` times and returns NaN when both fail;
qa-eval's judge already re-asks an unusable reply once and retries transient faults, so each rater
is asked once (no retries multiplied), and when both fail the value is not computed: the judge's
error is raised (a batch records it as that row's ``error``), never NaN.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from ...errors import JudgeError
from ...prompts import render

__all__ = ["RATERS", "ContextRating", "RatingReply", "context_rating", "context_relevance_score"]

METRIC = "context_relevance"
RATERS = ("context_rating_direct", "context_rating_second")
"""The two raters' prompt files."""


class RatingReply(BaseModel):
    """One rater's rating of the contexts."""

    rating: int = Field(ge=0, le=2)


@dataclass(frozen=True)
class ContextRating:
    """The value and what it came from: each rater's rating (``None``: no usable rating), or
    why no call was made."""

    value: float
    ratings: tuple[int | None, ...] = ()
    skipped: str | None = None


def context_relevance_score(ratings: Sequence[int | None]) -> float | None:
    """The mean of the usable ratings, each scaled from 0..2 to 0..1; ``None`` without one."""
    usable = [r / 2.0 for r in ratings if r is not None]
    if not usable:
        return None
    return usable[0] if len(usable) == 1 else (usable[0] + usable[1]) / 2.0


def _no_call(question: str, context: str) -> str | None:
    """Why ragas scores 0.0 without asking, or ``None`` when the raters are asked."""
    if not question.strip():
        return "the question is blank"
    if not context.strip():
        return "the retrieved contexts are blank"
    if context.strip() in question.strip():
        return "the retrieved contexts only repeat the question"
    return None


async def _rate(judge: Any, prompt: str, question: str, context: str) -> int:
    text = render(prompt, question=question, context=context)
    verdict = await judge.ask(METRIC, [{"role": "user", "content": text}], RatingReply)
    return int(verdict.value.rating)


async def context_rating(judge: Any, question: str, contexts: Sequence[str]) -> ContextRating:
    """Both raters' ratings of the joined ``contexts`` for ``question`` (asked at once) and the
    value; ``ValueError`` without a question or contexts, ``JudgeError`` when neither rater
    gives a usable rating."""
    if not question:
        raise ValueError("user_input is missing or empty")
    if not contexts:
        raise ValueError("retrieved_contexts is missing or empty")
    context = "\n".join(contexts)
    skipped = _no_call(question, context)
    if skipped is not None:
        return ContextRating(0.0, skipped=skipped)
    replies = await asyncio.gather(
        *(_rate(judge, p, question, context) for p in RATERS), return_exceptions=True
    )
    for reply in replies:
        if isinstance(reply, BaseException) and not isinstance(reply, JudgeError):
            raise reply
    ratings = tuple(r if isinstance(r, int) else None for r in replies)
    value = context_relevance_score(ratings)
    if value is None:
        raise next(r for r in replies if isinstance(r, JudgeError))
    return ContextRating(value, ratings)
