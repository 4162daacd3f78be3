"""The one code path of a run (``execute``): prepare the questions and responses, set up the judge,
the embedder and the scorer, evaluate every question in reference order with at most ``window``
scored at once, hand results to a sink as they finish, and build the run's signature.

``runner.py`` holds the public verbs over it (``run_evaluation``, ``arun_evaluation``,
``iter_evaluation``).
"""

from __future__ import annotations

import asyncio
import functools
import gc
import hashlib
import json
import os
import time
import warnings
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, cast

import orjson

from ..config import GROUPS, OFFLINE_SWITCHES, SWITCHES, EvalConfig, as_config
from ..errors import QaEvalError, UnknownResponsesWarning
from ..extras import require
from ..io.keysets import check_keys, custom_keys, original_result
from ..judge.cache.store import ReplyCache, open_cache
from .prepare import Question, Response, Unknown, prepare_reference, prepare_responses
from .progress import ASKS, CountingJudge, ProgressCallback, StatusCallback, Tracker
from .question import Results, evaluate_question

if TYPE_CHECKING:  # the judge side (pydantic, the metrics) is imported only when a run uses it
    from ..judge.calls import Judge
    from ..judge.embeddings import Embedder
    from .score import AnswerScorer

__all__ = ["NO_JUDGE", "ResultCallback", "metric_names", "reference_fingerprint"]

ResultCallback = Callable[[dict[str, Any]], None]
"""Called with each question's finished result, in the order questions finish."""


def _llm_setup(
    config: EvalConfig | str | os.PathLike[str] | Mapping[str, Any] | None,
    concurrency: int | None,
) -> EvalConfig:
    # No config: no judge, as in graphrag-eval 6.6.1 (a config's llm section is its only way to
    # an LLM metric), so code written for it neither starts paying nor fails on a stale key
    # after the import changes. OPENAI_API_KEY is not read here; the command line (and
    # evaluate_files) resolve their announced default judge in plan_evaluation and pass it on.
    settings = EvalConfig(source=LIBRARY_DEFAULT) if config is None else as_config(config)
    return settings.with_options(concurrency=concurrency)


LIBRARY_DEFAULT = "no config"
"""The source of the config a library call without one runs with: no judge."""


def _signature(
    settings: EvalConfig,
    judge: Judge | None,
    embedder: Embedder | None,
    options: dict[str, Any],
    note: str | None,
) -> dict[str, Any]:
    from .._version import __version__
    from ..prompts import prompt_hash, prompt_names, prompt_text

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
NO_JUDGE_LIBRARY = (
    "LLM metrics not computed: no judge is configured (pass a config with llm.generation; "
    "without a config run_evaluation calls no judge, as graphrag-eval does)"
)


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


class ResultSink:
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


class OrderedSink(ResultSink):
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


async def execute(
    reference_qas: Any,
    chat_responses: Any,
    sink: ResultSink,
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
    fingerprint: str | None = None,
    keys: str = "qa-eval",
) -> dict[str, Any]:
    """The one code path of a run: results go to ``sink`` as they finish; returns the run's
    signature (``fingerprint``: the reference's, already computed by the caller; ``keys``:
    ``"graphrag-eval"`` writes only the keys graphrag-eval 6.6.1 writes, see keysets.py)."""
    _check_fingerprint(fingerprint)
    original = check_keys(keys)
    settings = _llm_setup(config, concurrency)
    project: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    if original:
        custom = custom_keys(settings)
        project = functools.partial(original_result, custom=custom)
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
            from ..judge.calls import Judge
            from ..judge.embeddings import CachingEmbedder, make_embedder
            from .score import AnswerScorer
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
        tracker = Tracker(judge, progress, on_progress)
        scorer: AnswerScorer | None = None
        if judge is not None or offline:
            counted = judge
            if judge is not None and on_progress is not None:
                counted = cast("Judge", CountingJudge(judge, tracker))
            scorer = AnswerScorer(settings, counted, embedder, disabled, enabled, bertscorer)
        tracker.total = len(questions)
        # At most this many questions are scored at once: each question's judge calls then
        # finish close together, and results follow the judge's work instead of all finishing
        # near the end.
        window = max(1, 2 * (judge.config if judge is not None else settings).concurrency)
        sink.start(len(questions), window)
        needs_judge = await _pipeline(
            questions,
            lookup,
            scorer,
            judge is None,
            window,
            sink,
            tracker,
            on_result,
            collecting,
            project,
        )
        sink.flush()
        tracker.report()
    finally:
        if freeze:
            # What the run made (the results) joins the inputs as old objects: the collector,
            # enabled again, would otherwise scan every result in its young generations.
            gc.freeze()
            gc.unfreeze()
        if collecting:
            gc.enable()
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
    if original:
        options["keys"] = keys
    note = NO_JUDGE_LIBRARY if settings.source == LIBRARY_DEFAULT else NO_JUDGE
    signature = _signature(settings, judge, embedder, options, note if needs_judge else None)
    signature["reference"] = {
        "fingerprint": fingerprint or reference_fingerprint(questions),
        "templates": len({q.template_id for q in questions}),
        "questions": len(questions),
    }
    if unknown.count:
        signature["ignored_responses"] = unknown.as_dict()
    if scorer is not None and scorer.skipped:
        # metric values whose judge call was not made, by typed reason (budget, dry_run, ...)
        signature["skipped_metric_values"] = dict(sorted(scorer.skipped.items()))
    return signature


def _check_fingerprint(fingerprint: Any) -> None:
    """A fingerprint handed to a run must look like one (``sha256:`` and 64 hex digits)."""
    if fingerprint is None:
        return
    digits = fingerprint[7:] if isinstance(fingerprint, str) else ""
    if not (
        isinstance(fingerprint, str)
        and fingerprint.startswith("sha256:")
        and len(digits) == 64
        and all(c in "0123456789abcdef" for c in digits)
    ):
        raise QaEvalError(
            f"fingerprint must be 'sha256:' and 64 hex digits (reference_fingerprint's value), "
            f"not {fingerprint!r:.80}"
        )


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


async def _pipeline(
    questions: list[Question],
    lookup: _Lookup,
    scorer: AnswerScorer | None,
    no_judge: bool,
    window: int,
    sink: ResultSink,
    tracker: Tracker,
    on_result: ResultCallback | None,
    collecting: bool,
    project: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> bool:
    """Evaluate every question in reference order; hand the questions some metric applies to
    to the scorer, at most ``window`` at a time. Returns whether an answered question went
    without LLM metrics because there is no judge."""
    needs_judge = False

    def finish(index: int, result: dict[str, Any], asks: int | None, expected: int = 0) -> None:
        if project is not None:
            result = project(result)
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
        ASKS.set(asks)
        try:
            scored = await scorer.score(result, matched)
        finally:
            slots.release()
        finish(index, scored, asks[0], expected)

    try:
        for index, question in enumerate(questions):
            matched: list[tuple[Mapping[str, Any], int]] = []
            result = evaluate_question(question, lookup.get(index, question), matched)
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


async def _tick(tracker: Tracker, sink: ResultSink) -> None:
    """While the judge works: the progress display is told what it did, and results that
    finished are handed on, even when no question finishes for a while."""
    while True:
        await asyncio.sleep(0.2)
        tracker.report()
        sink.flush()


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
