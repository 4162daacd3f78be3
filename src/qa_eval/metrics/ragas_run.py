"""The registry's entry points of ragas 0.4.3's LLM metrics (the ``ragas`` group): each runs the
engine that its ``qa_eval.metrics.collections`` class runs, on a question's inputs, with ragas'
default settings, and writes one value with its reason and cost. The formulas and their sources
are in the engines' docstrings:

- ``answer_accuracy``          - ``two_raters``: (r1/4 + r2/4) / 2 over two 0/2/4 ratings.
- ``factual_correctness``      - ``factual_correctness``: F1 of the claims' NLI verdicts (mode f1),
  rounded to two decimals.
- ``response_groundedness``    - ``two_raters``: (r1/2 + r2/2) / 2 over two 0/1/2 ratings.
- ``context_entity_recall``    - ``entity_recall``: |RE ∩ CE| / (|RE| + 1e-8).
- ``context_relevance``        - ``context_relevance``: (r1/2 + r2/2) / 2 over two 0/1/2 ratings.
- ``noise_sensitivity``        - ``noise_sensitivity``: share of the answer's statements that are
  wrong yet supported by a relevant chunk (mode relevant; lower is better).
- ``summary_score``            - ``summary``: share of keyphrase questions the answer answers,
  mixed half and half with its conciseness against the contexts.
- ``ragas_answer_correctness`` - ``statement_correctness``: 0.75 · factuality F1 + 0.25 · cosine
  similarity (ragas' ``AnswerCorrectness``; qa-eval's own ``answer_correctness`` is another one).
- ``topic_adherence``          - ``agent``: F1 of the topics the AI answered against the question's
  ``reference_topics`` (ragas' ``TopicAdherence``, mode f1), on the one-turn conversation of the
  response (question, numbered tool calls, answer; ``metrics.goal_accuracy.conversation``), within
  the prompt budget of ``metrics.agent_inputs``.

A question's inputs map to ragas' as: question → ``user_input``, answer → ``response``, reference
answer → ``reference``, the chunk texts of its retrieval steps → ``retrieved_contexts`` (and
``reference_contexts`` for the summary score). A value the engine leaves undefined is ``None``
with the reason; a judge failure or a missing input is the metric's ``<name>_error``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..judge.replies import json_schema
from ..judge.usage import estimated_prompt_tokens
from ..prompts import render
from .agent import TopicsReply, topic_adherence
from .agent_inputs import (
    Call,
    Noting,
    actual_calls,
    fit,
    not_evaluated,
    prompt_budget,
    shortened_note,
)
from .context_relevance import context_rating
from .entity_recall import entity_recall
from .factual_correctness import factual_correctness_judgement, factual_score
from .goal_accuracy import conversation
from .noise_sensitivity import noise_sensitivity
from .output import Output
from .relevance import cosine
from .statement_correctness import factuality_fbeta, statement_correctness, weighted_correctness
from .summary import summary_judgement, summary_score
from .two_raters import answer_accuracy_ratings, groundedness_ratings, two_rater_score

__all__ = [
    "answer_accuracy_entry",
    "context_entity_recall_entry",
    "context_relevance_entry",
    "factual_correctness_entry",
    "noise_sensitivity_entry",
    "ragas_answer_correctness_entry",
    "response_groundedness_entry",
    "summary_score_entry",
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


def _record(metric: str, noted: _Noting, value: float | None, reason: str, *costs: Any) -> Output:
    values = {metric: value, f"{metric}_reason": reason}
    return Output.judged(metric, values, *noted.verdicts, costs=costs)


def _ratings(ratings: tuple[int | None, ...], top: int) -> str:
    return ", ".join(f"{r} of {top}" if r is not None else "no usable rating" for r in ratings)


async def answer_accuracy_entry(judge: Any, inputs: Mapping[str, Any], options: Any) -> Output:
    """``answer_accuracy``: two raters' agreement of the answer with the reference answer."""
    _filled(inputs, "question", "answer", "reference_answer")
    noted = _Noting(judge)
    ratings = await answer_accuracy_ratings(
        noted, inputs["question"], inputs["answer"], inputs["reference_answer"], _TRIES
    )
    value = two_rater_score(*ratings, top=4)
    return _record("answer_accuracy", noted, value, f"ratings {_ratings(ratings, 4)}")


async def response_groundedness_entry(
    judge: Any, inputs: Mapping[str, Any], options: Any
) -> Output:
    """``response_groundedness``: two raters' support of the answer by the contexts."""
    _filled(inputs, "answer", "contexts")
    noted = _Noting(judge)
    context = "\n".join(inputs["contexts"])
    if not inputs["answer"].strip():
        return _record(
            "response_groundedness", noted, None, "the answer is blank: nothing to ground"
        )
    if not context.strip():
        return _record("response_groundedness", noted, 0.0, "the contexts are blank: no support")
    ratings = await groundedness_ratings(noted, inputs["answer"], context, _TRIES)
    value = two_rater_score(*ratings, top=2)
    return _record("response_groundedness", noted, value, f"ratings {_ratings(ratings, 2)}")


async def factual_correctness_entry(judge: Any, inputs: Mapping[str, Any], options: Any) -> Output:
    """``factual_correctness`` (mode f1): the answer's and the reference's claims judged
    against each other."""
    _filled(inputs, "answer", "reference_answer")
    noted = _Noting(judge)
    judged = await factual_correctness_judgement(
        noted, inputs["answer"], inputs["reference_answer"]
    )
    ours = [c.supported for c in judged.response_claims]
    theirs = [c.supported for c in judged.reference_claims]
    value = factual_score(ours, theirs)
    tp = sum(ours)
    reason = (
        f"{tp} of {len(ours)} answer claims supported by the reference, "
        f"{len(theirs) - sum(theirs)} of {len(theirs)} reference claims missing from the answer"
    )
    if value is None:
        reason = f"not computed: no claims to score; {reason}"
    return _record("factual_correctness", noted, value, reason)


async def context_entity_recall_entry(
    judge: Any, inputs: Mapping[str, Any], options: Any
) -> Output:
    """``context_entity_recall``: the reference answer's entities the contexts name."""
    _filled(inputs, "reference_answer", "contexts")
    noted = _Noting(judge)
    found = await entity_recall(noted, inputs["reference_answer"], list(inputs["contexts"]))
    wanted = set(found.reference_entities)
    if found.value is None:
        reason = "not computed: the reference answer names no entities"
    else:
        reason = f"{len(found.recalled)} of {len(wanted)} reference entities named in the contexts"
    return _record("context_entity_recall", noted, found.value, reason)


async def context_relevance_entry(judge: Any, inputs: Mapping[str, Any], options: Any) -> Output:
    """``context_relevance``: two raters' relevance of the contexts to the question."""
    _filled(inputs, "question", "contexts")
    noted = _Noting(judge)
    rated = await context_rating(noted, inputs["question"], list(inputs["contexts"]))
    if rated.skipped is not None:
        reason = f"0 without asking: {rated.skipped}"
    else:
        reason = f"ratings {_ratings(rated.ratings, 2)}"
    return _record("context_relevance", noted, rated.value, reason)


async def noise_sensitivity_entry(judge: Any, inputs: Mapping[str, Any], options: Any) -> Output:
    """``noise_sensitivity`` (mode relevant): the answer's wrong statements that a relevant
    chunk supports."""
    _filled(inputs, "question", "answer", "reference_answer", "contexts")
    noted = _Noting(judge)
    noise = await noise_sensitivity(
        noted,
        inputs["question"],
        inputs["answer"],
        inputs["reference_answer"],
        list(inputs["contexts"]),
    )
    if noise.value is None:
        reason = noise.reason or "not computed"
    else:
        wrong = len(noise.correct) - sum(noise.correct)
        reason = (
            f"{round(noise.value * len(noise.correct))} of {len(noise.correct)} answer statements "
            f"wrong yet supported by a relevant chunk ({wrong} wrong in all)"
        )
    return _record("noise_sensitivity", noted, noise.value, reason)


async def summary_score_entry(judge: Any, inputs: Mapping[str, Any], options: Any) -> Output:
    """``summary_score``: the answer as a summary of the contexts (ragas' length penalty,
    coeff 0.5)."""
    _filled(inputs, "contexts", "answer")
    noted = _Noting(judge)
    text = "\n".join(inputs["contexts"])
    judged = await summary_judgement(noted, text, inputs["answer"])
    value = summary_score(judged.answered, text, inputs["answer"], True, 0.5)
    if value is None:
        reason = "not computed: no questions came from the contexts"
    else:
        reason = f"{sum(judged.answered)} of {len(judged.questions)} questions answered"
    return _record("summary_score", noted, value, reason)


async def ragas_answer_correctness_entry(
    judge: Any, inputs: Mapping[str, Any], options: Any
) -> Output:
    """``ragas_answer_correctness``: ragas' factuality F1 of classified statements, weighed
    0.75, and the answer's embedding similarity to the reference answer, weighed 0.25."""
    _filled(inputs, "question", "answer", "reference_answer")
    name = "ragas_answer_correctness"
    noted = _Noting(judge)
    answer, reference = inputs["answer"], inputs["reference_answer"]
    classified = await statement_correctness(noted, inputs["question"], answer, reference)
    if not classified.answer or not classified.reference:
        side = "answer" if not classified.answer else "reference answer"
        return _record(name, noted, None, f"not computed: the {side} makes no statements")
    tp, fp, fn = classified.counts
    factuality = factuality_fbeta(tp, fp, fn)
    vectors, cost = await inputs["embedder"].embed([answer, reference])
    similarity = cosine(vectors[0], vectors[1])
    value = weighted_correctness(factuality, similarity, (0.75, 0.25))
    reason = f"factuality {factuality:.4f} (TP {tp}, FP {fp}, FN {fn}), similarity {similarity:.4f}"
    return _record(name, noted, value, reason, cost)


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
    budget = prompt_budget(judge, options)
    schema = json_schema(TopicsReply)

    def tokens(calls: Sequence[Call]) -> int:
        text = render("topic_extraction", conversation=conversation(question, calls, answer))
        return estimated_prompt_tokens([{"role": "user", "content": text}], schema)

    fitted = fit(actual_calls(inputs.get("steps") or []), tokens, budget)
    if not fitted.fits:
        return not_evaluated(name, fitted, budget)
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
    reason += shortened_note(fitted, budget)
    values = {name: outcome.value, f"{name}_reason": reason}
    return Output.judged(name, values, *noted.verdicts)
