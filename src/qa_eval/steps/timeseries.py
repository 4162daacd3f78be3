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
from typing import Any

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


def _granularity(value: Any) -> Any:
    if not isinstance(value, str) or not value:
        return value
    return _granularity_text(value)


# Datasets repeat the same few granularities and times: their parses are cached (by text).
@lru_cache(maxsize=4096)
def _granularity_text(value: str) -> str:
    match = re.match(_GRANULARITY, value.strip())
    if not match:
        return value
    count, unit = match.groups()
    unit = unit.lower()
    return f"{int(count)}{_GRANULARITY_UNITS.get(unit, unit)}"


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


def _is_relative(value: Any) -> bool:
    return isinstance(value, str) and _relative_text(value)


@lru_cache(maxsize=4096)
def _relative_text(value: str) -> bool:
    return re.match(_RELATIVE, value.strip()) is not None


def _resolve_relative(value: str, anchor: datetime) -> datetime:
    match = re.match(_RELATIVE, value.strip())
    assert match is not None
    if match.group(1) is None:
        return anchor
    out_of_range = StepArgumentError(
        f"the relative time {short_repr(value)} from the actual step's 'execution_timestamp' "
        f"{anchor.isoformat()} is out of range"
    )
    if len(match.group(1)) > 12:  # beyond any date from any anchor (and int() would refuse)
        raise out_of_range
    seconds = int(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    sign = 1 if match.group(3) == "ahead" else -1
    try:
        return anchor + sign * timedelta(seconds=seconds)
    except OverflowError:
        raise out_of_range from None


def _times_equal(reference: Any, actual: Any, anchor: Any) -> bool:
    if reference is None or actual is None:
        return reference is None and actual is None
    ref_relative, act_relative = _is_relative(reference), _is_relative(actual)
    if act_relative and not ref_relative:
        return False
    if ref_relative or act_relative:
        anchor_time = parse_instant(anchor)
        if anchor_time is None:
            raise StepArgumentError(
                "a relative time needs the actual step's 'execution_timestamp' as an ISO 8601 "
                f"time, got {short_repr(anchor)}"
            )
        ref_time = _resolve_relative(reference, anchor_time)
        if act_relative:
            return ref_time == _resolve_relative(actual, anchor_time)
        act_time = parse_instant(actual)
        if act_time is None:
            return False
        return abs((ref_time - act_time).total_seconds()) <= TOLERANCE_SECONDS
    ref_instant, act_instant = parse_instant(reference), parse_instant(actual)
    if ref_instant is None or act_instant is None:
        return reference == actual
    return ref_instant == act_instant


def _args(step: Mapping[str, Any]) -> Mapping[str, Any]:
    args = step.get("args")
    return args if isinstance(args, dict) else {}


def compare_time_series_steps(reference: Mapping[str, Any], actual: Mapping[str, Any]) -> float:
    """Score a ``retrieve_time_series`` step: 1.0 when mrid (and limit, if set) agree."""
    ref, act = _args(reference), _args(actual)
    ref_mrid, ref_limit = ref.get("mrid"), ref.get("limit")
    act_mrid, act_limit = act.get("mrid"), act.get("limit")
    if not ref_mrid:
        return float(act_mrid is None and ref_limit == act_limit)
    if _sorted_values(ref_mrid) != _sorted_values(act_mrid):
        return 0.0
    return float(not ref_limit or ref_limit == act_limit)


def compare_data_points_steps(reference: Mapping[str, Any], actual: Mapping[str, Any]) -> float:
    """Score a ``retrieve_data_points`` step: 1.0 when ids, aggregation and time range agree."""
    ref, act = _args(reference), _args(actual)
    anchor = actual.get("execution_timestamp")
    same = (
        _sorted_values(ref.get("external_id")) == _sorted_values(act.get("external_id"))
        and _granularity(ref.get("granularity")) == _granularity(act.get("granularity"))
        and _sorted_values(ref.get("aggregates")) == _sorted_values(act.get("aggregates"))
        and ref.get("limit") == act.get("limit")
    )
    if not same:
        return 0.0
    return float(
        _times_equal(ref.get("start"), act.get("start"), anchor)
        and _times_equal(ref.get("end"), act.get("end"), anchor)
    )


def _differs(name: str, reference: Any, actual: Any) -> str:
    ref = "(none)" if reference is None else shown(reference)
    act = "(none)" if actual is None else shown(actual)
    return f"{name}: reference {ref}, actual {act}"


def explain_time_series_steps(reference: Mapping[str, Any], actual: Mapping[str, Any]) -> str:
    """Which argument of a ``retrieve_time_series`` step differs, for a user."""
    ref, act = _args(reference), _args(actual)
    ref_mrid, ref_limit = ref.get("mrid"), ref.get("limit")
    act_mrid, act_limit = act.get("mrid"), act.get("limit")
    parts = []
    if not ref_mrid:
        if act_mrid is not None:
            parts.append(_differs("mrid", None, act_mrid))
        if ref_limit != act_limit:
            parts.append(_differs("limit", ref_limit, act_limit))
    else:
        if _sorted_values(ref_mrid) != _sorted_values(act_mrid):
            parts.append(_differs("mrid", ref_mrid, act_mrid))
        if ref_limit and ref_limit != act_limit:
            parts.append(_differs("limit", ref_limit, act_limit))
    return "; ".join(parts) or "the arguments differ"


def explain_data_points_steps(reference: Mapping[str, Any], actual: Mapping[str, Any]) -> str:
    """Which argument of a ``retrieve_data_points`` step differs, for a user."""
    ref, act = _args(reference), _args(actual)
    anchor = actual.get("execution_timestamp")
    parts = []
    for name, same in (
        ("external_id", _sorted_values),
        ("granularity", _granularity),
        ("aggregates", _sorted_values),
    ):
        if same(ref.get(name)) != same(act.get(name)):
            parts.append(_differs(name, ref.get(name), act.get(name)))
    if ref.get("limit") != act.get("limit"):
        parts.append(_differs("limit", ref.get("limit"), act.get("limit")))
    for name in ("start", "end"):
        try:
            equal = _times_equal(ref.get(name), act.get(name), anchor)
        except StepArgumentError as e:
            parts.append(f"{name}: {e}")
            continue
        if not equal:
            text = _differs(name, ref.get(name), act.get(name))
            if _is_relative(ref.get(name)) and not _is_relative(act.get(name)):
                text += f" (more than {TOLERANCE_SECONDS} s apart from the execution_timestamp)"
            elif _is_relative(act.get(name)) and not _is_relative(ref.get(name)):
                text += " (a relative time never matches an absolute reference time)"
            parts.append(text)
    return "; ".join(parts) or "the arguments differ"
