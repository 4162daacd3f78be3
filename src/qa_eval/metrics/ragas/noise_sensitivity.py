"""Noise sensitivity: the share of the response's statements that are wrong (not supported by the
reference) yet supported by a retrieved chunk, relevant or irrelevant. Lower is better.

Source: ragas 0.4.3 ``NoiseSensitivity`` (``ragas.metrics.collections``). The reference and the
response are broken into statements (g and a of them); with G[i][k] = reference statement i is
supported by chunk k, A[j][k] = response statement j is supported by chunk k and
C[j] = response statement j is supported by the reference:

    relevant(k)      = any_i G[i][k]              (the chunk supports some of the reference)
    from_relevant(j) = any_k relevant(k) and A[j][k]
    from_other(j)    = any_k not relevant(k) and A[j][k], and not from_relevant(j)
    noise_sensitivity (mode "relevant")   = mean_j (from_relevant(j) and not C[j])
    noise_sensitivity (mode "irrelevant") = mean_j (from_other(j) and not C[j])

Policies: ragas judges both statement lists against each chunk in its own call (2 per chunk);
qa-eval judges every statement against every chunk in one call (a list of supporting chunk numbers
per statement), and the response's statements against the reference in another, beside the two
calls that list the statements: four calls whatever the number of chunks. A response without
statements leaves nothing to measure (ragas: NaN) and a reference without statements makes the
chunks' relevance undefined (ragas raises): both are "not computed" (``None``) with the reason.
A dry run counts all four calls, the statements estimated by the sentences of each text.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

from ...prompts import numbered_blocks, render
from ..retrieval.faithfulness import StatementsReply, verdicts_schema
from ..retrieval.step_context import numbered_chunks, numbered_schema

__all__ = [
    "MODES",
    "Noise",
    "StatementSupport",
    "noise_sensitivity",
    "noise_sensitivity_score",
    "support_schema",
]

METRIC = "noise_sensitivity"
MODES = ("relevant", "irrelevant")
Mode = Literal["relevant", "irrelevant"]


class StatementSupport(BaseModel):
    """The chunks (1-based numbers) that support one numbered statement."""

    statement: int
    chunks: list[int]
    reason: str = ""


def support_schema(n: int) -> type[BaseModel]:
    """The reply schema for ``n`` statements: exactly ``n`` verdicts, numbered 1..n."""
    return numbered_schema("StatementSupports", StatementSupport, "statement", n)


def noise_sensitivity_score(
    reference_support: Sequence[Sequence[bool]],
    response_support: Sequence[Sequence[bool]],
    correct: Sequence[bool],
    mode: Mode = "relevant",
) -> float | None:
    """The formula of the module docstring over the G, A and C tables (rows: statements,
    columns: chunks); ``None`` without response or reference statements."""
    if mode not in MODES:
        raise ValueError(f"mode must be 'relevant' or 'irrelevant', not {mode!r}")
    if not response_support or not reference_support:
        return None
    chunks = len(reference_support[0])
    relevant = [any(row[k] for row in reference_support) for k in range(chunks)]
    wrong = 0
    for row, right in zip(response_support, correct):
        from_relevant = any(r and a for r, a in zip(relevant, row))
        if mode == "relevant":
            hit = from_relevant
        else:
            hit = not from_relevant and any(not r and a for r, a in zip(relevant, row))
        wrong += hit and not right
    return wrong / len(response_support)


@dataclass(frozen=True)
class Noise:
    """The value and the verdicts it came from (``reason`` says why when not computed)."""

    value: float | None
    reference_statements: tuple[str, ...] = ()
    response_statements: tuple[str, ...] = ()
    reference_support: tuple[tuple[bool, ...], ...] = ()
    response_support: tuple[tuple[bool, ...], ...] = ()
    correct: tuple[bool, ...] = ()
    relevant_chunks: tuple[bool, ...] = ()
    reason: str | None = None


async def _statements(judge: Any, question: str, text: str) -> list[str]:
    content = render("faithfulness_statements", question=question, answer=text)
    verdict = await judge.ask(METRIC, [{"role": "user", "content": content}], StatementsReply)
    return [s.strip() for s in verdict.value.statements if s.strip()]


async def _support(
    judge: Any, statements: Sequence[str], chunks: Sequence[str]
) -> list[tuple[bool, ...]]:
    trusted = {
        "statements": numbered_blocks(statements, "statement"),
        "chunks": numbered_chunks(chunks),
    }
    content = render("statements_support", trusted)
    schema = support_schema(len(statements))
    verdict = await judge.ask(METRIC, [{"role": "user", "content": content}], schema)
    ordered = sorted(verdict.value.verdicts, key=lambda v: v.statement)  # type: ignore[attr-defined]
    return [tuple(k in set(v.chunks) for k in range(1, len(chunks) + 1)) for v in ordered]


async def _correct(judge: Any, statements: Sequence[str], reference: str) -> list[bool]:
    trusted = {"statements": numbered_blocks(statements, "statement")}
    content = render("faithfulness_verdicts", trusted, context=reference)
    schema = verdicts_schema(len(statements))
    verdict = await judge.ask(METRIC, [{"role": "user", "content": content}], schema)
    ordered = sorted(verdict.value.verdicts, key=lambda v: v.statement)  # type: ignore[attr-defined]
    return [v.verdict == 1 for v in ordered]


async def _settled(*asks: Awaitable[Any]) -> list[Any]:
    """The replies of asks run at once; the first failure is raised only when all are done, so
    no call is left running unawaited."""
    replies = await asyncio.gather(*asks, return_exceptions=True)
    for reply in replies:
        if isinstance(reply, BaseException):
            raise reply
    return list(replies)


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s] or [text]


async def _plan(
    judge: Any, question: str, response: str, reference: str, contexts: Sequence[str]
) -> None:
    """A dry run's count of all four calls, the statements estimated by the sentences."""
    ours, theirs = _sentences(reference), _sentences(response)
    await _settled(
        _statements(judge, question, reference),
        _statements(judge, question, response),
        _support(judge, [*ours, *theirs], contexts),
        _correct(judge, theirs, reference),
    )


async def noise_sensitivity(
    judge: Any,
    question: str,
    response: str,
    reference: str,
    contexts: Sequence[str],
    mode: Mode = "relevant",
) -> Noise:
    """Ask for the statements and their support (see the module docstring) and compute the
    value; ``ValueError`` for a missing input, ``JudgeError`` when a call fails."""
    for name, given in (
        ("reference", reference),
        ("user_input", question),
        ("response", response),
        ("retrieved_contexts", contexts),
    ):
        if not given:
            raise ValueError(f"{name} is missing or empty")
    if getattr(judge, "dry_run", False):
        await _plan(judge, question, response, reference, contexts)
    ours, theirs = await _settled(
        _statements(judge, question, reference), _statements(judge, question, response)
    )
    if not theirs:
        return Noise(None, tuple(ours), reason="the response makes no claims")
    if not ours:
        return Noise(None, (), tuple(theirs), reason="the reference makes no claims")
    support, correct = await _settled(
        _support(judge, [*ours, *theirs], contexts), _correct(judge, theirs, reference)
    )
    g, a = support[: len(ours)], support[len(ours) :]
    value = noise_sensitivity_score(g, a, correct, mode)
    relevant = tuple(any(row[k] for row in g) for k in range(len(contexts)))
    return Noise(value, tuple(ours), tuple(theirs), tuple(g), tuple(a), tuple(correct), relevant)
