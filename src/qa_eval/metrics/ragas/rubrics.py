"""Rubric scoring: the judge picks the level of a scoring rubric that fits a sample best.

Source: ragas 0.4.3, ``ragas.metrics.collections.domain_specific_rubrics`` (one rubric for every
sample, by default the 1-5 rubrics below) and ``instance_specific_rubrics`` (a rubric per sample).
The value is the score the judge picks, as a number (1.0-5.0 with the default rubrics); its
feedback is the reason. A rubric is a mapping ``"score<N>_description" -> criterion``; when its
keys name the scores that way, a reply with a score the rubric does not have is refused and asked
again (ragas takes any integer). The default rubrics have ragas' five levels and what each
stands for, worded by qa-eval.

qa-eval's ``answer_relevance_rubric`` (``metrics.answer.direct_assessment``) is a different metric -
five fixed named levels mapped to 0-1 - and custom metrics (``metrics.custom``) are config-declared
outputs, so this module has an engine of its own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, create_model

from ...prompts import delimit, numbered_blocks, render

__all__ = [
    "DEFAULT_REFERENCE_FREE_RUBRICS",
    "DEFAULT_WITH_REFERENCE_RUBRICS",
    "RubricOutcome",
    "rubric_levels",
    "rubric_score",
]

METRIC = "rubrics_score"

DEFAULT_REFERENCE_FREE_RUBRICS: Mapping[str, str] = MappingProxyType(
    {
        "score1_description": "Wrong or off the point: nothing in the response answers what "
        "the user input asks.",
        "score2_description": "Partly right, but with serious mistakes or large gaps that keep it "
        "from answering the user input.",
        "score3_description": "Right on the whole, but vague, incomplete or missing details the "
        "user input calls for.",
        "score4_description": "Right and clear, with no more than a small gap or slip in "
        "answering the user input.",
        "score5_description": "Right, clear and complete: it answers everything the user input "
        "asks, with no mistake or gap.",
    }
)
"""The default 1-5 rubric without a reference (ragas' levels, in qa-eval's words)."""

DEFAULT_WITH_REFERENCE_RUBRICS: Mapping[str, str] = MappingProxyType(
    {
        "score1_description": "Wrong or off the point: the response agrees with the reference "
        "in nothing that matters.",
        "score2_description": "Agrees with the reference in part, but with serious mistakes, "
        "large gaps or much that does not belong.",
        "score3_description": "Agrees with the reference on the whole, but is vague, thin on "
        "detail or slightly wrong in places.",
        "score4_description": "Agrees closely with the reference, with no more than a small gap "
        "or slip.",
        "score5_description": "Agrees fully with the reference: right, clear, complete and "
        "detailed.",
    }
)
"""The default 1-5 rubric with a reference (ragas' levels, in qa-eval's words)."""

_LEVEL_KEY = re.compile(r"^\s*score\s*(-?\d+)\s*(?:_description)?\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class RubricOutcome:
    """The judge's score on a rubric and its feedback."""

    score: int
    feedback: str


def rubric_levels(rubrics: Mapping[str, str]) -> tuple[int, ...]:
    """The scores a rubric names in its keys (``score3_description`` -> 3), sorted; empty when
    a key does not name a score that way."""
    levels = []
    for key in rubrics:
        found = _LEVEL_KEY.match(str(key))
        if found is None:
            return ()
        levels.append(int(found.group(1)))
    return tuple(sorted(set(levels)))


def _reply_schema(levels: tuple[int, ...]) -> type[BaseModel]:
    def known(value: int) -> int:
        if levels and value not in levels:
            raise ValueError(f"score must be one of {', '.join(map(str, levels))}")
        return value

    score = Annotated[int, AfterValidator(known)]
    return create_model(
        "RubricReply", __doc__="A rubric score.", feedback=(str, ...), score=(score, ...)
    )


def _inputs(
    user_input: str | None,
    response: str | None,
    retrieved_contexts: Sequence[str] | None,
    reference_contexts: Sequence[str] | None,
    reference: str | None,
) -> str:
    blocks = []
    for tag, text in (("user_input", user_input), ("response", response)):
        if text is not None:
            blocks.append(f"<{tag}>\n{delimit(text)}\n</{tag}>")
    for tag, texts in (
        ("retrieved_contexts", retrieved_contexts),
        ("reference_contexts", reference_contexts),
    ):
        if texts is not None:
            blocks.append(f"<{tag}>\n{numbered_blocks(list(texts), 'context')}\n</{tag}>")
    if reference is not None:
        blocks.append(f"<reference>\n{delimit(reference)}\n</reference>")
    return "\n".join(blocks) if blocks else "(no inputs were given)"


async def rubric_score(
    judge: Any,
    rubrics: Mapping[str, str],
    user_input: str | None = None,
    response: str | None = None,
    retrieved_contexts: Sequence[str] | None = None,
    reference_contexts: Sequence[str] | None = None,
    reference: str | None = None,
) -> RubricOutcome:
    """The score the judge gives the given inputs on ``rubrics``; ``JudgeError`` when no usable
    reply comes."""
    rubric = "\n".join(f"{key}: {value}" for key, value in rubrics.items())
    inputs = _inputs(user_input, response, retrieved_contexts, reference_contexts, reference)
    text = render("rubric_score", {"inputs": inputs}, rubric=rubric)
    schema = _reply_schema(rubric_levels(rubrics))
    verdict = await judge.ask(METRIC, [{"role": "user", "content": text}], schema)
    reply: Any = verdict.value
    return RubricOutcome(int(reply.score), str(reply.feedback))
