"""Agent metrics over a multi-turn conversation: goal accuracy and topic adherence.

Source: ragas 0.4.3, ``ragas.metrics.collections.agent_goal_accuracy`` and
``ragas.metrics.collections.topic_adherence`` (the formulas; the prompts are qa-eval's own). The
conversation is given as its transcript (``Human: ...``, ``AI: ...``, ``Tools:``,
``ToolOutput: ...`` lines, as ``qa_eval.messages`` renders them) and goes into every prompt as
delimited data.

- Agent goal accuracy (binary): the judge infers the user's goal and the end state of the
  workflow; a second call compares the end state with the desired outcome (the ``reference``
  when given, else the inferred goal). Value = 1.0 when they match, else 0.0.
- Topic adherence: the judge lists the topics the human raises (``T``); for each, whether the AI
  answered (not refused) it, ``a_t``, and whether it falls in the reference topics, ``r_t``.
  With TP = #{a ∧ r}, FP = #{a ∧ ¬r}, FN = #{¬a ∧ r} and ε = 1e-10:
  precision = TP / (TP + FP + ε), recall = TP / (TP + FN + ε),
  f1 = 2·precision·recall / (precision + recall + ε) - ragas' arithmetic to the last bit.
  No topics (blank ones are dropped): ``None`` (ragas: NaN). qa-eval asks the refusals of all
  topics in one call and the classifications in one call (ragas: one call per topic for the
  refusals), each reply numbered and checked to cover every topic (ragas pads a short
  classification list with False).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, field_validator

from ...errors import DryRunSkip
from ...prompts import numbered_blocks, render
from ..retrieval.step_context import numbered_schema

__all__ = [
    "GOAL_METRIC",
    "TOPIC_METRIC",
    "GoalOutcome",
    "TopicOutcome",
    "agent_goal_accuracy",
    "topic_adherence",
    "topic_score",
]

GOAL_METRIC = "agent_goal_accuracy"
TOPIC_METRIC = "topic_adherence"
EPSILON = 1e-10
Mode = Literal["precision", "recall", "f1"]


class WorkflowReply(BaseModel):
    """The user's goal and the workflow's end state, as the judge reads them."""

    user_goal: str
    end_state: str


class CompareReply(BaseModel):
    """Whether the arrived outcome achieves the desired one."""

    reason: str = ""
    verdict: Literal[0, 1]

    @field_validator("verdict", mode="before")
    @classmethod
    def _number(cls, value: Any) -> Any:
        return (
            int(value.strip()) if isinstance(value, str) and value.strip() in ("0", "1") else value
        )


class TopicsReply(BaseModel):
    """The topics the human raises."""

    topics: list[str]


class RefusalVerdict(BaseModel):
    """Whether the AI refused one numbered topic."""

    topic: int
    refused: bool
    reason: str = ""


class ClassVerdict(BaseModel):
    """Whether one numbered topic falls in the reference topics."""

    topic: int
    in_reference: bool


@dataclass(frozen=True)
class GoalOutcome:
    """What agent goal accuracy found for one conversation."""

    value: float
    user_goal: str
    end_state: str
    desired: str
    """What the end state was compared with: the reference, or the inferred goal."""
    reason: str


@dataclass(frozen=True)
class TopicOutcome:
    """What topic adherence found for one conversation (``value`` ``None``: no topics)."""

    value: float | None
    topics: tuple[str, ...]
    answered: tuple[bool, ...]
    in_reference: tuple[bool, ...]
    precision: float | None
    recall: float | None


def _user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


async def agent_goal_accuracy(judge: Any, conversation: str, reference: str | None) -> GoalOutcome:
    """Whether the workflow reached ``reference`` (or, without one, the goal the judge infers)."""
    try:
        workflow = await judge.ask(
            GOAL_METRIC,
            _user(render("agent_goal_outcome", conversation=conversation)),
            WorkflowReply,
        )
    except DryRunSkip:  # a dry run counts the comparison too, estimated with the last turn
        last = conversation.rsplit("\n", 1)[-1]
        compare = render("agent_goal_compare", desired=reference or last, arrived=last)
        judge.plan_call(GOAL_METRIC, _user(compare), CompareReply)
        raise
    goal, end = workflow.value.user_goal, workflow.value.end_state
    desired = reference if reference is not None else goal
    compared = await judge.ask(
        GOAL_METRIC,
        _user(render("agent_goal_compare", desired=desired, arrived=end)),
        CompareReply,
    )
    value = float(compared.value.verdict)
    return GoalOutcome(value, goal, end, desired, compared.value.reason)


def topic_score(answered: Sequence[bool], in_reference: Sequence[bool], mode: Mode) -> float:
    """Topic adherence of judged topics (module docstring): precision, recall or f1."""
    pairs = list(zip(answered, in_reference, strict=True))
    tp = sum(1 for a, r in pairs if a and r)
    fp = sum(1 for a, r in pairs if a and not r)
    fn = sum(1 for a, r in pairs if not a and r)
    precision = tp / (tp + fp + EPSILON)
    recall = tp / (tp + fn + EPSILON)
    if mode == "precision":
        return precision
    if mode == "recall":
        return recall
    if mode == "f1":
        return 2 * (precision * recall) / (precision + recall + EPSILON)
    raise ValueError(f"mode must be precision, recall or f1, not {mode!r}")


def _ordered(verdicts: Sequence[Any], field: str) -> tuple[bool, ...]:
    return tuple(bool(getattr(v, field)) for v in sorted(verdicts, key=lambda v: v.topic))


Ask = tuple[list[dict[str, str]], Any]


def _topic_asks(
    conversation: str, topics: Sequence[str], reference_topics: Sequence[str]
) -> tuple[Ask, Ask]:
    """The messages and reply schemas of the refusal call and the classification call."""
    numbered = {"topics": numbered_blocks(list(topics), "topic")}
    refusals = (
        _user(render("topic_refused", numbered, conversation=conversation)),
        numbered_schema("TopicRefusals", RefusalVerdict, "topic", len(topics)),
    )
    references = {
        **numbered,
        "reference_topics": numbered_blocks(list(reference_topics), "reference_topic"),
    }
    classes = (
        _user(render("topic_classification", references)),
        numbered_schema("TopicClasses", ClassVerdict, "topic", len(topics)),
    )
    return refusals, classes


async def topic_adherence(
    judge: Any, conversation: str, reference_topics: Sequence[str], mode: Mode
) -> TopicOutcome:
    """Topic adherence of a conversation to ``reference_topics`` (module docstring)."""
    try:
        extracted = await judge.ask(
            TOPIC_METRIC, _user(render("topic_extraction", conversation=conversation)), TopicsReply
        )
    except DryRunSkip:  # a dry run counts the other two calls, a topic per human turn
        human = [line for line in conversation.splitlines() if line.startswith("Human: ")]
        guess = tuple(human) or (conversation,)
        refusals, classes = _topic_asks(conversation, guess, reference_topics)
        judge.plan_call(TOPIC_METRIC, *refusals)
        judge.plan_call(TOPIC_METRIC, *classes)
        raise
    topics = tuple(t.strip() for t in extracted.value.topics if t.strip())
    if not topics:
        return TopicOutcome(None, (), (), (), None, None)
    refusals, classes = _topic_asks(conversation, topics, reference_topics)
    try:
        refused = await judge.ask(TOPIC_METRIC, *refusals)
    except DryRunSkip:
        judge.plan_call(TOPIC_METRIC, *classes)
        raise
    classified = await judge.ask(TOPIC_METRIC, *classes)
    answered = tuple(not r for r in _ordered(refused.value.verdicts, "refused"))
    in_reference = _ordered(classified.value.verdicts, "in_reference")
    return TopicOutcome(
        topic_score(answered, in_reference, mode),
        topics,
        answered,
        in_reference,
        topic_score(answered, in_reference, "precision"),
        topic_score(answered, in_reference, "recall"),
    )
