"""Partial aggregates as plain JSON data, so a shard's part can be stored beside its results and
merged on another machine (``qa-eval merge``): :func:`to_data` and :func:`from_data`.

Every number keeps its type (ints and floats in arrays: base64 of little-endian 64-bit values;
other values as JSON, which keeps big ints, NaN and infinities); keys that JSON would turn into
text (template ids, tag values, trial keys) are written as lists. Nothing is evaluated on reading:
anything that is not what :func:`to_data` writes is a ``ValueError``.
"""

from __future__ import annotations

import base64
from array import array
from typing import Any

import numpy as np

from .compute import AggregateSpec
from .groups import Trials
from .partial import Column, Part, PartialAggregates

__all__ = ["FORMAT", "from_data", "to_data"]

FORMAT = "qa-eval partial aggregates 1"
_TYPES = {"q": "<i8", "d": "<f8"}


def _packed(values: array[Any]) -> str:
    return base64.b64encode(np.asarray(values, dtype=_TYPES[values.typecode]).tobytes()).decode()


def _unpacked(text: str, typecode: str) -> array[Any]:
    raw = np.frombuffer(base64.b64decode(text, validate=True), dtype=_TYPES[typecode])
    out = array(typecode)
    out.frombytes(raw.astype(raw.dtype.newbyteorder("=")).tobytes())
    return out


def to_data(partial: PartialAggregates) -> dict[str, Any]:
    """The partial aggregates as JSON-able data (its spec is not included: the reader gives it)."""
    return {
        "format": FORMAT,
        "results": partial.results,
        "templates": [_part(p) for p in partial.templates.values()],
        "tagged": {
            tag: [_part(p) for p in parts.values()] for tag, parts in partial.tagged.items()
        },
    }


def from_data(data: Any, spec: AggregateSpec) -> PartialAggregates:
    """Partial aggregates read back from :func:`to_data`'s data; ``ValueError`` for anything
    else."""
    try:
        if data.get("format") != FORMAT:
            raise ValueError(f"not {FORMAT!r} data")
        partial = PartialAggregates(spec)
        partial.results = _int(data["results"])
        for item in data["templates"]:
            part = _read_part(item)
            partial.templates[part.key] = part
        if set(data["tagged"]) != set(spec.tags):
            raise ValueError("aggregated by other tags")
        for tag, items in data["tagged"].items():
            for item in items:
                part = _read_part(item)
                partial.tagged[tag][part.key] = part
    except (KeyError, TypeError, AttributeError, IndexError, ValueError) as e:
        raise ValueError(
            f"not partial aggregates written by qa-eval ({type(e).__name__}: {e})"
        ) from None
    return partial


def _column(column: Column) -> dict[str, Any]:
    values = column.values
    if column.order is None:  # (PartialAggregates.in_order: a run's own, never written)
        raise ValueError("partial aggregates kept in order have no positions to write")
    out: dict[str, Any] = {
        "kind": values.typecode if isinstance(values, array) else "o",
        "values": _packed(values) if isinstance(values, array) else list(values),
        "order": _packed(column.order),
        "skipped": column.skipped,
        "failed": column.failed,
    }
    return out


def _read_column(item: dict[str, Any]) -> Column:
    kind = item["kind"]
    if kind in _TYPES:
        values: Any = _unpacked(item["values"], kind)
    elif kind == "o" and isinstance(item["values"], list):
        values = item["values"]
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            raise ValueError("a value that is not a number")
    else:
        raise ValueError(f"unknown kind {kind!r}")
    order = _unpacked(item["order"], "q")
    if len(order) != len(values):
        raise ValueError("values and positions differ in number")
    return Column(values, order, _int(item["skipped"]), _int(item["failed"]))


def _part(part: Part) -> dict[str, Any]:
    return {
        "key": [part.key],
        "first": part.first,
        "errors": part.errors,
        "successes": part.successes,
        "series": {metric: _column(column) for metric, column in part.series.items()},
        "steps": {
            counter: [[name, *held] for name, held in keyed.items()]
            for counter, keyed in part.steps.items()
        },
        "labels": [
            [key, first, rank, [[label, *held] for label, held in labels.items()]]
            for key, (labels, first, rank) in part.labels.items()
        ],
        "spreads": {
            metric: [[list(item) for item in items], _packed(order)]
            for metric, (items, order) in part.spreads.items()
        },
        "flips": part.flips,
        "trials": [
            [list(key), first, t.count, t.values, t.passing, t.alternatives]
            for key, (first, t) in part.trials.items()
        ],
    }


def _read_part(item: dict[str, Any]) -> Part:
    (key,) = item["key"]
    if isinstance(key, (list, dict)):
        raise ValueError("a group key that is not a scalar")
    part = Part(key, _int(item["first"]))
    part.errors, part.successes = _int(item["errors"]), _int(item["successes"])
    part.series = {str(m): _read_column(c) for m, c in item["series"].items()}
    part.steps = {
        str(counter): {str(name): [_int(c), _int(f), _int(r)] for name, c, f, r in rows}
        for counter, rows in item["steps"].items()
    }
    part.labels = {
        str(key): [
            {str(label): [_int(c), _int(f), _int(r)] for label, c, f, r in rows},
            _int(first),
            _int(rank),
        ]
        for key, first, rank, rows in item["labels"]
    }
    part.spreads = {
        str(metric): ([(v, _int(k)) for v, k in items], _unpacked(order, "q"))
        for metric, (items, order) in item["spreads"].items()
    }
    part.flips = {str(k): [_int(n), _int(f)] for k, (n, f) in item["flips"].items()}
    for key_items, first, count, values, passing, alternatives in item["trials"]:
        trials = Trials()
        trials.count = _int(count)
        trials.values = {str(m): list(v) for m, v in values.items()}
        trials.passing = {str(m): list(v) for m, v in passing.items()}
        trials.alternatives = list(alternatives)
        part.trials[tuple(key_items)] = (_int(first), trials)
    return part


def _int(value: Any) -> int:
    if type(value) is not int:
        raise ValueError(f"expected an integer, got {type(value).__name__}")
    return value
