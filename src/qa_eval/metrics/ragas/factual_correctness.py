"""Factual correctness: ragas 0.4.3's ``FactualCorrectness``
(``ragas.metrics.collections.factual_correctness``). The response is broken into claims, at the
chosen ``atomicity`` (low: a claim per sentence; high: one fact per claim) and ``coverage`` (low:
the main facts; high: every detail); each claim is judged by NLI against the reference (1 it can
be inferred, 0 not). Unless ``mode`` is precision, the reference is broken into claims too and
judged against the response. With tp = response claims the reference supports, fp = those it does
not, fn = reference claims the response does not support:

    precision = tp / (tp + fp + 1e-8)
    recall    = tp / (tp + fn + 1e-8)
    f1        = (1 + β²) · P · R / (β² · P + R),  P = tp / (tp + fp), R = tp / (tp + fn)
                (P or R is 0 when its denominator is; F is 0 when both are: ragas' ``fbeta_score``)

and the value is rounded to two decimals, as numpy's ``round`` does (half to even of x · 100).

Policy: where the mode's denominator (before ragas' 1e-8) is 0 - precision of a response without
claims (tp + fp = 0), recall with tp + fn = 0, F1 when both are 0 - the score is undefined:
``None`` with a reason (ragas gives 0). The NLI prompt is faithfulness' (``faithfulness_verdicts``),
one call for all the claims of a side, one verdict per numbered claim; the two sides are asked at
once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

from ...prompts import numbered_blocks, render
from ..retrieval.faithfulness import verdicts_schema

__all__ = [
    "GUIDANCE",
    "ClaimVerdict",
    "ClaimsReply",
    "FactualJudgement",
    "factual_correctness_judgement",
    "factual_score",
    "fbeta",
    "np_round",
    "verify_claims",
]

METRIC = "factual_correctness"
Mode = Literal["precision", "recall", "f1"]
Level = Literal["low", "high"]

GUIDANCE: dict[tuple[str, str], str] = {
    ("low", "low"): "Keep each sentence's main point as one claim, leaving out minor details.",
    ("low", "high"): (
        "Keep each sentence as one claim, with every detail it gives (names, numbers, dates, "
        "places, qualifiers)."
    ),
    ("high", "low"): (
        "Split each sentence into atomic claims, one fact per claim, keeping the main facts only."
    ),
    ("high", "high"): (
        "Split each sentence into atomic claims, one fact per claim, and keep every fact the "
        "text gives, however minor."
    ),
}
"""What the claims should look like at each (atomicity, coverage)."""


class ClaimsReply(BaseModel):
    """The judge's claims of a text (empty when it states nothing checkable)."""

    claims: list[str]


@dataclass(frozen=True)
class ClaimVerdict:
    """One claim and whether the other text supports it."""

    claim: str
    supported: bool
    reason: str = ""


@dataclass(frozen=True)
class FactualJudgement:
    """The claims of both sides with their verdicts (``reference_claims`` empty in precision
    mode, where the reference is not decomposed)."""

    response_claims: tuple[ClaimVerdict, ...]
    reference_claims: tuple[ClaimVerdict, ...]


def fbeta(tp: int, fp: int, fn: int, beta: float = 1.0) -> float:
    """ragas' F-beta of claim counts: precision or recall 0 when its denominator is 0, and F 0
    when both are 0."""
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    if precision == 0 and recall == 0:
        return 0.0
    b2 = beta**2
    return (1 + b2) * (precision * recall) / ((b2 * precision) + recall)


def np_round(value: float, decimals: int = 2) -> float:
    """``numpy.round(value, decimals)``: x · 10^d rounded half to even, divided back."""
    scale = 10.0**decimals
    return round(value * scale) / scale


def factual_score(
    response_supported: Sequence[bool],
    reference_supported: Sequence[bool],
    mode: Mode = "f1",
    beta: float = 1.0,
) -> float | None:
    """The factual correctness of these verdicts (see the module docstring); ``None`` when
    undefined."""
    tp = sum(1 for v in response_supported if v)
    fp = len(response_supported) - tp
    fn = 0 if mode == "precision" else sum(1 for v in reference_supported if not v)
    if mode == "precision":
        if tp + fp == 0:
            return None
        score = tp / (tp + fp + 1e-8)
    elif mode == "recall":
        if tp + fn == 0:
            return None
        score = tp / (tp + fn + 1e-8)
    else:
        if tp + fp == 0 and tp + fn == 0:
            return None
        score = fbeta(tp, fp, fn, beta)
    return np_round(score, 2)


async def decompose(judge: Any, text: str, atomicity: str, coverage: str) -> list[str]:
    """The claims of ``text`` at this atomicity and coverage."""
    trusted = {"guidance": GUIDANCE[(atomicity, coverage)]}
    messages = [{"role": "user", "content": render("claim_decomposition", trusted, text=text)}]
    reply = await judge.ask(METRIC, messages, ClaimsReply)
    return [c.strip() for c in reply.value.claims if c.strip()]


async def verify_claims(
    judge: Any, claims: Sequence[str], context: str
) -> tuple[ClaimVerdict, ...]:
    """Each claim judged against ``context`` (one call; faithfulness' NLI prompt)."""
    if not claims:
        return ()
    trusted = {"statements": numbered_blocks(claims, "statement")}
    text = render("faithfulness_verdicts", trusted, context=context)
    reply = await judge.ask(
        METRIC, [{"role": "user", "content": text}], verdicts_schema(len(claims))
    )
    ordered = sorted(reply.value.verdicts, key=lambda v: v.statement)
    return tuple(ClaimVerdict(c, v.verdict == 1, v.reason) for c, v in zip(claims, ordered))


async def _side(judge: Any, text: str, other: str, atomicity: str, coverage: str) -> Any:
    claims = await decompose(judge, text, atomicity, coverage)
    return await verify_claims(judge, claims, other)


async def factual_correctness_judgement(
    judge: Any,
    response: str,
    reference: str,
    mode: Mode = "f1",
    atomicity: Level = "low",
    coverage: Level = "low",
) -> FactualJudgement:
    """Both sides' claims and verdicts (the reference side only when ``mode`` needs it; the two
    sides are asked at once)."""
    if mode == "precision":
        return FactualJudgement(await _side(judge, response, reference, atomicity, coverage), ())
    sides = await asyncio.gather(
        _side(judge, response, reference, atomicity, coverage),
        _side(judge, reference, response, atomicity, coverage),
        return_exceptions=True,
    )
    for outcome in sides:
        if isinstance(outcome, BaseException):
            raise outcome
    ours, theirs = sides
    assert isinstance(ours, tuple) and isinstance(theirs, tuple)
    return FactualJudgement(ours, theirs)
