"""One ``max_cost`` budget for every actor of a ``qa_eval.ray`` run: its spent total in a Ray actor
(:data:`SPENT`), read and added to by each batch's judge (``judge.ledger.SharedBudget``)."""

from __future__ import annotations

import dataclasses
from typing import Any

import ray

from ..run.options import RunOptions

__all__ = ["SPENT", "Spent", "run_options"]


class Spent:
    """The spent total of a run's ``max_cost`` budget, one for every actor's judge."""

    def __init__(self) -> None:
        self.total = 0.0

    def spent(self) -> float:
        """What the run's judges have spent so far."""
        return self.total

    def spend(self, cost: float) -> None:
        """Add one reply's cost."""
        self.total += cost


SPENT: Any = ray.remote(num_cpus=0)(Spent)
""":class:`Spent` as a Ray actor class (no CPU: it only adds)."""


class _SharedSpent:
    """A judge's view of the run's :class:`Spent` (a ``judge.ledger.SharedBudget``)."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    async def spent(self) -> float:
        """The run's spent total, read from its actor."""
        total: float = await self.handle.spent.remote()
        return total

    async def spend(self, cost: float) -> None:
        """Add one reply's cost to the run's total (returns once it is added)."""
        await self.handle.spend.remote(cost)


def run_options(config: Any, keywords: dict[str, Any], budget: Any) -> RunOptions:
    """The options of a ``run_evaluation`` of the run (a batch's, the driver's): spending from
    the run's one budget (``budget``: its :data:`SPENT` actor; None: no ``max_cost``)."""
    options = RunOptions.of(config, **keywords)
    if budget is None:
        return options
    return dataclasses.replace(options, shared_budget=_SharedSpent(budget))
