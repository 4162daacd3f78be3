"""Answer classification: CORRECT, WRONG or DON'T KNOW, and the count of each class.

Source: ``../shared/spec/graphrag-metrics.md``, sections 9-11 ("Correct / Wrong / Don't Know
Answers Count"):

1. If the answer contains an uncertainty phrase ("i don't know", "not sure", ...), it is
   DON'T KNOW, decided here without a judge call.
2. Otherwise the judge compares it with the reference answer and says CORRECT or WRONG.

``correct_answers_count`` and the other two counts are the number of answers in each class
(:func:`count_classes`).

Where qa-eval departs from the spec's pseudo code:

- Phrases match whole words, case-insensitively, with any run of whitespace between their words
  and typographic apostrophes read as ``'``. The spec's substring test makes "no data" fire inside
  "no database" and "unknown" inside "unknowns"; here neither fires.
- The spec's extra rule for short answers containing "none", "n/a" or "null" is left out: "None"
  is a correct answer to many questions.
- An empty answer is DON'T KNOW (it gives no answer), without a judge call and with no phrase.
- The judge's label must be exactly CORRECT or WRONG (see :func:`parse_label`); anything else,
  such as INCORRECT or NOT CORRECT, is not guessed at but rejected, so the judge is asked again and
  then the question records ``answer_class_error``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, field_validator

from ...judge.calls import Judge
from ...prompts import render
from ..output import Output, measure, serialize

__all__ = [
    "CLASSES",
    "CORRECT",
    "DEFAULT_UNCERTAINTY_PHRASES",
    "DONT_KNOW",
    "WRONG",
    "ClassifyReply",
    "classify_answer",
    "classify_output",
    "count_classes",
    "parse_label",
    "score",
    "uncertainty_phrase",
]

CORRECT: Literal["CORRECT"] = "CORRECT"
WRONG: Literal["WRONG"] = "WRONG"
DONT_KNOW = "DON'T KNOW"
METRIC = "answer_class"
CLASSES = (CORRECT, WRONG, DONT_KNOW)

DEFAULT_UNCERTAINTY_PHRASES = (
    "i don't know",
    "i do not know",
    "unknown",
    "not sure",
    "cannot determine",
    "no information",
    "insufficient data",
    "unable to answer",
    "cannot answer",
    "don't have enough information",
    "not available",
    "no data",
)
"""The spec's list (section 11), which includes the shorter list of section 9."""

_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\u2032": "'"})


@lru_cache(maxsize=256)
def _phrase_pattern(phrase: str) -> re.Pattern[str]:
    words = phrase.translate(_APOSTROPHES).split()
    if not words:
        raise ValueError("an uncertainty phrase must not be blank")
    body = r"\s+".join(re.escape(w) for w in words)
    return re.compile(rf"(?<!\w){body}(?!\w)", re.IGNORECASE)


def uncertainty_phrase(
    answer: str, phrases: Sequence[str] = DEFAULT_UNCERTAINTY_PHRASES
) -> str | None:
    """The first of ``phrases`` that occurs in ``answer`` as whole words (case-insensitive), or
    None. "unknown" fires in "The author is unknown." but not in "unknowns"."""
    text = answer.translate(_APOSTROPHES)
    for phrase in phrases:
        if _phrase_pattern(phrase).search(text):
            return phrase
    return None


_DECORATION = " \t*_`\"'.!:;"


def parse_label(text: str) -> Literal["CORRECT", "WRONG"] | None:
    """The label in a judge's reply, or None when there is no unambiguous one.

    The first non-blank line, without surrounding markup (``*``, ``_``, backticks, quotes) or
    trailing punctuation, must be exactly ``CORRECT`` or ``WRONG`` in any letter case. Nothing is
    searched for inside longer text: ``INCORRECT``, ``NOT CORRECT``, ``CORRECT or WRONG`` and
    ``The answer is correct`` all give None."""
    for line in text.splitlines():
        if line.strip():
            token = line.strip(_DECORATION).upper()
            if token == CORRECT:
                return CORRECT
            if token == WRONG:
                return WRONG
            return None
    return None


def count_classes(labels: Iterable[str]) -> dict[str, int]:
    """How many labels fall in each class; all three classes are always present."""
    counts = dict.fromkeys(CLASSES, 0)
    for label in labels:
        if label not in counts:
            raise ValueError(f"unknown answer class {label!r}; known: {', '.join(CLASSES)}")
        counts[label] += 1
    return counts


class ClassifyReply(BaseModel):
    """The judge's label, read with :func:`parse_label`, and its reason."""

    label: Literal["CORRECT", "WRONG"]
    reason: str = ""

    @field_validator("label", mode="before")
    @classmethod
    def _exact_label(cls, value: Any) -> Any:
        if isinstance(value, str):
            label = parse_label(value)
            if label is None:
                raise ValueError(f"label must be exactly CORRECT or WRONG, not {value!r}")
            return label
        return value


async def classify_output(
    judge: Judge,
    question: str,
    reference: str,
    answer: str,
    phrases: Sequence[str] = DEFAULT_UNCERTAINTY_PHRASES,
) -> Output:
    """The ``answer_class`` record of one question; ``JudgeError`` when the judge gives no usable
    reply, ``ValueError`` for an empty reference answer (when no uncertainty phrase fires)."""
    if not answer.strip():
        values = {"answer_class": DONT_KNOW, "answer_class_reason": "the answer is empty"}
        return Output(METRIC, values, costs=(0.0,))
    phrase = uncertainty_phrase(answer, phrases)
    if phrase is not None:
        values = {
            "answer_class": DONT_KNOW,
            "answer_class_phrase": phrase,
            "answer_class_reason": f"the answer says {phrase!r}",
        }
        return Output(METRIC, values, costs=(0.0,))
    if not reference.strip():
        raise ValueError("the reference answer is empty")
    text = render(
        "classify", question=question, reference_answer=reference, candidate_answer=answer
    )
    verdict = await judge.ask("answer_class", [{"role": "user", "content": text}], ClassifyReply)
    values = {"answer_class": verdict.value.label, "answer_class_reason": verdict.value.reason}
    return Output.judged(METRIC, values, verdict)  # a cost of None: the price is unknown


async def score(judge: Judge, inputs: Mapping[str, Any], options: Mapping[str, Any]) -> Output:
    """The registry's entry point (``options["phrases"]``; no reference needed when one fires)."""
    return await classify_output(
        judge,
        inputs["question"],
        inputs["reference_answer"] or "",
        inputs["answer"],
        options.get("phrases", DEFAULT_UNCERTAINTY_PHRASES),
    )


async def classify_answer(
    judge: Judge,
    question: str,
    reference: str,
    answer: str,
    phrases: Sequence[str] = DEFAULT_UNCERTAINTY_PHRASES,
) -> dict[str, Any]:
    """The ``answer_class`` keys of one question (or ``answer_class_error``)."""
    return serialize(
        await measure(METRIC, classify_output(judge, question, reference, answer, phrases))
    )
