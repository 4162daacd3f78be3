"""Join reference questions with responses and evaluate them.

``arun_evaluation`` is the one code path; ``run_evaluation`` runs it to completion from sync code,
also inside a running event loop (Jupyter), by running it on a worker thread with its own loop.
The caller's objects are never mutated: results hold copies of the reference steps they annotate
with ``matches``, and share the (unchanged) actual step dicts.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
from collections.abc import Callable, Coroutine, Iterator
from typing import TYPE_CHECKING, Any, Unpack

from .endpoints import judge_free
from .execute import execute
from .options import ConfigArg, RunOptions, run_options
from .question import Results
from .signature import reference_fingerprint as reference_fingerprint
from .sinks import OrderedSink, ResultSink

__all__ = [
    "EvaluationStream",
    "arun_evaluation",
    "iter_evaluation",
    "run_evaluation",
    "run_into",
]

if TYPE_CHECKING:  # asyncio is imported when a run needs an event loop (a judge, workers)
    import asyncio
    import queue

    from .keywords import RunKeywords


def _config_arg(config: ConfigArg, config_file_path: str | os.PathLike[str] | None) -> ConfigArg:
    """The config given as ``config`` (or graphrag-eval's third positional argument) or as
    ``config_file_path=``; an empty path is no config, as in graphrag-eval."""
    if config_file_path is not None and config_file_path != "":
        if config is not None and config != "":
            raise TypeError("give the config once: config or config_file_path, not both")
        return config_file_path
    return None if config == "" else config


async def arun_evaluation(
    reference_qas: Any,
    chat_responses: Any,
    config: ConfigArg = None,
    *,
    config_file_path: str | os.PathLike[str] | None = None,
    options: RunOptions | None = None,
    **keywords: Unpack[RunKeywords],
) -> Results:
    """Evaluate every reference question against its response; one result per question, in
    reference order.

    Steps are scored deterministically. The LLM metrics run when a judge is configured
    (``config``: an :class:`EvalConfig`, a YAML path or a mapping; without one, no judge, as in
    graphrag-eval 6.6.1, even when ``OPENAI_API_KEY`` is set), concurrently (at most twice
    ``concurrency`` questions at a time), with replies cached (``cache``: True for the user cache
    directory, a path, or False).
    ``enable`` switches on metrics that are off by default (the GraphRAG set; ``"graphrag"``
    names all of it but BERTScore), ``disable`` switches any off. ``on_result`` receives each
    result as it finishes, ``progress(done, total)`` is called after each question,
    ``on_progress`` gets a :class:`RunProgress` about ten times a second. ``chat_responses`` may
    be a :class:`~qa_eval.run.stream.JsonLinesResponses` file, read as a stream.
    ``config_file_path`` is graphrag-eval's name for ``config`` (give one of them).
    ``fingerprint``: the reference's :func:`reference_fingerprint`, when the caller computed it
    already (e.g. one reference run against several systems): the signature takes it as given
    instead of hashing the reference again (otherwise the results' ``signature`` hashes the
    reference when first read: change the reference's objects only after that).
    ``keys="graphrag-eval"`` writes only the keys
    graphrag-eval 6.6.1 writes (no ``mismatch``, ``step_errors``, costs, ...; values unchanged),
    for golden files and ``==`` tests written against 6.6.1. ``workers``: processes that score
    the deterministic part (``run.workers``; the same results, byte for byte). ``shard``:
    ``"i/N"``, only the questions of shard i of N (``run.shards``). ``options``: all of these as one
    :class:`~qa_eval.run.options.RunOptions` (then give none of the others)."""
    run = run_options(options, config=_config_arg(config, config_file_path), **keywords)
    sink = ResultSink()
    # The reference is hashed for the signature only when the signature is first read
    # (``Results.signature``): most runs through the API never read it.
    sink.results.signature = await execute(reference_qas, chat_responses, sink, run, lazy=True)
    return sink.results


class EvaluationStream(Iterator[dict[str, Any]]):
    """The results of a run, in reference order, as they are ready (see ``iter_evaluation``).

    The run works on a thread of its own; ``signature`` is set once every result was read.
    ``close()`` (or leaving a ``with`` block) stops a run that was not read to the end."""

    def __init__(
        self, reference_qas: Any, chat_responses: Any, options: Callable[[], RunOptions]
    ) -> None:
        import queue  # here: run_evaluation needs no queue

        self.signature: dict[str, Any] | None = None
        self._args = (reference_qas, chat_responses, options)
        self._queue: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=8)
        self._batch: list[dict[str, Any]] = []
        self._position = 0
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[Any] | None = None
        self._stop = threading.Event()
        self._over = False

    def __iter__(self) -> EvaluationStream:
        return self

    def __enter__(self) -> EvaluationStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def ready(self) -> bool:
        """Whether the next result can be read without waiting."""
        return self._position < len(self._batch) or not self._queue.empty()

    def __next__(self) -> dict[str, Any]:
        if self._position < len(self._batch):
            self._position += 1
            return self._batch[self._position - 1]
        if self._over:
            raise StopIteration
        if self._thread is None:
            self._start()
        kind, value = self._queue.get()
        if kind == "batch":
            self._batch, self._position = value, 1
            return value[0]  # type: ignore[no-any-return]
        self._over = True
        assert self._thread is not None
        self._thread.join()
        if kind == "error":
            raise value
        self.signature = value
        raise StopIteration

    def _start(self) -> None:
        import asyncio

        reference_qas, chat_responses, options = self._args

        def deliver(batch: list[dict[str, Any]]) -> None:
            self._queue.put(("batch", batch))

        async def run() -> dict[str, Any]:
            self._loop = asyncio.get_running_loop()
            self._task = asyncio.current_task()
            if self._stop.is_set():
                raise asyncio.CancelledError
            sink = OrderedSink(deliver)
            return await execute(reference_qas, chat_responses, sink, options())

        def target() -> None:
            try:
                signature = asyncio.run(run())
            except BaseException as e:  # handed to the reading thread
                self._queue.put(("error", e))
            else:
                self._queue.put(("end", signature))

        self._thread = threading.Thread(target=target, name="qa-eval", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop the run (if it still runs) and wait for its thread to end."""
        self._over = True
        self._batch, self._position = [], 0
        thread = self._thread
        if thread is None or not thread.is_alive():
            return
        self._stop.set()
        loop, task = self._loop, self._task
        if loop is not None and task is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(task.cancel)
        import queue

        while thread.is_alive():
            # A run blocked on a full queue must be let through to its end.
            with contextlib.suppress(queue.Empty):
                self._queue.get(timeout=0.05)
        thread.join()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()


def iter_evaluation(
    reference_qas: Any, chat_responses: Any, config: ConfigArg = None, **options: Any
) -> EvaluationStream:
    """``run_evaluation`` as an iterator of results in reference order, each as soon as it and
    every question before it finished; the options are ``arun_evaluation``'s (callbacks are
    called on the run's thread). Only results not read yet are held: at most ``2 x concurrency``
    questions are scored at once, ``max(256, 16 x concurrency)`` finished results wait for an
    earlier question, and 8 batches of at most 256 for the reader. With the responses in a
    :class:`~qa_eval.run.stream.JsonLinesResponses` file, the memory of a run does not grow
    with the number of questions beyond the reference dataset. ``signature`` is set once every
    result was read. The options are checked on the run's thread, at the first result read."""
    options["config"] = _config_arg(config, options.pop("config_file_path", None))
    return EvaluationStream(
        reference_qas, chat_responses, functools.partial(run_options, **options)
    )


def _run_in_thread(coroutine_factory: Callable[[], Any]) -> Any:
    import asyncio

    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coroutine_factory())
        except BaseException as e:  # re-raised in the caller's thread
            box["error"] = e

    worker = threading.Thread(target=target, name="qa-eval", daemon=True)
    worker.start()
    worker.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def run_into(
    reference_qas: Any, chat_responses: Any, sink: ResultSink, options: RunOptions
) -> dict[str, Any]:
    """Run to completion with results going to ``sink`` (e.g. ``run.sinks.LinesSink``);
    returns the signature. The run works on a thread of its own, as ``iter_evaluation``'s: Ctrl-C
    (or any exception) in the calling thread cancels it and waits for it to end (its worker
    processes stopped, its files closed) before it is raised, also when the run would have
    finished without another pause."""
    import asyncio

    box: dict[str, Any] = {}
    started = threading.Event()

    async def run() -> dict[str, Any]:
        box["loop"], box["task"] = asyncio.get_running_loop(), asyncio.current_task()
        started.set()
        return await execute(reference_qas, chat_responses, sink, options)

    def target() -> None:
        try:
            box["value"] = asyncio.run(run())
        except BaseException as e:  # re-raised in the caller's thread
            box["error"] = e
        finally:
            started.set()

    worker = threading.Thread(target=target, name="qa-eval", daemon=True)
    worker.start()
    try:
        worker.join()
    except BaseException:
        started.wait()
        loop, task = box.get("loop"), box.get("task")
        if loop is not None and task is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(task.cancel)
        worker.join()
        raise
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


def run_evaluation(
    reference_qas: Any, chat_responses: Any, config: ConfigArg = None, **options: Any
) -> Results:
    """``arun_evaluation`` run to completion (same arguments; ``config`` may be the third
    positional argument or ``config_file_path=``, as in graphrag-eval); safe to call inside a
    running event loop, where it blocks the loop until the run is over (``await
    arun_evaluation(...)`` does not). The results may also be awaited, as graphrag-eval 6.x's
    coroutine was: ``await run_evaluation(...)`` gives the same list."""

    given = options.pop("options", None)
    config = _config_arg(config, options.pop("config_file_path", None))
    run = run_options(given, config=config, **options)

    async def boxed() -> _Box:
        return _Box(await arun_evaluation(reference_qas, chat_responses, options=run))

    if _loop_running():
        return _run_in_thread(boxed).value
    if judge_free(run) and run.workers == 1:  # nothing to wait for: no judge, no processes
        return _without_loop(boxed())
    import asyncio

    return asyncio.run(boxed()).value


def _loop_running() -> bool:
    """Whether this thread runs an event loop (none can while asyncio was never imported)."""
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return False
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _without_loop(coroutine: Coroutine[Any, Any, _Box]) -> Results:
    """A judge-free run's coroutine run to its end in this thread, with no event loop: in one
    process it waits for nothing (no judge, no worker processes, a sink that is never full)
    and only yields now and then (``execute``'s pause), so it is resumed at once. A judge-free
    run thus imports no asyncio, and costs no loop."""
    try:
        while True:
            if coroutine.send(None) is not None:  # a future: only an event loop can wait for it
                coroutine.close()
                raise RuntimeError("a judge-free run awaited a future")
    except StopIteration as done:
        box: _Box = done.value
        return box.value


class _Box:
    """Carries the results out of ``asyncio.run``, whose SIGINT handling formats the finished
    task's repr (result included) when it restores the handler: a ``Results`` list would be
    written out in full for nothing (0.1 s per 1,000 questions)."""

    __slots__ = ("value",)

    def __init__(self, value: Results) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"<{len(self.value)} results>"
