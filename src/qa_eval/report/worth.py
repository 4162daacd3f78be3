"""The per-template rows of a comparison that the report keeps when there are too many to show:
the ``limit`` most worth a look (significantly worse first, then significantly better, then by
smallest adjusted p, smallest p and largest change), held in a heap as they come, given back in
the order they came, with how many there were. A million questions in 20,000 templates give
over 100,000 rows; only the kept ones are ever held."""

from __future__ import annotations

import heapq
from typing import Any, Generic, Protocol, TypeVar

__all__ = ["MAX_TEMPLATE_ROWS", "MostWorth"]

MAX_TEMPLATE_ROWS = 1000
"""The per-template comparison lists at most this many rows (metric x template) by default: those
most worth a look; the page says how many it left out."""

_OUTCOME_RANK = {"worse": 0, "better": 1}


class _Row(Protocol):
    """What the choice reads of a row (``model.ComparisonRow``)."""

    @property
    def n(self) -> int: ...
    @property
    def judge_se(self) -> float | None: ...
    @property
    def outcome(self) -> str: ...
    @property
    def p_adjusted(self) -> float | None: ...
    @property
    def p_value(self) -> float | None: ...
    @property
    def delta(self) -> float | None: ...


R = TypeVar("R", bound=_Row)


class MostWorth(Generic[R]):
    """The rows with ``n`` kept as they come: all, or (with ``limit``) the ``limit`` most worth a
    look, with how many there were."""

    def __init__(self, limit: int | None) -> None:
        if limit is not None and (isinstance(limit, bool) or limit < 0):
            raise ValueError(f"max_template_rows must be a number >= 0 or None, got {limit!r}")
        self.limit = limit
        self.total = 0
        self.noise = False
        self.heap: list[tuple[tuple[Any, ...], int, R]] = []

    def add(self, row: R) -> None:
        """Count a row and keep it if it is among the most worth a look so far."""
        if not row.n:
            return
        self.noise = self.noise or row.judge_se is not None
        self.total += 1
        if self.limit is None:
            self.heap.append(((), self.total, row))
            return
        # heapq keeps the smallest on top: the key is negated, so the least worth a look goes
        key = tuple(-k for k in _worth(row))
        entry = (key, -self.total, row)
        if len(self.heap) < self.limit:
            heapq.heappush(self.heap, entry)
        elif self.limit and entry[:2] > self.heap[0][:2]:
            heapq.heapreplace(self.heap, entry)

    @property
    def left_out(self) -> int:
        """How many rows were not kept."""
        return self.total - len(self.heap)

    @property
    def noise_left_out(self) -> bool:
        """Whether a row not kept carries the judge's noise."""
        return self.noise and not any(r.judge_se is not None for _, _, r in self.heap)

    def rows(self) -> list[R]:
        """The rows kept, in the order they came."""
        return [row for _, _, row in sorted(self.heap, key=lambda entry: abs(entry[1]))]


def _worth(row: _Row) -> tuple[float, ...]:
    """How little a row is worth a look (smaller: more): significantly worse, then significantly
    better, then by adjusted p, p and the size of the change."""
    inf = float("inf")
    return (
        _OUTCOME_RANK.get(row.outcome, 2),
        inf if row.p_adjusted is None else row.p_adjusted,
        inf if row.p_value is None else row.p_value,
        0.0 if row.delta is None else -abs(row.delta),
    )
