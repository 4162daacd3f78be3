"""Metric families: one module per family, each a set of pure functions, and the registry.

``METRICS`` below is the one place that says what a metric is: for each family (a config switch,
or a family of keys that is always written such as ``steps_score`` and the token counts) what it
needs, the result keys it writes with their direction and scale, whether it is on by default, its
group, its options and its doc page. Everything else derives from it: the config switches and
groups (``config.py``), the ``--enable`` / ``--disable`` choices, the aggregated keys
(``aggregate.METRICS``, ``SCORES``, ``STEP_METRICS``, ``CATEGORIES``), the direction used by
``compare`` and the report (``direction``), the keys a custom metric may not use (``reserved``),
``qa-eval metrics`` and the ``name@k`` syntax of ranking metrics (``parse_at_k``).

This module imports nothing of qa-eval's (``config``, ``run.score`` and ``aggregate`` import it). A
family with a ``score`` entry point (``"module:function"``) is scheduled by ``run.score`` without
any other change (see docs/adding-a-metric.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

__all__ = [
    "METRICS",
    "RANKING",
    "Key",
    "Metric",
    "Option",
    "aggregated_keys",
    "always_present_keys",
    "categories",
    "describe_metrics",
    "direction",
    "error_keys",
    "headline_keys",
    "key_info",
    "parse_at_k",
    "reserved",
    "step_keys",
]

Direction = Literal["higher", "lower", "none"]
Scale = Literal["0-1", "ratio", "count", "tokens", "usd", "seconds", "label", "text"]
Need = Literal[
    "question",
    "answer",
    "reference_answer",
    "reference_topics",
    "contexts",
    "steps",
    "judge",
    "embedder",
    "reference_trajectory",
]


@dataclass(frozen=True)
class Key:
    """One result key a metric family writes."""

    name: str
    direction: Direction = "none"
    scale: Scale = "text"
    aggregate: bool = False
    """Whether ``compute_aggregates`` summarises it (sum, mean, median, min, max, n)."""
    headline: int = 0
    """Its position among the headline scores of the summary and the report (0: not one)."""
    labels: tuple[str, ...] = ()
    """For a label key: the labels counted first by the aggregates (others follow)."""
    always: bool = False
    """Aggregated even when no question has it (all zeros)."""
    errors: tuple[str, ...] = ()
    """The error keys that mean its value failed (default: ``<key>_error`` when the family
    declares it, else ``<family>_error`` when declared); the aggregates count them as
    ``failed``."""
    own: bool = False
    """qa-eval's own key: graphrag-eval 6.6.1 does not write it (``keys="graphrag-eval"``
    leaves it out; docs/compatibility.md lists it)."""


@dataclass(frozen=True)
class Option:
    """A setting of a metric's config block besides ``enabled``; ``check`` names the reader in
    ``config.py`` (``config.CHECKS``) that validates it."""

    name: str
    check: str
    doc: str = ""


@dataclass(frozen=True)
class Metric:
    """One metric family."""

    name: str
    summary: str
    needs: tuple[Need, ...]
    keys: tuple[Key, ...]
    doc: str
    default: bool = True
    switch: bool = True
    """Whether it is a config switch (``--enable`` / ``--disable``)."""
    groups: tuple[str, ...] = ()
    options: tuple[Option, ...] = ()
    step: str | None = None
    """Its keys are written into the actual steps of this name, not into the result."""
    prefix: bool = True
    """Custom metrics may not use ``<name>`` nor ``<name>_...`` as output names."""
    score: str | None = None
    """``"module:function"`` of its ``async (judge, inputs, options) -> Output`` entry point,
    which ``run.score`` schedules by ``needs`` (see docs/adding-a-metric.md)."""
    aliases: tuple[str, ...] = ()
    """Keys its error is also written under (graphrag-eval's ``answer_eval_error``)."""
    derived: bool = False
    """Computed after the question's other metrics, from their values (``inputs["scores"]``)."""
    calls: int = 1
    """Judge calls it makes per question, for the progress display's estimate."""
    own: bool = False
    """A family graphrag-eval 6.6.1 does not have: every key of it is qa-eval's own."""
    judge_only_for: str = ""
    """When set, the family runs without a judge and asks one only for this (``trajectory``:
    its ``$llm`` comparators): ``"judge"`` stays in ``needs`` so that ``run.score`` schedules
    it with a judge, but ``qa-eval metrics`` does not say it needs one."""

    @property
    def judged(self) -> bool:
        """Whether it needs the judge."""
        return "judge" in self.needs

    @property
    def offline(self) -> bool:
        """Whether it runs without a judge."""
        return "judge" not in self.needs


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
    """A string metric of ragas (``metrics/text.py``) of the answer against the reference answer:
    one score key and its error, opt-in, in the ``ragas-text`` group, no judge."""
    return Metric(
        name, summary, ("answer", "reference_answer"), (_score(name), Key(f"{name}_error")),
        "docs/metrics/ragas-text.md", default=False, groups=("ragas-text",), own=True,
        score=f"qa_eval.metrics.text:{name}_entry", calls=0,
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
    """A metric of ragas (``metrics/ragas_run.py``, the function its collections class uses) on
    a question's inputs: its value, cost, reason and error, opt-in, in the ``ragas`` group (or
    ``groups``); a judge unless ``calls`` is 0; ragas' constructor arguments as ``options``."""
    value = Key(name, direction, scale, aggregate=True)
    judge: tuple[Need, ...] = ("judge",) if calls else ()
    cost = (_cost(name),) if calls else ()
    return Metric(
        name, summary, (*needs, *judge),
        (value, *cost, *_text(f"{name}_reason", f"{name}_error")),
        "docs/ragas.md", default=False, groups=groups, own=True, options=options,
        score=f"qa_eval.metrics.ragas_run:{name}_entry", calls=calls,
    )  # fmt: skip


_BUDGET = Option(
    "max_prompt_tokens", "integer", "prompt budget in tokens (default: from the judge model)"
)
"""The context budget of the judged agent metrics (``metrics.agent_inputs``)."""
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
        score="qa_eval.metrics.correctness:score", aliases=("answer_eval_error",),
    ),
    "answer_relevance": Metric(
        "answer_relevance", "questions generated from the answer, compared with the question",
        ("question", "answer", "judge", "embedder"),
        (
            _score("answer_relevance", 5), _cost("answer_relevance", aggregate=True),
            Key("answer_relevance_error"), Key("answer_relevance_questions", own=True),
            replace(_score("answer_relevance_rubric"), own=True), _cost("answer_relevance_rubric"),
            *_text("answer_relevance_rubric_reason", "answer_relevance_rubric_error", own=True),
        ),
        "docs/metrics/answer.md",
        options=(Option("rubric_fallback", "flag", "rubric score when no question is generated"),),
        score="qa_eval.metrics.relevance:score",
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
        score="qa_eval.metrics.faithfulness:score", calls=2,
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
        score="qa_eval.metrics.context_quality:context_precision_score",
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
        score="qa_eval.metrics.context_quality:context_recall_score",
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
        score="qa_eval.metrics.composite:score", derived=True, calls=0,
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
        score="qa_eval.metrics.geval:score",
    ),
    "semantic_similarity": Metric(
        "semantic_similarity", "cosine of the answer's and the reference's embeddings",
        ("answer", "reference_answer", "embedder"),
        (
            _score("semantic_similarity", 11), _cost("semantic_similarity"),
            Key("semantic_similarity_error"),
        ),
        "docs/metrics/graphrag.md", default=False, groups=_GRAPHRAG, own=True,
        score="qa_eval.metrics.similarity:score", calls=0,
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
        score="qa_eval.metrics.classify:score",
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
        score="qa_eval.metrics.bertscore:score", calls=0,
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
        score="qa_eval.metrics.ragas_run:topic_adherence_entry", calls=3,
    ),
    "goal_accuracy": Metric(
        "goal_accuracy", "1 when the agent reached the user's goal (reference_goal, else the "
        "reference answer, else the goal it infers), else 0 (ragas' AgentGoalAccuracy)",
        ("question", "steps", "judge"),
        (_score("goal_accuracy"), _cost("goal_accuracy"),
         *_text("goal_accuracy_reason", "goal_accuracy_error")),
        "docs/metrics/agent.md", default=False, groups=("agent",), own=True, options=(_BUDGET,),
        score="qa_eval.metrics.goal_accuracy:score", calls=2,
    ),
    "trajectory_judgement": Metric(
        "trajectory_judgement", "rubric judgement of the agent's tool calls (logical, efficient, "
        "equivalent to the reference_trajectory), 0-1", ("question", "steps", "judge"),
        (_score("trajectory_judgement"), _cost("trajectory_judgement"),
         *_text("trajectory_judgement_reason", "trajectory_judgement_error")),
        "docs/metrics/agent.md", default=False, groups=("agent",), own=True, options=(_BUDGET,),
        score="qa_eval.metrics.trajectory_judgement:score",
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
        "docs/metrics/trajectory.md", own=True, score="qa_eval.metrics.trajectory:score",
        calls=0, judge_only_for="$llm comparators",
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
"""The ranking metrics of retrieval ids (metrics/ranking.py, docs/metrics/ranking.md), named
``<name>@<k>``; all higher is better, on 0-1."""

_AT_K = re.compile(r"^([A-Za-z_]+)(?:@(\d+))?$")


def parse_at_k(name: str) -> tuple[str, int | None]:
    """Split ``recall@5`` into ``("recall", 5)`` and ``map`` into ``("map", None)`` (the base
    lower-cased); ``ValueError`` for any other shape or k < 1. The one parser of ``name@k``."""
    match = _AT_K.match(name.strip()) if isinstance(name, str) else None
    if not match:
        raise ValueError(f"not a metric name of the form name or name@k: {name!r}")
    k = int(match.group(2)) if match.group(2) is not None else None
    if k is not None and k <= 0:
        raise ValueError(f"{name!r}: k must be a positive integer")
    return match.group(1).lower(), k


def _keys(registry: Mapping[str, Metric]) -> dict[str, Key]:
    return {key.name: key for metric in registry.values() for key in metric.keys}


def key_info(name: str, registry: Mapping[str, Metric] | None = None) -> tuple[Metric, Key] | None:
    """The family and the declaration of a result key, or ``None`` for a key no family writes."""
    for metric in (registry if registry is not None else METRICS).values():
        for key in metric.keys:
            if key.name == name:
                return metric, key
    return None


_LOWER_SUFFIXES = ("cost", "tokens", "_sec", "_seconds", "_ms", "elapsed", "latency")


def direction(name: str, registry: Mapping[str, Metric] | None = None) -> Direction:
    """Which values of a result key are better: ``higher``, ``lower`` or ``none`` (a count or a
    label: a change is neither better nor worse).

    A registered key has its declared direction; a ranking metric (``ndcg@10``) is higher; any
    other key (a custom metric's output) is ``lower`` when its name ends like a cost, token count
    or time (``cost``, ``tokens``, ``_sec``, ``_seconds``, ``_ms``, ``elapsed``, ``latency``),
    ``none`` when it ends in ``_count``, else ``higher``."""
    found = key_info(name, registry)
    if found is not None:
        return found[1].direction
    lowered = name.lower()
    try:
        base, _ = parse_at_k(name)
    except ValueError:
        base = ""
    if "@" in name and base in RANKING:
        return "higher"
    if lowered.endswith(_LOWER_SUFFIXES):
        return "lower"
    if lowered.endswith("_count"):
        return "none"
    return "higher"


def error_keys(name: str, registry: Mapping[str, Metric] | None = None) -> tuple[str, ...]:
    """The error keys that mean a registered key's value failed (its ``errors``, else
    ``<key>_error`` or ``<family>_error`` when the family declares it); none for a cost, an
    unregistered key or a family without an error key."""
    found = key_info(name, registry)
    if found is None:
        return ()
    metric, key = found
    if key.errors:
        return key.errors
    if key.scale == "usd":
        return ()  # a cost is not a value that could not be computed
    declared = {k.name for k in metric.keys}
    for candidate in (f"{name}_error", f"{metric.name}_error"):
        if candidate in declared:
            return (candidate,)
    return ()


def always_present_keys() -> tuple[str, ...]:
    """The result keys every question's result carries (``Key.always``), in order."""
    return tuple(key.name for metric in METRICS.values() for key in metric.keys if key.always)


def aggregated_keys(registry: Mapping[str, Metric] | None = None) -> tuple[str, ...]:
    """The result keys ``compute_aggregates`` summarises (not the step keys), in order."""
    return tuple(
        key.name
        for metric in (registry if registry is not None else METRICS).values()
        if metric.step is None
        for key in metric.keys
        if key.aggregate
    )


def step_keys(registry: Mapping[str, Metric] | None = None) -> dict[str, tuple[str, ...]]:
    """The numeric keys written into actual steps, by step name (aggregated by name)."""
    out: dict[str, tuple[str, ...]] = {}
    for metric in (registry if registry is not None else METRICS).values():
        if metric.step is not None:
            names = tuple(
                k.name for k in metric.keys if k.scale == "0-1" and k.direction == "higher"
            )
            out[metric.step] = (*out.get(metric.step, ()), *names)
    return out


def headline_keys(registry: Mapping[str, Metric] | None = None) -> tuple[str, ...]:
    """The headline scores (0-1, higher is better), in the order of the summary and report."""
    keys = [k for k in _keys(registry if registry is not None else METRICS).values() if k.headline]
    return tuple(k.name for k in sorted(keys, key=lambda k: k.headline))


def categories(registry: Mapping[str, Metric] | None = None) -> dict[str, tuple[str, ...]]:
    """The label keys the aggregates count, with the labels listed first."""
    return {
        k.name: k.labels
        for k in _keys(registry if registry is not None else METRICS).values()
        if k.labels
    }


RECORD_FIELDS = frozenset(
    {
        "template_id",
        "question_id",
        "question_text",
        "reference_answer",
        "reference_steps",
        "reference_trajectory",
        "status",
        "error",
        "actual_answer",
        "actual_steps",
        "reason",
        "reference_contexts",
        "reference_tool_calls",
        "rubrics",
    }
)
"""Keys of a result that are not metrics (graphrag-eval's record fields, and the question fields
ragas' metrics read: ``run.question.RAGAS_REFERENCE_KEYS``)."""


def reserved(key: str, registry: Mapping[str, Metric] | None = None) -> bool:
    """Whether a custom metric output named ``key`` would overwrite a key qa-eval writes: a
    record field, a registered key, a family's name or ``<family>_...`` (its reason, cost,
    error, ...), ``retrieval_answer_*`` and ``retrieval_context_*`` included (written into the
    steps, aggregated by name)."""
    registry = registry if registry is not None else METRICS
    if key in RECORD_FIELDS or key_info(key, registry) is not None:
        return True
    return any(key == m.name or key.startswith(m.name + "_") for m in registry.values() if m.prefix)


def describe_metrics(registry: Mapping[str, Metric] | None = None) -> list[dict[str, Any]]:
    """Plain data for ``qa-eval metrics``: every family with its keys, direction, scale, needs,
    default, groups, options and doc page, then the ranking metrics."""
    out: list[dict[str, Any]] = []
    for metric in (registry if registry is not None else METRICS).values():
        out.append(
            {
                "name": metric.name,
                "summary": metric.summary,
                "switch": metric.switch,
                "default": "on" if metric.default else "off",
                "groups": list(metric.groups),
                "needs": [n for n in metric.needs if not (metric.judge_only_for and n == "judge")],
                "judge": metric.judged and not metric.judge_only_for,
                "judge_only_for": metric.judge_only_for or None,
                "embedder": "embedder" in metric.needs,
                "keys": [
                    {
                        "name": k.name,
                        "direction": k.direction,
                        "scale": k.scale,
                        "aggregated": k.aggregate or (metric.step is not None and k.scale == "0-1"),
                        **({"labels": list(k.labels)} if k.labels else {}),
                    }
                    for k in metric.keys
                ],
                "step": metric.step,
                "options": [{"name": o.name, "doc": o.doc} for o in metric.options],
                "doc": metric.doc,
            }
        )
    for name, summary in RANKING.items():
        out.append(
            {
                "name": f"{name}@k",
                "summary": f"{summary}; an API function of retrieval ids, "
                f'compute_ranking_metric("{name}@10", relevant, retrieved)',
                "switch": False,
                "default": "off",
                "groups": ["ranking"],
                "needs": [],
                "judge": False,
                "judge_only_for": None,
                "embedder": False,
                "keys": [{"name": f"{name}@k", "direction": "higher", "scale": "0-1"}],
                "step": None,
                "options": [],
                "doc": "docs/metrics/ranking.md",
            }
        )
    return out


def switches(registry: Mapping[str, Metric] | None = None) -> tuple[str, ...]:
    """The config switches (``--enable`` / ``--disable`` choices), in order."""
    registry = registry if registry is not None else METRICS
    return tuple(m.name for m in registry.values() if m.switch)


def groups(registry: Mapping[str, Metric] | None = None) -> dict[str, tuple[str, ...]]:
    """The names ``--enable`` expands (``graphrag``) to the switches of the group."""
    out: dict[str, tuple[str, ...]] = {}
    for metric in (registry if registry is not None else METRICS).values():
        for group in metric.groups:
            out[group] = (*out.get(group, ()), metric.name)
    return out
