"""Two runs of one reference: the verdict of :func:`qa_eval.compare.compare_runs` (the numbers
``qa-eval compare`` prints, with its defaults), and one metric's questions ordered by the size of
their change.

Questions are paired by template, question id and trial. A change is B's value minus A's;
*worse* and *better* follow the metric's direction (a metric without one, a count or a ratio,
is neither: its filter lists nothing). Questions one run lacks, or without a value in either,
are left out of the list.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..vocabulary.lookup import direction as metric_direction
from .index import LOCK, all_results
from .runs import Run

__all__ = ["Change", "Changes", "changes", "compared"]

PAGE = 50
_TIE = 1e-12


@dataclass(frozen=True)
class Change:
    """One question's values in A and B and the change."""

    pos_a: int
    question_id: str
    template: str
    trial: int | None
    question: str
    a: float
    b: float
    delta: float
    trend: str  # "up" (better), "down" (worse) or ""


@dataclass(frozen=True)
class Changes:
    """A page of changes, how many there are in all and the metric's direction."""

    rows: list[Change]
    total: int
    direction: str

    @property
    def pages(self) -> int:
        """How many pages the changes fill (at least 1)."""
        return max(1, -(-self.total // PAGE))


def compared(a: Run, b: Run) -> tuple[dict[str, Any] | None, str]:
    """``compare_runs`` of B against A (computed once per pair), or why not."""
    from ..compare import compare_runs

    key = ("compare", id(b))
    if key not in a.cache:
        try:
            a.cache[key] = (
                compare_runs(
                    list(all_results(a.index)),
                    list(all_results(b.index)),
                    labels=(a.label, b.label),
                ),
                "",
            )
        except ValueError as e:
            a.cache[key] = (None, f"{b.label} is not compared with {a.label}: {e}")
    return a.cache[key]  # type: ignore[no-any-return]


def _values(run: Run, metric: str) -> dict[tuple[str, str, Any], tuple[int, float, str]]:
    col = run.index.metrics.get(metric)
    if col is None:
        return {}
    sql = f"SELECT tpl, qid, trial, pos, {col}, question FROM q WHERE {col} IS NOT NULL"
    with LOCK:
        return {(t, q, tr): (p, v, text) for t, q, tr, p, v, text in run.index.db.execute(sql)}


def _ordered(a: Run, b: Run, metric: str) -> list[Change]:
    key = ("changes", id(b), metric)
    if key in a.cache:
        return a.cache[key]  # type: ignore[no-any-return]
    direction = metric_direction(metric)
    values_b = _values(b, metric)
    rows = []
    for (tpl, qid, trial), (pos, va, text) in _values(a, metric).items():
        found = values_b.get((tpl, qid, trial))
        if found is None:
            continue
        vb = found[1]
        delta = vb - va
        trend = ""
        if direction != "none" and abs(delta) > _TIE:
            trend = "up" if (delta > 0) == (direction == "higher") else "down"
        rows.append(Change(pos, qid, tpl, trial, text, va, vb, delta, trend))
    rows.sort(key=lambda c: (-abs(c.delta), c.pos_a))
    a.cache[key] = rows
    return rows


def changes(a: Run, b: Run, metric: str, show: str, page: int) -> Changes:
    """Page ``page`` of ``metric``'s changes from A to B, largest first (``show``: ``worse``,
    ``better`` or all)."""
    rows = _ordered(a, b, metric)
    if show:
        rows = [c for c in rows if c.trend == ("down" if show == "worse" else "up")]
    start = (page - 1) * PAGE
    return Changes(rows[start : start + PAGE], len(rows), metric_direction(metric))
