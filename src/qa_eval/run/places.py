"""What a streamed run keeps of each question on disk instead of in memory, in sorted runs:
where each response of a JSON Lines file is (:class:`ResponsePlaces`: its question's place in the
reference, its byte offset and its line number), and the questions' digests that make the
reference fingerprint (:class:`DigestRuns`).

The checking pass adds them in the order the file gives them. They are kept in sorted runs: up
to ``RUN`` of them in memory, each full run sorted by place (stable: a place's responses stay
in file order) and written to a nameless temporary file, which the system removes on close,
error or crash. The run then takes them place by place, in increasing order, merging the runs
(:meth:`ResponsePlaces.take`): memory holds a block of each run, whatever the file's order and
size. A file in reference order makes runs that follow one another; a file in another order
costs the run's seeks into the responses file, not memory.
"""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Iterator, Sequence
from hashlib import sha256
from typing import IO, Any

__all__ = ["DIGEST_RUN", "RUN", "DigestRuns", "ResponsePlaces"]

RUN = 1 << 16
"""Responses kept in memory before they are sorted and written to the temporary file."""
_HELD = 1 << 14
"""Responses read back and held at a time, over all the runs (a block of each)."""
_ROW = 24  # bytes of one response on disk: place, offset, line number (3 x int64)


class ResponsePlaces:
    """The places of a file's responses (see the module docstring) for ``count`` questions:
    :meth:`add` them as they are read, then :meth:`take` them in increasing place order."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.total = 0
        """How many responses were added."""
        self.answered = bytearray(count)
        """1 for each place with a response (filled by :meth:`finish`)."""
        self._buffer = array("q")
        self._runs: list[tuple[int, int]] = []  # (first row in the file, rows), file order
        self._file: IO[bytes] | None = None
        self._memory: Any = None  # the one run, when it fit in memory
        self._heap: list[tuple[int, int]] | None = None
        self._readers: list[_Reader] = []

    def add(self, place: int, offset: int, number: int) -> None:
        """The response at byte ``offset`` (line ``number``) answers the question at ``place``."""
        self._buffer.extend((place, offset, number))
        self.total += 1
        if len(self._buffer) >= 3 * RUN:
            self._write(self._sorted())

    def add_rows(self, places: Any, offsets: Any, numbers: Any) -> None:
        """:meth:`add` of many responses at once (int64 arrays of one length), in file order."""
        import numpy as np

        rows = np.empty((len(places), 3), dtype=np.int64)
        rows[:, 0], rows[:, 1], rows[:, 2] = places, offsets, numbers
        self._buffer.frombytes(rows.tobytes())
        self.total += len(rows)
        if len(self._buffer) >= 3 * RUN:
            self._write(self._sorted())

    def _sorted(self) -> Any:
        """The buffered responses sorted by place (stable), as rows of 3 int64; emptied."""
        import numpy as np

        rows = np.frombuffer(self._buffer, dtype=np.int64).reshape(-1, 3)
        self._buffer = array("q")
        return rows[np.argsort(rows[:, 0], kind="stable")]

    def _write(self, rows: Any) -> None:
        if self._file is None:
            import tempfile

            self._file = tempfile.TemporaryFile(prefix="qa-eval-places-")  # noqa: SIM115
        first = sum(length for _, length in self._runs)
        self._file.seek(first * _ROW)
        self._file.write(rows.tobytes())
        self._runs.append((first, len(rows)))

    def finish(self) -> None:
        """Every response was added: sort what is left, note which places are answered."""
        import numpy as np

        rows = self._sorted()
        if self._file is None:
            self._memory = rows
        elif len(rows):
            self._write(rows)
        answered = np.frombuffer(self.answered, dtype=np.uint8)
        for block in self._blocks():
            answered[block[:, 0]] = 1

    def _blocks(self) -> Iterator[Any]:
        """The rows of every run, a block at a time (in file order of the runs)."""
        for first, length in self._spans():
            yield from _Reader(self, first, length).blocks()

    def _spans(self) -> list[tuple[int, int]]:
        """(first row, rows) of each run."""
        return [(0, len(self._memory))] if self._memory is not None else self._runs

    def extra(self, chosen: Sequence[int] | None = None) -> int:
        """How many responses answer a question (of ``chosen``, increasing places) a second
        time or more: each a further trial."""
        import numpy as np

        answered = np.frombuffer(self.answered, dtype=np.uint8)
        if chosen is None:
            return self.total - int(np.count_nonzero(answered))
        wanted = np.asarray(chosen, dtype=np.int64)
        if self.total == np.count_nonzero(answered) or not len(wanted):
            return 0
        hits = 0
        for block in self._blocks():
            at = np.searchsorted(wanted, block[:, 0])
            inside = at < len(wanted)
            hits += int(np.count_nonzero(wanted[at[inside]] == block[inside, 0]))
        return hits - int(np.count_nonzero(answered[wanted]))

    def take(self, place: int) -> list[tuple[int, int]]:
        """(offset, line number) of each response to the question at ``place``, in file order;
        places are taken in increasing order (those skipped are passed over)."""
        if self._heap is None:
            self._start()
        heap = self._heap
        assert heap is not None
        out: list[tuple[int, int]] = []
        while heap and heap[0][0] <= place:
            head, run = heapq.heappop(heap)
            reader = self._readers[run]
            while reader.place == head:
                if head == place:
                    out.append(reader.spot())
                reader.advance()
            if reader.place >= 0:
                heapq.heappush(heap, (reader.place, run))
        return out

    def take_range(
        self, first: int, count: int
    ) -> tuple[Any, Any, dict[int, list[tuple[int, int]]]]:
        """:meth:`take` of the places ``first`` to ``first + count - 1`` at once: each one's
        first response's offset (-1: none) and line number (int64 arrays of ``count``) and its
        further responses by place, in file order; ranges are taken in increasing order."""
        import numpy as np

        if self._heap is None:
            self._start()
        end = first + count
        pieces = [rows for reader in self._readers for rows in reader.until(end)]
        self._heap = [(r.place, i) for i, r in enumerate(self._readers) if r.place >= 0]
        heapq.heapify(self._heap)
        offsets, numbers = np.full(count, -1, np.int64), np.zeros(count, np.int64)
        further: dict[int, list[tuple[int, int]]] = {}
        if not pieces:
            return offsets, numbers, further
        rows = np.concatenate(pieces)  # (the runs in file order: a stable sort keeps it)
        rows = rows[np.argsort(rows[:, 0], kind="stable")]
        rows = rows[rows[:, 0] >= first]  # (places passed over)
        firsts = np.ones(len(rows), dtype=bool)
        firsts[1:] = rows[1:, 0] != rows[:-1, 0]
        offsets[rows[firsts, 0] - first] = rows[firsts, 1]
        numbers[rows[firsts, 0] - first] = rows[firsts, 2]
        for place, offset, number in rows[~firsts].tolist():
            further.setdefault(place, []).append((offset, number))
        return offsets, numbers, further

    def _start(self) -> None:
        self._readers = [_Reader(self, first, length) for first, length in self._spans()]
        self._heap = [(r.place, i) for i, r in enumerate(self._readers) if r.place >= 0]
        heapq.heapify(self._heap)

    def close(self) -> None:
        """Remove the temporary file."""
        if self._file is not None:
            self._file.close()
            self._file = None


class _Reader:
    """One sorted run read a block at a time: the current row's ``place`` (-1 at the end)."""

    def __init__(self, owner: ResponsePlaces, first: int, length: int) -> None:
        self.owner, self.first, self.length = owner, first, length
        self.read = 0  # rows of the run read so far
        self.size = max(16, _HELD // max(1, len(owner._spans())))  # rows a block
        self.rows = array("q")  # the block read: place, offset, line number, ...
        self.at = 0
        self.place = -1
        self._load()

    def block(self, start: int) -> Any:
        """The run's rows from ``start`` (at most a block)."""
        import numpy as np

        size = min(self.size, self.length - start)
        memory = self.owner._memory
        if memory is not None:
            return memory[self.first + start : self.first + start + size]
        file = self.owner._file
        assert file is not None
        file.seek((self.first + start) * _ROW)
        return np.frombuffer(file.read(size * _ROW), dtype=np.int64).reshape(-1, 3)

    def blocks(self) -> Iterator[Any]:
        """The run's rows, a block at a time."""
        for start in range(0, self.length, self.size):
            yield self.block(start)

    def _load(self) -> None:
        if self.at >= len(self.rows) and self.read < self.length:
            block = self.block(self.read)
            self.rows = array("q", block.tobytes())
            self.read += len(block)
            self.at = 0
        self.place = self.rows[self.at] if self.at < len(self.rows) else -1

    def until(self, end: int) -> list[Any]:
        """The rows from the current one whose place is below ``end`` (blocks of rows of 3
        int64), passed."""
        import numpy as np

        out = []
        while 0 <= self.place < end:
            rows = np.frombuffer(self.rows, dtype=np.int64).reshape(-1, 3)[self.at // 3 :]
            n = int(np.searchsorted(rows[:, 0], end))
            out.append(rows[:n].copy())
            self.at += 3 * n
            self._load()
        return out

    def spot(self) -> tuple[int, int]:
        """(offset, line number) of the current row."""
        return self.rows[self.at + 1], self.rows[self.at + 2]

    def advance(self) -> None:
        """On to the next row."""
        self.at += 3
        self._load()


DIGEST_RUN = 32 << 16
"""Bytes of question digests kept in memory before they are sorted into the temporary file."""


class DigestRuns:
    """Question digests (32 bytes each) sorted a run at a time into a nameless temporary file,
    and hashed in byte order by merging the runs: the fingerprint of many questions without
    their digests in memory."""

    def __init__(self) -> None:
        self.file: IO[bytes] | None = None
        self.spans: list[tuple[int, int]] = []  # (first byte, bytes) of each run

    def keep(self, digests: bytearray) -> bytearray:
        """``digests`` (the latest, in memory), or a new empty buffer once they filled a run,
        which is written."""
        if len(digests) < DIGEST_RUN:
            return digests
        self.write(digests)
        return bytearray()

    def write(self, digests: bytearray) -> None:
        """Sort ``digests`` in place and append them as a run."""
        import numpy as np

        if not digests:
            return
        if self.file is None:
            import tempfile

            self.file = tempfile.TemporaryFile(prefix="qa-eval-digests-")  # noqa: SIM115
        np.frombuffer(digests, dtype="S32").sort()
        start = sum(size for _, size in self.spans)
        self.file.seek(start)
        self.file.write(digests)
        self.spans.append((start, len(digests)))

    def _rows(self, start: int, size: int) -> Iterator[bytes]:
        assert self.file is not None
        for at in range(start, start + size, 32 << 10):
            self.file.seek(at)
            block = self.file.read(min(32 << 10, start + size - at))
            yield from (block[i : i + 32] for i in range(0, len(block), 32))

    def fingerprint(self) -> str:
        """``signature.digests_fingerprint`` of every digest written; the file is closed."""
        total = sha256()
        out = bytearray()
        for row in heapq.merge(*(self._rows(start, size) for start, size in self.spans)):
            out += row
            if len(out) >= 1 << 16:
                total.update(out)
                out.clear()
        total.update(out)
        self.close()
        return "sha256:" + total.hexdigest()

    def close(self) -> None:
        """Remove the temporary file."""
        if self.file is not None:
            self.file.close()
            self.file = None
