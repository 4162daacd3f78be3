"""One group's running totals (a template, all questions, or one value of a tag): ``Group`` adds
results one at a time (the hot path of aggregating), keeps repeated trials per question, and
summarises; ``empty_result`` tells an empty SPARQL result among step outputs."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Mapping
from operator import is_, itemgetter
from typing import Any

from ..judge.repeats import MARKER, JudgeTally
from ..metrics.agents.trials import TRIAL_KEY, consistency, passes, summarise
from ..steps.outputs import OutputParseError, loads
from ..vocabulary import lookup as _registry
from .keys import ALWAYS_PRESENT, CATEGORIES, STEP_ERRORS, STEP_METRICS
from .stats import Series, as_float, describe, mean_of

_STEP_COUNTERS = ("total", "once_per_sample", "empty_results", "errors")
# After a "bindings" key: an empty array, or the start of something else.
_AFTER_BINDINGS_KEY = re.compile(r"\s*:\s*(\[\s*\])?")
_BINDINGS_KEY = '"bindings"'
_BINDINGS_KEY_LENGTH = len(_BINDINGS_KEY)
_JSON_SPACE = " \t\n\r"
_ROWS_FOLLOW = (
    *(f": [\n{' ' * spaces}{{" for spaces in (6, 4, 8, 2, 0, 10, 12, 14, 16)),
    ":[{",
    ": [{",
    ": [ {",
    " : [ {",
)
"""How a "bindings" key is followed by an array with a row in the usual layouts of SPARQL JSON
results (pretty-printed by ``json.dumps``, Jena, Virtuoso, RDF4J; compact): after such a key
the output is no empty result (see ``empty_result``)."""
_INF = math.inf
_NEG_INF = -math.inf  # (a constant: -_INF makes a new float each time)
_STEP_KEYS = {
    name: frozenset((*metrics, *STEP_ERRORS[name])) for name, metrics in STEP_METRICS.items()
}
"""Per step name with step metrics: the keys a step of the name is read for (metrics, errors)."""


def empty_result(output: Any) -> bool:
    """Whether a step output is a SPARQL JSON result with no rows.

    A text scan finds the first ``"bindings"`` key (skipping the name inside a string, where its
    quotes are escaped, and a variable named so, which no colon follows); only when an empty array
    follows it is the output parsed, to confirm. Other outputs are not parsed at all.
    """
    if not isinstance(output, str):
        return False
    # Only a JSON object can be a SPARQL result: an output whose first character (after JSON
    # whitespace) is not "{" parses to something else or not at all, so it is not scanned.
    first = output[:1]
    if first != "{" and (first not in _JSON_SPACE or output.lstrip(_JSON_SPACE)[:1] != "{"):
        return False
    start = output.find(_BINDINGS_KEY)
    while start != -1:
        if start == 0 or output[start - 1] != "\\":
            end = start + _BINDINGS_KEY_LENGTH
            # The usual layouts, '"bindings": [' and '"bindings":[', are decided by the first
            # character after the bracket that is not whitespace (the regular expression's \s,
            # as str.lstrip's); anything else (or a long run of whitespace) by the expression.
            if output.startswith(": [", end):
                ahead = output[end + 3 : end + 64].lstrip()[:1]
            elif output.startswith(":[", end):
                ahead = output[end + 2 : end + 64].lstrip()[:1]
            else:
                ahead = ""
            if ahead == "]":
                break
            if ahead:
                return False
            after = _AFTER_BINDINGS_KEY.match(output, end)
            if after is not None:
                if after.group(1) is None:
                    return False
                break
        start = output.find(_BINDINGS_KEY, start + 1)
    if start == -1:
        return False
    try:
        data = loads(output)
    except OutputParseError:
        return False
    results = data.get("results") if isinstance(data, dict) else None
    return isinstance(results, dict) and results.get("bindings") == []


def failure_map(
    metrics: Iterable[str], custom: Mapping[str, str] | None = None
) -> dict[str, tuple[str, ...]]:
    """Error key -> the result metrics (of ``metrics``) it fails: the registry's
    ``error_keys``, and for a custom output (``custom``: output -> metric name)
    ``<name>_error``."""
    metrics = tuple(metrics)
    asked = (metrics, tuple(custom.items()) if custom is not None else None)
    # (the registry's families, whose declarations are frozen: the same objects, the same map)
    families = tuple(_registry.METRICS.values())
    last = _last_failure_map[0]
    if (
        last is not None
        and last[0] == asked
        and len(last[1]) == len(families)
        and all(map(is_, last[1], families))
    ):
        return dict(last[2])
    out: dict[str, list[str]] = {}
    for metric in metrics:
        errors = _registry.error_keys(metric)
        if not errors and custom is not None and metric in custom:
            errors = (f"{custom[metric]}_error",)
        for error in errors:
            out.setdefault(error, []).append(metric)
    made = {error: tuple(names) for error, names in out.items()}
    _last_failure_map[0] = (asked, families, made)
    return dict(made)


_last_failure_map: list[Any] = [None]
"""The last map ``failure_map`` made, with what it was asked and the registry's families then
(each aggregation asks it, mostly the same: ~1,500 lookups of the registry each time)."""


PASS_KEY = "trajectory_match"
"""The metric whose trials pass at 1 without being given a threshold (``--pass-threshold``)."""
ALTERNATIVE_KEY = "trajectory_alternative"
"""Which acceptable trajectory a trial chose: ``trajectory_consistency`` compares them."""


class Trials:
    """One question's trials: each metric's values (for the mean over trials), and the values
    and choices pass@k, pass^k and the consistency are computed from (none of which depends
    on the order of the trials)."""

    __slots__ = ("alternatives", "count", "passing", "values")

    def __init__(self) -> None:
        self.count = 0
        self.values: dict[str, list[Any]] = {}
        self.passing: dict[str, list[Any]] = {}
        self.alternatives: list[Any] = []

    def extend(self, other: Trials) -> None:
        """Add the trials of another part of the results."""
        self.count += other.count
        for metric, values in other.values.items():
            self.values.setdefault(metric, []).extend(values)
        for metric, values in other.passing.items():
            self.passing.setdefault(metric, []).extend(values)
        self.alternatives.extend(other.alternatives)

    def copy(self) -> Trials:
        """A copy whose lists are its own."""
        copy = Trials()
        copy.extend(self)
        return copy


class Shape:
    """What ``Group.add`` reads of a result with these keys, in this order: the summarised keys
    it has, the metrics its error keys fail, its label keys, whether it carries judge repeats
    or a trial. Results mostly share a few key lists: each is read once per aggregation, not
    key by key for every result."""

    __slots__ = ("failed", "judged", "labels", "metrics", "other", "trial")

    def __init__(
        self, keys: tuple[str, ...], metrics: frozenset[str], failures: Mapping[str, Any]
    ) -> None:
        self.metrics = tuple(key for key in keys if key in metrics)
        failed: set[str] = set()
        for key in keys:  # the set built as it always was: the same order of its metrics
            if key not in metrics and key in failures:
                failed.update(failures[key])
        self.failed = tuple(failed)
        self.labels = tuple(key for key in CATEGORIES if key in keys)
        self.judged = MARKER in keys
        self.trial = TRIAL_KEY in keys
        self.other = bool(self.judged or self.trial or self.failed or self.labels)
        """Whether ``Group.add`` reads more than the summarised keys' values."""


@functools.lru_cache(maxsize=8)
def _positions(asked: tuple[str, ...]) -> dict[str, int]:
    """Each metric's first position among ``asked`` (only read: every summary of an
    aggregation asks the same metrics, so the answer is kept)."""
    positions: dict[str, int] = {}
    for position, metric in enumerate(asked):
        positions.setdefault(metric, position)
    return positions


_ALWAYS_PRESENT = frozenset(ALWAYS_PRESENT)

_Plan = tuple[Shape, Any, tuple[list[Any], ...], tuple[tuple[str, Any, Series], ...]]
"""How ``Group.add`` reads results of one key list (see ``Group._plan``)."""

_SHAPES = 4096
"""At most this many key lists are remembered per aggregation (results of any other shape are
read key by key)."""


class Group:
    """Running totals for one template (or for all questions). Results with a ``trial`` are
    kept per question until :meth:`finish`, which adds one value per question and metric: the
    mean over its trials."""

    def __init__(
        self,
        failures: Mapping[str, tuple[str, ...]] | None = None,
        thresholds: Mapping[str, float] | None = None,
        deferred: bool = False,
    ) -> None:
        self.failures = failures or {}
        self.deferred = deferred
        """Whether ``add`` appends a result's values to their series unchecked, each series
        checked once by :meth:`finish` (``Series.settle``); else checked one by one as they
        come (what a caller that reads the series between results needs)."""
        self.unchecked: list[Series] = []
        """The series that values were appended to unchecked."""
        self.rows: list[Any] = []
        """A deferred group's values of the last results, which share ``rows_plan``: a row of
        values (its ``getter``'s) a result, added to their series (:meth:`_flush`) when a
        result of another plan comes, a step metric is added, or the group is finished: the
        values come to each series in the order of the results, as when appended one by one."""
        self.rows_plan: _Plan | None = None
        self.thresholds = thresholds or {}
        self.trials: dict[tuple[Any, Any], Trials] = {}
        self.errors = 0
        self.successes = 0
        self.series: dict[str, Series] = {}
        self.steps: dict[str, dict[str, int]] = {c: {} for c in _STEP_COUNTERS}
        self.counters = tuple(self.steps.values())
        """The step counters, in the order of ``_STEP_COUNTERS`` (the dicts of ``steps``, which
        are changed in place, never replaced)."""
        self.labels: dict[str, dict[str, int]] = {}
        self.judge = JudgeTally()
        self.plans: dict[tuple[str, ...], _Plan] = {}
        """Per key list of the results added: how ``add`` reads them (see ``_plan``)."""

    def _series(self, metric: str) -> Series:
        series = self.series.get(metric)
        if series is None:
            series = self.series[metric] = Series()
        return series

    def add(
        self,
        result: Mapping[str, Any],
        metrics: frozenset[str],
        shapes: dict[tuple[str, ...], Shape] | None = None,
    ) -> None:
        """Count one result (``metrics``: the keys summarised; ``shapes``: what was read of
        the results' key lists so far, shared by the groups of one aggregation with these
        ``metrics``, see :class:`Shape`)."""
        # Hot path (once per result and group): the Series.add and is_error checks are inlined.
        status = result.get("status")
        if status == "error" if status is not None else "error" in result:
            self.errors += 1
        else:
            self.successes += 1
        keys = tuple(result)
        plan = self.plans.get(keys)
        if plan is None:
            plan = self._plan(keys, metrics, shapes)
        shape, getter, _, columns = plan
        if getter is not None:  # (a deferred group: the values as they are, in one C call)
            if plan is not self.rows_plan:
                self._flush(plan)
            self.rows.append(getter(result))
        for key, append, series in columns:
            value = result[key]
            kind = type(value)
            # int and float first (the usual values); comparisons with inf rule out NaN.
            if kind is int or (kind is float and _NEG_INF < value < _INF):
                append(value)
            else:
                series.add(value)
        if shape.other:
            self._add_other(result, shape, metrics)
        steps = result.get("actual_steps")
        if not steps:
            return
        total, once, empty, errors = self.counters
        seen: dict[str, None] = {}  # the names, in order of first appearance
        for step in steps:
            # (a type test first: cheaper than isinstance for the usual dict and str)
            if type(step) is not dict and not isinstance(step, dict):
                continue
            name = step.get("name")
            if type(name) is not str:
                name = str(name)
            total[name] = total.get(name, 0) + 1
            seen[name] = None
            if step.get("status") == "error":
                errors[name] = errors.get(name, 0) + 1
            else:
                output = step.get("output")
                # (only a text with a "bindings" key can be an empty SPARQL result: one C scan
                # rules the others out without the call; and a text whose first such key, not
                # escaped, has a row after it is not one: two more rule out the usual results)
                if (type(output) is str or isinstance(output, str)) and _BINDINGS_KEY in output:
                    at = output.find(_BINDINGS_KEY)
                    if (
                        not output.startswith(_ROWS_FOLLOW, at + _BINDINGS_KEY_LENGTH)
                        or (at and output[at - 1] == "\\")
                    ) and empty_result(output):
                        empty[name] = empty.get(name, 0) + 1
            # (a step of such a name mostly has none of their metric and error keys: one C test)
            if name in STEP_METRICS and not _STEP_KEYS[name].isdisjoint(step):
                for metric in STEP_METRICS[name]:
                    if metric in step:
                        if self.rows:  # (its values after those of the result's keys)
                            self._flush(self.rows_plan)
                        self._series(metric).add(step[metric])
                failed_step = {
                    metric
                    for error, names in STEP_ERRORS[name].items()
                    if error in step
                    for metric in names
                }
                for metric in failed_step:
                    self._series(metric).failed += 1
        for name in seen:
            once[name] = once.get(name, 0) + 1

    def _plan(
        self, keys: tuple[str, ...], metrics: frozenset[str], shapes: dict[Any, Shape] | None
    ) -> _Plan:
        """How ``add`` reads a result with these keys: its shape, and each of the shape's keys
        with the ``append`` of its series' values (and the series, unless deferred: see
        ``deferred``), the series made as the first result with the key came, in the order of
        its keys, as they always were; none for a trial."""
        shape = None if shapes is None else shapes.get(keys)
        if shape is None:
            shape = Shape(keys, metrics, self.failures)
            if shapes is not None and len(shapes) < _SHAPES:
                shapes[keys] = shape
        unchecked = []
        columns = []
        getter = None
        if not shape.trial:
            for key in shape.metrics:
                series = self._series(key)
                if self.deferred:
                    unchecked.append(series.values)
                    if series not in self.unchecked:
                        self.unchecked.append(series)
                else:
                    columns.append((key, series.values.append, series))
        if unchecked:
            getter = itemgetter(*shape.metrics)
        plan = (shape, getter, tuple(unchecked), tuple(columns))
        if len(self.plans) < _SHAPES:
            self.plans[keys] = plan
        return plan

    def _flush(self, plan: _Plan | None) -> None:
        """Add the values of ``rows`` to their series; the rows to come are of ``plan``."""
        rows = self.rows
        last = self.rows_plan
        if rows and last is not None:
            lists = last[2]
            if len(lists) == 1:  # (itemgetter of one key: the values themselves)
                lists[0].extend(rows)
            else:
                for values, column in zip(lists, zip(*rows)):
                    values.extend(column)
            rows.clear()
        self.rows_plan = plan

    def _add_other(self, result: Mapping[str, Any], shape: Shape, metrics: frozenset[str]) -> None:
        """What ``add`` counts of a result besides its values: judge repeats, a trial, the
        metrics its errors fail, its labels."""
        if shape.judged:  # JudgeTally.add counts only results scored with repeats
            self.judge.add(result, metrics)
        if shape.trial:
            trials = self._trials(result)
            for key in shape.metrics:
                trials.values.setdefault(key, []).append(result[key])
        for metric in shape.failed:
            self._series(metric).failed += 1
        if shape.labels:
            labels = self.labels
            for key in shape.labels:
                label = result[key]
                if isinstance(label, str):
                    counts = labels.get(key)
                    if counts is None:
                        counts = labels[key] = dict.fromkeys(CATEGORIES[key], 0)
                    counts[label] = counts.get(label, 0) + 1

    def _trials(self, result: Mapping[str, Any]) -> Trials:
        """The trials of the result's question (one more counted), keyed by template and id;
        the values pass@k is computed from and the trial's choice of trajectory noted."""
        key = (result.get("template_id"), result.get("question_id"))
        trials = self.trials.get(key)
        if trials is None:
            trials = self.trials[key] = Trials()
        trials.count += 1
        trials.alternatives.append(result.get(ALTERNATIVE_KEY))
        for metric in (PASS_KEY, *self.thresholds):
            if metric in result:
                trials.passing.setdefault(metric, []).append(result[metric])
        return trials

    def finish(self) -> None:
        """Each question with trials gives one value per metric: the mean of its trials' finite
        values (the others are ``skipped``, once per trial); the values added unchecked are checked
        first."""
        if self.rows:
            self._flush(None)
        for series in self.unchecked:  # (again after more were added: the same values)
            series.settle()
        for trials in self.trials.values():
            for metric, values in trials.values.items():
                series = self._series(metric)
                # the usual trials: every value an int or a finite float, none to skip
                kept = [
                    v for v in values if type(v) is int or (type(v) is float and -_INF < v < _INF)
                ]
                if len(kept) != len(values):
                    finite = Series()
                    for value in values:
                        finite.add(value)
                    series.skipped += finite.skipped
                    kept = finite.values
                mean = mean_of(kept) if kept else None
                if mean is not None:
                    series.values.append(mean)
            trials.values = {}

    def trials_block(self) -> dict[str, Any] | None:
        """pass@k and pass^k of ``trajectory_match`` and of each thresholded metric, the trials
        per question and the trajectory consistency; None without trials."""
        if not self.trials:
            return None
        counts = [t.count for t in self.trials.values()]
        block: dict[str, Any] = {
            "n_trials": {"min": min(counts), "max": max(counts)},
            "questions": len(counts),
        }
        thresholds = {PASS_KEY: 1.0, **self.thresholds}
        for metric, threshold in thresholds.items():
            pairs = []
            for trials in self.trials.values():
                values = trials.passing.get(metric) or []
                if any(as_float(v) is not None for v in values):
                    passed = sum(1 for v in values if passes(v, threshold))
                    pairs.append((trials.count, passed))
            if pairs:
                block[metric] = {"threshold": threshold, **summarise(pairs)}
        agreement = consistency(t.alternatives for t in self.trials.values())
        if agreement is not None:
            block["trajectory_consistency"] = agreement
        return block

    def summary(
        self, metrics: Iterable[str], numeric_only: frozenset[str] = frozenset()
    ) -> dict[str, Any]:
        """The group's statistics; a metric of ``numeric_only`` (custom outputs, which may be
        text such as a reason) is left out when none of its values is a number (unless it only
        failed: no value at all)."""
        out: dict[str, Any] = {
            "number_of_error_samples": self.errors,
            "number_of_success_samples": self.successes,
        }
        counters = {name: dict(counts) for name, counts in self.steps.items() if counts}
        if counters:
            out["steps"] = counters
        all_series = self.series
        # (only the metrics asked that it has a series of or that are always written, in the
        # order asked: a group has a few of the dozens of metrics)
        positions = _positions(tuple(metrics))
        shown = [metric for metric in all_series if metric in positions]
        shown += [m for m in _ALWAYS_PRESENT if m in positions and m not in all_series]
        shown.sort(key=positions.__getitem__)
        for metric in shown:
            series = all_series.get(metric)
            # a custom output with only text values is not shown, even when some failed
            if series is not None and (
                series.count()
                or (metric not in numeric_only and (series.skipped or series.failed))
                or (series.failed and not series.skipped)
            ):
                out[metric] = series.describe(metric in _ALWAYS_PRESENT)
            elif metric in _ALWAYS_PRESENT:
                out[metric] = describe([], zeros=True)
        for key, counts in self.labels.items():
            out[key] = {"counts": dict(counts), "n": sum(counts.values())}
        judge = self.judge
        if judge.spreads or judge.flips:  # annotate adds nothing without judge repeats
            judge.annotate(out, {m: s.values for m, s in self.series.items()})
        trials = self.trials_block()
        if trials is not None:
            out["trials"] = trials
        return out

    def merge(self, other: Group) -> None:
        """Add another group's totals to this one."""
        self.errors += other.errors
        self.successes += other.successes
        self.judge.merge(other.judge)
        self.trials.update(other.trials)
        for metric, series in other.series.items():
            mine = self.series.get(metric)
            if mine is None:
                mine = self.series[metric] = Series()
                mine.runs = []
                mine.kinds = set()
            if mine.runs is not None:
                mine.runs.extend(series.sorted_values())
            # (the types of both known: those of the merged values, not read again)
            kinds, theirs = mine.value_kinds(), series.value_kinds()
            mine.values.extend(series.values)
            if kinds is not None and theirs is not None:
                mine.kinds = kinds | theirs
                mine.typed = len(mine.values)
            mine.skipped += series.skipped
            mine.failed += series.failed
        for name, counts in other.steps.items():
            for key, count in counts.items():
                self.steps[name][key] = self.steps[name].get(key, 0) + count
        for key, counts in other.labels.items():
            mine_counts = self.labels.setdefault(key, dict.fromkeys(CATEGORIES[key], 0))
            for label, count in counts.items():
                mine_counts[label] = mine_counts.get(label, 0) + count
