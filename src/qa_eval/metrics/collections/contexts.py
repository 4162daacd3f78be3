"""ragas 0.4.3's context-side LLM metrics of ``ragas.metrics.collections`` whose engines are new
in qa-eval, as per-sample classes (constructor arguments and ``ascore`` keywords are ragas'):

- :class:`ContextEntityRecall` - ``metrics.ragas.entity_recall``: |RE ∩ CE| / (|RE| + 1e-8), the
  reference's entities the contexts also name.
- :class:`ContextRelevance` - ``metrics.ragas.context_relevance``: two raters' 0/1/2 ratings of the
  joined contexts, each halved, averaged.
- :class:`NoiseSensitivity` - ``metrics.ragas.noise_sensitivity``: the share of the response's
  statements that are wrong yet supported by a relevant (or, ``mode="irrelevant"``, an
  irrelevant) chunk; lower is better.
- :class:`SQLSemanticEquivalence` - ``metrics.ragas.sql_equivalence``: 1.0 when the judge finds the
  two queries equivalent on the schema, else 0.0.

Where qa-eval's policy differs (fewer calls; "not computed" with a reason instead of NaN or 0)
each engine's docstring and ``docs/ragas.md`` say so. ``details`` is :class:`ContextDetails`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ...errors import SetupError
from ..ragas import judged as ragas_judged
from ..ragas.noise_sensitivity import MODES
from .base import BaseMetric, Scored, Session, require_llm
from .result import Details, MetricResult, StatementVerdict

__all__ = [
    "ContextDetails",
    "ContextEntityRecall",
    "ContextRelevance",
    "NoiseSensitivity",
    "SQLSemanticEquivalence",
]


@dataclass(frozen=True)
class ContextDetails(Details):
    """:class:`Details` with what these metrics are computed from."""

    reference_entities: tuple[str, ...] = ()
    """The reference's entities (context entity recall)."""
    context_entities: tuple[str, ...] = ()
    """The contexts' entities (context entity recall)."""
    ratings: tuple[int | None, ...] = ()
    """Each rater's 0/1/2 rating, ``None`` when it gave none (context relevance)."""
    reference_statements: tuple[StatementVerdict, ...] = ()
    """The reference's statements; supported = found in some chunk (noise sensitivity)."""
    relevant_chunks: tuple[int, ...] = ()
    """1-based ranks of the chunks supporting part of the reference (noise sensitivity)."""
    equivalent: bool | None = None
    """The judge's verdict (SQL semantic equivalence)."""


class _Judged(BaseMetric):
    """A metric with a judge from ``llm_factory`` whose ``ascore`` keywords make its row."""

    def __init__(self, llm: Any, name: str, **kwargs: Any) -> None:
        self.llm = require_llm(type(self).__name__, llm)
        super().__init__(name, **kwargs)

    async def _row(self, row: dict[str, Any]) -> MetricResult:
        return await self.ascore_row(row)


class ContextEntityRecall(_Judged):
    """Share of the reference's named entities that the retrieved contexts name too."""

    def __init__(self, llm: Any, name: str = "context_entity_recall", **kwargs: Any) -> None:
        super().__init__(llm, name, **kwargs)

    async def ascore(self, reference: str, retrieved_contexts: list[str]) -> MetricResult:
        """The entity recall of ``retrieved_contexts`` for ``reference``."""
        return await self._row({"reference": reference, "retrieved_contexts": retrieved_contexts})

    async def _compute_row(self, session: Session, row: dict[str, Any]) -> Scored:
        judged = await ragas_judged.context_entity_recall(
            session.judge, row["reference"], row["retrieved_contexts"]
        )
        details = ContextDetails(
            reference_entities=judged.found.reference_entities,
            context_entities=judged.found.context_entities,
        )
        return Scored(judged.value, judged.reason, details)


class ContextRelevance(_Judged):
    """Two raters' 0/1/2 relevance of the joined contexts to the question, on 0..1."""

    def __init__(
        self, llm: Any, name: str = "context_relevance", max_retries: int = 5, **kwargs: Any
    ) -> None:
        if not isinstance(max_retries, int) or max_retries < 1:
            raise SetupError(f"max_retries must be a whole number of at least 1: {max_retries}")
        self.max_retries = max_retries
        """Accepted as ragas' (see ``metrics.ragas.context_relevance``: the judge does the
        re-asking)."""
        super().__init__(llm, name, **kwargs)

    async def ascore(self, user_input: str, retrieved_contexts: list[str]) -> MetricResult:
        """The relevance of ``retrieved_contexts`` to ``user_input``."""
        return await self._row({"user_input": user_input, "retrieved_contexts": retrieved_contexts})

    async def _compute_row(self, session: Session, row: dict[str, Any]) -> Scored:
        judged = await ragas_judged.context_relevance(
            session.judge, row["user_input"], row["retrieved_contexts"] or []
        )
        return Scored(judged.value, judged.reason, ContextDetails(ratings=judged.found.ratings))


class NoiseSensitivity(_Judged):
    """Share of the response's statements that are wrong yet supported by a retrieved chunk."""

    def __init__(
        self,
        llm: Any,
        name: str = "noise_sensitivity",
        mode: Literal["relevant", "irrelevant"] = "relevant",
        **kwargs: Any,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be 'relevant' or 'irrelevant', not {mode!r}")
        self.mode: Literal["relevant", "irrelevant"] = mode
        super().__init__(llm, name, **kwargs)

    async def ascore(
        self, user_input: str, response: str, reference: str, retrieved_contexts: list[str]
    ) -> MetricResult:
        """The noise sensitivity of ``response`` given ``reference`` and ``retrieved_contexts``."""
        row = {
            "user_input": user_input,
            "response": response,
            "reference": reference,
            "retrieved_contexts": retrieved_contexts,
        }
        return await self._row(row)

    async def _compute_row(self, session: Session, row: dict[str, Any]) -> Scored:
        judged = await ragas_judged.noise_sensitivity_judged(
            session.judge,
            row["user_input"],
            row["response"],
            row["reference"],
            row["retrieved_contexts"] or [],
            self.mode,
        )
        noise = judged.found
        found = tuple(any(s) for s in noise.reference_support)
        details = ContextDetails(
            statements=tuple(
                StatementVerdict(s, ok) for s, ok in zip(noise.response_statements, noise.correct)
            ),
            claims=len(noise.response_statements) if noise.correct else None,
            supported_claims=sum(noise.correct) if noise.correct else None,
            reference_statements=tuple(
                StatementVerdict(s, ok) for s, ok in zip(noise.reference_statements, found)
            ),
            relevant_chunks=tuple(k for k, ok in enumerate(noise.relevant_chunks, 1) if ok),
        )
        return Scored(judged.value, judged.reason, details)


class SQLSemanticEquivalence(_Judged):
    """1.0 when the judge finds the generated and the reference SQL equivalent, else 0.0."""

    def __init__(self, llm: Any, name: str = "sql_semantic_equivalence", **kwargs: Any) -> None:
        super().__init__(llm, name, **kwargs)

    async def ascore(
        self, response: str, reference: str, reference_contexts: list[str] | None = None
    ) -> MetricResult:
        """Whether ``response`` and ``reference`` are equivalent on the schema in
        ``reference_contexts``."""
        row = {
            "response": response,
            "reference": reference,
            "reference_contexts": reference_contexts,
        }
        return await self._row(row)

    async def _compute_row(self, session: Session, row: dict[str, Any]) -> Scored:
        judged = await ragas_judged.sql_semantic_equivalence(
            session.judge, row["response"], row["reference"], row["reference_contexts"] or ()
        )
        return Scored(judged.value, judged.reason, ContextDetails(equivalent=bool(judged.value)))
