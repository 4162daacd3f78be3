"""The agreement statistics against hand tables, scipy, independent implementations written here
from the definitions, and Krippendorff's worked example."""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pytest

from qa_eval.agreement.stats import (
    accuracy,
    alpha_statistic,
    bootstrap_interval,
    clopper_pearson,
    cohen_kappa,
    confusion_matrix,
    kappa_statistic,
    kendall_tau_b,
    krippendorff_alpha,
    mae,
    mcnemar_exact,
    paired_bootstrap,
    roc_auc,
    spearman,
)
from qa_eval.compare.runs import holm

scipy_stats = pytest.importorskip("scipy.stats", reason="scipy is in the test extra")


# ------------------------------------------------------------------ independent definitions


def kappa_by_definition(a: list, b: list) -> float:
    """(p_o - p_e) / (1 - p_e) with the margins counted in plain Python."""
    n = len(a)
    p_o = sum(x == y for x, y in zip(a, b)) / n
    ca, cb = Counter(a), Counter(b)
    p_e = sum(ca[k] * cb[k] for k in set(a) | set(b)) / n**2
    return (p_o - p_e) / (1 - p_e)


def auc_by_definition(scores: list, positive: list) -> float:
    """P(score+ > score-) + P(tie) / 2 over every (positive, negative) pair."""
    pos = [s for s, p in zip(scores, positive) if p]
    neg = [s for s, p in zip(scores, positive) if not p]
    wins = sum((x > y) + 0.5 * (x == y) for x in pos for y in neg)
    return wins / (len(pos) * len(neg))


def alpha_by_definition(units: list[list[float]], level: str) -> float:
    """Krippendorff's alpha from its pairable values: D_o over the ordered pairs within units
    (each weighted 1 / (m_u - 1)), D_e over every ordered pair of pairable values."""
    pairable = [u for u in units if len(u) >= 2]
    values = [v for u in pairable for v in u]
    n = len(values)
    counts = Counter(values)
    ordered = sorted(counts)

    def delta(c: float, k: float) -> float:
        if level == "nominal":
            return float(c != k)
        if level == "interval":
            return (c - k) ** 2
        lo, hi = min(c, k), max(c, k)
        between = sum(counts[g] for g in ordered if lo <= g <= hi)
        return (between - (counts[c] + counts[k]) / 2) ** 2

    observed = sum(
        delta(u[i], u[j]) / (len(u) - 1)
        for u in pairable
        for i, j in itertools.permutations(range(len(u)), 2)
    )
    expected = sum(delta(c, k) for c, k in itertools.permutations(values, 2))
    return 1 - (n - 1) * observed / expected


# ------------------------------------------------------------------ hand tables


def test_kappa_accuracy_and_confusion_on_a_hand_table() -> None:
    # label \ judge   yes  no
    #   yes            20   5
    #   no             10  15      p_o = 35/50, p_e = (30*25 + 20*25)/2500 = 0.5, kappa = 0.4
    label = ["yes"] * 25 + ["no"] * 25
    judge = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert accuracy(judge, label) == pytest.approx(0.7)
    assert cohen_kappa(judge, label) == pytest.approx(0.4)
    matrix, classes = confusion_matrix(judge, label)
    assert classes == ["no", "yes"]
    assert matrix.tolist() == [[15, 10], [5, 20]]


def test_kappa_is_undefined_when_both_sides_use_one_class() -> None:
    assert math.isnan(cohen_kappa([1, 1, 1], [1, 1, 1]))
    assert cohen_kappa([1, 0, 1], [1, 1, 1]) == pytest.approx(0.0)


def test_auc_on_a_hand_table_with_ties() -> None:
    # positives 0.9, 0.5; negatives 0.5, 0.1: pairs (0.9>0.5, 0.9>0.1, 0.5=0.5, 0.5>0.1) = 3.5/4
    assert roc_auc([0.9, 0.5, 0.5, 0.1], [True, True, False, False]) == pytest.approx(0.875)
    assert math.isnan(roc_auc([0.1, 0.2], [True, True]))


def test_mae_on_a_hand_table() -> None:
    assert mae([1.0, 2.0, 4.0], [1.5, 2.0, 1.0]) == pytest.approx((0.5 + 0 + 3) / 3)


# ------------------------------------------------------------------ references


@pytest.mark.parametrize("seed", range(12))
def test_spearman_and_kendall_match_scipy_with_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 60))
    x = rng.integers(0, 4, n).astype(float)  # few levels: many ties
    y = x + rng.integers(-2, 3, n)
    if len(set(x)) < 2 or len(set(y)) < 2:
        x[0], y[0] = 9.0, -9.0
    assert spearman(x, y) == pytest.approx(scipy_stats.spearmanr(x, y)[0], abs=1e-12)
    assert kendall_tau_b(x, y) == pytest.approx(
        scipy_stats.kendalltau(x, y, variant="b")[0], abs=1e-12
    )
    z = rng.standard_normal(n)  # no ties
    assert spearman(z, y) == pytest.approx(scipy_stats.spearmanr(z, y)[0], abs=1e-12)
    assert kendall_tau_b(z, y) == pytest.approx(scipy_stats.kendalltau(z, y)[0], abs=1e-12)


@pytest.mark.parametrize("seed", range(12))
def test_kappa_and_auc_match_their_definitions(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(5, 80))
    classes = ["a", "b", "c"][: int(rng.integers(2, 4))]
    label = [classes[i] for i in rng.integers(0, len(classes), n)]
    judge = [
        lab if rng.random() < 0.6 else classes[int(rng.integers(0, len(classes)))] for lab in label
    ]
    if len(set(judge)) == 1 and set(judge) == set(label):
        judge[0] = "z"
    assert cohen_kappa(judge, label) == pytest.approx(kappa_by_definition(judge, label))
    positive = rng.random(n) < 0.5
    positive[0], positive[1] = True, False
    scores = np.round(positive * 0.5 + rng.random(n), 1)  # rounded: ties
    assert roc_auc(scores, positive) == pytest.approx(
        auc_by_definition(list(scores), list(positive))
    )


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
@pytest.mark.parametrize("seed", range(6))
def test_alpha_matches_its_definition_with_missing_values(level: str, seed: int) -> None:
    rng = np.random.default_rng(200 + seed)
    units = []
    for _ in range(int(rng.integers(4, 25))):
        truth = int(rng.integers(1, 6))
        m = int(rng.integers(1, 5))  # units of one value (not pairable) included
        units.append(
            [
                float(truth + rng.integers(-1, 2)) if rng.random() < 0.4 else float(truth)
                for _ in range(m)
            ]
        )
    units.append([1.0, 5.0])
    got = krippendorff_alpha(units, level)  # type: ignore[arg-type]
    assert got == pytest.approx(alpha_by_definition(units, level), abs=1e-12)


# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", the example with missing
# values: 4 observers, 12 units (None: not coded). The paper gives alpha 0.743 (nominal), 0.815
# (ordinal) and 0.849 (interval).
KRIPPENDORFF_EXAMPLE = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]


@pytest.mark.parametrize(
    ("level", "expected"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)]
)
def test_alpha_reproduces_krippendorffs_worked_example(level: str, expected: float) -> None:
    units = [[row[u] for row in KRIPPENDORFF_EXAMPLE if row[u] is not None] for u in range(12)]
    assert round(krippendorff_alpha(units, level), 3) == expected  # type: ignore[arg-type]


def test_alpha_is_one_for_perfect_agreement_and_undefined_without_variation() -> None:
    assert krippendorff_alpha([[1, 1], [2, 2], [3, 3]], "interval") == pytest.approx(1.0)
    assert math.isnan(krippendorff_alpha([[1, 1], [1, 1]], "nominal"))
    assert math.isnan(krippendorff_alpha([[1], [2]], "nominal"))  # nothing pairable


@pytest.mark.parametrize(("k", "n"), [(0, 10), (3, 10), (10, 10), (37, 50), (180, 200)])
def test_clopper_pearson_matches_the_beta_quantiles(k: int, n: int) -> None:
    interval = clopper_pearson(k, n)
    low = 0.0 if k == 0 else scipy_stats.beta.ppf(0.025, k, n - k + 1)
    high = 1.0 if k == n else scipy_stats.beta.ppf(0.975, k + 1, n - k)
    assert interval.low == pytest.approx(low, abs=1e-9)
    assert interval.high == pytest.approx(high, abs=1e-9)


@pytest.mark.parametrize(("only_a", "only_b"), [(0, 0), (1, 0), (5, 1), (3, 9), (20, 20)])
def test_mcnemar_exact_matches_a_two_sided_binomial_test(only_a: int, only_b: int) -> None:
    right_a = [True] * only_a + [False] * only_b + [True] * 7
    right_b = [False] * only_a + [True] * only_b + [True] * 7
    p, a, b = mcnemar_exact(right_a, right_b)
    assert (a, b) == (only_a, only_b)
    if only_a + only_b == 0:
        assert p == 1.0
    else:
        assert p == pytest.approx(scipy_stats.binomtest(only_a, only_a + only_b, 0.5).pvalue)


def test_holm_matches_a_hand_example() -> None:
    # sorted 0.01, 0.02, 0.04 -> 3 * 0.01, max(0.03, 2 * 0.02), max(0.04, 1 * 0.04)
    assert holm([0.04, 0.01, None, 0.02]) == pytest.approx([0.04, 0.03, None, 0.04])


def test_bootstrap_interval_is_seeded_and_contains_the_estimate() -> None:
    rng = np.random.default_rng(3)
    label = (rng.random(60) < 0.5).tolist()
    judge = [x if rng.random() < 0.8 else not x for x in label]
    statistic = kappa_statistic(judge, label)
    first = bootstrap_interval(statistic, 60, resamples=500, seed=7)
    again = bootstrap_interval(statistic, 60, resamples=500, seed=7)
    assert first == again and first.method == "bca"
    assert first.low is not None and first.high is not None
    assert first.low < cohen_kappa(judge, label) < first.high
    percentile = bootstrap_interval(statistic, 60, resamples=500, seed=7, method="percentile")
    assert percentile.low != first.low


def test_bootstrap_interval_is_none_when_the_statistic_is_mostly_undefined() -> None:
    statistic = kappa_statistic([1] * 20, [1] * 20)
    interval = bootstrap_interval(statistic, 20, resamples=200)
    assert interval.low is None and interval.undefined == 1.0
    alpha = alpha_statistic([[1, 1]] * 5, "nominal")
    assert bootstrap_interval(alpha, 5, resamples=200).low is None


def test_paired_bootstrap_of_identical_judges_finds_no_difference() -> None:
    rng = np.random.default_rng(4)
    label = (rng.random(40) < 0.5).tolist()
    judge = [x if rng.random() < 0.8 else not x for x in label]
    stat = kappa_statistic(judge, label)
    result = paired_bootstrap(stat, stat, 40, resamples=300)
    assert result.difference == 0.0 and result.p_value == 1.0
    assert result.interval.low == 0.0 == result.interval.high
