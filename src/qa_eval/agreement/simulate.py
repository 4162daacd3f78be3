"""Labelled data drawn with a known agreement, to check the intervals of :mod:`.stats` by
simulation (``tests/agreement/test_coverage.py``, ``benchmarks/agreement_coverage.py``) and to
say how many labels give how wide an interval (docs/agreement.md).

Each scenario draws ``n`` items and returns the statistic on them and the population value the
interval should cover:

- ``kappa``: labels ``L ~ Bernoulli(0.4)``; the judge copies the label with chance ``w`` and
  otherwise says ``Bernoulli(0.4)`` on its own, so both margins are 0.4 and the population kappa
  is exactly ``w`` (``p_o = w + (1 - w) p_e``).
- ``accuracy``: the same judge; population accuracy ``w + (1 - w) (0.4^2 + 0.6^2)``.
- ``spearman`` and ``kendall``: a bivariate normal pair with correlation ``r``; population
  Spearman ``(6 / pi) asin(r / 2)`` and Kendall ``(2 / pi) asin(r)`` (Kruskal 1958, *JASA*
  53:814).
- ``auc``: labels ``Bernoulli(0.4)``, judge score ``d L + N(0, 1)``; population AUC
  ``Phi(d / sqrt 2)``.
- ``alpha``: three raters per item give ``T + e``, ``T ~ N(0, 1)``, ``e ~ N(0, s^2)``; the
  interval alpha of the population is ``1 / (1 + s^2)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .stats import (
    RESAMPLES,
    Interval,
    Statistic,
    accuracy_statistic,
    alpha_statistic,
    auc_statistic,
    bootstrap_interval,
    clopper_pearson,
    kappa_statistic,
    kendall_statistic,
    spearman_statistic,
)

__all__ = ["SCENARIOS", "Coverage", "Scenario", "coverage"]


@dataclass(frozen=True)
class Scenario:
    """A way to draw ``n`` labelled items whose population coefficient is ``truth``."""

    name: str
    truth: float
    draw: Callable[[np.random.Generator, int], tuple[Statistic, int]]
    """(the statistic on the drawn items, their number)."""
    exact: Callable[[np.random.Generator, int], Interval] | None = None
    """An exact interval instead of the bootstrap (accuracy)."""


_W = 0.6
_R = 0.6
_D = 1.2
_NOISE = 0.75


def _copying_judge(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    label = rng.random(n) < 0.4
    own = rng.random(n) < 0.4
    judge = np.where(rng.random(n) < _W, label, own)
    return judge.astype(int), label.astype(int)


def _kappa(rng: np.random.Generator, n: int) -> tuple[Statistic, int]:
    judge, label = _copying_judge(rng, n)
    return kappa_statistic(judge.tolist(), label.tolist()), n


def _accuracy(rng: np.random.Generator, n: int) -> tuple[Statistic, int]:
    judge, label = _copying_judge(rng, n)
    return accuracy_statistic(judge.tolist(), label.tolist()), n


def _accuracy_exact(rng: np.random.Generator, n: int) -> Interval:
    judge, label = _copying_judge(rng, n)
    return clopper_pearson(int(np.count_nonzero(judge == label)), n)


def _normal_pair(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    x = rng.standard_normal(n)
    y = _R * x + math.sqrt(1 - _R * _R) * rng.standard_normal(n)
    return x, y


def _spearman(rng: np.random.Generator, n: int) -> tuple[Statistic, int]:
    x, y = _normal_pair(rng, n)
    return spearman_statistic(x, y), n


def _kendall(rng: np.random.Generator, n: int) -> tuple[Statistic, int]:
    x, y = _normal_pair(rng, n)
    return kendall_statistic(x, y), n


def _auc(rng: np.random.Generator, n: int) -> tuple[Statistic, int]:
    label = rng.random(n) < 0.4
    score = _D * label + rng.standard_normal(n)
    return auc_statistic(score, label), n


def _alpha(rng: np.random.Generator, n: int) -> tuple[Statistic, int]:
    truth = rng.standard_normal(n)
    ratings = truth[:, None] + _NOISE * rng.standard_normal((n, 3))
    return alpha_statistic(ratings.tolist(), "interval"), n


SCENARIOS: dict[str, Scenario] = {
    "kappa": Scenario("kappa", _W, _kappa),
    "accuracy": Scenario(
        "accuracy", _W + (1 - _W) * (0.4**2 + 0.6**2), _accuracy, exact=_accuracy_exact
    ),
    "spearman": Scenario("spearman", 6 / math.pi * math.asin(_R / 2), _spearman),
    "kendall": Scenario("kendall", 2 / math.pi * math.asin(_R), _kendall),
    "auc": Scenario("auc", 0.5 * (1 + math.erf(_D / 2)), _auc),
    "alpha": Scenario("alpha", 1 / (1 + _NOISE**2), _alpha),
}
"""The scenarios by name (``Phi(d / sqrt 2) = (1 + erf(d / 2)) / 2``)."""


@dataclass(frozen=True)
class Coverage:
    """How often the intervals of one scenario at one ``n`` covered the truth."""

    scenario: str
    n: int
    trials: int
    covered: int
    mean_width: float
    undefined: int
    """Trials whose interval could not be computed (counted as not covering)."""

    @property
    def rate(self) -> float:
        """The share of trials whose interval covered the population value."""
        return self.covered / self.trials if self.trials else math.nan


def coverage(
    scenario: Scenario,
    n: int,
    trials: int,
    *,
    resamples: int = RESAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
) -> Coverage:
    """Draw ``trials`` data sets of ``n`` items and count the intervals that cover the truth."""
    rng = np.random.default_rng([seed, n, len(scenario.name)])
    covered = undefined = 0
    widths: list[float] = []
    for _ in range(trials):
        if scenario.exact is not None:
            interval = scenario.exact(rng, n)
        else:
            statistic, size = scenario.draw(rng, n)
            interval = bootstrap_interval(
                statistic, size, resamples=resamples, confidence=confidence, seed=rng
            )
        if interval.low is None or interval.high is None:
            undefined += 1
            continue
        widths.append(interval.high - interval.low)
        covered += interval.low <= scenario.truth <= interval.high
    mean_width = float(np.mean(widths)) if widths else math.nan
    return Coverage(scenario.name, n, trials, covered, mean_width, undefined)
