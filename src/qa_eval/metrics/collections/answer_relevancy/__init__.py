"""ragas 0.4.3's ``ragas.metrics.collections.answer_relevancy`` under qa-eval (docs/ragas.md,
*Module paths*). It names ``AnswerRelevancy``.
"""

from typing import TYPE_CHECKING

from ....extras import ragas_face

if TYPE_CHECKING:
    from qa_eval.metrics.collections.rag import AnswerRelevancy

_NAMES: dict[str, tuple[str, str]] = {
    "AnswerRelevancy": ("qa_eval.metrics.collections.rag", "AnswerRelevancy")
}
_MISSING: dict[str, str] = {}
__all__: list[str] = ["AnswerRelevancy"]
__getattr__, __dir__ = ragas_face(__name__, _NAMES, _MISSING)
