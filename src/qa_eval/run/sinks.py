"""Where a run's results go as they finish (``ResultSink``), in reference order
(``OrderedSink``), and written as JSON lines and aggregated on the way (``LinesSink``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from .question import Results

if TYPE_CHECKING:
    import asyncio
    from array import array

    from ..aggregate.partial import PartialAggregates
    from .workers import Evaluated, LinesWork


class ResultSink:
    """Where finished results go: here, into the list the run returns, by position."""

    keeps = True
    """Whether every result stays until the run ends (then the reference steps' copies for the
    results are made as the reference is prepared, where that is cheaper)."""
    lines: LinesWork | None = None
    """What becomes of each result when the sink takes them written (``LinesSink``): then worker
    processes write and aggregate them (:meth:`put_evaluated`)."""
    positions: array[int] | None = None
    """The position key of each result, in order (``run.shards.position_key``), when the sink
    wants them: the run appends them as it reads its questions."""

    def __init__(self) -> None:
        self.results: Results = Results()

    def start(self, total: int, window: int) -> None:
        self.results.extend([None] * total)

    def put(self, index: int, result: dict[str, Any]) -> None:
        self.results[index] = result

    def put_evaluated(self, index: int, evaluated: Evaluated) -> None:
        """The results from ``index`` on, written and aggregated (only a sink with ``lines``)."""
        raise TypeError(f"{type(self).__name__} takes results, not written batches")

    def full(self) -> bool:
        return False

    async def room(self) -> None:
        return None

    def flush(self) -> None:
        return None


__all__ = ["OrderedSink", "ResultSink"]


class OrderedSink(ResultSink):
    """Results handed on in reference order, in batches: a result that finishes before an
    earlier one waits here, and the run reads no further question while ``limit`` wait
    (``max(256, 8 x`` the questions scored at once``)``)."""

    keeps = False

    def __init__(self, deliver: Callable[[list[dict[str, Any]]], None]) -> None:
        super().__init__()
        self.deliver = deliver
        self.limit = 256
        self.next = 0
        self.waiting: dict[int, dict[str, Any]] = {}
        self.batch: list[dict[str, Any]] = []
        self.flushed = time.monotonic()
        self._room: asyncio.Event | None = None

    def start(self, total: int, window: int) -> None:
        self.limit = max(256, 8 * window)

    def put(self, index: int, result: dict[str, Any]) -> None:
        if index != self.next:
            self.waiting[index] = result
            return
        batch, waiting = self.batch, self.waiting
        batch.append(result)
        self.next += 1
        while waiting and self.next in waiting:
            batch.append(waiting.pop(self.next))
            self.next += 1
        if self._room is not None and len(waiting) < self.limit:
            self._room.set()
        if len(batch) >= 256 or time.monotonic() - self.flushed > 0.05:
            self.flush()

    def full(self) -> bool:
        return len(self.waiting) >= self.limit

    async def room(self) -> None:
        import asyncio  # here: a run in one sink's reach of its end never waits for room

        while len(self.waiting) >= self.limit:
            self.flush()
            self._room = asyncio.Event()
            await self._room.wait()
        self._room = None

    def flush(self) -> None:
        self.flushed = time.monotonic()
        if self.batch:
            batch, self.batch = self.batch, []
            self.deliver(batch)


class Written(Protocol):
    """Where a ``LinesSink`` writes (``run.files.PartialFile``)."""

    def write_lines(self, data: bytes, count: int) -> None:
        """Append ``count`` results' lines."""


class LinesSink(OrderedSink):
    """Results written in reference order as JSON lines (``work.project`` applied) to ``out``,
    aggregated on the way (``aggregates``, partial aggregates of the run) and their notable keys
    kept (``notable``): in the run's process as they come in order, or by worker processes, whose
    written batches come in order (:meth:`put_evaluated`). ``in_order``: the aggregates keep
    their values without positions (``PartialAggregates.in_order``; not for a shard's run, whose
    shard file keeps them)."""

    def __init__(self, out: Written, work: LinesWork, in_order: bool = False) -> None:
        super().__init__(self._write)
        from array import array

        from ..aggregate.partial import PartialAggregates
        from .notable import Notable

        self.out = out
        self.lines = work
        self.positions = array("q")
        self.keep = not in_order
        """Whether every result's position key stays (a shard's run writes them); else those of
        the results written are let go."""
        self.base = 0
        """The results whose position keys were let go (``positions[0]`` is the next one's)."""
        self.aggregates: PartialAggregates = PartialAggregates(work.spec, in_order)
        self.notable = Notable()
        self.count = 0

    def _write(self, batch: list[dict[str, Any]]) -> None:
        from .workers import finish_lines

        assert self.lines is not None and self.positions is not None
        start = self.count - self.base
        positions = self.positions[start : start + len(batch)]
        self._take(finish_lines(self.lines, batch, positions))

    def put_evaluated(self, index: int, evaluated: Evaluated) -> None:
        self.flush()
        if index != self.next or self.waiting:
            raise RuntimeError(f"written results from {index} came before result {self.next}")
        self.next += evaluated.count
        self._take(evaluated)

    def _take(self, evaluated: Evaluated) -> None:
        self.out.write_lines(evaluated.lines, evaluated.count)
        if evaluated.aggregates is not None:
            self.aggregates.merge(evaluated.aggregates)
        self.notable.merge(evaluated.notable)
        self.count += evaluated.count
        if not self.keep and self.positions is not None:
            drop = min(self.count - self.base, len(self.positions))
            del self.positions[:drop]
            self.base += drop
