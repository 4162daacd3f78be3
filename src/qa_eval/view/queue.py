"""The labelling queue: which question of a run to label next on one metric.

Three orders, each over the run's questions that have a value for the metric:

- ``sample``: a seeded random permutation (the same seed gives the same order, so two people
  can label the same sample);
- ``doubtful``: the judge's repeats that disagree first (``<metric>_sd`` largest, or
  ``<metric>_flipped``), then the values nearest the threshold (0.5 for a 0-1 score);
- ``disagree`` (two runs or more, a numeric metric; else the seeded sample): the questions
  whose values differ most between this run and the others.

The next item is the first of the order the annotator has not labelled on that metric yet.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from .index import LOCK, Index

__all__ = ["QUEUES", "Item", "next_item", "queue_order"]

QUEUES = ("sample", "doubtful", "disagree")


@dataclass(frozen=True)
class Item:
    """A question to label: its run, place in the run, ids, and how far along the queue is."""

    run: int
    pos: int
    question_id: str
    template_id: str | None
    done: int
    total: int


def _spread_column(index: Index, metric: str) -> str | None:
    for suffix in ("_sd", "_flipped"):
        col = index.metrics.get(metric + suffix)
        if col is not None:
            return col
    return None


@lru_cache(maxsize=32)
def _sample(index: Index, column: str | None, seed: int) -> tuple[int, ...]:
    where = f" WHERE {column} IS NOT NULL" if column else ""
    with LOCK:
        positions = [p for (p,) in index.db.execute(f"SELECT pos FROM q{where} ORDER BY pos")]
    random.Random(seed).shuffle(positions)
    return tuple(positions)


def queue_order(
    runs: Sequence[Index], run: int, metric: str, kind: str, seed: int = 0
) -> list[int]:
    """The positions of run ``run``'s questions in the queue's order."""
    index = runs[run]
    col = index.metrics.get(metric)
    if kind == "sample" or (kind == "disagree" and (len(runs) < 2 or col is None)):
        present = col or index.tags.get(metric)
        return list(_sample(index, present, seed)) if present else []
    if kind == "doubtful":
        if col is None:
            spread = _spread_column(index, metric)
            order = f"{spread} DESC, pos" if spread else "pos"
            with LOCK:
                return [p for (p,) in index.db.execute(f"SELECT pos FROM q ORDER BY {order}")]
        spread = _spread_column(index, metric)
        first = f"coalesce({spread}, 0) DESC, " if spread else ""
        sql = f"SELECT pos FROM q WHERE {col} IS NOT NULL ORDER BY {first}abs({col} - 0.5), pos"
        with LOCK:
            return [p for (p,) in index.db.execute(sql)]
    if kind == "disagree":
        return _disagree(runs, run, metric)
    raise ValueError(f"unknown queue {kind!r} (one of {', '.join(QUEUES)})")


def _values(index: Index, metric: str) -> dict[tuple[str, str, int | None], tuple[int, float]]:
    col = index.metrics.get(metric)
    if col is None:
        return {}
    with LOCK:
        rows = index.db.execute(
            f"SELECT tpl, qid, trial, pos, {col} FROM q WHERE {col} IS NOT NULL"
        )
        return {(t, q, tr): (p, v) for t, q, tr, p, v in rows}


def _disagree(runs: Sequence[Index], run: int, metric: str) -> list[int]:
    """Positions in run ``run`` by the largest difference from any other run (paired by
    template, question and trial)."""
    own = _values(runs[run], metric)
    gaps: dict[int, float] = {}
    for other_number, other in enumerate(runs):
        if other_number == run:
            continue
        for key, (_, value) in _values(other, metric).items():
            mine = own.get(key)
            if mine is not None:
                gaps[mine[0]] = max(gaps.get(mine[0], 0.0), abs(mine[1] - value))
    return sorted(gaps, key=lambda pos: (-gaps[pos], pos))


def next_item(
    runs: Sequence[Index],
    run: int,
    metric: str,
    kind: str,
    labelled: set[tuple[str, str | None, str]],
    seed: int = 0,
) -> Item | None:
    """The first question of the queue not yet labelled on ``metric`` (None: all are)."""
    order = queue_order(runs, run, metric, kind, seed)
    index = runs[run]
    done = sum(1 for _, _, m in labelled if m == metric)
    with LOCK:
        for pos in order:
            qid, tpl = index.db.execute("SELECT qid, tpl FROM q WHERE pos = ?", (pos,)).fetchone()
            if (qid, tpl or None, metric) not in labelled:
                return Item(run, pos, qid, tpl or None, done, len(order))
    return None
