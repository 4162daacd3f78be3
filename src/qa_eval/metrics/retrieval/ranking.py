"""Ranking metrics of retrieval: pure functions of relevant ids and a ranked list of retrieved ids.

``relevant`` is any iterable of hashable ids (duplicates ignored); ``retrieved`` is ranked, best
first; an id repeated in ``retrieved`` counts only at its first position. ``k`` is a positive int.

* ``spec_recall_at_k`` - the QA-evaluation README of graphrag-eval ("Context Recall@k"), in the
  form its code and ``steps_score`` use: with the relevant ids as an ordered list,
  ``|set(relevant[:k]) ∩ set(retrieved[:k])| / |set(relevant[:k])|``, 0 with no relevant ids.
* ``recall_at_k`` - ``|relevant ∩ top-k| / |relevant|`` (trec_eval ``recall_k``).
* ``precision_at_k`` - ``|relevant ∩ top-k| / k``, divided by k even when fewer than k were
  retrieved (trec_eval ``P_k``).
* ``average_precision`` - ``sum_i P@i * rel(i) / |relevant|`` over the ranks i (within the top k
  when k is given), trec_eval ``map`` / ``map_cut_k``. The README's worked example divides by the
  number of relevant items *retrieved* (3, giving 0.8056 for relevant {1,3,5,6} and retrieved
  [1,4,3,5,7]) while its formula and the original code divide by all relevant items (4, giving
  0.6042); this follows the formula.
* ``reciprocal_rank`` - 1 / rank of the first relevant id (within the top k when given), else 0
  (trec_eval ``recip_rank``).
* ``ndcg_at_k`` - ``DCG@k / IDCG@k`` with ``DCG@k = sum_i gain(i) / log2(i + 1)``, linear gains
  (1 for a relevant id unless ``gains`` are given), the ideal ranking being the gains sorted in
  descending order (trec_eval ``ndcg_cut_k``); 0 when the ideal DCG is 0.
* ``hit_rate_at_k`` - 1 when any relevant id is in the top k, else 0 (trec_eval ``success_k``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence

from ...vocabulary.lookup import parse_at_k

__all__ = [
    "RANKING_METRICS",
    "average_precision",
    "compute_ranking_metric",
    "hit_rate_at_k",
    "ndcg_at_k",
    "parse_metric_name",
    "precision_at_k",
    "recall_at_k",
    "reciprocal_rank",
    "spec_recall_at_k",
]


def _check_k(k: int | None, optional: bool = False) -> None:
    if k is None and optional:
        return
    if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
        raise ValueError(f"k must be a positive integer, got {k!r}")


def _ranked(retrieved: Iterable[Hashable], k: int | None = None) -> list[Hashable]:
    """The retrieved ids without repeats (first position kept), cut at k."""
    seen: set[Hashable] = set()
    ranked = []
    for position, doc in enumerate(retrieved):
        if k is not None and position >= k:
            break
        if doc not in seen:
            seen.add(doc)
            ranked.append(doc)
    return ranked


def _hits(relevant: set[Hashable], ranked: Sequence[Hashable]) -> int:
    return sum(1 for doc in ranked if doc in relevant)


def spec_recall_at_k(relevant: Sequence[Hashable], retrieved: Sequence[Hashable], k: int) -> float:
    """graphrag-eval's recall@k: both lists cut at k, relevant ids compared as a set."""
    if type(k) is not int or k <= 0:  # (the usual k passes without a call)
        _check_k(k)
    wanted = set(relevant[:k])
    if not wanted:
        return 0.0
    return len(wanted & set(retrieved[:k])) / len(wanted)


def recall_at_k(relevant: Iterable[Hashable], retrieved: Iterable[Hashable], k: int) -> float:
    """Share of the relevant ids found in the top k."""
    _check_k(k)
    wanted = set(relevant)
    if not wanted:
        return 0.0
    return _hits(wanted, _ranked(retrieved, k)) / len(wanted)


def precision_at_k(relevant: Iterable[Hashable], retrieved: Iterable[Hashable], k: int) -> float:
    """Share of the top k positions holding a relevant id."""
    _check_k(k)
    return _hits(set(relevant), _ranked(retrieved, k)) / k


def average_precision(
    relevant: Iterable[Hashable], retrieved: Iterable[Hashable], k: int | None = None
) -> float:
    """Mean of the precision at each relevant id's rank, over all relevant ids."""
    _check_k(k, optional=True)
    wanted = set(relevant)
    if not wanted:
        return 0.0
    hits = 0
    total = 0.0
    for rank, doc in enumerate(_ranked(retrieved, k), start=1):
        if doc in wanted:
            hits += 1
            total += hits / rank
    return total / len(wanted)


def reciprocal_rank(
    relevant: Iterable[Hashable], retrieved: Iterable[Hashable], k: int | None = None
) -> float:
    """1 / rank of the first relevant id, or 0."""
    _check_k(k, optional=True)
    wanted = set(relevant)
    for rank, doc in enumerate(_ranked(retrieved, k), start=1):
        if doc in wanted:
            return 1.0 / rank
    return 0.0


def ndcg_at_k(
    relevant: Iterable[Hashable],
    retrieved: Iterable[Hashable],
    k: int,
    gains: Mapping[Hashable, float] | None = None,
) -> float:
    """Normalised discounted cumulative gain of the top k (linear gains)."""
    _check_k(k)
    if gains is None:
        gains = dict.fromkeys(relevant, 1.0)
    positive = {doc: g for doc, g in gains.items() if g > 0}
    ideal = sorted(positive.values(), reverse=True)[:k]
    ideal_dcg = sum(g / math.log2(rank + 1) for rank, g in enumerate(ideal, start=1))
    if ideal_dcg == 0:
        return 0.0
    dcg = sum(
        positive.get(doc, 0.0) / math.log2(rank + 1)
        for rank, doc in enumerate(_ranked(retrieved, k), start=1)
    )
    return dcg / ideal_dcg


def hit_rate_at_k(relevant: Iterable[Hashable], retrieved: Iterable[Hashable], k: int) -> float:
    """1.0 when some relevant id is in the top k, else 0.0."""
    _check_k(k)
    wanted = set(relevant)
    return float(any(doc in wanted for doc in _ranked(retrieved, k)))


RANKING_METRICS: dict[str, Callable[..., float]] = {
    "recall": recall_at_k,
    "precision": precision_at_k,
    "ap": average_precision,
    "rr": reciprocal_rank,
    "ndcg": ndcg_at_k,
    "hit_rate": hit_rate_at_k,
    "spec_recall": spec_recall_at_k,
}
_ALIASES = {"p": "precision", "map": "ap", "mrr": "rr", "success": "hit_rate", "hits": "hit_rate"}
_NEEDS_K = frozenset({"recall", "precision", "ndcg", "hit_rate", "spec_recall"})


def parse_metric_name(name: str) -> tuple[str, int | None]:
    """Parse ``recall@5``, ``P@3``, ``ndcg@10``, ``map``, ``mrr`` ... into (metric, k)."""
    known = ", ".join(sorted([*RANKING_METRICS, *_ALIASES]))
    try:
        metric, k = parse_at_k(name)  # the registry's one parser of name@k
    except ValueError:
        raise ValueError(f"not a ranking metric name: {name!r} (known: {known}; add @k)") from None
    metric = _ALIASES.get(metric, metric)
    if metric not in RANKING_METRICS:
        raise ValueError(f"unknown ranking metric {name!r} (known: {known})")
    if k is None and metric in _NEEDS_K:
        raise ValueError(f"{name!r} needs a cut-off, e.g. {metric}@10")
    return metric, k


def compute_ranking_metric(
    name: str, relevant: Sequence[Hashable], retrieved: Sequence[Hashable]
) -> float:
    """Compute a ranking metric given by name, e.g. ``compute_ranking_metric("ndcg@10", ...)``."""
    metric, k = parse_metric_name(name)
    function = RANKING_METRICS[metric]
    return function(relevant, retrieved, k) if k is not None else function(relevant, retrieved)
