"""Repeated trials: pass@k, pass^k and trajectory consistency over questions run several times.

A question answered in ``n`` trials, ``c`` of which pass (a value at least the metric's threshold;
``trajectory_match``: equal to 1), gives for each ``k`` (1 <= k <= n):

* ``pass@k = 1 - C(n - c, k) / C(n, k)`` - the chance that at least one of k trials drawn without
  replacement passes: the unbiased estimator of Chen et al. 2021, "Evaluating Large Language Models
  Trained on Code" (HumanEval, arXiv:2107.03374, eq. 1);
* ``pass^k = C(c, k) / C(n, k)`` - the chance that all k drawn trials pass: tau-bench's pass^k,
  Yao et al. 2024, "tau-bench: A Benchmark for Tool-Agent-User Interaction in Real-World
  Domains" (arXiv:2406.12045, section 4).

A group's value at ``k`` is the mean over its questions with ``n >= k``; questions with fewer
trials are left out of that ``k`` and counted (``left_out``). ``k`` runs from 1 to the largest
``n``. The binomials are exact integers (``math.comb``) and each mean is an exact fraction rounded
once to a float, so ``n = 100`` loses nothing.

``trajectory_consistency``: per question, the share of its trials whose ``trajectory_alternative``
is the most common one among them (trials without one count in the denominator, never as the most
common); the mean over questions that have at least one.

Pure functions over plain values; ``aggregate`` gathers the trials and calls them.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...io.keysets import TRIAL_KEY

if TYPE_CHECKING:  # imported where used: a run reads only TRIAL_KEY here
    from fractions import Fraction

__all__ = [
    "TRIAL_KEY",
    "consistency",
    "pass_at_k",
    "pass_hat_k",
    "passes",
    "summarise",
    "table_rows",
]


def _check(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")


def pass_at_k(n: int, c: int, k: int) -> Fraction:
    """Chen et al.'s unbiased pass@k of one question: ``1 - C(n-c, k) / C(n, k)``, exact."""
    from fractions import Fraction

    _check(n, c, k)
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def pass_hat_k(n: int, c: int, k: int) -> Fraction:
    """tau-bench's pass^k of one question: ``C(c, k) / C(n, k)``, exact."""
    from fractions import Fraction

    _check(n, c, k)
    return Fraction(math.comb(c, k), math.comb(n, k))


def passes(value: Any, threshold: float) -> bool:
    """Whether one trial's value passes: a finite number at least ``threshold``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value) and value >= threshold


def summarise(counts: Sequence[tuple[int, int]]) -> dict[str, Any]:
    """pass@k and pass^k (k = 1 .. the largest n, as text keys) of questions given as
    ``(n, c)`` pairs; ``left_out`` (only when some k has any): how many questions had fewer
    than k trials, by k."""
    from fractions import Fraction

    top = max((n for n, _ in counts), default=0)
    at_k: dict[str, float] = {}
    hat_k: dict[str, float] = {}
    left: dict[str, int] = {}
    for k in range(1, top + 1):
        kept = [(n, c) for n, c in counts if n >= k]
        if len(kept) < len(counts):
            left[str(k)] = len(counts) - len(kept)
        at_k[str(k)] = float(sum((pass_at_k(n, c, k) for n, c in kept), Fraction()) / len(kept))
        hat_k[str(k)] = float(sum((pass_hat_k(n, c, k) for n, c in kept), Fraction()) / len(kept))
    out: dict[str, Any] = {"questions": len(counts), "pass_at_k": at_k, "pass_hat_k": hat_k}
    if left:
        out["left_out"] = left
    return out


def table_rows(aggregates: Mapping[str, Any]) -> list[tuple[str, str, str, int, Any, Any, Any]]:
    """The rows of a small pass@k table: per template and over all questions, each metric with
    trials as (group, metric, trials per question, k, pass@1, pass@k, pass^k), k being the
    fewest trials of a question in the group (so every question counts)."""
    rows: list[tuple[str, str, str, int, Any, Any, Any]] = []
    templates = aggregates.get("per_template") or {}
    groups = [*templates.items(), ("all questions", aggregates.get("micro") or {})]
    for name, stats in groups:
        block = stats.get("trials") if isinstance(stats, Mapping) else None
        if not isinstance(block, Mapping):
            continue
        low, high = block["n_trials"]["min"], block["n_trials"]["max"]
        spread = str(low) if low == high else f"{low}-{high}"
        for metric, table in block.items():
            if not isinstance(table, Mapping) or "pass_at_k" not in table:
                continue
            at_k, hat_k = table["pass_at_k"], table["pass_hat_k"]
            rows.append(
                (str(name), metric, spread, low, at_k["1"], at_k[str(low)], hat_k[str(low)])
            )
    return rows


def consistency(per_question: Iterable[Sequence[Any]]) -> dict[str, Any] | None:
    """The mean over questions of the share of trials that chose the most common
    ``trajectory_alternative`` (None values: trials with none), with ``n`` questions; None when
    no question has one."""
    from fractions import Fraction

    shares: list[Fraction] = []
    for choices in per_question:
        counted = Counter(_hashable(c) for c in choices if c is not None)
        if counted and choices:
            shares.append(Fraction(counted.most_common(1)[0][1], len(choices)))
    if not shares:
        return None
    return {"mean": float(sum(shares, Fraction()) / len(shares)), "n": len(shares)}


def _hashable(value: Any) -> Hashable:
    """A key for a ``trajectory_alternative`` value (a number, a name, or a structure)."""
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), _hashable(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(v) for v in value)
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value  # type: ignore[no-any-return]
