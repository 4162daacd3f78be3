"""ragas 0.4.3's ``ragas.metrics.collections.context_entity_recall`` under qa-eval (docs/ragas.md,
*Module paths*). It names ``ContextEntityRecall``.
"""

from typing import TYPE_CHECKING

from ....extras import ragas_face

if TYPE_CHECKING:
    from qa_eval.metrics.collections.contexts import ContextEntityRecall

_NAMES: dict[str, tuple[str, str]] = {
    "ContextEntityRecall": ("qa_eval.metrics.collections.contexts", "ContextEntityRecall")
}
_MISSING: dict[str, str] = {}
__all__: list[str] = ["ContextEntityRecall"]
__getattr__, __dir__ = ragas_face(__name__, _NAMES, _MISSING)
