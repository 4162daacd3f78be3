"""Join reference questions with responses and evaluate them.

``arun_evaluation`` is the one code path; ``run_evaluation`` runs it to completion from sync code,
also inside a running event loop (Jupyter), by running it on a worker thread with its own loop.
The caller's objects are never mutated: results hold copies of the reference steps they annotate
with ``matches``, and share the (unchanged) actual step dicts.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import gc
import hashlib
import os
import queue
import threading
import time
import warnings
from collections.abc import Awaitable, Callable, Generator, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import orjson

from .cache import ReplyCache, open_cache
from .config import GROUPS, OFFLINE_SWITCHES, SWITCHES, EvalConfig, load_config, parse_config
from .errors import QaEvalError, UnknownResponsesWarning
from .extras import require
from .records import Question, Response, Unknown, prepare_reference, prepare_responses
from .steps.compare import StepScorer
from .steps.explain import explain_unmatched
from .steps.matching import match_steps

__all__ = [
    "EvaluationStream",
    "Results",
    "RunProgress",
    "arun_evaluation",
    "evaluate_question",
    "iter_evaluation",
    "run_evaluation",
]

if TYPE_CHECKING:  # the judge side (pydantic, the metrics) is imported only when a run uses it
    from .embeddings import Embedder
    from .judge import Judge
    from .scoring import AnswerScorer

ProgressCallback = Callable[[int, int], None]
"""Called as ``progress(done, total)`` after each question."""

_COPIED_RESPONSE_KEYS = ("input_tokens", "output_tokens", "total_tokens", "elapsed_sec")
NO_RESPONSE = "no response for this question"


def evaluate_question(
    question: Question,
    response: Response | None,
    matched_out: list[tuple[Mapping[str, Any], int]] | None = None,
) -> dict[str, Any]:
    """Evaluate the deterministic part (steps) of one question; returns its result record.

    ``matched_out``, when given, receives (reference step copy, actual step index) pairs."""
    raw = question.raw
    result: dict[str, Any] = {
        "template_id": question.template_id,
        "question_id": question.question_id,
        "question_text": raw.get("question_text"),
    }
    if "reference_answer" in raw:
        result["reference_answer"] = raw["reference_answer"]
    if "question_type" in raw:
        result["question_type"] = raw["question_type"]
    reply: Mapping[str, Any] = response.raw if response is not None else {}
    if response is None:
        result["status"] = "error"
        result["error"] = NO_RESPONSE
    elif response.is_error:
        result["status"] = "error"
        result["error"] = reply.get("error", "")
    else:
        result["status"] = "success"
    if "actual_answer" in reply:
        result["actual_answer"] = reply["actual_answer"]
    actual_steps = reply.get("actual_steps") or []
    # A new list of the same step dicts: nothing here changes them.
    result["actual_steps"] = list(actual_steps)
    if question.groups is not None:
        scorer = StepScorer(actual_steps, response.successful if response is not None else None)
        matches, score = match_steps(question.groups, scorer)
        # Copies of the reference steps (a prepared question keeps every step, in place, so a
        # match's (group, index) is its position), without any "matches" the input carried.
        annotated = [[dict(ref.raw) for ref in group] for group in question.groups]
        if question.has_matches:
            for copies in annotated:
                for step in copies:
                    step.pop("matches", None)
        for g, i, a, _ in sorted(matches):
            step = annotated[g][i]
            step_id = actual_steps[a].get("id")
            step["matches"] = step_id if step_id is not None else a
            if matched_out is not None:
                matched_out.append((step, a))
        # Why each unmatched step did not match (nothing to do when every step matched); a
        # reference taken from a results file may carry an old explanation: it never stays.
        for g, i, _, _ in matches:
            annotated[g][i].pop("mismatch", None)  # (a partly matched step gets a new one)
        error = result.get("error") if result["status"] == "error" else None
        for (g, i), why in explain_unmatched(question.groups, scorer, matches, error).items():
            annotated[g][i]["mismatch"] = why
        result["reference_steps"] = annotated
        result["steps_score"] = score
        if scorer.problems:
            result["step_errors"] = [scorer.problems[i] for i in sorted(scorer.problems)]
    for key in _COPIED_RESPONSE_KEYS:
        if key in reply:
            result[key] = reply[key]
    return result


class Results(list):  # type: ignore[type-arg]
    """The per-question results (a list, as in the original) with the run's ``signature``:
    qa-eval version, judge model and parameters, prompt hashes, options, calls, tokens and cost.

    The list is also an already finished coroutine: ``await results`` (and ``asyncio.run`` or
    ``create_task`` of it) gives the list itself, so code written for graphrag-eval 6.x, whose
    ``run_evaluation`` was a coroutine (``await run_evaluation(...)``), keeps working."""

    signature: dict[str, Any]

    # Hashed by identity, as coroutines are, so ``asyncio.gather`` takes it (equality stays
    # the list's).
    __hash__ = object.__hash__  # type: ignore[assignment]

    def __await__(self) -> Generator[Any, None, Results]:
        return self
        yield  # a generator that finishes at once, returning the list

    def send(self, value: Any) -> Any:
        """Coroutine protocol: finished at once, with the list as its value."""
        raise StopIteration(self)

    def throw(self, typ: Any, value: Any = None, traceback: Any = None) -> Any:
        """Coroutine protocol: the exception is raised here (nothing is left to run)."""
        if value is None:
            value = typ() if isinstance(typ, type) else typ
        raise value

    def close(self) -> None:
        """Coroutine protocol: nothing to close."""
        return None

    def to_pandas(self) -> Any:
        """One row per question, metric columns, steps as JSON (qa_eval.frames; needs pandas)."""
        from .frames import results_to_pandas

        return results_to_pandas(self)

    def _repr_html_(self) -> str:
        """An HTML summary for Jupyter (qa_eval.frames.results_html)."""
        from .frames import results_html

        return results_html(self)


ConfigArg = EvalConfig | str | os.PathLike[str] | Mapping[str, Any] | None
"""A run's config: an :class:`EvalConfig`, a YAML file's path, a mapping, or None."""


def _config_arg(config: ConfigArg, config_file_path: str | os.PathLike[str] | None) -> ConfigArg:
    """The config given as ``config`` (or graphrag-eval's third positional argument) or as
    ``config_file_path=``; an empty path is no config, as in graphrag-eval."""
    if config_file_path is not None and config_file_path != "":
        if config is not None and config != "":
            raise TypeError("give the config once: config or config_file_path, not both")
        return config_file_path
    return None if config == "" else config


ResultCallback = Callable[[dict[str, Any]], None]
"""Called with each question's finished result, in the order questions finish."""


def _llm_setup(
    config: EvalConfig | str | os.PathLike[str] | Mapping[str, Any] | None,
    concurrency: int | None,
) -> EvalConfig:
    if isinstance(config, EvalConfig):
        settings = config
    elif isinstance(config, Mapping):
        settings = parse_config(config)
    else:
        settings = load_config(config)
    return settings.with_options(concurrency=concurrency)


def _signature(
    settings: EvalConfig,
    judge: Judge | None,
    embedder: Embedder | None,
    options: dict[str, Any],
    note: str | None,
) -> dict[str, Any]:
    from . import __version__
    from .prompts import prompt_hash, prompt_names, prompt_text

    prompts = {name: prompt_hash(prompt_text(name)) for name in prompt_names()}
    if settings.answer_correctness_prompt is not None:
        prompts["answer_correctness (config)"] = prompt_hash(settings.answer_correctness_prompt)
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


@dataclass
class RunProgress:
    """What a run has done so far, as ``on_progress`` receives it (about ten times a second, and
    at the end). Judge calls are counted as asks (a cached reply counts; a retried or re-asked
    call counts once); ``calls_planned`` is an estimate, refined as questions are scheduled and
    finished (never below the asks already started)."""

    questions_done: int
    questions_total: int
    calls_done: int = 0
    calls_planned: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    judge: bool = False


StatusCallback = Callable[[RunProgress], None]

_ASKS: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar(
    "qa_eval_question_asks", default=None
)
"""The judge asks of the question whose metrics the current task computes."""


class _Tracker:
    """Counts the finished questions and the judge's asks, and estimates the asks to come: each
    question sent to the scorer is expected to ask once per judge metric that applies to it
    (``_expected_asks``), the questions not read yet as many as those read so far on average, all
    of it scaled by how many asks the finished questions made for what they were expected to
    (re-asks, shared duplicate calls, metrics that needed no call)."""

    def __init__(
        self,
        judge: Judge | None,
        progress: ProgressCallback | None,
        on_progress: StatusCallback | None,
    ) -> None:
        self.judge = judge
        self.progress = progress
        self.on_progress = on_progress
        self.total = 0
        self.done = 0
        self.produced = 0
        self.expected = 0
        self.finished_expected = 0
        self.finished_asks = 0
        self.asks_started = 0
        self.asks_done = 0
        self.last = 0.0

    def finished(self, asks: int | None, expected: int = 0) -> None:
        self.done += 1
        if asks is not None:
            self.finished_asks += asks
            self.finished_expected += expected
        if self.progress is not None:
            self.progress(self.done, self.total)
        if self.on_progress is not None:
            now = time.monotonic()
            if now - self.last >= 0.1 or self.done == self.total:
                self.report(now)

    def planned(self) -> int:
        if not self.produced:
            return self.asks_started
        expected = self.expected + (self.total - self.produced) * self.expected / self.produced
        if self.finished_expected:
            expected *= self.finished_asks / self.finished_expected
        return max(self.asks_started, round(expected))

    def report(self, now: float | None = None) -> None:
        if self.on_progress is None:
            return
        self.last = time.monotonic() if now is None else now
        status = RunProgress(self.done, self.total)
        judge = self.judge
        if judge is not None:
            total = judge.total
            status.judge = True
            status.calls_done = self.asks_done
            status.calls_planned = self.planned()
            status.cached = total.cached
            status.prompt_tokens = total.prompt_tokens
            status.completion_tokens = total.completion_tokens
            status.cost = total.cost if total.cost_known else None
        self.on_progress(status)


class _CountingJudge:
    """The run's judge as the metrics see it: every ask counted for the progress display (in
    all, and for the question whose task asks); everything else is the judge's own."""

    def __init__(self, judge: Judge, tracker: _Tracker) -> None:
        self._judge = judge
        self._tracker = tracker

    def __getattr__(self, name: str) -> Any:
        return getattr(self._judge, name)

    async def ask(self, metric: str, messages: list[dict[str, str]], schema: Any) -> Any:
        """``Judge.ask``, counted."""
        counter = _ASKS.get()
        if counter is not None:
            counter[0] += 1
        self._tracker.asks_started += 1
        try:
            return await self._judge.ask(metric, messages, schema)
        finally:
            self._tracker.asks_done += 1


def _expected_asks(
    scorer: AnswerScorer, result: Mapping[str, Any], matched: list[tuple[Mapping[str, Any], int]]
) -> int:
    """How many judge asks the scorer's schedule (``scoring.py``) makes for this result, for the
    progress display's estimate: one per answer metric, faithfulness two, two per retrieval
    step and reference kind, one per custom metric. An estimate: a faithfulness answer with no
    statement, a re-ask or an uncertainty phrase changes it, which the finished questions
    correct."""
    if scorer.judge is None:
        return 0
    on = scorer.on
    answer = isinstance(result.get("actual_answer"), str)
    reference = isinstance(result.get("reference_answer"), str)
    steps = result.get("actual_steps") or []
    retrieval = [
        i
        for i, s in enumerate(steps)
        if isinstance(s, Mapping) and s.get("name") == "retrieval"
    ]
    asks = len(scorer.custom) + len(scorer.generic)
    if answer:
        asks += on["answer_correctness"] and reference
        asks += on["answer_relevance"] and scorer.embedder is not None
        asks += on["factual_accuracy"] and reference
        asks += on["answer_class"]
    if retrieval:
        asks += 2 * (on["faithfulness"] and answer)
        from .metrics.context_quality import combines  # one call for both when this holds

        both = (on["context_precision"], on["context_recall"], result.get("reference_answer"))
        if combines(*both, scorer.config.options):
            asks += 1
        else:
            asks += on["context_precision"] + (on["context_recall"] and reference)
    matched_steps = {a for ref, a in matched if ref.get("name") == "retrieval"}
    for index in retrieval:
        asks += 2 * (scorer.step_on("retrieval_answer", steps[index]) and reference)
        asks += 2 * (scorer.step_on("retrieval_context", steps[index]) and index in matched_steps)
    return int(asks)


class _Lookup:
    """The responses of a run by reference position: held in memory, or read from a JSON Lines
    file one at a time (:class:`~qa_eval.stream.StreamedResponses`)."""

    def __init__(self, responses: dict[Any, Response] | None, streamed: Any = None) -> None:
        self.responses = responses
        self.streamed = streamed

    def get(self, index: int, question: Question) -> Response | None:
        if self.responses is not None:
            return self.responses.get(question.question_id)
        return self.streamed.get(index, question)  # type: ignore[no-any-return]

    def close(self) -> None:
        if self.streamed is not None:
            self.streamed.close()


def _prepare(
    reference_qas: Any,
    chat_responses: Any,
    reference_source: str,
    responses_source: str,
    unknown: Unknown,
) -> tuple[list[Question], _Lookup]:
    """The checked questions and responses; responses for question ids not in the reference
    are counted in ``unknown`` and left out, with one ``UnknownResponsesWarning``."""
    from .stream import JsonLinesResponses

    questions = prepare_reference(reference_qas, reference_source)
    if isinstance(chat_responses, JsonLinesResponses):
        lookup = _Lookup(None, chat_responses.index(questions, responses_source, unknown))
    else:
        lookup = _Lookup(prepare_responses(chat_responses, questions, responses_source, unknown))
    if unknown.count:
        warnings.warn(unknown.message(responses_source), UnknownResponsesWarning, stacklevel=2)
    return questions, lookup


class _Sink:
    """Where finished results go: here, into the list the run returns, by position."""

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


class _Ordered(_Sink):
    """Results handed on in reference order, in batches: a result that finishes before an
    earlier one waits here, and the run reads no further question while ``limit`` wait
    (``max(256, 8 x`` the questions scored at once``)``)."""

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


async def _execute(
    reference_qas: Any,
    chat_responses: Any,
    sink: _Sink,
    *,
    config: EvalConfig | str | os.PathLike[str] | Mapping[str, Any] | None = None,
    concurrency: int | None = None,
    cache: str | os.PathLike[str] | bool | None = True,
    max_cost: float | None = None,
    dry_run: bool = False,
    disable: Iterable[str] = (),
    enable: Iterable[str] = (),
    progress: ProgressCallback | None = None,
    on_progress: StatusCallback | None = None,
    on_result: ResultCallback | None = None,
    reference_source: str = "reference",
    responses_source: str = "responses",
    judge: Judge | None = None,
    embedder: Embedder | None = None,
) -> dict[str, Any]:
    """The one code path of a run: results go to ``sink`` as they finish; returns the run's
    signature."""
    settings = _llm_setup(config, concurrency)
    disabled = metric_names(disable, "disable")
    enabled = metric_names(enable, "enable") - disabled
    # The inputs can be large and live through the whole run: keep them out of the garbage
    # collector's full scans while it runs (gc.freeze), and give them back afterwards - unless
    # the application froze objects itself, whose freeze must not be undone here.
    # The deterministic part allocates only acyclic data (parsed outputs, result dicts), which
    # reference counting frees: the collector is paused while it runs (25% of its time on 10k
    # questions) and runs while the judge's calls do, whose HTTP stack makes cycles.
    freeze = gc.get_freeze_count() == 0
    if freeze:
        gc.freeze()
    collecting = gc.isenabled()
    gc.disable()
    store: ReplyCache | None = None
    lookup: _Lookup | None = None
    unknown = Unknown()
    try:
        questions, lookup = _prepare(
            reference_qas, chat_responses, reference_source, responses_source, unknown
        )
        if freeze:
            gc.freeze()  # the prepared questions (parsed reference outputs) live as long

        def wanted(switch: str) -> bool:
            return settings.switched_on(switch, enabled, disabled)

        offline = [s for s in OFFLINE_SWITCHES if wanted(s)]
        if judge is not None or settings.generation is not None or offline:
            if judge is None and settings.generation is not None:
                require("openai", "the LLM judge")
            require("pydantic", "the answer metrics")
            from .embeddings import CachingEmbedder, make_embedder
            from .judge import Judge
            from .scoring import AnswerScorer
        if judge is None and settings.generation is not None:
            store = open_cache(cache)
            judge = Judge(settings, cache=store, max_cost=max_cost, dry_run=dry_run)
        if embedder is None and (
            (judge is not None and wanted("answer_relevance")) or wanted("semantic_similarity")
        ):
            if judge is None and store is None:
                store = open_cache(cache)
            inner = make_embedder(settings.embedding, settings.timeout)
            remote = settings.embedding.provider != "offline"
            embedder = CachingEmbedder(
                inner,
                judge.cache if judge is not None else store,
                judge.slot if remote and judge is not None else None,
            )
        bertscorer = _bertscorer(settings) if wanted("bertscore") else None
        tracker = _Tracker(judge, progress, on_progress)
        scorer: AnswerScorer | None = None
        if judge is not None or offline:
            counted = judge
            if judge is not None and on_progress is not None:
                counted = cast("Judge", _CountingJudge(judge, tracker))
            scorer = AnswerScorer(settings, counted, embedder, disabled, enabled, bertscorer)
        tracker.total = len(questions)
        # At most this many questions are scored at once: each question's judge calls then
        # finish close together, and results follow the judge's work instead of all finishing
        # near the end.
        window = max(1, 2 * (judge.config if judge is not None else settings).concurrency)
        sink.start(len(questions), window)
        needs_judge = await _pipeline(
            questions, lookup, scorer, judge is None, window, sink, tracker, on_result, collecting
        )
        sink.flush()
        tracker.report()
    finally:
        if collecting:
            gc.enable()
        if freeze:
            gc.unfreeze()
        if store is not None:
            store.close()
        if lookup is not None:
            lookup.close()
    options = {
        "max_cost": max_cost,
        "dry_run": dry_run,
        "disabled": sorted(disabled),
        "enabled": sorted(enabled),
        "cache": None if store is None else str(store.path),
    }
    if bertscorer is not None:
        options["bertscore"] = bertscorer.info()
    signature = _signature(settings, judge, embedder, options, NO_JUDGE if needs_judge else None)
    signature["reference"] = {
        "fingerprint": reference_fingerprint(questions),
        "templates": len({q.template_id for q in questions}),
        "questions": len(questions),
    }
    if unknown.count:
        signature["ignored_responses"] = unknown.as_dict()
    return signature


def reference_fingerprint(questions: Iterable[Question]) -> str:
    """A stable hash of a reference dataset's content: ``sha256:`` and 64 hex digits.

    Each question (its template id and every key it has: text, reference answer, reference steps,
    tags) is written as JSON with sorted keys and hashed; the sorted hashes are hashed again. So
    the fingerprint does not depend on key order, template order or question order, or on the
    file format (YAML or JSON), and changes with any change to a question's content."""
    option = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS
    digests = sorted(
        hashlib.sha256(orjson.dumps([q.template_id, q.raw], option=option, default=str)).digest()
        for q in questions
    )
    return "sha256:" + hashlib.sha256(b"".join(digests)).hexdigest()


async def _pipeline(
    questions: list[Question],
    lookup: _Lookup,
    scorer: AnswerScorer | None,
    no_judge: bool,
    window: int,
    sink: _Sink,
    tracker: _Tracker,
    on_result: ResultCallback | None,
    collecting: bool,
) -> bool:
    """Evaluate every question in reference order; hand the questions some metric applies to
    to the scorer, at most ``window`` at a time. Returns whether an answered question went
    without LLM metrics because there is no judge."""
    needs_judge = False

    def finish(index: int, result: dict[str, Any], asks: int | None, expected: int = 0) -> None:
        sink.put(index, result)
        if on_result is not None:
            on_result(result)
        tracker.finished(asks, expected)

    async def paused(waiting: Awaitable[Any]) -> Any:
        """Await with the garbage collector on: the judge's tasks run meanwhile."""
        if collecting:
            gc.enable()
        try:
            return await waiting
        finally:
            if collecting:
                gc.disable()

    if scorer is None:
        for index, question in enumerate(questions):
            result = evaluate_question(question, lookup.get(index, question))
            if no_judge and not needs_judge:
                needs_judge = result.get("status") == "success" and "actual_answer" in result
            finish(index, result, None)
            if index % 256 == 255:
                await asyncio.sleep(0)  # let other tasks (e.g. a progress display) run
                if sink.full():
                    await sink.room()
        return needs_judge

    track = tracker.on_progress is not None
    slots = asyncio.Semaphore(window)
    running: set[asyncio.Task[None]] = set()
    failures: list[BaseException] = []
    ticker = asyncio.ensure_future(_tick(tracker, sink))

    def ended(task: asyncio.Task[None]) -> None:
        running.discard(task)
        if not task.cancelled() and task.exception() is not None:
            failures.append(task.exception())  # type: ignore[arg-type]

    async def one(index: int, result: dict[str, Any], matched: Any, expected: int) -> None:
        assert scorer is not None
        asks = [0]
        _ASKS.set(asks)
        try:
            await scorer.score(result, matched)
        finally:
            slots.release()
        finish(index, result, asks[0], expected)

    try:
        for index, question in enumerate(questions):
            matched: list[tuple[Mapping[str, Any], int]] = []
            result = evaluate_question(question, lookup.get(index, question), matched)
            tracker.produced += 1
            if scorer.applies(result):
                expected = _expected_asks(scorer, result, matched) if track else 0
                tracker.expected += expected
                if slots.locked():
                    await paused(slots.acquire())
                else:
                    await slots.acquire()  # free: returns at once
                if failures:
                    raise failures[0]
                task = asyncio.ensure_future(one(index, result, matched, expected))
                running.add(task)
                task.add_done_callback(ended)
            else:
                if no_judge and not needs_judge:
                    needs_judge = result.get("status") == "success" and "actual_answer" in result
                finish(index, result, None)
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
    return needs_judge


async def _tick(tracker: _Tracker, sink: _Sink) -> None:
    """While the judge works: the progress display is told what it did, and results that
    finished are handed on, even when no question finishes for a while."""
    while True:
        await asyncio.sleep(0.2)
        tracker.report()
        sink.flush()


async def arun_evaluation(
    reference_qas: Any,
    chat_responses: Any,
    config: ConfigArg = None,
    *,
    config_file_path: str | os.PathLike[str] | None = None,
    concurrency: int | None = None,
    cache: str | os.PathLike[str] | bool | None = True,
    max_cost: float | None = None,
    dry_run: bool = False,
    disable: Iterable[str] = (),
    enable: Iterable[str] = (),
    progress: ProgressCallback | None = None,
    on_progress: StatusCallback | None = None,
    on_result: ResultCallback | None = None,
    reference_source: str = "reference",
    responses_source: str = "responses",
    judge: Judge | None = None,
    embedder: Embedder | None = None,
) -> Results:
    """Evaluate every reference question against its response; one result per question, in
    reference order.

    Steps are scored deterministically. The LLM metrics run when a judge is configured
    (``config``: an :class:`EvalConfig`, a YAML path or a mapping; without one, ``gpt-4o-mini``
    when ``OPENAI_API_KEY`` is set), concurrently (at most twice ``concurrency`` questions at a
    time), with replies cached (``cache``: True for the user cache directory, a path, or False).
    ``enable`` switches on metrics that are off by default (the GraphRAG set; ``"graphrag"``
    names all of it but BERTScore), ``disable`` switches any off. ``on_result`` receives each
    result as it finishes, ``progress(done, total)`` is called after each question,
    ``on_progress`` gets a :class:`RunProgress` about ten times a second. ``chat_responses`` may
    be a :class:`~qa_eval.stream.JsonLinesResponses` file, read as a stream.
    ``config_file_path`` is graphrag-eval's name for ``config`` (give one of them)."""
    sink = _Sink()
    sink.results.signature = await _execute(
        reference_qas,
        chat_responses,
        sink,
        config=_config_arg(config, config_file_path),
        concurrency=concurrency,
        cache=cache,
        max_cost=max_cost,
        dry_run=dry_run,
        disable=disable,
        enable=enable,
        progress=progress,
        on_progress=on_progress,
        on_result=on_result,
        reference_source=reference_source,
        responses_source=responses_source,
        judge=judge,
        embedder=embedder,
    )
    return sink.results


class EvaluationStream(Iterator[dict[str, Any]]):
    """The results of a run, in reference order, as they are ready (see ``iter_evaluation``).

    The run works on a thread of its own; ``signature`` is set once every result was read.
    ``close()`` (or leaving a ``with`` block) stops a run that was not read to the end."""

    def __init__(self, reference_qas: Any, chat_responses: Any, options: dict[str, Any]) -> None:
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
        reference_qas, chat_responses, options = self._args
        def deliver(batch: list[dict[str, Any]]) -> None:
            self._queue.put(("batch", batch))

        async def run() -> dict[str, Any]:
            self._loop = asyncio.get_running_loop()
            self._task = asyncio.current_task()
            if self._stop.is_set():
                raise asyncio.CancelledError
            return await _execute(
                reference_qas, chat_responses, _Ordered(deliver), **options
            )

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
    :class:`~qa_eval.stream.JsonLinesResponses` file, the memory of a run does not grow with
    the number of questions beyond the reference dataset. ``signature`` is set once every
    result was read."""
    options["config"] = _config_arg(config, options.pop("config_file_path", None))
    return EvaluationStream(reference_qas, chat_responses, options)

def metric_names(names: Iterable[str], verb: str) -> frozenset[str]:
    """Metric switch names (``graphrag`` expanded); ``QaEvalError`` for an unknown one."""
    chosen: set[str] = set()
    for name in names:
        if name in GROUPS:
            chosen.update(GROUPS[name])
        elif name in SWITCHES:
            chosen.add(name)
        else:
            known = ", ".join([*SWITCHES, *GROUPS])
            raise QaEvalError(f"unknown metric to {verb}: {name} (known: {known})")
    return frozenset(chosen)


def _bertscorer(settings: EvalConfig) -> Any:
    """The BERTScore model the config names; ``QaEvalError`` when PyTorch is not installed."""
    from .metrics.bertscore import require_torch

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
    from .metrics.bertscore import BertScorer

    return BertScorer(model=model, layer=layer)


def _run_in_thread(coroutine_factory: Callable[[], Any]) -> Any:
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


def run_evaluation(
    reference_qas: Any, chat_responses: Any, config: ConfigArg = None, **options: Any
) -> Results:
    """``arun_evaluation`` run to completion (same arguments; ``config`` may be the third
    positional argument or ``config_file_path=``, as in graphrag-eval); safe to call inside a
    running event loop, where it blocks the loop until the run is over (``await
    arun_evaluation(...)`` does not). The results may also be awaited, as graphrag-eval 6.x's
    coroutine was: ``await run_evaluation(...)`` gives the same list."""

    async def boxed() -> _Box:
        return _Box(await arun_evaluation(reference_qas, chat_responses, config, **options))

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(boxed()).value
    return _run_in_thread(boxed).value


class _Box:
    """Carries the results out of ``asyncio.run``, whose SIGINT handling formats the finished
    task's repr (result included) when it restores the handler: a ``Results`` list would be
    written out in full for nothing (0.1 s per 1,000 questions)."""

    __slots__ = ("value",)

    def __init__(self, value: Results) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"<{len(self.value)} results>"
