"""What counts as a number in a result, and the statistics of a metric's values: ``describe``
(sum, mean, median, min, max, n; exact for ints, without overflow) and ``Series``, the values one
group collects for one metric."""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Mapping
from fractions import Fraction
from typing import Any, TypeGuard, cast

_INF = math.inf
_INT_ONLY = {int}
_NUMBERS = frozenset((int, float))
_EXACT_INT = 2**53
"""Every int up to this size is a float exactly."""


def is_number(value: Any) -> TypeGuard[int | float]:
    """Whether a value is an int or a float (booleans are not numbers here)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_error(result: Mapping[str, Any]) -> bool:
    """Whether a result is an error response (``status: error``, or an ``error`` key when it
    has no status)."""
    status = result.get("status")
    return status == "error" if status is not None else "error" in result


def is_finite_number(value: Any) -> TypeGuard[int | float]:
    """Whether a value is a number that is neither NaN nor infinite (every int is finite)."""
    return is_number(value) and (isinstance(value, int) or math.isfinite(value))


def as_float(value: Any) -> float | None:
    """A finite number as a float; None for anything else, and for an int beyond the float
    range (one of more than 308 digits)."""
    if not is_finite_number(value):
        return None
    try:
        return float(value)
    except OverflowError:
        return None


def nearest_float(exact: Fraction) -> float | None:
    """The float nearest an exact value; None when it is beyond the float range."""
    try:
        return float(exact)
    except OverflowError:
        return None


def _exact_sum(values: list[int | float]) -> Fraction:
    return sum(map(Fraction, values), Fraction(0))


def _float_sum(
    values: list[int | float],
    kinds: set[type] | None = None,
    ordered: list[int | float] | None = None,
) -> float | None:
    """The float nearest the exact sum of numbers that are not all ints (None beyond the float
    range): ``math.fsum`` when it is exact, else the sum of the exact fractions (``kinds``: the
    types of the values, when known; ``ordered``: the values sorted, when known)."""
    if kinds is None:
        kinds = set(map(type, values))
    if (
        int not in kinds
        # (sorted: every value, so every int, is between the first and the last)
        or (ordered is not None and ordered[0] >= -_EXACT_INT and ordered[-1] <= _EXACT_INT)
        or all(-_EXACT_INT <= v <= _EXACT_INT for v in values if type(v) is int)
    ):
        try:
            return math.fsum(values)
        except OverflowError:  # a partial sum beyond the float range
            pass
    return nearest_float(_exact_sum(values))


def _float_mean(total: float | None, values: list[int | float]) -> float | None:
    """``sum / n`` from the float sum of the values; when the sum is beyond the float range, the
    float nearest the exact mean (None when that is beyond it too)."""
    if total is not None:
        return total / len(values)
    return nearest_float(_exact_sum(values) / len(values))


def mean_of(values: list[int | float]) -> float | None:
    """The mean of finite numbers (at least one) as a float, ``sum / n``, without overflow; None
    when it is beyond the float range (only ints of more than 308 digits can make it so)."""
    return _float_mean(_float_sum(values), values)


def int_mean(total: int, n: int) -> int | float | None:
    """The mean of ints from their sum: an int when whole, else the nearest float (None beyond
    the float range), as ``statistics.mean`` types it and the original writes it."""
    if total % n == 0:
        return total // n
    try:
        return total / n
    except OverflowError:
        return None


def median_sorted(ordered: list[int | float]) -> int | float | None:
    """The median of sorted finite numbers: the middle one, or the mean of the middle two
    (computed exactly when the float arithmetic would overflow; None beyond the float range)."""
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    low, high = ordered[middle - 1], ordered[middle]
    try:
        median = (low + high) / 2
    except OverflowError:  # an int beyond the float range
        median = _INF
    if -_INF < median < _INF:
        return median
    if type(low) is int and type(high) is int and (low + high) % 2 == 0:
        return (low + high) // 2
    return nearest_float((Fraction(low) + Fraction(high)) / 2)


def describe(
    values: list[int | float], skipped: int = 0, zeros: bool = False, failed: int = 0
) -> dict[str, Any]:
    """sum, mean, median, min, max and n of finite numbers (and ``skipped``, ``failed`` when not
    0). With none: sum 0 and the others null (no value has a mean), or all 0 with ``zeros`` (the
    token and time metrics, which the original writes as zeros). A statistic beyond the float
    range (a sum of floats past 1.8e308) is null; ints add up exactly."""
    return describe_sorted(values, None, skipped, zeros, failed)


def describe_sorted(
    values: list[int | float],
    ordered: list[int | float] | None,
    skipped: int,
    zeros: bool,
    failed: int,
    kinds: set[type] | None = None,
) -> dict[str, Any]:
    """``describe``, given the values sorted (``ordered``; None: sorted here) and their types
    (``kinds``; None: read here)."""
    n = len(values)
    if n == 0:
        empty = 0 if zeros else None
        return stats_block(0, empty, empty, empty, empty, 0, skipped, failed)
    if ordered is None:
        ordered = sorted(values)
    if kinds is None:
        kinds = set(map(type, values))
    if kinds == _INT_ONLY:
        exact = cast(int, sum(values))
        total: int | float | None = exact
        mean = int_mean(exact, n)
    else:
        total = _float_sum(values, kinds, ordered)
        mean = _float_mean(total, values)
    # max: the first of the largest in the values' order, as max() gives it (the sort is
    # stable: 1 before 1.0 when 1 came first; graphrag-eval takes max() of the values).
    largest = ordered[bisect_left(ordered, ordered[-1])]
    return stats_block(total, mean, median_sorted(ordered), ordered[0], largest, n, skipped, failed)


def stats_block(
    total: Any, mean: Any, median: Any, low: Any, high: Any, n: int, skipped: int, failed: int
) -> dict[str, Any]:
    """The statistics as ``describe`` writes them."""
    stats = {"sum": total, "mean": mean, "median": median, "min": low, "max": high, "n": n}
    if skipped:
        stats["skipped"] = skipped
    if failed:
        stats["failed"] = failed
    return stats


def describe_array(
    values: Any, skipped: int = 0, zeros: bool = False, failed: int = 0, mine: bool = False
) -> dict[str, Any]:
    """``describe`` of values that are all ints or all floats, held in an ``array('q')`` or
    ``array('d')`` (or a numpy array of int64 or float64) in their order: the same statistics,
    bit for bit, without a Python object per value (a stable sort keeps ties, ``0.0`` and
    ``-0.0``, in the order ``sorted`` gives them). ``mine``: the values may be sorted where
    they are (no copy; the sums are exact, so their order does not count)."""
    import numpy as np

    n = len(values)
    if n == 0:
        return describe_sorted([], None, skipped, zeros, failed)
    data = (
        values
        if isinstance(values, np.ndarray)
        else np.frombuffer(values, _DTYPES[values.typecode])
    )
    if mine:
        data.sort(kind="stable")
        ordered = data
    else:
        ordered = np.sort(data, kind="stable")
    total: int | float | None
    if data.dtype.kind == "i":
        low, high = int(ordered[0]), int(ordered[-1])
        small = max(-low, high) < (1 << 63) // n  # then no partial sum leaves 64 bits
        total = int(data.sum()) if small else sum(map(int, data))
        mean = int_mean(total, n)
    else:
        total = _float_sum(data, {float})  # type: ignore[arg-type]
        mean = _float_mean(total, data)  # type: ignore[arg-type]
    middle = n // 2
    if n % 2:
        median = ordered[middle].item()
    else:
        median = median_sorted([ordered[middle - 1].item(), ordered[middle].item()])
    largest = ordered[int(np.searchsorted(ordered, ordered[-1], side="left"))].item()
    return stats_block(total, mean, median, ordered[0].item(), largest, n, skipped, failed)


_DTYPES = {"q": "int64", "d": "float64"}


class Series:
    """One metric's values in a group. ``ordered``: the values sorted, once a summary has
    sorted them; ``runs`` (a series made by ``Group.merge``): the merged series' values,
    each series' sorted, one after the other, which sort faster than the values themselves and
    into the same list (the sort is stable, and the merged series come in the same order).
    ``kinds``: the types of the first ``typed`` values, once known (a summary reads them; a
    merge joins those of the merged series)."""

    __slots__ = ("failed", "kinds", "ordered", "runs", "skipped", "typed", "values")

    def __init__(self) -> None:
        self.values: list[int | float] = []
        self.skipped = 0
        self.failed = 0
        self.ordered: list[int | float] | None = None
        self.runs: list[int | float] | None = None
        self.kinds: set[type] | None = None
        self.typed = 0

    def sorted_values(self) -> list[int | float]:
        """The values sorted (kept in ``ordered``); from ``runs`` when they hold every value
        (values are only ever appended, so the lengths differ when any came another way)."""
        ordered = self.ordered
        if ordered is None or len(ordered) != len(self.values):
            runs = self.runs
            source = runs if runs is not None and len(runs) == len(self.values) else self.values
            ordered = self.ordered = sorted(source)
        return ordered

    def count(self) -> int:
        """How many values it has."""
        return len(self.values)

    def value_kinds(self) -> set[type] | None:
        """The types of its values when known (``kinds`` of every value), else None."""
        kinds = self.kinds
        if kinds is not None and self.typed == len(self.values):
            return kinds
        return None

    def describe(self, zeros: bool = False) -> dict[str, Any]:
        """``describe`` of its values (``zeros``: as ``describe``'s)."""
        values = self.values
        kinds = self.value_kinds()
        if kinds is None:
            kinds = self.kinds = set(map(type, values))
            self.typed = len(values)
        return describe_sorted(
            values, self.sorted_values(), self.skipped, zeros, self.failed, kinds
        )

    def settle(self) -> None:
        """Keep only the finite numbers of values appended unchecked (counting the others but
        None as ``skipped``), as ``add`` would have, given them one at a time; the values that
        were checked stay as they are."""
        values = self.values
        kinds = set(map(type, values))
        if kinds <= _NUMBERS:
            try:
                # (a float sum is finite only when every value is: inf and NaN stay so)
                finite = float not in kinds or -_INF < sum(values) < _INF
            except OverflowError:  # an int beyond the float range: read one by one
                finite = False
            if finite:
                self.kinds, self.typed = kinds, len(values)  # (describe reads them)
                return
        checked = Series()
        for value in values:
            checked.add(value)
        values[:] = checked.values  # (the same list: a group's plans append to it)
        self.skipped += checked.skipped

    def add(self, value: Any) -> None:
        kind = type(value)
        # int and float first (the usual values); comparisons with inf also rule out NaN.
        if kind is int or (kind is float and -_INF < value < _INF) or is_finite_number(value):
            self.values.append(value)
        elif value is not None:
            self.skipped += 1


class ArraySeries(Series):
    """A ``Series`` whose values are all ints or all floats, held in an ``array('q')`` or
    ``array('d')`` (or a numpy array of int64 or float64): 8 bytes a value, summarised by
    :func:`describe_array` without a Python object per value. ``values`` makes a new list each
    time it is read (only judge repeats read it)."""

    __slots__ = ("array",)

    def __init__(self, values: Any, skipped: int = 0, failed: int = 0) -> None:
        self.array = values
        self.skipped = skipped
        self.failed = failed
        self.ordered = None
        self.runs = None
        self.kinds = None
        self.typed = 0

    @property
    def values(self) -> list[int | float]:  # type: ignore[override]  # (made when read)
        """The values, in order: a new list each time."""
        return self.array.tolist()  # type: ignore[no-any-return]

    def count(self) -> int:
        """How many values it has."""
        return len(self.array)

    def sorted_values(self) -> list[int | float]:
        """The values sorted (not kept)."""
        return sorted(self.values)

    def describe(self, zeros: bool = False) -> dict[str, Any]:
        """``describe`` of its values, from the array (read first when it is written to a file:
        ``aggregate.spill.Spilled``)."""
        read = getattr(self.array, "read", None)
        data = read() if read is not None else self.array
        return describe_array(data, self.skipped, zeros, self.failed)
