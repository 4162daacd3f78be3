"""ragas 0.4.3's collections metrics whose engines qa-eval already has, as thin faces over them:
the same judge calls, prompts and formulas as a full run, so a result's value equals what
``run_evaluation`` writes for that question (and the same cache entries serve both).

- :class:`Faithfulness` - ``metrics.retrieval.faithfulness``: supported statements / statements of
  the response (ragas ``Faithfulness``; section 1 of ``graphrag-metrics.md``).
- :class:`AnswerRelevancy` - ``metrics.answer.relevance``: mean cosine of the user input to
  ``strictness`` questions generated from the response, 0 when all are noncommittal (ragas
  ``AnswerRelevancy``).
- :class:`ContextPrecisionWithReference` / :class:`ContextPrecision` -
  ``metrics.retrieval.flat_context``: Σ_k precision@k · v_k / (Σ v_k + 1e-10), v_k = chunk k useful
  for the reference (ragas' average precision, ``context_precision_ap`` of a run);
  :class:`ContextPrecisionWithoutReference` / :class:`ContextUtilization` judge usefulness for the
  response instead.
- :class:`ContextRecall` - ``metrics.retrieval.flat_context``: reference statements attributed to
  the contexts / reference statements (ragas ``ContextRecall``).
- :class:`SemanticSimilarity` - ``metrics.answer.similarity``: max(0, cosine) of the response's and
  the reference's embeddings (ragas ``SemanticSimilarity`` does not clip at 0); with ``threshold``,
  the value is 1.0 or 0.0 as in ragas, the cosine stays in ``details.similarity``.

Where qa-eval's policy differs from ragas' (one call for all chunks or statements; a response
without claims is "not computed", value ``None``, not NaN; an empty response scores what a run
writes instead of raising) ``docs/ragas.md`` says so. Constructor arguments and ``ascore``
keywords are ragas'.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import JudgeError
from ..answer.relevance import relevance_output
from ..answer.similarity import similarity_output
from ..ragas.judged import tally
from ..retrieval import faithfulness as faith
from ..retrieval.flat_context import context_precision, context_recall_metric
from .base import BaseMetric, Scored, Session, require_embeddings, require_llm
from .result import ChunkVerdict, Details, MetricResult, StatementVerdict

__all__ = [
    "AnswerRelevancy",
    "ContextPrecision",
    "ContextPrecisionWithReference",
    "ContextPrecisionWithoutReference",
    "ContextRecall",
    "ContextUtilization",
    "Faithfulness",
    "SemanticSimilarity",
]


def _required(row: Mapping[str, Any], *names: str) -> None:
    """ragas' input checks: each of ``names`` must be given and not empty."""
    for name in names:
        if not row.get(name):
            raise ValueError(f"{name} is missing or empty")


def _raise_error(keys: Mapping[str, Any], metric: str) -> None:
    """A judge failure the engine recorded as ``<metric>_error``, raised again."""
    error = keys.get(f"{metric}_error")
    if error is not None:
        raise JudgeError(str(error))


class Faithfulness(BaseMetric):
    """Share of the response's statements the retrieved contexts support."""

    def __init__(self, llm: Any, name: str = "faithfulness", **kwargs: Any) -> None:
        self.llm = require_llm(type(self).__name__, llm)
        super().__init__(name, **kwargs)

    async def ascore(
        self, user_input: str, response: str, retrieved_contexts: list[str]
    ) -> MetricResult:
        """The faithfulness of ``response`` to ``retrieved_contexts``."""
        row = {
            "user_input": user_input,
            "response": response,
            "retrieved_contexts": retrieved_contexts,
        }
        return await self.ascore_row(row)

    async def _compute_row(self, session: Session, row: dict[str, Any]) -> Scored:
        _required(row, "user_input", "retrieved_contexts")
        inputs = {
            "question": row["user_input"],
            "answer": row["response"],
            "contexts": list(row["retrieved_contexts"]),
        }
        output = await faith.score(session.judge, inputs, {})
        if output.error is not None:
            raise JudgeError(output.error)
        values = output.values
        statements = tuple(
            StatementVerdict(s["statement"], bool(s["supported"]), s.get("reason", ""))
            for s in values.get("faithfulness_statements", [])
        )
        if "faithfulness" not in values:
            return Scored(None, values.get("faithfulness_reason", faith.NO_CLAIMS), Details())
        pairs = [(s.statement, s.supported) for s in statements]
        details = Details(
            statements=statements,
            claims=len(statements),
            supported_claims=sum(1 for s in statements if s.supported),
        )
        reason = tally(pairs, "statements", "supported by the contexts", "unsupported")
        return Scored(values["faithfulness"], reason, details)


class AnswerRelevancy(BaseMetric):
    """Mean cosine of the user input to questions generated from the response."""

    def __init__(
        self,
        llm: Any,
        embeddings: Any,
        name: str = "answer_relevancy",
        strictness: int = 3,
        **kwargs: Any,
    ) -> None:
        self.llm = require_llm(type(self).__name__, llm)
        self.embeddings = require_embeddings(type(self).__name__, embeddings)
        if not isinstance(strictness, int) or strictness < 1:
            raise ValueError(f"strictness must be a whole number of at least 1, not {strictness}")
        self.strictness = strictness
        super().__init__(name, **kwargs)

    async def ascore(self, user_input: str, response: str) -> MetricResult:
        """The relevancy of ``response`` to ``user_input``."""
        row = {"user_input": user_input, "response": response}
        return await self.ascore_row(row)

    async def _compute_row(self, session: Session, row: dict[str, Any]) -> Scored:
        _required(row, "user_input")
        embedder = session.embedder or self.embeddings
        assert embedder is not None
        output = await relevance_output(
            session.judge,
            embedder,
            row["user_input"],
            row["response"],
            self.strictness,
        )
        value = output.values["answer_relevance"]
        questions = tuple(output.values.get("answer_relevance_questions", ()))
        if not questions:
            reason = "the response is empty" if not row["response"].strip() else "no questions"
        else:
            reason = (
                f"mean cosine similarity of the user input to {len(questions)} questions "
                f"generated from the response: {value:.4f} (0 when all are noncommittal)"
            )
        return Scored(value, reason, Details(questions=questions))


class _JudgedPrecision(BaseMetric):
    """ragas' average precision of the retrieved chunks, usefulness judged for the row's
    ``_for`` (``reference`` or ``response``)."""

    _for: str

    def __init__(self, llm: Any, name: str, **kwargs: Any) -> None:
        self.llm = require_llm(type(self).__name__, llm)
        super().__init__(name, **kwargs)

    async def _compute_row(self, session: Session, row: dict[str, Any]) -> Scored:
        _required(row, "user_input", self._for)
        target = row[self._for]
        if self._for == "reference":
            return await _precision(session, row, reference=target, answer=None)
        return await _precision(session, row, reference=None, answer=target)


class ContextPrecisionWithReference(_JudgedPrecision):
    """ragas' average precision of the retrieved chunks, usefulness judged for the reference."""

    _for = "reference"

    def __init__(
        self, llm: Any, name: str = "context_precision_with_reference", **kwargs: Any
    ) -> None:
        super().__init__(llm, name, **kwargs)

    async def ascore(
        self, user_input: str, reference: str, retrieved_contexts: list[str]
    ) -> MetricResult:
        """The precision of ``retrieved_contexts`` for arriving at ``reference``."""
        row = {"user_input": user_input, "reference": reference}
        return await self.ascore_row({**row, "retrieved_contexts": retrieved_contexts})


class ContextPrecision(ContextPrecisionWithReference):
    """:class:`ContextPrecisionWithReference` under ragas' short name."""

    def __init__(self, llm: Any, name: str = "context_precision", **kwargs: Any) -> None:
        super().__init__(llm, name=name, **kwargs)


class ContextPrecisionWithoutReference(_JudgedPrecision):
    """ragas' average precision of the retrieved chunks, usefulness judged for the response."""

    _for = "response"

    def __init__(
        self, llm: Any, name: str = "context_precision_without_reference", **kwargs: Any
    ) -> None:
        super().__init__(llm, name, **kwargs)

    async def ascore(
        self, user_input: str, response: str, retrieved_contexts: list[str]
    ) -> MetricResult:
        """The precision of ``retrieved_contexts`` for arriving at ``response``."""
        row = {"user_input": user_input, "response": response}
        return await self.ascore_row({**row, "retrieved_contexts": retrieved_contexts})


class ContextUtilization(ContextPrecisionWithoutReference):
    """:class:`ContextPrecisionWithoutReference` under ragas' other name."""

    def __init__(self, llm: Any, name: str = "context_utilization", **kwargs: Any) -> None:
        super().__init__(llm, name=name, **kwargs)


async def _precision(
    session: Session, row: Mapping[str, Any], reference: str | None, answer: str | None
) -> Scored:
    keys = await context_precision(
        session.judge,
        row["user_input"],
        list(row.get("retrieved_contexts") or []),
        reference=reference,
        answer=answer,
    )
    _raise_error(keys, "context_precision")
    chunks = tuple(
        ChunkVerdict(v["chunk"], bool(v["relevant"]), v.get("reason", ""))
        for v in keys["context_precision_verdicts"]
    )
    if not chunks:
        reason = keys.get("context_precision_reason", "no contexts were retrieved")
    else:
        useful = [str(c.chunk) for c in chunks if c.useful]
        ranks = f" (ranks {', '.join(useful)})" if useful else ""
        reason = f"{len(useful)} of {len(chunks)} chunks useful{ranks}"
    details = Details(chunks=chunks, basis=keys.get("context_precision_basis"))
    return Scored(keys["context_precision_ap"], reason, details)


class ContextRecall(BaseMetric):
    """Share of the reference's statements the retrieved contexts support."""

    def __init__(self, llm: Any, name: str = "context_recall", **kwargs: Any) -> None:
        self.llm = require_llm(type(self).__name__, llm)
        super().__init__(name, **kwargs)

    async def ascore(
        self, user_input: str, retrieved_contexts: list[str], reference: str
    ) -> MetricResult:
        """The recall of ``retrieved_contexts`` for the statements of ``reference``."""
        row = {
            "user_input": user_input,
            "retrieved_contexts": retrieved_contexts,
            "reference": reference,
        }
        return await self.ascore_row(row)

    async def _compute_row(self, session: Session, row: dict[str, Any]) -> Scored:
        _required(row, "user_input", "reference")
        keys = await context_recall_metric(
            session.judge,
            row["user_input"],
            row["reference"],
            list(row.get("retrieved_contexts") or []),
        )
        _raise_error(keys, "context_recall")
        statements = tuple(
            StatementVerdict(s["statement"], bool(s["attributed"]), s.get("reason", ""))
            for s in keys.get("context_recall_statements", [])
        )
        if not statements:
            return Scored(keys.get("context_recall"), keys.get("context_recall_reason") or "")
        pairs = [(s.statement, s.supported) for s in statements]
        reason = tally(pairs, "reference statements", "attributed to the contexts", "missing")
        if keys.get("context_recall_reason"):
            reason = f"{reason}. {keys['context_recall_reason']}"
        details = Details(
            statements=statements,
            claims=len(statements),
            supported_claims=sum(1 for s in statements if s.supported),
        )
        return Scored(keys["context_recall"], reason, details)


class SemanticSimilarity(BaseMetric):
    """Cosine of the response's and the reference's embeddings (clipped at 0)."""

    def __init__(
        self,
        embeddings: Any,
        name: str = "semantic_similarity",
        threshold: float | None = None,
        **kwargs: Any,
    ) -> None:
        self.embeddings = require_embeddings(type(self).__name__, embeddings)
        super().__init__(name, threshold=threshold, **kwargs)

    async def ascore(self, reference: str, response: str) -> MetricResult:
        """The similarity of ``response`` to ``reference``."""
        row = {"reference": reference, "response": response}
        return await self.ascore_row(row)

    def _threshold(self) -> float | None:
        # ragas' threshold turns the value into 1.0 / 0.0; success then means 1.0
        return 0.5 if self.threshold else None

    async def _compute_row(self, session: Session, row: dict[str, Any]) -> Scored:
        embedder = session.embedder or self.embeddings
        assert embedder is not None
        output = await similarity_output(embedder, row["response"] or "", row["reference"] or "")
        similarity = output.values["semantic_similarity"]
        reason = f"cosine similarity of the response and the reference: {similarity:.4f}"
        value = similarity
        if self.threshold:
            value = 1.0 if similarity >= self.threshold else 0.0
            reason += f" ({'at least' if value else 'below'} the threshold {self.threshold:g})"
        return Scored(value, reason, Details(similarity=similarity))
