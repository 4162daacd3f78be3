"""Join reference questions with responses and evaluate them.

``arun_evaluation`` is the one code path; ``run_evaluation`` runs it to completion from sync code,
also inside a running event loop (Jupyter), by running it on a worker thread with its own loop.
The caller's objects are never mutated: results hold copies of the reference steps they annotate
with ``matches``, and share the (unchanged) actual step dicts.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import hashlib
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import orjson

from .cache import ReplyCache, open_cache
from .config import GROUPS, OFFLINE_SWITCHES, SWITCHES, EvalConfig, load_config, parse_config
from .errors import QaEvalError
from .extras import require
from .records import Question, Response, prepare_reference, prepare_responses
from .steps.compare import StepScorer
from .steps.matching import match_steps

__all__ = ["Results", "arun_evaluation", "evaluate_question", "run_evaluation"]

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
        result["reference_steps"] = annotated
        result["steps_score"] = score
        if scorer.problems:
            result["step_errors"] = [scorer.problems[i] for i in sorted(scorer.problems)]
    for key in _COPIED_RESPONSE_KEYS:
        if key in reply:
            result[key] = reply[key]
    return result


def _prepare(
    reference_qas: Any, chat_responses: Any, reference_source: str, responses_source: str
) -> tuple[list[Question], dict[Any, Response]]:
    questions = prepare_reference(reference_qas, reference_source)
    responses = prepare_responses(chat_responses, questions, responses_source)
    return questions, responses


class Results(list):  # type: ignore[type-arg]
    """The per-question results (a list, as in the original) with the run's ``signature``:
    qa-eval version, judge model and parameters, prompt hashes, options, calls, tokens and cost."""

    signature: dict[str, Any]

    def to_pandas(self) -> Any:
        """One row per question, metric columns, steps as JSON (qa_eval.frames; needs pandas)."""
        from .frames import results_to_pandas

        return results_to_pandas(self)

    def _repr_html_(self) -> str:
        """An HTML summary for Jupyter (qa_eval.frames.results_html)."""
        from .frames import results_html

        return results_html(self)


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


async def arun_evaluation(
    reference_qas: Any,
    chat_responses: Any,
    *,
    config: EvalConfig | str | os.PathLike[str] | Mapping[str, Any] | None = None,
    concurrency: int | None = None,
    cache: str | os.PathLike[str] | bool | None = True,
    max_cost: float | None = None,
    dry_run: bool = False,
    disable: Iterable[str] = (),
    enable: Iterable[str] = (),
    progress: ProgressCallback | None = None,
    on_result: ResultCallback | None = None,
    reference_source: str = "reference",
    responses_source: str = "responses",
    judge: Judge | None = None,
    embedder: Embedder | None = None,
) -> Results:
    """Evaluate every reference question against its response; one result per question.

    Steps are scored deterministically. The LLM metrics run when a judge is configured
    (``config``: an :class:`EvalConfig`, a YAML path or a mapping; without one, ``gpt-4o-mini``
    when ``OPENAI_API_KEY`` is set), concurrently, with replies cached (``cache``: True for the
    user cache directory, a path, or False). ``enable`` switches on metrics that are off by
    default (the GraphRAG set; ``"graphrag"`` names all of it but BERTScore), ``disable`` switches
    any off."""
    settings = _llm_setup(config, concurrency)
    disabled = metric_names(disable, "disable")
    enabled = metric_names(enable, "enable") - disabled
    # The inputs can be large and live through the whole run: keep them out of the garbage
    # collector's full scans while it runs (gc.freeze), and give them back afterwards - unless
    # the application froze objects itself, whose freeze must not be undone here.
    # The deterministic part allocates only acyclic data (parsed outputs, result dicts), which
    # reference counting frees: the collector is paused while it runs (25% of its time on 10k
    # questions) and resumed before any judge call, whose HTTP stack makes cycles.
    freeze = gc.get_freeze_count() == 0
    if freeze:
        gc.freeze()
    collecting = gc.isenabled()
    gc.disable()
    store: ReplyCache | None = None
    try:
        questions, responses = _prepare(
            reference_qas, chat_responses, reference_source, responses_source
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
        scorer: AnswerScorer | None = None
        if judge is not None or offline:
            scorer = AnswerScorer(settings, judge, embedder, disabled, enabled, bertscorer)
        results: Results = Results([None] * len(questions))
        total = len(questions)
        done = 0
        pending: list[tuple[int, dict[str, Any], list[tuple[Mapping[str, Any], int]]]] = []
        needs_judge = False

        def finish(index: int, result: dict[str, Any]) -> None:
            nonlocal done
            results[index] = result
            done += 1
            if on_result is not None:
                on_result(result)
            if progress is not None:
                progress(done, total)

        for index, question in enumerate(questions):
            matched: list[tuple[Mapping[str, Any], int]] = []
            result = evaluate_question(question, responses.get(question.question_id), matched)
            if scorer is not None and scorer.applies(result):
                pending.append((index, result, matched))
            else:
                needs_judge = needs_judge or (
                    judge is None
                    and result.get("status") == "success"
                    and "actual_answer" in result
                )
                finish(index, result)
            if index % 256 == 255:
                await asyncio.sleep(0)  # let other tasks (e.g. a progress display) run
        if freeze:
            gc.freeze()  # the results, too: the resumed collector need not scan them
        if collecting:
            gc.enable()
        if scorer is not None and pending:
            await _score_all(scorer, pending, finish)
    finally:
        if collecting:
            gc.enable()
        if freeze:
            gc.unfreeze()
        if store is not None:
            store.close()
    options = {
        "max_cost": max_cost,
        "dry_run": dry_run,
        "disabled": sorted(disabled),
        "enabled": sorted(enabled),
        "cache": None if store is None else str(store.path),
    }
    if bertscorer is not None:
        options["bertscore"] = bertscorer.info()
    results.signature = _signature(
        settings, judge, embedder, options, NO_JUDGE if needs_judge else None
    )
    results.signature["reference"] = {
        "fingerprint": reference_fingerprint(questions),
        "templates": len({q.template_id for q in questions}),
        "questions": len(questions),
    }
    return results


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


async def _score_all(
    scorer: AnswerScorer,
    pending: list[tuple[int, dict[str, Any], list[tuple[Mapping[str, Any], int]]]],
    finish: Callable[[int, dict[str, Any]], None],
) -> None:
    async def one(index: int, result: dict[str, Any], matched: Any) -> None:
        await scorer.score(result, matched)
        finish(index, result)

    tasks = [asyncio.ensure_future(one(*item)) for item in pending]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


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


def run_evaluation(reference_qas: Any, chat_responses: Any, **options: Any) -> Results:
    """Synchronous ``arun_evaluation`` (same options); safe to call inside a running event loop."""

    async def boxed() -> _Box:
        return _Box(await arun_evaluation(reference_qas, chat_responses, **options))

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
