"""Every public module path of ragas 0.4.3's ``ragas.llms``, ``ragas.embeddings``,
``ragas.messages`` and ``ragas.metrics.collections`` imports under ``qa_eval.`` (ragas' pages write
``from ragas.llms.base import llm_factory`` and ``from ragas.metrics.collections.tool_call_f1
import ToolCallF1``): each names the classes and functions qa-eval has for ragas' (the same
objects as the faces'), and each ragas name qa-eval does not provide is an ``ImportError`` saying
so and what to use instead, never a silent absence.

``RAGAS_0_4_3`` is the list, kept here: every module of the ragas 0.4.3 wheel under those packages
whose path has no ``_private`` part, with the names it offers (its ``__all__``, else its public
top-level names), split into (provided by qa-eval, not provided)."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from qa_eval.extras import NotInQaEval

RAGAS_0_4_3: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "ragas.embeddings": (
        ("embedding_factory",),
        (
            "BaseRagasEmbedding",
            "BaseRagasEmbeddings",
            "GoogleEmbeddings",
            "HaystackEmbeddingsWrapper",
            "HuggingFaceEmbeddings",
            "HuggingfaceEmbeddings",
            "LangchainEmbeddingsWrapper",
            "LiteLLMEmbeddings",
            "LlamaIndexEmbeddingsWrapper",
            "OpenAIEmbeddings",
            "RagasBaseEmbedding",
            "batch_texts",
            "get_optimal_batch_size",
            "validate_texts",
        ),
    ),
    "ragas.embeddings.base": (
        ("embedding_factory",),
        (
            "BaseRagasEmbedding",
            "BaseRagasEmbeddings",
            "DEFAULT_MODEL_NAME",
            "HuggingfaceEmbeddings",
            "LangchainEmbeddingsWrapper",
            "LlamaIndexEmbeddingsWrapper",
            "modern_embedding_factory",
        ),
    ),
    "ragas.embeddings.google_provider": ((), ("GoogleEmbeddings",)),
    "ragas.embeddings.haystack_wrapper": ((), ("HaystackEmbeddingsWrapper",)),
    "ragas.embeddings.huggingface_provider": ((), ("HuggingFaceEmbeddings",)),
    "ragas.embeddings.litellm_provider": ((), ("LiteLLMEmbeddings",)),
    "ragas.embeddings.openai_provider": ((), ("OpenAIEmbeddings",)),
    "ragas.embeddings.utils": (
        (),
        (
            "batch_texts",
            "get_optimal_batch_size",
            "run_async_in_current_loop",
            "run_sync_in_async",
            "safe_import",
            "validate_texts",
        ),
    ),
    "ragas.llms": (
        ("llm_factory",),
        (
            "BaseRagasLLM",
            "HaystackLLMWrapper",
            "InstructorBaseRagasLLM",
            "InstructorLLM",
            "InstructorTypeVar",
            "LangchainLLMWrapper",
            "LiteLLMStructuredLLM",
            "LlamaIndexLLMWrapper",
            "OCIGenAIWrapper",
            "oci_genai_factory",
        ),
    ),
    "ragas.llms.adapters": ((), ("ADAPTERS", "auto_detect_adapter", "get_adapter")),
    "ragas.llms.adapters.base": ((), ("StructuredOutputAdapter",)),
    "ragas.llms.adapters.instructor": ((), ("InstructorAdapter",)),
    "ragas.llms.adapters.litellm": ((), ("LiteLLMAdapter",)),
    "ragas.llms.base": (
        ("InstructorBaseRagasLLM", "InstructorLLM", "llm_factory"),
        (
            "BaseRagasLLM",
            "InstructorModelArgs",
            "InstructorTypeVar",
            "LangchainLLMWrapper",
            "LlamaIndexLLMWrapper",
            "MULTIPLE_COMPLETION_SUPPORTED",
            "is_multiple_completion_supported",
        ),
    ),
    "ragas.llms.haystack_wrapper": ((), ("HaystackLLMWrapper",)),
    "ragas.llms.litellm_llm": ((), ("LiteLLMStructuredLLM",)),
    "ragas.llms.oci_genai_wrapper": (
        (),
        ("GenerativeAiClient", "OCIGenAIWrapper", "oci", "oci_genai_factory"),
    ),
    "ragas.messages": (("AIMessage", "HumanMessage", "Message", "ToolCall", "ToolMessage"), ()),
    "ragas.metrics.collections": (
        (
            "AgentGoalAccuracy",
            "AgentGoalAccuracyWithReference",
            "AgentGoalAccuracyWithoutReference",
            "AnswerAccuracy",
            "AnswerCorrectness",
            "AnswerRelevancy",
            "BaseMetric",
            "BleuScore",
            "CHRFScore",
            "ContextEntityRecall",
            "ContextPrecision",
            "ContextPrecisionWithReference",
            "ContextPrecisionWithoutReference",
            "ContextRecall",
            "ContextRelevance",
            "ContextUtilization",
            "DataCompyScore",
            "DistanceMeasure",
            "DomainSpecificRubrics",
            "ExactMatch",
            "FactualCorrectness",
            "Faithfulness",
            "InstanceSpecificRubrics",
            "NoiseSensitivity",
            "NonLLMStringSimilarity",
            "QuotedSpansAlignment",
            "ResponseGroundedness",
            "RougeScore",
            "RubricsScoreWithReference",
            "RubricsScoreWithoutReference",
            "SQLSemanticEquivalence",
            "SemanticSimilarity",
            "StringPresence",
            "SummaryScore",
            "ToolCallAccuracy",
            "ToolCallF1",
            "TopicAdherence",
        ),
        ("MultiModalFaithfulness", "MultiModalRelevance"),
    ),
    "ragas.metrics.collections.agent_goal_accuracy": (
        (
            "AgentGoalAccuracy",
            "AgentGoalAccuracyWithReference",
            "AgentGoalAccuracyWithoutReference",
        ),
        (),
    ),
    "ragas.metrics.collections.agent_goal_accuracy.metric": (
        (
            "AgentGoalAccuracy",
            "AgentGoalAccuracyWithReference",
            "AgentGoalAccuracyWithoutReference",
        ),
        (),
    ),
    "ragas.metrics.collections.agent_goal_accuracy.util": (
        (),
        (
            "CompareOutcomeInput",
            "CompareOutcomeOutput",
            "CompareOutcomePrompt",
            "InferGoalOutcomePrompt",
            "WorkflowInput",
            "WorkflowOutput",
        ),
    ),
    "ragas.metrics.collections.answer_accuracy": (("AnswerAccuracy",), ()),
    "ragas.metrics.collections.answer_accuracy.metric": (("AnswerAccuracy",), ()),
    "ragas.metrics.collections.answer_accuracy.util": (
        (),
        (
            "AnswerAccuracyInput",
            "AnswerAccuracyJudge1Prompt",
            "AnswerAccuracyJudge2Prompt",
            "AnswerAccuracyOutput",
        ),
    ),
    "ragas.metrics.collections.answer_correctness": (("AnswerCorrectness",), ()),
    "ragas.metrics.collections.answer_correctness.metric": (("AnswerCorrectness",), ()),
    "ragas.metrics.collections.answer_correctness.util": (
        (),
        (
            "ClassificationWithReason",
            "CorrectnessClassifierInput",
            "CorrectnessClassifierPrompt",
            "StatementGeneratorInput",
            "StatementGeneratorOutput",
            "StatementGeneratorPrompt",
            "StatementsWithReason",
        ),
    ),
    "ragas.metrics.collections.answer_relevancy": (("AnswerRelevancy",), ()),
    "ragas.metrics.collections.answer_relevancy.metric": (("AnswerRelevancy",), ()),
    "ragas.metrics.collections.answer_relevancy.util": (
        (),
        ("AnswerRelevanceInput", "AnswerRelevanceOutput", "AnswerRelevancePrompt"),
    ),
    "ragas.metrics.collections.base": (("BaseMetric",), ()),
    "ragas.metrics.collections.chrf_score": (("CHRFScore",), ()),
    "ragas.metrics.collections.chrf_score.metric": (("CHRFScore",), ()),
    "ragas.metrics.collections.context_entity_recall": (("ContextEntityRecall",), ()),
    "ragas.metrics.collections.context_entity_recall.metric": (("ContextEntityRecall",), ()),
    "ragas.metrics.collections.context_entity_recall.util": (
        (),
        ("EntitiesList", "ExtractEntitiesInput", "ExtractEntitiesPrompt"),
    ),
    "ragas.metrics.collections.context_precision": (
        (
            "ContextPrecision",
            "ContextPrecisionWithReference",
            "ContextPrecisionWithoutReference",
            "ContextUtilization",
        ),
        (),
    ),
    "ragas.metrics.collections.context_precision.metric": (
        (
            "ContextPrecision",
            "ContextPrecisionWithReference",
            "ContextPrecisionWithoutReference",
            "ContextUtilization",
        ),
        (),
    ),
    "ragas.metrics.collections.context_precision.util": (
        (),
        ("ContextPrecisionInput", "ContextPrecisionOutput", "ContextPrecisionPrompt"),
    ),
    "ragas.metrics.collections.context_recall": (("ContextRecall",), ()),
    "ragas.metrics.collections.context_recall.metric": (("ContextRecall",), ()),
    "ragas.metrics.collections.context_recall.util": (
        (),
        (
            "ContextRecallClassification",
            "ContextRecallInput",
            "ContextRecallOutput",
            "ContextRecallPrompt",
        ),
    ),
    "ragas.metrics.collections.context_relevance": (("ContextRelevance",), ()),
    "ragas.metrics.collections.context_relevance.metric": (("ContextRelevance",), ()),
    "ragas.metrics.collections.context_relevance.util": (
        (),
        (
            "ContextRelevanceInput",
            "ContextRelevanceJudge1Prompt",
            "ContextRelevanceJudge2Prompt",
            "ContextRelevanceOutput",
        ),
    ),
    "ragas.metrics.collections.datacompy_score": (("DataCompyScore",), ()),
    "ragas.metrics.collections.datacompy_score.metric": (("DataCompyScore",), ()),
    "ragas.metrics.collections.domain_specific_rubrics": (
        ("DomainSpecificRubrics", "RubricsScoreWithReference", "RubricsScoreWithoutReference"),
        (),
    ),
    "ragas.metrics.collections.domain_specific_rubrics.metric": (
        ("DomainSpecificRubrics", "RubricsScoreWithReference", "RubricsScoreWithoutReference"),
        (),
    ),
    "ragas.metrics.collections.domain_specific_rubrics.util": (
        ("DEFAULT_REFERENCE_FREE_RUBRICS", "DEFAULT_WITH_REFERENCE_RUBRICS"),
        ("RubricScoreInput", "RubricScoreOutput", "RubricScorePrompt", "format_rubrics"),
    ),
    "ragas.metrics.collections.example_metric": ((), ("ExampleMetric",)),
    "ragas.metrics.collections.factual_correctness": (("FactualCorrectness",), ()),
    "ragas.metrics.collections.factual_correctness.metric": (("FactualCorrectness",), ()),
    "ragas.metrics.collections.factual_correctness.util": (
        (),
        (
            "ClaimDecompositionInput",
            "ClaimDecompositionOutput",
            "ClaimDecompositionPrompt",
            "NLIStatementInput",
            "NLIStatementOutput",
            "NLIStatementPrompt",
            "StatementFaithfulnessAnswer",
        ),
    ),
    "ragas.metrics.collections.faithfulness": (("Faithfulness",), ()),
    "ragas.metrics.collections.faithfulness.metric": (("Faithfulness",), ()),
    "ragas.metrics.collections.faithfulness.util": (
        (),
        (
            "NLIStatementInput",
            "NLIStatementOutput",
            "NLIStatementPrompt",
            "StatementFaithfulnessAnswer",
            "StatementGeneratorInput",
            "StatementGeneratorOutput",
            "StatementGeneratorPrompt",
        ),
    ),
    "ragas.metrics.collections.instance_specific_rubrics": (("InstanceSpecificRubrics",), ()),
    "ragas.metrics.collections.instance_specific_rubrics.metric": (
        ("InstanceSpecificRubrics",),
        (),
    ),
    "ragas.metrics.collections.instance_specific_rubrics.util": (
        (),
        ("InstanceRubricScoreInput", "InstanceRubricScoreOutput", "InstanceRubricScorePrompt"),
    ),
    "ragas.metrics.collections.multi_modal_faithfulness": ((), ("MultiModalFaithfulness",)),
    "ragas.metrics.collections.multi_modal_faithfulness.metric": ((), ("MultiModalFaithfulness",)),
    "ragas.metrics.collections.multi_modal_faithfulness.util": (
        (),
        (
            "ALLOWED_URL_SCHEMES",
            "COMMON_IMAGE_EXTENSIONS",
            "DATA_URI_REGEX",
            "MAX_DOWNLOAD_SIZE_BYTES",
            "MULTIMODAL_FAITHFULNESS_INSTRUCTION",
            "MultiModalFaithfulnessInput",
            "MultiModalFaithfulnessOutput",
            "REQUESTS_TIMEOUT_SECONDS",
            "build_multimodal_message_content",
            "is_image_path_or_url",
            "process_image_to_base64",
        ),
    ),
    "ragas.metrics.collections.multi_modal_relevance": ((), ("MultiModalRelevance",)),
    "ragas.metrics.collections.multi_modal_relevance.metric": ((), ("MultiModalRelevance",)),
    "ragas.metrics.collections.multi_modal_relevance.util": (
        (),
        (
            "MULTIMODAL_RELEVANCE_INSTRUCTION",
            "MultiModalRelevanceInput",
            "MultiModalRelevanceOutput",
            "build_multimodal_relevance_message_content",
            "is_image_path_or_url",
            "process_image_to_base64",
        ),
    ),
    "ragas.metrics.collections.noise_sensitivity": (("NoiseSensitivity",), ()),
    "ragas.metrics.collections.noise_sensitivity.metric": (("NoiseSensitivity",), ()),
    "ragas.metrics.collections.noise_sensitivity.util": (
        (),
        (
            "StatementFaithfulnessAnswer",
            "StatementFaithfulnessInput",
            "StatementFaithfulnessOutput",
            "StatementFaithfulnessPrompt",
            "StatementGeneratorInput",
            "StatementGeneratorOutput",
            "StatementGeneratorPrompt",
        ),
    ),
    "ragas.metrics.collections.quoted_spans": (("QuotedSpansAlignment",), ()),
    "ragas.metrics.collections.quoted_spans.metric": (("QuotedSpansAlignment",), ()),
    "ragas.metrics.collections.quoted_spans.util": (
        (),
        ("QUOTE_RE", "count_matched_spans", "extract_quoted_spans", "normalize_text"),
    ),
    "ragas.metrics.collections.response_groundedness": (("ResponseGroundedness",), ()),
    "ragas.metrics.collections.response_groundedness.metric": (("ResponseGroundedness",), ()),
    "ragas.metrics.collections.response_groundedness.util": (
        (),
        (
            "ResponseGroundednessInput",
            "ResponseGroundednessJudge1Prompt",
            "ResponseGroundednessJudge2Prompt",
            "ResponseGroundednessOutput",
        ),
    ),
    "ragas.metrics.collections.sql_semantic_equivalence": (("SQLSemanticEquivalence",), ()),
    "ragas.metrics.collections.sql_semantic_equivalence.metric": (("SQLSemanticEquivalence",), ()),
    "ragas.metrics.collections.sql_semantic_equivalence.util": (
        (),
        ("SQLEquivalenceInput", "SQLEquivalenceOutput", "SQLEquivalencePrompt"),
    ),
    "ragas.metrics.collections.summary_score": (("SummaryScore",), ()),
    "ragas.metrics.collections.summary_score.metric": (("SummaryScore",), ()),
    "ragas.metrics.collections.summary_score.util": (
        (),
        (
            "AnswersGenerated",
            "ExtractKeyphrasesPrompt",
            "ExtractedKeyphrases",
            "ExtractedKeyphrasesInput",
            "GenerateAnswersInput",
            "GenerateAnswersPrompt",
            "GenerateQuestionsInput",
            "GenerateQuestionsPrompt",
            "QuestionsGenerated",
        ),
    ),
    "ragas.metrics.collections.tool_call_accuracy": (("ToolCallAccuracy",), ()),
    "ragas.metrics.collections.tool_call_accuracy.metric": (("ToolCallAccuracy",), ()),
    "ragas.metrics.collections.tool_call_accuracy.util": (
        (),
        ("exact_match_args", "sorted_key_for_tool_call"),
    ),
    "ragas.metrics.collections.tool_call_f1": (("ToolCallF1",), ()),
    "ragas.metrics.collections.tool_call_f1.metric": (("ToolCallF1",), ()),
    "ragas.metrics.collections.tool_call_f1.util": (
        (),
        ("calculate_f1_score", "make_hashable", "tool_call_to_hashable"),
    ),
    "ragas.metrics.collections.topic_adherence": (("TopicAdherence",), ()),
    "ragas.metrics.collections.topic_adherence.metric": (("TopicAdherence",), ()),
    "ragas.metrics.collections.topic_adherence.util": (
        (),
        (
            "TopicClassificationInput",
            "TopicClassificationOutput",
            "TopicClassificationPrompt",
            "TopicExtractionInput",
            "TopicExtractionOutput",
            "TopicExtractionPrompt",
            "TopicRefusedInput",
            "TopicRefusedOutput",
            "TopicRefusedPrompt",
        ),
    ),
}
FACES = ("qa_eval.llms", "qa_eval.embeddings", "qa_eval.messages", "qa_eval.metrics.collections")


def _module(path: str) -> Any:
    return importlib.import_module("qa_eval." + path.removeprefix("ragas."))


@pytest.mark.parametrize("path", sorted(RAGAS_0_4_3))
def test_every_ragas_module_path_imports_under_qa_eval(path: str) -> None:
    module = _module(path)
    provided, missing = RAGAS_0_4_3[path]
    for name in provided:
        value = getattr(module, name)
        assert value is not None
        for face in FACES:  # the same object the face gives, where the face names it
            same = getattr(importlib.import_module(face), name, None)
            if same is not None and not isinstance(same, type(importlib)):
                assert value is same, (path, name, face)
    if module.__name__ in FACES:
        return  # the faces name what qa-eval offers; their other ragas names are listed below
    for name in missing:
        with pytest.raises(ImportError, match=f"qa-eval does not provide ragas' {name} "):
            getattr(module, name)
        with pytest.raises(NotInQaEval):
            exec(f"from {module.__name__} import {name}", {})
    if (module.__doc__ or "").startswith("ragas 0.4.3's"):  # a module of ragas' path only
        assert sorted(module.__all__) == sorted(provided)


def test_the_documented_imports_work_as_ragas_writes_them() -> None:
    from qa_eval.llms import llm_factory as from_face
    from qa_eval.llms.base import llm_factory
    from qa_eval.metrics.collections import ToolCallF1 as F1
    from qa_eval.metrics.collections.domain_specific_rubrics import DomainSpecificRubrics
    from qa_eval.metrics.collections.instance_specific_rubrics import InstanceSpecificRubrics
    from qa_eval.metrics.collections.tool_call_f1 import ToolCallF1
    from qa_eval.metrics.collections.tool_call_f1.metric import ToolCallF1 as Deep

    assert llm_factory is from_face and ToolCallF1 is F1 is Deep
    assert DomainSpecificRubrics.__name__ == "DomainSpecificRubrics"
    assert InstanceSpecificRubrics.__name__ == "InstanceSpecificRubrics"


def test_the_list_has_every_ragas_package() -> None:
    """The list covers the four packages and every metric package of the collections."""
    metrics = {p.split(".")[3] for p in RAGAS_0_4_3 if p.startswith("ragas.metrics.collections.")}
    assert {"tool_call_f1", "domain_specific_rubrics", "instance_specific_rubrics"} <= metrics
    assert len(metrics) == 26  # 24 metric packages, base and example_metric
    assert {"ragas.llms.base", "ragas.embeddings.base", "ragas.messages"} <= set(RAGAS_0_4_3)
