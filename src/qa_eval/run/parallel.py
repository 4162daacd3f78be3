"""A streamed run (a JSON Lines reference, responses and results) spread over worker processes
from its first line: each worker checks, and then evaluates, its own part of the files.

The reference is cut into byte ranges of whole lines (:func:`ranges`, about 1 MB each). Each
range is checked by a worker (:class:`CheckReference`); the run's process joins what they kept
(ids, hashes, digests: ``run.reflines.IdIndex``) into the run's index, writes the index to a
temporary folder, and the workers check the responses file's ranges against it
(:class:`CheckResponses`), giving back each response's place. The run's process only joins
arrays. Then each reference range is evaluated by a worker (:class:`EvaluateRange`: its
questions prepared, their responses read at their offsets, evaluated, written and aggregated by
``workers.evaluate_batch``), and the run's process appends the written ranges in order and
merges their partial aggregates.

Whatever is not plain (a problem found, a duplicate, trials, two forms of lines, a ``.gz`` file)
is checked again in the run's process, the way one process checks it: the errors are one
process's, line numbers and all, and trials are joined as one process joins them.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import warnings
from array import array
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError, UnknownResponsesWarning
from ..io.files import parse_json
from ..metrics.agents.trials import TRIAL_KEY
from .places import DigestRuns, ResponsePlaces
from .prepare.records import Problems
from .prepare.responses import Unknown, check_response
from .reflines import (
    Checked,
    IdIndex,
    IdLookup,
    JsonLinesReference,
    StreamedReference,
    check_lines,
    lines_of,
    unprepared,
)
from .shards import TRIALS_BITS, position_key
from .stream import JsonLinesResponses, StreamedResponses, decode_line, file_lines
from .workers import Batch, BatchWork, Evaluated, WorkerPool, evaluate_batch

__all__ = [
    "CHUNK",
    "CheckReference",
    "CheckResponses",
    "EvaluateRange",
    "prepare",
    "ranges",
    "ranges_evaluated",
    "spreads",
]

CHUNK = 1 << 20
"""Bytes of the reference a worker checks or evaluates at a time."""
RESPONSES_CHUNK = 4 << 20
"""Bytes of the responses a worker checks at a time."""


def spreads(reference: Any, responses: Any) -> bool:
    """Whether a run with workers checks these inputs in its workers: a JSON Lines reference and
    responses read as streams, neither of them ``.gz`` (read in byte ranges)."""
    return (
        isinstance(reference, JsonLinesReference)
        and isinstance(responses, JsonLinesResponses)
        and reference.path.suffix.lower() != ".gz"
        and responses.path.suffix.lower() != ".gz"
    )


def ranges(path: Path, size: int) -> list[tuple[int, int]]:
    """Byte ranges of a file of about ``size`` bytes, each ending at a line's end."""
    total = path.stat().st_size
    out = []
    start = 0
    with path.open("rb") as file:
        while start < total:
            end = min(start + size, total)
            if end < total:
                file.seek(end)
                end += len(file.readline())
            out.append((start, end))
            start = end
    return out


def _range_lines(
    file: Any, start: int, end: int, first: int = 1
) -> Iterator[tuple[int, int, bytes]]:
    """The lines of ``file`` from byte ``start`` to ``end``, numbered from ``first``."""
    file.seek(start)
    for number, offset, line in file_lines(file, start, first):
        if offset >= end:
            return
        yield number, offset, line


class _Plain(Exception):
    """What a worker found is not plain: the run's process checks it again (see the module
    docstring)."""


@dataclass
class CheckReference:
    """Check one byte range of the reference (line numbers counted from the range's start)."""

    path: str
    start: int
    end: int
    by: tuple[str, ...]

    def run(self, work: BatchWork) -> tuple[Checked, int] | None:
        """What the range kept and its number of lines; None when it is not plain."""
        lines = array("q", [0])

        def counted() -> Iterator[tuple[int, int, bytes]]:
            for item in _range_lines(file, self.start, self.end):
                lines[0] = item[0]
                yield item

        with open(self.path, "rb") as file:
            try:
                checked = check_lines(counted(), self.path, self.by)
            except InputError:
                return None
        if checked.problems is not None and checked.problems.items:
            return None
        checked.problems = None
        return checked, lines[0]


_LOADED: dict[str, IdIndex] = {}
"""The index a worker process loaded, by folder (one run's)."""


@dataclass
class CheckResponses:
    """Check one byte range of the responses file against the index in ``folder``."""

    path: str
    start: int
    end: int
    folder: str
    source: str

    def run(self, work: BatchWork) -> dict[str, Any] | None:
        """Each known response's place, byte offset and line number (from the range's start),
        the lines read, and the unknown ids; None when something is not plain."""
        index = _LOADED.get(self.folder)
        if index is None:
            _LOADED.clear()
            index = _LOADED[self.folder] = IdIndex.load(Path(self.folder))
        lookup, problems, unknown = IdLookup(index), Problems(self.source), Unknown()
        places, offsets, numbers = array("q"), array("q"), array("q")
        lines = 0
        with open(self.path, "rb") as file:
            for number, offset, line in _range_lines(file, self.start, self.end):
                lines = number
                if not line.strip():
                    continue
                try:
                    record = parse_json(
                        decode_line(line, self.source, number, offset), self.source, "line"
                    )
                except InputError:
                    return None
                place = ("line", number)
                checked = check_response(place, None, record, problems, lookup, None, unknown)
                if problems.items or (checked is not None and TRIAL_KEY in checked.raw):
                    return None
                if checked is not None:
                    places.append(lookup[checked.question_id])
                    offsets.append(offset)
                    numbers.append(number)
        return {
            "places": places,
            "offsets": offsets,
            "numbers": numbers,
            "lines": lines,
            "unknown": (unknown.count, unknown.examples),
        }


@dataclass
class EvaluateRange:
    """Evaluate the questions of one byte range of the reference: those at places ``first`` to
    ``first + count``, their responses at ``offsets`` (-1: none; ``more``: further trials)."""

    reference: str
    start: int
    end: int
    line: int
    first: int
    count: int
    responses: str
    offsets: bytes
    numbers: bytes
    more: dict[int, list[tuple[int, int]]] = field(default_factory=dict)

    def run(self, work: BatchWork) -> Evaluated:
        """The range's results, as ``evaluate_batch`` gives them."""
        _LOADED.clear()  # the index the responses were checked against: a worker's no more
        offsets, numbers = array("q"), array("q")
        offsets.frombytes(self.offsets)
        numbers.frombytes(self.numbers)
        batch = Batch()
        place = self.first
        with open(self.reference, "rb") as file, open(self.responses, "rb") as answers:
            lines = _range_lines(file, self.start, self.end, self.line)
            for number, form, record in lines_of(lines, self.reference):
                for question, _ in unprepared(number, form, record):
                    at = place - self.first
                    if at >= self.count:
                        break
                    batch.questions.append((question.template_id, question.raw))
                    spots = [(offsets[at], numbers[at])] if offsets[at] >= 0 else []
                    spots += self.more.get(place, [])
                    for trial, (offset, line_number) in enumerate(spots):
                        answers.seek(offset)
                        payload = (answers.readline(), line_number, offset)
                        batch.units.append((position_key(place, trial), at, payload))
                    if not spots:
                        batch.units.append((position_key(place, 0), at, None))
                    place += 1
        if place - self.first != self.count:
            raise InputError("the file changed while it was being evaluated", source=self.reference)
        return evaluate_batch(work, batch)


async def _each(pool: WorkerPool, tasks: Iterable[Any]) -> AsyncIterator[Any]:
    """What each task gave, in order, every one of them read (the pool is used again after)."""
    results: Any = pool.evaluated(tasks)
    async with contextlib.aclosing(results):
        async for result in results:
            yield result


def _join(joined: Checked, part: Checked) -> None:
    """Append what a range kept to what the ranges before it kept (its digests through the
    joined part's runs, as one process sorts them into a temporary file)."""
    joined.hashes.extend(part.hashes)
    joined.digests += part.digests
    if joined.runs is not None:
        joined.digests = joined.runs.keep(joined.digests)
    joined.templates.update(part.templates)
    joined.tags |= part.tags
    joined.count += part.count


async def prepare(
    pool: WorkerPool,
    reference: JsonLinesReference,
    responses: JsonLinesResponses,
    reference_source: str,
    responses_source: str,
    unknown: Unknown,
) -> tuple[StreamedReference, StreamedResponses]:
    """The run's questions and responses, checked by the pool's workers (see the module
    docstring): what ``run.execute`` prepares in one process, the same errors. What each range
    kept is joined as it comes: the run's process holds what one process holds, not each
    range's part besides."""
    source = str(reference.path) if reference_source == "reference" else reference_source
    spans = ranges(reference.path, CHUNK)
    tasks = (CheckReference(str(reference.path), a, b, reference.by) for a, b in spans)
    joined: Checked | None = Checked(source, runs=DigestRuns())
    chunks, place, line, forms = [], 0, 1, set()
    async for (start, end), part in _zipped(spans, _each(pool, tasks)):
        if part is None or joined is None:
            joined = None  # (the rest is read, and let go)
            continue
        checked, lines = part
        if checked.form:
            forms.add(checked.form[0])
        chunks.append((start, end, place, checked.count, line))
        place += checked.count
        line += lines
        _join(joined, checked)
    if joined is None or len(forms) > 1:
        questions = reference.check(source)  # (raises what one process raises)
    else:
        tags = joined.tags
        questions = StreamedReference(reference, source, [joined])
        del joined
        if questions.index.duplicates():
            questions = reference.check(source)
        else:
            reference.check_by(Checked(source, tags=tags))
            questions.chunks = chunks
    streamed = await _responses(pool, questions, responses, responses_source, unknown)
    if unknown.count:
        warnings.warn(unknown.message(responses_source), UnknownResponsesWarning, stacklevel=3)
    return questions, streamed


async def _zipped(items: Iterable[Any], results: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """Each item with its task's result."""
    pending = iter(items)
    async for result in results:
        yield next(pending), result


async def _responses(
    pool: WorkerPool,
    questions: StreamedReference,
    responses: JsonLinesResponses,
    source: str,
    unknown: Unknown,
) -> StreamedResponses:
    """The responses checked by the workers against the index, else in this process. Each
    range's places go into a :class:`ResponsePlaces` as they come, sorted into a temporary file
    as one process sorts them, a byte a question marking those answered (a question already
    given a response: answered twice, checked again here)."""
    import numpy as np

    places = ResponsePlaces(len(questions))  # (sorted into a temporary file, as one process)
    seen = np.zeros(len(questions), dtype=np.uint8)
    base, plain, found = 0, True, Unknown()
    folder = Path(tempfile.mkdtemp(prefix="qa-eval-index-"))
    try:
        questions.index.save(folder)
        path = str(responses.path)
        spans = ranges(responses.path, RESPONSES_CHUNK)
        tasks = (CheckResponses(path, a, b, str(folder), source) for a, b in spans)
        async for part in _each(pool, tasks):
            if part is None or not plain:
                plain = False
                continue
            chosen = np.frombuffer(part["places"], np.int64)
            if seen[chosen].any() or len(np.unique(chosen)) != len(chosen):
                plain = False  # a question answered twice
                continue
            seen[chosen] = 1
            numbers = np.frombuffer(part["numbers"], np.int64) + base
            places.add_rows(chosen, np.frombuffer(part["offsets"], np.int64), numbers)
            base += part["lines"]
            count, examples = part["unknown"]
            found.count += count
            found.examples += examples[: 5 - len(found.examples)]
        del seen
        if plain:
            places.finish()
    except BaseException:
        places.close()
        raise
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if not plain:
        places.close()
        return responses.index(questions, source, unknown)
    unknown.count += found.count
    unknown.examples += found.examples[: 5 - len(unknown.examples)]
    return StreamedResponses(responses, source, places=places)


def ranges_evaluated(
    questions: StreamedReference, streamed: StreamedResponses, positions: array[int] | None
) -> Iterator[EvaluateRange]:
    """The tasks that evaluate every question, a reference range each, in order; each result's
    position key appended to ``positions`` when given."""
    import numpy as np

    assert questions.chunks is not None
    for start, end, first, count, line in questions.chunks:
        offsets, numbers, more = streamed.range_spots(first, count)
        if positions is not None:
            if more:
                for place in range(first, first + count):
                    tries = 1 + len(more.get(place, ()))
                    positions.extend(position_key(place, k) for k in range(tries))
            else:
                keys = np.arange(first, first + count, dtype=np.int64) << TRIALS_BITS
                positions.frombytes(keys.tobytes())
        yield EvaluateRange(
            str(questions.origin.path),
            start,
            end,
            line,
            first,
            count,
            str(streamed.origin.path),
            offsets,
            numbers,
            more,
        )
