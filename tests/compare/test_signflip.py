"""The Monte Carlo branch of the sign-flip test (n > 16 pairs): random 64-bit words, one sign per
bit, and tables of the 256 partial sums of each 8 deltas. Checked against scipy's paired
permutation test, on exact ties, and for fair, independent signs mapped to the right pairs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fakes import scipy_p
from qa_eval.compare import signflip
from qa_eval.compare.signflip import EXACT_MAX_N, sign_flip_test

ALPHA = 0.05


def error(p: float, *resamples: float) -> float:
    """Five standard errors of the difference of independent Monte Carlo estimates of ``p``
    (an exact one, ``inf`` resamples, adds none), plus the granularity of the estimates."""
    p = min(max(p, 1e-3), 1 - 1e-3)
    finite = [r for r in resamples if math.isfinite(r)]
    return 5 * math.sqrt(p * (1 - p) * sum(1 / r for r in finite)) + sum(2 / r for r in finite)


def normal(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.normal(1.5 / math.sqrt(n), 1.0, n)


def bernoulli(rng: np.random.Generator, n: int) -> np.ndarray:
    """Differences of 0/1 scores: -1, 0, +1, with many ties."""
    shift = 0.5 + min(0.4, 1.2 / math.sqrt(n))
    return (rng.random(n) < shift).astype(float) - (rng.random(n) < 0.5)


def grid(rng: np.random.Generator, n: int) -> np.ndarray:
    """Scores on a 0.1 grid (not exact in binary), half the differences 0."""
    values = rng.integers(-3, 5, n) / 10
    values[rng.permutation(n)[: n // 2]] = 0.0
    return values


@pytest.mark.parametrize("draw", [normal, bernoulli, grid])
@pytest.mark.parametrize("n", [17, 50, 500])
def test_p_and_interval_agree_with_scipy(n: int, draw) -> None:
    rng = np.random.default_rng(n)
    deltas = draw(rng, n)
    ours_r = 20_000
    p, low, high = sign_flip_test(deltas, resamples=ours_r, rng=np.random.default_rng(7))
    theirs_r = 10_000  # scipy's own Monte Carlo
    reference = scipy_p(deltas, theirs_r, seed=n)
    assert abs(p - reference) <= error(reference, ours_r, theirs_r), (p, reference)
    assert low is not None and high is not None
    assert low <= deltas.mean() <= high
    assert (low <= 0 <= high) == (p >= ALPHA)
    # the interval is the inverted test: just inside an end scipy keeps the shift, just outside
    # it rejects it (up to Monte Carlo error in both estimates)
    step = 1e-7 * float(np.max(np.abs(deltas)))
    for end, inward in ((low, step), (high, -step)):
        inside = scipy_p(deltas - (end + inward), theirs_r, seed=n + 1)
        outside = scipy_p(deltas - (end - inward), theirs_r, seed=n + 2)
        assert inside >= ALPHA - error(ALPHA, ours_r, theirs_r), (end, inside)
        assert outside <= ALPHA + error(ALPHA, ours_r, theirs_r), (end, outside)


def test_monte_carlo_p_matches_the_exact_p_at_17_pairs() -> None:
    # n = 17 is the first Monte Carlo size: all 2**17 vectors give the exact p to compare with
    n = EXACT_MAX_N + 1
    for seed in range(4):
        deltas = np.random.default_rng(seed).integers(-20, 30, n) / 64
        signs = 1 - 2 * ((np.arange(2**n)[:, None] >> np.arange(n)) & 1)
        exact = float(np.mean(np.abs(signs @ deltas) >= abs(deltas.sum())))
        resamples = 50_000
        p, _, _ = sign_flip_test(deltas, resamples=resamples, rng=np.random.default_rng(seed))
        assert abs(p - exact) <= error(exact, resamples), (seed, p, exact)


# ---------------------------------------------------------------- ties


def test_all_equal_differences() -> None:
    # only the all-+1 and all--1 vectors are as extreme (chance 2**(1-n) each draw)
    for n, value in ((17, 0.1), (40, -0.3), (1000, 1 / 3)):
        resamples = 4000
        deltas = np.full(n, value)
        sums, counts = signflip._sign_sums(deltas, resamples, np.random.default_rng(n))
        assert np.allclose(sums, value * counts, rtol=0, atol=1e-12 * n)
        p, low, high = sign_flip_test(deltas, resamples=resamples, rng=np.random.default_rng(n))
        assert p == (1 + np.count_nonzero(np.abs(counts[:-1]) == n)) / (resamples + 1)
        assert low == pytest.approx(value, abs=1e-12) and high == pytest.approx(value, abs=1e-12)


@pytest.mark.parametrize("n", [17, 64, 1001])
def test_all_zero_differences_give_p_one(n: int) -> None:
    p, low, high = sign_flip_test(np.zeros(n), resamples=500)
    assert (p, low, high) == (1.0, 0.0, 0.0)
    # differences within 1e-12 of 0 are ties too
    p, _, _ = sign_flip_test(np.full(n, 1e-13) * (-1) ** np.arange(n), resamples=500)
    assert p == 1.0


def test_half_zero_differences_count_only_the_nonzero_signs() -> None:
    # 5 equal nonzero differences and 15 zeros: extreme exactly when the 5 signs agree, 2/32
    values = np.zeros(20)
    values[[0, 7, 8, 13, 19]] = 0.1
    resamples = 40_000
    p, _, _ = sign_flip_test(values, resamples=resamples, rng=np.random.default_rng(3))
    assert abs(p - 2 / 32) <= error(2 / 32, resamples)


def test_a_sum_that_is_zero_up_to_rounding_gives_p_one() -> None:
    # 0.1 + 0.2 - 0.3 is not 0 in binary: every sign vector still ties the observed statistic
    deltas = np.tile([0.1, 0.2, -0.3, 0.7, -0.4, -0.3], 5)
    assert math.fsum(deltas) != 0.0
    p, low, high = sign_flip_test(deltas, resamples=2000)
    assert p == 1.0
    assert low is not None and high is not None and low < 0 < high


@pytest.mark.parametrize("n", [17, 200, 3001])
def test_ties_do_not_depend_on_rounding(n: int) -> None:
    # integer differences sum exactly in any order; the same differences scaled by 0.1, 1/3 or
    # 1e6 round differently in every order. The test is scale-free, so with the same sign vectors
    # (same seed) every p must be the integer one, where many vectors tie |S| exactly.
    rng = np.random.default_rng(n)
    integers = (rng.integers(0, 2, n) - rng.integers(0, 2, n)).astype(float)  # Bernoulli
    integers[rng.permutation(n)[: n // 3]] = 0.0
    integers += np.where(rng.random(n) < 0.2, rng.integers(-3, 4, n), 0)
    base, base_low, base_high = sign_flip_test(integers, rng=np.random.default_rng(1))
    sums, _ = signflip._sign_sums(integers, 10_000, np.random.default_rng(1))
    ties = np.count_nonzero(np.abs(sums[:-1]) == abs(integers.sum()))
    assert ties >= 20, ties  # the check below is about something
    for scale in (0.1, 1 / 3, 1e6, 7e-9):
        p, low, high = sign_flip_test(integers * scale, rng=np.random.default_rng(1))
        assert p == base, (scale, p, base)
        assert base_low is not None and base_high is not None
        assert low == pytest.approx(base_low * scale, rel=1e-9)
        assert high == pytest.approx(base_high * scale, rel=1e-9)


# ---------------------------------------------------------------- the random signs


def decode(sums: np.ndarray, width: int) -> np.ndarray:
    """The flipped positions of ``width`` pairs with ``d_j = 2**j`` (sums exact in binary):
    ``A = (2**width - 1) - 2 F``, where ``F`` has bit ``j`` set when pair ``j`` was flipped."""
    flipped = ((2**width - 1) - sums.astype(np.int64)) // 2
    return ((flipped[:, None] >> np.arange(width)) & 1).astype(bool)


@pytest.mark.parametrize(
    ("n", "window"),
    [(17, 0), (50, 0), (130, 100), (1100, 1000), (1100, 1060), (2051, 2010)],
)
def test_signs_are_fair_independent_coins_mapped_to_their_pairs(n: int, window: int) -> None:
    # 40 pairs with d = 2**j at positions window.. (across words, bytes and the 1,024-pair
    # blocks), 0 elsewhere: each sum encodes exactly which of them were flipped
    width = min(40, n - window)
    deltas = np.zeros(n)
    deltas[window : window + width] = 2.0 ** np.arange(width)
    resamples = 20_000
    sums, counts = signflip._sign_sums(deltas, resamples, np.random.default_rng(n + window))
    assert sums[-1] == 2**width - 1 and counts[-1] == n  # the observed vector, last
    signs = decode(sums[:-1], width)
    frequency = signs.mean(axis=0)
    bound = 5 * math.sqrt(0.25 / resamples)
    assert np.all(np.abs(frequency - 0.5) <= bound), frequency
    # neighbours (in a byte, across bytes and words) flip independently: P(both) = 1/4
    both = (signs[:, :-1] & signs[:, 1:]).mean(axis=0)
    assert np.all(np.abs(both - 0.25) <= 5 * math.sqrt(0.25 * 0.75 / resamples)), both
    # counts are n - 2 * flips, so they agree with the decoded signs where they can be checked
    assert np.all((counts[:-1] - n) % 2 == 0) and np.all(np.abs(counts) <= n)
    if width == n:
        assert np.array_equal(counts[:-1], n - 2 * signs.sum(axis=1))


@pytest.mark.parametrize("n", [17, 63, 64, 65, 1024, 1031, 5000])
def test_statistic_has_the_permutation_moments(n: int) -> None:
    # under random signs: E sum s_i = 0, Var sum s_i = n, E A = 0, Var A = sum d_i**2
    deltas = np.random.default_rng(n).normal(0.3, 1.0, n)
    resamples = 20_000
    sums, counts = signflip._sign_sums(deltas, resamples, np.random.default_rng(0))
    sums, counts = sums[:-1], counts[:-1]
    assert abs(counts.mean()) <= 5 * math.sqrt(n / resamples)
    assert counts.var() == pytest.approx(n, rel=5 * math.sqrt(2 / resamples))
    spread = float(np.sum(deltas**2))
    assert abs(sums.mean()) <= 5 * math.sqrt(spread / resamples)
    assert sums.var() == pytest.approx(spread, rel=5 * math.sqrt(2 / resamples))


def test_chunking_and_the_popcount_fallback_give_the_same_sums(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    deltas = np.random.default_rng(2).normal(size=2500)  # 3 blocks, the last one partial
    whole = signflip._sign_sums(deltas, 3000, np.random.default_rng(5))
    monkeypatch.setattr(signflip, "_CHUNK_ELEMENTS", 1000)
    chunked = signflip._sign_sums(deltas, 3000, np.random.default_rng(5))
    monkeypatch.delattr(np, "bitwise_count", raising=False)  # numpy < 2.0
    fallback = signflip._sign_sums(deltas, 3000, np.random.default_rng(5))
    for other in (chunked, fallback):
        assert np.array_equal(whole[0], other[0]) and np.array_equal(whole[1], other[1])


def test_the_given_generator_is_used_and_the_default_is_seed_0() -> None:
    deltas = np.random.default_rng(4).normal(0.2, 1.0, 60)
    default = sign_flip_test(deltas, resamples=3000)
    assert sign_flip_test(deltas, resamples=3000, rng=np.random.default_rng(0)) == default
    assert sign_flip_test(deltas, resamples=3000, rng=np.random.default_rng(1)) != default
    rng = np.random.default_rng(9)
    first = sign_flip_test(deltas, resamples=3000, rng=rng)
    assert sign_flip_test(deltas, resamples=3000, rng=rng) != first  # the stream moved on
