"""Repeated trials made one result per question: each metric the mean over the question's trials,
an error only when every trial is, so that a question stays one pair of the paired test.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..aggregate import is_error, mean_of
from ..metrics.agents.trials import TRIAL_KEY
from .values import ErrorMode, value_of


def collapse_trials(
    run: Sequence[Mapping[str, Any]], ways: Mapping[str, str], errors: ErrorMode = "fail"
) -> Sequence[Mapping[str, Any]]:
    """The run with each question's trials (results with a ``trial``) made one result: each
    metric of ``ways`` (metric -> direction) the mean over the trials with a finite value
    (``errors="fail"``: an error trial is 0 on a higher-is-better metric some trial carries;
    ``"exclude"``: error trials are left out), an error only when every trial is. Results
    without a trial stay as they are; a run without trials is returned itself."""
    if not any(isinstance(r, Mapping) and TRIAL_KEY in r for r in run):
        return run
    order: list[Any] = []
    grouped: dict[Any, list[Mapping[str, Any]]] = {}
    for result in run:
        if not isinstance(result, Mapping) or TRIAL_KEY not in result:
            order.append(result)
            continue
        key = (result.get("template_id"), result.get("question_id"))
        try:
            trials = grouped.get(key)
        except TypeError:  # an unhashable id: reported as for any result
            order.append(result)
            continue
        if trials is None:
            trials = grouped[key] = []
            order.append(key)
        trials.append(result)
    out: list[Mapping[str, Any]] = []
    for item in order:
        if isinstance(item, tuple) and item in grouped:
            out.append(_merged(grouped[item], ways, errors))
        else:
            out.append(item)
    return out


def _merged(
    trials: Sequence[Mapping[str, Any]], ways: Mapping[str, str], errors: ErrorMode
) -> dict[str, Any]:
    """One question's trials as one result (see :func:`collapse_trials`)."""
    first = trials[0]
    failed = [is_error(t) for t in trials]
    merged: dict[str, Any] = {
        "template_id": first.get("template_id"),
        "question_id": first.get("question_id"),
        "status": "error" if all(failed) else "success",
        "trials": len(trials),
    }
    for metric, way in ways.items():
        values = [value_of(t, metric) for t in trials]
        carried = any(kind != "missing" for kind, _ in values)
        kept: list[float] = []
        skipped = False
        for (kind, value), error in zip(values, failed):
            if error and errors == "exclude" and not all(failed):
                continue
            if error and errors == "fail" and way == "higher" and carried:
                kept.append(0.0)
            elif kind == "ok":
                kept.append(value)
            elif kind == "skipped":
                skipped = True
        if kept:
            merged[metric] = mean_of(kept)
        elif skipped:
            merged[metric] = math.nan
    return merged
