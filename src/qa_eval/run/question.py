"""One question's result record - the deterministic part, its steps - and the list a run returns.

``evaluate_question`` joins a reference question with its response and scores the steps; the
caller's objects are never mutated: a result holds copies of the reference steps it annotates with
``matches``, and shares the (unchanged) actual step dicts. The LLM metrics' keys are added by
``scoring.AnswerScorer``, which returns a new result.
"""

from __future__ import annotations

import types
from collections.abc import Generator, Mapping
from itertools import repeat
from operator import contains
from typing import Any

from ..io.keysets import TRIAL_KEY
from ..steps.compare import StepScorer
from ..steps.matching import fully_matched, match_steps
from .prepare.records import Question, Response

__all__ = [
    "AGENT_REFERENCE_KEYS",
    "NO_RESPONSE",
    "RAGAS_REFERENCE_KEYS",
    "Results",
    "evaluate_in_order",
    "evaluate_question",
    "pause",
]

RAGAS_REFERENCE_KEYS = ("reference_contexts", "reference_tool_calls", "rubrics")
"""What a result copies of its question for ragas' other metrics (``sql_semantic_equivalence``'s
schema, ``tool_call_accuracy`` / ``tool_call_f1``, ``instance_specific_rubrics``)."""
NO_RESPONSE = "no response for this question"
AGENT_REFERENCE_KEYS = ("reference_goal", "reference_topics", "reference_trajectory")
"""What a result copies of its question for the agent metrics (``goal_accuracy``,
``topic_adherence``, ``trajectory_judgement``; ``trajectory_match`` annotates its own copy)."""


def _explain_unmatched(*args: Any) -> dict[tuple[int, int], str]:
    """``steps.explain.explain_unmatched``, imported when a question first leaves a reference
    step unmatched (a run whose steps all match never loads it); it then takes this name, and
    later questions call it directly (a cached getter's call cost ~500 instructions each)."""
    global _explain_unmatched
    from ..steps.explain import explain_unmatched

    _explain_unmatched = explain_unmatched
    return explain_unmatched(*args)


def evaluate_question(
    question: Question,
    response: Response | None,
    matched_out: list[tuple[Mapping[str, Any], int]] | None = None,
    trajectory: str = "on",
) -> dict[str, Any]:
    """Evaluate the deterministic part (steps, trajectory) of one question; returns its result
    record.

    ``matched_out``, when given, receives (reference step copy, actual step index) pairs.
    ``trajectory``: ``"on"`` computes the trajectory metrics (a ``$llm`` comparator is then an
    error: no judge), ``"judge"`` leaves a reference with ``$llm`` to the scorer's judge,
    ``"off"`` computes none."""
    raw = question.raw
    result: dict[str, Any] = {
        "template_id": question.template_id,
        "question_id": question.question_id,
        "question_text": raw.get("question_text"),
    }
    reply: Mapping[str, Any] = response.raw if response is not None else _NO_REPLY
    # (a response the fast path prepared has no trial and no lost step: it was tested there)
    plain = response is None or response.plain
    if not plain and TRIAL_KEY in reply:
        result[TRIAL_KEY] = reply[TRIAL_KEY]
    if "reference_answer" in raw:
        result["reference_answer"] = raw["reference_answer"]
    if "question_type" in raw:
        result["question_type"] = raw["question_type"]
    # (most questions have none: preparing found out, else one test here)
    if question.agent_fields and not _REFERENCE_FIELDS.isdisjoint(raw):
        for key in (*AGENT_REFERENCE_KEYS, *RAGAS_REFERENCE_KEYS):
            if key in raw:
                result[key] = raw[key]
    error = None  # (the result's error, when it is an error)
    if response is None:
        result["status"] = "error"
        result["error"] = error = NO_RESPONSE
    elif response.is_error:
        result["status"] = "error"
        result["error"] = error = reply.get("error", "")
    else:
        result["status"] = "success"
    if "actual_answer" in reply:
        result["actual_answer"] = reply["actual_answer"]
    actual_steps = reply.get("actual_steps") or []
    # A new list of the same step dicts: nothing here changes them.
    result["actual_steps"] = list(actual_steps)
    groups = question.groups
    # A plain response (the usual one) was tested for lost steps when it was checked; others
    # are tested here (without a response: no steps).
    if groups is not None and not plain:
        # _any_lost's first test here (one call per question fewer): the usual steps, dicts
        # none of which carries "lost", need no other; anything else asks _any_lost.
        try:
            lost = any(map(contains, actual_steps, _LOST))
        except TypeError:
            lost = True
        if lost and _any_lost(actual_steps):
            unreadable = _steps_not_evaluable(question, actual_steps)
            if unreadable is not None:
                result["reference_steps"] = [[dict(ref.raw) for ref in group] for group in groups]
                result["steps_score_error"] = unreadable
                groups = None  # (not scored)
    if groups is not None:
        scorer = StepScorer(actual_steps, response.successful if response is not None else None)
        matches, score = match_steps(groups, scorer)
        # Copies of the reference steps (a prepared question keeps every step, in place, so a
        # match's (group, index) is its position), without any "matches" the input carried:
        # those made when the question was prepared, for its first result.
        annotated = question.copies
        if annotated is not None:
            question.copies = None
        else:
            annotated = [[dict(ref.raw) for ref in group] for group in groups]
            if question.has_matches:
                for copies in annotated:
                    for step in copies:
                        step.pop("matches", None)
        # A reference taken from a results file may carry an old explanation ("mismatch"): it
        # never stays on a matched step (a partly matched one gets a new one below).
        # (one match is in order: sorted() only when there are more)
        for g, i, a, _ in sorted(matches) if len(matches) > 1 else matches:
            step = annotated[g][i]
            step_id = actual_steps[a].get("id")
            step["matches"] = step_id if step_id is not None else a
            if "mismatch" in step:  # (rarely there: a test costs less than a pop's call)
                del step["mismatch"]
            if matched_out is not None:
                matched_out.append((step, a))
        # Why each unmatched step did not match (nothing to do when every step matched; fewer
        # matches than groups, each of at least one step, leave one unmatched: no call to ask).
        if len(matches) < len(groups) or not fully_matched(groups, matches):
            explained = _explain_unmatched(groups, scorer, matches, error)
            for (g, i), why in explained.items():
                annotated[g][i]["mismatch"] = why
        result["reference_steps"] = annotated
        result["steps_score"] = score
        if scorer.problems:
            result["step_errors"] = [scorer.problems[i] for i in sorted(scorer.problems)]
    if question.trajectory is not None:
        raw_trajectory = raw["reference_trajectory"]
        result["reference_trajectory"] = raw_trajectory
        if (
            trajectory != "off"
            and response is not None
            and not response.is_error
            and not (trajectory == "judge" and question.trajectory.uses_llm)
        ):
            from ..metrics.agents.trajectory_match import trajectory_keys  # agents' questions

            result.update(trajectory_keys(question.trajectory, raw_trajectory, actual_steps))
    # What a result copies of its response after its steps (written out: a loop over the keys
    # took twice the bytecodes); a timed response has the first four (one test, not four).
    timed = response is not None and response.timed
    if timed or "input_tokens" in reply:
        result["input_tokens"] = reply["input_tokens"]
    if timed or "output_tokens" in reply:
        result["output_tokens"] = reply["output_tokens"]
    if timed or "total_tokens" in reply:
        result["total_tokens"] = reply["total_tokens"]
    if timed or "elapsed_sec" in reply:
        result["elapsed_sec"] = reply["elapsed_sec"]
    if "trace" in reply:
        result["trace"] = reply["trace"]
    return result


async def evaluate_in_order(
    questions: list[Question],
    responses: dict[Any, list[Response]],
    results: list[Any],
    trajectory: str,
    no_judge: bool,
) -> tuple[int, bool]:
    """The usual run's deterministic part (every question, its responses in memory as
    ``prepare_responses`` gives them, taken from ``responses``; no scorer): each question's
    results in ``results``, in order, its prepared steps let go once they are made; returns
    (results made, whether an answered question, with ``no_judge``, went without LLM metrics)."""
    index, answered, pop = 0, False, responses.pop
    for question in questions:
        for response in pop(question.question_id, None) or _UNANSWERED:
            result = evaluate_question(question, response, None, trajectory)
            if no_judge and not answered:
                answered = result.get("status") == "success" and "actual_answer" in result
            results[index] = result
            index += 1
            if not index & 255:
                await pause()  # let other tasks (e.g. a progress display) run
        question.release()
    return index, answered


_UNANSWERED = (None,)
"""The responses of a question without any: one result, without a response."""


@types.coroutine
def pause() -> Generator[None, None, None]:
    """``asyncio.sleep(0)`` without importing asyncio: one bare yield, which an event loop's
    task takes as "run the other tasks, then me again", and a judge-free run without a loop
    (``run.evaluation``) resumes at once."""
    yield


_NO_REPLY: Mapping[str, Any] = {}
"""The reply of a question without a response: nothing (only read)."""
_REFERENCE_FIELDS = frozenset((*AGENT_REFERENCE_KEYS, *RAGAS_REFERENCE_KEYS))
_LOST = repeat("lost")


def _any_lost(actual_steps: Any) -> bool:
    """Whether an actual step (a dict) carries ``lost`` (a trace's note of what it lost)."""
    # The usual steps (dicts, none lost): one C pass; ``in`` is the test below for a dict, and
    # something else among the steps (text ``in`` is a substring test, a number has none)
    # takes the step-by-step test.
    try:
        if not any(map(contains, actual_steps, _LOST)):
            return False
    except TypeError:
        pass
    return any(isinstance(step, dict) and "lost" in step for step in actual_steps)


def _steps_not_evaluable(question: Question, actual_steps: Any) -> str | None:
    """Why the reference steps cannot be scored (the trace import recorded that calls of the
    reference steps' names lost their output or arguments: content capture off), or None;
    asked only when some actual step carries ``lost``.

    Such a question is not scored on what is left: a step with no recorded output would count as
    unmatched and give a 0 that says nothing about the system."""
    if question.groups is None:
        return None
    names = {ref.raw.get("name") for group in question.groups for ref in group}
    lost = [
        step
        for step in actual_steps
        if isinstance(step, Mapping)
        and step.get("name") in names
        and {"output", "args"} & set(step.get("lost") or ())
    ]
    if not lost:
        return None
    parts = sorted({part for step in lost for part in step["lost"] if part in ("output", "args")})
    what = " or ".join({"args": "arguments", "output": "output"}[p] for p in parts)
    return (
        f"not evaluable: {len(lost)} of {len(actual_steps)} steps named like reference steps "
        f"have no recorded {what} (the trace did not capture them)"
    )


class Results(list):  # type: ignore[type-arg]
    """The per-question results (a list, as in the original) with the run's ``signature``:
    qa-eval version, judge model and parameters, prompt hashes, options, calls, tokens and cost.

    The list is also an already finished coroutine: ``await results`` (and ``asyncio.run`` or
    ``create_task`` of it) gives the list itself, so code written for graphrag-eval 6.x, whose
    ``run_evaluation`` was a coroutine (``await run_evaluation(...)``), keeps working."""

    @property
    def signature(self) -> dict[str, Any]:
        """The run's signature; a reference held in memory is hashed for its fingerprint (and
        its templates counted) here, when the signature is first read
        (``run.signature.PendingFingerprint``)."""
        try:
            signature: dict[str, Any] = self.__dict__["_signature"]
        except KeyError:
            raise AttributeError("signature") from None
        if self.__dict__.get("_pending"):
            reference = signature["reference"]
            for key, value in reference.items():  # (values replaced: no key added)
                if callable(value):
                    reference[key] = value()
            self.__dict__["_pending"] = False
        return signature

    @signature.setter
    def signature(self, value: dict[str, Any]) -> None:
        self.__dict__["_signature"] = value
        reference = value.get("reference") if isinstance(value, dict) else None
        self.__dict__["_pending"] = isinstance(reference, dict) and any(
            map(callable, reference.values())
        )

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (and copied) with its fingerprint computed: the pending hash holds the
        prepared questions, which are not part of the results."""
        if self.__dict__.get("_pending"):
            self.signature  # noqa: B018 (resolves the fingerprint)
        return dict(self.__dict__)

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
        from ..frames import results_to_pandas

        return results_to_pandas(self)

    def __repr__(self) -> str:
        """A one-line summary, never the results themselves: asyncio writes out the repr of a
        finished task's result (``asyncio.run(run_evaluation(...))`` formats it twice on exit),
        which for the whole list took longer than the run. ``print()`` shows the list."""
        count = len(self)
        return f"<Results of {count:,} question{'' if count == 1 else 's'}>"

    def __str__(self) -> str:
        """The list, as ``print()`` of the original's plain list showed it."""
        return list.__repr__(self)

    def _repr_html_(self) -> str:
        """An HTML summary for Jupyter (qa_eval.frames.results_html)."""
        from ..frames import results_html

        return results_html(self)
