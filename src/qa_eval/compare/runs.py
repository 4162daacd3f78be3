"""Compare two runs question by question: paired sign-flip permutation tests, Holm-adjusted.

Method (paired design; the one-sample permutation test of Fisher 1935, *The Design of
Experiments*, §21, in its Monte Carlo form per Phipson & Smyth 2010, *Stat. Appl. Genet. Mol.
Biol.* 9(1):39; interval by test inversion, Lehmann & Romano 2005, *Testing Statistical
Hypotheses*, §3.5; multiplicity by Holm 1979, *Scand. J. Statist.* 6:65-70):

- The two runs are paired by question: by ``question_id`` (unique in a reference dataset), or by
  ``(template_id, question_id)`` when a run repeats a question id across templates. For a metric,
  a pair counts when both results carry a finite number; ``d_i = B_i - A_i``.
- ``delta`` is the mean of ``d`` (= mean B - mean A over the same questions).
- p-value (two-sided, "mean difference = 0"): under the null each ``d_i`` is as likely to be
  ``-d_i`` (A and B exchangeable within a question), so the statistic ``|sum d_i|`` is compared
  with ``|sum s_i d_i|`` over sign vectors ``s``: all ``2**n`` of them when ``n <= 16`` (exact),
  else ``resamples`` random ones plus the observed one, ``p = (1 + #extreme) / (resamples + 1)``.
  Ties up to rounding (``1e-9`` times the largest ``|d_i|``) count as extreme; differences
  within ``1e-12`` count as 0.
- Confidence interval: every shift ``theta`` that the same test, applied to ``d - theta``, does
  not reject at ``alpha = 1 - confidence`` (an interval, so it contains 0 exactly when
  ``p >= alpha``); when no ``theta`` can be rejected (small ``n``) it is unbounded (``None``).
- Holm's step-down adjustment over a family of rows: the overall rows (one per metric) are one
  family, the per-template rows (metrics x templates) another. A row is ``testable`` when some
  outcome of ``n`` pairs could reach ``p < alpha`` (``2**(1 - n) < alpha`` when exact); other
  rows cannot be rejected and are left out of the family (``p_adjusted`` None).
- ``better`` is ``"a"`` or ``"b"`` exactly when ``p_adjusted < alpha``: the run the delta favours
  in the metric's direction, as the metric registry declares it (``qa_eval.metrics.direction``:
  "lower is better" for costs, tokens and times; ``none`` for counts such as the claim counts,
  which get a delta and a p-value but no ``better``).
- wins / losses / ties count the questions where B is better / worse / equal (``|d| <= 1e-12``).
- Repeated trials (results with a ``trial``): each side's value of a question is the mean over
  its trials (an error trial counts as the errors mode says: 0, left out, or its own values), so
  a question is still one pair and the questions stay independent: the test's exchangeability
  holds for the means as it does for single values. A question is an error only when every
  trial is; judge noise (``--repeats``) is not estimated through trial means.

Errors (``errors=``): ``"fail"`` (default) scores an error result as a failed answer, 0 on every
higher-is-better metric, and keeps the values it carries for the others (tokens, cost, time,
counts); ``"exclude"`` leaves out questions that are an error in either run; ``"include"`` uses the
values error results carry. Every row counts the errors among its questions (``errors_a``,
``errors_b``). When either run was scored with ``--repeats``, a row of a judged metric also has
``judge_se`` (the standard error of ``delta`` that the judge's own noise causes) and
``within_judge_noise`` (``|delta| < 2 judge_se``; see ``judge.repeats``). Everything returned
is plain JSON data (dicts, lists, str, int, float, bool, None).

The test itself is ``compare.signflip``; the console table and the report's rows are
``compare.table``.
"""

from __future__ import annotations

import math
import sys
import zlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import numpy as np

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
from ..judge.repeats import MARKER, judge_noise, question_variance, within_noise
from ..metrics.agents.trials import TRIAL_KEY
from ..vocabulary.lookup import direction
from .signflip import (
    EXACT_MAX_N,
    TIE_TOLERANCE,
    alpha_of,
    check_options,
    sign_flip_test,
    smallest_p,
)

__all__ = ["collapse_trials", "compare_runs", "default_metrics", "holm", "lower_is_better"]

_ID_KEYS = frozenset({"template_id", "question_id", TRIAL_KEY, "trials", ALTERNATIVE_KEY})
"""Keys that are no metric: the ids, a result's trial, a merged question's trial count and which
acceptable trajectory was chosen (``trajectory_alternative``: a number that names, not measures)."""
_STEP_METRIC_NAMES = {m: step for step, names in STEP_METRICS.items() for m in names}
ErrorMode = Literal["fail", "exclude", "include"]
_ERROR_MODES = ("fail", "exclude", "include")


def lower_is_better(metric: str) -> bool:
    """Whether smaller values of ``metric`` are better (costs, tokens, times; the registry's
    ``direction``)."""
    return direction(metric) == "lower"


def default_metrics(*runs: Sequence[Mapping[str, Any]], labels: Sequence[str] = ()) -> list[str]:
    """The metrics present in any result: aggregate.METRICS, step metrics, other numeric keys.

    A step name that is not a string or a number (a list, ...) is an ``InputError`` naming the
    run (its label in ``labels``, else its position from 1), the result and the step."""
    known = [*METRICS, *_STEP_METRIC_NAMES]
    found: set[str] = set()
    extra: dict[str, None] = {}
    for number, run in enumerate(runs):
        for position, result in enumerate(run):
            for key, value in result.items():
                if key in _ID_KEYS or not is_number(value) or _judge_spread(result, key):
                    continue
                found.add(key)
                if key not in _STEP_METRIC_NAMES and key not in METRICS:
                    extra.setdefault(key, None)
            for index, step in enumerate(result.get("actual_steps") or ()):
                if not isinstance(step, Mapping):
                    continue
                name: Any = step.get("name")
                try:
                    step_metrics = STEP_METRICS.get(name)
                except TypeError:  # unhashable: a list, a mapping, ...
                    label = labels[number] if number < len(labels) else str(number + 1)
                    field = f"actual_steps[{index}].name"
                    raise id_error(result, position, field, name, label) from None
                if step_metrics:
                    found.update(m for m in step_metrics if is_number(step.get(m)))
    return [m for m in known if m in found] + list(extra)


def _judge_spread(result: Mapping[str, Any], key: str) -> bool:
    """Whether ``key`` is the count of repeats or the standard deviation of a repeated metric
    (``<metric>_sd``), not a metric."""
    if MARKER not in result:
        return False
    return key == MARKER or (key.endswith("_sd") and f"{key[:-3]}_repeats" in result)


def _judge_variance(result: Mapping[str, Any], metric: str) -> tuple[float | None, int]:
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


def _value(result: Mapping[str, Any], metric: str) -> tuple[str, float]:
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


def _index(run: Sequence[Mapping[str, Any]], name: str, by_template: bool) -> dict[Any, Any]:
    """One run's results by pair key; refuses a result that is not a mapping, has no id or
    repeats one."""
    keyed: dict[Any, Any] = {}
    for position, result in enumerate(run):
        if not isinstance(result, Mapping):
            kind = type(result).__name__
            raise TypeError(f"run {name}: result [{position}] must be a mapping, got {kind}")
        if result.get("question_id") is None:
            raise ValueError(f"run {name}: result [{position}] has no question_id")
        qid = result["question_id"]
        template = result.get("template_id")
        for field, value in (("question_id", qid), ("template_id", template)):
            try:
                hash(value)  # both key pairs and per-template groups
            except TypeError:  # unhashable: a list, a mapping, ...
                raise id_error(result, position, field, value, name) from None
        key = (template, qid) if by_template else qid
        if key in keyed:
            where = f"template {key[0]!r} " if by_template else ""
            raise ValueError(f"run {name}: {where}question {qid!r} appears more than once")
        keyed[key] = result
    return keyed


def _pair_key_mode(
    a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]], labels: Sequence[str]
) -> bool:
    """True when pairs need (template_id, question_id): some run repeats a question id."""
    for run, label in zip((a, b), labels):
        ids = [r.get("question_id") for r in run if isinstance(r, Mapping)]
        try:
            distinct = len(set(ids))
        except TypeError:  # an unhashable id (a list, a mapping, ...): say which
            for position, result in enumerate(run):
                qid = result.get("question_id") if isinstance(result, Mapping) else None
                try:
                    hash(qid)
                except TypeError:
                    raise id_error(result, position, "question_id", qid, label) from None
            raise
        if distinct != len(ids):
            return True
    return False


def _rng(seed: int, metric: str, template: Any) -> np.random.Generator:
    """A generator per (seed, metric, template): a row does not depend on which others exist."""
    tag = zlib.crc32(f"{metric}\x00{template!r}".encode())
    return np.random.default_rng([seed, tag])


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values of one family, in the order given (None stays None
    and is not part of the family)."""
    tested = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    adjusted: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(tested):
        running = max(running, min(1.0, (len(tested) - rank) * p))
        adjusted[i] = running
    return adjusted


def _holm(rows: Sequence[dict[str, Any]]) -> None:
    """Set ``p_adjusted`` (Holm's step-down) on the testable rows of one family, in place."""
    tested = [r for r in rows if r["testable"] and r["p_value"] is not None]
    for row, adjusted in zip(tested, holm([r["p_value"] for r in tested])):
        row["p_adjusted"] = adjusted


def _stats(
    pairs: list[tuple[float, float]],
    counts: dict[str, int],
    lower: bool,
    resamples: int,
    confidence: float,
    rng: np.random.Generator,
) -> dict[str, Any]:
    """One row: the means, delta, wins / losses / ties, p-value and interval of the pairs."""
    n = len(pairs)
    row: dict[str, Any] = {
        "n": n,
        "mean_a": None,
        "mean_b": None,
        "delta": None,
        "ci_low": None,
        "ci_high": None,
        "p_value": None,
        "p_adjusted": None,
        "better": None,
        "testable": smallest_p(n, resamples) < alpha_of(confidence),
        "wins": 0,
        "losses": 0,
        "ties": 0,
        **counts,
    }
    if n == 0:
        return row
    row["mean_a"] = mean_of([p[0] for p in pairs])
    row["mean_b"] = mean_of([p[1] for p in pairs])
    scale = _scale(pairs)
    deltas = np.array([y * scale - x * scale for x, y in pairs])
    row["delta"] = _unscaled(math.fsum(deltas.tolist()) / n, scale)
    improved = -deltas if lower else deltas
    row["wins"] = int(np.count_nonzero(improved > TIE_TOLERANCE))
    row["losses"] = int(np.count_nonzero(improved < -TIE_TOLERANCE))
    row["ties"] = n - row["wins"] - row["losses"]
    p_value, ci_low, ci_high = sign_flip_test(
        deltas, confidence=confidence, resamples=resamples, rng=rng
    )
    row["p_value"] = p_value
    ci_low, ci_high = _unscaled(ci_low, scale), _unscaled(ci_high, scale)
    if ci_low is not None and ci_high is not None and row["delta"] is not None:
        row["ci_low"] = min(ci_low, row["delta"])
        row["ci_high"] = max(ci_high, row["delta"])
    return row


def _scale(pairs: list[tuple[float, float]]) -> float:
    """A power of two that keeps every sum of the pairs' differences within the float range:
    1 unless the values are near it (the test's p-value does not change with the scale, and
    scaling by a power of two is exact)."""
    largest = max(max(abs(x), abs(y)) for x, y in pairs)
    room = sys.float_info.max / (4 * len(pairs))
    if largest <= room:
        return 1.0
    return 2.0 ** -math.ceil(math.log2(largest / room))


def _unscaled(value: float | None, scale: float) -> float | None:
    """A delta or a bound computed on differences times ``scale``, at the values' own scale;
    None when that is beyond the float range."""
    if value is None or scale == 1.0:
        return value
    value /= scale
    return value if math.isfinite(value) else None


def _mark(row: dict[str, Any], lower: bool, alpha: float) -> None:
    """Set ``better`` on a row whose adjusted p is below ``alpha``, in place."""
    adjusted = row["p_adjusted"]
    if adjusted is not None and adjusted < alpha and row["delta"]:
        row["better"] = "b" if (row["delta"] > 0) != lower else "a"


def _jsonable_id(value: Any) -> Any:
    """An id as JSON can hold it: scalars as they are, anything else as its text."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _values(
    ra: Mapping[str, Any],
    rb: Mapping[str, Any],
    metric: str,
    lower: bool,
    errors: ErrorMode,
) -> tuple[tuple[str, float], tuple[str, float]]:
    """The two sides' values for one question; with ``errors="fail"`` an error side of a
    higher-is-better metric is 0 when either side carries the metric."""
    value_a, value_b = _value(ra, metric), _value(rb, metric)
    if errors != "fail" or lower:
        return value_a, value_b
    if value_a[0] != "missing" or value_b[0] != "missing":
        if is_error(ra):
            value_a = ("ok", 0.0)
        if is_error(rb):
            value_b = ("ok", 0.0)
    return value_a, value_b


def compare_runs(
    a: Sequence[Mapping[str, Any]],
    b: Sequence[Mapping[str, Any]],
    *,
    metrics: Sequence[str] | None = None,
    resamples: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
    labels: tuple[str, str] = ("A", "B"),
    errors: ErrorMode = "fail",
    lower_better: Iterable[str] = (),
) -> dict[str, Any]:
    """Compare run B with run A on the questions both answered; JSON-ready dict (see docs)."""
    check_options(resamples, confidence)
    if errors not in _ERROR_MODES:
        raise ValueError(f"errors must be 'fail', 'exclude' or 'include', got {errors!r}")
    lower_names = set(lower_better)
    if any(isinstance(r, Mapping) and TRIAL_KEY in r for run in (a, b) for r in run):
        wanted = default_metrics(a, b, labels=labels) if metrics is None else metrics
        ways = {m: "lower" if m in lower_names else direction(m) for m in wanted}
        a, b = collapse_trials(a, ways, errors), collapse_trials(b, ways, errors)
    by_template = _pair_key_mode(a, b, labels)
    index_a = _index(a, labels[0], by_template)
    index_b = _index(b, labels[1], by_template)
    common = _common_keys(index_a, index_b, labels, by_template)
    names = _metric_names(a, b, metrics, labels)
    questions, used, error_counts = _pair_questions(index_a, index_b, common, errors, labels)
    alpha = alpha_of(confidence)
    repeated = any(MARKER in r for _, ra, rb in used for r in (ra, rb))
    out_metrics: list[dict[str, Any]] = []
    for metric in names:
        way = "lower" if metric in lower_names else direction(metric)
        groups, noise = _paired_values(metric, way, used, error_counts, errors, repeated)
        overall, per_template = _metric_rows(
            metric, groups, noise if repeated else None, way == "lower", resamples, confidence, seed
        )
        out_metrics.append(
            {
                "metric": metric,
                "direction": way,
                "overall": overall,
                "per_template": per_template,
            }
        )
    _adjust_and_mark(out_metrics, alpha)
    return {
        "labels": {"a": str(labels[0]), "b": str(labels[1])},
        "method": _method(by_template, alpha, resamples, seed, confidence, errors),
        "questions": questions,
        "templates": [_jsonable_id(t) for t in error_counts],
        "metrics": out_metrics,
    }


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
        values = [_value(t, metric) for t in trials]
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


def _common_keys(
    index_a: Mapping[Any, Any], index_b: Mapping[Any, Any], labels: Sequence[str], by_template: bool
) -> list[Any]:
    """The pair keys of the questions in both runs, in A's order; none is a ``ValueError``."""
    common = [key for key in index_a if key in index_b]
    if not common:
        raise ValueError(
            f"no question is in both runs ({labels[0]}: {len(index_a)} questions, "
            f"{labels[1]}: {len(index_b)}; paired by "
            f"{'template_id and question_id' if by_template else 'question_id'})"
        )
    return common


def _metric_names(
    a: Sequence[Mapping[str, Any]],
    b: Sequence[Mapping[str, Any]],
    metrics: Sequence[str] | None,
    labels: Sequence[str],
) -> list[str]:
    """The metrics to compare: those asked for (each one the runs have), else all they have."""
    available = default_metrics(a, b, labels=labels)
    if metrics is not None:
        unknown = [m for m in metrics if m not in available]
        if unknown:
            raise ValueError(
                f"unknown metric{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}"
                f"; the runs have: {', '.join(available) or 'no numeric metric'}"
            )
    names = list(dict.fromkeys(metrics)) if metrics is not None else available
    if not names:
        raise ValueError("nothing to compare: the runs have no numeric metric")
    return names


_Paired = list[tuple[Any, Mapping[str, Any], Mapping[str, Any]]]
"""(template, result A, result B) of each question compared."""


def _pair_questions(
    index_a: Mapping[Any, Mapping[str, Any]],
    index_b: Mapping[Any, Mapping[str, Any]],
    common: Sequence[Any],
    errors: ErrorMode,
    labels: Sequence[str],
) -> tuple[dict[str, int], _Paired, dict[Any, list[int]]]:
    """The questions compared, counted: (the ``questions`` counts, the pairs used, the errors
    of A and B per template in the order the templates first appear)."""
    questions = {
        "a": len(index_a),
        "b": len(index_b),
        "paired": len(common),
        "only_a": len(index_a) - len(common),
        "only_b": len(index_b) - len(common),
        "errors_a": 0,
        "errors_b": 0,
        "excluded": 0,
        "template_mismatch": 0,
    }
    used: _Paired = []
    error_counts: dict[Any, list[int]] = {}
    for key in common:
        ra, rb = index_a[key], index_b[key]
        err_a, err_b = is_error(ra), is_error(rb)
        template = ra.get("template_id")
        tally = error_counts.setdefault(template, [0, 0])
        tally[0] += err_a
        tally[1] += err_b
        questions["errors_a"] += err_a
        questions["errors_b"] += err_b
        if template != rb.get("template_id"):
            questions["template_mismatch"] += 1
        if errors == "exclude" and (err_a or err_b):
            questions["excluded"] += 1
            continue
        used.append((template, ra, rb))
    if not used:
        raise ValueError(
            f"all {len(common)} paired questions are an error in {labels[0]} or {labels[1]}; "
            "without errors='exclude' (--exclude-errors) they count as failed answers"
        )
    return questions, used, error_counts


_Groups = dict[Any, tuple[list[tuple[float, float]], dict[str, int]]]
"""Per template: the (A, B) value pairs of one metric and the counts of its row."""


def _paired_values(
    metric: str,
    way: str,
    used: _Paired,
    error_counts: Mapping[Any, list[int]],
    errors: ErrorMode,
    repeated: bool,
) -> tuple[_Groups, dict[Any, list[Any]]]:
    """One metric's value pairs and counts per template, and (when a run was scored with
    repeats) each pair's judge variances."""
    groups: _Groups = {t: ([], _zero_counts(*counts)) for t, counts in error_counts.items()}
    noise: dict[Any, list[Any]] = {t: [] for t in error_counts}
    for template, ra, rb in used:
        pairs, counts = groups[template]
        counts["questions"] += 1
        # errors=fail: an error becomes 0 only for a higher-is-better metric
        (kind_a, value_a), (kind_b, value_b) = _values(ra, rb, metric, way != "higher", errors)
        if kind_a != "ok":
            counts[f"{kind_a}_a"] += 1
        if kind_b != "ok":
            counts[f"{kind_b}_b"] += 1
        if kind_a == "ok" and kind_b == "ok":
            pairs.append((value_a, value_b))
            if repeated:
                noise[template].append((_judge_variance(ra, metric), _judge_variance(rb, metric)))
    return groups, noise


def _metric_rows(
    metric: str,
    groups: _Groups,
    noise: Mapping[Any, list[Any]] | None,
    lower: bool,
    resamples: int,
    confidence: float,
    seed: int,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One metric's overall row and per-template rows, tested (not yet adjusted); with
    ``noise``, each row's judge noise."""
    templates = list(groups)
    all_pairs = [p for t in templates for p in groups[t][0]]
    all_counts = _zero_counts()
    for _, counts in groups.values():
        for name, count in counts.items():
            all_counts[name] += count
    overall = _stats(all_pairs, all_counts, lower, resamples, confidence, _rng(seed, metric, None))
    per_template = [
        {
            "template_id": _jsonable_id(t),
            **_stats(*groups[t], lower, resamples, confidence, _rng(seed, metric, ("t", t))),
        }
        for t in templates
    ]
    if noise is not None:
        _add_noise(overall, [v for t in templates for v in noise[t]])
        for t, row in zip(templates, per_template):
            _add_noise(row, noise[t])
    return overall, per_template


def _adjust_and_mark(entries: Sequence[dict[str, Any]], alpha: float) -> None:
    """Holm's adjustment over the overall rows and over the per-template rows, then ``better``
    on the rows it rejects (not for a count), in place."""
    _holm([entry["overall"] for entry in entries])
    _holm([row for entry in entries for row in entry["per_template"]])
    for entry in entries:
        if entry["direction"] == "none":  # a count: a change is neither better nor worse
            continue
        lower = entry["direction"] == "lower"
        for row in (entry["overall"], *entry["per_template"]):
            _mark(row, lower, alpha)


def _method(
    by_template: bool,
    alpha: float,
    resamples: int,
    seed: int,
    confidence: float,
    errors: ErrorMode,
) -> dict[str, Any]:
    """The comparison's ``method``: how it paired, tested, adjusted and scored errors."""
    return {
        "design": "paired",
        "paired_by": "template_id+question_id" if by_template else "question_id",
        "statistic": "mean difference B - A",
        "p_value": "two-sided paired sign-flip permutation test",
        "exact_max_n": EXACT_MAX_N,
        "ci": "inverted sign-flip test",
        "adjustment": "holm",
        "families": ["overall", "per_template"],
        "alpha": alpha,
        "resamples": resamples,
        "seed": seed,
        "confidence": confidence,
        "tie_tolerance": TIE_TOLERANCE,
        "errors": errors,
    }


def _add_noise(row: dict[str, Any], variances: list[Any]) -> None:
    """``judge_se`` and ``within_judge_noise`` of a row, when a run measured the judge's
    variance for its questions."""
    if row["delta"] is None:
        return
    judge_se = judge_noise(variances)
    if judge_se is not None:
        row["judge_se"] = judge_se
        row["within_judge_noise"] = within_noise(row["delta"], judge_se)


def _zero_counts(errors_a: int = 0, errors_b: int = 0) -> dict[str, int]:
    """The counters of a row, all 0 but the errors given."""
    return {
        "errors_a": errors_a,
        "errors_b": errors_b,
        "questions": 0,
        "missing_a": 0,
        "missing_b": 0,
        "skipped_a": 0,
        "skipped_b": 0,
    }
