"""Where a run's results go as they finish (``ResultSink``), and in reference order
(``OrderedSink``)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .question import Results

if TYPE_CHECKING:  # the judge side (pydantic, the metrics) is imported only when a run uses it
    pass


class ResultSink:
    """Where finished results go: here, into the list the run returns, by position."""

    keeps = True
    """Whether every result stays until the run ends (then the reference steps' copies for the
    results are made as the reference is prepared, where that is cheaper)."""

    def __init__(self) -> None:
        self.results: Results = Results()

    def start(self, total: int, window: int) -> None:
        self.results.extend([None] * total)

    def put(self, index: int, result: dict[str, Any]) -> None:
        self.results[index] = result

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
