"""A question's ``reference_trajectory``, read and checked: the list form or the mapping form.

List form: the calls of one acceptable trajectory, with the defaults (``match: superset``,
``ordered: false``, ``args: exact``). Mapping form::

    match: superset      # strict | unordered | superset | subset
    ordered: false       # superset / subset: matched calls keep their order (strict: always)
    args: exact          # exact | ignore | subset | superset
    calls: [...]         # the first acceptable trajectory (alternative 0)
    alternatives: [[...], ...]   # others, same settings (alternative 1, 2, ...)

A call: ``name`` (a tool name, or a list of names any of which will do), ``args`` (a mapping or
a JSON-object text; left out: arguments are not checked), ``optional`` (default false). A bad
value raises :class:`TrajectoryError` naming its field path, e.g.
``reference_trajectory.calls[2].args.date: $date needs a date, got "soon"``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .comparators.compiler import ARG_MODES, ArgsSpec, compile_args
from .comparators.values import TrajectoryError, show

__all__ = ["MATCH_MODES", "RefCall", "Reference", "parse_reference"]

MATCH_MODES = ("strict", "unordered", "superset", "subset")
_KEYS = ("match", "ordered", "args", "calls", "alternatives")
_CALL_KEYS = ("name", "args", "optional", "matches", "mismatch")


@dataclass(slots=True)
class RefCall:
    """One reference call."""

    names: tuple[str, ...]
    args: ArgsSpec
    optional: bool
    where: str

    @property
    def name(self) -> str:
        """The name shown in texts (the first of its names)."""
        return self.names[0]


@dataclass(frozen=True)
class Reference:
    """A parsed ``reference_trajectory``: its settings and its acceptable trajectories
    (``trajectories[0]`` is ``calls``, ``trajectories[i]`` is ``alternatives[i-1]``)."""

    match: str
    ordered: bool
    args: str
    trajectories: tuple[tuple[RefCall, ...], ...]
    mapping: bool
    """Whether it was written in the mapping form."""

    @property
    def uses_llm(self) -> bool:
        """Whether some call compares an argument with ``$llm`` (the judge)."""
        return any(c.args.uses_llm for calls in self.trajectories for c in calls)

    @property
    def args_matter(self) -> bool:
        """Whether some reference call's arguments are checked."""
        return self.args != "ignore" and any(
            c.args.root is not None for calls in self.trajectories for c in calls
        )


def _call(call: Any, mode: str, where: str) -> RefCall:
    if not isinstance(call, Mapping):
        raise TrajectoryError(f"{where}: a call must be a mapping, got {show(call)}")
    for key in call:
        if key not in _CALL_KEYS:
            raise TrajectoryError(
                f"{where}: unknown key {show(key)} (a call has {', '.join(_CALL_KEYS[:3])})"
            )
    name = call.get("name")
    names: tuple[str, ...]
    if isinstance(name, str) and name:
        names = (name,)
    elif isinstance(name, list) and name and all(isinstance(n, str) and n for n in name):
        names = tuple(name)
    else:
        raise TrajectoryError(
            f"{where}.name: must be a tool name or a non-empty list of names, got {show(name)}"
        )
    optional = call.get("optional", False)
    if not isinstance(optional, bool):
        raise TrajectoryError(f"{where}.optional: must be true or false, got {show(optional)}")
    return RefCall(names, compile_args(call.get("args"), mode, f"{where}.args"), optional, where)


def _calls(calls: Any, mode: str, where: str) -> tuple[RefCall, ...]:
    if not isinstance(calls, list):
        raise TrajectoryError(f"{where}: must be a list of calls, got {show(calls)}")
    return tuple(_call(c, mode, f"{where}[{i}]") for i, c in enumerate(calls))


def _choice(value: Mapping[str, Any], key: str, choices: tuple[str, ...], default: str) -> str:
    found = value.get(key, default)
    if found not in choices:
        raise TrajectoryError(
            f"reference_trajectory.{key}: must be one of {', '.join(choices)}, got {show(found)}"
        )
    return str(found)


def parse_reference(value: Any) -> Reference:
    """The parsed ``reference_trajectory`` of a question (``TrajectoryError`` when bad)."""
    where = "reference_trajectory"
    if isinstance(value, list):
        calls = _calls(value, "exact", where)
        return Reference("superset", False, "exact", (calls,), False)
    if not isinstance(value, Mapping):
        raise TrajectoryError(f"{where}: must be a list of calls or a mapping, got {show(value)}")
    for key in value:
        if key not in _KEYS:
            raise TrajectoryError(f"{where}: unknown key {show(key)} (known: {', '.join(_KEYS)})")
    match = _choice(value, "match", MATCH_MODES, "superset")
    mode = _choice(value, "args", ARG_MODES, "exact")
    ordered = value.get("ordered", False)
    if not isinstance(ordered, bool):
        raise TrajectoryError(f"{where}.ordered: must be true or false, got {show(ordered)}")
    if "calls" not in value:
        raise TrajectoryError(f"{where}.calls: missing (the calls of the reference trajectory)")
    trajectories = [_calls(value["calls"], mode, f"{where}.calls")]
    alternatives = value.get("alternatives", [])
    if not isinstance(alternatives, list):
        raise TrajectoryError(
            f"{where}.alternatives: must be a list of trajectories, got {show(alternatives)}"
        )
    for i, other in enumerate(alternatives):
        trajectories.append(_calls(other, mode, f"{where}.alternatives[{i}]"))
    return Reference(match, ordered or match == "strict", mode, tuple(trajectories), True)
