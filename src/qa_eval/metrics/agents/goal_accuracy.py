"""Goal accuracy of an agent's response: did it reach the user's goal (1.0) or not (0.0).

goal_accuracy = 1.0 when the end state the judge reads from the conversation achieves the target,
else 0.0 (one judge call reads the user's goal and the end state, a second compares).
Source: ragas 0.4.3 ``AgentGoalAccuracyWithReference`` / ``AgentGoalAccuracyWithoutReference``
(``ragas.metrics.collections.agent_goal_accuracy``), on the engine those classes run here
(``metrics.agents.multi_turn.agent_goal_accuracy``). The target is the question's
``reference_goal``, else its ``reference_answer`` (ragas' with-reference path); with neither, the
goal the judge infers from the conversation (ragas' without-reference path).

The conversation is the question (``Human:``), the response's ``actual_steps`` as numbered tool
calls with their JSON arguments, status and output (``Tools:`` / ``ToolOutput:``) and the answer
(``AI:``), as ragas renders a conversation; it goes into the prompt as delimited data. A trajectory
longer than the prompt budget is shortened or not evaluated as ``metrics.agents.judge_inputs`` says.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...prompts import render
from ..output import Output
from .judge_inputs import (
    Call,
    Fitted,
    Noting,
    actual_calls,
    fit_prompt,
    not_evaluated,
    shortened_note,
)
from .multi_turn import WorkflowReply, agent_goal_accuracy

__all__ = ["METRIC", "conversation", "fit_conversation", "score"]

METRIC = "goal_accuracy"


def conversation(question: str, calls: Sequence[Call], answer: str | None) -> str:
    """The transcript of one response: the question, each numbered call and its output, the
    answer (``(no answer)`` when the response has none)."""
    lines = [f"Human: {question}"]
    for call in calls:
        lines += ["Tools:", f"  [{call.number}] {call.name} {call.args}"]
        output = call.output if call.output is not None else "(no output)"
        lines.append(f"ToolOutput: [{call.number}] status {call.status}: {output}")
    lines.append(f"AI: {answer if answer is not None else '(no answer)'}")
    return "\n".join(lines)


def fit_conversation(
    judge: Any, inputs: Mapping[str, Any], options: Mapping[str, Any], template: str, reply: Any
) -> Fitted:
    """The response's calls fitted to the budget of the prompt ``template``, which shows the
    conversation (``conversation=``) and is answered with ``reply``."""
    question = str(inputs.get("question") or "")
    answer = inputs.get("answer")

    def prompt(calls: Sequence[Call]) -> str:
        return render(template, conversation=conversation(question, calls, answer))

    return fit_prompt(judge, options, actual_calls(inputs.get("steps") or []), prompt, reply)


def _target(inputs: Mapping[str, Any]) -> tuple[str | None, str]:
    """What the end state is compared with, and its name in the reason."""
    goal = inputs.get("reference_goal")
    if isinstance(goal, str) and goal.strip():
        return goal, "reference goal"
    answer = inputs.get("reference_answer")
    if isinstance(answer, str) and answer.strip():
        return answer, "reference answer"
    return None, "inferred user goal"


async def score(judge: Any, inputs: Mapping[str, Any], options: Mapping[str, Any]) -> Output:
    """``goal_accuracy`` of one question: 1.0 or 0.0 with the judge's reason (or, for a
    trajectory beyond the budget, the error that says so and no call)."""
    question = str(inputs.get("question") or "")
    answer = inputs.get("answer")
    fitted = fit_conversation(judge, inputs, options, "agent_goal_outcome", WorkflowReply)
    if not fitted.fits:
        return not_evaluated(METRIC, fitted)
    target, compared_with = _target(inputs)
    noted = Noting(judge, METRIC)
    outcome = await agent_goal_accuracy(noted, conversation(question, fitted.calls, answer), target)
    verdict = "achieved" if outcome.value == 1.0 else "not achieved"
    reason = f"{compared_with} {verdict}"
    if target is None:
        reason += f" (goal: {outcome.user_goal})"
    if outcome.reason:
        reason += f": {outcome.reason}"
    reason += shortened_note(fitted)
    values = {METRIC: outcome.value, f"{METRIC}_reason": reason}
    return Output.judged(METRIC, values, *noted.verdicts)
