"""Trajectory judgement: a rubric judgement of an agent's whole trajectory, 0-1 with a reason.

The judge rates the response's tool calls (``actual_steps``: name, JSON arguments, status,
output, numbered) on each criterion 0 (no), 1 (partly) or 2 (yes): ``logical`` (each call follows
from the question and the earlier outputs), ``efficient`` (no unnecessary, repeated or aimless
calls) and, when the question has a ``reference_trajectory``, ``equivalent`` (it does what the
reference, or one of its alternatives, does). With ratings r_c over the C criteria:

    trajectory_judgement = Σ r_c / (2 · C)          (C = 3 with a reference, 2 without)

Without a reference trajectory the trajectory is judged against the question alone (the reason
says so); a question with neither a reference trajectory nor actual calls is not judged. The
reference trajectory is rendered as data (its calls and alternatives; its match settings are not
read). Source: the LLM-as-judge trajectory accuracy prompts of LangChain agentevals 0.0.9
(``TRAJECTORY_ACCURACY_PROMPT`` / ``..._WITH_REFERENCE``: logical progression, efficiency,
semantic equivalence to the reference), graded on three levels instead of their true/false. A
trajectory longer than the prompt budget is shortened or not evaluated as
``metrics.agents.judge_inputs`` says.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, field_validator

from ...prompts import numbered_blocks, render
from ..output import Output
from .judge_inputs import (
    Call,
    actual_calls,
    fit_prompt,
    not_evaluated,
    reference_calls,
    shortened_note,
)

__all__ = [
    "METRIC",
    "FreeRatings",
    "ReferenceRatings",
    "judgement_score",
    "score",
    "trajectory_prompt",
]

METRIC = "trajectory_judgement"
Rating = Literal[0, 1, 2]


class FreeRatings(BaseModel):
    """The judge's ratings of a trajectory without a reference."""

    reason: str = ""
    logical: Rating
    efficient: Rating

    @field_validator("logical", "efficient", "equivalent", mode="before", check_fields=False)
    @classmethod
    def _number(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip() in ("0", "1", "2"):
            return int(value.strip())
        return value


class ReferenceRatings(FreeRatings):
    """The judge's ratings of a trajectory against the reference one."""

    equivalent: Rating


def judgement_score(ratings: Sequence[int]) -> float:
    """Σ ratings / (2 · number of criteria): each rating 0, 1 or 2."""
    if not ratings or any(r not in (0, 1, 2) for r in ratings):
        raise ValueError(f"ratings must be 0, 1 or 2, got {list(ratings)!r}")
    return sum(ratings) / (2 * len(ratings))


def _actual_block(calls: Sequence[Call]) -> str:
    if not calls:
        return "(the agent called no tool)"
    return numbered_blocks([c.text() for c in calls], "call")


def _reference_block(trajectory: Any) -> str:
    calls, alternatives = reference_calls(trajectory)
    parts = [numbered_blocks([c.text() for c in calls], "reference_call") or "(no calls)"]
    for number, other in enumerate(alternatives, 1):
        inner = numbered_blocks([c.text() for c in other], "reference_call") or "(no calls)"
        parts.append(f'<alternative id="{number}">\n{inner}\n</alternative>')
    return "\n".join(parts)


def trajectory_prompt(
    question: str, answer: str | None, calls: Sequence[Call], reference: str | None
) -> str:
    """The prompt's text: with ``reference`` (the rendered reference block) or without."""
    values = {"question": question, "answer": answer if answer is not None else "(no answer)"}
    if reference is None:
        return render("trajectory_judgement_free", {"actual": _actual_block(calls)}, **values)
    trusted = {"actual": _actual_block(calls), "reference": reference}
    return render("trajectory_judgement", trusted, **values)


async def score(
    judge: Any, inputs: Mapping[str, Any], options: Mapping[str, Any]
) -> Output | tuple[Output, ...]:
    """``trajectory_judgement`` of one question (none without a reference trajectory and
    without calls)."""
    question = str(inputs.get("question") or "")
    answer = inputs.get("answer")
    calls = actual_calls(inputs.get("steps") or [])
    trajectory = inputs.get("reference_trajectory")
    if trajectory is None and not calls:
        return ()
    reference = None if trajectory is None else _reference_block(trajectory)
    schema = FreeRatings if reference is None else ReferenceRatings

    def prompt(shown: Sequence[Call]) -> str:
        return trajectory_prompt(question, answer, shown, reference)

    fitted = fit_prompt(judge, options, calls, prompt, schema)
    if not fitted.fits:
        return not_evaluated(METRIC, fitted)
    text = trajectory_prompt(question, answer, fitted.calls, reference)
    verdict = await judge.ask(METRIC, [{"role": "user", "content": text}], schema)
    rated = verdict.value
    criteria = ["logical", "efficient"] + ([] if reference is None else ["equivalent"])
    ratings = [getattr(rated, name) for name in criteria]
    tally = ", ".join(f"{name} {r}/2" for name, r in zip(criteria, ratings, strict=True))
    basis = (
        "against the reference trajectory"
        if reference is not None
        else "no reference trajectory: judged against the question alone"
    )
    reason = f"{tally} ({basis})"
    if rated.reason:
        reason += f": {rated.reason}"
    reason += shortened_note(fitted)
    values = {METRIC: judgement_score(ratings), f"{METRIC}_reason": reason}
    return Output.judged(METRIC, values, verdict)
