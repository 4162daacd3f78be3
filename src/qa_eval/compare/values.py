"""What the runs' results hold: the metrics present in them and which way each is better, and the
value of one result for one metric (a step metric the mean over its steps; an error scored as
the errors mode says) with its judge's variance when it was scored with repeats.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from ..aggregate import (
    ALTERNATIVE_KEY,
    METRICS,
    STEP_METRICS,
    as_float,
    id_error,
    is_error,
    is_finite_number,
    is_number,
    mean_of,
)
from ..judge.repeats import MARKER, question_variance
from ..metrics.agents.trials import TRIAL_KEY
from ..vocabulary.lookup import direction

_ID_KEYS = frozenset({"template_id", "question_id", TRIAL_KEY, "trials", ALTERNATIVE_KEY})
"""Keys that are no metric: the ids, a result's trial, a merged question's trial count and which
acceptable trajectory was chosen (``trajectory_alternative``: a number that names, not measures)."""
_STEP_METRIC_NAMES = {m: step for step, names in STEP_METRICS.items() for m in names}
ErrorMode = Literal["fail", "exclude", "include"]


def lower_is_better(metric: str) -> bool:
    """Whether smaller values of ``metric`` are better (costs, tokens, times; the registry's
    ``direction``)."""
    return direction(metric) == "lower"


def default_metrics(*runs: Sequence[Mapping[str, Any]], labels: Sequence[str] = ()) -> list[str]:
    """The metrics present in any result: aggregate.METRICS, step metrics, other numeric keys.

    A step name that is not a string or a number (a list, ...) is an ``InputError`` naming the
    run (its label in ``labels``, else its position from 1), the result and the step."""
    finder = MetricFinder()
    for number, run in enumerate(runs):
        label = labels[number] if number < len(labels) else str(number + 1)
        for position, result in enumerate(run):
            finder.add(result, position, label)
    return finder.names()


class MetricFinder:
    """The metrics of results seen one at a time (:func:`default_metrics` of them)."""

    def __init__(self) -> None:
        self.found: set[str] = set()
        self.extra: dict[str, None] = {}

    def add(self, result: Mapping[str, Any], position: int, label: str) -> None:
        """Note the metrics of one result (``position`` and ``label`` name it in an error)."""
        for key, value in result.items():
            if key in _ID_KEYS or not is_number(value) or _judge_spread(result, key):
                continue
            self.found.add(key)
            if key not in _STEP_METRIC_NAMES and key not in METRICS:
                self.extra.setdefault(key, None)
        for index, step in enumerate(result.get("actual_steps") or ()):
            if not isinstance(step, Mapping):
                continue
            name: Any = step.get("name")
            try:
                step_metrics = STEP_METRICS.get(name)
            except TypeError:  # unhashable: a list, a mapping, ...
                field = f"actual_steps[{index}].name"
                raise id_error(result, position, field, name, label) from None
            if step_metrics:
                self.found.update(m for m in step_metrics if is_number(step.get(m)))

    def merge(self, other: MetricFinder) -> MetricFinder:
        """The metrics of these results and then ``other``'s, as one finder."""
        out = MetricFinder()
        out.found = self.found | other.found
        out.extra = {**self.extra, **other.extra}
        return out

    def names(self) -> list[str]:
        """The metrics found: the registry's in its order, then the others as they came."""
        known = [*METRICS, *_STEP_METRIC_NAMES]
        return [m for m in known if m in self.found] + list(self.extra)


def _judge_spread(result: Mapping[str, Any], key: str) -> bool:
    """Whether ``key`` is the count of repeats or the standard deviation of a repeated metric
    (``<metric>_sd``), not a metric."""
    if MARKER not in result:
        return False
    return key == MARKER or (key.endswith("_sd") and f"{key[:-3]}_repeats" in result)


def judge_variance(result: Mapping[str, Any], metric: str) -> tuple[float | None, int]:
    """(variance of one judge call, number of calls) of a question's value of ``metric``; an
    error scored as a failed answer has no judge noise (0 calls). A step metric is the mean of
    its steps."""
    if is_error(result):
        return 0.0, 0
    step_name = _STEP_METRIC_NAMES.get(metric)
    if step_name is None or metric in result:
        return question_variance(result, metric)
    parts = [
        question_variance(step, metric)
        for step in result.get("actual_steps") or ()
        if isinstance(step, Mapping)
        and step.get("name") == step_name
        and is_finite_number(step.get(metric))
    ]
    if not parts or any(v is None for v, _ in parts):
        return None, 1
    try:
        return math.fsum(v / k for v, k in parts) / len(parts) ** 2, 1  # type: ignore[operator]
    except OverflowError:  # variances that add up beyond the float range: not measured
        return None, 1


def value_of(result: Mapping[str, Any], metric: str) -> tuple[str, float]:
    """("ok", value), ("missing", nan) or ("skipped", nan) for one result and metric.

    A step metric (``retrieval_*``) is the mean of its finite values over the question's steps.
    A value beyond the float range (an int of more than 308 digits) is skipped like infinity."""
    step_name = _STEP_METRIC_NAMES.get(metric)
    if step_name is not None and metric not in result:
        values = [
            step[metric]
            for step in result.get("actual_steps") or ()
            if isinstance(step, Mapping) and step.get("name") == step_name and metric in step
        ]
        if not values:
            return "missing", math.nan
        finite = [f for v in values if (f := as_float(v)) is not None]
        if not finite:
            return "skipped", math.nan
        return "ok", mean_of(finite)  # type: ignore[return-value]  # floats have a float mean
    value = result.get(metric)
    if value is None:
        return "missing", math.nan
    number = as_float(value)
    if number is not None:
        return "ok", number
    return "skipped", math.nan


def side_values(
    ra: Mapping[str, Any],
    rb: Mapping[str, Any],
    metric: str,
    lower: bool,
    errors: ErrorMode,
) -> tuple[tuple[str, float], tuple[str, float]]:
    """The two sides' values for one question; with ``errors="fail"`` an error side of a
    higher-is-better metric is 0 when either side carries the metric."""
    value_a, value_b = value_of(ra, metric), value_of(rb, metric)
    if errors != "fail" or lower:
        return value_a, value_b
    if value_a[0] != "missing" or value_b[0] != "missing":
        if is_error(ra):
            value_a = ("ok", 0.0)
        if is_error(rb):
            value_b = ("ok", 0.0)
    return value_a, value_b
