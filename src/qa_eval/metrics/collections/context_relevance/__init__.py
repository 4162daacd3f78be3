"""ragas 0.4.3's ``ragas.metrics.collections.context_relevance`` under qa-eval (docs/ragas.md,
*Module paths*). It names ``ContextRelevance``.
"""

from typing import TYPE_CHECKING

from ....extras import ragas_face

if TYPE_CHECKING:
    from qa_eval.metrics.collections.contexts import ContextRelevance

_NAMES: dict[str, tuple[str, str]] = {
    "ContextRelevance": ("qa_eval.metrics.collections.contexts", "ContextRelevance")
}
_MISSING: dict[str, str] = {}
__all__: list[str] = ["ContextRelevance"]
__getattr__, __dir__ = ragas_face(__name__, _NAMES, _MISSING)
