"""What judge calls took: the calls, tokens and cost of a metric or a run (:class:`Usage`), a
validated reply with its tokens and cost (:class:`Verdict`), the sum of a metric's call costs,
and what a dry run would do (:class:`Plan`). Plain data.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

__all__ = [
    "DRY_RUN_COMPLETION_TOKENS",
    "Plan",
    "Usage",
    "Verdict",
    "estimated_prompt_tokens",
    "total_cost",
]

T = TypeVar("T", bound=BaseModel)
DRY_RUN_COMPLETION_TOKENS = 150
"""Completion tokens a dry run assumes for a call when ``max_tokens`` is not set."""


@dataclass
class Usage:
    """Calls, tokens and cost, for one metric or a whole run."""

    calls: int = 0
    """Replies received from the judge in this run."""
    cached: int = 0
    """Replies taken from qa-eval's reply cache (or shared with an identical ask in flight)."""
    retries: int = 0
    """Requests sent again after a fault (429, 5xx, timeout, connection, unreadable reply)."""
    reasks: int = 0
    """Requests asking again after a reply that could not be used (no JSON, schema broken)."""
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    """Prompt tokens the provider served from its own prompt cache (its usage's
    ``prompt_tokens_details.cached_tokens``), priced at the cached-input rate."""
    cost: float = 0.0
    cost_known: bool = True

    def as_dict(self) -> dict[str, Any]:
        """Plain data for results and signatures."""
        share = self.cached_prompt_tokens / self.prompt_tokens if self.prompt_tokens else None
        return {
            "calls": self.calls,
            "cached": self.cached,
            "retries": self.retries,
            "reasks": self.reasks,
            "failures": self.failures,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cached_prompt_tokens": self.cached_prompt_tokens,
            "cached_prompt_share": share,
            "cost": self.cost if self.cost_known else None,
        }


@dataclass(frozen=True)
class Verdict(Generic[T]):
    """A validated judge reply with what it took."""

    value: T
    prompt_tokens: int
    completion_tokens: int
    cost: float | None
    cached: bool
    cached_tokens: int = 0
    """Prompt tokens the provider served from its prompt cache (part of ``prompt_tokens``)."""


def total_cost(*costs: float | None) -> float | None:
    """The sum of a metric's call costs; ``None`` when any one of them is unknown."""
    return None if any(c is None for c in costs) else sum(costs)  # type: ignore[arg-type]


def estimated_prompt_tokens(messages: list[dict[str, str]], schema: dict[str, Any]) -> int:
    """A call's prompt tokens as a dry run estimates them: characters / 4 of the messages and the
    reply's JSON schema, plus 8 (the one estimate of the plan and of the metrics' budgets)."""
    text = sum(len(m["content"]) for m in messages) + len(json.dumps(schema))
    return text // 4 + 8


@dataclass
class Plan:
    """What a dry run would do: calls, estimated tokens and cost per metric."""

    calls: dict[str, int] = field(default_factory=dict)
    cached: dict[str, int] = field(default_factory=dict)
    prompt_tokens: dict[str, int] = field(default_factory=dict)
    completion_tokens: dict[str, int] = field(default_factory=dict)

    def count(
        self,
        metric: str,
        messages: list[dict[str, str]],
        schema: dict[str, Any],
        max_tokens: int | None,
    ) -> None:
        """Count a call a dry run would make: its estimated prompt tokens (characters / 4 of the
        messages and the JSON schema) and completion tokens (``max_tokens``, else 150)."""
        self.calls[metric] = self.calls.get(metric, 0) + 1
        tokens = estimated_prompt_tokens(messages, schema)
        self.prompt_tokens[metric] = self.prompt_tokens.get(metric, 0) + tokens
        self.completion_tokens[metric] = self.completion_tokens.get(metric, 0) + (
            max_tokens or DRY_RUN_COMPLETION_TOKENS
        )
