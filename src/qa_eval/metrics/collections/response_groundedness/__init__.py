"""ragas 0.4.3's ``ragas.metrics.collections.response_groundedness`` under qa-eval (docs/ragas.md,
*Module paths*). It names ``ResponseGroundedness``.
"""

from typing import TYPE_CHECKING

from ....extras import ragas_face

if TYPE_CHECKING:
    from qa_eval.metrics.collections.answers import ResponseGroundedness

_NAMES: dict[str, tuple[str, str]] = {
    "ResponseGroundedness": ("qa_eval.metrics.collections.answers", "ResponseGroundedness")
}
_MISSING: dict[str, str] = {}
__all__: list[str] = ["ResponseGroundedness"]
__getattr__, __dir__ = ragas_face(__name__, _NAMES, _MISSING)
