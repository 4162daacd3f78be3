"""The values of in-order partial aggregates (``PartialAggregates.in_order``) in a temporary
file: :class:`Spill` writes them as they come, :class:`Spilled` is where one group's values of one
metric are."""

from __future__ import annotations

import functools
import pickle
from array import array
from collections.abc import Iterator
from typing import Any

__all__ = ["Spill", "Spilled"]


BLOCK = 1 << 16
"""Values read at a time when every value is read block by block (512 kB)."""


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
        at = self.write(values.tobytes())
        return Spilled(self, values.typecode, array("q", [at, len(values)]), len(values))

    def write(self, data: bytes) -> int:
        """Write bytes after those written; where they start."""
        import os

        if self.file is None:
            import tempfile
            import weakref

            self.file = tempfile.TemporaryFile(prefix="qa-eval-values-")  # noqa: SIM115
            weakref.finalize(self, self.file.close)  # (closed with its owner, unwarned)
        at = self.size
        os.pwrite(self.file.fileno(), data, at)
        self.size += len(data)
        return at

    def keep(self, held: Any) -> tuple[int, int]:
        """Write an object (pickled; the values in this file it refers to, ``Spilled``, stay
        where they are); where it is (offset, size): :meth:`load` gives it back."""
        import copyreg
        import io
        import pickle

        data = io.BytesIO()
        pickler = pickle.Pickler(data, protocol=pickle.HIGHEST_PROTOCOL)
        # (a Spilled without its file, in C: no Python call per object pickled)
        pickler.dispatch_table = {**copyreg.dispatch_table, Spilled: _detached}
        pickler.dump(held)
        return self.write(data.getvalue()), data.tell()

    def load(self, at: int, size: int) -> Any:
        """The object :meth:`keep` wrote at ``at`` (``size`` bytes)."""
        import io
        import os

        data = os.pread(self.file.fileno(), size, at)
        if len(data) != size:
            raise OSError("the temporary file of the aggregates' values was cut short")
        loader = _Loader(io.BytesIO(data))
        loader.store = self
        return loader.load()

    def read(self, typecode: str, chunks: array[int]) -> array[Any]:
        """The values written at ``chunks`` (offset, count, offset, count, ...), in order, read
        into one array made at its size."""
        import os

        out = array(typecode, bytes(8 * sum(chunks[1::2])))
        view = memoryview(out).cast("B")
        fd = self.file.fileno()
        start = 0
        for i in range(0, len(chunks), 2):
            size = chunks[i + 1] * 8
            if size and os.preadv(fd, [view[start : start + size]], chunks[i]) != size:
                raise OSError("the temporary file of the aggregates' values was cut short")
            start += size
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

    def blocks(self, size: int = BLOCK) -> Iterator[Any]:
        """The values, in order, as numpy arrays of at most ``size`` values (one block held at a
        time, not every value)."""
        chunks = self.chunks
        at = 0
        while at < len(chunks):
            part = array("q")  # (chunks, or their pieces, that make up one block)
            count = 0
            while at < len(chunks) and count < size:
                offset, left = chunks[at], chunks[at + 1]
                take = min(left, size - count)
                part.extend((offset, take))
                count += take
                if take == left:
                    at += 2
                else:
                    chunks = array("q", chunks)  # (a copy: the rest of this chunk comes next)
                    chunks[at], chunks[at + 1] = offset + 8 * take, left - take
            yield _numpy(self.store.read(self.typecode, part))

    def compact(self) -> Spilled:
        """The values written again after every other, in one chunk (read in few reads)."""
        store = self.store
        start = store.size
        for block in self.blocks():
            store.write(block.tobytes())
        return Spilled(store, self.typecode, array("q", [start, self.count]), self.count)

    def tolist(self) -> list[Any]:
        """The values as a list."""
        return self.read().tolist()


class _Loader(pickle.Unpickler):
    """Reads what :meth:`Spill.keep` wrote: each ``Spilled`` given its file (``store``)."""

    store: Spill

    def find_class(self, module: str, name: str) -> Any:
        if module == __name__ and name == "attached":
            return functools.partial(Spilled, self.store)
        return super().find_class(module, name)


def _detached(spilled: Spilled) -> tuple[Any, tuple[Any, ...]]:
    """How :meth:`Spill.keep` pickles a ``Spilled``: without its file (given back by
    :meth:`Spill.load`)."""
    return attached, (spilled.typecode, spilled.chunks, spilled.count)


def attached(typecode: str, chunks: array[int], count: int) -> Spilled:
    """A ``Spilled`` read back by :meth:`Spill.load`, which gives its file (never called
    itself)."""
    raise TypeError("values written to a temporary file are read back by the file's Spill.load")


def _numpy(values: array[Any]) -> Any:
    import numpy as np

    return np.frombuffer(values, dtype=np.int64 if values.typecode == "q" else np.float64)
