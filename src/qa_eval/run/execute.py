"""The one code path of a run (``execute``): prepare the questions and responses, set up the judge,
the embedder and the scorer, evaluate every question in reference order with at most ``window``
scored at once, hand results to a sink as they finish, and build the run's signature. It reads
the run's options from one :class:`~qa_eval.run.options.RunOptions`.

``run.evaluation`` holds the public verbs over it (``run_evaluation``, ``arun_evaluation``,
``iter_evaluation``).
"""

from __future__ import annotations

import asyncio
import functools
import gc
import hashlib
import json
import sys
import time
import warnings
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, cast

import orjson

from ..config import OFFLINE_SWITCHES, EvalConfig
from ..errors import UnknownResponsesWarning
from ..extras import require
from ..io.keysets import custom_keys, original_result
from ..judge.cache.store import ReplyCache, open_cache
from ..vocabulary.registry import METRICS
from .options import LIBRARY_DEFAULT, ResultCallback, RunOptions
from .prepare.records import Question, Response
from .prepare.reference import prepare_reference
from .prepare.responses import Unknown, prepare_responses
from .progress import CountingJudge, Tracker
from .question import Results, evaluate_question

if TYPE_CHECKING:  # the judge side (pydantic, the metrics) is imported only when a run uses it
    from ..judge.calls import Judge
    from ..judge.embeddings import Embedder
    from .score import AnswerScorer

__all__ = ["NO_JUDGE", "execute", "reference_fingerprint"]


def _signature(
    settings: EvalConfig,
    judge: Judge | None,
    embedder: Embedder | None,
    options: dict[str, Any],
    note: str | None,
) -> dict[str, Any]:
    from .._version import __version__
    from ..prompts import examples_block, prompt_hash, prompt_names, prompt_text

    prompts = {name: prompt_hash(prompt_text(name)) for name in prompt_names()}
    if settings.answer_correctness_prompt is not None:
        prompts["answer_correctness (config)"] = prompt_hash(settings.answer_correctness_prompt)
    for metric, examples in sorted(settings.examples.items()):  # few-shot examples from labels
        prompts[f"{metric} (examples)"] = prompt_hash(examples_block(examples))
    signature: dict[str, Any] = {
        "qa_eval_version": __version__,
        "judge": judge.signature() if judge else None,
        "embedding": embedder.name if embedder else None,
        "prompts": prompts,
        "options": {**settings.public(), **options},
    }
    if judge is not None:
        signature["usage"] = {
            "total": judge.total.as_dict(),
            "per_metric": {m: u.as_dict() for m, u in judge.usage.items()},
            "peak_concurrency": judge.peak_in_flight,
        }
    if note:
        signature["llm_metrics"] = note
    return signature


NO_JUDGE = (
    "LLM metrics not computed: no judge is configured (set OPENAI_API_KEY, or pass a config "
    "with llm.generation)"
)
NO_JUDGE_LIBRARY = (
    "LLM metrics not computed: no judge is configured (pass a config with llm.generation; "
    "without a config run_evaluation calls no judge, as graphrag-eval does)"
)


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

    def count(self, questions: list[Question]) -> int:
        """How many results the run makes: one per question, one per trial of a question
        answered in several."""
        if self.responses is None:
            return self.streamed.count()  # type: ignore[no-any-return]
        # Each list is a question's (prepare_responses keeps only those, never empty): a
        # question answered n times adds n - 1, counted in C without walking the questions.
        responses = self.responses
        return len(questions) + sum(map(len, responses.values())) - len(responses)

    def units(self, questions: list[Question]) -> Iterable[tuple[Question, Response | None]]:
        """Each question with each of its responses, in reference order (a question without a
        response once, with None); a question's prepared steps are let go once its last result
        is made."""
        held = self.responses
        for index, question in enumerate(questions):
            # In memory: popped here as get() would (one call per question fewer).
            responses = (
                self.get(index, question) if held is None else held.pop(question.question_id, None)
            )
            if not responses:
                yield question, None
            else:
                for response in responses:
                    yield question, response
            question.release()

    def close(self) -> None:
        if self.streamed is not None:
            self.streamed.close()


def _prepare(
    reference_qas: Any,
    chat_responses: Any,
    reference_source: str,
    responses_source: str,
    unknown: Unknown,
    copies: bool = False,
) -> tuple[list[Question], _Lookup]:
    """The checked questions and responses; responses for question ids not in the reference
    are counted in ``unknown`` and left out, with one ``UnknownResponsesWarning``. ``copies``:
    the questions carry the copies of their steps for their results (the run keeps them all)."""
    from .stream import JsonLinesResponses

    questions = prepare_reference(reference_qas, reference_source, copies=copies)
    if isinstance(chat_responses, JsonLinesResponses):
        lookup = _Lookup(None, chat_responses.index(questions, responses_source, unknown))
    else:
        lookup = _Lookup(prepare_responses(chat_responses, questions, responses_source, unknown))
    if unknown.count:
        warnings.warn(unknown.message(responses_source), UnknownResponsesWarning, stacklevel=2)
    return questions, lookup


class ResultSink:
    """Where finished results go: here, into the list the run returns, by position."""

    keeps = True
    """Whether every result stays until the run ends (then the reference steps' copies for the
    results are made as the reference is prepared, where that is cheaper)."""

    def __init__(self) -> None:
        self.results: Results = Results()

    def start(self, total: int, window: int) -> None:
        self.results.extend([None] * total)

    def put(self, index: int, result: dict[str, Any]) -> None:
        self.results[index] = result

    def full(self) -> bool:
        return False

    async def room(self) -> None:
        return None

    def flush(self) -> None:
        return None


class OrderedSink(ResultSink):
    """Results handed on in reference order, in batches: a result that finishes before an
    earlier one waits here, and the run reads no further question while ``limit`` wait
    (``max(256, 8 x`` the questions scored at once``)``)."""

    keeps = False

    def __init__(self, deliver: Callable[[list[dict[str, Any]]], None]) -> None:
        super().__init__()
        self.deliver = deliver
        self.limit = 256
        self.next = 0
        self.waiting: dict[int, dict[str, Any]] = {}
        self.batch: list[dict[str, Any]] = []
        self.flushed = time.monotonic()
        self._room: asyncio.Event | None = None

    def start(self, total: int, window: int) -> None:
        self.limit = max(256, 8 * window)

    def put(self, index: int, result: dict[str, Any]) -> None:
        if index != self.next:
            self.waiting[index] = result
            return
        batch, waiting = self.batch, self.waiting
        batch.append(result)
        self.next += 1
        while waiting and self.next in waiting:
            batch.append(waiting.pop(self.next))
            self.next += 1
        if self._room is not None and len(waiting) < self.limit:
            self._room.set()
        if len(batch) >= 256 or time.monotonic() - self.flushed > 0.05:
            self.flush()

    def full(self) -> bool:
        return len(self.waiting) >= self.limit

    async def room(self) -> None:
        while len(self.waiting) >= self.limit:
            self.flush()
            self._room = asyncio.Event()
            await self._room.wait()
        self._room = None

    def flush(self) -> None:
        self.flushed = time.monotonic()
        if self.batch:
            batch, self.batch = self.batch, []
            self.deliver(batch)


async def execute(
    reference_qas: Any, chat_responses: Any, sink: ResultSink, options: RunOptions
) -> dict[str, Any]:
    """The one code path of a run: results go to ``sink`` as they finish; returns the run's
    signature (``options.fingerprint``: the reference's, already computed by the caller;
    ``options.keys``: ``"graphrag-eval"`` writes only the keys graphrag-eval 6.6.1 writes, see
    ``io.keysets``)."""
    project = _projection(options)
    collector = Collector()
    endpoints = Endpoints()
    lookup: _Lookup | None = None
    unknown = Unknown()
    try:
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
        total = lookup.count(questions)
        tracker.total = total
        # At most this many questions are scored at once: each question's judge calls then
        # finish close together, and results follow the judge's work instead of all finishing
        # near the end.
        judge = endpoints.judge
        window = max(1, 2 * (judge.config if judge is not None else options.config).concurrency)
        sink.start(total, window)
        pipeline = Pipeline(questions, lookup, sink, tracker, options.on_result, collector, project)
        pipeline.trajectory = _trajectory_mode(options, scorer)
        if scorer is None:
            await pipeline.evaluate(no_judge=judge is None)
        else:
            await pipeline.score(scorer, window)
        sink.flush()
        tracker.report()
    finally:
        collector.end()
        endpoints.close()
        if lookup is not None:
            lookup.close()
    return _run_signature(options, endpoints, questions, unknown, scorer, pipeline.needs_judge)


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


class Endpoints:
    """The judge, embedder and BERTScore model of a run, and the reply cache the run opened for
    them (closed at the end): given in the options, or made from the config."""

    def __init__(self) -> None:
        self.judge: Judge | None = None
        self.embedder: Embedder | None = None
        self.store: ReplyCache | None = None
        self.bertscorer: Any = None
        self.offline: list[str] = []

    def open(self, options: RunOptions) -> None:
        """The run's judge, embedder and BERTScore model, as its options and config ask."""
        settings = options.config
        judge = options.judge
        self.offline = [s for s in OFFLINE_SWITCHES if options.wants(s)]
        if judge is not None or settings.generation is not None or self.offline:
            if judge is None and settings.generation is not None:
                require("openai", "the LLM judge")
            require("pydantic", "the answer metrics")
            from ..judge.calls import Judge
        if judge is None and settings.generation is not None:
            self.store = open_cache(options.cache)
            judge = Judge(
                settings, cache=self.store, max_cost=options.max_cost, dry_run=options.dry_run
            )
        self.judge = judge
        self.embedder = options.embedder
        if self.embedder is None and any(
            options.wants(m.name) and (judge is not None or m.offline)
            for m in METRICS.values()
            if m.switch and "embedder" in m.needs
        ):  # a family that runs needs one (answer_relevance, semantic_similarity, ...)
            self.embedder = self._embedder(options)
        self.bertscorer = _bertscorer(settings) if options.wants("bertscore") else None

    def _embedder(self, options: RunOptions) -> Embedder:
        """The embedder the config names, its vectors cached (in the judge's cache)."""
        from ..judge.embeddings import CachingEmbedder, make_embedder

        judge = self.judge
        if judge is None and self.store is None:
            self.store = open_cache(options.cache)
        settings = options.config
        inner = make_embedder(settings.embedding, settings.timeout)
        remote = settings.embedding.provider != "offline"
        return CachingEmbedder(
            inner,
            judge.cache if judge is not None else self.store,
            judge.slot if remote and judge is not None else None,
        )

    def scorer(self, options: RunOptions) -> AnswerScorer | None:
        """The scorer of the LLM (and offline answer) metrics; None when none can run."""
        if self.judge is None and not self.offline:
            return None
        from .score import AnswerScorer

        return AnswerScorer(
            options.config,
            self.judge,
            self.embedder,
            options.disabled,
            options.enabled,
            self.bertscorer,
        )

    def close(self) -> None:
        """Close the reply cache the run opened."""
        if self.store is not None:
            self.store.close()


def _run_signature(
    options: RunOptions,
    endpoints: Endpoints,
    questions: list[Question],
    unknown: Unknown,
    scorer: AnswerScorer | None,
    needs_judge: bool,
) -> dict[str, Any]:
    """The run's signature: versions, judge, prompts, options, usage, the reference's
    fingerprint, the responses left out and the metric values skipped."""
    run: dict[str, Any] = {
        "max_cost": options.max_cost,
        "dry_run": options.dry_run,
        "disabled": sorted(options.disabled),
        "enabled": sorted(options.enabled),
        "cache": None if endpoints.store is None else str(endpoints.store.path),
    }
    if options.pass_thresholds:
        run["pass_thresholds"] = dict(options.pass_thresholds)
    if endpoints.bertscorer is not None:
        run["bertscore"] = endpoints.bertscorer.info()
    if options.original_keys:
        run["keys"] = options.keys
    settings = options.config
    note = NO_JUDGE_LIBRARY if settings.source == LIBRARY_DEFAULT else NO_JUDGE
    signature = _signature(
        settings, endpoints.judge, endpoints.embedder, run, note if needs_judge else None
    )
    signature["reference"] = {
        "fingerprint": options.fingerprint or reference_fingerprint(questions),
        "templates": len({q.template_id for q in questions}),
        "questions": len(questions),
    }
    if unknown.count:
        signature["ignored_responses"] = unknown.as_dict()
    if scorer is not None and scorer.skipped:
        # metric values whose judge call was not made, by typed reason (budget, dry_run, ...)
        signature["skipped_metric_values"] = dict(sorted(scorer.skipped.items()))
    return signature


def reference_fingerprint(questions: Iterable[Question]) -> str:
    """A stable hash of a reference dataset's content: ``sha256:`` and 64 hex digits.

    Each question (its template id and every key it has: text, reference answer, reference steps,
    tags) is written as JSON with sorted keys and hashed; the sorted hashes are hashed again. So
    the fingerprint does not depend on key order, template order or question order, or on the
    file format (YAML or JSON), and changes with any change to a question's content."""
    digests = sorted(
        hashlib.sha256(_sorted_json([q.template_id, q.raw])).digest() for q in questions
    )
    return "sha256:" + hashlib.sha256(b"".join(digests)).hexdigest()


_SORTED = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS


def _sorted_json(value: Any) -> bytes:
    """JSON of ``value`` with sorted keys; what orjson refuses (an integer beyond 64 bits or
    deep nesting, which the API may be given) is written by the standard library instead."""
    try:
        return orjson.dumps(value, option=_SORTED, default=str)
    except orjson.JSONEncodeError:
        text = json.dumps(_str_keys(value), sort_keys=True, default=str, ensure_ascii=False)
        return text.encode("utf-8", "surrogatepass")


def _str_keys(value: Any) -> Any:
    """``value`` with every mapping key made text (so keys of mixed types sort)."""
    if isinstance(value, dict):
        return {str(key): _str_keys(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_str_keys(item) for item in value]
    return value


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
        questions: list[Question],
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
        sink = self.sink
        for index, (question, response) in enumerate(self.lookup.units(self.questions)):
            result = evaluate_question(question, response, trajectory=self.trajectory)
            self.unscored(index, result, no_judge)
            if index % 256 == 255:
                await asyncio.sleep(0)  # let other tasks (e.g. a progress display) run
                if sink.full():
                    await sink.room()

    async def score(self, scorer: AnswerScorer, window: int) -> None:
        """Every question's result; those some metric applies to are scored, at most ``window``
        at a time."""
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
            for index, (question, response) in enumerate(self.lookup.units(self.questions)):
                matched: list[tuple[Mapping[str, Any], int]] = []
                result = evaluate_question(question, response, matched, self.trajectory)
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
    while True:
        await asyncio.sleep(0.2)
        tracker.report()
        sink.flush()


def _bertscorer(settings: EvalConfig) -> Any:
    """The BERTScore model the config names; ``QaEvalError`` when PyTorch is not installed."""
    from ..metrics.bertscore import require_torch

    require_torch()
    scorer = _shared_bertscorer(
        settings.option("bertscore", "model", "all-MiniLM-L6-v2"),
        settings.option("bertscore", "layer"),
    )
    scorer.info()  # finds the model and checks the layer now, not at the first question
    return scorer


@functools.cache
def _shared_bertscorer(model: str, layer: int | None) -> Any:
    """One scorer (and so one loaded model) per model and layer for the whole process: the runs
    of several systems, or of repeated API calls, share it."""
    from ..metrics.bertscore import BertScorer

    return BertScorer(model=model, layer=layer)
