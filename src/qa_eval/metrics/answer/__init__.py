"""The answer against the question and the reference answer: claim-count correctness
(``correctness``), relevance by generated questions (``relevance``, ragas ``AnswerRelevancy``) or
by a rubric level the judge picks (``direct_assessment``), embedding similarity (``similarity``),
CORRECT / WRONG / DON'T KNOW classes (``classify``) and GEval factual accuracy (``geval``)."""

from typing import TYPE_CHECKING

from ...extras import lazy_face

if TYPE_CHECKING:
    from .classify import classify_answer, count_classes
    from .correctness import answer_correctness
    from .direct_assessment import answer_relevance_rubric
    from .geval import factual_accuracy
    from .relevance import answer_relevance
    from .similarity import semantic_similarity

_NAMES = {
    "answer_correctness": "correctness",
    "answer_relevance": "relevance",
    "answer_relevance_rubric": "direct_assessment",
    "classify_answer": "classify",
    "count_classes": "classify",
    "factual_accuracy": "geval",
    "semantic_similarity": "similarity",
}
__all__ = [
    "answer_correctness",
    "answer_relevance",
    "answer_relevance_rubric",
    "classify_answer",
    "count_classes",
    "factual_accuracy",
    "semantic_similarity",
]
__getattr__, __dir__ = lazy_face(__name__, _NAMES)
