"""Faithfulness: the share of the answer's statements that the retrieved contexts support.

Source: section 1 of ``../shared/spec/graphrag-metrics.md`` ("RAGAS Faithfulness") and ragas 0.4's
collections ``Faithfulness`` (``../shared/spec/ragas-collections-usage.md``), which asks the judge
twice: first for the statements of the answer (given the question and the answer), then for an
NLI verdict (1 supported / 0 not) on every statement against the contexts joined by newlines.

    faithfulness = statements with verdict 1 / statements

The score is a fraction in [0, 1], as ragas returns it (the graphrag document multiplies by 100).
As in ragas, all statements are judged in one call; the reply must carry exactly one verdict per
statement, numbered 1..n, or it is asked again once.

Policies (where the document and ragas disagree or say nothing):

- **No claims.** An answer the judge finds no statements in (a refusal, "I don't know") has nothing
  to be faithful or unfaithful about. ragas returns NaN, the document 100. qa-eval records it as
  not computed: no ``faithfulness`` key, ``faithfulness_reason`` = "the answer makes no claims",
  so aggregates leave it out instead of counting it as 0 or 1. An empty answer is the same, without
  a call ("the answer is empty").
- **No contexts.** ragas refuses to score without retrieved contexts; qa-eval records
  ``faithfulness_error`` = "no contexts" without a call (nothing was retrieved to be faithful to,
  which is a fault of the input, not a score of the answer).

Keys written: ``faithfulness``, ``faithfulness_statements`` (``[{statement, supported, reason}]``),
``faithfulness_cost`` (both calls; null when a price is unknown), ``faithfulness_reason`` when
not computed, or ``faithfulness_error``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

from ...judge.calls import Judge
from ...prompts import numbered_blocks, render
from ..output import Output, measure, serialize
from .step_context import numbered_schema

__all__ = [
    "NO_CLAIMS",
    "StatementVerdict",
    "StatementsReply",
    "faithfulness",
    "faithfulness_output",
    "faithfulness_score",
    "score",
    "verdicts_schema",
]

NO_CLAIMS = "the answer makes no claims"
METRIC = "faithfulness"


class StatementsReply(BaseModel):
    """The judge's statements of the answer (empty when it makes no claims)."""

    statements: list[str]


class StatementVerdict(BaseModel):
    """Whether one numbered statement can be inferred from the contexts."""

    statement: int
    reason: str = ""
    verdict: int = Field(ge=0, le=1)


def verdicts_schema(n: int) -> type[BaseModel]:
    """The reply schema for ``n`` statements: exactly ``n`` verdicts, numbered 1..n."""
    return numbered_schema("StatementVerdicts", StatementVerdict, "statement", n)


def faithfulness_score(verdicts: Sequence[bool]) -> float | None:
    """Share of statements supported by the contexts; None when there are no statements."""
    if not verdicts:
        return None
    return sum(1 for v in verdicts if v) / len(verdicts)


def _numbered(statements: Sequence[str]) -> str:
    return numbered_blocks(statements, "statement")


async def faithfulness_output(
    judge: Judge, question: str, answer: str, contexts: Sequence[str]
) -> Output:
    """The ``faithfulness`` record of one question (see the module docstring for the policies);
    ``JudgeError`` when a call gives no usable reply, ``ValueError`` without contexts."""
    if not answer.strip():
        return Output(METRIC, {"faithfulness_reason": "the answer is empty"}, costs=(0.0,))
    if not contexts:
        raise ValueError("no contexts")
    messages = [
        {
            "role": "user",
            "content": render("faithfulness_statements", question=question, answer=answer),
        }
    ]
    extracted = await judge.ask(METRIC, messages, StatementsReply)
    statements = [s.strip() for s in extracted.value.statements if s.strip()]
    if not statements:
        values: dict[str, Any] = {"faithfulness_reason": NO_CLAIMS, "faithfulness_statements": []}
        return Output.judged(METRIC, values, extracted)  # a cost of None: the price is unknown
    trusted = {"statements": _numbered(statements)}
    messages = [
        {
            "role": "user",
            "content": render("faithfulness_verdicts", trusted, context="\n".join(contexts)),
        }
    ]
    judged = await judge.ask(METRIC, messages, verdicts_schema(len(statements)))
    ordered = sorted(judged.value.verdicts, key=lambda v: v.statement)  # type: ignore[attr-defined]
    supported = [v.verdict == 1 for v in ordered]
    values = {
        "faithfulness": faithfulness_score(supported),
        "faithfulness_statements": [
            {"statement": s, "supported": ok, "reason": v.reason}
            for s, ok, v in zip(statements, supported, ordered)
        ],
    }
    return Output.judged(METRIC, values, extracted, judged)  # both calls; None: unknown


async def score(judge: Judge, inputs: Mapping[str, Any], options: Mapping[str, Any]) -> Output:
    """The registry's entry point. A dry run that plans the first call (the statements) also
    counts the second (the verdicts), estimated with the answer's sentences as statements."""
    question, answer, contexts = inputs["question"], inputs["answer"], inputs["contexts"]
    if not getattr(judge, "dry_run", False):
        return await faithfulness_output(judge, question, answer, contexts)
    planner, planned = judge.planning()
    (output,) = await measure(METRIC, faithfulness_output(planner, question, answer, contexts))
    if len(planned) == 1:
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", answer.strip()) if s] or [answer]
        text = render(
            "faithfulness_verdicts",
            {"statements": numbered_blocks(sentences, "statement")},
            context="\n".join(contexts),
        )
        judge.plan_call(
            METRIC, [{"role": "user", "content": text}], verdicts_schema(len(sentences))
        )
    return output


async def faithfulness(
    judge: Judge, question: str, answer: str, contexts: Sequence[str]
) -> dict[str, Any]:
    """The ``faithfulness`` keys of one question; see the module docstring for the policies."""
    return serialize(await measure(METRIC, faithfulness_output(judge, question, answer, contexts)))
