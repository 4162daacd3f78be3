"""ragas 0.4.3's ``ragas.metrics.collections.sql_semantic_equivalence`` under qa-eval
(docs/ragas.md, *Module paths*). It names ``SQLSemanticEquivalence``.
"""

from typing import TYPE_CHECKING

from ....extras import ragas_face

if TYPE_CHECKING:
    from qa_eval.metrics.collections.contexts import SQLSemanticEquivalence

_NAMES: dict[str, tuple[str, str]] = {
    "SQLSemanticEquivalence": ("qa_eval.metrics.collections.contexts", "SQLSemanticEquivalence")
}
_MISSING: dict[str, str] = {}
__all__: list[str] = ["SQLSemanticEquivalence"]
__getattr__, __dir__ = ragas_face(__name__, _NAMES, _MISSING)
