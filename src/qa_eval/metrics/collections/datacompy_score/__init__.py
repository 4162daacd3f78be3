"""ragas 0.4.3's ``ragas.metrics.collections.datacompy_score`` under qa-eval (docs/ragas.md,
*Module paths*). It names ``DataCompyScore``.
"""

from typing import TYPE_CHECKING

from ....extras import ragas_face

if TYPE_CHECKING:
    from qa_eval.metrics.collections.deterministic import DataCompyScore

_NAMES: dict[str, tuple[str, str]] = {
    "DataCompyScore": ("qa_eval.metrics.collections.deterministic", "DataCompyScore")
}
_MISSING: dict[str, str] = {}
__all__: list[str] = ["DataCompyScore"]
__getattr__, __dir__ = ragas_face(__name__, _NAMES, _MISSING)
