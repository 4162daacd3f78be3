"""ragas 0.4.3's answer-side LLM metrics of ``ragas.metrics.collections``, over qa-eval engines
(each engine's docstring gives the formula and its source):

- :class:`AnswerAccuracy` - ``metrics.ragas.two_raters``: two raters score the response against the
  reference on 0/2/4 (the second with the two swapped); (r₁/4 + r₂/4) / 2.
- :class:`ResponseGroundedness` - ``metrics.ragas.two_raters``: two raters score how far the
  retrieved contexts support the response on 0/1/2; (r₁/2 + r₂/2) / 2.
- :class:`FactualCorrectness` - ``metrics.ragas.factual_correctness``: claims of the response (and,
  but for precision mode, of the reference) judged by NLI against the other text; precision, recall
  or F-beta of the verdicts, rounded to two decimals.
- :class:`AnswerCorrectness` - ``metrics.ragas.statement_correctness``: F-beta of the response's and
  the reference's statements classified TP/FP/FN, mixed with the embedding similarity by
  ``weights``.
- :class:`SummaryScore` - ``metrics.ragas.summary``: share of questions about the texts' keyphrases
  the summary answers, mixed with a conciseness term by ``coeff``.

Constructor arguments and ``ascore`` keywords are ragas'. Where qa-eval's policy differs (no
claims or no questions: value ``None`` with a reason, never NaN; both raters failing: an error)
``docs/ragas.md`` says so. Each result's :class:`AnswerDetails` holds the verdicts it came from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..ragas import judged as ragas_judged
from ..ragas.factual_correctness import GUIDANCE
from .base import BaseMetric, Scored, Session, require_embeddings, require_llm
from .result import Details, MetricResult, StatementVerdict

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


class _AgainstReference(BaseMetric):
    """A metric of the response against the reference for the user input: ragas' ``ascore`` of
    those three."""

    async def ascore(self, user_input: str, response: str, reference: str) -> MetricResult:
        """The score of ``response`` against ``reference`` for ``user_input``."""
        row = {"user_input": user_input, "response": response, "reference": reference}
        return await self.ascore_row(row)


class AnswerAccuracy(_AgainstReference):
    """Two raters' agreement of the response with the reference, on ragas' 0/2/4 scale."""

    def __init__(
        self, llm: Any, name: str = "answer_accuracy", max_retries: int = 5, **kwargs: Any
    ) -> None:
        self.llm = require_llm(type(self).__name__, llm)
        self.max_retries = _tries(max_retries)
        super().__init__(name, **kwargs)

    async def _compute_row(self, session: Session, row: dict[str, Any]) -> Scored:
        _required(row, "user_input", "response", "reference")
        judged = await ragas_judged.answer_accuracy(
            session.judge, row["user_input"], row["response"], row["reference"], self.max_retries
        )
        return Scored(judged.value, judged.reason, AnswerDetails(ratings=judged.found))


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
        judged = await ragas_judged.response_groundedness(
            session.judge, row["response"], row["retrieved_contexts"], self.max_retries
        )
        return Scored(judged.value, judged.reason, AnswerDetails(ratings=judged.found))


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
        judged = await ragas_judged.factual_correctness(
            session.judge,
            row["response"],
            row["reference"],
            self.mode,  # type: ignore[arg-type]
            self.beta,
            self.atomicity,  # type: ignore[arg-type]
            self.coverage,  # type: ignore[arg-type]
        )
        claims = judged.found
        details = AnswerDetails(
            claims=len(claims.response_claims),
            supported_claims=judged.numbers["tp"],
            response_claims=_verdicts(claims.response_claims),
            reference_claims=_verdicts(claims.reference_claims),
            **judged.numbers,
        )
        return Scored(judged.value, judged.reason, details)


class AnswerCorrectness(_AgainstReference):
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

    async def _compute_row(self, session: Session, row: dict[str, Any]) -> Scored:
        _required(row, "user_input", "response", "reference")
        judged = await ragas_judged.answer_correctness(
            session.judge,
            session.embedder,
            row["user_input"],
            row["response"],
            row["reference"],
            self.weights,
            self.beta,
        )
        classified = judged.found
        answer = tuple(StatementVerdict(s, ok, why) for s, ok, why in classified.answer)
        truth = tuple(StatementVerdict(s, ok, why) for s, ok, why in classified.reference)
        numbers = judged.numbers
        details = AnswerDetails(
            claims=len(answer) if numbers else None,
            supported_claims=numbers.get("tp"),
            similarity=numbers.get("similarity"),
            response_claims=answer,
            reference_claims=truth,
            tp=numbers.get("tp"),
            fp=numbers.get("fp"),
            fn=numbers.get("fn"),
            factuality=numbers.get("factuality"),
        )
        return Scored(judged.value, judged.reason, details)


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
        judged = await ragas_judged.summary(
            session.judge, contexts, summary, self.length_penalty, self.coeff
        )
        found = judged.found
        details = AnswerDetails(
            questions=found.questions,
            statements=tuple(
                StatementVerdict(q, ok) for q, ok in zip(found.questions, found.answered)
            ),
            keyphrases=found.keyphrases,
            conciseness=judged.numbers["conciseness"],
        )
        return Scored(judged.value, judged.reason, details)
