"""ragas 0.4.3's ``ragas.metrics.collections.context_recall`` under qa-eval (docs/ragas.md, *Module
paths*). It names ``ContextRecall``.
"""

from typing import TYPE_CHECKING

from ....extras import ragas_face

if TYPE_CHECKING:
    from qa_eval.metrics.collections.rag import ContextRecall

_NAMES: dict[str, tuple[str, str]] = {
    "ContextRecall": ("qa_eval.metrics.collections.rag", "ContextRecall")
}
_MISSING: dict[str, str] = {}
__all__: list[str] = ["ContextRecall"]
__getattr__, __dir__ = ragas_face(__name__, _NAMES, _MISSING)
