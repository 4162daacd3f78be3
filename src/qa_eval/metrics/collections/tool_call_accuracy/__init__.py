"""ragas 0.4.3's ``ragas.metrics.collections.tool_call_accuracy`` under qa-eval (docs/ragas.md,
*Module paths*). It names ``ToolCallAccuracy``.
"""

from typing import TYPE_CHECKING

from ....extras import ragas_face

if TYPE_CHECKING:
    from qa_eval.metrics.collections.deterministic import ToolCallAccuracy

_NAMES: dict[str, tuple[str, str]] = {
    "ToolCallAccuracy": ("qa_eval.metrics.collections.deterministic", "ToolCallAccuracy")
}
_MISSING: dict[str, str] = {}
__all__: list[str] = ["ToolCallAccuracy"]
__getattr__, __dir__ = ragas_face(__name__, _NAMES, _MISSING)
