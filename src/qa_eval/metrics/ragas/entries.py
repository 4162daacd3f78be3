"""The registry's entry points of ragas 0.4.3's metrics (the ``ragas`` group, and
``quoted_spans_alignment`` of ``ragas-text``): each computes what its class of
``qa_eval.metrics.collections`` computes, through the same function (``metrics.ragas.judged``
for the LLM ones, whose value and reason are built there once for both; ``metrics.textual.strings``,
``toolcalls`` and ``tables`` for the deterministic ones), on a question's inputs, with ragas'
default settings unless the metric's config block sets ragas' constructor arguments (its
``Option`` entries in the registry).
The formulas and their sources are in the engines' docstrings:

- ``answer_accuracy``          - ``two_raters``: (r1/4 + r2/4) / 2 over two 0/2/4 ratings.
- ``factual_correctness``      - ``factual_correctness``: precision, recall or F-beta (default
  F1) of the claims' NLI verdicts, rounded to two decimals.
- ``response_groundedness``    - ``two_raters``: (r1/2 + r2/2) / 2 over two 0/1/2 ratings.
- ``context_entity_recall``    - ``entity_recall``: |RE ∩ CE| / (|RE| + 1e-8).
- ``context_relevance``        - ``context_relevance``: (r1/2 + r2/2) / 2 over two 0/1/2 ratings.
- ``noise_sensitivity``        - ``noise_sensitivity``: share of the answer's statements that are
  wrong yet supported by a relevant (or only an irrelevant) chunk; lower is better.
- ``summary_score``            - ``summary``: share of keyphrase questions the answer answers,
  mixed with its conciseness against the contexts by ``coeff``.
- ``ragas_answer_correctness`` - ``statement_correctness``: weights · (factuality F-beta, cosine
  similarity), default 0.75 / 0.25 (qa-eval's own ``answer_correctness`` is another metric).
- ``sql_semantic_equivalence`` - ``sql_equivalence``: 1 when the judge finds the answer's SQL and
  the reference answer's equivalent on the schema (the question's ``reference_contexts``).
- ``rubrics_score``            - ``rubric_scores``: the level (1-5 by default) the judge picks on
  one rubric for every question (the config's, else ragas' default).
- ``instance_specific_rubrics`` - ``rubric_scores``: the level the judge picks on the question's
  own ``rubrics``.
- ``quoted_spans_alignment``   - ``text``: share of the answer's quoted spans found in the contexts.
- ``tool_call_accuracy``       - ``toolcalls``: argument match of the actual steps' calls against
  the question's ``reference_tool_calls``, 0 unless the names align.
- ``tool_call_f1``             - ``toolcalls``: F1 of the sets of (name, args) calls.
- ``datacompy_score``          - ``tables``: F1 (or precision, recall) of the answer's CSV table's
  rows (or columns) matching the reference answer's (datacompy).
- ``topic_adherence``          - ``agent``: F1 of the topics the AI answered against the question's
  ``reference_topics`` (ragas' ``TopicAdherence``, mode f1), on the one-turn conversation of the
  response (question, numbered tool calls, answer; ``metrics.agents.goal_accuracy.conversation``),
  within the prompt budget of ``metrics.agents.judge_inputs``.

A question's inputs map to ragas' as: question → ``user_input``, answer → ``response``, reference
answer → ``reference``, the chunk texts of its retrieval steps → ``retrieved_contexts`` (and
``reference_contexts`` for the summary score), its actual steps → the agent's tool calls; the
question's own ``reference_tool_calls``, ``reference_contexts`` and ``rubrics`` are read where
ragas reads them. A value the engine leaves undefined is ``None`` with the reason; a judge failure
or a missing input is the metric's ``<name>_error``; a question without its metric's question
field (``reference_tool_calls``, ``rubrics``) does not get the metric.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from ...extras import MissingExtra
from ..agents import toolcalls
from ..agents.goal_accuracy import conversation, fit_conversation
from ..agents.judge_inputs import (
    Noting,
    not_evaluated,
    shortened_note,
)
from ..agents.multi_turn import TopicsReply, topic_adherence
from ..output import Output
from ..textual import strings as text
from ..textual import tables
from . import judged as ragas_judged
from .judged import Judged
from .rubrics import DEFAULT_REFERENCE_FREE_RUBRICS, DEFAULT_WITH_REFERENCE_RUBRICS

__all__ = [
    "answer_accuracy_entry",
    "context_entity_recall_entry",
    "context_relevance_entry",
    "datacompy_score_entry",
    "factual_correctness_entry",
    "instance_specific_rubrics_entry",
    "noise_sensitivity_entry",
    "quoted_spans_alignment_entry",
    "ragas_answer_correctness_entry",
    "response_groundedness_entry",
    "rubrics_score_entry",
    "sql_semantic_equivalence_entry",
    "summary_score_entry",
    "tool_call_accuracy_entry",
    "tool_call_f1_entry",
    "topic_adherence_entry",
]

_TRIES = 5
"""ragas' ``max_retries`` default of the two-rater metrics."""


class _Noting:
    """The judge as one metric of one question sees it: each verdict is kept for its cost."""

    def __init__(self, judge: Any) -> None:
        self.judge = judge
        self.verdicts: list[Any] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.judge, name)

    async def ask(self, metric: str, messages: list[dict[str, str]], schema: Any) -> Any:
        """The judge's verdict, noted."""
        verdict = await self.judge.ask(metric, messages, schema)
        self.verdicts.append(verdict)
        return verdict


def _filled(inputs: Mapping[str, Any], *names: str) -> None:
    """A ``ValueError`` naming the first of ``names`` that the question lacks or has blank."""
    for name in names:
        if not inputs.get(name):
            raise ValueError(f"{name} is missing or empty")


def _record(metric: str, noted: _Noting, judged: Judged, *costs: Any) -> Output:
    values = {metric: judged.value, f"{metric}_reason": judged.reason}
    return Output.judged(metric, values, *noted.verdicts, costs=costs)


def _option(options: Mapping[str, Any], name: str, default: Any) -> Any:
    """A config option of the metric, or ragas' default when the config leaves it unset."""
    value = options.get(name)
    return default if value is None else value


async def answer_accuracy_entry(judge: Any, inputs: Mapping[str, Any], options: Any) -> Output:
    """``answer_accuracy``: two raters' agreement of the answer with the reference answer."""
    _filled(inputs, "question", "answer", "reference_answer")
    noted = _Noting(judge)
    tries = _option(options, "max_retries", _TRIES)
    judged = await ragas_judged.answer_accuracy(
        noted, inputs["question"], inputs["answer"], inputs["reference_answer"], tries
    )
    return _record("answer_accuracy", noted, judged)


async def response_groundedness_entry(
    judge: Any, inputs: Mapping[str, Any], options: Any
) -> Output:
    """``response_groundedness``: two raters' support of the answer by the contexts."""
    _filled(inputs, "answer", "contexts")
    noted = _Noting(judge)
    tries = _option(options, "max_retries", _TRIES)
    judged = await ragas_judged.response_groundedness(
        noted, inputs["answer"], inputs["contexts"], tries
    )
    return _record("response_groundedness", noted, judged)


async def factual_correctness_entry(judge: Any, inputs: Mapping[str, Any], options: Any) -> Output:
    """``factual_correctness``: the answer's and the reference's claims judged against each
    other (mode, beta, atomicity and coverage from the config, else ragas' f1, 1, low, low)."""
    _filled(inputs, "answer", "reference_answer")
    noted = _Noting(judge)
    judged = await ragas_judged.factual_correctness(
        noted,
        inputs["answer"],
        inputs["reference_answer"],
        _option(options, "mode", "f1"),
        _option(options, "beta", 1.0),
        _option(options, "atomicity", "low"),
        _option(options, "coverage", "low"),
    )
    return _record("factual_correctness", noted, judged)


async def context_entity_recall_entry(
    judge: Any, inputs: Mapping[str, Any], options: Any
) -> Output:
    """``context_entity_recall``: the reference answer's entities the contexts name."""
    _filled(inputs, "reference_answer", "contexts")
    noted = _Noting(judge)
    judged = await ragas_judged.context_entity_recall(
        noted, inputs["reference_answer"], inputs["contexts"]
    )
    return _record("context_entity_recall", noted, judged)


async def context_relevance_entry(judge: Any, inputs: Mapping[str, Any], options: Any) -> Output:
    """``context_relevance``: two raters' relevance of the contexts to the question."""
    _filled(inputs, "question", "contexts")
    noted = _Noting(judge)
    judged = await ragas_judged.context_relevance(noted, inputs["question"], inputs["contexts"])
    return _record("context_relevance", noted, judged)


async def noise_sensitivity_entry(judge: Any, inputs: Mapping[str, Any], options: Any) -> Output:
    """``noise_sensitivity``: the answer's wrong statements that a relevant chunk (mode
    ``relevant``, the default) or only an irrelevant one (``irrelevant``) supports."""
    _filled(inputs, "question", "answer", "reference_answer", "contexts")
    noted = _Noting(judge)
    judged = await ragas_judged.noise_sensitivity_judged(
        noted,
        inputs["question"],
        inputs["answer"],
        inputs["reference_answer"],
        inputs["contexts"],
        _option(options, "mode", "relevant"),
    )
    return _record("noise_sensitivity", noted, judged)


async def summary_score_entry(judge: Any, inputs: Mapping[str, Any], options: Any) -> Output:
    """``summary_score``: the answer as a summary of the contexts (ragas' length penalty and
    coeff 0.5 unless the config sets ``length_penalty`` / ``coeff``)."""
    _filled(inputs, "contexts", "answer")
    noted = _Noting(judge)
    judged = await ragas_judged.summary(
        noted,
        inputs["contexts"],
        inputs["answer"],
        _option(options, "length_penalty", True),
        _option(options, "coeff", 0.5),
    )
    return _record("summary_score", noted, judged)


async def ragas_answer_correctness_entry(
    judge: Any, inputs: Mapping[str, Any], options: Any
) -> Output:
    """``ragas_answer_correctness``: ragas' factuality F-beta of classified statements and the
    answer's embedding similarity to the reference answer, weighed 0.75 / 0.25 (or the
    config's ``weights``)."""
    _filled(inputs, "question", "answer", "reference_answer")
    noted = _Noting(judge)
    judged = await ragas_judged.answer_correctness(
        noted,
        inputs["embedder"],
        inputs["question"],
        inputs["answer"],
        inputs["reference_answer"],
        _option(options, "weights", (0.75, 0.25)),
        _option(options, "beta", 1.0),
    )
    costs = [judged.numbers["embedding_cost"]] if "embedding_cost" in judged.numbers else []
    return _record("ragas_answer_correctness", noted, judged, *costs)


async def sql_semantic_equivalence_entry(
    judge: Any, inputs: Mapping[str, Any], options: Any
) -> Output:
    """``sql_semantic_equivalence``: the answer's SQL against the reference answer's, on the
    schema in the question's ``reference_contexts`` (none: no schema)."""
    _filled(inputs, "answer", "reference_answer")
    noted = _Noting(judge)
    schema = inputs.get("reference_contexts") or ()
    judged = await ragas_judged.sql_semantic_equivalence(
        noted, inputs["answer"], inputs["reference_answer"], schema
    )
    return _record("sql_semantic_equivalence", noted, judged)


async def _rubric(
    judge: Any, name: str, rubrics: Mapping[str, str], inputs: Mapping[str, Any], reference: bool
) -> Output:
    noted = _Noting(judge)
    judged = await ragas_judged.rubric(
        noted,
        rubrics,
        user_input=inputs["question"],
        response=inputs["answer"],
        retrieved_contexts=inputs.get("contexts"),
        reference=inputs.get("reference_answer") if reference else None,
    )
    return _record(name, noted, judged)


async def rubrics_score_entry(judge: Any, inputs: Mapping[str, Any], options: Any) -> Output:
    """``rubrics_score``: ragas' ``DomainSpecificRubrics`` (``RubricsScoreWithoutReference`` /
    ``WithReference``): one rubric for every question, the config's ``rubrics`` or ragas'
    default 1-5 one; with ``with_reference`` the reference answer is judged too."""
    _filled(inputs, "question", "answer")
    with_reference = bool(_option(options, "with_reference", False))
    if with_reference:
        _filled(inputs, "reference_answer")
    default = DEFAULT_WITH_REFERENCE_RUBRICS if with_reference else DEFAULT_REFERENCE_FREE_RUBRICS
    rubrics = _option(options, "rubrics", default)
    return await _rubric(judge, "rubrics_score", rubrics, inputs, with_reference)


async def instance_specific_rubrics_entry(
    judge: Any, inputs: Mapping[str, Any], options: Any
) -> Output:
    """``instance_specific_rubrics``: the question's own ``rubrics`` (a question without them
    does not get the metric); the reference answer is judged too when the question has one."""
    rubrics = inputs.get("rubrics")
    if not rubrics:
        return Output("instance_specific_rubrics")
    _filled(inputs, "question", "answer")
    return await _rubric(judge, "instance_specific_rubrics", rubrics, inputs, True)


def _deterministic(name: str, scored: text.Scored) -> Output:
    """The record of a deterministic metric: its value and the engine's reason."""
    return Output(name, {name: scored.value, f"{name}_reason": scored.reason})


async def quoted_spans_alignment_entry(
    judge: Any, inputs: Mapping[str, Any], options: Any
) -> Output:
    """``quoted_spans_alignment``: the answer's quoted spans found verbatim in the contexts."""
    scored = text.quoted_spans_alignment(
        inputs["answer"],
        list(inputs["contexts"]),
        casefold=_option(options, "casefold", True),
        min_span_words=_option(options, "min_span_words", 3),
    )
    return _deterministic("quoted_spans_alignment", scored)


def _call_args(args: Any) -> dict[str, Any]:
    """A call's arguments as ragas' ToolCall takes them: a mapping, a JSON-object text parsed,
    none as ``{}``; other raw text (kept by a trace import) stays visible under ``<raw>``, so it
    matches no reference arguments instead of passing as none."""
    if isinstance(args, Mapping):
        return dict(args)
    if args is None or args == "":
        return {}
    if isinstance(args, str):
        try:
            parsed = json.loads(args)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            return parsed
    return {"<raw>": args}


def _tool_calls(inputs: Mapping[str, Any]) -> tuple[list[Any], list[Any]] | None:
    """(the conversation of the actual steps as one agent message, the reference calls), or
    ``None`` when the question has no ``reference_tool_calls``."""
    reference = inputs.get("reference_tool_calls")
    if reference is None:
        return None
    calls = [
        {"name": step.get("name"), "args": _call_args(step.get("args"))}
        for step in inputs.get("steps") or []
        if isinstance(step, Mapping)
    ]
    reference = [{"name": c["name"], "args": _call_args(c.get("args"))} for c in reference]
    return [{"type": "ai", "tool_calls": calls}], reference


async def tool_call_accuracy_entry(judge: Any, inputs: Mapping[str, Any], options: Any) -> Output:
    """``tool_call_accuracy``: ragas' ``ToolCallAccuracy`` of the actual steps' calls against
    the question's ``reference_tool_calls`` (``strict_order`` from the config, default true)."""
    found = _tool_calls(inputs)
    if found is None:
        return Output("tool_call_accuracy")
    strict = _option(options, "strict_order", True)
    return _deterministic("tool_call_accuracy", toolcalls.tool_call_accuracy(*found, strict))


async def tool_call_f1_entry(judge: Any, inputs: Mapping[str, Any], options: Any) -> Output:
    """``tool_call_f1``: ragas' ``ToolCallF1`` of the actual steps' calls against the question's
    ``reference_tool_calls`` (sets of name and arguments)."""
    found = _tool_calls(inputs)
    if found is None:
        return Output("tool_call_f1")
    return _deterministic("tool_call_f1", toolcalls.tool_call_f1(*found))


async def datacompy_score_entry(judge: Any, inputs: Mapping[str, Any], options: Any) -> Output:
    """``datacompy_score``: the answer's CSV table against the reference answer's (``mode`` rows
    or columns, ``metric`` precision, recall or f1 from the config, else rows and f1); an
    unreadable table is the metric's error."""
    try:
        scored = tables.datacompy_score(
            inputs["reference_answer"],
            inputs["answer"],
            _option(options, "mode", "rows"),
            _option(options, "metric", "f1"),
        )
    except MissingExtra as e:  # the metric's error on each question, naming the extra
        raise ValueError(str(e)) from None
    if isinstance(scored.value, float) and math.isnan(scored.value):
        raise ValueError(scored.reason)
    return _deterministic("datacompy_score", scored)


async def topic_adherence_entry(
    judge: Any, inputs: Mapping[str, Any], options: Mapping[str, Any]
) -> Output | tuple[Output, ...]:
    """``topic_adherence`` (mode f1): the topics of the response's conversation the AI answered,
    against the question's ``reference_topics`` (none for a question without them)."""
    references = inputs.get("reference_topics")
    if references is None:
        return ()
    if (
        not isinstance(references, list)
        or not all(isinstance(t, str) and t.strip() for t in references)
        or not references
    ):
        raise ValueError("reference_topics must be a non-empty list of non-blank strings")
    name = "topic_adherence"
    question, answer = str(inputs.get("question") or ""), inputs.get("answer")
    fitted = fit_conversation(judge, inputs, options, "topic_extraction", TopicsReply)
    if not fitted.fits:
        return not_evaluated(name, fitted)
    noted = Noting(judge, name)
    outcome = await topic_adherence(
        noted, conversation(question, fitted.calls, answer), references, "f1"
    )
    if outcome.value is None:
        reason = "not computed: the question raises no topic"
    else:
        on = sum(a and r for a, r in zip(outcome.answered, outcome.in_reference, strict=True))
        reason = (
            f"{len(outcome.topics)} topics, {sum(outcome.answered)} answered, {on} of them "
            f"reference topics; precision {outcome.precision:.4f}, recall {outcome.recall:.4f}"
        )
    reason += shortened_note(fitted)
    values = {name: outcome.value, f"{name}_reason": reason}
    return Output.judged(name, values, *noted.verdicts)
