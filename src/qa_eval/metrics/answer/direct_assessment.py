"""Answer relevance by direct assessment: the judge picks a rubric level, we map it to a score.

Source: ``../shared/spec/graphrag-metrics.md``, section 4 ("RAGAS Answer Relevance", "Alternative
Direct Assessment"), the fallback for when no questions can be generated from the answer:

    level        the answer ...                                answer_relevance_rubric
    complete     directly and completely addresses the question    1.0
    mostly       mostly addresses it, with minor gaps              0.75
    partial      partially addresses it                            0.5
    tangential   is only tangentially related to it                0.25
    irrelevant   is completely irrelevant to it                    0.0

The spec's prompt asks the judge for a number between 0 and 1; qa-eval asks for one of the five
levels and maps it here, so a score is always one of the rubric's values (never, say, 0.6). The
score is on 0-1 (the spec multiplies by 100). An empty answer scores 0 without a judge call.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal

from pydantic import BaseModel, field_validator

from ...judge.calls import Judge
from ...prompts import render
from ..output import Output, measure, serialize

__all__ = ["RUBRIC", "RubricReply", "answer_relevance_rubric", "rubric_output", "rubric_score"]

METRIC = "answer_relevance_rubric"

RUBRIC: Mapping[str, float] = MappingProxyType(
    {"complete": 1.0, "mostly": 0.75, "partial": 0.5, "tangential": 0.25, "irrelevant": 0.0}
)

Level = Literal["complete", "mostly", "partial", "tangential", "irrelevant"]


def rubric_score(level: str) -> float:
    """The score of a rubric level (case and surrounding spaces ignored); ``ValueError`` for a
    level that is not in :data:`RUBRIC`."""
    key = level.strip().lower() if isinstance(level, str) else level
    if key not in RUBRIC:
        raise ValueError(f"unknown rubric level {level!r}; known: {', '.join(RUBRIC)}")
    return RUBRIC[key]


class RubricReply(BaseModel):
    """The judge's rubric level and its reason."""

    level: Level
    reason: str = ""

    @field_validator("level", mode="before")
    @classmethod
    def _normalise(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value


async def rubric_output(judge: Judge, question: str, answer: str) -> Output:
    """The ``answer_relevance_rubric`` record of one question; ``JudgeError`` when the judge
    gives no usable reply."""
    if not answer.strip():
        values = {
            "answer_relevance_rubric": 0.0,
            "answer_relevance_rubric_reason": "the answer is empty",
        }
        return Output(METRIC, values, costs=(0.0,))
    text = render("relevance_rubric", question=question, answer=answer)
    verdict = await judge.ask(
        "answer_relevance_rubric", [{"role": "user", "content": text}], RubricReply
    )
    values = {
        "answer_relevance_rubric": rubric_score(verdict.value.level),
        "answer_relevance_rubric_reason": verdict.value.reason,
    }
    return Output.judged(METRIC, values, verdict)  # a cost of None: the price is unknown


async def answer_relevance_rubric(judge: Judge, question: str, answer: str) -> dict[str, Any]:
    """The ``answer_relevance_rubric`` keys of one question (or its ``*_error``)."""
    return serialize(await measure(METRIC, rubric_output(judge, question, answer)))
