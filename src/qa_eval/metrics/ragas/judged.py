"""ragas 0.4.3's LLM metrics computed once for both faces: the value and its reason from the
engines' verdicts, for the per-sample classes (``metrics.collections``) and for the run's entry
points (``metrics.ragas.entries``), so a run's ``<key>_reason`` is the class's ``reason``.

Each function takes ragas' inputs (already checked by its caller), runs the engine and returns a
:class:`Judged`: the value (``None`` when undefined, with the reason saying why), the reason built
from the verdicts ("2 of 3 response claims supported by the reference; unsupported: …") and the
engine's verdicts for the class's ``details``. The formulas and their sources are in the engines'
docstrings: ``two_raters`` (AnswerAccuracy, ResponseGroundedness), ``factual_correctness``,
``statement_correctness`` (AnswerCorrectness), ``summary``, ``entity_recall``,
``context_relevance``, ``noise_sensitivity``, ``sql_equivalence``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..answer.relevance import cosine
from .context_relevance import ContextRating, context_rating
from .entity_recall import EntityRecall, entity_recall
from .factual_correctness import FactualJudgement, factual_correctness_judgement, factual_score
from .noise_sensitivity import Noise, noise_sensitivity
from .rubrics import RubricOutcome, rubric_score
from .sql_equivalence import SqlEquivalence, sql_equivalence
from .statement_correctness import (
    Classified,
    factuality_fbeta,
    statement_correctness,
    weighted_correctness,
)
from .summary import SummaryJudgement, conciseness, summary_judgement, summary_score
from .two_raters import answer_accuracy_ratings, groundedness_ratings, two_rater_score

__all__ = [
    "Judged",
    "answer_accuracy",
    "answer_correctness",
    "clip",
    "context_entity_recall",
    "context_relevance",
    "factual_correctness",
    "noise_sensitivity_judged",
    "response_groundedness",
    "rubric",
    "sql_semantic_equivalence",
    "summary",
    "tally",
]


@dataclass(frozen=True)
class Judged:
    """A value, the reason built from its verdicts, and the verdicts."""

    value: float | None
    reason: str
    found: Any = None
    """The engine's verdicts (its own record: ``FactualJudgement``, ``Noise``, ...)."""
    numbers: dict[str, Any] = field(default_factory=dict)
    """Intermediate numbers the reason states (``tp``, ``factuality``, ``similarity``, ...)."""


def clip(text: str, limit: int = 80) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def tally(items: Sequence[tuple[str, bool]], noun: str, verb: str, negative: str) -> str:
    """A reason built from verdicts: "2 of 3 statements supported; unsupported: 'x'"."""
    good = sum(1 for _, ok in items if ok)
    text = f"{good} of {len(items)} {noun} {verb}"
    bad = [f"{clip(what)!r}" for what, ok in items if not ok]
    return f"{text}; {negative}: {'; '.join(bad)}" if bad else text


def _rated(names: Sequence[str], ratings: Sequence[int | None], top: int) -> str:
    parts = [
        f"{name} {'gave no usable rating' if r is None else f'rated {r} of {top}'}"
        for name, r in zip(names, ratings)
    ]
    return "; ".join(parts)


async def answer_accuracy(
    judge: Any, user_input: str, response: str, reference: str, max_retries: int
) -> Judged:
    """AnswerAccuracy: two raters, the second with response and reference swapped."""
    ratings = await answer_accuracy_ratings(judge, user_input, response, reference, max_retries)
    value = two_rater_score(*ratings, top=4)
    names = ("rater 1", "rater 2 (response and reference swapped)")
    return Judged(value, f"{_rated(names, ratings, 4)}: accuracy {value:.4g}", ratings)


async def response_groundedness(
    judge: Any, response: str, contexts: Sequence[str], max_retries: int
) -> Judged:
    """ResponseGroundedness: two raters of the response against the joined contexts."""
    context = "\n".join(contexts)
    if not response.strip():
        return Judged(None, "the response is blank: nothing to ground", ())
    if not context.strip():
        return Judged(0.0, "the retrieved contexts are blank: nothing supports the response", ())
    ratings = await groundedness_ratings(judge, response, context, max_retries)
    value = two_rater_score(*ratings, top=2)
    reason = f"{_rated(('rater 1', 'rater 2'), ratings, 2)}: groundedness {value:.4g}"
    return Judged(value, reason, ratings)


Mode = Literal["precision", "recall", "f1"]
Level = Literal["low", "high"]


def _undefined(mode: str) -> str:
    if mode == "precision":
        return "the response makes no claims (tp + fp = 0)"
    if mode == "recall":
        return "no response claim is supported and no reference claim is missing (tp + fn = 0)"
    return "the response makes no claims and no reference claim is missing (tp + fp = fn = 0)"


async def factual_correctness(
    judge: Any,
    response: str,
    reference: str,
    mode: Mode = "f1",
    beta: float = 1.0,
    atomicity: Level = "low",
    coverage: Level = "low",
) -> Judged:
    """FactualCorrectness: the claims of each side judged by NLI against the other."""
    judged: FactualJudgement = await factual_correctness_judgement(
        judge, response, reference, mode, atomicity, coverage
    )
    ours = [c.supported for c in judged.response_claims]
    theirs = [c.supported for c in judged.reference_claims]
    value = factual_score(ours, theirs, mode, beta)
    tp = sum(ours)
    fn = None if mode == "precision" else len(theirs) - sum(theirs)
    numbers = {"tp": tp, "fp": len(ours) - tp, "fn": fn}
    pairs = [(c.claim, c.supported) for c in judged.response_claims]
    text = tally(pairs, "response claims", "supported by the reference", "unsupported")
    if fn is not None:
        missed = [(c.claim, c.supported) for c in judged.reference_claims]
        text += "; " + tally(missed, "reference claims", "in the response", "missing")
    if value is None:
        return Judged(None, f"not computed: {_undefined(mode)}; {text}", judged, numbers)
    return Judged(value, f"{mode} {value:.2f}: {text}", judged, numbers)


async def answer_correctness(
    judge: Any,
    embedder: Any,
    user_input: str,
    response: str,
    reference: str,
    weights: Sequence[float] = (0.75, 0.25),
    beta: float = 1.0,
) -> Judged:
    """AnswerCorrectness: factuality F-beta of classified statements mixed with the embedding
    similarity by ``weights`` (no embedder needed when the similarity's weight is 0)."""
    classified: Classified = await statement_correctness(judge, user_input, response, reference)
    if not classified.answer or not classified.reference:
        side = "response" if not classified.answer else "reference"
        return Judged(None, f"not computed: the {side} makes no statements", classified)
    tp, fp, fn = classified.counts
    factuality = factuality_fbeta(tp, fp, fn, beta)
    similarity = None
    numbers: dict[str, Any] = {"tp": tp, "fp": fp, "fn": fn, "factuality": factuality}
    if weights[1] != 0:
        vectors, numbers["embedding_cost"] = await embedder.embed([response, reference])
        similarity = cosine(vectors[0], vectors[1])
    numbers["similarity"] = similarity
    value = weighted_correctness(factuality, similarity or 0.0, weights)
    sim = "not used" if similarity is None else f"{similarity:.4f}"
    reason = (
        f"factuality {factuality:.4f} (TP {tp}, FP {fp}, FN {fn}), similarity {sim}, "
        f"weights {weights[0]:g}/{weights[1]:g}: {value:.4f}"
    )
    return Judged(value, reason, classified, numbers)


async def summary(
    judge: Any,
    contexts: Sequence[str],
    response: str,
    length_penalty: bool = True,
    coeff: float = 0.5,
) -> Judged:
    """SummaryScore: the keyphrase questions the summary answers, mixed with its conciseness."""
    text = "\n".join(contexts)
    judged: SummaryJudgement = await summary_judgement(judge, text, response)
    value = summary_score(judged.answered, text, response, length_penalty, coeff)
    short = conciseness(text, response) if length_penalty else None
    numbers = {"conciseness": short}
    if value is None:
        return Judged(None, "not computed: no questions came from the texts", judged, numbers)
    pairs = list(zip(judged.questions, judged.answered))
    reason = tally(pairs, "questions", "answered by the summary", "not answered")
    if short is not None:
        reason += f"; conciseness {short:.4f}, coeff {coeff:g}"
    return Judged(value, f"{reason}: {value:.4f}", judged, numbers)


async def context_entity_recall(judge: Any, reference: str, contexts: Sequence[str]) -> Judged:
    """ContextEntityRecall: the reference's entities the contexts name too."""
    found: EntityRecall = await entity_recall(judge, reference, list(contexts))
    if found.value is None:
        return Judged(None, "the reference names no entities", found)
    recalled = set(found.recalled)
    pairs = [(e, e in recalled) for e in dict.fromkeys(found.reference_entities)]
    reason = tally(pairs, "reference entities", "named in the contexts", "missing")
    return Judged(found.value, reason, found)


async def context_relevance(judge: Any, user_input: str, contexts: Sequence[str]) -> Judged:
    """ContextRelevance: two raters' 0/1/2 ratings of the joined contexts."""
    rated: ContextRating = await context_rating(judge, user_input, list(contexts))
    if rated.skipped is not None:
        return Judged(0.0, f"0 without asking: {rated.skipped}", rated)
    shown = ", ".join("none" if r is None else str(r) for r in rated.ratings)
    reason = f"ratings (0-2) of the two raters: {shown}; mean of the halves: {rated.value:g}"
    return Judged(rated.value, reason, rated)


async def noise_sensitivity_judged(
    judge: Any,
    user_input: str,
    response: str,
    reference: str,
    contexts: Sequence[str],
    mode: Literal["relevant", "irrelevant"] = "relevant",
) -> Judged:
    """NoiseSensitivity: the response's wrong statements supported by a relevant (or only an
    irrelevant) chunk."""
    noise: Noise = await noise_sensitivity(
        judge, user_input, response, reference, list(contexts), mode
    )
    if noise.value is None:
        return Judged(None, noise.reason or "not computed", noise)
    wrong = len(noise.correct) - sum(noise.correct)
    kind = "a relevant" if mode == "relevant" else "only an irrelevant"
    relevant = [str(k) for k, ok in enumerate(noise.relevant_chunks, 1) if ok]
    reason = (
        f"{round(noise.value * len(noise.correct))} of {len(noise.correct)} response "
        f"statements are wrong (unsupported by the reference) yet supported by {kind} chunk; "
        f"{wrong} wrong in all; relevant chunks: {', '.join(relevant) or 'none'}"
    )
    return Judged(noise.value, reason, noise)


async def sql_semantic_equivalence(
    judge: Any, response: str, reference: str, schema: Sequence[str] = ()
) -> Judged:
    """SQLSemanticEquivalence: 1.0 when the judge finds the two queries equivalent."""
    judged: SqlEquivalence = await sql_equivalence(judge, response, reference, schema)
    verdict = "equivalent" if judged.value else "not equivalent"
    reason = (
        f"{verdict}. Response: {judged.response_explanation} "
        f"Reference: {judged.reference_explanation}"
    )
    return Judged(judged.value, reason, judged)


async def rubric(judge: Any, rubrics: Mapping[str, str], **inputs: Any) -> Judged:
    """The rubric metrics: the level the judge picks on ``rubrics`` for the given inputs
    (``rubric_score``'s keywords), its feedback as the reason."""
    outcome: RubricOutcome = await rubric_score(judge, rubrics, **inputs)
    reason = outcome.feedback.strip() or f"rubric score {outcome.score}"
    return Judged(float(outcome.score), reason, outcome)
