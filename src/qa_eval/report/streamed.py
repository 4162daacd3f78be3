"""The report of JSON Lines results files in bounded memory: the page ``build_report`` makes of the
runs read whole, from each file read a few times a line at a time, keeping only what the page
shows.

- Each run's statistics are its partial aggregates (``aggregate.partial``: values in arrays),
  finished into what ``compute_aggregates`` gives; the histograms' values are arrays of doubles;
  the reference steps are counted as they pass.
- The questions are paired and put worst first from the runs' columns (``compare.columns``:
  ids, error flags, each metric's values), as ``report.questions`` pairs and orders them; only
  the first ones (``max_questions``, and the worse ones the verdict names) are read again whole,
  for the list and its drill-downs. The page says how many it left out of that list.
"""

from __future__ import annotations

import heapq
import os
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from itertools import compress
from pathlib import Path
from typing import Any

from ..aggregate import DEFAULT_TAGS
from ..aggregate.compute import AggregateSpec
from ..aggregate.partial import PartialAggregates
from ..compare.columns import KINDS, RunColumns, Scanned, read_columns
from ..io import kinds
from .model import (
    STEP_METRIC_OWNER,
    Metric,
    RunSummary,
    StepTally,
    Verdict,
    check_record,
    extra_metrics,
    headline_metrics,
    metric_list,
    signature_thresholds,
    stat_metrics,
    summary_of,
    values_of,
    verdict_of,
)
from .questions import QuestionRef, judge_question, ordering, question_ref
from .worth import MAX_TEMPLATE_ROWS

__all__ = ["report_of_files", "write_page"]

_OK = KINDS["ok"]
_TIE = 1e-12
_CHUNK = 4096
"""Results added to the partial aggregates at a time."""


def write_page(target: Path, pieces: Iterable[str]) -> None:
    """Write a page's pieces as they come into a file beside ``target``, then put it in its
    place: the page is never held whole, and a failure leaves no half-written page."""
    part = target.with_name(f".{target.name}.part")
    try:
        with open(part, "w", encoding="utf-8") as file:
            file.writelines(pieces)
        os.replace(part, target)
    finally:
        part.unlink(missing_ok=True)


def report_of_files(
    scans: Sequence[Scanned],
    labels: Sequence[str],
    signatures: Sequence[Mapping[str, Any] | None],
    comparison: Mapping[str, Any] | Verdict | None,
    title: str,
    *,
    max_questions: int | None,
    max_template_rows: int | None = MAX_TEMPLATE_ROWS,
) -> Iterator[str]:
    """The page ``build_report`` makes of JSON Lines results files (each read through once by
    ``columns.scan_results``; none with trials or judge repeats), in the pieces it is drawn in
    (:func:`write_page`; joined, the page's text), with the comparison of the first two
    (``compare_files``, or its ``verdict_of``) or None; at most ``max_template_rows`` rows of
    the per-template comparison (``verdict_of``; given a verdict, its own rows)."""
    from .render import MAX_LISTED, environment, page_pieces

    environment()  # the jinja2 extra, before any work
    if max_questions is not None and (isinstance(max_questions, bool) or max_questions < 0):
        raise ValueError(f"max_questions must be a number >= 0 or None, got {max_questions!r}")
    merged = scans[0].metrics
    for scanned in scans[1:]:
        merged = merged.merge(scanned.metrics)
    names = merged.names()
    if comparison is None or isinstance(comparison, Verdict):
        verdict = comparison
    else:
        verdict = verdict_of(comparison, max_template_rows)
    # each run's aggregates first, one run at a time (their arrays are the largest part), each
    # made into the run's summary at once (the aggregates' dicts are not kept), then every run's
    # columns: the two are never held together
    drafts = [_draft(s, label, sig) for s, label, sig in zip(scans, labels, signatures)]
    columns = [read_columns(s.path, names, "report") for s in scans]
    summaries = [_with_values(draft, column) for draft, column in zip(drafts, columns)]
    del drafts
    metrics = metric_list(summaries, verdict)
    if verdict is not None:
        by_template = verdict.paired_by == "template_id+question_id"
    else:
        by_template = len(columns) >= 2 and any(len(set(c.ids)) != len(c.ids) for c in columns)
    slots = _collect(columns, by_template)
    for column in columns:  # the ids are done with once the questions are numbered
        column.ids = []
    total = len(slots[0]) if slots else 0
    primary, fail = ordering(metrics, verdict)
    order = _Order(columns, slots, metrics, primary, verdict is not None, fail)
    shown = total if max_questions is None else min(max_questions, total)
    kept = order.first(min(total, max(shown, MAX_LISTED if verdict is not None else 0)))
    counts = (total, order.worse, order.better)
    positions = [[slot[n] for n in kept] for slot in slots]
    del order, columns, slots  # the columns are done with: freed before the page is drawn
    questions = _questions(scans, kept, positions)
    if verdict is not None:
        questions = [judge_question(q, metrics, fail) for q in questions]
    return page_pieces(
        title=title,
        runs=summaries,
        metrics=metrics,
        headline=headline_metrics(metrics),
        verdict=verdict,
        comparison_note="",
        questions=questions,
        shown=shown,
        max_questions=max_questions,
        counts=counts,
    )


_Part = tuple[dict[str, Any], StepTally, dict[str, "array[float]"]]
"""A run's aggregates, its reference steps counted and its step metrics' values."""
_Draft = tuple[RunSummary, list[str], dict[str, "array[float]"]]
"""A run's summary without its values, the metrics it has values of, its step values."""


def _aggregate_run(scanned: Scanned, label: str, signature: Mapping[str, Any] | None) -> _Part:
    """One run's aggregates (as ``summarize_run`` computes them), reference steps and step
    metrics' values (one per step), the file read once more and each result checked."""
    own = scanned.metrics.names()
    spec = AggregateSpec.of(
        None, DEFAULT_TAGS, extra_metrics(own), pass_thresholds=signature_thresholds(signature)
    )
    partial = PartialAggregates(spec)
    steps = StepTally()
    step_metrics = [m for m in own if m in STEP_METRIC_OWNER]
    step_values = {m: array("d") for m in step_metrics}
    chunk: list[dict[str, Any]] = []
    position = 0

    def each(result: dict[str, Any]) -> None:
        nonlocal position
        check_record(label, position, result)
        position += 1
        chunk.append(result)
        if len(chunk) >= _CHUNK:
            partial.add(chunk)
            chunk.clear()
        steps.add(result)
        for metric in step_metrics:
            if result.get("actual_steps"):
                step_values[metric].extend(values_of([result], metric))

    kinds.read_results_lines(scanned.path, "report", each)
    partial.add(chunk)
    return partial.finish(), steps, step_values


def _draft(scanned: Scanned, label: str, signature: Mapping[str, Any] | None) -> _Draft:
    """One run's summary (as ``summarize_run`` makes it) but for its question metrics' values,
    the metrics whose values it shows, and its step metrics' values."""
    aggregates, steps, step_values = _aggregate_run(scanned, label, signature)
    summary = summary_of(
        label,
        signature,
        aggregates,
        records=(),
        count=scanned.count,
        values={},
        steps=steps,
        repeats=None,
    )
    return summary, stat_metrics(aggregates), step_values


def _with_values(draft: _Draft, columns: RunColumns) -> RunSummary:
    """The run's summary with each metric's values: a step metric's from its steps, a question
    metric's from the columns (as ``values_of`` takes them, in order)."""
    summary, metrics, step_values = draft
    values: dict[str, Sequence[float]] = {}
    for metric in metrics:
        if metric in STEP_METRIC_OWNER:
            values[metric] = step_values.get(metric, array("d"))
        elif metric in columns.kinds:  # a question's value, as values_of takes it, in order
            ok = (kind == _OK for kind in columns.kinds[metric])
            values[metric] = array("d", compress(columns.values[metric], ok))
        else:  # no result has a number for it (else the scan had found it): no value
            values[metric] = array("d")
    return replace(summary, values=values)


def _collect(columns: Sequence[RunColumns], by_template: bool) -> list[array[int]]:
    """Per run, the position of each question's result (-1: none), the questions numbered in
    the order ``questions.collect_questions`` lists them (a question twice in one run: the
    second its own entry)."""
    slots: list[array[int]] = [array("q") for _ in columns]
    numbers: dict[Any, int] = {}

    def new() -> int:
        for slot in slots:
            slot.append(-1)
        return len(slots[0]) - 1

    for index, run in enumerate(columns):
        for position, qid in enumerate(run.ids):
            key = (run.template(position), qid) if by_template else qid
            number = numbers.get(key)
            if number is None:
                number = numbers[key] = new()
            elif slots[index][number] != -1:
                number = new()
            slots[index][number] = position
    return slots


class _Order:
    """The questions worst first, as ``questions.order_questions`` sorts them, from the columns;
    with two runs compared, how many got worse and better."""

    def __init__(
        self,
        columns: Sequence[RunColumns],
        slots: Sequence[Sequence[int]],
        metrics: Sequence[Metric],
        primary: Metric | None,
        two_runs: bool,
        fail: bool,
    ) -> None:
        self.columns, self.slots, self.primary = columns, slots, primary
        self.higher = [m.name for m in metrics if m.higher]
        self.two_runs, self.fail = two_runs, fail
        self.worse = self.better = 0

    def first(self, count: int) -> list[int]:
        """The numbers of the ``count`` worst questions, worst first (ties in list order)."""
        total = len(self.slots[0]) if self.slots else 0
        return [number for _, number in heapq.nsmallest(count, self._keys(total))]

    def _value(self, run: int, position: int, metric: str) -> float | None:
        column = self.columns[run]
        if position < 0 or column.kinds[metric][position] != _OK:
            return None
        return column.values[metric][position]

    def _paired(self, a: int, b: int, metric: str) -> tuple[float | None, float | None]:
        va, vb = self._value(0, a, metric), self._value(1, b, metric)
        if self.fail:
            if va is None and vb is not None and a >= 0 and self.columns[0].errors[a]:
                va = 0.0
            if vb is None and va is not None and b >= 0 and self.columns[1].errors[b]:
                vb = 0.0
        return va, vb

    def _keys(self, total: int) -> Iterator[tuple[tuple[Any, ...], int]]:
        primary = self.primary.name if self.primary else None
        for number in range(total):
            positions = [slot[number] for slot in self.slots]
            worse = new_error = False
            changes = 0
            if self.two_runs and positions[0] >= 0 and positions[1] >= 0:
                a, b = positions[0], positions[1]
                better = False
                for metric in self.higher:
                    va, vb = self._paired(a, b, metric)
                    if va is None or vb is None:
                        continue
                    if vb < va - _TIE:
                        changes += 1
                    elif vb > va + _TIE:
                        better = True
                new_error = bool(self.columns[1].errors[b]) and not self.columns[0].errors[a]
                worse = bool(changes) or new_error
                self.worse += worse
                self.better += better and not worse
            last = next(
                (r for r in reversed(range(2 if self.two_runs else 1)) if positions[r] >= 0), None
            )
            error = last is not None and bool(self.columns[last].errors[positions[last]])
            score = None
            if primary is not None and last is not None:
                score = self._value(last, positions[last], primary)
            if self.primary and self.primary.lower and score is not None:
                score = -score
            if worse:
                fall = 0.0
                if primary is not None:
                    va, vb = self._paired(positions[0], positions[1], primary)
                    fall = (va - vb) if va is not None and vb is not None else 0.0
                yield (0, not new_error, -fall, -changes, score is None, score or 0.0), number
            else:
                yield (1, not error, score is None, score or 0.0), number


def _questions(
    scans: Sequence[Scanned], kept: Sequence[int], positions: Sequence[Sequence[int]]
) -> list[QuestionRef]:
    """The kept questions (their numbers in the list order, and per run the position of each
    one's result, -1 for none), their results read again whole (each file once more)."""
    results = [
        _results_at(scanned.path, set(positions[index]) - {-1})
        for index, scanned in enumerate(scans)
    ]
    return [
        question_ref(
            number,
            number,
            [
                found.get(where[row]) if where[row] >= 0 else None
                for found, where in zip(results, positions)
            ],
        )
        for row, number in enumerate(kept)
    ]


def _results_at(path: str, wanted: set[int]) -> dict[int, dict[str, Any]]:
    """The results of a file at the positions ``wanted``."""
    found: dict[int, dict[str, Any]] = {}
    position = 0

    def each(result: dict[str, Any]) -> None:
        nonlocal position
        if position in wanted:
            found[position] = result
        position += 1

    kinds.read_results_lines(path, "report", each)
    return found
