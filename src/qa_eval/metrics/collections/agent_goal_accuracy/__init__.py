"""ragas 0.4.3's ``ragas.metrics.collections.agent_goal_accuracy`` under qa-eval (docs/ragas.md,
*Module paths*). It names ``AgentGoalAccuracy``, ``AgentGoalAccuracyWithReference``,
``AgentGoalAccuracyWithoutReference``.
"""

from typing import TYPE_CHECKING

from ....extras import ragas_face

if TYPE_CHECKING:
    from qa_eval.metrics.collections.agents import (
        AgentGoalAccuracy,
        AgentGoalAccuracyWithoutReference,
        AgentGoalAccuracyWithReference,
    )

_NAMES: dict[str, tuple[str, str]] = {
    "AgentGoalAccuracy": ("qa_eval.metrics.collections.agents", "AgentGoalAccuracy"),
    "AgentGoalAccuracyWithReference": (
        "qa_eval.metrics.collections.agents",
        "AgentGoalAccuracyWithReference",
    ),
    "AgentGoalAccuracyWithoutReference": (
        "qa_eval.metrics.collections.agents",
        "AgentGoalAccuracyWithoutReference",
    ),
}
_MISSING: dict[str, str] = {}
__all__: list[str] = [
    "AgentGoalAccuracy",
    "AgentGoalAccuracyWithReference",
    "AgentGoalAccuracyWithoutReference",
]
__getattr__, __dir__ = ragas_face(__name__, _NAMES, _MISSING)
