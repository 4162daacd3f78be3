"""Agreement statistics on numpy arrays: pure functions, no I/O.

Formulas and sources (``a`` the judge, ``b`` the people's label, ``n`` items):

- accuracy ``= #(a_i = b_i) / n``; its interval is Clopper & Pearson's exact one (1934,
  *Biometrika* 26:404), the binomial tail inverted by bisection (no scipy at run time).
- Cohen's kappa (1960, *Educ. Psychol. Meas.* 20:37) ``= (p_o - p_e) / (1 - p_e)`` with ``p_o``
  the observed agreement and ``p_e = sum_k p_a(k) p_b(k)`` from the two margins; undefined (NaN)
  when ``p_e = 1`` (both sides used one class only).
- the confusion matrix ``C[i, j] = #(label = class i, judge = class j)``.
- ROC AUC as the Mann-Whitney probability ``P(score+ > score-) + P(score+ = score-) / 2``
  (Hanley & McNeil 1982, *Radiology* 143:29), computed from mid-ranks.
- Spearman's rho: Pearson's correlation of the mid-ranks (ties share their mean rank).
- Kendall's tau-b (Kendall 1945, *Biometrika* 33:239) ``= (C - D) / sqrt((n0 - n1)(n0 - n2))``
  with ``n0 = n(n-1)/2`` and ``n1``, ``n2`` the pairs tied in ``a`` and in ``b``.
- mean absolute error ``= mean |a_i - b_i|``.
- Krippendorff's alpha (Krippendorff 2011, "Computing Krippendorff's Alpha-Reliability",
  Annenberg School, U. Pennsylvania) ``= 1 - D_o / D_e`` from the coincidence matrix ``o_ck``
  (each unit with ``m_u >= 2`` values adds ``1 / (m_u - 1)`` per ordered pair of its values):
  ``D_o = sum o_ck d_ck / n`` and ``D_e = sum n_c n_k d_ck / (n (n - 1))``; the difference
  ``d_ck`` is 0/1 (nominal), ``(c - k)^2`` (interval), or, ordinal,
  ``(sum_{g=c..k} n_g - (n_c + n_k) / 2)^2``.
- bootstrap intervals over questions (Efron & Tibshirani 1993, *An Introduction to the
  Bootstrap*, ch. 13-14): ``B`` resamples of the items with replacement (:data:`RESAMPLES`,
  seeded), BCa (bias-corrected and accelerated, the acceleration from the jackknife) or the
  plain percentile interval. Resamples where a coefficient is undefined (one class only) are
  left out; the share left out is returned so it can be reported.
- McNemar's exact test (McNemar 1947, *Psychometrika* 12:153): of the items exactly one of two
  judges gets right, ``b`` and ``c``; ``p = min(1, 2 P(X <= min(b, c)))``, ``X ~ Bin(b + c, 1/2)``.
- paired bootstrap of a difference of two coefficients on the same items: the items resampled
  together; ``p = (1 + #|d* - d| >= |d|) / (B + 1)`` (the resampled differences, centred on the
  observed one, as the null distribution; Hall & Wilson 1991, *Biometrics* 47:757).

Every statistic takes the data once and is evaluated on matrices of item indices (one row per
resample), so a bootstrap of 2,000 resamples is a few array operations.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

__all__ = [
    "RESAMPLES",
    "Interval",
    "Statistic",
    "accuracy",
    "bootstrap_interval",
    "clopper_pearson",
    "cohen_kappa",
    "confusion_matrix",
    "kendall_tau_b",
    "krippendorff_alpha",
    "mae",
    "mcnemar_exact",
    "midranks",
    "paired_bootstrap",
    "roc_auc",
    "spearman",
]

RESAMPLES = 2000
"""Bootstrap resamples per interval (the default ``B``): the Monte Carlo error of a 2.5% quantile
at B = 2000 is about 0.35 percentage points of coverage."""

Level = Literal["nominal", "ordinal", "interval"]
Numbers = Sequence[float] | np.ndarray
"""Numbers as a list or an array."""
Statistic = Callable[[np.ndarray], np.ndarray]
"""A coefficient on fixed data, evaluated on an index matrix (rows of item indices): one value
per row (NaN where undefined)."""

_CHUNK = 1 << 22
"""Elements of the largest temporary array a statistic builds at once."""


@dataclass(frozen=True)
class Interval:
    """A confidence interval and how it was made."""

    low: float | None
    high: float | None
    method: str
    """``clopper-pearson``, ``bca`` or ``percentile``."""
    undefined: float = 0.0
    """Share of the resamples where the coefficient was undefined (left out)."""

    def as_list(self) -> list[float | None]:
        """``[low, high]`` for JSON."""
        return [self.low, self.high]


# ----------------------------------------------------------------------- encodings


def codes(values: Sequence[Any]) -> tuple[np.ndarray, list[Any]]:
    """Values as integer codes into their sorted distinct values: (codes, classes)."""
    classes = sorted(set(values), key=_sort_key)
    index = {c: i for i, c in enumerate(classes)}
    return np.array([index[v] for v in values], dtype=np.int64), classes


def _sort_key(value: Any) -> tuple[int, Any]:
    """Numbers (and booleans) before text, each in its own order."""
    if isinstance(value, (bool, int, float)):
        return (0, float(value))
    return (1, str(value))


def midranks(values: np.ndarray) -> np.ndarray:
    """Ranks from 1 of the last axis, ties sharing their mean rank."""
    x = np.asarray(values, dtype=float)
    if x.ndim == 1:
        ordered = np.sort(x)
        low = np.searchsorted(ordered, x, side="left")
        high = np.searchsorted(ordered, x, side="right")
        return (low + high + 1) / 2.0
    return np.stack([midranks(row) for row in x])


def _level_codes(x: np.ndarray) -> tuple[np.ndarray, int]:
    """Codes of ``x`` into its sorted distinct values, and how many there are."""
    levels, inverse = np.unique(x, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64), int(levels.size)


def _resampled_midranks(code: np.ndarray, levels: int, index: np.ndarray) -> np.ndarray:
    """Mid-ranks of ``x[index]`` row by row, from the codes of ``x`` into its distinct values:
    per row, the count of each level, then the mid-rank of a level is the count below it plus
    half its own count plus one half."""
    rows = index.shape[0]
    picked = code[index]
    offsets = (np.arange(rows) * levels)[:, None]
    counts = np.bincount((picked + offsets).ravel(), minlength=rows * levels).reshape(rows, levels)
    below = np.cumsum(counts, axis=1) - counts
    table = below + (counts + 1) / 2.0
    return np.take_along_axis(table, picked, axis=1)


def _rows(index: np.ndarray) -> np.ndarray:
    """An index vector or matrix as a matrix (one row per resample)."""
    index = np.asarray(index)
    return index[None, :] if index.ndim == 1 else index


def _weights(index: np.ndarray, n: int) -> np.ndarray:
    """How many times each of ``n`` items is in each row of an index matrix."""
    rows = _rows(index)
    count = rows.shape[0]
    offsets = (np.arange(count) * n)[:, None]
    flat = np.bincount((rows + offsets).ravel(), minlength=count * n)
    return flat.reshape(count, n).astype(float)


def _chunked(index: np.ndarray, per_row: int, compute: Statistic) -> np.ndarray:
    """``compute`` over blocks of rows small enough that ``per_row`` elements each fit
    :data:`_CHUNK`."""
    index = _rows(index)
    step = max(1, _CHUNK // max(1, per_row))
    if index.shape[0] <= step:
        return compute(index)
    return np.concatenate([compute(index[i : i + step]) for i in range(0, index.shape[0], step)])


# ----------------------------------------------------------------------- statistics (factories)


def accuracy_statistic(judge: Sequence[Any], label: Sequence[Any]) -> Statistic:
    """Accuracy of ``judge`` against ``label`` as a :data:`Statistic`."""
    hit = np.array([j == lab for j, lab in zip(judge, label, strict=True)], dtype=float)

    def compute(index: np.ndarray) -> np.ndarray:
        rows = _rows(index)
        return np.asarray(hit[rows].mean(axis=1))

    return compute


def kappa_statistic(judge: Sequence[Any], label: Sequence[Any]) -> Statistic:
    """Cohen's kappa of ``judge`` against ``label`` as a :data:`Statistic`."""
    both, classes = codes([*judge, *label])
    n = len(judge)
    a, b = both[:n], both[n:]
    k = len(classes)

    def compute(index: np.ndarray) -> np.ndarray:
        rows = _rows(index)
        count, width = rows.shape
        ra, rb = a[rows], b[rows]
        p_o = (ra == rb).mean(axis=1)
        offsets = (np.arange(count) * k)[:, None]
        pa = np.bincount((ra + offsets).ravel(), minlength=count * k).reshape(count, k) / width
        pb = np.bincount((rb + offsets).ravel(), minlength=count * k).reshape(count, k) / width
        p_e = (pa * pb).sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            kappa = (p_o - p_e) / (1.0 - p_e)
        return np.where(p_e >= 1.0 - 1e-12, np.nan, kappa)

    return compute


def auc_statistic(scores: Numbers, positive: Sequence[bool] | np.ndarray) -> Statistic:
    """ROC AUC of ``scores`` for the ``positive`` items as a :data:`Statistic`."""
    x = np.asarray(scores, dtype=float)
    pos = np.asarray(positive, dtype=bool)
    code, levels = _level_codes(x)

    def compute(index: np.ndarray) -> np.ndarray:
        rows = _rows(index)
        ranks = _resampled_midranks(code, levels, rows)
        p = pos[rows]
        n1 = p.sum(axis=1).astype(float)
        n0 = rows.shape[1] - n1
        rank_sum = (ranks * p).sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            auc = (rank_sum - n1 * (n1 + 1) / 2.0) / (n1 * n0)
        return np.where((n1 == 0) | (n0 == 0), np.nan, auc)

    return compute


def spearman_statistic(x: Numbers, y: Numbers) -> Statistic:
    """Spearman's rho of ``x`` and ``y`` as a :data:`Statistic`."""
    cx, lx = _level_codes(np.asarray(x, dtype=float))
    cy, ly = _level_codes(np.asarray(y, dtype=float))

    def compute(index: np.ndarray) -> np.ndarray:
        rows = _rows(index)
        rx = _resampled_midranks(cx, lx, rows)
        ry = _resampled_midranks(cy, ly, rows)
        rx -= rx.mean(axis=1, keepdims=True)
        ry -= ry.mean(axis=1, keepdims=True)
        sxy = (rx * ry).sum(axis=1)
        denominator = np.sqrt((rx * rx).sum(axis=1) * (ry * ry).sum(axis=1))
        with np.errstate(divide="ignore", invalid="ignore"):
            rho = sxy / denominator
        return np.where(denominator <= 1e-12, np.nan, np.clip(rho, -1.0, 1.0))

    return compute


def kendall_statistic(x: Numbers, y: Numbers) -> Statistic:
    """Kendall's tau-b of ``x`` and ``y`` as a :data:`Statistic`: a resample's pair counts are
    quadratic forms of its item multiplicities ``w`` (``C - D = w' (sx * sy) w / 2``, with
    ``sx[i, j] = sign(x_i - x_j)``; copies of one item are a pair tied on both sides)."""
    xs = np.asarray(x, dtype=float)
    ys = np.asarray(y, dtype=float)
    sx = np.sign(xs[:, None] - xs[None, :])
    sy = np.sign(ys[:, None] - ys[None, :])
    both, untied_x, untied_y = sx * sy, np.abs(sx), np.abs(sy)
    n = xs.size

    def compute(index: np.ndarray) -> np.ndarray:
        w = _weights(index, n)
        s = ((w @ both) * w).sum(axis=1)
        denominator = np.sqrt(((w @ untied_x) * w).sum(axis=1) * ((w @ untied_y) * w).sum(axis=1))
        with np.errstate(divide="ignore", invalid="ignore"):
            tau = s / denominator
        return np.where(denominator <= 0, np.nan, np.clip(tau, -1.0, 1.0))

    return lambda index: _chunked(index, 2 * n, compute)


def mae_statistic(x: Numbers, y: Numbers) -> Statistic:
    """Mean absolute error of ``x`` against ``y`` as a :data:`Statistic`."""
    gap = np.abs(np.asarray(x, dtype=float) - np.asarray(y, dtype=float))
    return lambda index: np.asarray(gap[_rows(index)].mean(axis=1))


# ----------------------------------------------------------------------- plain functions


def _everything(n: int) -> np.ndarray:
    return np.arange(n)[None, :]


def accuracy(judge: Sequence[Any], label: Sequence[Any]) -> float:
    """Share of items where the judge's value equals the label."""
    return float(accuracy_statistic(judge, label)(_everything(len(judge)))[0])


def cohen_kappa(judge: Sequence[Any], label: Sequence[Any]) -> float:
    """Cohen's kappa of two raters over the same items (NaN when undefined)."""
    return float(kappa_statistic(judge, label)(_everything(len(judge)))[0])


def confusion_matrix(
    judge: Sequence[Any], label: Sequence[Any], classes: Sequence[Any] | None = None
) -> tuple[np.ndarray, list[Any]]:
    """(matrix, classes): ``matrix[i, j]`` counts items labelled ``classes[i]`` that the judge
    called ``classes[j]``."""
    found = list(classes) if classes is not None else codes([*judge, *label])[1]
    where = {c: i for i, c in enumerate(found)}
    matrix = np.zeros((len(found), len(found)), dtype=np.int64)
    for j, lab in zip(judge, label, strict=True):
        matrix[where[lab], where[j]] += 1
    return matrix, found


def roc_auc(scores: Numbers, positive: Sequence[bool] | np.ndarray) -> float:
    """ROC AUC (Mann-Whitney, ties count one half; NaN without both kinds of items)."""
    return float(auc_statistic(scores, positive)(_everything(len(scores)))[0])


def spearman(x: Numbers, y: Numbers) -> float:
    """Spearman's rank correlation, ties by mid-ranks (NaN when one side is constant)."""
    return float(spearman_statistic(x, y)(_everything(len(x)))[0])


def kendall_tau_b(x: Numbers, y: Numbers) -> float:
    """Kendall's tau-b (NaN when one side is constant)."""
    return float(kendall_statistic(x, y)(_everything(len(x)))[0])


def mae(x: Numbers, y: Numbers) -> float:
    """Mean absolute difference of ``x`` and ``y``."""
    return float(mae_statistic(x, y)(_everything(len(x)))[0])


# ----------------------------------------------------------------------- Krippendorff's alpha


def alpha_statistic(units: Sequence[Sequence[Any]], level: Level = "nominal") -> Statistic:
    """Krippendorff's alpha as a :data:`Statistic` over ``units`` (each the values its raters
    gave; missing values simply absent). Units with fewer than two values do not count.

    A resample's coincidence matrix is the sum of its units' own, weighted by how often each
    unit was drawn; at the interval level only four sums per unit are needed (``m_u``,
    ``sum v``, ``sum v^2`` and the within-unit ``sum_{i != j} (v_i - v_j)^2 / (m_u - 1)``)."""
    if level not in ("nominal", "ordinal", "interval"):
        raise ValueError(f"level must be nominal, ordinal or interval, got {level!r}")
    pairable = [list(unit) if len(unit) >= 2 else [] for unit in units]
    n_units = len(units)
    if not any(pairable):
        return lambda index: np.full(_rows(index).shape[0], np.nan)
    if level == "interval":
        return _interval_alpha(pairable)
    _, classes = codes([v for unit in pairable for v in unit])
    where = {c: i for i, c in enumerate(classes)}
    k = len(classes)
    per_unit = np.zeros((n_units, k * k))
    for u, unit in enumerate(pairable):
        if unit:
            count = np.bincount([where[v] for v in unit], minlength=k).astype(float)
            pairs = np.outer(count, count) - np.diag(count)
            per_unit[u] = (pairs / (len(unit) - 1)).ravel()

    def compute(index: np.ndarray) -> np.ndarray:
        weights = _weights(index, n_units)
        coincidence = (weights @ per_unit).reshape(-1, k, k)
        margins = coincidence.sum(axis=2)
        total = margins.sum(axis=1)
        delta = _differences(level, margins, k)
        observed = (coincidence * delta).sum(axis=(1, 2))
        expected = (margins[:, :, None] * margins[:, None, :] * delta).sum(axis=(1, 2))
        return _alpha_from(total, observed, expected)

    return lambda index: _chunked(index, k * k * 4, compute)


def _interval_alpha(pairable: Sequence[Sequence[Any]]) -> Statistic:
    """Interval alpha from per-unit sums (see :func:`alpha_statistic`)."""
    sums = np.zeros((len(pairable), 4))
    for u, unit in enumerate(pairable):
        if unit:
            v = np.asarray(unit, dtype=float)
            m = v.size
            within = 2.0 * m * float(np.dot(v, v)) - 2.0 * float(v.sum()) ** 2
            sums[u] = (m, v.sum(), np.dot(v, v), within / (m - 1))
    center = sums[:, 1].sum() / max(sums[:, 0].sum(), 1.0)
    for u, unit in enumerate(pairable):  # centred values: the same alpha, less cancellation
        if unit:
            v = np.asarray(unit, dtype=float) - center
            sums[u, 1:3] = (v.sum(), np.dot(v, v))

    def compute(index: np.ndarray) -> np.ndarray:
        total, first, second, observed = (_weights(index, len(pairable)) @ sums).T
        expected = 2.0 * total * second - 2.0 * first**2
        return _alpha_from(total, observed, expected)

    return compute


def _alpha_from(total: np.ndarray, observed: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """``1 - (n - 1) sum o_ck d_ck / sum n_c n_k d_ck`` (NaN where nothing varies)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        result = 1.0 - (total - 1.0) * observed / expected
    return np.where((expected <= 1e-12) | (total < 2), np.nan, result)


def _differences(level: Level, margins: np.ndarray, k: int) -> Any:
    """The squared differences ``d_ck`` of the level (per resample for ordinal)."""
    if level == "nominal":
        return 1.0 - np.eye(k)
    cumulative = np.cumsum(margins, axis=1)  # ordinal: sum of n_g over g between c and k
    low = np.minimum.outer(np.arange(k), np.arange(k))
    high = np.maximum.outer(np.arange(k), np.arange(k))
    start = np.where(low > 0, cumulative[:, np.maximum(low - 1, 0)], 0.0)
    spanned = cumulative[:, high] - start
    half = (margins[:, :, None] + margins[:, None, :]) / 2.0
    return (spanned - half) ** 2


def krippendorff_alpha(units: Sequence[Sequence[Any]], level: Level = "nominal") -> float:
    """Krippendorff's alpha of the values raters gave each unit (NaN when undefined)."""
    return float(alpha_statistic(units, level)(_everything(len(units)))[0])


# ----------------------------------------------------------------------- intervals and tests


def _binomial_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k), X ~ Bin(n, p), summed in log space."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    if p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 0.0
    i = np.arange(k + 1)
    log_factorial = np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, n + 1)))])
    logs = log_factorial[n] - log_factorial[i] - log_factorial[n - i]
    logs += i * math.log(p) + (n - i) * math.log1p(-p)
    top = float(logs.max())
    return min(1.0, math.exp(top) * float(np.exp(logs - top).sum()))


def clopper_pearson(successes: int, n: int, confidence: float = 0.95) -> Interval:
    """Clopper-Pearson exact interval of a binomial proportion."""
    if n <= 0:
        return Interval(None, None, "clopper-pearson")
    tail = (1.0 - confidence) / 2.0

    def solve(target: Callable[[float], float]) -> float:
        low, high = 0.0, 1.0
        for _ in range(60):
            middle = (low + high) / 2.0
            if target(middle) > 0:
                low = middle
            else:
                high = middle
        return (low + high) / 2.0

    # lower: P(X >= k | p) = tail; upper: P(X <= k | p) = tail
    lower = (
        0.0 if successes == 0 else solve(lambda p: tail - (1 - _binomial_cdf(successes - 1, n, p)))
    )
    upper = 1.0 if successes == n else solve(lambda p: _binomial_cdf(successes, n, p) - tail)
    return Interval(lower, upper, "clopper-pearson")


def _normal_cdf(z: np.ndarray | float) -> Any:
    return 0.5 * (1.0 + np.vectorize(math.erf)(np.asarray(z) / math.sqrt(2.0)))


def _normal_quantile(p: float) -> float:
    """The standard normal quantile, by bisection on erf (enough for interval ends)."""
    low, high = -40.0, 40.0
    for _ in range(100):
        middle = (low + high) / 2.0
        if 0.5 * (1.0 + math.erf(middle / math.sqrt(2.0))) < p:
            low = middle
        else:
            high = middle
    return (low + high) / 2.0


def resample_indices(n: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """``resamples`` rows of ``n`` item indices drawn with replacement."""
    return rng.integers(0, n, size=(resamples, n))


def bootstrap_interval(
    statistic: Statistic,
    n: int,
    *,
    resamples: int = RESAMPLES,
    confidence: float = 0.95,
    seed: int | np.random.Generator = 0,
    method: Literal["bca", "percentile"] = "bca",
    index: np.ndarray | None = None,
) -> Interval:
    """A bootstrap interval of ``statistic`` over ``n`` items (BCa or percentile); ``index``
    reuses resamples already drawn (paired designs)."""
    if n < 2:
        return Interval(None, None, method)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    rows = resample_indices(n, resamples, rng) if index is None else index
    values = statistic(rows)
    finite = values[np.isfinite(values)]
    undefined = 1.0 - finite.size / values.size
    if finite.size < max(10, values.size // 2):
        return Interval(None, None, method, undefined)
    tail = (1.0 - confidence) / 2.0
    quantiles = np.array([tail, 1.0 - tail])
    if method == "bca":
        estimate = float(statistic(np.arange(n)[None, :])[0])
        adjusted = _bca_levels(statistic, n, finite, estimate, quantiles)
        if adjusted is not None:
            quantiles = adjusted
    low, high = np.quantile(finite, quantiles)
    return Interval(float(low), float(high), method, undefined)


def _bca_levels(
    statistic: Statistic, n: int, finite: np.ndarray, estimate: float, levels: np.ndarray
) -> np.ndarray | None:
    """BCa's adjusted quantile levels (bias from the resamples, acceleration from the
    jackknife); None when either is undefined (then the percentile interval is used)."""
    if not math.isfinite(estimate):
        return None
    below = (np.count_nonzero(finite < estimate) + 0.5 * np.count_nonzero(finite == estimate)) / (
        finite.size
    )
    if below <= 0.0 or below >= 1.0:
        return None
    z0 = _normal_quantile(below)
    leave_one_out = np.array([np.delete(np.arange(n), i) for i in range(n)])
    jack = statistic(leave_one_out)
    if not np.all(np.isfinite(jack)):
        return None
    spread = jack.mean() - jack
    denominator = 6.0 * (spread**2).sum() ** 1.5
    acceleration = float((spread**3).sum() / denominator) if denominator > 0 else 0.0
    out = []
    for level in levels:
        z = _normal_quantile(float(level))
        shifted = z0 + (z0 + z) / (1.0 - acceleration * (z0 + z))
        out.append(float(_normal_cdf(shifted)))
    return np.clip(np.array(out), 0.0, 1.0)


def mcnemar_exact(right_a: Sequence[bool], right_b: Sequence[bool]) -> tuple[float, int, int]:
    """McNemar's exact test of two judges' accuracy on the same items: (p, only A right, only
    B right); p is 1 when no item tells them apart."""
    a = np.asarray(right_a, dtype=bool)
    b = np.asarray(right_b, dtype=bool)
    only_a = int(np.count_nonzero(a & ~b))
    only_b = int(np.count_nonzero(b & ~a))
    discordant = only_a + only_b
    if discordant == 0:
        return 1.0, only_a, only_b
    p = min(1.0, 2.0 * _binomial_cdf(min(only_a, only_b), discordant, 0.5))
    return p, only_a, only_b


@dataclass(frozen=True)
class PairedDifference:
    """A paired bootstrap comparison of one coefficient for two judges on the same items."""

    a: float
    b: float
    difference: float
    """``b - a``."""
    p_value: float | None
    interval: Interval


def paired_bootstrap(
    statistic_a: Statistic,
    statistic_b: Statistic,
    n: int,
    *,
    resamples: int = RESAMPLES,
    confidence: float = 0.95,
    seed: int | np.random.Generator = 0,
) -> PairedDifference:
    """The difference ``b - a`` of a coefficient for two judges, resampling the items together:
    its percentile interval and two-sided p-value (see the module docstring)."""
    everything = np.arange(n)[None, :]
    a = float(statistic_a(everything)[0])
    b = float(statistic_b(everything)[0])
    difference = b - a
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    rows = resample_indices(n, resamples, rng)
    deltas = statistic_b(rows) - statistic_a(rows)
    finite = deltas[np.isfinite(deltas)]
    if n < 2 or not math.isfinite(difference) or finite.size < max(10, deltas.size // 2):
        return PairedDifference(a, b, difference, None, Interval(None, None, "percentile"))
    extreme = int(np.count_nonzero(np.abs(finite - difference) >= abs(difference) - 1e-12))
    p = min(1.0, float(1 + extreme) / (finite.size + 1))
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(finite, [tail, 1.0 - tail])
    undefined = 1.0 - finite.size / deltas.size
    interval = Interval(float(low), float(high), "percentile", undefined)
    return PairedDifference(a, b, difference, p, interval)
