"""One metric's rows: the means, delta, wins, losses and ties, the sign-flip p-value and interval of
each row (overall and per template), Holm's adjustment over each family of rows, the run a row
finds ``better``, and the judge's noise beside the delta.
"""

from __future__ import annotations

import math
import sys
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..aggregate import mean_of
from ..judge.repeats import judge_noise, within_noise
from .pairing import Groups, jsonable_id, zero_counts
from .signflip import TIE_TOLERANCE, alpha_of, sign_flip_test, smallest_p

_NONE = np.zeros(0)


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
    pairs: tuple[Any, Any],
    counts: dict[str, int],
    lower: bool,
    resamples: int,
    confidence: float,
    rng: np.random.Generator,
) -> dict[str, Any]:
    """One row: the means, delta, wins / losses / ties, p-value and interval of the pairs."""
    values_a, values_b = np.asarray(pairs[0], dtype=float), np.asarray(pairs[1], dtype=float)
    n = values_a.size
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
    row["mean_a"] = mean_of(values_a.tolist())
    row["mean_b"] = mean_of(values_b.tolist())
    scale = _scale(values_a, values_b)
    deltas = values_b * scale - values_a * scale
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


def _scale(values_a: np.ndarray, values_b: np.ndarray) -> float:
    """A power of two that keeps every sum of the pairs' differences within the float range:
    1 unless the values are near it (the test's p-value does not change with the scale, and
    scaling by a power of two is exact)."""
    largest = float(max(np.max(np.abs(values_a)), np.max(np.abs(values_b))))
    room = sys.float_info.max / (4 * values_a.size)
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


def metric_rows(
    metric: str,
    groups: Groups,
    noise: Mapping[Any, list[Any]] | None,
    lower: bool,
    resamples: int,
    confidence: float,
    seed: int,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One metric's overall row and per-template rows, tested (not yet adjusted); with
    ``noise``, each row's judge noise."""
    templates = list(groups)
    all_pairs = (
        np.concatenate([np.asarray(groups[t][0][0], dtype=float) for t in templates] or [_NONE]),
        np.concatenate([np.asarray(groups[t][0][1], dtype=float) for t in templates] or [_NONE]),
    )
    all_counts = zero_counts()
    for _, counts in groups.values():
        for name, count in counts.items():
            all_counts[name] += count
    overall = _stats(all_pairs, all_counts, lower, resamples, confidence, _rng(seed, metric, None))
    per_template = [
        {
            "template_id": jsonable_id(t),
            **_stats(*groups[t], lower, resamples, confidence, _rng(seed, metric, ("t", t))),
        }
        for t in templates
    ]
    if noise is not None:
        _add_noise(overall, [v for t in templates for v in noise[t]])
        for t, row in zip(templates, per_template):
            _add_noise(row, noise[t])
    return overall, per_template


def adjust_and_mark(entries: Sequence[dict[str, Any]], alpha: float) -> None:
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


def _add_noise(row: dict[str, Any], variances: list[Any]) -> None:
    """``judge_se`` and ``within_judge_noise`` of a row, when a run measured the judge's
    variance for its questions."""
    if row["delta"] is None:
        return
    judge_se = judge_noise(variances)
    if judge_se is not None:
        row["judge_se"] = judge_se
        row["within_judge_noise"] = within_noise(row["delta"], judge_se)
