"""Argument comparison of tool calls: argument modes, the ``$`` comparators, and their words.

A reference call's ``args`` is compiled once into a tree of nodes; ``check`` of a node against an
actual value returns the mismatches as ``path: words`` texts (none: it matches). The argument
score of a call is the fraction of its *reference arguments* (top-level keys) that are satisfied
(issue 25: "fraction of reference arguments satisfied"):

- ``exact``: a reference key is satisfied when the actual value matches it; the call matches
  when every one is and the actual call has no key the reference lacks (JSON-string arguments
  are parsed first; ``1 == 1.0``, but ``true != 1``; key order is ignored);
- ``superset``: as ``exact``, extra actual keys free;
- ``subset``: a reference key is satisfied when the actual value matches it or the actual call
  leaves it out; the call matches when every one is and the actual call has no other key;
- ``ignore``: nothing is compared (score 1).

An actual key the reference lacks lowers no score (it is not a reference argument) but stops
``exact`` and ``subset`` from matching.

No reference argument at all scores 1. Nested mappings are compared in the same mode, recursively,
each mismatch named by its path (``args.filter.city``); lists in order, of the same length (``$set``
for an order-free list). A comparator, a mapping with one ``$`` key, overrides the mode for its
value: ``$any``, ``$regex`` (whole value, ``re.fullmatch``), ``$number`` (``abs_tol``, ``rel_tol``,
``math.isclose``), ``$date`` / ``$datetime`` (``tolerance``: ``1d``, ``2h``, ``30m``, ``10s``,
``1w`` or an ISO 8601 duration such as ``P1DT2H``), ``$set``, ``$text`` (case, whitespace and
punctuation normalised), ``$fuzzy`` (rapidfuzz's ``fuzz.ratio`` / 100 at least ``min``, default
0.9), ``$one_of`` and ``$llm`` (the judge decides; see ``metrics/agents/trajectory_match.py``).
Source: the argument modes of LangChain agentevals 0.0.9 (``tool_args_match_mode``), extended.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from .modes import Obj, Plain, Seq
from .operators import (
    AnyValue,
    Fuzzy,
    Llm,
    Moment,
    Number,
    OneOf,
    Regex,
    SetOf,
    Text,
    as_number,
    parse_tolerance,
)
from .values import NO_LLM, LlmAnswers, Node, TrajectoryError, show

ARG_MODES = ("exact", "ignore", "subset", "superset")


_OPTIONS = {
    "$any": (),
    "$regex": (),
    "$number": ("abs_tol", "rel_tol"),
    "$date": ("tolerance",),
    "$datetime": ("tolerance",),
    "$set": (),
    "$text": (),
    "$fuzzy": ("min",),
    "$one_of": (),
    "$llm": (),
}
COMPARATORS = tuple(_OPTIONS)


def _tolerance_number(value: Any, where: str, name: str) -> float:
    number = as_number(value) if not isinstance(value, str) else None
    if number is None or number < 0:
        raise TrajectoryError(f"{where}: {name} must be a number at least 0, got {show(value)}")
    return number


def _comparator(spec: Mapping[str, Any], mode: str, where: str) -> Node:
    names = [k for k in spec if isinstance(k, str) and k.startswith("$")]
    if len(names) != 1:
        raise TrajectoryError(
            f"{where}: a comparator is a mapping with one $ key, got {', '.join(map(str, names))}"
        )
    name = names[0]
    if name not in _OPTIONS:
        raise TrajectoryError(
            f"{where}: unknown comparator {name} (known: {', '.join(COMPARATORS)})"
        )
    extra = [k for k in spec if k != name and k not in _OPTIONS[name]]
    if extra:
        allowed = ", ".join(_OPTIONS[name]) or "none"
        raise TrajectoryError(
            f"{where}: {name} takes no option {show(extra[0])} (its options: {allowed})"
        )
    value = spec[name]
    if name == "$any":
        if value is not True:
            raise TrajectoryError(f"{where}: $any takes true, got {show(value)}")
        return AnyValue()
    if name in ("$regex", "$text", "$fuzzy", "$llm") and not isinstance(value, str):
        raise TrajectoryError(f"{where}: {name} needs a string, got {show(value)}")
    if name == "$regex":
        return Regex(value, where)
    if name == "$text":
        return Text(value)
    if name == "$llm":
        return Llm(value, where)
    if name == "$fuzzy":
        minimum = spec.get("min", 0.9)
        number = as_number(minimum) if not isinstance(minimum, str) else None
        if number is None or not 0 <= number <= 1:
            raise TrajectoryError(f"{where}: min must be a number from 0 to 1, got {show(minimum)}")
        return Fuzzy(value, number)
    if name == "$number":
        number = as_number(value) if not isinstance(value, str) else None
        if number is None:
            raise TrajectoryError(f"{where}: $number needs a number, got {show(value)}")
        abs_tol = _tolerance_number(spec.get("abs_tol", 0), where, "abs_tol")
        rel_tol = _tolerance_number(spec.get("rel_tol", 0), where, "rel_tol")
        return Number(number, abs_tol, rel_tol)
    if name in ("$date", "$datetime"):
        tolerance = (
            parse_tolerance(spec["tolerance"], where) if "tolerance" in spec else timedelta(0)
        )
        if isinstance(value, (date, datetime)):  # YAML reads an unquoted date as a date
            value = value.isoformat()
        return Moment(value, tolerance, name, where)
    if not isinstance(value, list) or (name == "$one_of" and not value):
        raise TrajectoryError(f"{where}: {name} needs a {'non-empty ' * (name == '$one_of')}list")
    items = [compile_value(v, mode, f"{where}[{i}]") for i, v in enumerate(value)]
    return SetOf(items) if name == "$set" else OneOf(items)


def compile_value(value: Any, mode: str, where: str) -> Node:
    """The node of a reference value at field path ``where`` (``TrajectoryError`` if bad)."""
    kind = type(value)
    if kind is str or kind is int or value is None or kind is bool:
        return Plain(value)
    if kind is dict or isinstance(value, Mapping):
        for k in value:
            if type(k) is str and k[:1] == "$":
                return _comparator(value, mode, where)
        fields = {}
        for k, v in value.items():
            fields[str(k)] = (
                Plain(v)
                if type(v) is str or type(v) is int
                else compile_value(v, mode, f"{where}.{k}")
            )
        return Obj(fields, mode)
    if isinstance(value, (list, tuple)):
        return Seq([compile_value(v, mode, f"{where}[{i}]") for i, v in enumerate(value)])
    if isinstance(value, float) and not math.isfinite(value):
        raise TrajectoryError(f"{where}: {value} is not a finite number")
    if isinstance(value, (date, datetime)):  # YAML's unquoted dates compare as their text
        return Plain(value.isoformat())
    if value is not None and not isinstance(value, (str, int, float, bool)):
        raise TrajectoryError(f"{where}: not a JSON value ({type(value).__name__})")
    return Plain(value)


@dataclass(slots=True)
class ArgsSpec:
    """A reference call's compiled arguments (``root`` None: the call gives none to check)."""

    root: Obj | None
    mode: str
    uses_llm: bool = False

    def score(self, actual: Any, llm: LlmAnswers = NO_LLM) -> tuple[int, int, list[str]]:
        """(satisfied reference arguments, reference arguments, mismatches) of an actual call's
        parsed arguments."""
        if self.root is None or self.mode == "ignore":
            return 0, 0, []
        return self.root.units(actual, "args", llm)

    def count(self, actual: Any, llm: LlmAnswers = NO_LLM) -> tuple[int, int, int]:
        """(satisfied reference arguments, reference arguments, refused actual arguments) of an
        actual call's parsed arguments, without words (``Obj.count``)."""
        if self.root is None or self.mode == "ignore":
            return 0, 0, 0
        return self.root.count(actual, llm)


def compile_args(args: Any, mode: str, where: str) -> ArgsSpec:
    """The compiled ``args`` of a reference call (a mapping, or a JSON-object string)."""
    if args is None:
        return ArgsSpec(None, mode)
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            args = None
        if not isinstance(args, dict):
            raise TrajectoryError(f"{where}: must be a mapping or a JSON object text")
    if not isinstance(args, Mapping):
        raise TrajectoryError(f"{where}: must be a mapping, got {type(args).__name__}")
    root = compile_value(args, mode, where)
    if not isinstance(root, Obj):
        raise TrajectoryError(f"{where}: the arguments must be a mapping, not a comparator")
    return ArgsSpec(root, mode, mentions_llm(args))


def mentions_llm(value: Any) -> bool:
    """Whether a reference value (a trajectory, a call's arguments) holds a ``$llm`` key."""
    kind = type(value)
    if kind is str or kind is int or kind is float or value is None or kind is bool:
        return False
    if isinstance(value, Mapping):
        return "$llm" in value or any(mentions_llm(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(mentions_llm(v) for v in value)
    return False
