"""compare_runs checked by simulation: false positives under the null at every n, the family-wise
rate with Holm, power against a real shift, and the coverage of the intervals."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from qa_eval.compare.runs import compare_runs

ALPHA = 0.05
Draw = Callable[[np.random.Generator, int], np.ndarray]


def uniform(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.uniform(0.0, 1.0, n)


def bernoulli(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.integers(0, 2, n).astype(float)


def runs(
    sizes: list[int], draw: Draw, rng: np.random.Generator, shift: float = 0.0
) -> tuple[list[dict], list[dict]]:
    """One template per size; A and B drawn independently, B shifted by ``shift``."""
    a: list[dict] = []
    b: list[dict] = []
    for t, n in enumerate(sizes):
        xa, xb = draw(rng, n), draw(rng, n) + shift
        for i in range(n):
            common = {"template_id": f"t{t}", "question_id": f"t{t}q{i}", "status": "success"}
            a.append({**common, "score": float(xa[i])})
            b.append({**common, "score": float(xb[i])})
    return a, b


def template_rows(sizes: list[int], draw: Draw, seed: int, shift: float = 0.0) -> list[dict]:
    a, b = runs(sizes, draw, np.random.default_rng(seed), shift)
    comparison = compare_runs(a, b, metrics=["score"], resamples=499, seed=seed)
    (entry,) = comparison["metrics"]
    return entry["per_template"]


def slack(rate: float, trials: int, sigmas: float) -> float:
    """``sigmas`` binomial standard errors of a rate estimated from ``trials``."""
    return sigmas * math.sqrt(rate * (1 - rate) / trials)


def most(trials: int, rate: float, level: float = 0.001) -> int:
    """The largest count of events that ``Binomial(trials, rate)`` exceeds with chance >= level:
    a bound per check that a correct method fails once in 1000 (several dozen checks here)."""
    tail = 1.0
    for count in range(trials + 1):
        tail -= math.comb(trials, count) * rate**count * (1 - rate) ** (trials - count)
        if tail < level:  # P(X > count) < level
            return count
    return trials


def test_false_positive_rate_under_the_null_is_at_most_nominal_at_every_n() -> None:
    trials = 200
    for seed, draw in enumerate((uniform, bernoulli)):
        pooled: list[bool] = []
        for n in range(2, 31):
            rows = template_rows([n] * trials, draw, seed=1000 * seed + n)
            rejected = [r["p_value"] < ALPHA for r in rows]
            rate = float(np.mean(rejected))
            if n < 6:  # 2 ** (1 - n) >= 0.05: nothing can be significant, and nothing is
                assert rate == 0.0 and not any(r["testable"] for r in rows), (draw, n)
                assert min(r["p_value"] for r in rows) >= 2.0 ** (1 - n)
                continue
            assert all(r["testable"] for r in rows)
            assert sum(rejected) <= most(trials, ALPHA), (draw.__name__, n, rate)
            pooled += rejected
        # over 25 sizes x 200 trials the point estimate is at most nominal (within 1.5 SE)
        assert np.mean(pooled) <= ALPHA + slack(ALPHA, len(pooled), 1.5), draw.__name__


def test_holm_keeps_the_family_wise_rate_at_most_nominal() -> None:
    rng = np.random.default_rng(7)
    families = 150
    any_marked = []
    for f in range(families):
        sizes = [int(s) for s in rng.integers(6, 31, 8)]
        rows = template_rows(sizes, uniform, seed=20_000 + f)
        any_marked.append(any(r["better"] is not None for r in rows))
        # unadjusted, some family members would often look significant; the mark never follows p
        for row in rows:
            assert (row["better"] is not None) == (row["p_adjusted"] < ALPHA)
    assert sum(any_marked) <= most(families, ALPHA)


def test_a_shift_of_0_2_in_a_uniform_score_is_found_at_n_30() -> None:
    trials = 150
    found = []
    for trial in range(trials):
        a, b = runs([30], uniform, np.random.default_rng(30_000 + trial), shift=0.2)
        comparison = compare_runs(a, b, resamples=2000, seed=trial)
        row = comparison["metrics"][0]["overall"]
        assert row["better"] != "a"
        found.append(row["better"] == "b")
    # the paired t-test's power here is about 0.76 (effect 0.2 / sd 0.41, n = 30)
    assert np.mean(found) >= 0.6, np.mean(found)


def test_intervals_cover_the_true_shift() -> None:
    trials = 200
    pooled = []
    for n in (6, 8, 12, 16, 20, 30):
        rows = template_rows([n] * trials, uniform, seed=40_000 + n, shift=0.2)
        covered = [r["ci_low"] is None or r["ci_low"] <= 0.2 <= r["ci_high"] for r in rows]
        assert all(r["ci_low"] is not None for r in rows)  # testable rows get bounded intervals
        rate = float(np.mean(covered))
        assert trials - sum(covered) <= most(trials, ALPHA), (n, rate)
        pooled += covered
    assert np.mean(pooled) >= 1 - ALPHA - slack(ALPHA, len(pooled), 1.5)
    # below 6 pairs no shift can be rejected at 95%: the interval is unbounded, not overclaimed
    assert all(r["ci_low"] is None for r in template_rows([5] * 20, uniform, seed=1, shift=0.2))
