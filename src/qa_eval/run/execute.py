"""The one code path of a run (``execute``): prepare the questions and responses, set up the judge,
the embedder and the scorer, evaluate every question in reference order with at most ``window``
scored at once, hand results to a sink as they finish (``run.sinks``), and build the run's
signature (``run.signature``). It reads the run's options from one
:class:`~qa_eval.run.options.RunOptions`; its judge, embedder and BERTScore model are
``run.endpoints``.

``run.evaluation`` holds the public verbs over it (``run_evaluation``, ``arun_evaluation``,
``iter_evaluation``).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import sys
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias, cast

from ..errors import QaEvalError, UnknownResponsesWarning
from ..io.keysets import custom_keys, original_result
from .endpoints import Endpoints
from .options import ResultCallback, RunOptions
from .prepare.records import Question, Response
from .prepare.reference import prepare_reference
from .prepare.responses import Unknown, prepare_responses
from .progress import CountingJudge, Tracker
from .question import evaluate_in_order, evaluate_question, pause
from .signature import run_signature
from .sinks import ResultSink

if TYPE_CHECKING:  # the judge side (pydantic, the metrics) and asyncio are imported only when a
    # run uses them (a judge-free run in one process runs without an event loop)
    import asyncio
    from array import array

    from ..judge.calls import Judge
    from .reflines import StreamedReference
    from .score import AnswerScorer
    from .workers import BatchWork, WorkerPool

__all__ = ["execute"]


class _Lookup:
    """The responses of a run by reference position: held in memory (as ``prepare_responses``
    gives them for the run's questions: each key a question's id, each list non-empty), or read
    from a JSON Lines file one at a time (:class:`~qa_eval.run.stream.StreamedResponses`)."""

    def __init__(self, responses: dict[Any, list[Response]] | None, streamed: Any = None) -> None:
        self.responses = responses
        self.streamed = streamed

    def get(self, index: int, question: Question) -> list[Response]:
        """The question's responses: one per trial, none when it has no response; handed over
        once (each question is evaluated once): the lookup lets go of them."""
        if self.responses is not None:
            return self.responses.pop(question.question_id, None) or []
        return self.streamed.get(index, question)  # type: ignore[no-any-return]

    def count(self, questions: Questions, chosen: list[int] | None = None) -> int:
        """How many results the run makes: one per question (of ``chosen``, the places of
        a shard's questions), one per trial of a question answered in several."""
        if self.responses is None:
            return self.streamed.count(chosen)  # type: ignore[no-any-return]
        responses = self.responses
        assert isinstance(questions, list)  # (a streamed reference has streamed responses)
        if chosen is not None:
            return sum(len(responses.get(questions[i].question_id) or (None,)) for i in chosen)
        # Each list is a question's (prepare_responses keeps only those, never empty): a
        # question answered n times adds n - 1, counted in C without walking the questions.
        return len(questions) + sum(map(len, responses.values())) - len(responses)

    def units(
        self,
        questions: Questions,
        chosen: list[int] | None = None,
        positions: array[int] | None = None,
    ) -> Iterable[tuple[Question, Response | None]]:
        """Each question (of ``chosen``) with each of its responses, in reference order (a
        question without a response once, with None), each result's position key appended to
        ``positions`` when given; a question's prepared steps are let go once its last result
        is made."""
        held = self.responses
        if positions is not None:  # shards and worker processes only: imported for them
            from .shards import position_key
        for index, question in _places(questions, chosen):
            # In memory: popped here as get() would (one call per question fewer).
            responses = (
                self.get(index, question) if held is None else held.pop(question.question_id, None)
            )
            if positions is not None:
                positions.extend(position_key(index, k) for k in range(len(responses or "_")))
            if not responses:
                yield question, None
            else:
                for response in responses:
                    yield question, response
            question.release()

    def payloads(
        self, questions: Questions, chosen: list[int] | None = None
    ) -> Iterable[tuple[int, Question, list[Any]]]:
        """Each question (of ``chosen``) with its place and its responses as a worker process
        takes them: checked responses, or the lines of a streamed responses file."""
        held, streamed = self.responses, self.streamed
        for index, question in _places(questions, chosen, prepare=False):
            if held is not None:
                yield index, question, held.pop(question.question_id, [])
            else:
                yield index, question, streamed.lines(index)
            question.release()

    def close(self) -> None:
        if self.streamed is not None:
            self.streamed.close()


Questions: TypeAlias = "list[Question] | StreamedReference"
"""The questions of a run: prepared, or read again as they come (a reference in JSON Lines)."""


def _places(
    questions: Questions, chosen: list[int] | None, prepare: bool = True
) -> Iterable[tuple[int, Question]]:
    """Each question (of ``chosen``, the places of a shard's questions) with its place (a whole
    prepared reference: ``enumerate``, no generator resumed per question)."""
    if not isinstance(questions, list):
        return questions.each(chosen, prepare)
    if chosen is None:
        return enumerate(questions)
    return ((index, questions[index]) for index in chosen)


def _prepare(
    reference_qas: Any,
    chat_responses: Any,
    reference_source: str,
    responses_source: str,
    unknown: Unknown,
    copies: bool = False,
) -> tuple[Questions, _Lookup]:
    """The checked questions and responses; responses for question ids not in the reference
    are counted in ``unknown`` and left out, with one ``UnknownResponsesWarning``. ``copies``:
    the questions carry the copies of their steps for their results (the run keeps them all).
    A :class:`~qa_eval.run.reflines.JsonLinesReference` is checked and indexed, its questions
    read again as the run comes to them; its responses must be a ``JsonLinesResponses`` file."""
    # Neither module is imported unless a JsonLinesReference / JsonLinesResponses was made.
    reflines = sys.modules.get("qa_eval.run.reflines")
    stream = sys.modules.get("qa_eval.run.stream")
    questions: Any
    if reflines is not None and isinstance(reference_qas, reflines.JsonLinesReference):
        if stream is None or not isinstance(chat_responses, stream.JsonLinesResponses):
            raise QaEvalError(
                "a reference read as a stream (JsonLinesReference) takes its responses read as "
                "a stream too (JsonLinesResponses)"
            )
        source = str(reference_qas.path) if reference_source == "reference" else reference_source
        questions = reference_qas.check(source)
        questions.copies = copies
        lookup = _Lookup(None, chat_responses.index(questions, responses_source, unknown))
    else:
        questions = prepare_reference(reference_qas, reference_source, copies=copies)
        if stream is not None and isinstance(chat_responses, stream.JsonLinesResponses):
            lookup = _Lookup(None, chat_responses.index(questions, responses_source, unknown))
        else:
            responses = prepare_responses(chat_responses, questions, responses_source, unknown)
            lookup = _Lookup(responses)
    if unknown.count:
        warnings.warn(unknown.message(responses_source), UnknownResponsesWarning, stacklevel=2)
    return questions, lookup


async def execute(
    reference_qas: Any,
    chat_responses: Any,
    sink: ResultSink,
    options: RunOptions,
    lazy: bool = False,
) -> dict[str, Any]:
    """The one code path of a run: results go to ``sink`` as they finish; returns the run's
    signature (``options.fingerprint``: the reference's, already computed by the caller;
    ``lazy``: a reference in memory is hashed when first read, ``run.signature.PendingFingerprint``;
    ``options.keys``: ``"graphrag-eval"`` writes only the keys graphrag-eval 6.6.1 writes, see
    ``io.keysets``)."""
    project = _projection(options)
    collector = Collector()
    endpoints = Endpoints()
    lookup: _Lookup | None = None
    unknown = Unknown()
    pool: WorkerPool | None = None
    questions: Questions
    try:
        if options.workers > 1 and _spreads(reference_qas, chat_responses):
            # The workers check their parts of the inputs too (run.parallel).
            from .parallel import prepare as spread_checks
            from .workers import BatchWork, WorkerPool

            pool = WorkerPool(options.workers, BatchWork())
            sources = options.reference_source, options.responses_source
            checked, streamed = await spread_checks(
                pool, reference_qas, chat_responses, *sources, unknown
            )
            checked.copies = sink.keeps
            questions = checked
            lookup = _Lookup(None, streamed)
        else:
            questions, lookup = _prepare(
                reference_qas,
                chat_responses,
                options.reference_source,
                options.responses_source,
                unknown,
                copies=sink.keeps,
            )
        collector.keep()  # the prepared questions (parsed reference outputs) live as long
        endpoints.open(options)
        tracker = Tracker(endpoints.judge, options.progress, options.on_progress)
        scorer = endpoints.scorer(options)
        if options.shard is None:
            chosen = None
        elif isinstance(questions, list):
            from .shards import shard_places  # (and zlib): only a sharded run needs them

            chosen = shard_places(questions, options.shard)
        else:
            chosen = questions.shard_places(options.shard)
        total = lookup.count(questions, chosen)
        tracker.total = total
        # At most this many questions are scored at once: each question's judge calls then
        # finish close together, and results follow the judge's work instead of all finishing
        # near the end.
        judge = endpoints.judge
        window = max(1, 2 * (judge.config if judge is not None else options.config).concurrency)
        sink.start(total, window)
        pipeline = Pipeline(questions, lookup, sink, tracker, options.on_result, collector, project)
        pipeline.trajectory = _trajectory_mode(options, scorer)
        pipeline.chosen = chosen
        if options.workers > 1:
            work = _work(options, scorer, sink, pipeline.trajectory)
            if pool is None:
                from .workers import WorkerPool

                pool = WorkerPool(options.workers, work)
            else:
                pool.set_work(work)
            pipeline.pool = pool
        if scorer is None:
            await pipeline.evaluate(no_judge=judge is None)
        else:
            await pipeline.score(scorer, window)
        _closed(pool)
        pool = None
        sink.flush()
        tracker.report()
    finally:
        _closed(pool)
        collector.end()
        endpoints.close()
        if lookup is not None:
            lookup.close()
    needs_judge = pipeline.needs_judge
    return run_signature(options, endpoints, questions, unknown, scorer, needs_judge, lazy)


def _work(
    options: RunOptions, scorer: AnswerScorer | None, sink: ResultSink, trajectory: str
) -> BatchWork:
    """What the worker processes of a run with ``workers`` > 1 do: they write and aggregate the
    results of a sink that takes them written (unless a scorer or ``on_result`` wants them
    first)."""
    from .workers import BatchWork

    lines = sink.lines if scorer is None and options.on_result is None else None
    return BatchWork(trajectory, scorer is not None, options.responses_source, lines)


def _spreads(reference_qas: Any, chat_responses: Any) -> bool:
    """Whether the worker processes check their parts of the inputs too (``run.parallel``):
    only a JSON Lines reference can, and its module is imported only when one was made."""
    if "qa_eval.run.reflines" not in sys.modules:
        return False
    from .parallel import spreads

    return spreads(reference_qas, chat_responses)


def _closed(pool: WorkerPool | None) -> None:
    """Stop a run's worker processes (if it has them)."""
    if pool is not None:
        pool.close()


def _projection(options: RunOptions) -> Callable[[dict[str, Any]], dict[str, Any]] | None:
    """What each result becomes with ``keys="graphrag-eval"`` (None: as it is)."""
    if not options.original_keys:
        return None
    return functools.partial(original_result, custom=custom_keys(options.config))


def _interpreter_frozen() -> int:
    """How many objects the interpreter itself keeps frozen: Python 3.12 starts with a few
    hundred (tuples of its static types) in the permanent generation; 0 elsewhere. Read when
    this module is imported: objects frozen by then, if no more than the interpreter's own
    could be, are taken for its own."""
    frozen = gc.get_freeze_count()
    return frozen if sys.version_info[:2] == (3, 12) and frozen <= 2000 else 0


_INTERPRETER_FROZEN = _interpreter_frozen()


class Collector:
    """The garbage collector during a run.

    The inputs can be large and live through the whole run: they are kept out of the
    collector's full scans while it runs (``gc.freeze``), and given back afterwards - unless the
    application froze objects itself, whose freeze must not be undone here (the interpreter's
    own frozen objects, on Python 3.12, do not count as the application's: taking them for it
    left a run's ~100k young objects to one 25 ms collection as it ended). The deterministic
    part allocates only acyclic data (parsed outputs, result dicts), which reference counting
    frees: the collector is paused while it runs (25% of its time on 10k questions) and runs
    while the judge's calls do (:meth:`paused`), whose HTTP stack makes cycles."""

    def __init__(self) -> None:
        self.freeze = gc.get_freeze_count() in (0, _INTERPRETER_FROZEN)
        if self.freeze:
            gc.freeze()
        self.collecting = gc.isenabled()
        gc.disable()

    def keep(self) -> None:
        """What was made so far lives through the run: out of the collector's scans."""
        if self.freeze:
            gc.freeze()

    async def paused(self, waiting: Awaitable[Any]) -> Any:
        """Await with the garbage collector on: the judge's tasks run meanwhile."""
        if self.collecting:
            gc.enable()
        try:
            return await waiting
        finally:
            if self.collecting:
                gc.disable()

    def end(self) -> None:
        """The collector as the run found it."""
        if self.freeze:
            # What the run made (the results) joins the inputs as old objects: the collector,
            # enabled again, would otherwise scan every result in its young generations.
            gc.freeze()
            gc.unfreeze()
        if self.collecting:
            gc.enable()


def _trajectory_mode(options: RunOptions, scorer: AnswerScorer | None) -> str:
    """``off`` when the trajectory family is disabled, ``judge`` when the scorer runs it with a
    judge (its ``$llm`` comparisons), else ``on`` (computed with the deterministic results)."""
    if not options.wants("trajectory"):
        return "off"
    if scorer is not None and any(m.name == "trajectory" for m in scorer.families):
        return "judge"
    return "on"


class Pipeline:
    """Evaluates every question in reference order and hands each result on (projected, to the
    sink, to ``on_result``, counted by the tracker); ``needs_judge``: an answered question went
    without LLM metrics because there is no judge."""

    def __init__(
        self,
        questions: Questions,
        lookup: _Lookup,
        sink: ResultSink,
        tracker: Tracker,
        on_result: ResultCallback | None,
        collector: Collector,
        project: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> None:
        self.questions = questions
        self.lookup = lookup
        self.sink = sink
        self.tracker = tracker
        self.on_result = on_result
        self.collector = collector
        self.project = project
        self.needs_judge = False
        self.trajectory = "on"
        """How ``evaluate_question`` computes the trajectory metrics: on, judge or off."""
        self.chosen: list[int] | None = None
        """The places of the questions evaluated (a shard's), None for all."""
        self.pool: WorkerPool | None = None
        """The worker processes that evaluate the deterministic part, if any."""

    def finish(self, index: int, result: dict[str, Any], asks: int | None, expected: int) -> None:
        """Hand a finished result on."""
        if self.project is not None:
            result = self.project(result)
        self.sink.put(index, result)
        if self.on_result is not None:
            self.on_result(result)
        self.tracker.finished(asks, expected)

    def unscored(self, index: int, result: dict[str, Any], no_judge: bool) -> None:
        """Hand on a result no metric is scored for (``no_judge``: for want of a judge)."""
        if no_judge and not self.needs_judge:
            self.needs_judge = result.get("status") == "success" and "actual_answer" in result
        self.finish(index, result, None, 0)

    async def evaluate(self, no_judge: bool) -> None:
        """Every question's deterministic result, with no scorer."""
        if self.pool is not None:
            await self._spread(no_judge)
            return
        sink, tracker, trajectory = self.sink, self.tracker, self.trajectory
        # The usual run (results kept in a list as they are, no callback, no progress shown):
        # each result goes straight into its place, as ``unscored`` would put it there; with
        # every question and its responses in memory, by ``evaluate_in_order``.
        kept = (
            sink.results
            if type(sink) is ResultSink
            and self.project is None
            and self.on_result is None
            and tracker.progress is None
            and tracker.on_progress is None
            else None
        )
        held = self.lookup.responses
        if kept is not None and held is not None and self.chosen is None and sink.positions is None:
            questions: Any = self.questions  # (a list: a streamed reference streams responses)
            count, answered = await evaluate_in_order(questions, held, kept, trajectory, no_judge)
            self.needs_judge = answered
            tracker.done += count  # (Tracker.finished without asks or progress to show)
            return
        units = self.lookup.units(self.questions, self.chosen, sink.positions)
        for index, (question, response) in enumerate(units):
            result = evaluate_question(question, response, None, trajectory)
            if kept is None:
                self.unscored(index, result, no_judge)
            else:
                if no_judge and not self.needs_judge:
                    self.needs_judge = (
                        result.get("status") == "success" and "actual_answer" in result
                    )
                kept[index] = result
                tracker.done += 1
            if index % 256 == 255:
                await pause()  # let other tasks (e.g. a progress display) run
                if sink.full():
                    await sink.room()

    async def score(self, scorer: AnswerScorer, window: int) -> None:
        """Every question's result; those some metric applies to are scored, at most ``window``
        at a time."""
        import asyncio

        tracker, sink, paused = self.tracker, self.sink, self.collector.paused
        no_judge = scorer.judge is None
        track = tracker.on_progress is not None
        slots = asyncio.Semaphore(window)
        running: set[asyncio.Task[None]] = set()
        failures: list[BaseException] = []
        ticker = asyncio.ensure_future(_tick(tracker, sink))

        def ended(task: asyncio.Task[None]) -> None:
            running.discard(task)
            if not task.cancelled() and task.exception() is not None:
                failures.append(task.exception())  # type: ignore[arg-type]

        try:
            async for index, result, matched in self._deterministic():
                tracker.produced += 1
                if scorer.applies(result):
                    expected = scorer.expected_asks(result, matched) if track else 0
                    tracker.expected += expected
                    if slots.locked():
                        await paused(slots.acquire())
                    else:
                        await slots.acquire()  # free: returns at once
                    if failures:
                        raise failures[0]
                    scoring = self._score_one(scorer, slots, index, result, matched, expected)
                    task = asyncio.ensure_future(scoring)
                    running.add(task)
                    task.add_done_callback(ended)
                else:
                    self.unscored(index, result, no_judge)
                if index % 256 == 255:
                    await paused(asyncio.sleep(0))
                if sink.full():
                    await paused(sink.room())
            while running:
                await paused(asyncio.wait(list(running), return_when=asyncio.FIRST_EXCEPTION))
                if failures:
                    raise failures[0]
        except BaseException:
            for task in running:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)
            raise
        finally:
            ticker.cancel()
            await asyncio.gather(ticker, return_exceptions=True)

    async def _deterministic(
        self,
    ) -> AsyncIterator[tuple[int, dict[str, Any], list[tuple[Mapping[str, Any], int]]]]:
        """Each result's deterministic part with its matched reference steps, in order: made
        here, or by the worker processes."""
        if self.pool is None:
            units = self.lookup.units(self.questions, self.chosen, self.sink.positions)
            for index, (question, response) in enumerate(units):
                matched: list[tuple[Mapping[str, Any], int]] = []
                yield (
                    index,
                    evaluate_question(question, response, matched, self.trajectory),
                    matched,
                )
            return
        index = 0
        batches: Any = self.pool.evaluated(self._batches())
        async with contextlib.aclosing(batches):
            async for evaluated in batches:
                assert evaluated.results is not None and evaluated.matched is not None
                for result, matched in zip(evaluated.results, evaluated.matched, strict=True):
                    yield index, result, matched
                    index += 1

    async def _spread(self, no_judge: bool) -> None:
        """Every question's deterministic result from the worker processes (``pool``), handed
        on in order: as results, or written and aggregated to a sink that takes them so."""
        assert self.pool is not None
        sink, tracker, index = self.sink, self.tracker, 0
        batches: Any = self.pool.evaluated(self._batches())
        async with contextlib.aclosing(batches):
            async for evaluated in batches:
                if evaluated.results is None:
                    sink.put_evaluated(index, evaluated)
                    if no_judge and not self.needs_judge:
                        self.needs_judge = evaluated.answered
                    for _ in range(evaluated.count):
                        tracker.finished(None, 0)
                    index += evaluated.count
                else:
                    for result in evaluated.results:
                        self.unscored(index, result, no_judge)
                        index += 1
                if sink.full():
                    await sink.room()

    def _batches(self) -> Iterable[Any]:
        """What the worker processes evaluate, in order: the ranges of a reference they checked
        (``run.parallel``), else batches of questions with their responses."""
        questions, positions = self.questions, self.sink.positions
        if not isinstance(questions, list) and questions.chunks is not None and self.chosen is None:
            from .parallel import ranges_evaluated

            return ranges_evaluated(questions, self.lookup.streamed, positions)
        from .workers import spread

        return spread(self.lookup.payloads(questions, self.chosen), positions)

    async def _score_one(
        self,
        scorer: AnswerScorer,
        slots: asyncio.Semaphore,
        index: int,
        result: dict[str, Any],
        matched: list[tuple[Mapping[str, Any], int]],
        expected: int,
    ) -> None:
        """Score one question (its asks counted while the progress is followed), free its
        slot, and hand the result on."""
        counted = None
        if scorer.judge is not None and self.tracker.on_progress is not None:
            counted = CountingJudge(scorer.judge, self.tracker)
            scorer = scorer.with_judge(cast("Judge", counted))
        try:
            scored = await scorer.score(result, matched)
        finally:
            slots.release()
        self.finish(index, scored, counted.question_asks if counted is not None else 0, expected)


async def _tick(tracker: Tracker, sink: ResultSink) -> None:
    """While the judge works: the progress display is told what it did, and results that
    finished are handed on, even when no question finishes for a while."""
    import asyncio

    while True:
        await asyncio.sleep(0.2)
        tracker.report()
        sink.flush()
