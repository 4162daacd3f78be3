"""ragas 0.4.3's ``ragas.metrics.collections.tool_call_f1.util`` under qa-eval (docs/ragas.md,
*Module paths*). Not here: ``calculate_f1_score``, ``make_hashable``, ``tool_call_to_hashable``
(qa-eval's metrics use their own prompts, reply schemas and helpers).
"""

from ....extras import ragas_face

_NAMES: dict[str, tuple[str, str]] = {}
_WHY = "qa-eval's metrics use their own prompts, reply schemas and helpers, not ragas'"
_MISSING: dict[str, str] = dict.fromkeys(
    ["calculate_f1_score", "make_hashable", "tool_call_to_hashable"], _WHY
)
__all__: list[str] = []
__getattr__, __dir__ = ragas_face(__name__, _NAMES, _MISSING)
