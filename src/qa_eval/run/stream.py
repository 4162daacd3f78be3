"""Responses read from a JSON Lines file as a stream, and results written as a stream.

A run over :class:`JsonLinesResponses` does not hold the responses in memory: one pass reads and
checks every line (the errors are the ones ``prepare_responses`` gives, all found before anything
is evaluated) and keeps only where each question's response starts in the file (two 8-byte
integers per reference question, and a list of the further trials' places for a question answered
in several ``trial``s); the run then reads each response again when its question comes, in
reference order. A file in reference order is read front to back twice; lines in another order
cost a seek each. Lines are split at ``\\n`` only, so a raw U+2028 inside a string is no line break.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from ..errors import InputError
from ..io.files import parse_json
from .prepare.records import Problems, Question, Response
from .prepare.responses import Seen, Unknown, check_response

__all__ = ["JsonLinesResponses", "ResultsFile", "read_response"]

_BOM = b"\xef\xbb\xbf"


def _lines(file: IO[bytes]) -> Iterator[tuple[int, int, bytes]]:
    """(line number, byte offset, line) of every line of a binary file, split at ``\\n``."""
    offset = 0
    for number, line in enumerate(file, start=1):
        start = offset
        offset += len(line)
        if number == 1 and line.startswith(_BOM):
            line = line[len(_BOM) :]
            start += len(_BOM)
        yield number, start, line


def _decode(line: bytes, source: str, number: int, offset: int) -> str:
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

    def _open(self) -> IO[bytes]:
        try:
            return self.path.open("rb")
        except FileNotFoundError:
            raise InputError("no such file", source=str(self.path)) from None
        except IsADirectoryError:
            raise InputError("is a directory, not a file", source=str(self.path)) from None
        except OSError as e:
            raise InputError(f"cannot read: {e.strerror}", source=str(self.path)) from None

    def index(
        self, questions: Sequence[Question], source: str, unknown: Unknown | None = None
    ) -> StreamedResponses:
        """Read and check every line; ``InputError`` (every problem, as ``prepare_responses``
        reports them) before anything is evaluated. Keeps only each response's place; lines
        for question ids not in the reference are counted in ``unknown`` (an error without
        it), as ``prepare_responses`` does."""
        problems = Problems(source)
        position = {q.question_id: i for i, q in enumerate(questions)}
        offsets = array("q", [-1]) * len(questions)
        numbers = array("q", [0]) * len(questions)
        more: dict[int, list[tuple[int, int]]] = {}
        seen = Seen()
        with self._open() as file:
            for number, offset, line in _lines(file):
                if not line.strip():
                    continue
                text = _decode(line, source, number, offset)
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
                    at = position[checked.question_id]
                    if offsets[at] < 0:
                        offsets[at], numbers[at] = offset, number
                    else:  # a further trial
                        more.setdefault(at, []).append((offset, number))
        del seen
        problems.raise_if_any()
        return StreamedResponses(self, source, offsets, numbers, more)


class StreamedResponses:
    """The checked responses of a :class:`JsonLinesResponses` file, read again one at a time."""

    def __init__(
        self,
        origin: JsonLinesResponses,
        source: str,
        offsets: array[int],
        numbers: array[int],
        more: dict[int, list[tuple[int, int]]] | None = None,
    ) -> None:
        self.origin = origin
        self.source = source
        self.offsets = offsets
        self.numbers = numbers
        self.more = more or {}
        """The places (offset, line number) of further trials, by reference position."""
        self._file: IO[bytes] | None = None

    def count(self, chosen: Sequence[int] | None = None) -> int:
        """How many results the run makes: one per question (of ``chosen``, a shard's
        places), one per trial of a question with several."""
        if chosen is not None:
            more = self.more
            return len(chosen) + sum(len(more[i]) for i in chosen if i in more)
        return len(self.offsets) + sum(len(places) for places in self.more.values())

    def get(self, index: int, question: Question) -> list[Response]:
        """The responses to the question at ``index`` of the reference (one per trial; none
        when it has no response)."""
        offset = self.offsets[index]
        if offset < 0:
            return []
        places = [(offset, self.numbers[index]), *self.more.get(index, ())]
        return [self._read(at, number, question) for at, number in places]

    def lines(self, index: int) -> list[tuple[bytes, int, int]]:
        """The lines of the responses to the question at ``index`` (one per trial): (line, line
        number, byte offset), to be read with :func:`read_response`."""
        offset = self.offsets[index]
        if offset < 0:
            return []
        places = [(offset, self.numbers[index]), *self.more.get(index, ())]
        if self._file is None:
            self._file = self.origin._open()
        out = []
        for at, number in places:
            self._file.seek(at)
            out.append((self._file.readline(), number, at))
        return out

    def _read(self, offset: int, number: int, question: Question) -> Response:
        """The response on the line at ``offset``, checked again."""
        if self._file is None:
            self._file = self.origin._open()
        self._file.seek(offset)
        return read_response(self._file.readline(), number, offset, self.source, question)

    def close(self) -> None:
        """Close the file."""
        if self._file is not None:
            self._file.close()
            self._file = None


def read_response(
    line: bytes, number: int, offset: int, source: str, question: Question
) -> Response:
    """The response to ``question`` on a line of a responses file read before (line number
    ``number`` at byte ``offset``), checked again: ``InputError`` when it changed since."""
    record = f"line {number}"
    text = _decode(line, source, number, offset)
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
            for _, _, line in _lines(file):
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
                for _, offset, line in _lines(file):
                    if line.strip():
                        offsets.append(offset)
            self._offsets = offsets
        with self.path.open("rb") as file:
            file.seek(self._offsets[index])
            return parse_json(file.readline().decode("utf-8"), str(self.path))
