"""ragas 0.4.3's ``ragas.metrics.collections.summary_score`` under qa-eval (docs/ragas.md, *Module
paths*). It names ``SummaryScore``.
"""

from typing import TYPE_CHECKING

from ....extras import ragas_face

if TYPE_CHECKING:
    from qa_eval.metrics.collections.answers import SummaryScore

_NAMES: dict[str, tuple[str, str]] = {
    "SummaryScore": ("qa_eval.metrics.collections.answers", "SummaryScore")
}
_MISSING: dict[str, str] = {}
__all__: list[str] = ["SummaryScore"]
__getattr__, __dir__ = ragas_face(__name__, _NAMES, _MISSING)
