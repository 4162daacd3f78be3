"""A pytest helper: fail a test when evaluation scores are below their thresholds.

``assert_scores(results, steps_score=0.9, answer_f1=0.7)`` checks the micro mean of each metric
(over every question that has a value, as ``compute_aggregates`` and ``--fail-under`` compute
it; an error response's ``steps_score`` of 0 counts). A threshold is a minimum for a score and a
maximum for a metric where lower is better (costs, tokens, times: ``total_tokens=5000`` means
at most 5000 on average; ``qa_eval.compare.lower_is_better``). A metric no question has a value
of fails: a misspelt name or a metric the run did not compute never passes silently.

``per_template=True`` also checks the mean of every template; ``templates={"t1": {...}}`` sets
thresholds for some templates only. The ``AssertionError`` lists every failed check and, under
each, the worst questions (lowest score, or highest cost) with their value, their error when the
response was one, and the first reason a reference step did not match when the results say it.

``assert_test(result_or_row, metrics=None)`` is deepeval's habit for one sample: it checks one
``MetricResult`` of ``qa_eval.metrics.collections``, a list or dict of them, or a row of
``score_rows`` (its ``scores[i]``, or its result dict with ``metrics`` giving the thresholds), and
fails with value, threshold and reason of each metric that failed (one with an error fails too).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .aggregate import as_float, compute_aggregates, is_error, mean_of
from .compare.values import lower_is_better
from .metrics.collections.result import MetricResult

__all__ = ["ScoreCheck", "assert_scores", "assert_test", "check_scores"]


@dataclass(frozen=True)
class ScoreCheck:
    """One threshold checked: where (``micro`` or a template), the mean found, pass or fail."""

    metric: str
    threshold: float
    scope: str
    """``micro``, or ``template 'ID'``."""
    mean: float | None
    n: int
    passed: bool
    lower_is_better: bool

    def describe(self) -> str:
        """One line, e.g. ``steps_score: micro mean 0.5227 < 0.9 (n = 11)``."""
        if self.mean is None:
            return (
                f"{self.metric}: {self.scope}: no question has a value (not computed in this "
                "run, or a misspelt metric name)"
            )
        if self.lower_is_better:
            relation = "<=" if self.passed else ">"
        else:
            relation = ">=" if self.passed else "<"
        return (
            f"{self.metric}: {self.scope} mean {self.mean:.4g} {relation} {self.threshold:g} "
            f"(n = {self.n})"
        )


def _load(results: Any) -> list[Mapping[str, Any]]:
    if isinstance(results, (str, os.PathLike)):
        from .io.files import read_results

        results = read_results(results)
    rows = list(results)
    for position, result in enumerate(rows):
        if not isinstance(result, Mapping):
            raise TypeError(f"result [{position}] must be a mapping, got {type(result).__name__}")
    return rows


def _mean(block: Any, rows: Sequence[Mapping[str, Any]], metric: str) -> tuple[float | None, int]:
    """(mean, n) from an aggregates block, or from the results for keys the aggregates do not
    have (custom metric outputs)."""
    if isinstance(block, Mapping) and "n" in block:
        n = int(block.get("n") or 0)
        return (as_float(block["mean"]) if n else None), n
    values = [v for r in rows if (v := as_float(r.get(metric))) is not None]
    return (mean_of(values) if values else None), len(values)


def _thresholds(given: Mapping[str, Any], where: str) -> dict[str, float]:
    checked: dict[str, float] = {}
    for metric, value in given.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{where}{metric}: the threshold must be a number, got {value!r}")
        if not math.isfinite(value):
            raise ValueError(f"{where}{metric}: the threshold must be a finite number")
        checked[str(metric)] = float(value)
    return checked


def _check(metric: str, threshold: float, scope: str, mean: float | None, n: int) -> ScoreCheck:
    lower = lower_is_better(metric)
    passed = mean is not None and (mean <= threshold if lower else mean >= threshold)
    return ScoreCheck(metric, threshold, scope, mean, n, passed, lower)


def check_scores(
    results: Iterable[Mapping[str, Any]] | str | os.PathLike[str],
    thresholds: Mapping[str, float] | None = None,
    *,
    per_template: bool = False,
    templates: Mapping[Any, Mapping[str, float]] | None = None,
    **metrics: float,
) -> list[ScoreCheck]:
    """Every check ``assert_scores`` makes, passed or not (results: a list or a results file)."""
    overall = _thresholds({**(thresholds or {}), **metrics}, "")
    by_template = {
        template: _thresholds(given, f"templates[{template!r}].")
        for template, given in (templates or {}).items()
    }
    if not overall and not any(by_template.values()):
        raise ValueError(
            "give at least one threshold, e.g. assert_scores(results, steps_score=0.9)"
        )
    rows = _load(results)
    extra = [m for given in (overall, *by_template.values()) for m in given]
    aggregates = compute_aggregates(rows, extra_metrics=extra)
    checks = []
    for metric, threshold in overall.items():
        mean, n = _mean(aggregates["micro"].get(metric), rows, metric)
        checks.append(_check(metric, threshold, "micro", mean, n))
    per = aggregates["per_template"]
    for template in per if per_template else ():
        members = [r for r in rows if r.get("template_id") == template]
        for metric, threshold in overall.items():
            mean, n = _mean(per[template].get(metric), members, metric)
            checks.append(_check(metric, threshold, f"template {template!r}", mean, n))
    for template, given in by_template.items():
        members = [r for r in rows if r.get("template_id") == template]
        if template not in per:
            known = ", ".join(repr(t) for t in per) or "none"
            raise ValueError(f"templates: no result has template_id {template!r} (known: {known})")
        for metric, threshold in given.items():
            mean, n = _mean(per[template].get(metric), members, metric)
            checks.append(_check(metric, threshold, f"template {template!r}", mean, n))
    return checks


def _first_mismatch(result: Mapping[str, Any]) -> str | None:
    """The first ``mismatch`` of a reference step (one that was compared, if any), or the
    first step error, when recorded."""
    texts = [
        str(step["mismatch"])
        for group in result.get("reference_steps") or []
        for step in (group if isinstance(group, list) else [])
        if isinstance(step, Mapping) and isinstance(step.get("mismatch"), str)
    ]
    compared = [t for t in texts if not t.startswith("not evaluated:")]
    if texts:
        return (compared or texts)[0]
    errors = result.get("step_errors")
    if isinstance(errors, list) and errors:
        return str(errors[0])
    return None


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _short(text: Any, limit: int = 100) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _worst(rows: Sequence[Mapping[str, Any]], check: ScoreCheck, count: int) -> list[str]:
    """Lines naming the questions that pull the mean the wrong way, worst first."""
    if check.scope == "micro":
        members = rows
    else:
        members = [r for r in rows if f"template {r.get('template_id')!r}" == check.scope]
    valued = [(v, r) for r in members if (v := as_float(r.get(check.metric))) is not None]
    valued.sort(key=lambda pair: pair[0], reverse=check.lower_is_better)
    lines = []
    for value, result in valued[:count]:
        if value >= check.threshold if not check.lower_is_better else value <= check.threshold:
            break  # the rest meet the threshold themselves
        line = f"      {check.metric} = {value:.4g}: question {result.get('question_id')!r}"
        if check.scope == "micro":
            line += f" (template {result.get('template_id')!r})"
        if is_error(result):
            line += f"; error response: {_short(result.get('error', ''))}"
        else:
            why = _first_mismatch(result)
            if why:
                line += f"; {_short(why)}"
        lines.append(line)
    return lines


def assert_scores(
    results: Iterable[Mapping[str, Any]] | str | os.PathLike[str],
    thresholds: Mapping[str, float] | None = None,
    *,
    per_template: bool = False,
    templates: Mapping[Any, Mapping[str, float]] | None = None,
    worst: int = 5,
    **metrics: float,
) -> list[ScoreCheck]:
    """Raise ``AssertionError`` listing each metric whose mean misses its threshold, with the
    worst questions; returns the checks when all pass."""
    rows = _load(results)
    checks = check_scores(
        rows, thresholds, per_template=per_template, templates=templates, **metrics
    )
    failed = [c for c in checks if not c.passed]
    if not failed:
        return checks
    errors = sum(1 for r in rows if is_error(r))
    lines = [
        f"{len(failed)} of {len(checks)} score check{'s' if len(checks) != 1 else ''} failed "
        f"({_plural(len(rows), 'question')}, {_plural(errors, 'error response')}):"
    ]
    for check in failed:
        lines.append(f"  {check.describe()}")
        if check.mean is not None and worst > 0:
            worst_lines = _worst(rows, check, worst)
            if worst_lines:
                lines.append("    worst questions:")
                lines.extend(worst_lines)
    raise AssertionError("\n".join(lines))


def _named(results: Any) -> list[tuple[str, MetricResult]]:
    """(name, result) pairs of one ``MetricResult``, a list of them or a dict by name."""
    if isinstance(results, MetricResult):
        return [(results.name or "metric", results)]
    if isinstance(results, Mapping):
        return [(str(k), v) for k, v in results.items()]
    pairs = []
    for position, item in enumerate(results):
        if not isinstance(item, MetricResult):
            raise TypeError(f"[{position}] must be a MetricResult, got {type(item).__name__}")
        pairs.append((item.name or f"metric {position + 1}", item))
    return pairs


def _is_result_dict(value: Any) -> bool:
    """Whether ``value`` is a result dict (of a run or ``score_rows``), not results by name."""
    return isinstance(value, Mapping) and not all(
        isinstance(v, MetricResult) for v in value.values()
    )


def _name_of(metric: Any) -> str:
    """A metric object's name (a plain string names itself)."""
    return metric if isinstance(metric, str) else str(metric.name)


def _key_in(row: Mapping[str, Any], metric: Any) -> str:
    """The key of a result dict holding a metric's value: a plain string names itself; a metric
    object's run key when the row has it (``ContextPrecision``: ``context_precision_ap``), else
    its name."""
    if isinstance(metric, str):
        return metric
    from .metrics.collections.evaluate import result_keys

    keys = result_keys(metric)
    for key in keys:
        if key in row or f"{key}_error" in row:
            return key
    return keys[0]


def _from_row(
    row: Mapping[str, Any], metrics: Iterable[Any] | Mapping[str, float] | None
) -> list[tuple[str, MetricResult]]:
    """The results of the metrics named in ``metrics`` as a result dict holds them."""
    if metrics is None:
        raise TypeError(
            "a result dict holds no thresholds: give metrics= (the metric objects, or a "
            "mapping of result key to threshold)"
        )
    wanted: list[tuple[str, float | None]]
    if isinstance(metrics, Mapping):
        wanted = list(_thresholds(metrics, "").items())
    else:
        wanted = [(_key_in(row, m), getattr(m, "threshold", None)) for m in metrics]
    pairs = []
    for key, threshold in wanted:
        error = row.get(f"{key}_error")
        reason = row.get(f"{key}_reason")
        if key not in row and error is None:
            error = "no value in this row (not computed, or a misspelt name)"
        result = MetricResult(
            row.get(key),
            str(reason) if reason is not None else None,
            error=str(error) if error is not None else None,
            threshold=threshold,
            name=key,
        )
        pairs.append((key, result))
    return pairs


def assert_test(
    result_or_row: Any, metrics: Iterable[Any] | Mapping[str, float] | None = None
) -> None:
    """Raise ``AssertionError`` naming value, threshold and reason of each metric that failed
    (below its threshold, or not scored); pass silently otherwise."""
    if _is_result_dict(result_or_row):
        pairs = _from_row(result_or_row, metrics)
    else:
        pairs = _named(result_or_row)
        if metrics is not None:  # only the metrics named
            names = {_name_of(m) for m in metrics}
            pairs = [(n, r) for n, r in pairs if n in names]
    failed = []
    for name, result in pairs:
        if result.error is not None:
            failed.append(f"  {name}: not scored: {_short(result.error, 300)}")
        elif result.success is False:
            value = as_float(result.value)
            shown = f"{value:.4g}" if value is not None else repr(result.value)
            reason = _short(result.reason or "(no reason)", 300)
            failed.append(f"  {name}: {shown} < threshold {result.threshold:g}; reason: {reason}")
    if failed:
        head = f"{len(failed)} of {_plural(len(pairs), 'metric')} failed:"
        raise AssertionError("\n".join([head, *failed]))
