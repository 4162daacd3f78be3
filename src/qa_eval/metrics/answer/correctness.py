"""Answer correctness: claims of the reference and the actual answer, and the claims they share.

Source: the QA-evaluation README of graphrag-eval ("Output Keys"), and graphrag-eval 6.6.1's prompt,
which asks the judge for ``reference_claims_count``, ``actual_claims_count``,
``matching_claims_count`` and ``reason``:

    answer_recall    = matching / reference claims
    answer_precision = matching / actual claims        (0 when the answer has no claims)
    answer_f1        = 2 * recall * precision / (recall + precision)   (0 when both are 0)

An empty answer, or one the judge finds no claims in (a refusal), scores 0: it is counted, not
dropped as an error, so it cannot inflate the mean. The judge's counts are checked
(reference >= 1, actual >= 0, matching <= both, none above 10,000) and a reply that breaks them is
asked again once.

A prompt from the config (``answer_correctness.prompt``) has its ``{question}``,
``{reference_answer}`` and ``{actual_answer}`` filled with the texts delimited as the built-in
prompt's are (closing tags and their look-alikes broken up, see ``prompts``), so an answer cannot
close the block the template puts it in.

Few-shot examples from people's labels (``answer_correctness.examples``, see
``qa_eval.agreement.examples``) go after the prompt's data line, before the question, delimited
the same way (``prompts.examples_block``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field, model_validator

from ...judge.calls import Judge
from ...prompts import Example, delimit, examples_block, prompt_text, render, with_examples
from ..output import Output, measure, serialize

__all__ = [
    "CorrectnessReply",
    "answer_correctness",
    "correctness_output",
    "correctness_scores",
    "f1",
    "fill_prompt",
]

METRIC = "answer_correctness"
MAX_CLAIMS = 10_000
"""More claims than this in one answer is not a count (a reply of 10^30 claims is re-asked)."""


class CorrectnessReply(BaseModel):
    """The judge's claim counts."""

    reference_claims_count: int = Field(ge=1)
    actual_claims_count: int = Field(ge=0)
    matching_claims_count: int = Field(ge=0)
    reason: str = ""

    @model_validator(mode="after")
    def _matching_fits(self) -> CorrectnessReply:
        # Checked here, not as a Field bound: the JSON schema (and so every cache key) is as it was.
        if max(self.reference_claims_count, self.actual_claims_count) > MAX_CLAIMS:
            raise ValueError(f"a claim count above {MAX_CLAIMS:,} is not a count of claims")
        if self.matching_claims_count > min(self.reference_claims_count, self.actual_claims_count):
            raise ValueError("matching_claims_count is larger than one of the claim counts")
        return self


def f1(recall: float | None, precision: float | None) -> float | None:
    """Harmonic mean of recall and precision; 0 when both are 0, None when either is missing."""
    if recall is None or precision is None:
        return None
    if recall + precision == 0:
        return 0.0
    return 2 * recall * precision / (recall + precision)


def correctness_scores(reference: int, actual: int, matching: int) -> tuple[float, float, float]:
    """(recall, precision, f1) of claim counts; see the module docstring."""
    if reference < 1:
        raise ValueError("a reference answer has at least one claim")
    recall = matching / reference
    precision = matching / actual if actual else 0.0
    return recall, precision, f1(recall, precision) or 0.0


def fill_prompt(template: str, **values: str) -> str:
    """A config prompt with its placeholders filled: each value delimited (closing tags and
    their look-alikes broken up) as the built-in prompts' are, inserted once, never parsed."""
    return template.format(**{name: delimit(value) for name, value in values.items()})


def _messages(
    question: str,
    reference: str,
    actual: str,
    template: str | None,
    examples: Sequence[Example] = (),
) -> list[dict]:
    block = examples_block(examples)
    if template is None:  # its reply format is with the instructions, before the data
        text = render(
            "answer_correctness",
            question=question,
            reference_answer=reference,
            actual_answer=actual,
        )
        text = with_examples(text, block)
    else:
        text = "[qa-eval:answer-correctness]\n" + fill_prompt(
            template, question=question, reference_answer=reference, actual_answer=actual
        )
        text = with_examples(text, block) + prompt_text("answer_correctness_output")
    return [{"role": "user", "content": text}]


ERROR_ALIASES = ("answer_eval_error",)
"""graphrag-eval 6.6.1 and its README name the error differently: both keys are written."""


async def correctness_output(
    judge: Judge,
    question: str,
    reference_answer: str,
    actual_answer: str,
    template: str | None = None,
    examples: Sequence[Example] = (),
) -> Output:
    """The ``answer_*`` record of one question (``examples``: few-shot examples from labels, in
    the prompt as data); ``JudgeError`` when the judge gives no usable reply, ``ValueError`` for
    an empty reference answer."""
    if not actual_answer.strip():
        values = {
            "answer_actual_claims_count": 0,
            "answer_matching_claims_count": 0,
            "answer_correctness_reason": "the answer is empty",
            "answer_recall": 0.0,
            "answer_precision": 0.0,
            "answer_f1": 0.0,
        }
        return Output(METRIC, values, costs=(0.0,))
    if not reference_answer.strip():
        raise ValueError("the reference answer is empty")
    messages = _messages(question, reference_answer, actual_answer, template, examples)
    verdict = await judge.ask("answer_correctness", messages, CorrectnessReply)
    reply = verdict.value
    recall, precision, f1_value = correctness_scores(
        reply.reference_claims_count, reply.actual_claims_count, reply.matching_claims_count
    )
    values = {
        "answer_reference_claims_count": reply.reference_claims_count,
        "answer_actual_claims_count": reply.actual_claims_count,
        "answer_matching_claims_count": reply.matching_claims_count,
        "answer_correctness_reason": reply.reason,
        "answer_recall": recall,
        "answer_precision": precision,
        "answer_f1": f1_value,
    }
    return Output.judged(METRIC, values, verdict)  # a cost of None: the price is unknown


async def score(judge: Judge, inputs: Mapping[str, Any], options: Mapping[str, Any]) -> Output:
    """The registry's entry point (``options["prompt"]``: the config's prompt text;
    ``options["examples"]``: few-shot examples from labels)."""
    return await correctness_output(
        judge,
        inputs["question"],
        inputs["reference_answer"],
        inputs["answer"],
        options.get("prompt"),
        options.get("examples", ()),
    )


async def answer_correctness(
    judge: Judge,
    question: str,
    reference_answer: str,
    actual_answer: str,
    template: str | None = None,
    examples: Sequence[Example] = (),
) -> dict[str, Any]:
    """The ``answer_*`` keys of one question (or ``answer_correctness_error``)."""
    job = correctness_output(judge, question, reference_answer, actual_answer, template, examples)
    return serialize(await measure(METRIC, job, aliases=ERROR_ALIASES))
