"""The labelling queue: which question of a run to label next on one metric.

Three orders, each over the run's questions that have a value for the metric:

- ``sample``: a seeded random permutation (the same seed gives the same order, so two people
  can label the same sample);
- ``doubtful``: the judge's repeats that disagree first (``<metric>_sd`` largest, or
  ``<metric>_flipped``), then the values nearest the metric's pass threshold (the caller's:
  see :func:`pass_threshold`);
- ``disagree`` (two runs or more; else the seeded sample): the questions whose values differ
  most between this run and the others; a class (a text value such as ``answer_class``)
  differs or not, and the questions whose class differs from the most other runs come first.

The next item is the first of the order the annotator has not labelled on that metric yet.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..aggregate import PASS_KEY
from ..errors import InputError
from .index import LOCK, Index

__all__ = ["QUEUES", "Item", "item_at", "next_item", "pass_threshold", "position_of", "queue_order"]

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


def pass_threshold(metric: str, signature: Mapping[str, Any] | None) -> tuple[float, str]:
    """(the metric's pass threshold, where it comes from): the run's ``--pass-threshold`` as its
    signature records it (what the aggregates' pass rates used), 1 for ``trajectory_match`` (as
    the aggregates take it), else 0.5, the middle of a 0-1 score."""
    options = signature.get("options") if isinstance(signature, Mapping) else None
    recorded = options.get("pass_thresholds") if isinstance(options, Mapping) else None
    value = recorded.get(metric) if isinstance(recorded, Mapping) else None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value), "the run's --pass-threshold"
    if metric == PASS_KEY:
        return 1.0, f"{PASS_KEY} passes at 1"
    return 0.5, "no pass threshold recorded: the middle of a 0-1 score"


def queue_order(
    runs: Sequence[Index],
    run: int,
    metric: str,
    kind: str,
    seed: int = 0,
    threshold: float = 0.5,
) -> list[int]:
    """The positions of run ``run``'s questions in the queue's order (``threshold``: the
    metric's pass threshold, which *doubtful* orders by)."""
    index = runs[run]
    col = index.metrics.get(metric)
    present = col or index.tag_value(metric)
    if kind == "sample" or (kind == "disagree" and (len(runs) < 2 or present is None)):
        return list(_sample(index, present, seed)) if present else []
    if kind == "doubtful":
        if col is None:
            spread = _spread_column(index, metric)
            order = f"{spread} DESC, pos" if spread else "pos"
            with LOCK:
                return [p for (p,) in index.db.execute(f"SELECT pos FROM q ORDER BY {order}")]
        spread = _spread_column(index, metric)
        first = f"coalesce({spread}, 0) DESC, " if spread else ""
        sql = f"SELECT pos FROM q WHERE {col} IS NOT NULL ORDER BY {first}abs({col} - ?), pos"
        with LOCK:
            return [p for (p,) in index.db.execute(sql, (threshold,))]
    if kind == "disagree":
        return _disagree(runs, run, metric)
    raise ValueError(f"unknown queue {kind!r} (one of {', '.join(QUEUES)})")


def _values(
    index: Index, metric: str
) -> dict[tuple[str, str, int | None], tuple[int, float | str]]:
    col = index.metrics.get(metric) or index.tag_value(metric)
    if col is None:
        return {}
    with LOCK:
        rows = index.db.execute(
            f"SELECT tpl, qid, trial, pos, {col} FROM q WHERE {col} IS NOT NULL"
        )
        return {(t, q, tr): (p, v) for t, q, tr, p, v in rows}


def _disagree(runs: Sequence[Index], run: int, metric: str) -> list[int]:
    """Positions in run ``run`` by the largest difference from any other run (paired by
    template, question and trial): for numbers the largest gap; for classes (text) how many
    other runs gave another class."""
    own = _values(runs[run], metric)
    gaps: dict[int, float] = {}
    for other_number, other in enumerate(runs):
        if other_number == run:
            continue
        for key, (_, value) in _values(other, metric).items():
            mine = own.get(key)
            if mine is None:
                continue
            pos, mine_value = mine
            if isinstance(mine_value, str) or isinstance(value, str):
                gaps[pos] = gaps.get(pos, 0.0) + float(mine_value != value)
            else:
                gaps[pos] = max(gaps.get(pos, 0.0), abs(mine_value - value))
    return sorted(gaps, key=lambda pos: (-gaps[pos], pos))


def next_item(
    runs: Sequence[Index],
    run: int,
    metric: str,
    kind: str,
    labelled: set[tuple[str, str | None, str]],
    seed: int = 0,
    threshold: float = 0.5,
) -> Item | None:
    """The first question of the queue not yet labelled on ``metric`` (None: all are)."""
    order = queue_order(runs, run, metric, kind, seed, threshold)
    index = runs[run]
    done = sum(1 for _, _, m in labelled if m == metric)
    with LOCK:
        for pos in order:
            qid, tpl = index.db.execute("SELECT qid, tpl FROM q WHERE pos = ?", (pos,)).fetchone()
            if (qid, tpl or None, metric) not in labelled:
                return Item(run, pos, qid, tpl or None, done, len(order))
    return None


def item_at(
    runs: Sequence[Index],
    run: int,
    pos: int,
    metric: str,
    labelled: set[tuple[str, str | None, str]],
) -> Item:
    """The question at ``pos`` of run ``run`` as an item to label (again)."""
    index = runs[run]
    with LOCK:
        row = index.db.execute("SELECT qid, tpl FROM q WHERE pos = ?", (pos,)).fetchone()
    if row is None:
        raise InputError(f"no question at {pos} in {index.source.name}", field="pos")
    done = sum(1 for _, _, m in labelled if m == metric)
    return Item(run, pos, row[0], row[1] or None, done, index.count)


def position_of(index: Index, question_id: str, template_id: str | None) -> int | None:
    """Where a question (the first of its trials) is in the run (None: not in it)."""
    with LOCK:
        row = index.db.execute(
            "SELECT min(pos) FROM q WHERE qid = ? AND tpl = ?", (question_id, template_id or "")
        ).fetchone()
    return None if row is None or row[0] is None else int(row[0])
