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
import re
import string
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from ...errors import QaEvalError

__all__ = [
    "ARG_MODES",
    "MISSING",
    "ArgsSpec",
    "LlmAnswers",
    "Node",
    "TrajectoryError",
    "canonical",
    "compile_args",
    "freeze",
    "mentions_llm",
    "parse_args",
    "show",
]

ARG_MODES = ("exact", "ignore", "subset", "superset")


class TrajectoryError(QaEvalError, ValueError):
    """A ``reference_trajectory`` that cannot be used, named by its field path."""


class _Missing:
    def __repr__(self) -> str:
        return "missing"


MISSING: Any = _Missing()
"""An actual argument that is not there."""


@dataclass
class LlmAnswers:
    """The judge's answers to ``$llm`` comparisons, by (statement, canonical actual value);
    ``pending`` collects the comparisons not answered yet (and where they are)."""

    answers: dict[tuple[str, str], bool] = field(default_factory=dict)
    pending: dict[tuple[str, str], str] = field(default_factory=dict)


_NO_LLM = LlmAnswers()


def show(value: Any, limit: int = 60) -> str:
    """A value in a mismatch text: JSON, cut at ``limit`` characters; ``missing`` when absent."""
    if value is MISSING:
        return "missing"
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _norm(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {str(k): _norm(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_norm(v) for v in value]
    return value


def canonical(value: Any) -> str:
    """A text equal for equal argument values (key order ignored, ``1`` as ``1.0``)."""
    return json.dumps(_norm(value), sort_keys=True, ensure_ascii=False, default=str)


_SCALARS = (str, int, float, type(None))


def freeze(value: Any) -> Any:
    """A hashable key equal for equal argument values (key order ignored, ``1`` as ``1.0``,
    ``true`` apart from ``1``)."""
    kind = type(value)
    if kind is dict:
        return (
            "d",
            frozenset((k, v if type(v) in _SCALARS else freeze(v)) for k, v in value.items()),
        )
    if kind is list or kind is tuple:
        return ("l", tuple(freeze(v) for v in value))
    if kind is bool:
        return ("b", value)
    try:
        hash(value)
    except TypeError:
        return ("r", repr(value))
    return value


def parse_args(args: Any) -> Any:
    """An actual call's arguments: a mapping, a JSON-object string parsed, None as ``{}``; any
    other text stays text (raw arguments)."""
    if args is None:
        return {}
    if isinstance(args, str):
        try:
            parsed = json.loads(args)
        except ValueError:
            return args
        return parsed if isinstance(parsed, dict) else args
    return args


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


class Node:
    """One compiled reference value."""

    def ok(self, actual: Any, llm: LlmAnswers) -> bool:
        """Whether ``actual`` matches (the fast path of :meth:`check`)."""
        return not self.check(actual, "", llm)

    def check(self, actual: Any, path: str, llm: LlmAnswers) -> list[str]:
        """The mismatches of ``actual`` at ``path`` (none: it matches)."""
        raise NotImplementedError

    def words(self) -> str:
        """How the reference value is shown in a mismatch."""
        raise NotImplementedError


class Plain(Node):
    def __init__(self, value: Any) -> None:
        self.value = value
        self.kind = type(value)

    def ok(self, actual: Any, llm: LlmAnswers) -> bool:
        if self.kind is str:
            return type(actual) is str and actual == self.value
        return actual is not MISSING and _equal(self.value, actual)

    def check(self, actual: Any, path: str, llm: LlmAnswers) -> list[str]:
        if self.ok(actual, llm):
            return []
        return [f"{path}: reference {self.words()}, actual {show(actual)}"]

    def words(self) -> str:
        return show(self.value)


def _maybe_json(actual: Any, kind: type | tuple[type, ...]) -> Any:
    """An actual string holding the JSON of a mapping or list where the reference has one."""
    if isinstance(actual, str):
        try:
            parsed = json.loads(actual)
        except ValueError:
            return actual
        if isinstance(parsed, kind):
            return parsed
    return actual


_INLINE = (str, int, type(None))


class Obj(Node):
    def __init__(self, fields: dict[str, Node], mode: str) -> None:
        self.fields = fields
        self.mode = mode
        # fields holding a string, a whole number or null: compared inline (a string equals
        # only a string; a number is not a bool)
        self.plain: list[tuple[str, Any, bool]] = []
        self.other: list[tuple[str, Node]] = []
        for key, node in fields.items():
            if type(node) is Plain and node.kind in _INLINE:
                self.plain.append((key, node.value, node.kind is int))
            else:
                self.other.append((key, node))

    def count(self, actual: Any, llm: LlmAnswers) -> tuple[int, int, int]:
        """(satisfied reference arguments, reference arguments, actual arguments the mode
        refuses that the reference has not) of an actual mapping in this node's mode (no
        words). ``exact`` and ``superset``: a reference argument is satisfied when the actual
        value matches it; ``subset``: also when the actual call leaves it out. The call matches
        when every reference argument is satisfied and the last count is 0 (``exact``, ``subset``:
        an actual key the reference lacks)."""
        mode = self.mode
        if mode == "ignore":
            return 0, 0, 0
        if type(actual) is not dict:
            actual = _maybe_json(actual, dict)
            if not isinstance(actual, dict):
                return 0, max(len(self.fields), 1), 0
        satisfied = 0
        fields = self.fields
        get = actual.get
        subset = mode == "subset"  # a reference argument left out is satisfied
        for key, value, number in self.plain:
            found = get(key, MISSING)
            if (found == value and (not number or type(found) is not bool)) or (
                subset and found is MISSING
            ):
                satisfied += 1
        for key, node in self.other:
            found = get(key, MISSING)
            satisfied += (subset and found is MISSING) or node.ok(found, llm)
        foreign = 0
        if mode != "superset":
            foreign = sum(1 for key in actual if key not in fields)
        return satisfied, len(fields), foreign

    def ok(self, actual: Any, llm: LlmAnswers) -> bool:
        if actual is MISSING:
            return False
        satisfied, total, foreign = self.count(actual, llm)
        return satisfied == total and not foreign

    def units(self, actual: Any, path: str, llm: LlmAnswers) -> tuple[int, int, list[str]]:
        """(satisfied reference arguments, reference arguments, mismatches) of an actual mapping
        in this node's mode (as ``count``; every refused actual key is a mismatch)."""
        if self.mode == "ignore":
            return 0, 0, []
        actual = _maybe_json(actual, dict)
        if not isinstance(actual, Mapping):
            why = "raw text" if isinstance(actual, str) else show(actual)
            return 0, max(len(self.fields), 1), [f"{path}: reference an object, actual {why}"]
        satisfied = 0
        problems: list[str] = []
        for key, node in self.fields.items():
            value = actual.get(key, MISSING)
            if value is MISSING and self.mode == "subset":
                satisfied += 1
                continue
            found = node.check(value, f"{path}.{key}", llm)
            satisfied += not found
            problems += found
        if self.mode in ("exact", "subset"):
            for key, value in actual.items():
                if key not in self.fields:
                    problems.append(f"{path}.{key}: not in the reference, actual {show(value)}")
        return satisfied, len(self.fields), problems

    def check(self, actual: Any, path: str, llm: LlmAnswers) -> list[str]:
        if actual is MISSING:
            return [f"{path}: reference {self.words()}, actual missing"]
        return self.units(actual, path, llm)[2]

    def words(self) -> str:
        return "an object"


class Seq(Node):
    def __init__(self, items: list[Node]) -> None:
        self.items = items

    def check(self, actual: Any, path: str, llm: LlmAnswers) -> list[str]:
        actual = _maybe_json(actual, list)
        if not isinstance(actual, list):
            return [f"{path}: reference a list, actual {show(actual)}"]
        if len(actual) != len(self.items):
            return [f"{path}: reference {len(self.items)} items, actual {len(actual)}"]
        problems: list[str] = []
        for i, (node, value) in enumerate(zip(self.items, actual)):
            problems += node.check(value, f"{path}[{i}]", llm)
        return problems

    def ok(self, actual: Any, llm: LlmAnswers) -> bool:
        actual = _maybe_json(actual, list)
        return (
            isinstance(actual, list)
            and len(actual) == len(self.items)
            and all(node.ok(v, llm) for node, v in zip(self.items, actual))
        )

    def words(self) -> str:
        return "a list"


class AnyValue(Node):
    def ok(self, actual: Any, llm: LlmAnswers) -> bool:
        return actual is not MISSING

    def check(self, actual: Any, path: str, llm: LlmAnswers) -> list[str]:
        return [f"{path}: reference any, actual missing"] if actual is MISSING else []

    def words(self) -> str:
        return "any"


class Regex(Node):
    def __init__(self, pattern: str, where: str) -> None:
        try:
            self.pattern = re.compile(pattern)
        except re.error as e:
            raise TrajectoryError(f"{where}: $regex is not a valid pattern ({e})") from None
        self.text = pattern

    def check(self, actual: Any, path: str, llm: LlmAnswers) -> list[str]:
        if isinstance(actual, (int, float)) and not isinstance(actual, bool):
            actual_text: Any = str(actual)
        else:
            actual_text = actual
        if isinstance(actual_text, str) and self.pattern.fullmatch(actual_text):
            return []
        return [f"{path}: {show(actual)} does not match {self.words()}"]

    def words(self) -> str:
        return f"/{self.text}/"


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


class Number(Node):
    def __init__(self, value: float, abs_tol: float, rel_tol: float) -> None:
        self.value, self.abs_tol, self.rel_tol = value, abs_tol, rel_tol

    def check(self, actual: Any, path: str, llm: LlmAnswers) -> list[str]:
        number = _number(actual)
        if number is None:
            return [f"{path}: reference {self.words()}, actual {show(actual)} (not a number)"]
        if math.isclose(number, self.value, rel_tol=self.rel_tol, abs_tol=self.abs_tol):
            return []
        tol = []
        if self.abs_tol:
            tol.append(f"abs_tol {self.abs_tol:g}")
        if self.rel_tol:
            tol.append(f"rel_tol {self.rel_tol:g}")
        extra = f" ({', '.join(tol)})" if tol else ""
        return [f"{path}: reference {self.words()}, actual {show(actual)}{extra}"]

    def words(self) -> str:
        return f"{self.value:g}"


_UNITS = {"w": "weeks", "d": "days", "h": "hours", "m": "minutes", "s": "seconds"}
_SHORT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([wdhms])\s*$")
_ISO = re.compile(
    r"^P(?:(?P<w>\d+(?:\.\d+)?)W)?(?:(?P<d>\d+(?:\.\d+)?)D)?"
    r"(?:T(?:(?P<h>\d+(?:\.\d+)?)H)?(?:(?P<m>\d+(?:\.\d+)?)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?$"
)


def parse_tolerance(value: Any, where: str) -> timedelta:
    """A tolerance: ``1d``, ``2h``, ``30m``, ``10s``, ``1w``, or ISO 8601 ``P1DT2H`` (no years or
    months: their length varies)."""
    if isinstance(value, str):
        short = _SHORT.match(value)
        if short:
            return timedelta(**{_UNITS[short.group(2)]: float(short.group(1))})
        iso = _ISO.match(value.strip().upper())
        if iso and value.strip().upper() not in ("P", "PT") and not value.strip().endswith("T"):
            parts = {_UNITS[k]: float(v) for k, v in iso.groupdict().items() if v is not None}
            if parts:
                return timedelta(**parts)
    raise TrajectoryError(
        f"{where}: tolerance must be like 1d, 2h, 30m, 10s, 1w or an ISO 8601 duration "
        f"(P1DT2H), got {show(value)}"
    )


def duration_words(delta: timedelta) -> str:
    """``2 days``, ``1 day 3 hours``, ``90 seconds`` ..."""
    seconds = abs(delta.total_seconds())
    parts = []
    for name, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        count = int(seconds // size)
        if count:
            parts.append(f"{count} {name}{'s' if count != 1 else ''}")
            seconds -= count * size
    if seconds or not parts:
        text = f"{seconds:g}"
        parts.append(f"{text} second{'s' if text != '1' else ''}")
    return " ".join(parts)


def _as_datetime(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _as_date(value: Any) -> date | None:
    found = _as_datetime(value)
    return None if found is None else found.date()


class Moment(Node):
    """``$date`` (days apart) or ``$datetime`` (naive times are taken as UTC)."""

    def __init__(self, value: Any, tolerance: timedelta, kind: str, where: str) -> None:
        self.kind = kind
        self.tolerance = tolerance
        parse: Callable[[Any], Any] = _as_date if kind == "$date" else _as_datetime
        self.parse = parse
        self.value = parse(value)
        self.text = value
        if self.value is None:
            raise TrajectoryError(f"{where}: {kind} needs a {kind[1:]}, got {show(value)}")

    def check(self, actual: Any, path: str, llm: LlmAnswers) -> list[str]:
        found = self.parse(actual)
        if found is None:
            return [f"{path}: reference {self.words()}, actual {show(actual)}"]
        gap = found - self.value
        if abs(gap) <= self.tolerance:
            return []
        shown = found.isoformat() if self.kind == "$date" else actual
        return [
            f"{path}: {shown} is {duration_words(gap)} from {self.text} "
            f"(tolerance {duration_words(self.tolerance)})"
        ]

    def words(self) -> str:
        return str(self.text)


def _bipartite(ok: list[list[bool]]) -> int:
    """The size of a maximum matching of a boolean matrix (augmenting paths)."""
    owner: dict[int, int] = {}

    def augment(i: int, seen: set[int]) -> bool:
        for j, good in enumerate(ok[i]):
            if good and j not in seen:
                seen.add(j)
                if j not in owner or augment(owner[j], seen):
                    owner[j] = i
                    return True
        return False

    return sum(augment(i, set()) for i in range(len(ok)))


class SetOf(Node):
    def __init__(self, items: list[Node]) -> None:
        self.items = items

    def check(self, actual: Any, path: str, llm: LlmAnswers) -> list[str]:
        actual = _maybe_json(actual, list)
        if not isinstance(actual, list):
            return [f"{path}: reference a set, actual {show(actual)}"]
        ok = [[node.ok(v, llm) for v in actual] for node in self.items]
        matched = _bipartite(ok)
        if matched == len(self.items) == len(actual):
            return []
        return [
            f"{path}: {matched} of {len(self.items)} reference items found among "
            f"{len(actual)} actual items (order ignored)"
        ]

    def words(self) -> str:
        return "a set"


def normalise_text(text: str) -> str:
    """Case folded, punctuation removed, whitespace collapsed."""
    kept = "".join(
        " " if unicodedata.category(c).startswith("P") or c in string.punctuation else c
        for c in text.casefold()
    )
    return " ".join(kept.split())


class Text(Node):
    def __init__(self, value: str) -> None:
        self.value = value
        self.normal = normalise_text(value)

    def check(self, actual: Any, path: str, llm: LlmAnswers) -> list[str]:
        if isinstance(actual, str) and normalise_text(actual) == self.normal:
            return []
        return [f"{path}: reference {self.words()}, actual {show(actual)} (text normalised)"]

    def words(self) -> str:
        return show(self.value)


class Fuzzy(Node):
    def __init__(self, value: str, minimum: float) -> None:
        self.value, self.minimum = value, minimum

    def check(self, actual: Any, path: str, llm: LlmAnswers) -> list[str]:
        if not isinstance(actual, str):
            return [f"{path}: reference {self.words()}, actual {show(actual)}"]
        from ...extras import require

        fuzz = require("rapidfuzz.fuzz", "the $fuzzy comparator")
        similarity = fuzz.ratio(self.value, actual) / 100.0
        if similarity >= self.minimum:
            return []
        return [
            f"{path}: reference {self.words()}, actual {show(actual)} "
            f"(similarity {similarity:.2f} < {self.minimum:g})"
        ]

    def words(self) -> str:
        return show(self.value)


class OneOf(Node):
    def __init__(self, options: list[Node]) -> None:
        self.options = options

    def check(self, actual: Any, path: str, llm: LlmAnswers) -> list[str]:
        if any(node.ok(actual, llm) for node in self.options):
            return []
        return [f"{path}: reference {self.words()}, actual {show(actual)}"]

    def words(self) -> str:
        return "one of " + ", ".join(node.words() for node in self.options)


class Llm(Node):
    def __init__(self, statement: str, where: str) -> None:
        self.statement = statement
        self.where = where

    def check(self, actual: Any, path: str, llm: LlmAnswers) -> list[str]:
        if actual is MISSING:
            return [f"{path}: reference {self.words()}, actual missing"]
        key = (self.statement, canonical(actual))
        verdict = llm.answers.get(key)
        if verdict is None:
            llm.pending.setdefault(key, self.where)
            return [f"{path}: not judged yet ($llm)"]
        if verdict:
            return []
        return [f"{path}: the judge says {show(actual)} does not mean {self.words()}"]

    def words(self) -> str:
        return show(self.statement)


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
    number = _number(value) if not isinstance(value, str) else None
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
        number = _number(minimum) if not isinstance(minimum, str) else None
        if number is None or not 0 <= number <= 1:
            raise TrajectoryError(f"{where}: min must be a number from 0 to 1, got {show(minimum)}")
        return Fuzzy(value, number)
    if name == "$number":
        number = _number(value) if not isinstance(value, str) else None
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

    def score(self, actual: Any, llm: LlmAnswers = _NO_LLM) -> tuple[int, int, list[str]]:
        """(satisfied reference arguments, reference arguments, mismatches) of an actual call's
        parsed arguments."""
        if self.root is None or self.mode == "ignore":
            return 0, 0, []
        return self.root.units(actual, "args", llm)

    def count(self, actual: Any, llm: LlmAnswers = _NO_LLM) -> tuple[int, int, int]:
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
