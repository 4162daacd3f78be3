"""What preparing reads into (``Question``, ``Response``) and how it reports: ``Problems`` collects
every problem with its place, and the phrases its messages share."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import TYPE_CHECKING, Any

from ...errors import InputError, short_repr
from ...steps.kinds import (
    ReferenceStep,
)
from ...vocabulary.frozen import FACTORY, Mutable, mutable, slotted

if TYPE_CHECKING:  # the trajectory reader is imported when a question has a trajectory
    from ...steps.trajectory.reference import Reference

ID_TYPES = (str, int)


@slotted
class Question(Mutable):
    """One reference question: where it came from, and its reference step groups."""

    template_id: Any
    question_id: Any
    raw: Mapping[str, Any]
    groups: tuple[tuple[ReferenceStep, ...], ...] | None
    record: str
    """Where it was read, for messages: its template's record (a message about the question
    names it by its id after it)."""
    has_matches: bool = False
    """Whether a reference step carries a ``matches`` key (e.g. results used as a reference),
    which the copies in a result drop."""
    trajectory: Reference | None = None
    """Its parsed ``reference_trajectory`` (None without one)."""
    copies: list[list[dict[str, Any]]] | None = None
    """Copies of the reference steps (without ``matches``) for the question's first result,
    made while the steps were read (their dicts in the cache then: made later, each copy cost
    about three times as much); taken by the first result, None after."""
    agent_fields: bool = True
    """Whether its record may carry a field of the agent or ragas metrics (``reference_goal``,
    ``rubrics``, ...), which its result copies: preparing finds out (most questions have
    none); a question made otherwise is searched when evaluated."""

    def __init__(
        self,
        template_id: Any,
        question_id: Any,
        raw: Mapping[str, Any],
        groups: tuple[tuple[ReferenceStep, ...], ...] | None,
        record: str,
        has_matches: bool = False,
        trajectory: Reference | None = None,
        copies: list[list[dict[str, Any]]] | None = None,
        agent_fields: bool = True,
    ) -> None:
        # The fields in order, as @dataclass would write it (see qa_eval.vocabulary.frozen).
        self.template_id = template_id
        self.question_id = question_id
        self.raw = raw
        self.groups = groups
        self.record = record
        self.has_matches = has_matches
        self.trajectory = trajectory
        self.copies = copies
        self.agent_fields = agent_fields

    def release(self) -> None:
        """Let go of what only scoring needs (prepared steps, copies, trajectory) once every
        result of the question is made: freed while still in the cache, not all at the end of
        the run. The template, id and raw record stay (the run's signature reads them)."""
        self.groups = None
        self.copies = None
        self.trajectory = None


@slotted
class Response(Mutable):
    """One response of the evaluated system: its question id, the response as given, whether
    it is an error response, and the indexes of its successful actual steps."""

    question_id: Any
    raw: Mapping[str, Any]
    place: tuple[str, Any]
    """Where it was read: ("line", number), ("response", position) or ("key", question id)."""
    is_error: bool
    successful: list[int] | None = None
    plain: bool = False
    """True when the fast path prepared it: it has no ``trial``, and every actual step is a
    mapping without ``lost``, so evaluating it needs no test of these of its own; False when
    not known."""
    timed: bool = False
    """True when the fast path found all four of ``input_tokens``, ``output_tokens``,
    ``total_tokens`` and ``elapsed_sec`` (a result copies them without a test each)."""

    def __init__(
        self,
        question_id: Any,
        raw: Mapping[str, Any],
        place: tuple[str, Any],
        is_error: bool,
        successful: list[int] | None = None,
        plain: bool = False,
        timed: bool = False,
    ) -> None:
        # The fields in order, as @dataclass would write it (see qa_eval.vocabulary.frozen).
        self.question_id = question_id
        self.raw = raw
        self.place = place
        self.is_error = is_error
        self.successful = successful
        self.plain = plain
        self.timed = timed

    @property
    def record(self) -> str:
        """The record's name in messages, e.g. ``line 3 (question_id 'q1')``."""
        return response_record(self.place, self.question_id)


def response_record(place: tuple[str, Any], qid: Any) -> str:
    kind, where = place
    if kind == "key":
        return f"question_id {short_repr(where)}"
    name = f"line {where}" if kind == "line" else f"response [{where}]"
    return name if qid is None else f"{name} (question_id {short_repr(qid)})"


@mutable
class Problems(Mutable):
    """The problems found in one input (``source``): each with its record, field and message;
    ``raise_if_any`` raises the first as an ``InputError`` that lists them all."""

    source: str
    items: list[tuple[str | None, str | None, str]] = field(default_factory=list)

    def __init__(
        self, source: str, items: list[tuple[str | None, str | None, str]] = FACTORY
    ) -> None:
        # The fields in order, as @dataclass would write it (see qa_eval.vocabulary.frozen).
        self.source = source
        self.items = [] if items is FACTORY else items

    def add(self, record: str | None, field_path: str | None, message: str) -> None:
        self.items.append((record, field_path, message))

    def raise_if_any(self) -> None:
        if not self.items:
            return
        record, field_path, message = self.items[0]
        more = len(self.items) - 1
        if more:
            message += f" (and {more} more problem{'s' if more > 1 else ''})"
        error = InputError(message, source=self.source, record=record, field=field_path)
        error.problems = [  # type: ignore[attr-defined]
            str(InputError(m, source=self.source, record=r, field=f)) for r, f, m in self.items
        ]
        raise error


def type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def found(value: Any) -> str:
    """What was found where another type was wanted: its type, and a scalar's value too
    (``float 1.5``, ``str '5'``, ``list``)."""
    if value is None:
        return "null"
    if isinstance(value, (bool, int, float, str)):
        return f"{type(value).__name__} {short_repr(value, 30)}"
    return type(value).__name__


def wrong(mapping: Mapping[str, Any], key: str, wanted: str) -> str:
    """The message for ``mapping[key]`` that is not ``wanted``: missing, or what it is."""
    return "missing" if key not in mapping else f"must be {wanted}, got {found(mapping[key])}"


AN_ID = "a string or an integer"
A_TAG = "a string, a number, true or false"
