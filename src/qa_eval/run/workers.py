"""The deterministic part of a run in worker processes (``workers=N``, ``--workers N``).

The parent reads and checks the inputs as a run in one process does (every input error is found
before anything is evaluated), then hands the questions out in batches of consecutive results
(:class:`Batch`: each question's reference record and its responses, as checked objects or, read
as a stream, as the lines of the responses file). A worker (a process started with ``spawn``)
prepares the batch's questions and evaluates each result with :func:`evaluate_batch`, the very
code a run in one process calls for each question (``evaluate_question``), so a result never
depends on where it was scored. The parent takes the batches back in order: results in reference
order, byte for byte those of one process. Judge calls stay in the parent (one concurrency bound,
one budget, one reply cache).

A batch of a run that writes JSON Lines comes back written (:class:`Evaluated` ``lines``) and
aggregated (``aggregates``, a :class:`~qa_eval.aggregate.partial.PartialAggregates` merged in
the parent), so the parent neither parses nor writes a result. :func:`evaluate_batch` is also
the entry point of other ways to spread a run (a Ray map over batches): a batch of responses
against its prepared questions, results and a mergeable partial aggregate out.

Workers ignore Ctrl-C (the parent stops them); a worker that dies fails the run with one line,
and the parent leaves no process behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import signal
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from multiprocessing.reduction import ForkingPickler
from typing import TYPE_CHECKING, Any

from ..aggregate.compute import AggregateSpec
from ..aggregate.partial import PartialAggregates
from ..io.limits import dump_json
from .notable import Notable
from .prepare.records import Question, Response
from .prepare.reference import prepare_reference
from .question import evaluate_question
from .shards import position_key
from .stream import read_response
from .tags import tagged

if TYPE_CHECKING:
    from array import array

__all__ = [
    "BATCH",
    "Batch",
    "BatchWork",
    "Evaluated",
    "LinesWork",
    "WorkerPool",
    "evaluate_batch",
    "finish_lines",
    "spread",
]

BATCH = 512
"""Results in a batch: large enough that a batch's transfer is small beside its evaluation."""

Line = tuple[bytes, int, int]
"""A response as its line of a JSON Lines file: (line, line number, byte offset)."""


@dataclass(frozen=True)
class LinesWork:
    """What a run writing JSON Lines does with each result: ``project`` it (the graphrag-eval
    key set; None: as it is) into the line written, aggregate it (``spec``), and keep the keys
    that tell of a problem (``notable``)."""

    spec: AggregateSpec
    project: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    notable: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None
    tags: dict[Any, dict[str, Any]] | None = None
    """The ``by`` keys' values results lack, by question id (``run.tags.question_tags``)."""


@dataclass(frozen=True)
class BatchWork:
    """How every batch of a run is evaluated: the trajectory mode (``evaluate_question``'s),
    whether each result's matched reference steps come back (``matched``: the judge's scorer
    reads them), the responses' source (for messages), and ``lines``: results written and
    aggregated in the worker (None: results come back as dicts)."""

    trajectory: str = "on"
    matched: bool = False
    source: str = "responses"
    lines: LinesWork | None = None


@dataclass
class Batch:
    """Consecutive results of a run: ``questions`` (template id, reference record) and, per
    result, (its position key, its question's index in ``questions``, its response: a checked
    :class:`Response`, a :data:`Line` of the responses file, or None)."""

    questions: list[tuple[Any, Mapping[str, Any]]] = field(default_factory=list)
    units: list[tuple[int, int, Response | Line | None]] = field(default_factory=list)


@dataclass
class Evaluated:
    """A batch evaluated: its results (with the matched steps when asked), or their lines and
    partial aggregates; ``answered``: some result is a success with an answer (then a run
    without judge notes its LLM metrics as not computed)."""

    count: int = 0
    results: list[dict[str, Any]] | None = None
    matched: list[list[tuple[Mapping[str, Any], int]]] | None = None
    lines: bytes = b""
    aggregates: PartialAggregates | None = None
    notable: Notable = field(default_factory=Notable)
    answered: bool = False


def _prepared(batch: Batch) -> list[Question]:
    """The batch's questions prepared (checked by the parent already), in order."""
    templates: list[dict[str, Any]] = []
    for template_id, raw in batch.questions:
        if not templates or templates[-1]["template_id"] != template_id:
            templates.append({"template_id": template_id, "questions": []})
        templates[-1]["questions"].append(raw)
    return prepare_reference(templates, copies=True)


def evaluate_batch(work: BatchWork, batch: Batch) -> Evaluated:
    """Evaluate a batch (see the module docstring): what one process does for each result."""
    questions = _prepared(batch)
    lines = work.lines
    out = Evaluated(count=len(batch.units))
    results: list[dict[str, Any]] = []
    matches: list[list[tuple[Mapping[str, Any], int]]] = []
    positions = []
    for position, at, payload in batch.units:
        question = questions[at]
        if isinstance(payload, tuple):
            payload = read_response(*payload, work.source, question)
        matched: list[tuple[Mapping[str, Any], int]] | None = [] if work.matched else None
        result = evaluate_question(question, payload, matched, work.trajectory)
        if not out.answered:
            out.answered = result.get("status") == "success" and "actual_answer" in result
        results.append(result)
        positions.append(position)
        if matched is not None:
            matches.append(matched)
    if lines is None:
        out.results = results
        out.matched = matches if work.matched else None
        return out
    written = finish_lines(lines, results, positions)
    written.answered = out.answered
    return written


def finish_lines(work: LinesWork, results: list[dict[str, Any]], positions: Any) -> Evaluated:
    """Results in reference order (each at its position key) written as JSON lines, aggregated
    and their notable keys kept: what a run writing JSON Lines does with them, in a worker or in
    the run's own process."""
    out = Evaluated(count=len(results))
    if work.tags is not None:
        values = work.tags
        results = [tagged(r, values) for r in results]
    out.aggregates = PartialAggregates(work.spec)
    out.aggregates.add(results, positions)
    project = work.project
    out.lines = b"".join(
        dump_json(project(r) if project is not None else r) + b"\n" for r in results
    )
    if work.notable is not None:
        for keys in map(work.notable, results):
            if keys is not None:
                out.notable.add(keys)
    return out


def spread(
    units: Iterable[tuple[int, Question, list[Any]]],
    positions: array[int] | None = None,
    size: int = BATCH,
) -> Iterator[Batch]:
    """The batches of a run's questions (each at its place, with its responses: checked, or
    lines of the responses file), about ``size`` results each; each result's position key is
    appended to ``positions`` when given."""
    batch = Batch()
    for place, question, responses in units:
        batch.questions.append((question.template_id, question.raw))
        at = len(batch.questions) - 1
        for trial, response in enumerate(responses or [None]):
            key = position_key(place, trial)
            batch.units.append((key, at, response))
            if positions is not None:
                positions.append(key)
        if len(batch.units) >= size:
            yield batch
            batch = Batch()
    if batch.units:
        yield batch


def _serve(tasks: Any, results: Any, work: BatchWork) -> None:
    """A worker process: evaluate each batch read from the ``tasks`` pipe and send back what
    came of it (its :class:`Evaluated`, or the error it raised) until the pipe closes. A thread
    reads the pipe all along, so the parent never waits to hand a batch over while the worker
    waits to hand a result back. Ctrl-C is left to the parent, which stops the worker."""
    import queue
    import threading

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    waiting: queue.Queue[Any] = queue.Queue()

    def read() -> None:
        try:
            while True:
                waiting.put(tasks.recv())
        except (EOFError, OSError):
            waiting.put(None)

    threading.Thread(target=read, daemon=True).start()
    while True:
        batch = waiting.get()
        if batch is None:
            return
        if isinstance(batch, BatchWork):  # how the batches from now on are evaluated
            work = batch
            continue
        try:
            done = evaluate_batch(work, batch) if isinstance(batch, Batch) else batch.run(work)
            outcome: tuple[str, Any] = ("done", done)
        except Exception as e:  # the parent raises it (bad input found late, a bug)
            outcome = ("error", e)
        try:
            results.send(outcome)
        except Exception as e:  # an error that cannot be pickled: its text
            results.send(("error", RuntimeError(f"{type(e).__name__}: {e}")))


class WorkerPool:
    """``workers`` processes evaluating batches in turn (:meth:`evaluated`), started with
    ``spawn`` (a process with threads is not forked); :meth:`close` stops every one of them,
    also after an error or Ctrl-C. Each worker has a pipe of batches and a pipe of results (no
    queue: its feeder thread could hold the interpreter's exit), and batch k goes to worker
    k mod N, so the results are read back in order."""

    def __init__(self, workers: int, work: BatchWork) -> None:
        context = multiprocessing.get_context("spawn")
        self.workers = workers
        self.tasks: list[Any] = []
        self.results: list[Any] = []
        self.processes: list[Any] = []
        for _ in range(workers):
            task_reader, task_writer = context.Pipe(duplex=False)
            reader, writer = context.Pipe(duplex=False)
            process = context.Process(
                target=_serve,
                args=(task_reader, writer, work),
                name="qa-eval worker",
                daemon=True,
            )
            process.start()
            task_reader.close()
            writer.close()
            self.tasks.append(task_writer)
            self.results.append(reader)
            self.processes.append(process)

    def set_work(self, work: BatchWork) -> None:
        """How every worker evaluates the batches sent from now on."""
        data = ForkingPickler.dumps(work)
        for worker in range(self.workers):
            self._send(worker, data)

    def _send(self, worker: int, data: memoryview) -> None:
        """Hand a pickled batch to a worker (``RuntimeError`` when it died)."""
        try:
            self.tasks[worker].send_bytes(data)
        except (BrokenPipeError, OSError):
            process = self.processes[worker]
            process.join(timeout=1)
            raise RuntimeError(_ended(process)) from None

    async def evaluated(self, batches: Iterable[Any]) -> AsyncIterator[Any]:
        """The batches evaluated, in order; at most two per worker in flight. A worker that
        died: ``RuntimeError`` with one line; an error a worker raised is raised here. A batch
        is a :class:`Batch` or a task with a ``run(work)`` method (``run.parallel``), evaluated
        to what it returns.

        Only the waiting is done in threads: a batch is pickled, and what comes back read and
        unpickled, in the run's own thread. A thread's allocations come from an arena of its
        own (glibc's malloc), which keeps what was freed in it: with the parts and results
        read in the threads of ``asyncio.to_thread``, the run's process peaked at 87 MB at
        100,000 questions and 162 MB at 300,000, against 79 and 144 MB read here (one process:
        72 and 124 MB)."""
        sent = received = 0
        limit = 2 * self.workers
        for batch in batches:
            data = ForkingPickler.dumps(batch)
            await asyncio.to_thread(self._send, sent % self.workers, data)
            del data
            sent += 1
            while sent - received >= limit:
                yield await self._receive(received % self.workers)
                received += 1
        while received < sent:
            yield await self._receive(received % self.workers)
            received += 1

    async def _receive(self, worker: int) -> Any:
        """The next batch a worker evaluated (waiting for it in a thread, read in this one)."""
        from multiprocessing.connection import wait

        reader, process = self.results[worker], self.processes[worker]
        await asyncio.to_thread(wait, [reader, process.sentinel])
        try:
            kind, value = reader.recv() if reader.poll() else ("died", None)
        except (EOFError, OSError):
            kind, value = "died", None
        if kind == "died":
            process.join(timeout=1)
            raise RuntimeError(_ended(process))
        if kind == "error" and isinstance(value, BaseException):
            raise value
        return value

    def close(self) -> None:
        """Stop every worker and wait for it to end."""
        for tasks in self.tasks:
            with contextlib.suppress(Exception):
                tasks.close()  # the worker reads the end of its batches and returns
        for process in self.processes:
            process.join(timeout=0.2)
            if process.is_alive():
                process.terminate()
        for process in self.processes:
            process.join(timeout=5)
            if process.is_alive():
                process.kill()
                process.join()
        for reader in self.results:
            reader.close()


def _ended(process: Any) -> str:
    """The message of a worker that ended before its batches were done."""
    code = f" (exit code {process.exitcode})" if process.exitcode is not None else ""
    return f"a worker process ended while evaluating{code}: the run stopped"
