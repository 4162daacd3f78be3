"""ragas 0.4.3's ``ragas.metrics.collections.faithfulness`` under qa-eval (docs/ragas.md, *Module
paths*). It names ``Faithfulness``.
"""

from typing import TYPE_CHECKING

from ....extras import ragas_face

if TYPE_CHECKING:
    from qa_eval.metrics.collections.rag import Faithfulness

_NAMES: dict[str, tuple[str, str]] = {
    "Faithfulness": ("qa_eval.metrics.collections.rag", "Faithfulness")
}
_MISSING: dict[str, str] = {}
__all__: list[str] = ["Faithfulness"]
__getattr__, __dir__ = ragas_face(__name__, _NAMES, _MISSING)
