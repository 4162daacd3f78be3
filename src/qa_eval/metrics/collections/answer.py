"""ragas 0.4.3's answer-side LLM metrics of ``ragas.metrics.collections``, over qa-eval engines
(each engine's docstring gives the formula and its source):

- :class:`AnswerAccuracy` - ``metrics.two_raters``: two raters score the response against the
  reference on 0/2/4 (the second with the two swapped); (r₁/4 + r₂/4) / 2.
- :class:`ResponseGroundedness` - ``metrics.two_raters``: two raters score how far the retrieved
  contexts support the response on 0/1/2; (r₁/2 + r₂/2) / 2.
- :class:`FactualCorrectness` - ``metrics.factual_correctness``: claims of the response (and, but
  for precision mode, of the reference) judged by NLI against the other text; precision, recall or
  F-beta of the verdicts, rounded to two decimals.
- :class:`AnswerCorrectness` - ``metrics.statement_correctness``: F-beta of the response's and the
  reference's statements classified TP/FP/FN, mixed with the embedding similarity by ``weights``.
- :class:`SummaryScore` - ``metrics.summary``: share of questions about the texts' keyphrases the
  summary answers, mixed with a conciseness term by ``coeff``.

Constructor arguments and ``ascore`` keywords are ragas'. Where qa-eval's policy differs (no
claims or no questions: value ``None`` with a reason, never NaN; both raters failing: an error)
``docs/ragas.md`` says so. Each result's :class:`AnswerDetails` holds the verdicts it came from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..factual_correctness import GUIDANCE, factual_correctness_judgement, factual_score
from ..relevance import cosine
from ..statement_correctness import factuality_fbeta, statement_correctness, weighted_correctness
from ..summary import conciseness, summary_judgement, summary_score
from ..two_raters import answer_accuracy_ratings, groundedness_ratings, two_rater_score
from .base import BaseMetric, Scored, Session, require_embeddings, require_llm
from .result import Details, MetricResult, StatementVerdict, tally

__all__ = [
    "AnswerAccuracy",
    "AnswerCorrectness",
    "AnswerDetails",
    "FactualCorrectness",
    "ResponseGroundedness",
    "SummaryScore",
]


@dataclass(frozen=True)
class AnswerDetails(Details):
    """:class:`Details` with what the answer-side metrics are computed from."""

    ratings: tuple[int | None, ...] = ()
    """The two raters' ratings (``None``: no usable rating)."""
    response_claims: tuple[StatementVerdict, ...] = ()
    """Claims or statements of the response; ``supported``: by the reference (TP)."""
    reference_claims: tuple[StatementVerdict, ...] = ()
    """Claims or statements of the reference; ``supported``: by (stated in) the response."""
    tp: int | None = None
    fp: int | None = None
    fn: int | None = None
    factuality: float | None = None
    """AnswerCorrectness' factuality F-beta."""
    keyphrases: tuple[str, ...] = ()
    """SummaryScore's keyphrases of the texts."""
    conciseness: float | None = None
    """SummaryScore's length term."""


def _required(row: Mapping[str, Any], *names: str) -> None:
    """ragas' input checks: each of ``names`` must be given and not empty."""
    for name in names:
        if not row.get(name):
            raise ValueError(f"{name} is missing or empty")


def _tries(max_retries: Any) -> int:
    if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 1:
        raise ValueError(f"max_retries must be a whole number of at least 1, not {max_retries!r}")
    return max_retries


def _beta(beta: Any) -> float:
    if isinstance(beta, bool) or not isinstance(beta, (int, float)):
        raise ValueError("beta must be a number: above 1 weighs recall more, below 1 precision")
    return float(beta)


def _rated(names: Sequence[str], ratings: Sequence[int | None], top: int) -> str:
    parts = [
        f"{name} {'gave no usable rating' if r is None else f'rated {r} of {top}'}"
        for name, r in zip(names, ratings)
    ]
    return "; ".join(parts)


class AnswerAccuracy(BaseMetric):
    """Two raters' agreement of the response with the reference, on ragas' 0/2/4 scale."""

    def __init__(
        self, llm: Any, name: str = "answer_accuracy", max_retries: int = 5, **kwargs: Any
    ) -> None:
        self.llm = require_llm(type(self).__name__, llm)
        self.max_retries = _tries(max_retries)
        super().__init__(name, **kwargs)

    async def ascore(self, user_input: str, response: str, reference: str) -> MetricResult:
        """The accuracy of ``response`` against ``reference`` for ``user_input``."""
        row = {"user_input": user_input, "response": response, "reference": reference}
        return await self.ascore_row(row)

    async def _compute_row(self, session: Session, row: dict[str, Any]) -> Scored:
        _required(row, "user_input", "response", "reference")
        ratings = await answer_accuracy_ratings(
            session.judge, row["user_input"], row["response"], row["reference"], self.max_retries
        )
        value = two_rater_score(*ratings, top=4)
        names = ("rater 1", "rater 2 (response and reference swapped)")
        reason = f"{_rated(names, ratings, 4)}: accuracy {value:.4g}"
        return Scored(value, reason, AnswerDetails(ratings=ratings))


class ResponseGroundedness(BaseMetric):
    """Two raters' judgement of how far the retrieved contexts support the response (0/1/2)."""

    def __init__(
        self, llm: Any, name: str = "response_groundedness", max_retries: int = 5, **kwargs: Any
    ) -> None:
        self.llm = require_llm(type(self).__name__, llm)
        self.max_retries = _tries(max_retries)
        super().__init__(name, **kwargs)

    async def ascore(self, response: str, retrieved_contexts: list[str]) -> MetricResult:
        """The groundedness of ``response`` in ``retrieved_contexts``."""
        row = {"response": response, "retrieved_contexts": retrieved_contexts}
        return await self.ascore_row(row)

    async def _compute_row(self, session: Session, row: dict[str, Any]) -> Scored:
        _required(row, "response", "retrieved_contexts")
        context = "\n".join(row["retrieved_contexts"])
        if not row["response"].strip():
            return Scored(None, "the response is blank: nothing to ground", AnswerDetails())
        if not context.strip():
            return Scored(0.0, "the retrieved contexts are blank: nothing supports the response")
        ratings = await groundedness_ratings(
            session.judge, row["response"], context, self.max_retries
        )
        value = two_rater_score(*ratings, top=2)
        reason = f"{_rated(('rater 1', 'rater 2'), ratings, 2)}: groundedness {value:.4g}"
        return Scored(value, reason, AnswerDetails(ratings=ratings))


def _verdicts(items: Sequence[Any]) -> tuple[StatementVerdict, ...]:
    return tuple(StatementVerdict(c.claim, c.supported, c.reason) for c in items)


class FactualCorrectness(BaseMetric):
    """Precision, recall or F-beta of the response's and the reference's claims, judged by NLI
    against each other."""

    def __init__(
        self,
        llm: Any,
        mode: str = "f1",
        beta: float = 1.0,
        atomicity: str = "low",
        coverage: str = "low",
        name: str = "factual_correctness",
        **kwargs: Any,
    ) -> None:
        self.llm = require_llm(type(self).__name__, llm)
        if mode not in ("precision", "recall", "f1"):
            raise ValueError(f"mode must be 'precision', 'recall' or 'f1', not {mode!r}")
        if (atomicity, coverage) not in GUIDANCE:
            raise ValueError(
                f"atomicity and coverage must each be 'low' or 'high', not {atomicity!r}, "
                f"{coverage!r}"
            )
        self.mode = mode
        self.beta = _beta(beta)
        self.atomicity = atomicity
        self.coverage = coverage
        super().__init__(name, **kwargs)

    async def ascore(self, response: str, reference: str) -> MetricResult:
        """The factual correctness of ``response`` against ``reference``."""
        row = {"response": response, "reference": reference}
        return await self.ascore_row(row)

    async def _compute_row(self, session: Session, row: dict[str, Any]) -> Scored:
        _required(row, "response", "reference")
        judged = await factual_correctness_judgement(
            session.judge,
            row["response"],
            row["reference"],
            self.mode,  # type: ignore[arg-type]
            self.atomicity,  # type: ignore[arg-type]
            self.coverage,  # type: ignore[arg-type]
        )
        ours = [c.supported for c in judged.response_claims]
        theirs = [c.supported for c in judged.reference_claims]
        value = factual_score(ours, theirs, self.mode, self.beta)  # type: ignore[arg-type]
        tp = sum(ours)
        fp = len(ours) - tp
        fn = None if self.mode == "precision" else len(theirs) - sum(theirs)
        details = AnswerDetails(
            claims=len(ours),
            supported_claims=tp,
            response_claims=_verdicts(judged.response_claims),
            reference_claims=_verdicts(judged.reference_claims),
            tp=tp,
            fp=fp,
            fn=fn,
        )
        pairs = [(c.claim, c.supported) for c in judged.response_claims]
        text = tally(pairs, "response claims", "supported by the reference", "unsupported")
        if fn is not None:
            missed = [(c.claim, c.supported) for c in judged.reference_claims]
            text += "; " + tally(missed, "reference claims", "in the response", "missing")
        if value is None:
            return Scored(None, f"not computed: {self._undefined(ours, theirs)}; {text}", details)
        return Scored(value, f"{self.mode} {value:.2f}: {text}", details)

    def _undefined(self, ours: Sequence[bool], theirs: Sequence[bool]) -> str:
        if self.mode == "precision":
            return "the response makes no claims (tp + fp = 0)"
        if self.mode == "recall":
            return "no response claim is supported and no reference claim is missing (tp + fn = 0)"
        return "the response makes no claims and no reference claim is missing (tp + fp = fn = 0)"


class AnswerCorrectness(BaseMetric):
    """ragas' answer correctness: factuality F-beta of classified statements, mixed with the
    embedding similarity of the response to the reference."""

    def __init__(
        self,
        llm: Any,
        embeddings: Any = None,
        name: str = "answer_correctness",
        weights: Sequence[float] = (0.75, 0.25),
        beta: float = 1.0,
        **kwargs: Any,
    ) -> None:
        self.llm = require_llm(type(self).__name__, llm)
        weights = list(weights)
        if len(weights) != 2:
            raise ValueError(
                "weights must be two numbers: for factuality, then for semantic similarity"
            )
        if all(w == 0 for w in weights):
            raise ValueError("at least one weight must be non-zero")
        if not all(w >= 0 for w in weights):
            raise ValueError("weights must not be negative")
        if weights[1] > 0 and embeddings is None:
            raise ValueError(
                "embeddings are needed for the similarity weight: give embeddings, or "
                "weights=[1.0, 0.0] for factuality alone"
            )
        if embeddings is not None:
            self.embeddings = require_embeddings(type(self).__name__, embeddings)
        self.weights = weights
        self.beta = _beta(beta)
        super().__init__(name, **kwargs)

    async def ascore(self, user_input: str, response: str, reference: str) -> MetricResult:
        """The correctness of ``response`` against ``reference`` for ``user_input``."""
        row = {"user_input": user_input, "response": response, "reference": reference}
        return await self.ascore_row(row)

    async def _compute_row(self, session: Session, row: dict[str, Any]) -> Scored:
        _required(row, "user_input", "response", "reference")
        classified = await statement_correctness(
            session.judge, row["user_input"], row["response"], row["reference"]
        )
        answer = tuple(StatementVerdict(s, ok, why) for s, ok, why in classified.answer)
        truth = tuple(StatementVerdict(s, ok, why) for s, ok, why in classified.reference)
        if not answer or not truth:
            side = "response" if not answer else "reference"
            details = AnswerDetails(response_claims=answer, reference_claims=truth)
            return Scored(None, f"not computed: the {side} makes no statements", details)
        tp, fp, fn = classified.counts
        factuality = factuality_fbeta(tp, fp, fn, self.beta)
        similarity = None
        if self.weights[1] != 0:
            embedder = session.embedder
            assert embedder is not None
            vectors, _ = await embedder.embed([row["response"], row["reference"]])
            similarity = cosine(vectors[0], vectors[1])
        value = weighted_correctness(factuality, similarity or 0.0, self.weights)
        details = AnswerDetails(
            claims=len(answer),
            supported_claims=tp,
            similarity=similarity,
            response_claims=answer,
            reference_claims=truth,
            tp=tp,
            fp=fp,
            fn=fn,
            factuality=factuality,
        )
        sim = "not used" if similarity is None else f"{similarity:.4f}"
        reason = (
            f"factuality {factuality:.4f} (TP {tp}, FP {fp}, FN {fn}), similarity {sim}, "
            f"weights {self.weights[0]:g}/{self.weights[1]:g}: {value:.4f}"
        )
        return Scored(value, reason, details)


class SummaryScore(BaseMetric):
    """Share of keyphrase questions about the texts that the summary answers, mixed with its
    conciseness."""

    def __init__(
        self,
        llm: Any,
        name: str = "summary_score",
        length_penalty: bool = True,
        coeff: float = 0.5,
        **kwargs: Any,
    ) -> None:
        self.llm = require_llm(type(self).__name__, llm)
        if isinstance(coeff, bool) or not isinstance(coeff, (int, float)) or not 0 <= coeff <= 1:
            raise ValueError(f"coeff must be between 0.0 and 1.0, not {coeff!r}")
        self.length_penalty = bool(length_penalty)
        self.coeff = float(coeff)
        super().__init__(name, **kwargs)

    async def ascore(self, reference_contexts: list[str], response: str) -> MetricResult:
        """The score of the summary ``response`` of ``reference_contexts``."""
        row = {"reference_contexts": reference_contexts, "response": response}
        return await self.ascore_row(row)

    async def _compute_row(self, session: Session, row: dict[str, Any]) -> Scored:
        contexts = row.get("reference_contexts") or []
        if not any(c.strip() for c in contexts):
            raise ValueError("reference_contexts is missing, empty or blank")
        summary = row.get("response") or ""
        if not summary.strip():
            raise ValueError("response is missing, empty or blank")
        text = "\n".join(contexts)
        judged = await summary_judgement(session.judge, text, summary)
        value = summary_score(judged.answered, text, summary, self.length_penalty, self.coeff)
        short = conciseness(text, summary) if self.length_penalty else None
        details = AnswerDetails(
            questions=judged.questions,
            statements=tuple(
                StatementVerdict(q, ok) for q, ok in zip(judged.questions, judged.answered)
            ),
            keyphrases=judged.keyphrases,
            conciseness=short,
        )
        if value is None:
            return Scored(None, "not computed: no questions came from the texts", details)
        pairs = list(zip(judged.questions, judged.answered))
        reason = tally(pairs, "questions", "answered by the summary", "not answered")
        if short is not None:
            reason += f"; conciseness {short:.4f}, coeff {self.coeff:g}"
        return Scored(value, f"{reason}: {value:.4f}", details)
