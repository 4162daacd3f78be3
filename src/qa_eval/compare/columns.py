"""A JSON Lines results file read as columns, for comparing runs of a million results in bounded
memory: what ``compare_runs`` reads of each result (its ids, whether it is an error, and each
compared metric's value as ``values.value_of`` gives it) kept in arrays, a few bytes a result,
instead of every result's dict. The file is read twice, a line at a time: once to check it and
find its metrics (:func:`scan_results`), once to fill the columns (:func:`read_columns`).
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..aggregate import is_error
from ..io import kinds
from ..judge.repeats import MARKER
from ..metrics.agents.trials import TRIAL_KEY
from .values import MetricFinder, value_of

__all__ = ["KINDS", "RunColumns", "Scanned", "read_columns", "scan_results"]

KINDS = {"ok": 0, "missing": 1, "skipped": 2}
"""The code of each kind of value ``values.value_of`` tells apart, as a column holds it."""


@dataclass
class Scanned:
    """A results file read through once: checked as results, its metrics (``default_metrics``
    of the file), how many results it has and whether any has trials or judge repeats (which
    the columns do not hold: such a run is compared read whole)."""

    path: str
    metrics: MetricFinder
    count: int
    whole: bool
    """Some result has a ``trial`` or judge repeats: compare the run read whole."""


def scan_results(path: str | os.PathLike[str], command: str, label: str = "1") -> Scanned:
    """Read a JSON Lines results file once (see :class:`Scanned`); ``InputError`` as when it is
    read whole, for a file that is not results or a result of the wrong shape."""
    scanned = Scanned(str(path), MetricFinder(), 0, False)

    def each(result: dict[str, Any]) -> None:
        scanned.metrics.add(result, scanned.count, label)
        scanned.count += 1
        if TRIAL_KEY in result or MARKER in result:
            scanned.whole = True

    kinds.read_results_lines(path, command, each)
    return scanned


@dataclass
class RunColumns:
    """One run's results as columns, by position in the file."""

    ids: list[Any] = field(default_factory=list)
    """Each result's ``question_id``."""
    templates: array[int] = field(default_factory=lambda: array("q"))
    """Each result's template, as its index in :attr:`template_ids`."""
    template_ids: list[Any] = field(default_factory=list)
    """The distinct ``template_id`` values, in the order they first appear."""
    errors: bytearray = field(default_factory=bytearray)
    """1 where a result is an error (``aggregate.is_error``)."""
    values: dict[str, array[float]] = field(default_factory=dict)
    """Per metric, each result's value (``value_of``; NaN where it has none)."""
    kinds: dict[str, bytearray] = field(default_factory=dict)
    """Per metric, each result's kind of value (:data:`KINDS`)."""

    def template(self, position: int) -> Any:
        """The ``template_id`` of the result at ``position``."""
        return self.template_ids[self.templates[position]]


def read_columns(
    path: str | os.PathLike[str],
    metrics: Sequence[str],
    command: str = "compare",
    also: Callable[[int, dict[str, Any]], None] | None = None,
) -> RunColumns:
    """The columns of a results file for ``metrics`` (the file read once more, a line at a
    time); ``also(position, result)`` is called with each result too."""
    columns = RunColumns(
        values={m: array("d") for m in metrics}, kinds={m: bytearray() for m in metrics}
    )
    where: dict[Any, int] = {}
    kind_codes = KINDS

    def each(result: dict[str, Any]) -> None:
        if also is not None:
            also(len(columns.ids), result)
        columns.ids.append(result["question_id"])
        template = result.get("template_id")
        index = where.get(template)
        if index is None:
            index = where[template] = len(columns.template_ids)
            columns.template_ids.append(template)
        columns.templates.append(index)
        columns.errors.append(is_error(result))
        for metric in metrics:
            kind, value = value_of(result, metric)
            columns.values[metric].append(value)
            columns.kinds[metric].append(kind_codes[kind])

    kinds.read_results_lines(path, command, each)
    return columns
