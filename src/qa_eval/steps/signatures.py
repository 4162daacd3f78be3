"""Cheap signatures of the comparisons (``StepScorer.may_match``): tests that rule a candidate
step out before a full comparison, for the kinds compared by a text or by arguments.

Each says False only when the comparison certainly scores 0 (or finds a problem, which scores 0
too), reading what is cheap: the text of an output without parsing it, the arguments as the
comparison reads them (``steps.timeseries``'s rules for time series and data points). None
records a problem. ``tests/steps/test_may_match_kinds.py`` checks each against the comparison.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from .kinds import COMPARE_TIME_SERIES

__all__ = ["arguments_may_match", "iri_may_be_in", "json_may_be_in"]


def iri_may_be_in(iri: Any, output: Any) -> bool:
    """False when an IRI discovery reference's ``iri`` is surely not found in ``output``:
    there is no output (a problem), or a text without escapes does not hold it (``iri_excluded``'s
    first test: a result binding it, or a text holding it as a token, spells it out)."""
    if output is None:
        return False
    if type(output) is not str or type(iri) is not str or not iri:
        return True
    return "\\" in output or iri in output


def json_may_be_in(wanted: Any, text: str) -> bool:
    """False when the JSON text ``text`` surely does not parse to a value equal to ``wanted``:
    a text without escapes spells every string of its value as it is, between quotes, so it
    holds each string ``wanted`` holds (read here: ``wanted`` or its first few items)."""
    if "\\" in text:
        return True
    if type(wanted) is dict:
        values: Any = wanted.values()
    elif type(wanted) is list:
        values = wanted[:_FEW]
    else:
        values = (wanted,)
    for value in values:  # noqa: SIM110 (a generator in all() would be slower)
        if type(value) is str and f'"{value}"' not in text:
            return False
    return True


_FEW = 8


def arguments_may_match(kind: str, wanted: Any, act: Mapping[str, Any]) -> bool:
    """``may_match`` of a time series or data points reference (``steps.timeseries``'s rules)
    with arguments ``wanted`` against the actual step ``act``: ids (``mrid``,
    ``external_id``) and ``limit`` as the comparison compares them, data points' aggregates
    by their count and ``start`` / ``end`` by their instants when neither is relative. True
    unless both arguments are mappings (the comparison decides)."""
    got = act.get("args")
    if type(wanted) is not dict or type(got) is not dict:
        return True
    if kind == COMPARE_TIME_SERIES:
        ids = wanted.get("mrid")
        if not ids:  # (then the actual step has none, and the same limit)
            return got.get("mrid") is None and wanted.get("limit") == got.get("limit")
        limit = wanted.get("limit")
        if limit and limit != got.get("limit"):
            return False
        return _ids_may_equal(ids, got.get("mrid"))
    if not _ids_may_equal(wanted.get("external_id"), got.get("external_id")):
        return False  # (first: the usual difference of another question's step)
    if wanted.get("limit") != got.get("limit"):
        return False
    aggregates, other = wanted.get("aggregates"), got.get("aggregates")
    if type(aggregates) is list and type(other) is list and len(aggregates) != len(other):
        return False  # (sorted lists of different lengths)
    return _times_may_equal(wanted.get("start"), got.get("start")) and _times_may_equal(
        wanted.get("end"), got.get("end")
    )


def _ids_may_equal(wanted: Any, got: Any) -> bool:
    """False when ids ``wanted`` (a reference's) and ``got`` surely differ as sorted lists
    (a string counting as a list of one)."""
    if type(wanted) is str and wanted:
        if type(got) is str:
            return got == wanted
        if type(got) is list:
            return got == [wanted]
        return got is not None
    if type(wanted) is list and wanted:
        if type(got) is list:
            return len(got) == len(wanted)
        if type(got) is str:
            return len(wanted) == 1
        return got is not None
    return True


_RELATIVE_ENDS = ("now", "ago", "ahead")
"""How every relative time ends (``now``, ``<n><unit>-ago``, ``<n><unit>-ahead``)."""


def _times_may_equal(wanted: Any, got: Any) -> bool:
    """False when a reference time ``wanted`` and an actual time ``got`` surely differ: one
    is missing, or neither is relative and they differ as instants (or as values, when one is
    no time)."""
    if wanted is None or got is None:
        return wanted is got
    if wanted == got:
        return True
    for value in (wanted, got):
        if type(value) is not str or value.rstrip().endswith(_RELATIVE_ENDS):
            return True  # (maybe relative: the comparison decides)
    parse_instant = _parse_instant()
    instant = parse_instant(wanted)
    if instant is None:
        return False  # (compared as values: they differ)
    other = parse_instant(got)
    return other is not None and other == instant


@cache
def _parse_instant() -> Callable[[Any], Any]:
    """``steps.timeseries.parse_instant``, imported when first needed (a run without a data
    points step never loads that module)."""
    from .timeseries import parse_instant

    return parse_instant
