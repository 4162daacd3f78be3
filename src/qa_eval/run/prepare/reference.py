"""The reference dataset checked and prepared (``prepare_reference``): each template's questions,
their reference steps with the outputs that are compared structurally parsed once."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from orjson import loads as orjson_loads

from ...errors import short_repr
from ...steps.contexts import context_ids
from ...steps.kinds import (
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
from ...steps.outputs import OutputParseError, loads
from ...steps.sparql.match import prepare_reference as prepare_sparql_reference
from ...steps.sparql.terms import SparqlResultError, parse_sparql_json
from .records import A_TAG, AN_ID, ID_TYPES, Problems, Question, found, type_name, wrong


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
            record, _where(group, index), f"a step must be a mapping, got {type_name(raw)}"
        )
        return None
    # Hot path (once per reference step): the fields read once each, the checks and the
    # choice of the step's kind written out here, not in helpers whose calls cost ~5% of
    # preparing the steps; the problems are added in the same order (name, args, media type,
    # columns, flags, output).
    name = raw.get("name")
    args = raw.get("args")
    output = raw.get("output")
    if not isinstance(name, str) or not name:
        problems.add(record, f"{_where(group, index)}.name", wrong(raw, "name", "a step name"))
        return None
    if type(args) is dict and len(raw) == (2 if output is None else 3):
        # The usual step: its name, arguments and maybe output and no other field (their count
        # tells, with no look-up of each of the others); with no media type, it is compared
        # by its name, its arguments or its output (as the choice below would choose).
        media_type = columns = None
        kind = _NAMED_KINDS.get(name)
        if kind is None:
            if output is None:
                kind = COMPARE_ARGS
            else:
                kind = COMPARE_RETRIEVAL if name == "retrieval" and output else COMPARE_TEXT
    else:
        if args is not None and not isinstance(args, dict):
            message = f"must be a mapping, got {found(args)}"
            problems.add(record, f"{_where(group, index)}.args", message)
        media_type = raw.get("output_media_type")
        columns = raw.get("required_columns")
        if media_type is not None and not isinstance(media_type, str):
            problems.add(
                record,
                f"{_where(group, index)}.output_media_type",
                f"must be a string (a media type), got {found(media_type)}",
            )
            media_type = None
        if columns is not None or "required_columns" in raw:
            try:  # a list of column names (every item a string): one C loop
                "".join(columns)  # type: ignore[arg-type]
                bad = None if type(columns) is list else _bad_columns(columns)
            except TypeError:
                bad = _bad_columns(columns)
            if bad is not None:
                problems.add(record, f"{_where(group, index)}.required_columns{bad[0]}", bad[1])
                columns = None
        if "ordered" in raw or "ignore_duplicates" in raw:
            _check_flags(raw, group, index, record, problems)
        # How the step is compared: one of the COMPARE_* names.
        kind = _NAMED_KINDS.get(name)
        if kind is None:
            if name == "sparql_query" and media_type == SPARQL_JSON:
                kind = COMPARE_SPARQL
                if columns is None and "required_columns" not in raw:
                    problems.add(
                        record,
                        f"{_where(group, index)}.required_columns",
                        "missing (a SPARQL step with JSON results must list the columns that "
                        "have to match)",
                    )
            elif name == "retrieval" and output:
                kind = COMPARE_RETRIEVAL
            elif media_type == APPLICATION_JSON and output is not None:
                kind = COMPARE_JSON
            else:
                kind = COMPARE_ARGS if output is None else COMPARE_TEXT
    parsed: Any = None
    if kind in _OUTPUT_READERS:  # (a test, not a get: most kinds have no reader)
        try:
            parsed = _OUTPUT_READERS[kind](output, columns or [])
        except _OutputProblem as problem:
            problems.add(record, f"{_where(group, index)}.output", str(problem))
    # The fields set here, as ReferenceStep.__init__ sets them: a class's __init__ called from
    # C (type.__call__) cost a third of preparing a step.
    step = _new(ReferenceStep)
    step.group = group
    step.index = index
    step.raw = raw
    step.name = name
    step.media_type = media_type
    step.parsed = parsed
    step.kind = kind
    return step


_STEP_FIELDS = ("name", "args", "output_media_type", "required_columns", "output")
"""The fields of a reference step ``_prepare_step`` reads, in the order it reads them."""
_NAMED_KINDS = {
    "iri_discovery": COMPARE_IRI,
    "retrieve_time_series": COMPARE_TIME_SERIES,  # compared by arguments: the output not read
    "retrieve_data_points": COMPARE_DATA_POINTS,
}
"""The kinds a step's name alone decides."""
_new = object.__new__


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
        if type(output) is str:  # (the usual output, parsed in fewer calls)
            try:
                data = orjson_loads(output)
            except ValueError:  # (not JSON to orjson: ``loads`` reads it, or tells why not)
                data = loads(output)
        else:
            data = output if isinstance(output, dict) else loads(output)
        result = parse_sparql_json(data)
    except (OutputParseError, SparqlResultError) as e:
        raise _OutputProblem(f"not a SPARQL JSON result: {e}") from None
    try:
        return prepare_sparql_reference(result, columns)
    except SparqlResultError as e:
        raise _OutputProblem(str(e)) from None


def _read_retrieval(output: Any, columns: list[Any]) -> list[Any]:
    """The context ids of a retrieval step's output."""
    if type(output) is str:  # (the usual output, in fewer calls; any problem is told below)
        try:
            ids = context_ids(orjson_loads(output))
        except ValueError:
            ids = None
        if ids is not None:
            return ids
    try:
        return _context_ids(output if isinstance(output, list) else loads(output))
    except (OutputParseError, ValueError) as e:
        raise _OutputProblem(str(e)) from None


def _read_json(output: Any, columns: list[Any]) -> Any:
    """An ``application/json`` output, parsed when it is text."""
    if type(output) is str:  # (the usual output, parsed in fewer calls)
        try:
            return orjson_loads(output)
        except ValueError:
            pass  # (not JSON to orjson: ``loads`` reads it, or tells why not)
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
        return "", f"must be a list of column names, got {found(columns)}"
    try:
        "".join(columns)  # every item a string: checked in one C loop
        return None
    except TypeError:
        pass
    for position, column in enumerate(columns):
        if not isinstance(column, str):
            return f"[{position}]", f"must be a column name (a string), got {found(column)}"
    return None  # pragma: no cover - join refused an item that is not a string


def _context_ids(contexts: Any) -> list[Any]:
    """The ids of a retrieval output: a JSON list of objects that each have an 'id'."""
    ids = context_ids(contexts)  # (the usual output, read as the comparisons read theirs)
    if ids is not None:
        return ids
    if not isinstance(contexts, list):
        raise ValueError(f"retrieval output must be a JSON list, got {type_name(contexts)}")
    ids = []
    for position, context in enumerate(contexts):
        if not isinstance(context, dict) or "id" not in context:
            raise ValueError(f"retrieval output item [{position}] has no 'id'")
        if not isinstance(context["id"], CONTEXT_ID_TYPES):
            raise ValueError(
                f"retrieval output item [{position}]: 'id' must be a string or a number, got "
                f"{type_name(context['id'])}"
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
            None, None, f"the top level must be a list of templates, got {type_name(data)}"
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
        problems.add(t_record, None, f"must be a mapping, got {type_name(template)}")
        return
    template_id = template.get("template_id")
    if not isinstance(template_id, ID_TYPES) or isinstance(template_id, bool):
        problems.add(t_record, "template_id", wrong(template, "template_id", AN_ID))
        return
    t_record = f"template {short_repr(template_id)}"
    items = template.get("questions")
    if not isinstance(items, list):
        problems.add(t_record, "questions", wrong(template, "questions", "a list"))
        return
    for q_pos, question in enumerate(items):
        prepared = prepare_question(question, q_pos, template_id, t_record, seen, problems, copies)
        if prepared is not None:
            questions.append(prepared)


def prepare_question(
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
            f"{t_record} question [{q_pos}]", None, f"must be a mapping, got {type_name(question)}"
        )
        return None
    qid = question.get("id")
    if type(qid) is not str and (not isinstance(qid, ID_TYPES) or isinstance(qid, bool)):
        problems.add(f"{t_record} question [{q_pos}]", "id", wrong(question, "id", AN_ID))
        return None
    if qid in seen:
        record = f"{t_record} question {short_repr(qid)}"
        problems.add(record, "id", f"duplicate question id (also in {seen[qid]})")
        return None
    seen[qid] = t_record
    # The question's record (its template's and its id) is written into its problems at the
    # end, when it has any: most questions have none, and need no text made.
    record = _PENDING
    known = len(problems.items)
    text = question.get("question_text")
    if not isinstance(text, str):
        problems.add(record, "question_text", wrong(question, "question_text", "a string"))
    answer = question.get("reference_answer")
    if answer is not None and not isinstance(answer, str):
        problems.add(record, "reference_answer", f"must be a string, got {found(answer)}")
    tag = question.get("question_type")
    raw_groups = question.get("reference_steps")
    if (
        len(question) == (4 if tag is None else 5)
        and raw_groups is not None
        and answer is not None
        and type(text) is str
    ):  # (the usual question: its id, text, answer, steps and maybe type, and no other field)
        agent = False
    else:
        agent = not _AGENT_FIELDS.isdisjoint(question)
    if agent:
        goal = question.get("reference_goal")
        if goal is not None and not isinstance(goal, str):
            problems.add(record, "reference_goal", f"must be a string, got {found(goal)}")
        _check_topics(question.get("reference_topics"), record, problems)
    if tag is not None and not isinstance(tag, (str, int, float)):
        problems.add(record, "question_type", f"must be {A_TAG}, got {found(tag)}")
    if agent:
        _check_ragas_inputs(question, record, problems)
    # The step groups (None without ``reference_steps``), whether some step carries a
    # ``matches`` key, and (with ``copies``) copies of the steps without it: prepared here, not
    # in a function of their own, whose call cost ~2% of preparing a question.
    groups: tuple[tuple[ReferenceStep, ...], ...] | None = None
    copied: list[list[dict[str, Any]]] | None = None
    has_matches = False
    if raw_groups is None and "reference_steps" not in question:
        pass
    elif not isinstance(raw_groups, list) or not raw_groups:
        problems.add(
            record,
            "reference_steps",
            "must be a non-empty list of step groups (leave the key out when there are none)",
        )
    else:
        prepared_groups: list[tuple[ReferenceStep, ...]] = []
        copied_groups: list[list[dict[str, Any]]] = []
        g = -1  # (counted here: an enumerate costs more than the one to three groups it counts)
        for group in raw_groups:
            g += 1
            # Each step is copied as it is prepared, while its dict is in the cache.
            if type(group) is list and len(group) == 1:  # the usual group, of one step
                step = group[0]
                prepared = _prepare_step(step, g, 0, record, problems)
                if prepared is None:
                    prepared_groups.append(())
                    copied_groups.append([])
                    continue
                prepared_groups.append((prepared,))
                if copies:
                    copied_groups.append([dict(step)])
                if "matches" in step:
                    has_matches = True
                    if copies:
                        copied_groups[-1][0].pop("matches", None)
                continue
            if not isinstance(group, list) or not group:
                problems.add(
                    record, f"reference_steps[{g}]", "a group must be a non-empty list of steps"
                )
                continue
            kept = []
            copied_steps: list[dict[str, Any]] = []
            for i, step in enumerate(group):
                prepared = _prepare_step(step, g, i, record, problems)
                if prepared is not None:
                    kept.append(prepared)
                    if copies:
                        copied_steps.append(dict(step))
                    if "matches" in step:
                        has_matches = True
                        if copies:
                            copied_steps[-1].pop("matches", None)
            prepared_groups.append(tuple(kept))
            copied_groups.append(copied_steps)
        groups = tuple(prepared_groups)
        if copies:
            copied = copied_groups
    trajectory = None
    if agent and "reference_trajectory" in question:
        from ...steps.trajectory.comparators import TrajectoryError
        from ...steps.trajectory.reference import parse_reference

        try:
            trajectory = parse_reference(question["reference_trajectory"])
        except TrajectoryError as e:
            field_path, _, message = str(e).partition(": ")
            problems.add(record, field_path, message)
    if len(problems.items) != known:
        _name_question(problems.items, known, f"{t_record} question {short_repr(qid)}")
    made = _new(Question)  # (the fields set as Question.__init__ sets them: see _prepare_step)
    made.template_id = template_id
    made.question_id = qid
    made.raw = question
    made.groups = groups
    made.record = t_record
    made.has_matches = has_matches
    made.trajectory = trajectory
    made.copies = copied
    made.agent_fields = agent
    return made


_PENDING = "".join(("<the question's record", ">"))
"""What stands for the record of a question being prepared in its problems (a string of its
own, told apart by identity); ``_name_question`` writes the record in."""


def _name_question(
    items: list[tuple[str | None, str | None, str]], known: int, record: str
) -> None:
    """The record of the question whose problems are ``items[known:]`` written into them."""
    items[known:] = [
        (record if where is _PENDING else where, field_path, message)
        for where, field_path, message in items[known:]
    ]


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
        got = "an empty list" if isinstance(topics, list) else found(topics)
        problems.add(record, "reference_topics", f"must be a non-empty list of strings, got {got}")
        return
    for i, topic in enumerate(topics):
        if not isinstance(topic, str) or not topic.strip():
            problems.add(
                record, f"reference_topics[{i}]", f"must be a non-blank string, got {found(topic)}"
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
            record, "reference_contexts", f"must be a list of strings, got {found(contexts)}"
        )
    calls = question.get("reference_tool_calls")
    if calls is not None:
        if not isinstance(calls, list):
            problems.add(record, "reference_tool_calls", f"must be a list, got {found(calls)}")
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
                        f"got {found(call)}",
                    )
    rubrics = question.get("rubrics")
    if rubrics is not None and not (
        isinstance(rubrics, Mapping)
        and rubrics
        and all(isinstance(k, str) and isinstance(v, str) for k, v in rubrics.items())
    ):
        problems.add(
            record, "rubrics", f"must map score<N>_description to a text, got {found(rubrics)}"
        )
