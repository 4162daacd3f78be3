"""The metric registry: ``METRICS``, the one place that says what a metric is, and ``RANKING``,
the ranking metrics of retrieval ids (a data table).

For each family (a config switch, or a family of keys that is always written such as
``steps_score`` and the token counts) ``METRICS`` says what it needs, the result keys it writes
with their direction and scale, whether it is on by default, its group, its options and its doc
page. Everything else derives from it (``vocabulary.lookup``): the config switches and groups
(``config.py``), the ``--enable`` / ``--disable`` choices, the aggregated keys, the direction used
by ``compare`` and the report, the keys a custom metric may not use, ``qa-eval metrics``. A family
with a ``score`` entry point (``"module:function"``) is scheduled by ``run.score`` without any
other change (see docs/adding-a-metric.md).
"""

from __future__ import annotations

from dataclasses import replace

from .model import Direction, Key, Metric, Need, Option, Scale


def _score(name: str, headline: int = 0) -> Key:
    return Key(name, "higher", "0-1", aggregate=True, headline=headline)


def _cost(name: str, aggregate: bool = False) -> Key:
    # graphrag-eval 6.6.1 writes no cost at all
    return Key(f"{name}_cost", "lower", "usd", aggregate=aggregate, own=True)


def _text(*names: str, own: bool = False) -> tuple[Key, ...]:
    return tuple(Key(n, own=own) for n in names)


def _count(name: str) -> Key:
    return Key(name, "none", "count")


def _retrieval(prefix: str) -> tuple[Key, ...]:
    keys: list[Key] = []
    both = (f"{prefix}_recall_error", f"{prefix}_precision_error")
    for part in ("recall", "precision", "f1"):
        key = _score(f"{prefix}_{part}")
        keys += [replace(key, errors=both) if part == "f1" else key, _cost(f"{prefix}_{part}")]
        if part != "f1":
            keys.append(Key(f"{prefix}_{part}_error"))
    return (*keys, Key(f"{prefix}_recall_reason", own=True))


_GRAPHRAG = ("graphrag",)


def _ragas_text(name: str, summary: str) -> Metric:
    """A string metric of ragas (``metrics/textual/strings.py``) of the answer against the reference
    answer: one score key and its error, opt-in, in the ``ragas-text`` group, no judge."""
    return Metric(
        name, summary, ("answer", "reference_answer"), (_score(name), Key(f"{name}_error")),
        "docs/metrics/ragas-text.md", default=False, groups=("ragas-text",), own=True,
        score=f"qa_eval.metrics.textual.strings:{name}_entry", calls=0,
    )  # fmt: skip


def _ragas_llm(
    name: str,
    summary: str,
    needs: tuple[Need, ...],
    calls: int,
    direction: Direction = "higher",
    options: tuple[Option, ...] = (),
    groups: tuple[str, ...] = ("ragas",),
    scale: Scale = "0-1",
) -> Metric:
    """A metric of ragas (``metrics/ragas/entries.py``, the function its collections class uses) on
    a question's inputs: its value, cost, reason and error, opt-in, in the ``ragas`` group (or
    ``groups``); a judge unless ``calls`` is 0; ragas' constructor arguments as ``options``."""
    value = Key(name, direction, scale, aggregate=True)
    judge: tuple[Need, ...] = ("judge",) if calls else ()
    cost = (_cost(name),) if calls else ()
    return Metric(
        name, summary, (*needs, *judge),
        (value, *cost, *_text(f"{name}_reason", f"{name}_error")),
        "docs/ragas.md", default=False, groups=groups, own=True, options=options,
        score=f"qa_eval.metrics.ragas.entries:{name}_entry", calls=calls,
    )  # fmt: skip


_BUDGET = Option(
    "max_prompt_tokens", "integer", "prompt budget in tokens (default: from the judge model)"
)
"""The context budget of the judged agent metrics (``metrics.agents.judge_inputs``)."""
_RETRIES = Option("max_retries", "integer", "asks per rater (ragas' max_retries, default 5)")
_BETA = Option("beta", "beta", "F-beta's beta, > 0 (default 1)")


# fmt: off
METRICS: dict[str, Metric] = {
    "answer_correctness": Metric(
        "answer_correctness", "claims of the answer matched against the reference answer",
        ("question", "answer", "reference_answer", "judge"),
        (
            _score("answer_recall", 2), _score("answer_precision", 3), _score("answer_f1", 4),
            _count("answer_reference_claims_count"), _count("answer_actual_claims_count"),
            _count("answer_matching_claims_count"), _cost("answer_correctness"),
            *_text("answer_correctness_reason", "answer_correctness_error"),
            Key("answer_eval_error", own=True),
        ),
        "docs/metrics/answer.md",
        options=(Option("prompt", "prompt", "a prompt text or a .md/.txt file"),),
        score="qa_eval.metrics.answer.correctness:score", aliases=("answer_eval_error",),
    ),
    "answer_relevance": Metric(
        "answer_relevance", "questions generated from the answer, compared with the question",
        ("question", "answer", "judge", "embedder"),
        (
            Key("answer_relevance", "higher", "cosine", aggregate=True, headline=5),
            _cost("answer_relevance", aggregate=True),
            Key("answer_relevance_error"), Key("answer_relevance_questions", own=True),
            replace(_score("answer_relevance_rubric"), own=True), _cost("answer_relevance_rubric"),
            *_text("answer_relevance_rubric_reason", "answer_relevance_rubric_error", own=True),
        ),
        "docs/metrics/answer.md",
        options=(Option("rubric_fallback", "flag", "rubric score when no question is generated"),),
        score="qa_eval.metrics.answer.relevance:score",
    ),
    "retrieval_answer": Metric(
        "retrieval_answer", "chunks of each retrieval step against the reference answer",
        ("question", "reference_answer", "steps", "judge"), _retrieval("retrieval_answer"),
        "docs/metrics/retrieval-llm.md", step="retrieval",
    ),
    "retrieval_context": Metric(
        "retrieval_context", "chunks of each retrieval step against the reference step's chunks",
        ("question", "steps", "judge"), _retrieval("retrieval_context"),
        "docs/metrics/retrieval-llm.md", step="retrieval",
    ),
    "llm_cost": Metric(
        "llm_cost", "the judge's cost of the question, summed over its metrics", ("judge",),
        (Key("llm_cost", "lower", "usd", aggregate=True),), "docs/judge.md", switch=False, own=True,
    ),
    "faithfulness": Metric(
        "faithfulness", "share of the answer's statements the contexts support",
        ("question", "answer", "contexts", "judge"),
        (
            _score("faithfulness", 6), _cost("faithfulness"),
            *_text("faithfulness_reason", "faithfulness_error", "faithfulness_statements"),
        ),
        "docs/metrics/graphrag.md", default=False, groups=_GRAPHRAG, own=True,
        score="qa_eval.metrics.retrieval.faithfulness:score", calls=2,
    ),
    "context_precision": Metric(
        "context_precision", "share of the retrieved contexts that are useful (and ragas AP)",
        ("question", "contexts", "judge"),
        (
            _score("context_precision", 7), _score("context_precision_ap"),
            _cost("context_precision"),
            *_text("context_precision_verdicts", "context_precision_basis",
                   "context_precision_reason", "context_precision_error"),
        ),
        "docs/metrics/graphrag.md", default=False, groups=_GRAPHRAG, own=True,
        score="qa_eval.metrics.retrieval.flat_context:context_precision_score",
        options=(Option("combined", "flag", "one judge call with context_recall if both run"),),
    ),
    "context_recall": Metric(
        "context_recall", "share of the reference answer's statements the contexts support",
        ("question", "reference_answer", "contexts", "judge"),
        (
            _score("context_recall", 8), _cost("context_recall"),
            *_text("context_recall_statements", "context_recall_reason", "context_recall_error"),
        ),
        "docs/metrics/graphrag.md", default=False, groups=_GRAPHRAG, own=True,
        score="qa_eval.metrics.retrieval.flat_context:context_recall_score",
        options=(Option("combined", "flag", "one judge call with context_precision if both run"),),
    ),
    "ragas_score": Metric(
        "ragas_score", "weighted harmonic mean of faithfulness, context precision and recall, "
        "answer relevance", ("judge",),
        (
            _score("ragas_score", 9),
            *_text("ragas_score_components", "ragas_score_reason", "ragas_score_error"),
        ),
        "docs/metrics/graphrag.md", default=False, groups=_GRAPHRAG, own=True,
        options=(Option("weights", "ragas_weights", "weight per component"),),
        score="qa_eval.metrics.retrieval.composite:score", derived=True, calls=0,
    ),
    "factual_accuracy": Metric(
        "factual_accuracy", "G-Eval correctness, completeness, consistency and a letter grade",
        ("question", "answer", "reference_answer", "judge"),
        (
            _score("factual_accuracy", 10), _score("factual_accuracy_correctness"),
            _score("factual_accuracy_completeness"), _score("factual_accuracy_consistency"),
            Key("factual_accuracy_grade", scale="label", labels=("A", "B", "C", "D", "E")),
            _cost("factual_accuracy"),
            *_text("factual_accuracy_error", "factual_accuracy_correctness_reason",
                   "factual_accuracy_completeness_reason", "factual_accuracy_consistency_reason"),
        ),
        "docs/metrics/graphrag.md", default=False, groups=_GRAPHRAG, own=True,
        options=(
            Option("weights", "criteria_weights", "correctness, completeness, consistency"),
            Option("cutoffs", "cutoffs", "grade -> cutoff on 0-100"),
        ),
        score="qa_eval.metrics.answer.geval:score",
    ),
    "semantic_similarity": Metric(
        "semantic_similarity", "cosine of the answer's and the reference's embeddings",
        ("answer", "reference_answer", "embedder"),
        (
            _score("semantic_similarity", 11), _cost("semantic_similarity"),
            Key("semantic_similarity_error"),
        ),
        "docs/metrics/graphrag.md", default=False, groups=_GRAPHRAG, own=True,
        score="qa_eval.metrics.answer.similarity:score", calls=0,
    ),
    "answer_class": Metric(
        "answer_class", "CORRECT, WRONG or DON'T KNOW", ("question", "answer", "judge"),
        (
            Key("answer_class", scale="label", labels=("CORRECT", "WRONG", "DON'T KNOW")),
            _cost("answer_class"),
            *_text("answer_class_reason", "answer_class_phrase", "answer_class_error"),
        ),
        "docs/metrics/graphrag.md", default=False, groups=_GRAPHRAG, own=True,
        options=(Option("phrases", "phrases", "uncertainty phrases that mean DON'T KNOW"),),
        score="qa_eval.metrics.answer.classify:score",
    ),
    "bertscore": Metric(
        "bertscore", "BERTScore precision, recall and F1 (needs PyTorch)",
        ("answer", "reference_answer"),
        (
            _score("bertscore_precision"), _score("bertscore_recall"),
            _score("bertscore_f1", 12),
            *_text("bertscore_model", "bertscore_layer", "bertscore_error"),
        ),
        "docs/metrics/bertscore.md", default=False, own=True,
        options=(Option("model", "str", "model name"), Option("layer", "layer", "layer")),
        score="qa_eval.metrics.textual.bertscore:score", calls=0,
    ),
    "bleu_score": _ragas_text(
        "bleu_score", "ragas' BLEU of the answer against the reference answer (sacrebleu)"
    ),
    "chrf_score": _ragas_text(
        "chrf_score", "ragas' chrF of the answer against the reference answer (sacrebleu)"
    ),
    "rouge_score": _ragas_text(
        "rouge_score", "ragas' ROUGE-L F1 of the answer against the reference (rouge-score)"
    ),
    "exact_match": _ragas_text(
        "exact_match", "1 when the answer equals the reference answer, else 0 (ragas)"
    ),
    "string_present": _ragas_text(
        "string_present", "1 when the reference answer occurs in the answer, else 0 (ragas)"
    ),
    "non_llm_string_similarity": _ragas_text(
        "non_llm_string_similarity",
        "1 - normalised Levenshtein distance of the answer and the reference answer (ragas)",
    ),
    "answer_accuracy": _ragas_llm(
        "answer_accuracy", "two raters' agreement of the answer with the reference (ragas)",
        ("question", "answer", "reference_answer"), 2, options=(_RETRIES,),
    ),
    "factual_correctness": _ragas_llm(
        "factual_correctness", "F1 of the answer's and the reference's claims by NLI (ragas)",
        ("answer", "reference_answer"), 4,
        options=(
            Option("mode", "precision_recall_f1", "precision, recall or f1 (default)"),
            _BETA,
            Option("atomicity", "low_high", "claims split low (default) or high"),
            Option("coverage", "low_high", "claims cover low (default) or high"),
        ),
    ),
    "response_groundedness": _ragas_llm(
        "response_groundedness", "two raters' support of the answer by the contexts (ragas)",
        ("answer", "contexts"), 2, options=(_RETRIES,),
    ),
    "context_entity_recall": _ragas_llm(
        "context_entity_recall", "share of the reference's entities the contexts name (ragas)",
        ("reference_answer", "contexts"), 2,
    ),
    "context_relevance": _ragas_llm(
        "context_relevance", "two raters' relevance of the contexts to the question (ragas)",
        ("question", "contexts"), 2,
    ),
    "noise_sensitivity": _ragas_llm(
        "noise_sensitivity", "share of the answer's wrong statements a relevant chunk supports "
        "(ragas; lower is better)", ("question", "answer", "reference_answer", "contexts"), 4,
        direction="lower",
        options=(Option("mode", "relevant_irrelevant", "relevant (default) or irrelevant"),),
    ),
    "summary_score": _ragas_llm(
        "summary_score", "the answer as a summary of the contexts: questions answered and "
        "conciseness (ragas)", ("answer", "contexts"), 3,
        options=(
            Option("length_penalty", "flag", "mix in the conciseness term (default true)"),
            Option("coeff", "unit_interval", "the conciseness term's weight, 0-1 (default 0.5)"),
        ),
    ),
    "ragas_answer_correctness": _ragas_llm(
        "ragas_answer_correctness", "ragas' answer correctness: statement F1 and embedding "
        "similarity, 0.75/0.25", ("question", "answer", "reference_answer", "embedder"), 3,
        options=(
            Option("weights", "two_weights", "factuality and similarity weights (0.75, 0.25)"),
            _BETA,
        ),
    ),
    "topic_adherence": Metric(
        "topic_adherence", "F1 of the topics the agent answered against the question's "
        "reference_topics (ragas' TopicAdherence)", ("question", "reference_topics", "judge"),
        (_score("topic_adherence"), _cost("topic_adherence"),
         *_text("topic_adherence_reason", "topic_adherence_error")),
        "docs/ragas.md", default=False, groups=("ragas",), own=True, options=(_BUDGET,),
        score="qa_eval.metrics.ragas.entries:topic_adherence_entry", calls=3,
    ),
    "goal_accuracy": Metric(
        "goal_accuracy", "1 when the agent reached the user's goal (reference_goal, else the "
        "reference answer, else the goal it infers), else 0 (ragas' AgentGoalAccuracy)",
        ("question", "steps", "judge"),
        (_score("goal_accuracy"), _cost("goal_accuracy"),
         *_text("goal_accuracy_reason", "goal_accuracy_error")),
        "docs/metrics/agent.md", default=False, groups=("agent",), own=True, options=(_BUDGET,),
        score="qa_eval.metrics.agents.goal_accuracy:score", calls=2,
    ),
    "trajectory_judgement": Metric(
        "trajectory_judgement", "rubric judgement of the agent's tool calls (logical, efficient, "
        "equivalent to the reference_trajectory), 0-1", ("question", "steps", "judge"),
        (_score("trajectory_judgement"), _cost("trajectory_judgement"),
         *_text("trajectory_judgement_reason", "trajectory_judgement_error")),
        "docs/metrics/agent.md", default=False, groups=("agent",), own=True, options=(_BUDGET,),
        score="qa_eval.metrics.agents.trajectory_judgement:score",
    ),
    "trajectory": Metric(
        "trajectory", "the response's tool calls against the reference trajectory: optimal "
        "matching, modes, argument comparators (deterministic; $llm asks the judge)",
        ("reference_trajectory", "judge"),
        (
            _score("trajectory_match"), Key("trajectory_alternative", scale="count"),
            _score("tool_recall"), _score("tool_precision"), _score("tool_f1"),
            _score("tool_args_score"),
            *(Key(f"tool_calls_{n}", "lower", "count", aggregate=True)
              for n in ("missing", "extra", "failed", "repeated")),
            Key("tool_calls_ratio", "none", "ratio", aggregate=True), _cost("trajectory"),
            *_text("trajectory_reason", "trajectory_calls", "trajectory_error"),
        ),
        "docs/metrics/trajectory.md", own=True,
        score="qa_eval.metrics.agents.trajectory_match:score", calls=0,
        judge_only_for="$llm comparators",
    ),
    "sql_semantic_equivalence": _ragas_llm(
        "sql_semantic_equivalence", "1 when the answer's SQL is equivalent to the reference "
        "answer's on the question's reference_contexts schema (ragas)",
        ("answer", "reference_answer"), 1, groups=(),
    ),
    "rubrics_score": _ragas_llm(
        "rubrics_score", "the level (1-5 by default) of one rubric for all questions that the "
        "answer reaches (ragas' DomainSpecificRubrics)", ("question", "answer"), 1,
        scale="count",
        options=(
            Option("rubrics", "rubrics", "score<N>_description -> criterion (ragas' default)"),
            Option("with_reference", "flag", "judge the reference answer too (default false)"),
        ),
    ),
    "instance_specific_rubrics": _ragas_llm(
        "instance_specific_rubrics", "the level of the question's own rubrics that the answer "
        "reaches (ragas)", ("question", "answer"), 1, scale="count",
    ),
    "quoted_spans_alignment": _ragas_llm(
        "quoted_spans_alignment", "share of the answer's quoted spans found in the contexts "
        "(ragas)", ("answer", "contexts"), 0, groups=("ragas-text",),
        options=(
            Option("casefold", "flag", "compare case-folded (default true)"),
            Option("min_span_words", "integer", "shortest span counted, in words (default 3)"),
        ),
    ),
    "tool_call_accuracy": _ragas_llm(
        "tool_call_accuracy", "argument match of the actual steps' calls against the question's "
        "reference_tool_calls, 0 unless the names align (ragas)", ("steps",), 0,
        options=(Option("strict_order", "flag", "the calls' order matters (default true)"),),
    ),
    "tool_call_f1": _ragas_llm(
        "tool_call_f1", "F1 of the actual steps' (name, args) against the question's "
        "reference_tool_calls, as sets (ragas)", ("steps",), 0,
    ),
    "datacompy_score": _ragas_llm(
        "datacompy_score", "F1 of the answer's CSV rows matching the reference answer's "
        "(ragas; needs qa-eval[datacompy])", ("answer", "reference_answer"), 0, groups=(),
        options=(
            Option("mode", "rows_columns", "rows (default) or columns"),
            Option("metric", "precision_recall_f1", "precision, recall or f1 (default)"),
        ),
    ),
    "custom": Metric(
        "custom", "the config's custom_evaluations (outputs named by the config)", ("judge",),
        (), "docs/metrics/custom.md", prefix=False,
    ),
    "steps_score": Metric(
        "steps_score", "the reference steps matched by the actual steps", ("steps",),
        (
            _score("steps_score", 1), Key("step_errors", own=True),
            Key("steps_score_error", own=True),
        ),
        "docs/steps.md", switch=False,
        prefix=False,
    ),
    "usage": Metric(
        "usage", "the system's own tokens and time, as its responses report them", (),
        (
            Key("input_tokens", "lower", "tokens", aggregate=True, always=True),
            Key("output_tokens", "lower", "tokens", aggregate=True, always=True),
            Key("total_tokens", "lower", "tokens", aggregate=True, always=True),
            Key("elapsed_sec", "lower", "seconds", aggregate=True, always=True),
        ),
        "docs/aggregates.md", switch=False, prefix=False,
    ),
}
# fmt: on
"""Every metric family, in the order of the aggregates and of ``qa-eval metrics``."""

RANKING: dict[str, str] = {
    "recall": "recall@k: |relevant in top k| / |relevant| (trec_eval recall_k)",
    "precision": "precision@k (P@k): |relevant in top k| / k (trec_eval P_k)",
    "ap": "ap, ap@k (map): average precision (trec_eval map, map_cut_k)",
    "rr": "rr, rr@k (mrr): reciprocal rank of the first relevant id (trec_eval recip_rank)",
    "ndcg": "ndcg@k: DCG@k / ideal DCG@k, linear gains (trec_eval ndcg_cut_k)",
    "hit_rate": "hit_rate@k (success@k, hits@k): 1 when a relevant id is in the top k",
    "spec_recall": "spec_recall@k: graphrag-eval's Context Recall@k (as steps_score uses it)",
}
"""The ranking metrics of retrieval ids (metrics/retrieval/ranking.py, docs/metrics/ranking.md),
named ``<name>@<k>``; all higher is better, on 0-1."""
