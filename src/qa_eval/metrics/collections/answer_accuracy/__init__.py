"""ragas 0.4.3's ``ragas.metrics.collections.answer_accuracy`` under qa-eval (docs/ragas.md,
*Module paths*). It names ``AnswerAccuracy``.
"""

from typing import TYPE_CHECKING

from ....extras import ragas_face

if TYPE_CHECKING:
    from qa_eval.metrics.collections.answers import AnswerAccuracy

_NAMES: dict[str, tuple[str, str]] = {
    "AnswerAccuracy": ("qa_eval.metrics.collections.answers", "AnswerAccuracy")
}
_MISSING: dict[str, str] = {}
__all__: list[str] = ["AnswerAccuracy"]
__getattr__, __dir__ = ragas_face(__name__, _NAMES, _MISSING)
