"""The records matching works on: an actual step as a tool call, and one acceptable trajectory
scored against the actual calls."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .comparators.values import parse_args
from .reference import RefCall

__all__ = ["ActualCall", "TrajectoryScore", "actual_calls"]


@dataclass(slots=True)
class ActualCall:
    """One actual step as a tool call."""

    index: int
    name: str
    args: Any
    ok: bool
    id: Any
    lost_args: bool


def actual_calls(steps: Sequence[Any]) -> list[ActualCall]:
    """The actual steps as tool calls, in order (arguments parsed)."""
    out = []
    for index, step in enumerate(steps):
        if not isinstance(step, dict):
            if not isinstance(step, Mapping):
                continue
            step = dict(step)
        args = step.get("args")
        if type(args) is not dict:
            args = parse_args(args)
        lost = step.get("lost")
        out.append(
            ActualCall(
                index,
                str(step.get("name")),
                args,
                step.get("status", "success") == "success",
                step.get("id"),
                lost is not None and isinstance(lost, (list, tuple)) and "args" in lost,
            )
        )
    return out


@dataclass(slots=True)
class TrajectoryScore:
    """One acceptable trajectory against the actual calls."""

    calls: tuple[RefCall, ...]
    pairs: dict[int, int]
    """Reference call -> position in the successful calls, for assigned same-name pairs."""
    matched: dict[int, int]
    """Reference call -> position in the successful calls, for the matching pairs."""
    scores: dict[tuple[int, int], tuple[int, int, bool]]
    """(satisfied reference arguments, reference arguments, whether it matches) of each
    same-name pair."""
    match: bool
    recall: float
    precision: float
    f1: float
    args_score: float

    @property
    def required(self) -> int:
        """The number of required reference calls."""
        return sum(not c.optional for c in self.calls)
