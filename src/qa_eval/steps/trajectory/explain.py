"""Why a reference call matched no actual call, in words at the argument's path.

- assigned to a call of the same tool whose arguments differ: ``book: args.flight: reference
  any, actual missing`` (every differing path, ``; ``-separated, at most three and a count);
- not assigned, a same-name call exists: ``not called (closest: search_flights [2], 2 of 3
  arguments equal)`` ([2]: the position in ``actual_steps``);
- only failed calls of that tool: ``not called (search_flights [2] failed)``;
- no call of that tool: ``not called``.

An optional call's text starts with ``optional, ``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .calls import ActualCall, TrajectoryScore
from .comparators.values import LlmAnswers
from .reference import RefCall

__all__ = ["explain_reference_call", "problems_text"]


def problems_text(problems: Sequence[str], most: int = 3) -> str:
    """The first ``most`` mismatches, and how many more."""
    shown = "; ".join(problems[:most])
    more = len(problems) - most
    return shown + (f"; and {more} more" if more > 0 else "")


def _equal_words(satisfied: int, units: int) -> str:
    if units == 0:
        return "no arguments to compare"
    if satisfied == units:
        return "all arguments equal"
    return f"{satisfied} of {units} argument{'s' if units != 1 else ''} equal"


def explain_reference_call(
    call: RefCall,
    i: int,
    best: TrajectoryScore,
    done: Sequence[ActualCall],
    acts: Sequence[ActualCall],
    ordered: bool,
    llm: LlmAnswers,
) -> str:
    """The ``mismatch`` text of reference call ``i`` of the chosen trajectory."""
    prefix = "optional, " if call.optional else ""
    if i in best.pairs:
        problems = call.args.score(done[best.pairs[i]].args, llm)[2]
        return f"{prefix}{call.name}: {problems_text(problems)}"
    candidates: list[tuple[bool, float, int, Any]] = []
    for (row, j), (satisfied, units, matches) in best.scores.items():
        if row == i:
            s = 1.0 if units == 0 else satisfied / units
            candidates.append((matches, s, -j, (satisfied, units)))
    if candidates:
        matches, _, j, (satisfied, units) = max(candidates, key=lambda c: c[:3])
        act = done[-j]
        words = _equal_words(satisfied, units)
        if matches:
            words += ", but it is out of order" if ordered else ", but it matches another call"
        elif satisfied == units:
            words += ", but it has arguments the reference has not"
        return f"{prefix}not called (closest: {act.name} [{act.index}], {words})"
    for act in acts:
        if not act.ok and act.name in call.names:
            return f"{prefix}not called ({act.name} [{act.index}] failed)"
    return f"{prefix}not called"
