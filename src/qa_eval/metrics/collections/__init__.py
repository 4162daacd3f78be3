"""ragas 0.4.3's ``ragas.metrics.collections`` for qa-eval: per-sample metric objects built with a
judge from ``qa_eval.llms.llm_factory`` (and embeddings from ``qa_eval.embeddings``), scored with
``await metric.ascore(...)``, ``metric.score(...)``, ``abatch_score`` / ``batch_score``, and
planned with ``plan(rows)`` (``base``). Results are :class:`MetricResult` (``result``).

Here: Faithfulness, AnswerRelevancy, ContextPrecision, ContextPrecisionWithReference,
ContextPrecisionWithoutReference, ContextUtilization, ContextRecall and SemanticSimilarity, thin
faces over the engines of a full run (``rag``); :class:`DeterministicMetric` wraps a pure function.
BleuScore, CHRFScore, RougeScore, ExactMatch, StringPresence, NonLLMStringSimilarity (with
DistanceMeasure), QuotedSpansAlignment, ToolCallAccuracy, ToolCallF1 and DataCompyScore wrap the
deterministic engines (``deterministic``).
``ascore_rows`` / ``score_rows`` score several metrics over many rows as one run (``evaluate``).
faces over the engines of a full run (``rag``); ContextEntityRecall, ContextRelevance,
NoiseSensitivity and SQLSemanticEquivalence over new engines (``contexts``);
:class:`DeterministicMetric` wraps a pure function.
faces over the engines of a full run (``rag``); AgentGoalAccuracy(WithReference,
WithoutReference), TopicAdherence, DomainSpecificRubrics, RubricsScoreWith(out)Reference and
InstanceSpecificRubrics (``agents``); :class:`DeterministicMetric` wraps a pure function.
faces over the engines of a full run (``rag``); AnswerAccuracy, AnswerCorrectness,
FactualCorrectness, ResponseGroundedness and SummaryScore over their own engines (``answers``);
:class:`DeterministicMetric` wraps a pure function.
The names load when first used.
"""

from typing import TYPE_CHECKING

from ...extras import lazy_face

if TYPE_CHECKING:
    from .agents import (
        AgentGoalAccuracy,
        AgentGoalAccuracyWithoutReference,
        AgentGoalAccuracyWithReference,
        DomainSpecificRubrics,
        InstanceSpecificRubrics,
        RubricsScoreWithoutReference,
        RubricsScoreWithReference,
        TopicAdherence,
    )
    from .answers import (
        AnswerAccuracy,
        AnswerCorrectness,
        AnswerDetails,
        FactualCorrectness,
        ResponseGroundedness,
        SummaryScore,
    )
    from .base import BaseMetric, CallPlan, DeterministicMetric
    from .contexts import (
        ContextDetails,
        ContextEntityRecall,
        ContextRelevance,
        NoiseSensitivity,
        SQLSemanticEquivalence,
    )
    from .deterministic import (
        BleuScore,
        CHRFScore,
        DataCompyScore,
        DistanceMeasure,
        ExactMatch,
        NonLLMStringSimilarity,
        QuotedSpansAlignment,
        RougeScore,
        StringPresence,
        ToolCallAccuracy,
        ToolCallF1,
    )
    from .evaluate import RowResults, ascore_rows, score_rows
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
    "AgentGoalAccuracy": "agents",
    "AgentGoalAccuracyWithReference": "agents",
    "AgentGoalAccuracyWithoutReference": "agents",
    "DomainSpecificRubrics": "agents",
    "InstanceSpecificRubrics": "agents",
    "RubricsScoreWithReference": "agents",
    "RubricsScoreWithoutReference": "agents",
    "TopicAdherence": "agents",
    "AnswerAccuracy": "answers",
    "AnswerCorrectness": "answers",
    "AnswerDetails": "answers",
    "FactualCorrectness": "answers",
    "ResponseGroundedness": "answers",
    "SummaryScore": "answers",
    "AnswerRelevancy": "rag",
    "BaseMetric": "base",
    "CallPlan": "base",
    "ChunkVerdict": "result",
    "ContextDetails": "contexts",
    "ContextEntityRecall": "contexts",
    "ContextRelevance": "contexts",
    "NoiseSensitivity": "contexts",
    "SQLSemanticEquivalence": "contexts",
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
    "BleuScore": "deterministic",
    "CHRFScore": "deterministic",
    "DataCompyScore": "deterministic",
    "DistanceMeasure": "deterministic",
    "ExactMatch": "deterministic",
    "NonLLMStringSimilarity": "deterministic",
    "QuotedSpansAlignment": "deterministic",
    "RougeScore": "deterministic",
    "StringPresence": "deterministic",
    "ToolCallAccuracy": "deterministic",
    "ToolCallF1": "deterministic",
    "RowResults": "evaluate",
    "ascore_rows": "evaluate",
    "score_rows": "evaluate",
}
__all__ = [
    "AgentGoalAccuracy",
    "AgentGoalAccuracyWithReference",
    "AgentGoalAccuracyWithoutReference",
    "AnswerAccuracy",
    "AnswerCorrectness",
    "AnswerDetails",
    "AnswerRelevancy",
    "BaseMetric",
    "BleuScore",
    "CHRFScore",
    "CallPlan",
    "ChunkVerdict",
    "ContextDetails",
    "ContextEntityRecall",
    "ContextPrecision",
    "ContextPrecisionWithReference",
    "ContextPrecisionWithoutReference",
    "ContextRecall",
    "ContextRelevance",
    "ContextUtilization",
    "DataCompyScore",
    "Details",
    "DeterministicMetric",
    "DistanceMeasure",
    "DomainSpecificRubrics",
    "ExactMatch",
    "FactualCorrectness",
    "Faithfulness",
    "InstanceSpecificRubrics",
    "MetricResult",
    "NoiseSensitivity",
    "NonLLMStringSimilarity",
    "QuotedSpansAlignment",
    "ResponseGroundedness",
    "ResultUsage",
    "RougeScore",
    "RowResults",
    "RubricsScoreWithReference",
    "RubricsScoreWithoutReference",
    "SQLSemanticEquivalence",
    "SemanticSimilarity",
    "StatementVerdict",
    "StringPresence",
    "SummaryScore",
    "ToolCallAccuracy",
    "ToolCallF1",
    "TopicAdherence",
    "ascore_rows",
    "score_rows",
]
__getattr__, __dir__ = lazy_face(__name__, _NAMES)
