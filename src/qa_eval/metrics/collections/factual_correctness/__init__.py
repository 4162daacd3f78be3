"""ragas 0.4.3's ``ragas.metrics.collections.factual_correctness`` under qa-eval (docs/ragas.md,
*Module paths*). It names ``FactualCorrectness``.
"""

from typing import TYPE_CHECKING

from ....extras import ragas_face

if TYPE_CHECKING:
    from qa_eval.metrics.collections.answers import FactualCorrectness

_NAMES: dict[str, tuple[str, str]] = {
    "FactualCorrectness": ("qa_eval.metrics.collections.answers", "FactualCorrectness")
}
_MISSING: dict[str, str] = {}
__all__: list[str] = ["FactualCorrectness"]
__getattr__, __dir__ = ragas_face(__name__, _NAMES, _MISSING)
