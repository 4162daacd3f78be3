"""Two JSON Lines results files compared in bounded memory: what ``compare_runs`` returns for the
runs read whole, from their columns (``compare.columns``: ids, error flags and each metric's
values in arrays) instead of every result's dict. The questions are paired as ``compare_runs``
pairs them (by ``question_id``, or by ``(template_id, question_id)`` when a run repeats an id),
each metric's pairs are made as ``compare.pairing.paired_values`` makes them, and the rows are
tested by the same code (``compare.rows``), so the numbers are the same to the last bit.

A run with repeated trials or judge repeats is not held in columns (its trials are merged and its
judge's variances read per result): :func:`compare_files` refuses it, and ``qa-eval compare``
reads such runs whole as before.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Iterable, Sequence
from typing import Any

from ..vocabulary.lookup import direction
from .columns import KINDS, RunColumns, Scanned, read_columns, scan_results
from .pairing import Groups, jsonable_id, no_pairs, zero_counts
from .rows import adjust_and_mark, metric_rows
from .runs import check_compare_options, method_of
from .signflip import alpha_of
from .values import ErrorMode

__all__ = ["compare_files"]

_OK, _MISSING = KINDS["ok"], KINDS["missing"]
_KIND_NAMES = {code: name for name, code in KINDS.items()}


def compare_files(
    a: Scanned | str | os.PathLike[str],
    b: Scanned | str | os.PathLike[str],
    *,
    metrics: Sequence[str] | None = None,
    resamples: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
    labels: tuple[str, str] = ("A", "B"),
    errors: ErrorMode = "fail",
    lower_better: Iterable[str] = (),
) -> dict[str, Any]:
    """``compare_runs`` of two JSON Lines results files (paths, or each read through once by
    ``columns.scan_results``), holding each run as columns; ``ValueError`` as ``compare_runs``
    gives it, and for a run with trials or judge repeats (compare it read whole)."""
    check_compare_options(resamples, confidence, errors)
    if not isinstance(a, Scanned):
        a = scan_results(a, "compare", str(labels[0]))
    if not isinstance(b, Scanned):
        b = scan_results(b, "compare", str(labels[1]))
    for scanned in (a, b):
        if scanned.whole:
            raise ValueError(f"{scanned.path}: a run with trials or judge repeats is read whole")
    lower_names = set(lower_better)
    available = a.metrics.merge(b.metrics).names()
    names, problem = _metric_names(available, metrics)
    columns = [read_columns(s.path, [] if problem else names) for s in (a, b)]
    by_template = any(len(set(c.ids)) != len(c.ids) for c in columns)
    index_a = _index(columns[0], labels[0], by_template)
    index_b = _index(columns[1], labels[1], by_template)
    common_a, common_b = array("q"), array("q")
    for key, position in index_a.items():
        other = index_b.get(key)
        if other is not None:
            common_a.append(position)
            common_b.append(other)
    sizes = len(index_a), len(index_b)
    del index_a, index_b
    if not common_a:
        raise ValueError(
            f"no question is in both runs ({labels[0]}: {sizes[0]} questions, "
            f"{labels[1]}: {sizes[1]}; paired by "
            f"{'template_id and question_id' if by_template else 'question_id'})"
        )
    if problem:
        raise ValueError(problem)
    paired = _Paired(columns, common_a, common_b, sizes, errors, labels)
    alpha = alpha_of(confidence)
    out_metrics: list[dict[str, Any]] = []
    for metric in names:
        way = "lower" if metric in lower_names else direction(metric)
        groups = paired.values(metric, way != "higher", errors == "fail")
        overall, per_template = metric_rows(
            metric, groups, None, way == "lower", resamples, confidence, seed
        )
        out_metrics.append(
            {"metric": metric, "direction": way, "overall": overall, "per_template": per_template}
        )
    adjust_and_mark(out_metrics, alpha)
    return {
        "labels": {"a": str(labels[0]), "b": str(labels[1])},
        "method": method_of(by_template, alpha, resamples, seed, confidence, errors),
        "questions": paired.questions,
        "templates": [jsonable_id(t) for t in paired.error_counts],
        "metrics": out_metrics,
    }


def _metric_names(available: list[str], metrics: Sequence[str] | None) -> tuple[list[str], str]:
    """The metrics to compare and "", or [] and the message ``compare_runs`` refuses them with
    (raised once the questions are paired, where ``compare_runs`` raises it)."""
    if metrics is not None:
        unknown = [m for m in metrics if m not in available]
        if unknown:
            return [], (
                f"unknown metric{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}"
                f"; the runs have: {', '.join(available) or 'no numeric metric'}"
            )
    names = list(dict.fromkeys(metrics)) if metrics is not None else available
    if not names:
        return [], "nothing to compare: the runs have no numeric metric"
    return names, ""


def _index(columns: RunColumns, name: str, by_template: bool) -> dict[Any, int]:
    """A run's positions by pair key; a key given twice is refused as ``compare_runs`` does."""
    keyed: dict[Any, int] = {}
    for position, qid in enumerate(columns.ids):
        key = (columns.template(position), qid) if by_template else qid
        if key in keyed:
            where = f"template {key[0]!r} " if by_template else ""
            raise ValueError(f"run {name}: {where}question {qid!r} appears more than once")
        keyed[key] = position
    return keyed


class _Paired:
    """The questions in both runs, counted as ``pairing.pair_questions`` counts them, and the
    positions of those compared (in A's order) with the group (template) of each."""

    def __init__(
        self,
        columns: Sequence[RunColumns],
        common_a: array[int],
        common_b: array[int],
        sizes: tuple[int, int],
        errors: ErrorMode,
        labels: Sequence[str],
    ) -> None:
        self.a, self.b = columns
        paired = len(common_a)
        self.questions = {
            "a": sizes[0],
            "b": sizes[1],
            "paired": paired,
            "only_a": sizes[0] - paired,
            "only_b": sizes[1] - paired,
            "errors_a": 0,
            "errors_b": 0,
            "excluded": 0,
            "template_mismatch": 0,
        }
        self.error_counts: dict[Any, list[int]] = {}
        groups: dict[Any, int] = {}
        self.used_a, self.used_b, self.used_group = array("q"), array("q"), array("q")
        errors_a, errors_b = self.a.errors, self.b.errors
        for i, j in zip(common_a, common_b):
            err_a, err_b = errors_a[i], errors_b[j]
            template = self.a.template(i)
            tally = self.error_counts.setdefault(template, [0, 0])
            group = groups.setdefault(template, len(groups))
            tally[0] += err_a
            tally[1] += err_b
            self.questions["errors_a"] += err_a
            self.questions["errors_b"] += err_b
            if template != self.b.template(j):
                self.questions["template_mismatch"] += 1
            if errors == "exclude" and (err_a or err_b):
                self.questions["excluded"] += 1
                continue
            self.used_a.append(i)
            self.used_b.append(j)
            self.used_group.append(group)
        if not self.used_a:
            raise ValueError(
                f"all {paired} paired questions are an error in {labels[0]} or {labels[1]}; "
                "without errors='exclude' (--exclude-errors) they count as failed answers"
            )

    def values(self, metric: str, lower: bool, fail: bool) -> Groups:
        """One metric's value pairs and counts per template (``pairing.paired_values``): with
        ``fail``, an error side of a higher-is-better metric is 0 when either side carries it."""
        groups: Groups = {
            t: (no_pairs(), zero_counts(*counts)) for t, counts in self.error_counts.items()
        }
        slots = list(groups.values())
        kinds_a, kinds_b = self.a.kinds[metric], self.b.kinds[metric]
        values_a, values_b = self.a.values[metric], self.b.values[metric]
        errors_a, errors_b = self.a.errors, self.b.errors
        zero_errors = fail and not lower
        for i, j, group in zip(self.used_a, self.used_b, self.used_group):
            pairs, counts = slots[group]
            counts["questions"] += 1
            kind_a, kind_b = kinds_a[i], kinds_b[j]
            if zero_errors and (kind_a != _MISSING or kind_b != _MISSING):
                if errors_a[i]:
                    kind_a, values_a_i = _OK, 0.0
                else:
                    values_a_i = values_a[i]
                if errors_b[j]:
                    kind_b, values_b_j = _OK, 0.0
                else:
                    values_b_j = values_b[j]
            else:
                values_a_i, values_b_j = values_a[i], values_b[j]
            if kind_a != _OK:
                counts[f"{_KIND_NAMES[kind_a]}_a"] += 1
            if kind_b != _OK:
                counts[f"{_KIND_NAMES[kind_b]}_b"] += 1
            if kind_a == _OK and kind_b == _OK:
                pairs[0].append(values_a_i)
                pairs[1].append(values_b_j)
        return groups
