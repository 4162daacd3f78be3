"""Join reference questions with responses and evaluate them.

``arun_evaluation`` is the one code path; ``run_evaluation`` runs it to completion from sync code,
also inside a running event loop (Jupyter), by running it on a worker thread with its own loop.
The caller's objects are never mutated: results hold copies of the reference steps they annotate
with ``matches``, and share the (unchanged) actual step dicts.
"""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import Callable, Mapping
from typing import Any

from .records import Question, Response, prepare_reference, prepare_responses
from .steps.compare import StepScorer
from .steps.matching import match_steps

__all__ = ["arun_evaluation", "evaluate_question", "run_evaluation"]

ProgressCallback = Callable[[int, int], None]
"""Called as ``progress(done, total)`` after each question."""

_COPIED_RESPONSE_KEYS = ("input_tokens", "output_tokens", "total_tokens", "elapsed_sec")
NO_RESPONSE = "no response for this question"


def evaluate_question(question: Question, response: Response | None) -> dict[str, Any]:
    """Evaluate the deterministic part (steps) of one question; returns its result record."""
    raw = question.raw
    result: dict[str, Any] = {
        "template_id": question.template_id,
        "question_id": question.question_id,
        "question_text": raw.get("question_text"),
    }
    if "reference_answer" in raw:
        result["reference_answer"] = raw["reference_answer"]
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
        scorer = StepScorer(actual_steps)
        matches, score = match_steps(question.groups, scorer)
        matched = {(g, i): a for g, i, a, _ in matches}
        annotated = []
        for group in question.groups:
            copies = []
            for ref in group:
                step = dict(ref.raw)
                a = matched.get((ref.group, ref.index))
                if a is not None:
                    step_id = actual_steps[a].get("id")
                    step["matches"] = step_id if step_id is not None else a
                else:
                    step.pop("matches", None)
                copies.append(step)
            annotated.append(copies)
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


async def arun_evaluation(
    reference_qas: Any,
    chat_responses: Any,
    *,
    progress: ProgressCallback | None = None,
    reference_source: str = "reference",
    responses_source: str = "responses",
) -> list[dict[str, Any]]:
    """Evaluate every reference question against its response; one result per question."""
    # The inputs can be large and live through the whole run: keep them out of the garbage
    # collector's full scans while it runs (gc.freeze), and give them back afterwards - unless
    # the application froze objects itself, whose freeze must not be undone here.
    freeze = gc.get_freeze_count() == 0
    if freeze:
        gc.freeze()
    try:
        questions, responses = _prepare(
            reference_qas, chat_responses, reference_source, responses_source
        )
        if freeze:
            gc.freeze()  # the prepared questions (parsed reference outputs) live as long
        results: list[dict[str, Any]] = []
        total = len(questions)
        for done, question in enumerate(questions, start=1):
            results.append(evaluate_question(question, responses.get(question.question_id)))
            if progress is not None:
                progress(done, total)
            if done % 256 == 0:
                await asyncio.sleep(0)  # let other tasks (e.g. a progress display) run
    finally:
        if freeze:
            gc.unfreeze()
    return results


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
    reference_qas: Any,
    chat_responses: Any,
    *,
    progress: ProgressCallback | None = None,
    reference_source: str = "reference",
    responses_source: str = "responses",
) -> list[dict[str, Any]]:
    """Synchronous ``arun_evaluation``; safe to call inside a running event loop."""

    def factory() -> Any:
        return arun_evaluation(
            reference_qas,
            chat_responses,
            progress=progress,
            reference_source=reference_source,
            responses_source=responses_source,
        )

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())
    return _run_in_thread(factory)
