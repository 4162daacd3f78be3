"""ragas 0.4.3's ``ragas.metrics.collections.chrf_score`` under qa-eval (docs/ragas.md, *Module
paths*). It names ``CHRFScore``.
"""

from typing import TYPE_CHECKING

from ....extras import ragas_face

if TYPE_CHECKING:
    from qa_eval.metrics.collections.deterministic import CHRFScore

_NAMES: dict[str, tuple[str, str]] = {
    "CHRFScore": ("qa_eval.metrics.collections.deterministic", "CHRFScore")
}
_MISSING: dict[str, str] = {}
__all__: list[str] = ["CHRFScore"]
__getattr__, __dir__ = ragas_face(__name__, _NAMES, _MISSING)
