"""Agents: tool calls against reference calls (``toolcalls``, as ragas computes them), the
reference trajectory matched (``trajectory_match``) or judged by a rubric
(``trajectory_judgement``), goal accuracy and topic adherence of a conversation (``multi_turn``,
with ``goal_accuracy`` the registry's entry), what the judged agent metrics read within the judge's
budget (``judge_inputs``) and pass@k / pass^k over repeated trials (``trials``)."""

from typing import TYPE_CHECKING

from ...extras import lazy_face

if TYPE_CHECKING:
    from .multi_turn import agent_goal_accuracy, topic_adherence
    from .toolcalls import tool_call_accuracy, tool_call_f1
    from .trajectory_match import trajectory_keys
    from .trials import pass_at_k, pass_hat_k

_NAMES = {
    "agent_goal_accuracy": "multi_turn",
    "pass_at_k": "trials",
    "pass_hat_k": "trials",
    "tool_call_accuracy": "toolcalls",
    "tool_call_f1": "toolcalls",
    "topic_adherence": "multi_turn",
    "trajectory_keys": "trajectory_match",
}
__all__ = [
    "agent_goal_accuracy",
    "pass_at_k",
    "pass_hat_k",
    "tool_call_accuracy",
    "tool_call_f1",
    "topic_adherence",
    "trajectory_keys",
]
__getattr__, __dir__ = lazy_face(__name__, _NAMES)
