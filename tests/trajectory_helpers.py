"""Shared helpers of the trajectory tests: calls and steps written briefly, and one scoring call."""

from __future__ import annotations

from typing import Any

from qa_eval.steps.trajectory.comparators import LlmAnswers
from qa_eval.steps.trajectory.match import evaluate_trajectory
from qa_eval.steps.trajectory.reference import parse_reference


def call(name: str, optional: bool = False, **args: Any) -> dict[str, Any]:
    """A reference call."""
    out: dict[str, Any] = {"name": name, "args": args}
    if optional:
        out["optional"] = True
    return out


def step(name: str, status: str = "success", **args: Any) -> dict[str, Any]:
    """An actual step."""
    return {"name": name, "args": args, "status": status}


def evaluate(
    calls: list[dict[str, Any]],
    steps: list[dict[str, Any]],
    match: str = "superset",
    args: str = "exact",
    ordered: bool = False,
    alternatives: list[list[dict[str, Any]]] | None = None,
    llm: LlmAnswers | None = None,
) -> dict[str, Any]:
    """The trajectory keys of ``steps`` against a mapping-form reference."""
    raw: dict[str, Any] = {"match": match, "args": args, "ordered": ordered, "calls": calls}
    if alternatives is not None:
        raw["alternatives"] = alternatives
    return evaluate_trajectory(parse_reference(raw), raw, steps, llm)
