"""SQL semantic equivalence: whether a generated SQL query returns what a reference query returns
on the same database, as a judge reads the two queries and the schema.

Source: ragas 0.4.3 ``SQLSemanticEquivalence`` (``ragas.metrics.collections``): one call, in
which the judge explains each query and then says whether they are equivalent;

    sql_semantic_equivalence = 1.0 if the judge finds them equivalent else 0.0

The schema is the reference contexts joined by newlines (empty when none are given). Both queries
must be non-empty, as in ragas.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from ...prompts import render

__all__ = ["SqlEquivalence", "SqlEquivalenceReply", "sql_equivalence"]

METRIC = "sql_semantic_equivalence"


class SqlEquivalenceReply(BaseModel):
    """The judge's reading of both queries and its verdict."""

    response_explanation: str
    reference_explanation: str
    equivalent: bool


@dataclass(frozen=True)
class SqlEquivalence:
    """The verdict as a value, with the judge's explanations."""

    value: float
    response_explanation: str
    reference_explanation: str


async def sql_equivalence(
    judge: Any, response: str, reference: str, schema: Sequence[str] = ()
) -> SqlEquivalence:
    """Ask whether ``response`` and ``reference`` are equivalent on ``schema``; ``ValueError``
    for an empty query, ``JudgeError`` when the call gives no usable reply."""
    for name, query in (("response", response), ("reference", reference)):
        if not isinstance(query, str) or not query.strip():
            raise ValueError(f"{name} must be a non-empty SQL query")
    text = render(
        "sql_equivalence", schema="\n".join(schema), response=response, reference=reference
    )
    verdict = await judge.ask(METRIC, [{"role": "user", "content": text}], SqlEquivalenceReply)
    reply = verdict.value
    return SqlEquivalence(
        1.0 if reply.equivalent else 0.0, reply.response_explanation, reply.reference_explanation
    )
