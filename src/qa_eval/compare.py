"""Compare two runs question by question: paired differences with bootstrap intervals and p-values.

Method (paired design; Efron & Tibshirani 1993, *An Introduction to the Bootstrap*, Chapman &
Hall: ch. 13 for the percentile interval, §16.4 for the one-sample test by shifting the data):

- The two runs are paired by question: by ``question_id`` (unique in a reference dataset), or by
  ``(template_id, question_id)`` when a run repeats a question id across templates. For a metric,
  a pair counts when both results carry a finite number; ``d_i = B_i - A_i``.
- ``delta`` is the mean of ``d`` (= mean B - mean A over the same questions).
- ``resamples`` bootstrap samples of ``d`` (``n`` indices drawn with replacement, vectorised in
  chunks) give resampled means ``m*``. The confidence interval is the percentile interval of
  ``m*`` (quantiles ``(1 - confidence) / 2`` and ``(1 + confidence) / 2``).
- The two-sided p-value tests "mean difference = 0" with the shifted-null bootstrap: the deltas
  are shifted to mean 0 (``d - delta``, whose resampled means are ``m* - delta``), and
  ``p = (1 + #{|m* - delta| >= |delta|}) / (resamples + 1)``; so ``p`` lies in
  ``[1 / (resamples + 1), 1]`` and is 1 when every delta is 0.
- wins / losses / ties count the questions where B is better / worse / equal (``|d| <= 1e-12``);
  "better" follows the metric's direction: lower is better for costs, tokens and times.

Questions that are an error in either run are left out of the pairs (``errors="exclude"``,
default) and counted; ``errors="include"`` uses whatever values their results carry, as
:func:`qa_eval.aggregate.compute_aggregates` does (an error's ``steps_score`` is 0.0).
Everything returned is plain JSON data (dicts, lists, str, int, float, bool, None).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import numpy as np

from .aggregate import METRICS, STEP_METRICS, is_error, is_finite_number, is_number

__all__ = ["compare_runs", "default_metrics", "format_table", "lower_is_better"]

TIE_TOLERANCE = 1e-12
_ID_KEYS = frozenset({"template_id", "question_id"})
_LOWER_SUFFIXES = ("cost", "tokens", "_sec", "_seconds", "_ms", "elapsed", "latency")
_CHUNK_ELEMENTS = 1 << 21  # indices per resampling chunk (16 MiB of int64)
_STEP_METRIC_NAMES = {m: step for step, names in STEP_METRICS.items() for m in names}


def lower_is_better(metric: str) -> bool:
    """Whether smaller values of ``metric`` are better (costs, tokens, times)."""
    return metric.lower().endswith(_LOWER_SUFFIXES)


def default_metrics(*runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """The metrics present in any result: aggregate.METRICS, step metrics, other numeric keys."""
    known = [*METRICS, *_STEP_METRIC_NAMES]
    found: set[str] = set()
    extra: dict[str, None] = {}
    for run in runs:
        for result in run:
            for key, value in result.items():
                if key in _ID_KEYS or not is_number(value):
                    continue
                found.add(key)
                if key not in _STEP_METRIC_NAMES and key not in METRICS:
                    extra.setdefault(key, None)
            for step in result.get("actual_steps") or ():
                if isinstance(step, Mapping) and step.get("name") in STEP_METRICS:
                    found.update(m for m in STEP_METRICS[step["name"]] if is_number(step.get(m)))
    return [m for m in known if m in found] + list(extra)


def _value(result: Mapping[str, Any], metric: str) -> tuple[str, float]:
    """("ok", value), ("missing", nan) or ("skipped", nan) for one result and metric.

    A step metric (``retrieval_*``) is the mean of its finite values over the question's steps."""
    step_name = _STEP_METRIC_NAMES.get(metric)
    if step_name is not None and metric not in result:
        values = [
            step[metric]
            for step in result.get("actual_steps") or ()
            if isinstance(step, Mapping) and step.get("name") == step_name and metric in step
        ]
        if not values:
            return "missing", math.nan
        finite = [float(v) for v in values if is_finite_number(v)]
        if not finite:
            return "skipped", math.nan
        return "ok", math.fsum(finite) / len(finite)
    value = result.get(metric)
    if value is None:
        return "missing", math.nan
    if is_finite_number(value):
        return "ok", float(value)
    return "skipped", math.nan


def _index(run: Sequence[Mapping[str, Any]], name: str, by_template: bool) -> dict[Any, Any]:
    keyed: dict[Any, Any] = {}
    for position, result in enumerate(run):
        if not isinstance(result, Mapping):
            kind = type(result).__name__
            raise TypeError(f"run {name}: result [{position}] must be a mapping, got {kind}")
        if result.get("question_id") is None:
            raise ValueError(f"run {name}: result [{position}] has no question_id")
        qid = result["question_id"]
        key = (result.get("template_id"), qid) if by_template else qid
        if key in keyed:
            where = f"template {key[0]!r} " if by_template else ""
            raise ValueError(f"run {name}: {where}question {qid!r} appears more than once")
        keyed[key] = result
    return keyed


def _pair_key_mode(a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]]) -> bool:
    """True when pairs need (template_id, question_id): some run repeats a question id."""
    for run in (a, b):
        ids = [r.get("question_id") for r in run if isinstance(r, Mapping)]
        if len(set(ids)) != len(ids):
            return True
    return False


def _rng(seed: int, metric: str, template: Any) -> np.random.Generator:
    """A generator per (seed, metric, template): a row does not depend on which others exist."""
    tag = zlib.crc32(f"{metric}\x00{template!r}".encode())
    return np.random.default_rng([seed, tag])


def _bootstrap_means(deltas: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    n = deltas.size
    chunk = max(1, min(resamples, _CHUNK_ELEMENTS // n))
    means = np.empty(resamples)
    for start in range(0, resamples, chunk):
        rows = min(chunk, resamples - start)
        idx = rng.integers(0, n, size=(rows, n))
        means[start : start + rows] = deltas[idx].mean(axis=1)
    return means


def _stats(
    pairs: list[tuple[float, float]],
    counts: dict[str, int],
    lower: bool,
    resamples: int,
    confidence: float,
    rng: np.random.Generator,
) -> dict[str, Any]:
    n = len(pairs)
    row: dict[str, Any] = {
        "n": n,
        "mean_a": None,
        "mean_b": None,
        "delta": None,
        "ci_low": None,
        "ci_high": None,
        "p_value": None,
        "wins": 0,
        "losses": 0,
        "ties": 0,
        "better": None,
        **counts,
    }
    if n == 0:
        return row
    a = [p[0] for p in pairs]
    b = [p[1] for p in pairs]
    deltas = np.array([y - x for x, y in pairs])
    delta = math.fsum(deltas.tolist()) / n
    row["mean_a"] = math.fsum(a) / n
    row["mean_b"] = math.fsum(b) / n
    row["delta"] = delta
    improved = -deltas if lower else deltas
    row["wins"] = int(np.count_nonzero(improved > TIE_TOLERANCE))
    row["losses"] = int(np.count_nonzero(improved < -TIE_TOLERANCE))
    row["ties"] = n - row["wins"] - row["losses"]
    if n < 2:
        return row
    means = _bootstrap_means(deltas, resamples, rng)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    # Values within rounding of delta (e.g. every delta equal) belong to the interval's ends.
    slack = 1e-12 * max(1.0, abs(delta))
    row["ci_low"] = delta if abs(low - delta) <= slack else float(low)
    row["ci_high"] = delta if abs(high - delta) <= slack else float(high)
    extreme = np.count_nonzero(np.abs(means - delta) >= abs(delta) - slack)
    row["p_value"] = min(1.0, (1 + int(extreme)) / (resamples + 1))
    if row["ci_low"] > 0 or row["ci_high"] < 0:
        b_higher = row["ci_low"] > 0
        row["better"] = "b" if b_higher != lower else "a"
    return row


def _jsonable_id(value: Any) -> Any:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def compare_runs(
    a: Sequence[Mapping[str, Any]],
    b: Sequence[Mapping[str, Any]],
    *,
    metrics: Sequence[str] | None = None,
    resamples: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
    labels: tuple[str, str] = ("A", "B"),
    errors: Literal["exclude", "include"] = "exclude",
    lower_better: Iterable[str] = (),
) -> dict[str, Any]:
    """Compare run B with run A on the questions both answered; JSON-ready dict (see docs)."""
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1:
        raise ValueError(f"resamples must be a positive integer, got {resamples!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence!r}")
    if errors not in ("exclude", "include"):
        raise ValueError(f"errors must be 'exclude' or 'include', got {errors!r}")
    by_template = _pair_key_mode(a, b)
    index_a = _index(a, labels[0], by_template)
    index_b = _index(b, labels[1], by_template)
    common = [key for key in index_a if key in index_b]
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
    used: list[tuple[Any, Mapping[str, Any], Mapping[str, Any]]] = []
    for key in common:
        ra, rb = index_a[key], index_b[key]
        err_a, err_b = is_error(ra), is_error(rb)
        questions["errors_a"] += err_a
        questions["errors_b"] += err_b
        if ra.get("template_id") != rb.get("template_id"):
            questions["template_mismatch"] += 1
        if errors == "exclude" and (err_a or err_b):
            questions["excluded"] += 1
            continue
        used.append((ra.get("template_id"), ra, rb))
    templates = list(dict.fromkeys(t for t, _, _ in used))
    names = list(metrics) if metrics is not None else default_metrics(a, b)
    lower_names = set(lower_better)
    out_metrics: list[dict[str, Any]] = []
    for metric in names:
        lower = metric in lower_names or lower_is_better(metric)
        groups: dict[Any, tuple[list[tuple[float, float]], dict[str, int]]] = {
            t: ([], _zero_counts()) for t in templates
        }
        for template, ra, rb in used:
            pairs, counts = groups[template]
            counts["questions"] += 1
            kind_a, value_a = _value(ra, metric)
            kind_b, value_b = _value(rb, metric)
            if kind_a != "ok":
                counts[f"{kind_a}_a"] += 1
            if kind_b != "ok":
                counts[f"{kind_b}_b"] += 1
            if kind_a == "ok" and kind_b == "ok":
                pairs.append((value_a, value_b))
        all_pairs = [p for t in templates for p in groups[t][0]]
        all_counts = _zero_counts()
        for _, counts in groups.values():
            for name, count in counts.items():
                all_counts[name] += count
        overall = _stats(
            all_pairs, all_counts, lower, resamples, confidence, _rng(seed, metric, None)
        )
        per_template = [
            {
                "template_id": _jsonable_id(t),
                **_stats(*groups[t], lower, resamples, confidence, _rng(seed, metric, ("t", t))),
            }
            for t in templates
        ]
        out_metrics.append(
            {
                "metric": metric,
                "direction": "lower" if lower else "higher",
                "overall": overall,
                "per_template": per_template,
            }
        )
    return {
        "labels": {"a": str(labels[0]), "b": str(labels[1])},
        "method": {
            "design": "paired",
            "paired_by": "template_id+question_id" if by_template else "question_id",
            "statistic": "mean difference B - A",
            "ci": "bootstrap percentile",
            "p_value": "two-sided shifted-null bootstrap",
            "resamples": resamples,
            "seed": seed,
            "confidence": confidence,
            "tie_tolerance": TIE_TOLERANCE,
            "errors": errors,
        },
        "questions": questions,
        "templates": [_jsonable_id(t) for t in templates],
        "metrics": out_metrics,
    }


def _zero_counts() -> dict[str, int]:
    return {"questions": 0, "missing_a": 0, "missing_b": 0, "skipped_a": 0, "skipped_b": 0}


# ---------------------------------------------------------------- the console table

_NUMERIC_HEADERS = ("n", "mean A", "mean B", "delta", "{pct}% CI", "p", "W/L/T")
_WIDTHS = (5, 9, 9, 9, 22, 7, 9)
_TABLE_WIDTH = 100


def _decimals(entry: Mapping[str, Any]) -> int | None:
    """Decimals for one metric's numbers, from the size of its means (None: 3 significant)."""
    rows = [entry["overall"], *entry["per_template"]]
    scale = max(
        (abs(row[k]) for row in rows for k in ("mean_a", "mean_b") if row[k] is not None),
        default=0.0,
    )
    if scale >= 1e7:
        return None
    if scale >= 1e5:
        return 0
    if scale >= 100:
        return 1
    if scale >= 0.01 or scale == 0:
        return 4
    return 6


def _num(value: float | None, decimals: int | None, signed: bool = False) -> str:
    if value is None:
        return "-"
    sign = "+" if signed else ""
    if decimals is None:
        return f"{value:{sign}.3g}"
    return f"{value:{sign}.{decimals}f}"


def _p(value: float | None, better: str | None) -> str:
    if value is None:
        return "-"
    text = "<0.001" if value < 0.001 else f"{value:.3f}"
    return text + ("*" if better else "")


def _cells(row: Mapping[str, Any], decimals: int | None) -> list[str]:
    if row["ci_low"] is None:
        ci = "-"
    else:
        low, high = _num(row["ci_low"], decimals, True), _num(row["ci_high"], decimals, True)
        ci = f"[{low}, {high}]"
    return [
        str(row["n"]),
        _num(row["mean_a"], decimals),
        _num(row["mean_b"], decimals),
        _num(row["delta"], decimals, True),
        ci,
        _p(row["p_value"], row["better"]),
        f"{row['wins']}/{row['losses']}/{row['ties']}",
    ]


def format_table(comparison: Mapping[str, Any], *, labels: tuple[str, str] | None = None) -> str:
    """A plain-text table of a :func:`compare_runs` result: overall rows, then per template."""
    label_a, label_b = labels or (comparison["labels"]["a"], comparison["labels"]["b"])
    method = comparison["method"]
    q = comparison["questions"]
    pct = f"{method['confidence'] * 100:g}"
    name_width = _TABLE_WIDTH - sum(_WIDTHS) - len(_WIDTHS)
    headers = [h.format(pct=pct) for h in _NUMERIC_HEADERS]

    def lines(name: str, cells: Sequence[str]) -> list[str]:
        head: list[str] = []
        if len(name) > name_width:  # a long name gets a line of its own
            head, name = [name], ""
        parts = [name.ljust(name_width), *(c.rjust(w) for c, w in zip(cells, _WIDTHS))]
        return [*head, " ".join(parts).rstrip()]

    def metric_name(entry: Mapping[str, Any]) -> str:
        return entry["metric"] + (" (-)" if entry["direction"] == "lower" else "")

    excluded = ""
    if q["excluded"]:
        excluded = f"; {q['excluded']} excluded (error in A: {q['errors_a']}, B: {q['errors_b']})"
    out = [
        f"A = {label_a}",
        f"B = {label_b}",
        f"questions: A {q['a']}, B {q['b']}, paired {q['paired']} "
        f"(only A {q['only_a']}, only B {q['only_b']}){excluded}",
        f"delta = mean B - mean A over paired questions; paired bootstrap, "
        f"{method['resamples']} resamples, seed {method['seed']}",
        "",
        *lines("metric", headers),
        "-" * _TABLE_WIDTH,
    ]
    entries = comparison["metrics"]
    for entry in entries:
        out += lines(metric_name(entry), _cells(entry["overall"], _decimals(entry)))
    if len(comparison["templates"]) > 1:
        out += ["", *lines("per template", headers), "-" * _TABLE_WIDTH]
        for entry in entries:
            out.append(metric_name(entry))
            decimals = _decimals(entry)
            for row in entry["per_template"]:
                out += lines(f"  {row['template_id']}", _cells(row, decimals))
    out += [
        "",
        f"W/L/T: questions where B is better / worse / tied; (-) lower is better; "
        f"* {pct}% CI excludes 0",
    ]
    return "\n".join(out)


def report_rows(comparison: Mapping[str, Any]) -> dict[str, Any]:
    """The comparison as flat rows (overall first, then per template) for the HTML report."""
    labels = comparison.get("labels", {})
    rows: list[dict[str, Any]] = []
    for entry in comparison.get("metrics", []):
        parts = [("", entry["overall"])]
        parts += [(str(r["template_id"]), r) for r in entry.get("per_template", [])]
        for template, row in parts:
            rows.append(
                {
                    "metric": entry["metric"],
                    "template": template or None,
                    "n": row["n"],
                    "mean_a": row["mean_a"],
                    "mean_b": row["mean_b"],
                    "delta": row["delta"],
                    "ci": [row["ci_low"], row["ci_high"]]
                    if row["ci_low"] is not None and row["ci_high"] is not None
                    else None,
                    "p_value": row["p_value"],
                    "wins": row["wins"],
                    "losses": row["losses"],
                    "ties": row["ties"],
                    "better": row["better"],
                }
            )
    return {
        "a": labels.get("a"),
        "b": labels.get("b"),
        "delta": "mean b - mean a over the questions both answered",
        "method": comparison.get("method", {}).get("statistic", "paired bootstrap"),
        "metrics": rows,
    }
