"""ragas 0.4.3's ``ragas.metrics.collections.tool_call_f1`` under qa-eval (docs/ragas.md, *Module
paths*). It names ``ToolCallF1``.
"""

from typing import TYPE_CHECKING

from ....extras import ragas_face

if TYPE_CHECKING:
    from qa_eval.metrics.collections.deterministic import ToolCallF1

_NAMES: dict[str, tuple[str, str]] = {
    "ToolCallF1": ("qa_eval.metrics.collections.deterministic", "ToolCallF1")
}
_MISSING: dict[str, str] = {}
__all__: list[str] = ["ToolCallF1"]
__getattr__, __dir__ = ragas_face(__name__, _NAMES, _MISSING)
