"""ragas 0.4.3's ``ragas.metrics.collections.answer_correctness`` under qa-eval (docs/ragas.md,
*Module paths*). It names ``AnswerCorrectness``.
"""

from typing import TYPE_CHECKING

from ....extras import ragas_face

if TYPE_CHECKING:
    from qa_eval.metrics.collections.answers import AnswerCorrectness

_NAMES: dict[str, tuple[str, str]] = {
    "AnswerCorrectness": ("qa_eval.metrics.collections.answers", "AnswerCorrectness")
}
_MISSING: dict[str, str] = {}
__all__: list[str] = ["AnswerCorrectness"]
__getattr__, __dir__ = ragas_face(__name__, _NAMES, _MISSING)
