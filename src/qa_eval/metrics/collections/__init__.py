"""ragas 0.4.3's ``ragas.metrics.collections`` for qa-eval: per-sample metric objects built with a
judge from ``qa_eval.llms.llm_factory`` (and embeddings from ``qa_eval.embeddings``), scored with
``await metric.ascore(...)``, ``metric.score(...)``, ``abatch_score`` / ``batch_score``, and
planned with ``plan(rows)`` (``base``). Results are :class:`MetricResult` (``result``).

Here: Faithfulness, AnswerRelevancy, ContextPrecision, ContextPrecisionWithReference,
ContextPrecisionWithoutReference, ContextUtilization, ContextRecall and SemanticSimilarity, thin
faces over the engines of a full run (``rag``); AnswerAccuracy, AnswerCorrectness,
FactualCorrectness, ResponseGroundedness and SummaryScore over their own engines (``answer``);
:class:`DeterministicMetric` wraps a pure function.
The names load when first used.
"""

from typing import TYPE_CHECKING

from ...extras import lazy_face

if TYPE_CHECKING:
    from .answer import (
        AnswerAccuracy,
        AnswerCorrectness,
        AnswerDetails,
        FactualCorrectness,
        ResponseGroundedness,
        SummaryScore,
    )
    from .base import BaseMetric, CallPlan, DeterministicMetric
    from .rag import (
        AnswerRelevancy,
        ContextPrecision,
        ContextPrecisionWithoutReference,
        ContextPrecisionWithReference,
        ContextRecall,
        ContextUtilization,
        Faithfulness,
        SemanticSimilarity,
    )
    from .result import ChunkVerdict, Details, MetricResult, ResultUsage, StatementVerdict

_NAMES = {
    "AnswerAccuracy": "answer",
    "AnswerCorrectness": "answer",
    "AnswerDetails": "answer",
    "FactualCorrectness": "answer",
    "ResponseGroundedness": "answer",
    "SummaryScore": "answer",
    "AnswerRelevancy": "rag",
    "BaseMetric": "base",
    "CallPlan": "base",
    "ChunkVerdict": "result",
    "ContextPrecision": "rag",
    "ContextPrecisionWithReference": "rag",
    "ContextPrecisionWithoutReference": "rag",
    "ContextRecall": "rag",
    "ContextUtilization": "rag",
    "Details": "result",
    "DeterministicMetric": "base",
    "Faithfulness": "rag",
    "MetricResult": "result",
    "ResultUsage": "result",
    "SemanticSimilarity": "rag",
    "StatementVerdict": "result",
}
__all__ = [
    "AnswerAccuracy",
    "AnswerCorrectness",
    "AnswerDetails",
    "AnswerRelevancy",
    "BaseMetric",
    "CallPlan",
    "ChunkVerdict",
    "ContextPrecision",
    "ContextPrecisionWithReference",
    "ContextPrecisionWithoutReference",
    "ContextRecall",
    "ContextUtilization",
    "Details",
    "DeterministicMetric",
    "FactualCorrectness",
    "Faithfulness",
    "MetricResult",
    "ResponseGroundedness",
    "ResultUsage",
    "SemanticSimilarity",
    "StatementVerdict",
    "SummaryScore",
]
__getattr__, __dir__ = lazy_face(__name__, _NAMES)
