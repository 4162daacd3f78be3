"""Time of ``compare_runs`` and of the sign-flip test's Monte Carlo branch, before and after.

    python benchmarks/compare.py                  # 1k, 10k and 100k paired questions: ~2 minutes
    python benchmarks/compare.py --sizes 1000,10000 --skip-old

Two runs of N paired questions over 50 templates with 4 numeric metrics (a score in [0, 1],
answer_f1, input_tokens, elapsed_sec; B is A's score shifted by 0.01 plus noise), compared with
the default 10,000 resamples. Each size is timed with this checkout's ``signflip._sign_sums``
("new") and with the implementation it replaced ("old", kept in this file only: a uniform double
per sign, ``< 0.5``, then a bool-by-float product per resample), patched in for the old rows.
The old and new rows must have the same deltas and counts and p-values within Monte Carlo error
of each other, checked before any time is printed. A second table times one ``_sign_sums`` call
(n pairs, 10,000 resamples). Medians of ``--repeats`` runs (1 at 100k).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from qa_eval.compare import signflip  # noqa: E402
from qa_eval.compare.runs import compare_runs  # noqa: E402

SignSums = Callable[[np.ndarray, int, np.random.Generator], tuple[np.ndarray, np.ndarray]]


def old_sign_sums(
    deltas: np.ndarray, resamples: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """The Monte Carlo branch before: ``rng.random((rows, n)) < 0.5`` and ``flipped @ deltas``
    in chunks of 2**21 signs (the exact branch, n <= 16, is the same in both)."""
    n = deltas.size
    if n <= signflip.EXACT_MAX_N:
        return NEW_SIGN_SUMS(deltas, resamples, rng)
    total = float(deltas.sum())
    sums = np.empty(resamples + 1)
    counts = np.empty(resamples + 1, dtype=np.int64)
    chunk = max(1, min(resamples, (1 << 21) // n))
    for start in range(0, resamples, chunk):
        rows = min(chunk, resamples - start)
        flipped = rng.random((rows, n)) < 0.5
        sums[start : start + rows] = total - 2.0 * (flipped @ deltas)
        counts[start : start + rows] = n - 2 * np.count_nonzero(flipped, axis=1)
    sums[resamples] = total
    counts[resamples] = n
    return sums, counts


NEW_SIGN_SUMS: SignSums = signflip._sign_sums


def runs(questions: int, templates: int = 50) -> tuple[list[dict], list[dict]]:
    """Two runs of ``questions`` paired results with 4 numeric metrics."""
    rng = np.random.default_rng(1)
    a: list[dict] = []
    b: list[dict] = []
    for i in range(questions):
        common = {"template_id": f"t{i % templates}", "question_id": f"q{i}", "status": "success"}
        score = float(rng.random())
        a.append(
            {
                **common,
                "steps_score": score,
                "answer_f1": float(rng.random()),
                "input_tokens": int(rng.integers(10, 100)),
                "elapsed_sec": float(rng.random()),
            }
        )
        b.append(
            {
                **common,
                "steps_score": min(1.0, max(0.0, score + 0.01 + rng.normal(0, 0.1))),
                "answer_f1": float(rng.random()),
                "input_tokens": int(rng.integers(10, 100)),
                "elapsed_sec": float(rng.random()),
            }
        )
    return a, b


def seeded() -> np.random.Generator:
    return np.random.default_rng(0)


def timed(call: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def with_sign_sums(implementation: SignSums, call: Callable[[], Any]) -> Callable[[], Any]:
    def patched() -> Any:
        signflip._sign_sums = implementation
        try:
            return call()
        finally:
            signflip._sign_sums = NEW_SIGN_SUMS

    return patched


def rows_of(comparison: dict) -> list[dict]:
    return [row for m in comparison["metrics"] for row in (m["overall"], *m["per_template"])]


def check(new: dict, old: dict, resamples: int) -> int:
    """Same deltas and counts; p-values within 5 Monte Carlo standard errors (plus 2/R)."""
    checked = 0
    for x, y in zip(rows_of(new), rows_of(old), strict=True):
        assert (x["n"], x["delta"]) == (y["n"], y["delta"]), (x, y)
        p = min(max(x["p_value"], 1e-3), 1 - 1e-3)
        assert abs(x["p_value"] - y["p_value"]) <= 5 * math.sqrt(2 * p * (1 - p) / resamples) + (
            2 / resamples
        ), (x, y)
        checked += 1
    return checked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-old", action="store_true", help="time the new code only")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    resamples = 10_000

    print(f"compare_runs: 4 metrics, 50 templates, {resamples:,} resamples (median of runs)")
    print(f"{'questions':>10} {'new':>9} {'old':>9} {'old/new':>8}  checked rows")
    for size in sizes:
        a, b = runs(size)
        repeats = 1 if size >= 100_000 else args.repeats
        call = partial(compare_runs, a, b)
        new_time, new = timed(call, repeats)
        if args.skip_old:
            print(f"{size:>10,} {new_time:>8.2f}s {'-':>9} {'-':>8}")
            continue
        old_time, old = timed(with_sign_sums(old_sign_sums, call), repeats)
        rows = check(new, old, resamples)
        ratio = old_time / new_time
        print(f"{size:>10,} {new_time:>8.2f}s {old_time:>8.2f}s {ratio:>7.1f}x  {rows}")

    print()
    print(f"_sign_sums alone: n pairs, {resamples:,} resamples (median of runs)")
    print(f"{'n':>10} {'new':>9} {'old':>9} {'old/new':>8}")
    for size in sizes:
        deltas = np.random.default_rng(size).normal(0.01, 0.3, size)
        repeats = 1 if size >= 100_000 else args.repeats
        new_time, _ = timed(partial(NEW_SIGN_SUMS, deltas, resamples, seeded()), repeats)
        if args.skip_old:
            print(f"{size:>10,} {new_time * 1000:>7.1f}ms {'-':>9} {'-':>8}")
            continue
        old_time, _ = timed(partial(old_sign_sums, deltas, resamples, seeded()), repeats)
        print(
            f"{size:>10,} {new_time * 1000:>7.1f}ms {old_time * 1000:>7.0f}ms "
            f"{old_time / new_time:>7.1f}x"
        )


if __name__ == "__main__":
    main()
