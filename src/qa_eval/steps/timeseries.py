"""Compare ``retrieve_time_series`` and ``retrieve_data_points`` steps by their arguments.

Definition (graphrag-eval 6.6.1, the step types of its latest release; conformance case
``time-series``):

* ``retrieve_time_series`` matches when the ``mrid`` values are equal as sorted lists (a single
  string counts as a one-element list) and, when the reference sets ``limit``, the limits are
  equal. A reference without ``mrid`` matches an actual step without ``mrid`` and the same
  ``limit``.
* ``retrieve_data_points`` matches when ``external_id`` and ``aggregates`` are equal as sorted
  lists, ``granularity`` is equal after normalising the unit (``1w`` = ``1week`` = ``1weeks``),
  ``limit`` is equal, and ``start`` / ``end`` are the same instant. Times are ISO 8601 (a naive time
  is UTC) or relative (``now``, ``<n>{s,m,h,d,w}-ago``, ``<n>{s,m,h,d,w}-ahead``), resolved against
  the actual step's ``execution_timestamp``. A relative reference time matches an absolute actual
  time within 60 seconds; an absolute reference time never matches a relative actual time.

The score is 1.0 or 0.0.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any, TypeVar

from ..errors import short_repr
from .outputs import StepArgumentError, shown

__all__ = [
    "StepArgumentError",
    "compare_data_points_steps",
    "compare_time_series_steps",
    "explain_data_points_steps",
    "explain_time_series_steps",
    "parse_instant",
]

TOLERANCE_SECONDS = 60
# Patterns compiled when first matched (re caches them): not at import, which a run without a
# time series step would pay for.
_RELATIVE = r"^(?:now|(\d+)([smhdw])-(ago|ahead))$"
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_GRANULARITY = r"^(\d+)([a-zA-Z]+)$"
_GRANULARITY_UNITS = {
    "s": "seconds",
    "second": "seconds",
    "m": "minutes",
    "minute": "minutes",
    "h": "hours",
    "hour": "hours",
    "d": "days",
    "day": "days",
    "w": "weeks",
    "week": "weeks",
    "mo": "months",
    "month": "months",
    "q": "quarters",
    "quarter": "quarters",
    "y": "years",
    "year": "years",
}


def _sorted_values(value: Any) -> Any:
    if not value:
        return value
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        try:
            return sorted(value)
        except TypeError:
            return sorted(value, key=repr)
    return value


def _same_values(reference: Any, actual: Any) -> bool:
    """``_sorted_values(reference) == _sorted_values(actual)``, without the lists made for the
    usual values (two texts, a text and a list of one, lists of different lengths, two lists of
    two texts)."""
    ref_type, act_type = type(reference), type(actual)
    if ref_type is str:
        if act_type is str:
            return reference == actual  # ("" and "", or [x] and [y])
        if act_type is list and reference:
            return [reference] == actual  # (a list of one is its own sorted list)
    elif ref_type is list and act_type is list:
        size = len(reference)
        if size != len(actual):
            return False
        if size == 1:
            return reference == actual  # (``sorted`` does not compare a single value)
        if size == 2:  # (e.g. two aggregates: two texts each are the same two in either order)
            first, second = reference
            other, last = actual
            if (
                type(first) is str
                and type(second) is str
                and type(other) is str
                and type(last) is str
            ):
                return (first == other and second == last) or (first == last and second == other)
        if size:
            try:
                return sorted(reference) == sorted(actual)
            except TypeError:
                pass  # (values that do not order: as ``_sorted_values`` sorts them)
    return bool(_sorted_values(reference) == _sorted_values(actual))


def _granularity(value: Any) -> Any:
    if not isinstance(value, str) or not value:
        return value
    return _granularity_text(value)


def _same_granularity(reference: Any, actual: Any) -> bool:
    """``_granularity(reference) == _granularity(actual)``: equal texts are equal at once
    (the normalisation is a function of the text; ``""`` normalises to itself)."""
    if type(reference) is str and type(actual) is str:
        return reference == actual or _granularity_text(reference) == _granularity_text(actual)
    return bool(_granularity(reference) == _granularity(actual))


# Datasets repeat the same few granularities and times: their parses are cached by text, in
# dicts the comparisons read first (``get`` costs half a call of an ``lru_cache``).
_CACHE_SIZE = 4096
"""The texts a cache keeps: it is emptied when full."""

_GRANULARITIES: dict[str, str] = {}
"""``_granularity_text`` of each text read."""

_TIMES: dict[str, tuple[Any, datetime | None]] = {}
"""``_time_text`` of each text read."""

_Known = TypeVar("_Known")


def _remember(cache: dict[str, _Known], value: str, known: _Known) -> _Known:
    if len(cache) >= _CACHE_SIZE:
        cache.clear()
    cache[value] = known
    return known


def _granularity_text(value: str) -> str:
    """A granularity text with its unit normalised (cached)."""
    known = _GRANULARITIES.get(value)
    if known is None:
        known = _remember(_GRANULARITIES, value, _normalise_granularity(value))
    return known


def _normalise_granularity(value: str) -> str:
    match = re.match(_GRANULARITY, value.strip())
    if not match:
        return value
    count, unit = match.groups()
    unit = unit.lower()
    try:
        number = str(int(count))
    except ValueError:  # (more digits than int() reads: the count as written, without 0s)
        number = count.lstrip("0") or "0"
    return f"{number}{_GRANULARITY_UNITS.get(unit, unit)}"


def _utc(moment: datetime) -> datetime:
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def parse_instant(value: Any) -> datetime | None:
    """Parse an absolute time (datetime or ISO 8601 text) to an aware UTC datetime, else None
    (also for a time that is out of range in UTC, e.g. 0001-01-01T00:00+05:00)."""
    if isinstance(value, datetime):
        try:
            return _utc(value)
        except OverflowError:
            return None
    if isinstance(value, str):
        return _instant_text(value)
    return None


@lru_cache(maxsize=4096)
def _instant_text(value: str) -> datetime | None:
    text = value.strip()
    try:
        return _utc(datetime.fromisoformat(text))  # fast; Python 3.11+ reads most ISO forms
    except OverflowError:  # a valid time that is out of range in UTC
        return None
    except ValueError:
        pass
    from dateutil import parser as date_parser  # here: only for what fromisoformat refuses

    try:
        return _utc(date_parser.isoparse(text))
    except (ValueError, OverflowError):
        return None


_FAR = object()
"""The offset of a relative time beyond any date from any anchor."""

_ABSOLUTE: tuple[Any, datetime | None] = (None, None)
"""``_time_of`` a value that is neither a relative time nor an absolute one."""


def _time_of(value: Any) -> tuple[Any, datetime | None]:
    """(the offset of a relative time from the anchor, else None; the instant of an absolute
    time, else None): what a comparison reads of a time, whatever the anchor."""
    if isinstance(value, str):
        return _time_text(value)
    if isinstance(value, datetime):
        return None, parse_instant(value)
    return _ABSOLUTE


def _time_text(value: str) -> tuple[Any, datetime | None]:
    """``_time_of`` a text (cached): the offset is a ``timedelta`` (zero for ``now``) or
    ``_FAR`` when adding it to any anchor is out of range."""
    known = _TIMES.get(value)
    if known is None:
        known = _remember(_TIMES, value, _read_time(value))
    return known


def _read_time(value: str) -> tuple[Any, datetime | None]:
    match = re.match(_RELATIVE, value.strip())
    if match is None:
        return None, _instant_text(value)
    if match.group(1) is None:
        return timedelta(0), None
    if len(match.group(1)) > 12:  # beyond any date from any anchor (and int() would refuse)
        return _FAR, None
    seconds = int(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    sign = 1 if match.group(3) == "ahead" else -1
    try:
        return sign * timedelta(seconds=seconds), None
    except OverflowError:
        return _FAR, None


def _is_relative(value: Any) -> bool:
    return isinstance(value, str) and _time_text(value)[0] is not None


def _resolve_relative(value: str, offset: Any, anchor: datetime) -> datetime:
    """The relative time ``value`` (of ``offset``, from ``_time_of``) from ``anchor``."""
    if offset is not _FAR:
        try:
            return anchor + offset  # type: ignore[no-any-return]
        except OverflowError:
            pass
    raise StepArgumentError(
        f"the relative time {short_repr(value)} from the actual step's 'execution_timestamp' "
        f"{anchor.isoformat()} is out of range"
    )


def _times_equal(reference: Any, actual: Any, anchor: Any) -> bool:
    if reference is None or actual is None:
        return reference is None and actual is None
    if type(reference) is str:
        ref_offset, ref_instant = _TIMES.get(reference) or _time_text(reference)
        if ref_offset is None and reference == actual:
            return True  # (one absolute text: one instant, or the same text)
    else:
        ref_offset, ref_instant = _time_of(reference)
    if type(actual) is str:
        act_offset, act_instant = _TIMES.get(actual) or _time_text(actual)
    else:
        act_offset, act_instant = _time_of(actual)
    if ref_offset is None:
        if act_offset is not None:
            return False  # (an absolute reference time never matches a relative one)
        if ref_instant is None or act_instant is None:
            return bool(reference == actual)
        return ref_instant == act_instant
    anchor_time = parse_instant(anchor)
    if anchor_time is None:
        raise StepArgumentError(
            "a relative time needs the actual step's 'execution_timestamp' as an ISO 8601 "
            f"time, got {short_repr(anchor)}"
        )
    ref_time = _resolve_relative(reference, ref_offset, anchor_time)
    if act_offset is not None:
        return ref_time == _resolve_relative(actual, act_offset, anchor_time)
    if act_instant is None:
        return False
    return abs((ref_time - act_instant).total_seconds()) <= TOLERANCE_SECONDS


_NO_ARGS: Mapping[str, Any] = {}
"""The arguments of a step without a mapping of them (never written to)."""


def _arguments(
    reference: Mapping[str, Any], actual: Mapping[str, Any]
) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """The ``args`` of both steps (none when not a mapping), in one call."""
    ref, act = reference.get("args"), actual.get("args")
    return (ref if isinstance(ref, dict) else _NO_ARGS), (
        act if isinstance(act, dict) else _NO_ARGS
    )


def compare_time_series_steps(reference: Mapping[str, Any], actual: Mapping[str, Any]) -> float:
    """Score a ``retrieve_time_series`` step: 1.0 when mrid (and limit, if set) agree."""
    ref, act = reference.get("args"), actual.get("args")
    if type(ref) is not dict or type(act) is not dict:  # (rare: ``_arguments`` decides)
        ref, act = _arguments(reference, actual)
    ref_mrid, act_mrid = ref.get("mrid"), act.get("mrid")
    if not ref_mrid:
        return 1.0 if act_mrid is None and ref.get("limit") == act.get("limit") else 0.0
    if type(ref_mrid) is str and type(act_mrid) is list:  # (the usual pair, as below: a
        # list of one equal to [ref_mrid], read without making that list)
        if len(act_mrid) != 1 or not ref_mrid == act_mrid[0]:  # noqa: SIM201 (as lists compare)
            return 0.0
    elif not _same_values(ref_mrid, act_mrid):
        return 0.0
    ref_limit = ref.get("limit")
    return 1.0 if not ref_limit or ref_limit == act.get("limit") else 0.0


def compare_data_points_steps(reference: Mapping[str, Any], actual: Mapping[str, Any]) -> float:
    """Score a ``retrieve_data_points`` step: 1.0 when ids, aggregation and time range agree."""
    # The arguments in the order of the definition, each returning at its first difference:
    # the ids (which differ between questions' steps) first, the times (the only ones that
    # can raise) last. Two texts (the usual ids and granularities) are compared here.
    ref, act = reference.get("args"), actual.get("args")
    if type(ref) is not dict or type(act) is not dict:  # (rare: ``_arguments`` decides)
        ref, act = _arguments(reference, actual)
    ref_value, act_value = ref.get("external_id"), act.get("external_id")
    if type(ref_value) is str and type(act_value) is str:
        if ref_value != act_value:
            return 0.0
    elif not _same_values(ref_value, act_value):
        return 0.0
    ref_value, act_value = ref.get("granularity"), act.get("granularity")
    if ref_value != act_value:  # (else the same value: normalised the same)
        if type(ref_value) is str and type(act_value) is str:
            if (_GRANULARITIES.get(ref_value) or _granularity_text(ref_value)) != (
                _GRANULARITIES.get(act_value) or _granularity_text(act_value)
            ):
                return 0.0
        elif not _same_granularity(ref_value, act_value):
            return 0.0
    if not (
        _same_values(ref.get("aggregates"), act.get("aggregates"))
        and ref.get("limit") == act.get("limit")
    ):
        return 0.0
    # One absolute text on both sides is one instant (``_times_equal``'s first test, read here
    # from the times' cache: a call fewer per time); the rest, relative times first, there.
    anchor = actual.get("execution_timestamp")
    for name in ("start", "end"):
        ref_value, act_value = ref.get(name), act.get(name)
        if not (
            ref_value == act_value
            and type(ref_value) is str
            and (_TIMES.get(ref_value) or _UNREAD)[0] is None
        ) and not _times_equal(ref_value, act_value, anchor):
            return 0.0
    return 1.0


_UNREAD = (_FAR, None)
"""What the shortcut of ``compare_data_points_steps`` reads for a time not in the cache: not
known to be absolute (``_times_equal`` reads it)."""


def _differs(name: str, reference: Any, actual: Any) -> str:
    ref = "(none)" if reference is None else shown(reference)
    act = "(none)" if actual is None else shown(actual)
    return f"{name}: reference {ref}, actual {act}"


def explain_time_series_steps(reference: Mapping[str, Any], actual: Mapping[str, Any]) -> str:
    """Which argument of a ``retrieve_time_series`` step differs, for a user."""
    ref, act = reference.get("args"), actual.get("args")
    if type(ref) is not dict or type(act) is not dict:  # (rare: ``_arguments`` decides)
        ref, act = _arguments(reference, actual)
    ref_mrid, ref_limit = ref.get("mrid"), ref.get("limit")
    act_mrid, act_limit = act.get("mrid"), act.get("limit")
    parts = []
    if not ref_mrid:
        if act_mrid is not None:
            parts.append(_differs("mrid", None, act_mrid))
        if ref_limit != act_limit:
            parts.append(_differs("limit", ref_limit, act_limit))
    else:
        if (  # (the usual pair, a text and a list, as ``compare_time_series_steps`` reads it)
            [ref_mrid] != act_mrid
            if type(ref_mrid) is str and type(act_mrid) is list
            else not _same_values(ref_mrid, act_mrid)
        ):
            parts.append(_differs("mrid", ref_mrid, act_mrid))
        if ref_limit and ref_limit != act_limit:
            parts.append(_differs("limit", ref_limit, act_limit))
    return "; ".join(parts) or "the arguments differ"


def explain_data_points_steps(reference: Mapping[str, Any], actual: Mapping[str, Any]) -> str:
    """Which argument of a ``retrieve_data_points`` step differs, for a user."""
    ref, act = reference.get("args"), actual.get("args")
    if type(ref) is not dict or type(act) is not dict:  # (rare: ``_arguments`` decides)
        ref, act = _arguments(reference, actual)
    parts = []
    # (each argument as ``compare_data_points_steps`` compares it, written out)
    # (two texts, the usual ids and granularities, compared here as there)
    ref_value, act_value = ref.get("external_id"), act.get("external_id")
    if (
        ref_value != act_value
        if type(ref_value) is str and type(act_value) is str
        else not _same_values(ref_value, act_value)
    ):
        parts.append(_differs("external_id", ref_value, act_value))
    ref_value, act_value = ref.get("granularity"), act.get("granularity")
    if ref_value != act_value and (
        (_GRANULARITIES.get(ref_value) or _granularity_text(ref_value))
        != (_GRANULARITIES.get(act_value) or _granularity_text(act_value))
        if type(ref_value) is str and type(act_value) is str
        else not _same_granularity(ref_value, act_value)
    ):
        parts.append(_differs("granularity", ref_value, act_value))
    ref_value, act_value = ref.get("aggregates"), act.get("aggregates")
    if not _same_values(ref_value, act_value):
        parts.append(_differs("aggregates", ref_value, act_value))
    ref_value, act_value = ref.get("limit"), act.get("limit")
    if ref_value != act_value:
        parts.append(_differs("limit", ref_value, act_value))
    anchor = actual.get("execution_timestamp")
    for name in ("start", "end"):
        ref_value, act_value = ref.get(name), act.get(name)
        if (  # (``compare_data_points_steps``' shortcut: one absolute text)
            ref_value == act_value
            and type(ref_value) is str
            and (_TIMES.get(ref_value) or _UNREAD)[0] is None
        ):
            continue
        try:
            if _times_equal(ref_value, act_value, anchor):
                continue
        except StepArgumentError as e:
            parts.append(f"{name}: {e}")
            continue
        text = _differs(name, ref_value, act_value)
        ref_relative, act_relative = _is_relative(ref_value), _is_relative(act_value)
        if ref_relative and not act_relative:
            text += f" (more than {TOLERANCE_SECONDS} s apart from the execution_timestamp)"
        elif act_relative and not ref_relative:
            text += " (a relative time never matches an absolute reference time)"
        parts.append(text)
    return "; ".join(parts) or "the arguments differ"
