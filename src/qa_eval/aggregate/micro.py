"""Micro, the group of all questions of in-order partial aggregates (:class:`Micro`): each
metric's values gathered compactly (:class:`Joined`), one template's after the other, and
summarised from an array, or block by block from the temporary file (``aggregate.select``)."""

from __future__ import annotations

from array import array
from typing import Any

from .groups import Group
from .select import describe_blocks
from .spill import Spill, Spilled
from .stats import ArraySeries, Series, describe_array

__all__ = ["Joined", "Micro", "compact_values"]

_PENDING = 8192
"""Micro's values of a metric written again to the temporary file this many at a time."""


def compact_values(values: list[Any]) -> array[Any] | list[Any]:
    """The values as an array of 64-bit ints or floats when they all are exactly such (the same
    numbers come back), else the list itself."""
    kinds = set(map(type, values))
    if kinds == {float}:
        return array("d", values)
    if kinds == {int}:
        try:
            return array("q", values)
        except OverflowError:  # an int beyond 64 bits
            return values
    return values


class Joined(Series):
    """A metric's values over all templates (micro), kept compactly, one template's after the
    other: a list only while a summary reads it."""

    __slots__ = ("chunks", "pending")

    def __init__(self) -> None:  # (no list of values: ``values`` makes one)
        self.chunks: list[Any] = []  # arrays, lists or Spilled
        self.pending: tuple[Spill, array[Any]] | None = None
        """Values of templates in the temporary file, read back and waiting to be written
        again after the others (:meth:`add`)."""
        self.skipped = 0
        self.failed = 0
        self.ordered = None
        self.runs = None
        self.kinds = None
        self.typed = 0

    @property
    def values(self) -> list[Any]:  # type: ignore[override]  # (made when read, not kept)
        """The values, in order: a new list each time."""
        self._flush()
        return [v for chunk in self.chunks for v in chunk]  # (a Spilled chunk is read)

    def add(self, chunk: array[Any] | list[Any] | Spilled) -> None:
        """Add a template's values after the others. Values in the temporary file are read and
        written again after the values before them, 8,192 at a time: micro's values of a metric
        are a few chunks of that file (16 bytes each), not one a template and batch."""
        if isinstance(chunk, Spilled):
            if self.pending is not None and self.pending[1].typecode != chunk.typecode:
                self._flush()
            if self.pending is None:
                self.pending = (chunk.store, array(chunk.typecode))
            self.pending[1].extend(chunk.read())
            if len(self.pending[1]) >= _PENDING:
                self._flush()
            return
        self._flush()
        self.chunks.append(chunk)

    def _flush(self) -> None:
        """Write the values waiting (:attr:`pending`) after the others."""
        if self.pending is None:
            return
        store, values = self.pending
        self.pending = None
        spilled = store.put(values)
        last = self.chunks[-1] if self.chunks else None
        if isinstance(last, Spilled) and last.typecode == spilled.typecode:
            last.extend(spilled)
        else:
            self.chunks.append(spilled)

    def sorted_values(self) -> list[Any]:
        """The values sorted (stably: what sorting the whole's list gives)."""
        return sorted(self.values)

    def count(self) -> int:
        """How many values it has."""
        self._flush()
        return sum(len(chunk) for chunk in self.chunks)

    def describe(self, zeros: bool = False) -> dict[str, Any]:
        """``describe`` of the values: from one array of them when every chunk is an array of
        one kind (8 bytes a value), else from their list."""
        self._flush()
        kinds = {getattr(chunk, "typecode", "") for chunk in self.chunks}  # (a list: "")
        if len(kinds) != 1 or "" in kinds:
            return super().describe(zeros)
        import numpy as np

        if len(self.chunks) == 1 and isinstance(self.chunks[0], Spilled):
            # in the temporary file (a streamed run): read block by block, a few times over
            # (in few reads: written again in one chunk first), never every value at once
            spilled = self.chunks[0]
            if len(spilled.chunks) > 2 + spilled.count // 4096:
                spilled = self.chunks[0] = spilled.compact()
            return describe_blocks(spilled.blocks, len(spilled), self.skipped, zeros, self.failed)
        kind = np.int64 if kinds == {"q"} else np.float64
        arrays = [c.read() if isinstance(c, Spilled) else c for c in self.chunks]
        joined = np.concatenate([np.frombuffer(c, dtype=kind) for c in arrays])
        # (the values' one copy, sorted where it is: 8 bytes a value, not 16)
        return describe_array(joined, self.skipped, zeros, self.failed, mine=True)


class Micro(Group):
    """The group of all questions, whose metric values are gathered as :class:`Joined`."""

    def merge(self, other: Group) -> None:
        series, other.series = other.series, {}
        try:
            super().merge(other)
        finally:
            other.series = series
        for metric, values in series.items():
            joined = self.series.get(metric)
            if joined is None:
                joined = self.series[metric] = Joined()
            assert isinstance(joined, Joined)
            joined.add(
                values.array if isinstance(values, ArraySeries) else compact_values(values.values)
            )
            joined.skipped += values.skipped
            joined.failed += values.failed
