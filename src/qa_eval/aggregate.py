"""Aggregate per-question results: per template, micro (all questions), macro (mean of templates).

Definition (QA-evaluation README of graphrag-eval, "Aggregates Keys"): for each metric, ``sum``,
``mean``, ``median``, ``min`` and ``max`` over the questions that have a value; per template also
``number_of_error_samples`` / ``number_of_success_samples`` and the step counters ``total``,
``once_per_sample``, ``empty_results`` and ``errors`` per step name. ``macro`` is the mean of the
per-template means. The token and time metrics are always present (all zeros when no question has
them); other metrics only when some question has a value.

qa-eval adds ``n`` to every statistic: how many values it was computed from (``macro``: how many
templates). A value that is missing, not a number, NaN or infinite is left out instead of making
the statistic NaN; ``skipped`` counts the ones that were present but not finite numbers, and
``failed`` the questions (or steps) whose value could not be computed: they carry the metric's
error key (``answer_correctness_error`` for ``answer_f1``, ``retrieval_answer_recall_error`` for
``retrieval_answer_recall``, either of the recall and precision errors for an ``_f1``; a custom
output ``<name>_error``), from the registry's ``error_keys``. Both appear when not 0; a metric
every question failed has a block with ``n: 0`` and its ``failed``. As in the
original, ``steps_score`` of an error response (0.0) counts, tokens and time of an error response
are usually absent.

qa-eval also counts labels (``factual_accuracy_grade``, ``answer_class``: ``{counts, n}``) and
groups the questions by tags such as ``question_type`` (``per_tag``), with the same statistics.
For results scored with ``--repeats``, each metric block of a group also has the judge's own
noise beside the spread between questions (``judge_sd``, ``judge_se``, ``judge_n``, ``sd``) and the
group has ``label_flips`` (see ``judge.repeats``).

Pure functions over plain mappings; nothing here reads files or parses step outputs except to
confirm an empty SPARQL result, which a text scan finds first.
"""

from __future__ import annotations

import gc
import math
import os
import re
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any, TypeGuard, cast

from .errors import InputError, QaEvalError, short_repr
from .io.keysets import check_keys, original_aggregates
from .judge.repeats import MARKER, JudgeTally
from .metrics.agents.trials import TRIAL_KEY, consistency, passes, summarise
from .steps.outputs import OutputParseError, loads
from .vocabulary import lookup as _registry

__all__ = [
    "METRICS",
    "STEP_METRICS",
    "compute_aggregates",
    "describe",
    "empty_result",
    "is_error",
]

METRICS: tuple[str, ...] = _registry.aggregated_keys()
"""The result keys summarised (from the metric registry, ``vocabulary.registry``)."""
STEP_METRICS: dict[str, tuple[str, ...]] = _registry.step_keys()
"""The numeric keys written into actual steps, by step name, aggregated by name."""
SCORES: tuple[str, ...] = _registry.headline_keys()
"""The headline scores (0-1, higher is better), in the order of the summary and the report."""
ALWAYS_PRESENT = _registry.always_present_keys()
CATEGORIES: dict[str, tuple[str, ...]] = _registry.categories()
"""Labels counted per group, with the labels listed first (others follow as they appear)."""
STEP_ERRORS: dict[str, dict[str, tuple[str, ...]]] = {
    step: {
        error: tuple(m for m in names if error in _registry.error_keys(m))
        for error in dict.fromkeys(e for m in names for e in _registry.error_keys(m))
    }
    for step, names in STEP_METRICS.items()
}
"""Per step name: each error key written into such steps -> the step metrics it fails."""
DEFAULT_TAGS = ("question_type",)
_STEP_COUNTERS = ("total", "once_per_sample", "empty_results", "errors")
# After a "bindings" key: an empty array, or the start of something else.
_AFTER_BINDINGS_KEY = re.compile(r"\s*:\s*(\[\s*\])?")
_BINDINGS_KEY = '"bindings"'
_BINDINGS_KEY_LENGTH = len(_BINDINGS_KEY)
_JSON_SPACE = " \t\n\r"
_INF = math.inf
_INT_ONLY = {int}
_EXACT_INT = 2**53
"""Every int up to this size is a float exactly."""


def id_error(
    result: Mapping[str, Any], position: int, field: str, value: Any, run: str | None = None
) -> InputError:
    """The ``InputError`` for an id ``value`` of a result (its ``field``) that cannot key a
    group or a pair (a list, a mapping, ...): names the run (``run``), the result by position
    (and question id when it has a usable one) and the field."""
    record = f"result [{position}]"
    question = result.get("question_id")
    if field != "question_id" and isinstance(question, (str, int)):
        record += f" (question_id {short_repr(question)})"
    return InputError(
        f"must be a string or a number, got {type(value).__name__} {short_repr(value)}",
        source=None if run is None else f"run {run}",
        record=record,
        field=field,
    )


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


def _nearest_float(exact: Fraction) -> float | None:
    """The float nearest an exact value; None when it is beyond the float range."""
    try:
        return float(exact)
    except OverflowError:
        return None


def _exact_sum(values: list[int | float]) -> Fraction:
    return sum(map(Fraction, values), Fraction(0))


def _float_sum(values: list[int | float], kinds: set[type] | None = None) -> float | None:
    """The float nearest the exact sum of numbers that are not all ints (None beyond the float
    range): ``math.fsum`` when it is exact, else the sum of the exact fractions (``kinds``: the
    types of the values, when known)."""
    if kinds is None:
        kinds = set(map(type, values))
    if int not in kinds or all(-_EXACT_INT <= v <= _EXACT_INT for v in values if type(v) is int):
        try:
            return math.fsum(values)
        except OverflowError:  # a partial sum beyond the float range
            pass
    return _nearest_float(_exact_sum(values))


def _float_mean(total: float | None, values: list[int | float]) -> float | None:
    """``sum / n`` from the float sum of the values; when the sum is beyond the float range, the
    float nearest the exact mean (None when that is beyond it too)."""
    if total is not None:
        return total / len(values)
    return _nearest_float(_exact_sum(values) / len(values))


def mean_of(values: list[int | float]) -> float | None:
    """The mean of finite numbers (at least one) as a float, ``sum / n``, without overflow; None
    when it is beyond the float range (only ints of more than 308 digits can make it so)."""
    return _float_mean(_float_sum(values), values)


def _int_mean(total: int, n: int) -> int | float | None:
    """The mean of ints from their sum: an int when whole, else the nearest float (None beyond
    the float range), as ``statistics.mean`` types it and the original writes it."""
    if total % n == 0:
        return total // n
    try:
        return total / n
    except OverflowError:
        return None


def _median(ordered: list[int | float]) -> int | float | None:
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
    return _nearest_float((Fraction(low) + Fraction(high)) / 2)


def describe(
    values: list[int | float], skipped: int = 0, zeros: bool = False, failed: int = 0
) -> dict[str, Any]:
    """sum, mean, median, min, max and n of finite numbers (and ``skipped``, ``failed`` when not
    0). With none: sum 0 and the others null (no value has a mean), or all 0 with ``zeros`` (the
    token and time metrics, which the original writes as zeros). A statistic beyond the float
    range (a sum of floats past 1.8e308) is null; ints add up exactly."""
    return _describe(values, None, skipped, zeros, failed)


def _describe(
    values: list[int | float],
    ordered: list[int | float] | None,
    skipped: int,
    zeros: bool,
    failed: int,
) -> dict[str, Any]:
    """``describe``, given the values sorted (``ordered``; None: sorted here)."""
    n = len(values)
    if n == 0:
        empty = 0 if zeros else None
        stats: dict[str, Any] = {
            "sum": 0,
            "mean": empty,
            "median": empty,
            "min": empty,
            "max": empty,
            "n": 0,
        }
    else:
        if ordered is None:
            ordered = sorted(values)
        kinds = set(map(type, values))
        if kinds == _INT_ONLY:
            exact = cast(int, sum(values))
            total: int | float | None = exact
            mean = _int_mean(exact, n)
        else:
            total = _float_sum(values, kinds)
            mean = _float_mean(total, values)
        stats = {
            "sum": total,
            "mean": mean,
            "median": _median(ordered),
            "min": ordered[0],
            "max": ordered[-1],
            "n": n,
        }
    if skipped:
        stats["skipped"] = skipped
    if failed:
        stats["failed"] = failed
    return stats


class _Series:
    """One metric's values in a group. ``ordered``: the values sorted, once a summary has
    sorted them; ``runs`` (a series made by :meth:`_Group.merge`): the merged series' values,
    each series' sorted, one after the other, which sort faster than the values themselves and
    into the same list (the sort is stable, and the merged series come in the same order)."""

    __slots__ = ("failed", "ordered", "runs", "skipped", "values")

    def __init__(self) -> None:
        self.values: list[int | float] = []
        self.skipped = 0
        self.failed = 0
        self.ordered: list[int | float] | None = None
        self.runs: list[int | float] | None = None

    def sorted_values(self) -> list[int | float]:
        """The values sorted (kept in ``ordered``); from ``runs`` when they hold every value
        (values are only ever appended, so the lengths differ when any came another way)."""
        ordered = self.ordered
        if ordered is None or len(ordered) != len(self.values):
            runs = self.runs
            source = runs if runs is not None and len(runs) == len(self.values) else self.values
            ordered = self.ordered = sorted(source)
        return ordered

    def add(self, value: Any) -> None:
        kind = type(value)
        # int and float first (the usual values); comparisons with inf also rule out NaN.
        if kind is int or (kind is float and -_INF < value < _INF) or is_finite_number(value):
            self.values.append(value)
        elif value is not None:
            self.skipped += 1


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
    out: dict[str, list[str]] = {}
    for metric in metrics:
        errors = _registry.error_keys(metric)
        if not errors and custom is not None and metric in custom:
            errors = (f"{custom[metric]}_error",)
        for error in errors:
            out.setdefault(error, []).append(metric)
    return {error: tuple(names) for error, names in out.items()}


PASS_KEY = "trajectory_match"
"""The metric whose trials pass at 1 without being given a threshold (``--pass-threshold``)."""
ALTERNATIVE_KEY = "trajectory_alternative"
"""Which acceptable trajectory a trial chose: ``trajectory_consistency`` compares them."""


class _Trials:
    """One question's trials: each metric's values (for the mean over trials), and the values
    and choices pass@k, pass^k and the consistency are computed from."""

    __slots__ = ("alternatives", "count", "passing", "values")

    def __init__(self) -> None:
        self.count = 0
        self.values: dict[str, list[Any]] = {}
        self.passing: dict[str, list[Any]] = {}
        self.alternatives: list[Any] = []


class _Group:
    """Running totals for one template (or for all questions). Results with a ``trial`` are
    kept per question until :meth:`finish`, which adds one value per question and metric: the
    mean over its trials."""

    def __init__(
        self,
        failures: Mapping[str, tuple[str, ...]] | None = None,
        thresholds: Mapping[str, float] | None = None,
    ) -> None:
        self.failures = failures or {}
        self.thresholds = thresholds or {}
        self.trials: dict[tuple[Any, Any], _Trials] = {}
        self.errors = 0
        self.successes = 0
        self.series: dict[str, _Series] = {}
        self.steps: dict[str, dict[str, int]] = {c: {} for c in _STEP_COUNTERS}
        self.labels: dict[str, dict[str, int]] = {}
        self.judge = JudgeTally()

    def _series(self, metric: str) -> _Series:
        series = self.series.get(metric)
        if series is None:
            series = self.series[metric] = _Series()
        return series

    def add(self, result: Mapping[str, Any], metrics: frozenset[str]) -> None:
        """Count one result (``metrics``: the keys summarised)."""
        # Hot path (once per result and group): the _Series.add and is_error checks are inlined.
        status = result.get("status")
        if status == "error" if status is not None else "error" in result:
            self.errors += 1
        else:
            self.successes += 1
        if MARKER in result:  # JudgeTally.add counts only results scored with repeats
            self.judge.add(result, metrics)
        all_series = self.series
        failures = self.failures
        failed: set[str] | None = None
        trials = self._trials(result) if TRIAL_KEY in result else None
        for key in result:  # a result has fewer keys than there are metrics
            if key in metrics:
                value = result[key]
                if trials is not None:
                    trials.values.setdefault(key, []).append(value)
                    continue
                series = all_series.get(key)
                if series is None:
                    series = all_series[key] = _Series()
                kind = type(value)
                # int and float first (the usual values); comparisons with inf rule out NaN.
                if kind is int or (kind is float and -_INF < value < _INF):
                    series.values.append(value)
                else:
                    series.add(value)
            elif key in failures:
                if failed is None:
                    failed = set()
                failed.update(failures[key])
        if failed:
            for metric in failed:
                self._series(metric).failed += 1
        labels = self.labels
        for key, listed in CATEGORIES.items():
            label = result.get(key)
            if isinstance(label, str):
                counts = labels.get(key)
                if counts is None:
                    counts = labels[key] = dict.fromkeys(listed, 0)
                counts[label] = counts.get(label, 0) + 1
        steps = result.get("actual_steps")
        if not steps:
            return
        counters = self.steps
        total, once = counters["total"], counters["once_per_sample"]
        empty, errors = counters["empty_results"], counters["errors"]
        seen: set[str] = set()
        for step in steps:
            if not isinstance(step, dict):
                continue
            name = step.get("name")
            if type(name) is not str:
                name = str(name)
            total[name] = total.get(name, 0) + 1
            if name not in seen:
                seen.add(name)
                once[name] = once.get(name, 0) + 1
            if step.get("status") == "error":
                errors[name] = errors.get(name, 0) + 1
            elif empty_result(step.get("output")):
                empty[name] = empty.get(name, 0) + 1
            if name in STEP_METRICS:
                for metric in STEP_METRICS[name]:
                    if metric in step:
                        self._series(metric).add(step[metric])
                failed_step = {
                    metric
                    for error, names in STEP_ERRORS[name].items()
                    if error in step
                    for metric in names
                }
                for metric in failed_step:
                    self._series(metric).failed += 1

    def _trials(self, result: Mapping[str, Any]) -> _Trials:
        """The trials of the result's question (one more counted), keyed by template and id;
        the values pass@k is computed from and the trial's choice of trajectory noted."""
        key = (result.get("template_id"), result.get("question_id"))
        trials = self.trials.get(key)
        if trials is None:
            trials = self.trials[key] = _Trials()
        trials.count += 1
        trials.alternatives.append(result.get(ALTERNATIVE_KEY))
        for metric in (PASS_KEY, *self.thresholds):
            if metric in result:
                trials.passing.setdefault(metric, []).append(result[metric])
        return trials

    def finish(self) -> None:
        """Each question with trials gives one value per metric: the mean of its trials' finite
        values (the others are ``skipped``, once per trial)."""
        for trials in self.trials.values():
            for metric, values in trials.values.items():
                series = self._series(metric)
                # the usual trials: every value an int or a finite float, none to skip
                kept = [
                    v for v in values if type(v) is int or (type(v) is float and -_INF < v < _INF)
                ]
                if len(kept) != len(values):
                    finite = _Series()
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
        for metric in metrics:
            series = all_series.get(metric)
            # a custom output with only text values is not shown, even when some failed
            if series is not None and (
                series.values
                or (metric not in numeric_only and (series.skipped or series.failed))
                or (series.failed and not series.skipped)
            ):
                out[metric] = _describe(
                    series.values,
                    series.sorted_values(),
                    series.skipped,
                    metric in ALWAYS_PRESENT,
                    series.failed,
                )
            elif metric in ALWAYS_PRESENT:
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

    def merge(self, other: _Group) -> None:
        """Add another group's totals to this one."""
        self.errors += other.errors
        self.successes += other.successes
        self.judge.merge(other.judge)
        self.trials.update(other.trials)
        for metric, series in other.series.items():
            mine = self.series.get(metric)
            if mine is None:
                mine = self.series[metric] = _Series()
                mine.runs = []
            if mine.runs is not None:
                mine.runs.extend(series.sorted_values())
            mine.values.extend(series.values)
            mine.skipped += series.skipped
            mine.failed += series.failed
        for name, counts in other.steps.items():
            for key, count in counts.items():
                self.steps[name][key] = self.steps[name].get(key, 0) + count
        for key, counts in other.labels.items():
            mine_counts = self.labels.setdefault(key, dict.fromkeys(CATEGORIES[key], 0))
            for label, count in counts.items():
                mine_counts[label] = mine_counts.get(label, 0) + count


def check_thresholds(thresholds: Mapping[str, float] | None) -> dict[str, float]:
    """The pass thresholds as metric -> float; ``QaEvalError`` for a name that is not text or
    a value that is not a finite number."""
    out: dict[str, float] = {}
    for metric, value in (thresholds or {}).items():
        if not isinstance(metric, str) or not metric:
            raise QaEvalError(f"a pass threshold's metric must be a name, got {short_repr(metric)}")
        number = as_float(value)
        if number is None:
            raise QaEvalError(
                f"the pass threshold of {metric} must be a finite number, got {short_repr(value)}"
            )
        out[metric] = number
    return out


def custom_outputs(config: Any) -> dict[str, str]:
    """The output names of a config's custom metrics (a YAML path, a mapping or an
    EvalConfig), each with the name of its metric (whose ``<name>_error`` fails it)."""
    from .config import as_config

    if config is None:
        return {}
    return {name: m.name for m in as_config(config).custom_definitions for name in m.outputs}


def compute_aggregates(
    results: Iterable[Mapping[str, Any]],
    config_file_path: Any = None,
    by: Iterable[str] = DEFAULT_TAGS,
    *,
    extra_metrics: Iterable[str] = (),
    keys: str = "qa-eval",
    pass_thresholds: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """Aggregate per-question results into ``per_template``, ``micro`` and ``macro``, and
    ``per_tag`` for each key of ``by`` (e.g. ``question_type``) that some result has.

    ``config_file_path`` (the original's second argument: a YAML path, or a mapping or
    EvalConfig) adds its custom metrics' numeric outputs; a list of names adds those names.
    ``keys="graphrag-eval"``: only the keys graphrag-eval 6.6.1 writes (no ``n``, ``skipped``,
    ``failed``, ``per_tag``, costs; retrieval step metrics per template under ``steps``).

    Results with a ``trial`` (repeated trials of a question): each metric's statistics take one
    value per question, the mean over its trials, and each group gets ``trials``: pass@k and
    pass^k of ``trajectory_match`` and of each metric of ``pass_thresholds`` (metric -> the value
    a trial must reach), see ``qa_eval.metrics.agents.trials``."""
    original = check_keys(keys)
    thresholds = check_thresholds(pass_thresholds)
    if original:
        by = ()  # per_tag is not written: not computed either
    extra_metrics, custom = _extra_metrics(config_file_path, list(extra_metrics))
    registered = _registry.aggregated_keys()  # read now: the registry as it is at this call
    numeric_only = frozenset(extra_metrics) - frozenset(registered)
    step_metrics = [m for names in STEP_METRICS.values() for m in names]
    metrics = list(dict.fromkeys([*registered, *step_metrics, *extra_metrics]))
    # Aggregating allocates only acyclic data (groups, value lists, summary dicts), which
    # reference counting frees: the collector is paused meanwhile, as during a run
    # (run.execute.Collector), so that the allocations of thousands of groups do not set off
    # its full scans of every result held in memory (5,000 templates: ~2.5x less CPU). Only
    # for results already made (a list or a tuple): results made as they are read (a
    # generator, ``iter_evaluation``) may come from a long judged run, whose HTTP stack makes
    # cycles the collector must see meanwhile.
    collecting = gc.isenabled() and isinstance(results, (list, tuple))
    if collecting:
        gc.disable()
    try:
        out = _aggregates(
            results, list(dict.fromkeys(by)), metrics, numeric_only, thresholds, custom
        )
    finally:
        if collecting:
            gc.enable()
    if original:
        return original_aggregates(out, extra_metrics)
    return out


def _aggregates(
    results: Iterable[Mapping[str, Any]],
    tags: list[str],
    metrics: list[str],
    numeric_only: frozenset[str],
    thresholds: Mapping[str, float],
    custom: Mapping[str, str],
) -> dict[str, Any]:
    """``per_template``, ``micro``, ``macro`` and ``per_tag`` of the results (see
    ``compute_aggregates``)."""
    failures = failure_map(metrics, custom)
    templates, tagged = _grouped(results, tags, failures, frozenset(metrics), thresholds)
    overall = _Group(failures, thresholds)
    for group in [*templates.values(), *(g for groups in tagged.values() for g in groups.values())]:
        group.finish()
    # The templates' summaries first: they sort each series, and the merge reuses the sorts.
    per_template = {tid: group.summary(metrics, numeric_only) for tid, group in templates.items()}
    for group in templates.values():
        overall.merge(group)
    out: dict[str, Any] = {
        "per_template": per_template,
        "micro": overall.summary(metrics, numeric_only),
        "macro": _macro(per_template, metrics),
    }
    per_tag = {
        tag: {value: group.summary(metrics, numeric_only) for value, group in groups.items()}
        for tag, groups in tagged.items()
        if groups
    }
    if per_tag:
        out["per_tag"] = per_tag
    return out


def _extra_metrics(
    config_file_path: Any, extra_metrics: list[str]
) -> tuple[list[str], dict[str, str]]:
    """(the metrics aggregated besides the registry's, the custom outputs with their metric)
    from ``compute_aggregates``' second argument: a config, or a list of names."""
    if isinstance(config_file_path, (str, os.PathLike, Mapping)) or hasattr(
        config_file_path, "custom_metrics"
    ):
        custom = custom_outputs(config_file_path)
        return [*extra_metrics, *custom], custom
    if config_file_path is not None:
        return [*extra_metrics, *(str(m) for m in config_file_path)], {}
    return extra_metrics, {}


def _grouped(
    results: Iterable[Mapping[str, Any]],
    tags: list[str],
    failures: Mapping[str, tuple[str, ...]],
    metric_set: frozenset[str],
    thresholds: Mapping[str, float],
) -> tuple[dict[Any, _Group], dict[str, dict[Any, _Group]]]:
    """The results added up per template, and per value of each tag."""
    templates: dict[Any, _Group] = {}
    tagged: dict[str, dict[Any, _Group]] = {tag: {} for tag in tags}
    for position, result in enumerate(results):
        if not isinstance(result, dict):
            raise TypeError(f"result [{position}] must be a mapping, got {type(result).__name__}")
        template_id = result.get("template_id")
        try:
            group = templates.get(template_id)
        except TypeError:  # unhashable: a list, a mapping, ...
            raise id_error(result, position, "template_id", template_id) from None
        if group is None:
            group = templates[template_id] = _Group(failures, thresholds)
        group.add(result, metric_set)
        for tag in tags:
            value = result.get(tag)
            if value is None or isinstance(value, (dict, list)):
                continue
            groups = tagged[tag]
            try:
                known = value in groups
            except TypeError:  # an unhashable tag value (a set, ...) is no group, as a list
                continue
            if not known:
                groups[value] = _Group(failures, thresholds)
            groups[value].add(result, metric_set)
    return templates, tagged


def _macro(per_template: Mapping[Any, Mapping[str, Any]], metrics: list[str]) -> dict[str, Any]:
    """The mean of the per-template means of each metric, with how many templates have one (a
    mean beyond the float range, null, is not one)."""
    # Each template's blocks are gathered in one pass over its keys (a template has far fewer
    # than there are metrics), then read metric by metric as before.
    blocks: dict[str, list[Any]] = {metric: [] for metric in metrics}
    for summary in per_template.values():
        for key, block in summary.items():
            gathered = blocks.get(key)
            if gathered is not None:
                gathered.append(block)
    macro: dict[str, Any] = {}
    for metric in metrics:
        gathered = blocks[metric]
        means = [b["mean"] for b in gathered if b.get("n") and b["mean"] is not None]
        if means:
            macro[metric] = {"mean": describe(means)["mean"], "n": len(means)}
        elif metric in ALWAYS_PRESENT:
            macro[metric] = {"mean": 0, "n": 0}  # as the original writes it
        elif gathered:
            macro[metric] = {"mean": None, "n": 0}
    return macro
