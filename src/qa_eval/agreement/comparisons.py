"""Judges compared with each other: each pair on each metric, McNemar's exact test of accuracy and a
paired bootstrap of kappa or Spearman, the report's p-values Holm-adjusted as one family.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..compare.rows import holm
from .figures import Paired, finite_or_none, seeded_rng
from .judges import Judge
from .labels import Kind
from .stats import kappa_statistic, mcnemar_exact, paired_bootstrap, spearman_statistic


def compare_judges(
    per_metric: Mapping[str, tuple[Kind, dict[str, Paired], dict[str, Any]]],
    judges: Sequence[Judge],
    resamples: int,
    confidence: float,
    seed: int,
) -> list[dict[str, Any]]:
    """Every pair of judges on every metric: McNemar on accuracy, paired bootstrap on kappa or
    Spearman; Holm over all the p-values of the report."""
    rows: list[dict[str, Any]] = []
    for metric, (kind, paired, calls) in per_metric.items():
        for i, first in enumerate(judges):
            for second in judges[i + 1 :]:
                a, b = paired[first.label], paired[second.label]
                n = len(a.keys)
                if n < 2:
                    continue
                rng = seeded_rng(seed, "compare", metric, first.label, second.label)
                if kind == "continuous":
                    make = spearman_statistic
                    xa = [float(v) for v in a.judge]
                    xb = [float(v) for v in b.judge]
                    ys = [float(v) for v in a.label]
                    stats = make(xa, ys), make(xb, ys)
                    rows.append(
                        _bootstrap_row(
                            metric, "spearman", first, second, *stats, n, resamples, confidence, rng
                        )
                    )
                    continue
                ca, cb = calls[first.label], calls[second.label]
                truth = a.label
                right_a = [x == t for x, t in zip(ca, truth)]
                right_b = [x == t for x, t in zip(cb, truth)]
                p, only_a, only_b = mcnemar_exact(right_a, right_b)
                row = _comparison_row(
                    metric,
                    "accuracy",
                    "McNemar exact",
                    first,
                    second,
                    n,
                    sum(right_a) / n,
                    sum(right_b) / n,
                    p,
                    None,
                )
                row["only_a_right"], row["only_b_right"] = only_a, only_b
                rows.append(row)
                stats = kappa_statistic(ca, truth), kappa_statistic(cb, truth)
                rows.append(
                    _bootstrap_row(
                        metric, "kappa", first, second, *stats, n, resamples, confidence, rng
                    )
                )
    adjusted = holm([r["p_value"] for r in rows])
    for row, adjusted_p in zip(rows, adjusted):
        row["p_adjusted"] = adjusted_p
    return rows


def _bootstrap_row(
    metric: str,
    statistic: str,
    first: Judge,
    second: Judge,
    stat_a: Any,
    stat_b: Any,
    n: int,
    resamples: int,
    confidence: float,
    rng: Any,
) -> dict[str, Any]:
    """The comparison row of two judges' ``statistic`` by a paired bootstrap over the items."""
    diff = paired_bootstrap(stat_a, stat_b, n, resamples=resamples, confidence=confidence, seed=rng)
    return _comparison_row(
        metric, statistic, "paired bootstrap", first, second, n,
        diff.a, diff.b, diff.p_value, diff.interval.as_list(),
    )  # fmt: skip


def _comparison_row(
    metric: str,
    statistic: str,
    test: str,
    first: Judge,
    second: Judge,
    n: int,
    value_a: float,
    value_b: float,
    p: float | None,
    interval: list[float | None] | None,
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "metric": metric,
        "statistic": statistic,
        "test": test,
        "a": first.label,
        "b": second.label,
        "n": n,
        "value_a": finite_or_none(value_a),
        "value_b": finite_or_none(value_b),
        "difference": finite_or_none(value_b - value_a),
        "p_value": p,
    }
    if interval is not None:
        row["difference_ci"] = interval
    return row
