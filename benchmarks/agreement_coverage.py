"""Coverage of the agreement intervals, measured by simulation, and how wide they are.

    python benchmarks/agreement_coverage.py                 # 500 trials per row: ~10 minutes
    python benchmarks/agreement_coverage.py --trials 200 --resamples 1000

For each scenario of ``qa_eval.agreement.simulate`` (labels drawn with a known population
kappa, accuracy, Spearman, Kendall, AUC or Krippendorff's alpha) and each n, ``--trials`` data sets
are drawn and the share of 95% intervals covering the population value is printed with its
binomial standard error and the mean interval width (what n labels buy). A second table gives the
false-positive rate of McNemar's exact test and of the paired bootstrap of kappa under the null
(two judges equally good). Nothing is stored: every number is measured when the command runs.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from qa_eval.agreement.simulate import SCENARIOS, coverage  # noqa: E402
from qa_eval.agreement.stats import kappa_statistic, mcnemar_exact, paired_bootstrap  # noqa: E402


def null_rates(trials: int, n: int, resamples: int, seed: int) -> tuple[float, float]:
    """(McNemar, paired bootstrap of kappa) rejection rates at 5% when both judges are alike."""
    rng = np.random.default_rng([seed, n])
    mcnemar = bootstrap = 0
    for _ in range(trials):
        label = rng.random(n) < 0.4
        judges = [np.where(rng.random(n) < 0.6, label, rng.random(n) < 0.4) for _ in range(2)]
        p, _, _ = mcnemar_exact(judges[0] == label, judges[1] == label)
        mcnemar += p < 0.05
        a, b = (kappa_statistic(j.tolist(), label.tolist()) for j in judges)
        result = paired_bootstrap(a, b, n, resamples=resamples, seed=rng)
        bootstrap += result.p_value is not None and result.p_value < 0.05
    return mcnemar / trials, bootstrap / trials


def main() -> None:
    """Print the coverage table and the false-positive table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=500)
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--sizes", default="20,50,200")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(
        f"95% intervals, {args.trials} trials per row, {args.resamples} resamples (BCa; "
        "accuracy: Clopper-Pearson)"
    )
    print(
        f"{'figure':<9} {'truth':>6} {'n':>5} {'coverage':>9} {'± se':>6} {'width':>7} {'sec':>6}"
    )
    for name in args.scenarios.split(","):
        scenario = SCENARIOS[name]
        for n in sizes:
            start = time.perf_counter()
            result = coverage(scenario, n, args.trials, resamples=args.resamples, seed=args.seed)
            se = math.sqrt(result.rate * (1 - result.rate) / result.trials)
            print(
                f"{name:<9} {scenario.truth:>6.3f} {n:>5} {result.rate:>9.3f} {se:>6.3f} "
                f"{result.mean_width:>7.3f} {time.perf_counter() - start:>6.1f}",
                flush=True,
            )
    print()
    print("false positives at alpha = 0.05, two equally good judges (kappa 0.6 each)")
    print(f"{'n':>5} {'McNemar':>8} {'bootstrap':>10}")
    for n in sizes:
        mcnemar, bootstrap = null_rates(args.trials, n, min(args.resamples, 1000), args.seed)
        print(f"{n:>5} {mcnemar:>8.3f} {bootstrap:>10.3f}", flush=True)


if __name__ == "__main__":
    main()
