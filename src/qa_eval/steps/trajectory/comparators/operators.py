"""The ``$`` comparators, each a node: ``$any``, ``$regex``, ``$number`` (tolerances), ``$date`` and
``$datetime`` (a tolerance as ``1d`` or an ISO 8601 duration), ``$set`` (a one-to-one matching),
``$text`` (normalised), ``$fuzzy`` (rapidfuzz), ``$one_of`` and ``$llm`` (the judge).
"""

from __future__ import annotations

import math
import re
import string
import unicodedata
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import Any

from .modes import maybe_json
from .values import MISSING, LlmAnswers, Node, TrajectoryError, canonical, show


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


def as_number(value: Any) -> float | None:
    """A finite number from a JSON number or numeric text (never a bool), or None."""
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
        number = as_number(actual)
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
        actual = maybe_json(actual, list)
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
        from ....extras import require

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
