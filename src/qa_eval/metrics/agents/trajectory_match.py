"""Agent trajectory metrics: the tool calls of a response against its ``reference_trajectory``.

With ``m`` the successful actual calls, ``r`` the required calls of the chosen acceptable
trajectory and the matching of ``steps/trajectory/match.py`` (optimal, never greedy):

- ``trajectory_match`` = 1 when the calls satisfy the mode for some acceptable trajectory, else 0;
  ``trajectory_alternative``: which (0: ``calls``; i: ``alternatives[i-1]``), by match, then F1;
- ``tool_recall`` = matched required calls / r (1 when r = 0);
- ``tool_precision`` = matched actual calls / m (1 when m = 0);
- ``tool_f1`` = 2PR / (P + R) (0 when P + R = 0): 1 when r = m = 0, 0 when nothing is
  required and an actual call is unmatched, 1 when optional calls match every actual call;
- ``tool_args_score`` = mean over the required calls of the argument score of the same-name
  call assigned to it (0 without one; 1 when r = 0);
- ``tool_calls_missing``, ``tool_calls_extra``, ``tool_calls_failed`` (status error),
  ``tool_calls_repeated`` (same name and canonical arguments as an earlier successful call);
- ``tool_calls_ratio`` = m / c, c the calls (optional ones included) of the chosen acceptable
  trajectory (null when c = 0).

Source: the trajectory modes and argument modes of LangChain agentevals 0.0.9, with optimal
matching, alternatives, optional calls and partial credit (docs/metrics/trajectory.md). The
deterministic values are computed with the question's other deterministic results
(``run/question.py``); this module's ``score`` entry point runs them through the judge when a
reference argument uses ``$llm`` (one cached, costed judge call per distinct statement and value).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...steps.trajectory.comparators import LlmAnswers, show
from ...steps.trajectory.match import evaluate_trajectory
from ...steps.trajectory.reference import Reference, parse_reference
from ..output import Output

__all__ = ["METRIC", "NO_JUDGE", "score", "trajectory_keys"]

METRIC = "trajectory"
NO_JUDGE = "needs a judge (none configured)"


def trajectory_keys(reference: Reference, raw: Any, steps: Any) -> dict[str, Any]:
    """The trajectory keys of a question without a judge: those of ``evaluate_trajectory``, or
    ``trajectory_error`` naming the first ``$llm`` comparator when one is needed."""
    llm = LlmAnswers()
    keys = evaluate_trajectory(reference, raw, steps, llm)
    if llm.pending:
        where = next(iter(llm.pending.values()))
        return {"trajectory_error": f"$llm comparator at {where} {NO_JUDGE}"}
    return keys


def _reply_model() -> type:
    from pydantic import BaseModel

    class SameMeaningReply(BaseModel):
        reason: str = ""
        same: bool

    return SameMeaningReply


async def score(judge: Any, inputs: Mapping[str, Any], options: Mapping[str, Any]) -> Output:
    """The trajectory record of a question whose reference uses ``$llm``, asking the judge."""
    import asyncio  # here: the deterministic run (``trajectory_keys``) needs no event loop

    from ...prompts import render

    raw = inputs["reference_trajectory"]
    reference = parse_reference(raw)
    steps = inputs["steps"]
    llm = LlmAnswers()
    keys = evaluate_trajectory(reference, raw, steps, llm)
    if not llm.pending:
        return Output(METRIC, _values(keys))
    if judge is None:
        where = next(iter(llm.pending.values()))
        raise ValueError(f"$llm comparator at {where} {NO_JUDGE}")
    schema = _reply_model()
    pending = list(llm.pending)

    async def ask(statement: str, actual: str) -> Any:
        text = render(
            "trajectory_llm", reference=statement, actual=show(_loads(actual), limit=4000)
        )
        return await judge.ask(METRIC, [{"role": "user", "content": text}], schema)

    verdicts = await asyncio.gather(*(ask(s, a) for s, a in pending))
    for key, verdict in zip(pending, verdicts):
        llm.answers[key] = bool(verdict.value.same)
    llm.pending.clear()
    keys = evaluate_trajectory(reference, raw, steps, llm)
    return Output.judged(METRIC, _values(keys), *verdicts)


def _loads(text: str) -> Any:
    import json

    return json.loads(text)


def _values(keys: Mapping[str, Any]) -> dict[str, Any]:
    """The keys as a record's values (its error goes to the record)."""
    if "trajectory_error" in keys:
        raise ValueError(keys["trajectory_error"])
    return dict(keys)
