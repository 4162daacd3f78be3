"""Responses read from a JSON Lines file as a stream, and results written as a stream.

A run over :class:`JsonLinesResponses` does not hold the responses in memory: one pass reads and
checks every line (the errors are the ones ``prepare_responses`` gives, all found before anything
is evaluated) and keeps only where each response starts in the file, sorted by question into a
temporary file a run at a time (``run.places``: no record per question in memory, a byte a
question to note which are answered); the run then reads each response again when its question
comes, in reference order. A file in reference order is read front to back twice; lines in
another order cost a seek each. Lines are split at ``\\n`` only, so a raw U+2028 inside a string
is no line break.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from ..errors import InputError
from ..io.files import open_bytes, parse_json
from .places import ResponsePlaces
from .prepare.records import Problems, Question, Response
from .prepare.responses import Seen, Unknown, check_response

__all__ = [
    "JsonLinesResponses",
    "ResultsFile",
    "decode_line",
    "file_lines",
    "gz_lines",
    "open_input",
    "read_response",
]

_BOM = b"\xef\xbb\xbf"


def file_lines(
    file: IO[bytes], offset: int = 0, first: int = 1
) -> Iterator[tuple[int, int, bytes]]:
    """(line number, byte offset, line) of every line of a binary file, split at ``\\n``, from
    ``offset`` (where ``file`` stands, at line number ``first``)."""
    for number, line in enumerate(file, start=first):
        start = offset
        offset += len(line)
        if start == 0 and line.startswith(_BOM):
            line = line[len(_BOM) :]
            start += len(_BOM)
        yield number, start, line


def open_input(path: Path) -> IO[bytes]:
    """A JSON Lines input opened for reading bytes (``.gz``: decompressed as it is read);
    ``InputError`` naming it when it cannot be."""
    file = open_bytes(path)
    if path.suffix.lower() != ".gz":
        return file
    import gzip

    return gzip.GzipFile(fileobj=file, mode="rb")  # type: ignore[return-value]


def gz_lines(file: IO[bytes], source: str) -> Iterator[tuple[int, int, bytes]]:
    """:func:`file_lines` of a file that may be gzip: a corrupt or truncated one is an
    ``InputError`` naming it."""
    import zlib

    try:
        yield from file_lines(file)
    except (OSError, EOFError, zlib.error) as e:
        raise InputError(f"cannot read: {e}", source=source) from None


def decode_line(line: bytes, source: str, number: int, offset: int) -> str:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(
            f"not UTF-8 text (byte 0x{line[e.start]:02x} at offset {offset + e.start})",
            source=source,
            record=f"line {number}",
        ) from None


class JsonLinesResponses:
    """A JSON Lines responses file for a run that reads it as a stream (``run_evaluation`` and
    ``iter_evaluation`` accept it where they take the responses)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"JsonLinesResponses({str(self.path)!r})"

    def open(self) -> IO[bytes]:
        """The file to read again at the offsets of its lines (a ``.gz`` file: its lines copied
        by :meth:`index` into a temporary file, where a seek is cheap)."""
        if self.spilled is not None:
            return self.spilled.open("rb")
        return open_input(self.path)

    spilled: Path | None = None
    """The temporary copy of a ``.gz`` file's lines (removed by ``StreamedResponses.close``)."""

    def index(
        self, questions: Sequence[Question] | Any, source: str, unknown: Unknown | None = None
    ) -> StreamedResponses:
        """Read and check every line; ``InputError`` (every problem, as ``prepare_responses``
        reports them) before anything is evaluated. Keeps only each response's place
        (``run.places``); lines for question ids not in the reference are counted in
        ``unknown`` (an error without it), as ``prepare_responses`` does. ``questions``:
        prepared, or a reference read as a stream (``run.reflines.StreamedReference``), whose
        compact index of ids joins them."""
        places = ResponsePlaces(len(questions))
        copy = self._spill() if self.path.suffix.lower() == ".gz" else None
        try:
            with open_input(self.path) as file:
                lines = gz_lines(file, str(self.path))
                collided = self._check(lines, questions, source, unknown, places, copy)
            if collided:  # a response answering a question twice: found again, named exactly
                if copy is not None:
                    copy.flush()
                if unknown is not None:
                    unknown.count, unknown.examples = 0, []
                with self.open() as file:
                    lines = file_lines(file)
                    self._check(lines, questions, source, unknown, ResponsePlaces(0), None, True)
                raise InputError("the file changed while it was being read", source=source)
            places.finish()
        except BaseException:
            places.close()
            self._unspill()
            raise
        finally:
            if copy is not None:
                copy.close()
        return StreamedResponses(self, source, places=places)

    def _check(
        self,
        lines: Iterator[tuple[int, int, bytes]],
        questions: Sequence[Question] | Any,
        source: str,
        unknown: Unknown | None,
        places: ResponsePlaces,
        copy: IO[bytes] | None,
        exact: bool = False,
    ) -> bool:
        """Check the lines, each response's place added to ``places``; raises the problems
        found. True (raising nothing) when a question was answered twice and the reference's
        compact record of the responses seen cannot name the first one (``exact``: it can)."""
        problems = Problems(source)
        position: Any
        lookup = getattr(questions, "lookup", None)
        if lookup is not None:  # a reference read as a stream: its compact index of ids
            position = lookup()
            noted = position.places(places.answered, exact)
            seen = Seen(noted)
        else:
            position = {q.question_id: i for i, q in enumerate(questions)}
            noted, seen = None, Seen()
        for number, offset, line in lines:
            if copy is not None:
                if copy.tell() < offset:  # a byte order mark, left out of the line
                    copy.write(_BOM)
                copy.write(line)
            if not line.strip():
                continue
            text = decode_line(line, source, number, offset)
            record = f"line {number}"
            checked = check_response(
                ("line", number),
                None,
                parse_json(text, source, record),
                problems,
                position,
                seen,
                unknown,
            )
            if checked is not None:
                places.add(position[checked.question_id], offset, number)
        if noted is not None and noted.collided:
            return True
        problems.raise_if_any()
        return False

    def _spill(self) -> IO[bytes]:
        """A temporary file for the lines of a ``.gz`` file (read again at their offsets)."""
        import tempfile

        copy = tempfile.NamedTemporaryFile(prefix="qa-eval-responses-", delete=False)  # noqa: SIM115
        self.spilled = Path(copy.name)
        return copy  # type: ignore[return-value]

    def _unspill(self) -> None:
        spilled, self.spilled = self.spilled, None
        if spilled is not None:
            spilled.unlink(missing_ok=True)


class StreamedResponses:
    """The checked responses of a :class:`JsonLinesResponses` file, read again one at a time
    (or a range at a time, for workers), in increasing reference place, from their
    :class:`~qa_eval.run.places.ResponsePlaces`."""

    def __init__(self, origin: JsonLinesResponses, source: str, places: ResponsePlaces) -> None:
        self.origin = origin
        self.source = source
        self.places = places
        self._file: IO[bytes] | None = None

    def range_spots(
        self, first: int, count: int
    ) -> tuple[bytes, bytes, dict[int, list[tuple[int, int]]]]:
        """Of the questions at places ``first`` to ``first + count - 1``: each first response's
        offset (-1: none) and line number, as int64 bytes, and the further trials' places by
        place (ranges taken in increasing place order; no array of every question is made)."""
        firsts, lines, further = self.places.take_range(first, count)
        return firsts.tobytes(), lines.tobytes(), further

    def count(self, chosen: Sequence[int] | None = None) -> int:
        """How many results the run makes: one per question (of ``chosen``, a shard's
        places), one per trial of a question with several."""
        questions = self.places.count if chosen is None else len(chosen)
        return questions + self.places.extra(chosen)

    def _spots(self, index: int) -> list[tuple[int, int]]:
        """(offset, line number) of each response to the question at ``index``."""
        return self.places.take(index)

    def get(self, index: int, question: Question) -> list[Response]:
        """The responses to the question at ``index`` of the reference (one per trial; none
        when it has no response); questions are taken in increasing ``index``."""
        return [self._read(at, number, question) for at, number in self._spots(index)]

    def lines(self, index: int) -> list[tuple[bytes, int, int]]:
        """The lines of the responses to the question at ``index`` (one per trial): (line, line
        number, byte offset), to be read with :func:`read_response`."""
        out = []
        for at, number in self._spots(index):
            if self._file is None:
                self._file = self.origin.open()
            self._file.seek(at)
            out.append((self._file.readline(), number, at))
        return out

    def _read(self, offset: int, number: int, question: Question) -> Response:
        """The response on the line at ``offset``, checked again."""
        if self._file is None:
            self._file = self.origin.open()
        self._file.seek(offset)
        return read_response(self._file.readline(), number, offset, self.source, question)

    def close(self) -> None:
        """Close the file (and remove a ``.gz`` file's temporary copy and the places')."""
        if self._file is not None:
            self._file.close()
            self._file = None
        if self.places is not None:
            self.places.close()
        self.origin._unspill()


def read_response(
    line: bytes, number: int, offset: int, source: str, question: Question
) -> Response:
    """The response to ``question`` on a line of a responses file read before (line number
    ``number`` at byte ``offset``), checked again: ``InputError`` when it changed since."""
    record = f"line {number}"
    text = decode_line(line, source, number, offset)
    problems = Problems(source)
    response = check_response(
        ("line", number),
        None,
        parse_json(text, source, record),
        problems,
        (question.question_id,),
        None,
    )
    if response is None or response.question_id != question.question_id:
        problems.add(record, None, "the file changed while it was being evaluated")
    problems.raise_if_any()
    assert response is not None  # (raised otherwise)
    return response


class ResultsFile(Sequence[dict[str, Any]]):
    """Results written to a JSON Lines file, read back from it one at a time on demand (a
    sequence, so code that iterates the results of a run works on a streamed run too)."""

    signature: dict[str, Any]

    def __init__(
        self, path: str | os.PathLike[str], count: int, signature: dict[str, Any] | None = None
    ) -> None:
        self.path = Path(path)
        self._length = count
        self.signature = signature or {}
        self._offsets: array[int] | None = None

    def __len__(self) -> int:
        return self._length

    def __iter__(self) -> Iterator[dict[str, Any]]:
        with self.path.open("rb") as file:
            for _, _, line in file_lines(file):
                if line.strip():
                    yield parse_json(line.decode("utf-8"), str(self.path))

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._length))]
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError("result index out of range")
        if self._offsets is None:
            offsets = array("q")
            with self.path.open("rb") as file:
                for _, offset, line in file_lines(file):
                    if line.strip():
                        offsets.append(offset)
            self._offsets = offsets
        with self.path.open("rb") as file:
            file.seek(self._offsets[index])
            return parse_json(file.readline().decode("utf-8"), str(self.path))
