"""The paired sign-flip permutation test that ``compare.runs`` runs per metric (its docstring states
the method and sources): the p-value of "mean difference = 0", exact over all ``2**n`` sign
vectors up to :data:`EXACT_MAX_N` pairs, else Monte Carlo with ``resamples`` random vectors plus
the observed one, and the confidence interval by test inversion.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = [
    "EXACT_MAX_N",
    "MAX_RESAMPLES",
    "TIE_TOLERANCE",
    "alpha_of",
    "check_options",
    "sign_flip_test",
    "smallest_p",
]

TIE_TOLERANCE = 1e-12


EXACT_MAX_N = 16
"""Rows with at most this many pairs enumerate all 2**n sign vectors (65,536 at 16)."""


MAX_RESAMPLES = 1_000_000
"""The most random sign vectors a row may draw."""


_RELATIVE_TOLERANCE = 1e-9


_CHUNK_ELEMENTS = 1 << 16
"""Table look-ups per chunk of Monte Carlo rows: 512 KiB of indices and 512 KiB of float64,
reused from chunk to chunk (larger chunks were slower: fresh pages and cache misses)."""


_BLOCK_GROUPS = 128
"""Groups of 8 pairs a Monte Carlo block covers: 1,024 pairs, whose 128 tables of 256 partial
sums (256 KiB) stay in the CPU's cache while every resample looks them up."""


_WORD = np.dtype("<u8")
_ALL_BITS = int(np.iinfo(np.uint64).max)
_BYTE_POPCOUNT = np.array([bin(b).count("1") for b in range(256)], dtype=np.int64)


def _byte_tables(deltas: np.ndarray) -> np.ndarray:
    """Per group of 8 deltas (zero-padded), the 256 sums ``sum_j s_j d_j`` where bit ``j`` of the
    column index set means ``s_j = -1``, built by doubling as in the exact branch."""
    groups = -(-deltas.size // 8)
    padded = np.zeros(groups * 8)
    padded[: deltas.size] = deltas
    by_group = padded.reshape(groups, 8)
    tables = np.zeros((groups, 1))
    for j in range(8):
        column = by_group[:, j : j + 1]
        tables = np.concatenate((tables + column, tables - column), axis=1)
    return tables


def _flips(words: np.ndarray) -> np.ndarray:
    """The set bits of each row of ``words`` (the flipped signs), as int64."""
    bitwise_count = getattr(np, "bitwise_count", None)  # numpy >= 2.0
    if bitwise_count is not None:
        return np.asarray(bitwise_count(words)).sum(axis=1, dtype=np.int64)
    return _BYTE_POPCOUNT[words.view(np.uint8)].sum(axis=1)


def _random_sign_sums(
    deltas: np.ndarray, resamples: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """``sum s_i d_i`` and ``sum s_i`` for ``resamples`` random sign vectors (fair coins).

    Every random bit is one sign (set: ``-1``), drawn as 64-bit words: pair ``i`` is bit
    ``i % 8`` of byte ``i // 8``, and each resample's sum is ``ceil(n / 8)`` look-ups in tables
    of the 256 partial sums of each 8 deltas (:func:`_byte_tables`) instead of ``n``
    multiply-adds. The pairs are taken in blocks of ``_BLOCK_GROUPS * 8``; for each block every
    resample draws its words in turn (whole words per resample, bits past ``n`` cleared), so
    the stream, and with it every result, does not depend on how the rows are chunked."""
    n = deltas.size
    groups = -(-n // 8)
    sums = np.zeros(resamples)
    flips = np.zeros(resamples, dtype=np.int64)
    block = min(_BLOCK_GROUPS, groups)
    chunk = max(1, min(resamples, _CHUNK_ELEMENTS // block))
    index = np.empty(chunk * block, dtype=np.intp)  # reused by every chunk, as (rows, size)
    looked_up = np.empty(chunk * block)
    for first in range(0, groups, block):
        size = min(block, groups - first)
        words = -(-size // 8)
        table = _byte_tables(deltas[first * 8 : (first + size) * 8]).ravel()
        offsets = np.arange(size, dtype=np.intp) * 256
        last_bits = n - first * 8 - 64 * (words - 1)  # signs in a resample's last word
        for start in range(0, resamples, chunk):
            rows = min(chunk, resamples - start)
            drawn = rng.integers(0, _ALL_BITS, (rows, words), dtype=np.uint64, endpoint=True)
            if last_bits < 64:
                drawn[:, -1] &= np.uint64((1 << last_bits) - 1)
            as_bytes = drawn.astype(_WORD, copy=False).view(np.uint8)[:, :size]
            at = index[: rows * size].reshape(rows, size)
            values = looked_up[: rows * size].reshape(rows, size)
            np.add(as_bytes, offsets, out=at)
            np.take(table, at, out=values, mode="clip")
            sums[start : start + rows] += values.sum(axis=1)
            flips[start : start + rows] += _flips(drawn)
    return sums, n - 2 * flips


def _sign_sums(
    deltas: np.ndarray, resamples: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """``sum s_i d_i`` and ``sum s_i`` for the sign vectors of the test.

    Exact: all ``2**n`` vectors, built by doubling (each new pair adds ``+d`` and ``-d``).
    Monte Carlo: ``resamples`` random vectors (:func:`_random_sign_sums`) and the observed one
    (all ``+1``) last."""
    n = deltas.size
    if n <= EXACT_MAX_N:
        sums = np.zeros(1)
        counts = np.zeros(1, dtype=np.int64)
        for value in deltas:
            sums = np.concatenate((sums + value, sums - value))
            counts = np.concatenate((counts + 1, counts - 1))
        return sums, counts
    random_sums, random_counts = _random_sign_sums(deltas, resamples, rng)
    sums = np.append(random_sums, float(deltas.sum()))
    counts = np.append(random_counts, n)
    return sums, counts


def check_options(resamples: int, confidence: float) -> None:
    if isinstance(resamples, bool) or not isinstance(resamples, int):
        raise ValueError(f"resamples must be an integer, got {resamples!r}")
    if not 1 <= resamples <= MAX_RESAMPLES:
        raise ValueError(f"resamples must be between 1 and {MAX_RESAMPLES:,}, got {resamples:,}")
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)):
        raise ValueError(f"confidence must be a number between 0 and 1, got {confidence!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence!r}")


def alpha_of(confidence: float) -> float:
    """``1 - confidence`` without the binary rounding error (0.95 gives 0.05, not 0.05000...04)."""
    return round(1.0 - confidence, 12)


def smallest_p(n: int, resamples: int) -> float:
    """The smallest p-value the test can give with ``n`` pairs (1 when ``n < 2``)."""
    if n < 2:
        return 1.0
    if n <= EXACT_MAX_N:
        return 2.0 ** (1 - n)
    return 1.0 / (resamples + 1)


def sign_flip_test(
    deltas: Sequence[float] | np.ndarray,
    *,
    confidence: float = 0.95,
    resamples: int = 10_000,
    rng: np.random.Generator | None = None,
) -> tuple[float, float | None, float | None]:
    """Two-sided paired sign-flip test of mean ``deltas`` = 0: ``(p, ci_low, ci_high)``.

    The interval holds every shift ``theta`` the test of ``deltas - theta`` does not reject at
    ``1 - confidence``; it is ``(None, None)`` when no shift can be rejected."""
    check_options(resamples, confidence)
    d = np.asarray(deltas, dtype=float).ravel()
    n = d.size
    if n == 0:
        raise ValueError("the sign-flip test needs at least one difference")
    if not np.all(np.isfinite(d)):
        raise ValueError("differences must be finite numbers")
    d = np.where(np.abs(d) <= TIE_TOLERANCE, 0.0, d)
    sums, counts = _sign_sums(d, resamples, rng if rng is not None else np.random.default_rng(0))
    total_vectors = sums.size
    total = math.fsum(d.tolist())
    # For a sign vector s (A = sum s_i d_i, k = sum s_i) the shifted statistic is extreme,
    # |A - k theta| >= |S - n theta|, exactly when theta lies between the roots
    # (S - A) / (n - k) and (S + A) / (n + k); for k = +-n it is extreme for every theta.
    # Every such interval contains the mean S / n (where the right side is 0), so below the
    # mean p(theta) only grows and above it only falls: the kept set is an interval, bounded by
    # order statistics of the roots.
    always = np.abs(counts) == n
    base = int(np.count_nonzero(always))
    a, k = sums[~always], counts[~always].astype(float)
    first = (total - a) / (n - k)
    second = (total + a) / (n + k)
    low, high = np.minimum(first, second), np.maximum(first, second)
    # Ties that rounding split count as extreme (conservative): widen by a relative tolerance.
    slack = _RELATIVE_TOLERANCE * float(np.max(np.abs(d)))
    covered = base + int(np.count_nonzero((low <= slack) & (high >= -slack)))
    p_value = min(1.0, covered / total_vectors)
    alpha = alpha_of(confidence)
    # theta is kept when p(theta) = covered(theta) / N >= alpha, i.e. covered(theta) >= need.
    need = max(1, math.ceil(alpha * total_vectors * (1 - 1e-12)))
    if base >= need:
        return p_value, None, None
    rank = need - base - 1
    ci_low = float(np.partition(low, rank)[rank])
    ci_high = float(-np.partition(-high, rank)[rank])
    if p_value >= alpha:  # 0 is kept: a root that rounding put just past 0 is 0
        ci_low, ci_high = min(ci_low, 0.0), max(ci_high, 0.0)
    mean = total / n
    return p_value, min(ci_low, mean), max(ci_high, mean)
