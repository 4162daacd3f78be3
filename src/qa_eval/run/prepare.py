"""Validated, prepared forms of the reference dataset and the responses.

Validation collects every problem with its place (file, record, field) and raises one
``InputError`` whose message is the first problem and a count of the others; ``.problems`` holds
them all. Reference step outputs that are compared structurally (SPARQL JSON, retrieval contexts,
``application/json``) are parsed here once and kept with the step.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError, short_repr
from ..metrics.agents.trials import TRIAL_KEY
from ..steps.kinds import (
    APPLICATION_JSON,
    COMPARE_ARGS,
    COMPARE_DATA_POINTS,
    COMPARE_IRI,
    COMPARE_JSON,
    COMPARE_RETRIEVAL,
    COMPARE_SPARQL,
    COMPARE_TEXT,
    COMPARE_TIME_SERIES,
    CONTEXT_ID_TYPES,
    SPARQL_JSON,
    ReferenceStep,
)
from ..steps.outputs import OutputParseError, loads
from ..steps.sparql.match import prepare_reference as prepare_sparql_reference
from ..steps.sparql.terms import SparqlResultError, parse_sparql_json
from ..steps.trajectory.comparators import TrajectoryError
from ..steps.trajectory.reference import Reference, parse_reference

__all__ = [
    "Question",
    "Response",
    "Seen",
    "Unknown",
    "prepare_reference",
    "prepare_responses",
]

_ID_TYPES = (str, int)


@dataclass(slots=True)
class Question:
    """One reference question: where it came from, and its reference step groups."""

    template_id: Any
    question_id: Any
    raw: Mapping[str, Any]
    groups: tuple[tuple[ReferenceStep, ...], ...] | None
    record: str
    has_matches: bool = False
    """Whether a reference step carries a ``matches`` key (e.g. results used as a reference),
    which the copies in a result drop."""
    trajectory: Reference | None = None
    """Its parsed ``reference_trajectory`` (None without one)."""
    copies: list[list[dict[str, Any]]] | None = None
    """Copies of the reference steps (without ``matches``) for the question's first result,
    made while the steps were read (their dicts in the cache then: made later, each copy cost
    about three times as much); taken by the first result, None after."""

    def release(self) -> None:
        """Let go of what only scoring needs (prepared steps, copies, trajectory) once every
        result of the question is made: freed while still in the cache, not all at the end of
        the run. The template, id and raw record stay (the run's signature reads them)."""
        self.groups = None
        self.copies = None
        self.trajectory = None


@dataclass(slots=True)
class Response:
    """One response of the evaluated system: its question id, the response as given, whether
    it is an error response, and the indexes of its successful actual steps."""

    question_id: Any
    raw: Mapping[str, Any]
    place: tuple[str, Any]
    """Where it was read: ("line", number), ("response", position) or ("key", question id)."""
    is_error: bool
    successful: list[int] | None = None

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


@dataclass
class Problems:
    source: str
    items: list[tuple[str | None, str | None, str]] = field(default_factory=list)

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


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _got(value: Any) -> str:
    """What was found where another type was wanted: its type, and a scalar's value too
    (``float 1.5``, ``str '5'``, ``list``)."""
    if value is None:
        return "null"
    if isinstance(value, (bool, int, float, str)):
        return f"{type(value).__name__} {short_repr(value, 30)}"
    return type(value).__name__


def _wrong(mapping: Mapping[str, Any], key: str, wanted: str) -> str:
    """The message for ``mapping[key]`` that is not ``wanted``: missing, or what it is."""
    return "missing" if key not in mapping else f"must be {wanted}, got {_got(mapping[key])}"


_AN_ID = "a string or an integer"
_A_TAG = "a string, a number, true or false"


def _where(group: int, index: int) -> str:
    return f"reference_steps[{group}][{index}]"


def _prepare_step(
    raw: Any, group: int, index: int, record: str, problems: Problems
) -> ReferenceStep | None:
    """One reference step checked (its arguments, media type, required columns and flags), with
    its output read the way its comparison reads it; None when it is not a mapping with a
    name."""
    if not isinstance(raw, dict):
        problems.add(
            record, _where(group, index), f"a step must be a mapping, got {_type_name(raw)}"
        )
        return None
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        problems.add(record, f"{_where(group, index)}.name", _wrong(raw, "name", "a step name"))
        return None
    # Hot path (once per reference step): the field checks and the choice of the step's kind
    # are written out here, not in two helpers whose calls cost ~5% of preparing the steps;
    # the problems are added in the same order (args, media type, columns, flags, output).
    args = raw.get("args")
    if args is not None and not isinstance(args, dict):
        problems.add(record, f"{_where(group, index)}.args", f"must be a mapping, got {_got(args)}")
    media_type = raw.get("output_media_type")
    if media_type is not None and not isinstance(media_type, str):
        problems.add(
            record,
            f"{_where(group, index)}.output_media_type",
            f"must be a string (a media type), got {_got(media_type)}",
        )
        media_type = None
    columns = raw.get("required_columns")
    if columns is not None or "required_columns" in raw:
        bad = _bad_columns(columns)
        if bad is not None:
            problems.add(record, f"{_where(group, index)}.required_columns{bad[0]}", bad[1])
            columns = None
    if "ordered" in raw or "ignore_duplicates" in raw:
        _check_flags(raw, group, index, record, problems)
    output = raw.get("output")
    # How the step is compared: one of the COMPARE_* names.
    if name == "iri_discovery":
        kind = COMPARE_IRI
    elif name == "sparql_query" and media_type == SPARQL_JSON:
        kind = COMPARE_SPARQL
        if "required_columns" not in raw:
            problems.add(
                record,
                f"{_where(group, index)}.required_columns",
                "missing (a SPARQL step with JSON results must list the columns that have to "
                "match)",
            )
    elif name == "retrieval" and output:
        kind = COMPARE_RETRIEVAL
    elif name == "retrieve_time_series":
        kind = COMPARE_TIME_SERIES  # compared by arguments: the output is not read
    elif name == "retrieve_data_points":
        kind = COMPARE_DATA_POINTS
    elif media_type == APPLICATION_JSON and output is not None:
        kind = COMPARE_JSON
    else:
        kind = COMPARE_ARGS if output is None else COMPARE_TEXT
    parsed: Any = None
    read = _OUTPUT_READERS.get(kind)
    if read is not None:
        try:
            parsed = read(output, columns or [])
        except _OutputProblem as problem:
            problems.add(record, f"{_where(group, index)}.output", str(problem))
    return ReferenceStep(group, index, raw, name, media_type, parsed, kind)


def _check_flags(
    raw: dict[str, Any], group: int, index: int, record: str, problems: Problems
) -> None:
    """Check a step's ``ordered`` and ``ignore_duplicates`` flags, when given: true or false."""
    for flag in _FLAGS:
        if flag in raw and not isinstance(raw[flag], bool):
            problems.add(
                record,
                f"{_where(group, index)}.{flag}",
                f"must be true or false, got {short_repr(raw[flag])}",
            )


_FLAGS = ("ordered", "ignore_duplicates")


class _OutputProblem(Exception):
    """What is wrong with a reference step's output, for its ``.output`` problem."""


def _read_iri(output: Any, columns: list[Any]) -> str:
    """The IRI an ``iri_discovery`` step is to discover."""
    if not isinstance(output, str):
        raise _OutputProblem("must be the IRI to discover, as a string")
    return output.strip()


def _read_sparql(output: Any, columns: list[Any]) -> Any:
    """A SPARQL JSON result reduced to its required columns, read once; the parsed JSON is
    let go."""
    try:
        result = parse_sparql_json(output if isinstance(output, dict) else loads(output))
    except (OutputParseError, SparqlResultError) as e:
        raise _OutputProblem(f"not a SPARQL JSON result: {e}") from None
    try:
        return prepare_sparql_reference(result, columns)
    except SparqlResultError as e:
        raise _OutputProblem(str(e)) from None


def _read_retrieval(output: Any, columns: list[Any]) -> list[Any]:
    """The context ids of a retrieval step's output."""
    try:
        return _context_ids(output if isinstance(output, list) else loads(output))
    except (OutputParseError, ValueError) as e:
        raise _OutputProblem(str(e)) from None


def _read_json(output: Any, columns: list[Any]) -> Any:
    """An ``application/json`` output, parsed when it is text."""
    try:
        return output if not isinstance(output, str) else loads(output)
    except OutputParseError as e:
        raise _OutputProblem(str(e)) from None


_OUTPUT_READERS: dict[str, Callable[[Any, list[Any]], Any]] = {
    COMPARE_IRI: _read_iri,
    COMPARE_SPARQL: _read_sparql,
    COMPARE_RETRIEVAL: _read_retrieval,
    COMPARE_JSON: _read_json,
}
"""The kinds whose reference output is read when the dataset loads, and how."""


def _bad_columns(columns: Any) -> tuple[str, str] | None:
    """(where below ``required_columns``, what is wrong) when it is not a list of column
    names, else None."""
    if not isinstance(columns, list):
        return "", f"must be a list of column names, got {_got(columns)}"
    try:
        "".join(columns)  # every item a string: checked in one C loop
        return None
    except TypeError:
        pass
    for position, column in enumerate(columns):
        if not isinstance(column, str):
            return f"[{position}]", f"must be a column name (a string), got {_got(column)}"
    return None  # pragma: no cover - join refused an item that is not a string


def _context_ids(contexts: Any) -> list[Any]:
    """The ids of a retrieval output: a JSON list of objects that each have an 'id'."""
    if not isinstance(contexts, list):
        raise ValueError(f"retrieval output must be a JSON list, got {_type_name(contexts)}")
    ids = []
    for position, context in enumerate(contexts):
        if not isinstance(context, dict) or "id" not in context:
            raise ValueError(f"retrieval output item [{position}] has no 'id'")
        if not isinstance(context["id"], CONTEXT_ID_TYPES):
            raise ValueError(
                f"retrieval output item [{position}]: 'id' must be a string or a number, got "
                f"{_type_name(context['id'])}"
            )
        ids.append(context["id"])
    return ids


def prepare_reference(
    data: Any, source: str = "reference", *, copies: bool = False
) -> list[Question]:
    """Validate a reference dataset (list of templates) and prepare its questions; ``copies``:
    with the copies of their steps for their results (``Question.copies``), for a run that
    keeps every result anyway (a streamed run makes each copy as its question is scored, so
    that its memory never holds a copy of every step at once)."""
    problems = Problems(source)
    if not isinstance(data, list):
        problems.add(
            None, None, f"the top level must be a list of templates, got {_type_name(data)}"
        )
        problems.raise_if_any()
    questions: list[Question] = []
    seen: dict[Any, str] = {}
    for t_pos, template in enumerate(data):
        _prepare_template(template, t_pos, seen, questions, problems, copies)
    problems.raise_if_any()
    return questions


def _prepare_template(
    template: Any,
    t_pos: int,
    seen: dict[Any, str],
    questions: list[Question],
    problems: Problems,
    copies: bool = False,
) -> None:
    """Check one template and append its prepared questions to ``questions``; ``seen`` maps
    the question ids read so far to their template's record."""
    t_record = f"template [{t_pos}]"
    if not isinstance(template, dict):
        problems.add(t_record, None, f"must be a mapping, got {_type_name(template)}")
        return
    template_id = template.get("template_id")
    if not isinstance(template_id, _ID_TYPES) or isinstance(template_id, bool):
        problems.add(t_record, "template_id", _wrong(template, "template_id", _AN_ID))
        return
    t_record = f"template {short_repr(template_id)}"
    items = template.get("questions")
    if not isinstance(items, list):
        problems.add(t_record, "questions", _wrong(template, "questions", "a list"))
        return
    for q_pos, question in enumerate(items):
        prepared = _prepare_question(question, q_pos, template_id, t_record, seen, problems, copies)
        if prepared is not None:
            questions.append(prepared)


def _prepare_question(
    question: Any,
    q_pos: int,
    template_id: Any,
    t_record: str,
    seen: dict[Any, str],
    problems: Problems,
    copies: bool = False,
) -> Question | None:
    """One question checked, with its step groups prepared; None without a usable, new id."""
    if not isinstance(question, dict):
        problems.add(
            f"{t_record} question [{q_pos}]", None, f"must be a mapping, got {_type_name(question)}"
        )
        return None
    qid = question.get("id")
    if not isinstance(qid, _ID_TYPES) or isinstance(qid, bool):
        problems.add(f"{t_record} question [{q_pos}]", "id", _wrong(question, "id", _AN_ID))
        return None
    record = f"{t_record} question {short_repr(qid)}"
    if qid in seen:
        problems.add(record, "id", f"duplicate question id (also in {seen[qid]})")
        return None
    seen[qid] = t_record
    if not isinstance(question.get("question_text"), str):
        problems.add(record, "question_text", _wrong(question, "question_text", "a string"))
    answer = question.get("reference_answer")
    if answer is not None and not isinstance(answer, str):
        problems.add(record, "reference_answer", f"must be a string, got {_got(answer)}")
    agent = not _AGENT_FIELDS.isdisjoint(question)  # (most questions have none)
    if agent:
        goal = question.get("reference_goal")
        if goal is not None and not isinstance(goal, str):
            problems.add(record, "reference_goal", f"must be a string, got {_got(goal)}")
        _check_topics(question.get("reference_topics"), record, problems)
    tag = question.get("question_type")
    if tag is not None and not isinstance(tag, (str, int, float)):
        problems.add(record, "question_type", f"must be {_A_TAG}, got {_got(tag)}")
    if agent:
        _check_ragas_inputs(question, record, problems)
    groups, has_matches, copied = _prepare_groups(question, record, problems, copies)
    trajectory = None
    if agent and "reference_trajectory" in question:
        try:
            trajectory = parse_reference(question["reference_trajectory"])
        except TrajectoryError as e:
            field_path, _, message = str(e).partition(": ")
            problems.add(record, field_path, message)
    return Question(template_id, qid, question, groups, record, has_matches, trajectory, copied)


_AGENT_FIELDS = frozenset(
    (
        "reference_goal",
        "reference_topics",
        "reference_contexts",
        "reference_tool_calls",
        "rubrics",
        "reference_trajectory",
    )
)
"""The optional question fields of the agent and ragas metrics, checked only when present."""


def _check_topics(topics: Any, record: str, problems: Problems) -> None:
    """``reference_topics`` (``topic_adherence``), when given: a non-empty list of strings."""
    if topics is None:
        return
    if not isinstance(topics, list) or not topics:
        got = "an empty list" if isinstance(topics, list) else _got(topics)
        problems.add(record, "reference_topics", f"must be a non-empty list of strings, got {got}")
        return
    for i, topic in enumerate(topics):
        if not isinstance(topic, str) or not topic.strip():
            problems.add(
                record, f"reference_topics[{i}]", f"must be a non-blank string, got {_got(topic)}"
            )


def _check_ragas_inputs(question: Mapping[str, Any], record: str, problems: Problems) -> None:
    """The question fields ragas' metrics read, when given: ``reference_contexts`` (a list of
    texts), ``reference_tool_calls`` (a list of ``{name, args}``) and ``rubrics`` (a mapping of
    ``score<N>_description`` to its criterion)."""
    contexts = question.get("reference_contexts")
    if contexts is not None and not (
        isinstance(contexts, list) and all(isinstance(c, str) for c in contexts)
    ):
        problems.add(
            record, "reference_contexts", f"must be a list of strings, got {_got(contexts)}"
        )
    calls = question.get("reference_tool_calls")
    if calls is not None:
        if not isinstance(calls, list):
            problems.add(record, "reference_tool_calls", f"must be a list, got {_got(calls)}")
        else:
            for i, call in enumerate(calls):
                if (
                    not isinstance(call, Mapping)
                    or not isinstance(call.get("name"), str)
                    or not isinstance(call.get("args", {}) or {}, Mapping)
                ):
                    problems.add(
                        record,
                        f"reference_tool_calls[{i}]",
                        "must be a mapping with a string 'name' and a mapping 'args', "
                        f"got {_got(call)}",
                    )
    rubrics = question.get("rubrics")
    if rubrics is not None and not (
        isinstance(rubrics, Mapping)
        and rubrics
        and all(isinstance(k, str) and isinstance(v, str) for k, v in rubrics.items())
    ):
        problems.add(
            record, "rubrics", f"must map score<N>_description to a text, got {_got(rubrics)}"
        )


def _prepare_groups(
    question: Mapping[str, Any], record: str, problems: Problems, copies: bool = False
) -> tuple[tuple[tuple[ReferenceStep, ...], ...] | None, bool, list[list[dict[str, Any]]] | None]:
    """The prepared step groups (None without ``reference_steps``), whether some step carries a
    ``matches`` key, and (with ``copies``) copies of the steps without it."""
    if "reference_steps" not in question:
        return None, False, None
    raw_groups = question["reference_steps"]
    if not isinstance(raw_groups, list) or not raw_groups:
        problems.add(
            record,
            "reference_steps",
            "must be a non-empty list of step groups (leave the key out when there are none)",
        )
        return None, False, None
    groups = []
    copied_groups: list[list[dict[str, Any]]] = []
    has_matches = False
    for g, group in enumerate(raw_groups):
        if not isinstance(group, list) or not group:
            problems.add(
                record, f"reference_steps[{g}]", "a group must be a non-empty list of steps"
            )
            continue
        # Each step is copied as it is prepared, while its dict is in the cache.
        kept = []
        copied: list[dict[str, Any]] = []
        for i, step in enumerate(group):
            prepared = _prepare_step(step, g, i, record, problems)
            if prepared is not None:
                kept.append(prepared)
                if copies:
                    copied.append(dict(step))
                if "matches" in step:
                    has_matches = True
                    if copies:
                        copied[-1].pop("matches", None)
        groups.append(tuple(kept))
        copied_groups.append(copied)
    return tuple(groups), has_matches, copied_groups if copies else None


def _check_steps(steps: Any, place: tuple[str, Any], qid: Any, problems: Problems) -> list[int]:
    """Check the actual steps of the response read at ``place``; returns the indexes of the
    successful ones."""
    if not isinstance(steps, list):
        message = f"must be a list, got {_got(steps)}"
        problems.add(response_record(place, qid), "actual_steps", message)
        return []
    successful = []
    for i, step in enumerate(steps):
        if not isinstance(step, dict):
            field_path, message = f"actual_steps[{i}]", f"must be a mapping, got {_type_name(step)}"
            problems.add(response_record(place, qid), field_path, message)
            continue
        status = step.get("status", "success")
        if status == "success":
            successful.append(i)
        args = step.get("args")
        step_id = step.get("id")
        error = step.get("error")
        if not isinstance(step.get("name"), str):
            key, wanted = "name", "a string"
        elif not isinstance(status, str):
            key, wanted = "status", "a string"
        elif args is not None and not isinstance(args, (dict, str)):
            key, wanted = "args", "a mapping or a string"
        elif "lost" in step and not (
            isinstance(step["lost"], list) and all(isinstance(x, str) for x in step["lost"])
        ):
            key, wanted = "lost", "a list of strings"
        elif (
            step_id is not None
            and type(step_id) is not str  # the common id, a string: one test (hot loop)
            and (not isinstance(step_id, _ID_TYPES) or isinstance(step_id, bool))
        ):
            key, wanted = "id", _AN_ID
        elif error is not None and not isinstance(error, str):
            key, wanted = "error", "a string"
        else:
            continue
        field_path, message = f"actual_steps[{i}].{key}", _wrong(step, key, wanted)
        problems.add(response_record(place, qid), field_path, message)
    return successful


def _numbered(data: Any, problems: Problems) -> Iterable[tuple[tuple[str, Any], Any, Any]]:
    """Yield (place, key, response) for a list, a dict keyed by question id, or JSONL lines."""
    if isinstance(data, dict):
        for key, response in data.items():
            yield ("key", key), key, response
    elif isinstance(data, list):
        line_numbers = getattr(data, "line_numbers", None)
        if line_numbers is not None:
            for position, response in enumerate(data):
                yield ("line", line_numbers[position]), None, response
        else:
            for position, response in enumerate(data):
                yield ("response", position), None, response
    else:
        problems.add(
            None,
            None,
            f"responses must be a list, a mapping by question id or JSON lines, got "
            f"{_type_name(data)}",
        )


_TOKEN_KEYS = ("input_tokens", "output_tokens", "total_tokens", "elapsed_sec")
_TEXT_KEYS = ("actual_answer", "error")
_INF = float("inf")


class Unknown:
    """The responses whose question id is not in the reference dataset: left out of the run
    (graphrag-eval ignores them), counted, and named in one warning."""

    def __init__(self) -> None:
        self.count = 0
        self.examples: list[Any] = []
        """The first few ids, in the order read."""

    def add(self, qid: Any) -> None:
        """Count one response for an unknown question id."""
        self.count += 1
        if len(self.examples) < 5:
            self.examples.append(qid)

    def message(self, source: str) -> str:
        """The warning's one line: how many were left out, and which ids (the first few)."""
        shown = ", ".join(short_repr(q, 40) for q in self.examples)
        more = ", ..." if self.count > len(self.examples) else ""
        noun = "response" if self.count == 1 else "responses"
        return (
            f"{source}: {self.count} {noun} for question ids not in the reference dataset "
            f"ignored ({shown}{more})"
        )

    def as_dict(self) -> dict[str, Any]:
        """The signature's record of them."""
        return {"count": self.count, "question_ids": list(self.examples)}


def prepare_responses(
    data: Any,
    questions: Iterable[Question],
    source: str = "responses",
    unknown: Unknown | None = None,
) -> dict[Any, list[Response]]:
    """Validate the responses and index them by question id: one response per question, or
    several when each carries a distinct ``trial`` (in the order read). A response for a
    question id not in the reference is counted in ``unknown`` and left out; without
    ``unknown`` it is an error."""
    problems = Problems(source)
    known = {q.question_id for q in questions}
    responses: dict[Any, list[Response]] = {}
    seen = Seen()
    for place, key, response in _numbered(data, problems):
        checked = check_response(place, key, response, problems, known, seen, unknown)
        if checked is not None:
            answered = responses.get(checked.question_id)  # (no empty list made per response)
            if answered is None:
                responses[checked.question_id] = [checked]
            else:
                answered.append(checked)
    problems.raise_if_any()
    return responses


_NO_TRIAL = object()
"""The trial of a response without ``trial``."""


class Seen:
    """The responses read so far, by question id and trial: finds a second response for a
    question without trials, a duplicate (question id, trial) pair, and a question answered both
    with and without ``trial``. Keeps one place per response read (a question without trials:
    the place alone)."""

    def __init__(self) -> None:
        self.places: dict[Any, Any] = {}
        """question id -> the place of its response, or {trial: place} for one with trials."""

    def claim(self, place: tuple[str, Any], qid: Any, trial: Any) -> tuple[str, str] | None:
        """Note the response at ``place``; (field, message) when it collides with one read
        before, else None."""
        before = self.places.get(qid)
        if before is None:
            self.places[qid] = place if trial is _NO_TRIAL else {trial: place}
            return None
        if not isinstance(before, dict):  # the question's one response had no trial
            also = response_record(before, qid)
            if trial is _NO_TRIAL:
                return "question_id", f"duplicate response (also {also})"
            return "trial", f"given here but not in another response to this question ({also})"
        if trial is _NO_TRIAL:
            also = response_record(next(iter(before.values())), qid)
            return "trial", f"missing here but given in another response to this question ({also})"
        if trial in before:
            also = response_record(before[trial], qid)
            return "trial", f"duplicate trial {short_repr(trial)} (also {also})"
        before[trial] = place
        return None


def check_response(
    place: tuple[str, Any],
    key: Any,
    response: Any,
    problems: Problems,
    known: Container[Any],
    seen: Seen | None,
    unknown: Unknown | None = None,
) -> Response | None:
    """Check one response read at ``place`` (under ``key`` in a mapping); its problems go to
    ``problems``. ``known`` holds the reference question ids, ``seen`` the responses already
    read (a second one for a question needs a distinct ``trial`` in both; None: not checked);
    a response for another id is counted in ``unknown`` (a problem without it). The prepared
    response, or None when it is not usable."""
    qid = _response_id(place, key, response, problems)
    if qid is _NO_ID:
        return None
    if qid not in known:
        _unjoined(place, qid, problems, unknown)
        return None
    trial = response.get(TRIAL_KEY, _NO_TRIAL)
    if trial is not _NO_TRIAL and (not isinstance(trial, _ID_TYPES) or isinstance(trial, bool)):
        problems.add(response_record(place, qid), TRIAL_KEY, f"must be {_AN_ID}, got {_got(trial)}")
        return None
    collision = None if seen is None else seen.claim(place, qid, trial)
    if collision is not None:
        problems.add(response_record(place, qid), *collision)
        return None
    status = response.get("status")
    if status is not None and status not in ("success", "error"):
        problems.add(
            response_record(place, qid),
            "status",
            f"must be 'success' or 'error', got {short_repr(status)}",
        )
        return None
    is_error = status == "error" or (status is None and "error" in response)
    successful = None
    if "actual_steps" in response:
        successful = _check_steps(response["actual_steps"], place, qid, problems)
    _check_values(response, place, qid, problems)
    return Response(qid, response, place, is_error, successful)


_NO_ID = object()
"""What ``_response_id`` gives for a response without a usable question id."""


def _response_id(place: tuple[str, Any], key: Any, response: Any, problems: Problems) -> Any:
    """The question id of a response (its ``question_id``, else its key in a mapping), or
    ``_NO_ID`` when it is not a mapping or has no usable id."""
    if not isinstance(response, dict):
        problems.add(
            response_record(place, None),
            None,
            f"a response must be a mapping, got {_type_name(response)}",
        )
        return _NO_ID
    given = response.get("question_id", _NO_ID)  # one lookup: whether it is there, and what
    if given is _NO_ID:
        qid = key
    elif key is not None and given != key:
        problems.add(
            response_record(place, None),
            "question_id",
            f"{short_repr(given)} differs from its key",
        )
        return _NO_ID
    else:
        qid = given
    if not isinstance(qid, _ID_TYPES) or isinstance(qid, bool):
        message = (
            f"must be {_AN_ID}, got {_got(qid)}"
            if given is not _NO_ID or key is not None
            else "missing"
        )
        problems.add(response_record(place, None), "question_id", message)
        return _NO_ID
    return qid


def _unjoined(
    place: tuple[str, Any], qid: Any, problems: Problems, unknown: Unknown | None
) -> None:
    """A response for ``qid``, which is not a reference question's id: counted in ``unknown``
    (a problem without it)."""
    if unknown is not None:
        unknown.add(qid)
        return
    problems.add(
        response_record(place, qid),
        "question_id",
        "no question with this id in the reference dataset",
    )


def _check_values(
    response: Mapping[str, Any], place: tuple[str, Any], qid: Any, problems: Problems
) -> None:
    """Check the answer and error texts and the token counts and time of a response."""
    for key_name in _TEXT_KEYS:
        value = response.get(key_name)
        if value is not None and not isinstance(value, str):
            problems.add(
                response_record(place, qid), key_name, f"must be a string, got {_got(value)}"
            )
    for key_name in _TOKEN_KEYS:
        value = response.get(key_name)
        if value is None:
            continue
        # The common cases first (hot loop): a plain int (never infinite) at least 0, or a
        # plain float in range; any other value is checked below.
        kind = type(value)
        if kind is int:
            if value >= 0:
                continue
        elif kind is float and 0 <= value < _INF:
            continue
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if number and 0 <= value < _INF:
            continue
        wanted = "a finite number, at least 0" if number else "a number"
        problems.add(response_record(place, qid), key_name, f"must be {wanted}, got {_got(value)}")
