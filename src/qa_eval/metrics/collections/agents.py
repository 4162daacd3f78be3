"""ragas 0.4.3's agent and rubric metrics of ``ragas.metrics.collections``, over qa-eval's engines
``metrics.agents.multi_turn`` and ``metrics.ragas.rubrics`` (formulas and sources in their
docstrings).

- :class:`AgentGoalAccuracyWithReference` (and :class:`AgentGoalAccuracy`, the same class, as in
  ragas): 1.0 when the end state the judge reads from the conversation achieves ``reference``;
  :class:`AgentGoalAccuracyWithoutReference`: when it achieves the goal the judge infers.
- :class:`TopicAdherence`: precision, recall or f1 (``mode``) of the topics the AI answered against
  the ``reference_topics``; ``None`` when the conversation raises no topic (ragas: NaN).
- :class:`DomainSpecificRubrics` (``RubricsScoreWithoutReference`` / ``RubricsScoreWithReference``
  with ``with_reference`` fixed) and :class:`InstanceSpecificRubrics` (the rubric comes with each
  sample): the 1-5 score the judge picks, its feedback as the reason.

``user_input`` of the agent metrics is a list of ``qa_eval.messages`` (``HumanMessage``,
``AIMessage`` with ``ToolCall`` s, ``ToolMessage``), rendered as ragas renders it
(``pretty_repr``) and put in the prompts as delimited data. Constructor arguments and ``ascore``
keywords are ragas'.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..agents.multi_turn import agent_goal_accuracy, topic_adherence
from ..ragas import judged as ragas_judged
from ..ragas.rubrics import (
    DEFAULT_REFERENCE_FREE_RUBRICS,
    DEFAULT_WITH_REFERENCE_RUBRICS,
    rubric_levels,
)
from .base import BaseMetric, Scored, Session, require_llm
from .result import Details, MetricResult

__all__ = [
    "AgentGoalAccuracy",
    "AgentGoalAccuracyWithReference",
    "AgentGoalAccuracyWithoutReference",
    "DomainSpecificRubrics",
    "GoalDetails",
    "InstanceSpecificRubrics",
    "RubricDetails",
    "RubricsScoreWithReference",
    "RubricsScoreWithoutReference",
    "TopicAdherence",
    "TopicDetails",
    "TopicVerdict",
]


@dataclass(frozen=True)
class GoalDetails(Details):
    """What agent goal accuracy compared."""

    user_goal: str | None = None
    """The goal the judge inferred from the conversation."""
    end_state: str | None = None
    """The outcome the judge read from the conversation."""
    desired_outcome: str | None = None
    """What the end state was compared with: the reference, or the inferred goal."""


@dataclass(frozen=True)
class TopicVerdict:
    """One topic the human raised: whether the AI answered it, whether it is a reference topic."""

    topic: str
    answered: bool
    in_reference: bool


@dataclass(frozen=True)
class TopicDetails(Details):
    """The topics topic adherence judged, and its three figures."""

    topics: tuple[TopicVerdict, ...] = ()
    mode: str | None = None
    precision: float | None = None
    recall: float | None = None


@dataclass(frozen=True)
class RubricDetails(Details):
    """The score the judge picked and the levels of the rubric it picked from."""

    score: int | None = None
    levels: tuple[int, ...] = ()


def transcript(messages: Any) -> str:
    """The conversation as ragas renders it: each message's ``pretty_repr``, one after another."""
    if not isinstance(messages, list):
        raise ValueError("user_input must be a list of messages")
    lines = []
    for message in messages:
        render = getattr(message, "pretty_repr", None)
        if render is None:
            raise ValueError(
                "user_input must hold qa_eval.messages (HumanMessage, AIMessage, ToolMessage), "
                f"not {type(message).__name__}"
            )
        lines.append(render())
    return "\n".join(lines)


def _goal_scored(outcome: Any, compared_with: str) -> Scored:
    verdict = "achieved" if outcome.value == 1.0 else "not achieved"
    reason = f"{compared_with} {verdict}"
    if outcome.reason:
        reason = f"{reason}: {outcome.reason}"
    details = GoalDetails(
        user_goal=outcome.user_goal,
        end_state=outcome.end_state,
        desired_outcome=outcome.desired,
    )
    return Scored(outcome.value, reason, details)


class AgentGoalAccuracyWithReference(BaseMetric):
    """1.0 when the agent's workflow reached the reference outcome, else 0.0."""

    def __init__(self, llm: Any, name: str = "agent_goal_accuracy", **kwargs: Any) -> None:
        self.llm = require_llm(type(self).__name__, llm)
        super().__init__(name, **kwargs)

    async def ascore(self, user_input: list[Any], reference: str) -> MetricResult:
        """Whether the workflow in ``user_input`` reached ``reference``."""
        row = {"user_input": user_input, "reference": reference}
        return await self.ascore_row(row)

    async def _compute_row(self, session: Session, row: dict[str, Any]) -> Scored:
        conversation = transcript(row.get("user_input"))
        if not row.get("reference"):
            raise ValueError("reference must be provided for AgentGoalAccuracyWithReference")
        outcome = await agent_goal_accuracy(session.judge, conversation, row["reference"])
        return _goal_scored(outcome, "reference outcome")


AgentGoalAccuracy = AgentGoalAccuracyWithReference
"""ragas' short name: the with-reference metric."""


class AgentGoalAccuracyWithoutReference(BaseMetric):
    """1.0 when the agent's workflow reached the goal the judge infers from it, else 0.0."""

    def __init__(self, llm: Any, name: str = "agent_goal_accuracy", **kwargs: Any) -> None:
        self.llm = require_llm(type(self).__name__, llm)
        super().__init__(name, **kwargs)

    async def ascore(self, user_input: list[Any]) -> MetricResult:
        """Whether the workflow in ``user_input`` reached the user's goal."""
        row = {"user_input": user_input}
        return await self.ascore_row(row)

    async def _compute_row(self, session: Session, row: dict[str, Any]) -> Scored:
        conversation = transcript(row.get("user_input"))
        outcome = await agent_goal_accuracy(session.judge, conversation, None)
        return _goal_scored(outcome, "user goal")


class TopicAdherence(BaseMetric):
    """How well the AI kept to the reference topics: precision, recall or f1 of answered topics."""

    def __init__(
        self,
        llm: Any,
        mode: Literal["precision", "recall", "f1"] = "f1",
        name: str = "topic_adherence",
        **kwargs: Any,
    ) -> None:
        self.llm = require_llm(type(self).__name__, llm)
        if mode not in ("precision", "recall", "f1"):
            raise ValueError(f"mode must be precision, recall or f1, not {mode!r}")
        self.mode: Literal["precision", "recall", "f1"] = mode
        super().__init__(name, **kwargs)

    async def ascore(self, user_input: list[Any], reference_topics: list[str]) -> MetricResult:
        """The adherence of the conversation in ``user_input`` to ``reference_topics``."""
        row = {"user_input": user_input, "reference_topics": reference_topics}
        return await self.ascore_row(row)

    async def _compute_row(self, session: Session, row: dict[str, Any]) -> Scored:
        conversation = transcript(row.get("user_input"))
        references = row.get("reference_topics")
        if not isinstance(references, list) or not references:
            raise ValueError("reference_topics must be a non-empty list of topics")
        outcome = await topic_adherence(session.judge, conversation, references, self.mode)
        if outcome.value is None:
            return Scored(None, "the human raised no topic", TopicDetails(mode=self.mode))
        verdicts = tuple(
            TopicVerdict(t, a, r)
            for t, a, r in zip(outcome.topics, outcome.answered, outcome.in_reference, strict=True)
        )
        details = TopicDetails(
            topics=verdicts, mode=self.mode, precision=outcome.precision, recall=outcome.recall
        )
        return Scored(outcome.value, _topic_reason(verdicts, self.mode, outcome.value), details)


def _topic_reason(verdicts: Sequence[TopicVerdict], mode: str, value: float) -> str:
    def listed(picked: list[str]) -> str:
        return f"{len(picked)} ({'; '.join(repr(t) for t in picked)})" if picked else "0"

    on = [v.topic for v in verdicts if v.answered and v.in_reference]
    off = [v.topic for v in verdicts if v.answered and not v.in_reference]
    refused = [v.topic for v in verdicts if not v.answered and v.in_reference]
    return (
        f"{len(verdicts)} topics: answered within the reference topics {listed(on)}, "
        f"answered outside them {listed(off)}, refused within them {listed(refused)}; "
        f"{mode} {value:.4f}"
    )


class _Rubrics(BaseMetric):
    """A rubric score of a sample (1-5 by default), the judge's feedback as reason: the rubric
    given with the sample (``rubrics`` of the row) or, without it, the metric's own."""

    rubrics: dict[str, str] | None = None

    def __init__(self, llm: Any, name: str, **kwargs: Any) -> None:
        self.llm = require_llm(type(self).__name__, llm)
        kwargs.setdefault("allowed_values", (1.0, 5.0))
        super().__init__(name, **kwargs)

    async def _scored_sample(
        self,
        rubrics: dict[str, str] | None,
        user_input: str | None,
        response: str | None,
        retrieved_contexts: list[str] | None,
        reference_contexts: list[str] | None,
        reference: str | None,
    ) -> MetricResult:
        row = {
            "user_input": user_input,
            "response": response,
            "retrieved_contexts": retrieved_contexts,
            "reference_contexts": reference_contexts,
            "reference": reference,
        }
        return await self.ascore_row(row if rubrics is None else {"rubrics": rubrics, **row})

    async def _compute_row(self, session: Session, row: dict[str, Any]) -> Scored:
        if self.rubrics is not None:
            return await _rubric_scored(session, self.rubrics, row)
        rubrics = row.get("rubrics")
        if not rubrics:
            raise ValueError("rubrics must be provided for instance-specific evaluation")
        inputs = {k: v for k, v in row.items() if k != "rubrics"}
        return await _rubric_scored(session, rubrics, inputs)


class DomainSpecificRubrics(_Rubrics):
    """The 1-5 score (by default) of a sample on one rubric for all samples; feedback as reason."""

    def __init__(
        self,
        llm: Any,
        rubrics: dict[str, str] | None = None,
        with_reference: bool = False,
        name: str = "domain_specific_rubrics",
        **kwargs: Any,
    ) -> None:
        llm = require_llm(type(self).__name__, llm)
        self.with_reference = with_reference
        default = (
            DEFAULT_WITH_REFERENCE_RUBRICS if with_reference else DEFAULT_REFERENCE_FREE_RUBRICS
        )
        self.rubrics = dict(default if rubrics is None else rubrics)
        if not self.rubrics:
            raise ValueError("rubrics must hold at least one score description")
        super().__init__(llm, name, **kwargs)

    async def ascore(
        self,
        user_input: str | None = None,
        response: str | None = None,
        retrieved_contexts: list[str] | None = None,
        reference_contexts: list[str] | None = None,
        reference: str | None = None,
    ) -> MetricResult:
        """The rubric score of the given inputs."""
        return await self._scored_sample(
            None, user_input, response, retrieved_contexts, reference_contexts, reference
        )


class RubricsScoreWithoutReference(DomainSpecificRubrics):
    """:class:`DomainSpecificRubrics` with ``with_reference=False``."""

    def __init__(
        self,
        llm: Any,
        rubrics: dict[str, str] | None = None,
        name: str = "rubrics_score_without_reference",
        **kwargs: Any,
    ) -> None:
        super().__init__(llm, rubrics=rubrics, with_reference=False, name=name, **kwargs)


class RubricsScoreWithReference(DomainSpecificRubrics):
    """:class:`DomainSpecificRubrics` with ``with_reference=True``."""

    def __init__(
        self,
        llm: Any,
        rubrics: dict[str, str] | None = None,
        name: str = "rubrics_score_with_reference",
        **kwargs: Any,
    ) -> None:
        super().__init__(llm, rubrics=rubrics, with_reference=True, name=name, **kwargs)


class InstanceSpecificRubrics(_Rubrics):
    """The score of a sample on the rubric given with it; feedback as reason."""

    def __init__(self, llm: Any, name: str = "instance_specific_rubrics", **kwargs: Any) -> None:
        super().__init__(llm, name, **kwargs)

    async def ascore(
        self,
        rubrics: dict[str, str],
        user_input: str | None = None,
        response: str | None = None,
        retrieved_contexts: list[str] | None = None,
        reference_contexts: list[str] | None = None,
        reference: str | None = None,
    ) -> MetricResult:
        """The score of the given inputs on ``rubrics``."""
        return await self._scored_sample(
            rubrics, user_input, response, retrieved_contexts, reference_contexts, reference
        )


async def _rubric_scored(
    session: Session, rubrics: Mapping[str, str], row: Mapping[str, Any]
) -> Scored:
    judged = await ragas_judged.rubric(
        session.judge,
        rubrics,
        user_input=row.get("user_input"),
        response=row.get("response"),
        retrieved_contexts=row.get("retrieved_contexts"),
        reference_contexts=row.get("reference_contexts"),
        reference=row.get("reference"),
    )
    details = RubricDetails(score=judged.found.score, levels=rubric_levels(rubrics))
    return Scored(judged.value, judged.reason, details)
