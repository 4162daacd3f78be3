"""The values of in-order partial aggregates (``PartialAggregates.in_order``) in a temporary
file: :class:`Spill` writes them as they come, :class:`Spilled` is where one group's values of one
metric are."""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from typing import Any

__all__ = ["Spill", "Spilled"]


class Spill:
    """The values of in-order aggregates (``PartialAggregates.in_order``) in a temporary file,
    written once as they come and read back when summarised: a run keeps 16 bytes per chunk of
    a group's values, not 8 bytes per value. The file has no name (``tempfile.TemporaryFile``):
    the system removes it when it is closed or the process ends, also on an error, Ctrl-C or a
    crash."""

    def __init__(self) -> None:
        self.file: Any = None
        self.size = 0

    def __getstate__(self) -> dict[str, Any]:
        raise TypeError("values written to a temporary file are not sent to another process")

    def put(self, values: array[Any]) -> Spilled:
        """Write values (an array of ints or floats); where they are."""
        import os

        if self.file is None:
            import tempfile

            self.file = tempfile.TemporaryFile(prefix="qa-eval-values-")  # noqa: SIM115
        data = values.tobytes()
        os.pwrite(self.file.fileno(), data, self.size)
        chunks = array("q", [self.size, len(values)])
        self.size += len(data)
        return Spilled(self, values.typecode, chunks, len(values))

    def read(self, typecode: str, chunks: array[int]) -> array[Any]:
        """The values written at ``chunks`` (offset, count, offset, count, ...), in order."""
        import os

        out = array(typecode)
        fd = self.file.fileno()
        for i in range(0, len(chunks), 2):
            size = chunks[i + 1] * out.itemsize
            data = os.pread(fd, size, chunks[i])
            if len(data) != size:
                raise OSError("the temporary file of the aggregates' values was cut short")
            out.frombytes(data)
        return out


class Spilled:
    """A group's values of one metric in a :class:`Spill`: all ints or all floats
    (``typecode``), in chunks (offset, count) in order."""

    __slots__ = ("chunks", "count", "store", "typecode")

    def __init__(self, store: Spill, typecode: str, chunks: array[int], count: int) -> None:
        self.store, self.typecode, self.chunks, self.count = store, typecode, chunks, count

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[Any]:
        return iter(self.read())

    def extend(self, other: Spilled) -> None:
        """Add the chunks of values written after these (of the same kind)."""
        chunks = self.chunks
        at = other.chunks
        if chunks and at and chunks[-2] + chunks[-1] * 8 == at[0]:  # (written right after)
            chunks[-1] += at[1]
            chunks.extend(at[2:])
        else:
            chunks.extend(at)
        self.count += other.count

    def read(self) -> array[Any]:
        """The values, read from the file."""
        return self.store.read(self.typecode, self.chunks)

    def tolist(self) -> list[Any]:
        """The values as a list."""
        return self.read().tolist()
