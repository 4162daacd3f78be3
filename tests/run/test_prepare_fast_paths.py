"""Preparing the reference takes shortcuts for the usual step and question (told by their number
of fields), for a SPARQL output given as text (parsed by orjson directly) and for a SPARQL step's
required columns: each gives what the general path gives, problems included (issue 36)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qa_eval.errors import InputError
from qa_eval.run.prepare import prepare_reference
from qa_eval.steps.outputs import OutputParseError, loads
from qa_eval.steps.sparql.match import SparqlReference, compare_sparql_results
from qa_eval.steps.sparql.match import prepare_reference as prepare_sparql_reference

SPARQL_JSON = "application/sparql-results+json"
SELECT = json.dumps(
    {"head": {"vars": ["s"]}, "results": {"bindings": [{"s": {"type": "uri", "value": "urn:a"}}]}}
)


def _prepared(questions: list[Any], drop: str = "") -> tuple[list[Any], list[str]]:
    """The questions prepared (their steps' and their own fields; the copies of their steps
    without the field ``drop``) and the problems found."""
    try:
        prepared = prepare_reference([{"template_id": "t", "questions": questions}], copies=True)
    except InputError as error:
        return [], list(error.problems)  # type: ignore[attr-defined]
    seen = [
        (
            q.question_id,
            q.has_matches,
            [[{k: v for k, v in c.items() if k != drop} for c in g] for g in q.copies or ()],
            [
                [(s.group, s.index, s.name, s.media_type, s.kind, s.parsed) for s in group]
                for group in q.groups or ()
            ],
        )
        for q in prepared
    ]
    return seen, []


_VALUES = st.sampled_from(
    [None, "", "x", "urn:x", 3, [], ["s"], [1], {}, {"a": 1}, True, SELECT, '[{"id": 1}]', "{"]
)
_STEPS = st.fixed_dictionaries(
    {},
    optional={
        "name": st.sampled_from(
            ["send", "retrieval", "sparql_query", "iri_discovery", "retrieve_time_series", "", 4]
        ),
        "args": _VALUES,
        "output": _VALUES,
        "output_media_type": st.sampled_from([None, SPARQL_JSON, "application/json", 5]),
        "required_columns": _VALUES,
        "ordered": st.sampled_from([True, "yes"]),
        "matches": st.just(1),
    },
)


@settings(max_examples=400, deadline=None)
@given(_STEPS)
def test_a_step_is_prepared_as_with_a_field_that_sends_it_the_long_way(
    step: dict[str, Any],
) -> None:
    # A valid ``ignore_duplicates`` flag changes nothing but the step's number of fields, which
    # the usual step's shortcut reads: with it, every step is prepared the long way.
    def question(steps: list[dict[str, Any]]) -> dict[str, Any]:
        return {"id": "q", "question_text": "?", "reference_steps": [steps]}

    longer = {**step, "ignore_duplicates": True}
    drop = "ignore_duplicates"
    assert _prepared([question([step])]) == _prepared([question([longer])], drop)
    # In a group of two steps as in a group of one.
    assert _prepared([question([step, step])]) == _prepared([question([longer, longer])], drop)


def test_the_usual_step_s_shortcut_leaves_an_unusual_one_to_the_checks() -> None:
    steps = [
        {"name": "send", "args": {}, "ordered": "yes"},  # three fields, no output
        {"name": "send", "args": None, "output": "x"},  # args given as null
        {"name": "send", "output": "x", "output_media_type": 5},  # no args
        {"name": "sparql_query", "args": {}, "output": SELECT, "required_columns": "s"},
    ]
    questions = [{"id": "q", "question_text": "?", "reference_steps": [[s] for s in steps]}]
    assert _prepared(questions)[1] == [
        "reference: template 't' question 'q': reference_steps[0][0].ordered: "
        "must be true or false, got 'yes'",
        "reference: template 't' question 'q': reference_steps[2][0].output_media_type: "
        "must be a string (a media type), got int 5",
        "reference: template 't' question 'q': reference_steps[3][0].required_columns: "
        "must be a list of column names, got str 's'",
    ]


_QUESTIONS = st.fixed_dictionaries(
    {"id": st.just("q")},
    optional={
        "question_text": st.sampled_from(["?", None, 3]),
        "reference_answer": st.sampled_from(["a", None, 3]),
        "question_type": st.sampled_from(["t", None, [1]]),
        "reference_steps": st.sampled_from([None, [], [[{"name": "a", "args": {}}]]]),
        "reference_goal": st.sampled_from(["g", None, 5]),
        "reference_topics": st.sampled_from([["x"], [], "x"]),
        "other": st.just(1),
    },
)


@settings(max_examples=300, deadline=None)
@given(_QUESTIONS)
def test_a_question_is_prepared_as_with_a_field_that_sends_it_the_long_way(
    question: dict[str, Any],
) -> None:
    # Valid ``reference_contexts`` change nothing but the question's number of fields, which
    # the usual question's shortcut reads (it then looks for the agent fields).
    longer = {**question, "reference_contexts": ["c"]}
    assert _prepared([question]) == _prepared([longer])


def test_the_usual_question_s_shortcut_leaves_an_agent_field_to_its_check() -> None:
    steps = [[{"name": "a", "args": {}}]]
    question = {"id": "q", "question_text": "?", "reference_steps": steps, "reference_goal": 5}
    question["reference_answer"] = "a"  # five fields, one of them an agent's
    assert _prepared([question])[1] == [
        "reference: template 't' question 'q': reference_goal: must be a string, got int 5"
    ]


def _sparql_problems(output: Any) -> list[str]:
    step = {"name": "sparql_query", "output_media_type": SPARQL_JSON, "required_columns": ["s"]}
    step["output"] = output
    return _prepared([{"id": "q", "question_text": "?", "reference_steps": [[step]]}])[1]


def test_a_sparql_output_orjson_refuses_is_read_by_loads() -> None:
    # NaN: not JSON to orjson, read by the json module as ``loads`` reads it.
    with_nan = SELECT[:-1] + ', "x": NaN}'
    assert _sparql_problems(with_nan) == []
    broken = SELECT[:-1]
    with pytest.raises(OutputParseError) as parse_error:
        loads(broken)
    where = "reference: template 't' question 'q': reference_steps[0][0].output: "
    assert _sparql_problems(broken) == [f"{where}not a SPARQL JSON result: {parse_error.value}"]
    assert _sparql_problems("[1]") == [
        f"{where}not a SPARQL JSON result: expected a JSON object, got list"
    ]


@pytest.mark.parametrize("columns", [[], ["s"], ["s", "s"], ["s", "n", "s"], ("s",)])
def test_a_sparql_reference_s_required_columns_are_read_once_each(columns: Any) -> None:
    result = {
        "head": {"vars": ["s", "n"]},
        "results": {
            "bindings": [
                {"s": {"type": "uri", "value": "urn:a"}, "n": {"type": "literal", "value": "1"}}
            ]
        },
    }
    prepared = prepare_sparql_reference(result, columns)
    assert prepared.required == list(dict.fromkeys(columns))
    assert prepared.required is not columns  # (a copy: the step's list is not shared)
    remade = SparqlReference(prepared.boolean, prepared.rows, prepared.required, prepared.columns)
    assert remade == prepared and prepared.derived == {}
    assert compare_sparql_results(prepared, result) == 1.0
    ask = prepare_sparql_reference({"head": {}, "boolean": False}, columns)
    assert ask == SparqlReference(False, 0, list(dict.fromkeys(columns)), [])
    assert ask.derived == {}


def test_a_sparql_step_with_columns_not_valid_is_not_told_they_are_missing() -> None:
    step = {"name": "sparql_query", "output_media_type": SPARQL_JSON, "output": SELECT}
    where = "reference: template 't' question 'q': reference_steps[0][0].required_columns"
    for columns, problem in (
        (None, "missing (a SPARQL step with JSON results must list the columns that have to "
               "match)"),
        (5, "must be a list of column names, got int 5"),
        ([3], None),
    ):  # fmt: skip
        given_step = step if columns is None else {**step, "required_columns": columns}
        got = _prepared([{"id": "q", "question_text": "?", "reference_steps": [[given_step]]}])
        if problem is None:
            assert got[1] == [f"{where}[0]: must be a column name (a string), got int 3"]
        else:
            assert got[1] == [f"{where}: {problem}"]


def test_a_json_output_orjson_refuses_is_read_by_loads() -> None:
    def prepared(output: str) -> tuple[list[Any], list[str]]:
        step = {"name": "get", "args": {}, "output_media_type": "application/json"}
        step["output"] = output
        return _prepared([{"id": "q", "question_text": "?", "reference_steps": [[step]]}])

    assert prepared('{"a": [1, 2]}')[0][0][3] == [
        [(0, 0, "get", "application/json", "json", {"a": [1, 2]})]
    ]
    with_nan = prepared('{"a": NaN}')[0][0][3][0][0][5]
    assert list(with_nan) == ["a"] and math.isnan(with_nan["a"])
    with pytest.raises(OutputParseError) as parse_error:
        loads("{")
    assert prepared("{")[1] == [
        f"reference: template 't' question 'q': reference_steps[0][0].output: {parse_error.value}"
    ]
