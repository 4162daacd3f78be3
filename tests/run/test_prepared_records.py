"""The records preparing makes without calling their ``__init__`` (``_prepare_step``,
``prepare_question`` and the fast path of ``check_response`` set the fields themselves, which
costs a third less) are the records their ``__init__`` makes: every field set, none left out."""

from __future__ import annotations

import dataclasses
from typing import Any

from qa_eval.run.prepare import check_response, prepare_reference
from qa_eval.run.prepare.records import Problems, Question, Response
from qa_eval.steps.kinds import ReferenceStep


def _remade(record: Any) -> Any:
    """The record made again by its class's ``__init__`` from its fields (AttributeError when
    a field was never set)."""
    values = {f.name: getattr(record, f.name) for f in dataclasses.fields(record)}
    return type(record)(**values)


def test_prepared_questions_and_steps_are_those_init_makes() -> None:
    steps = [
        {"name": "iri_discovery", "args": {"q": "x"}, "output": "urn:x"},
        {"name": "sparql_query", "output_media_type": "application/sparql-results+json",
         "required_columns": ["s"], "output": '{"head": {}, "boolean": true}'},
        {"name": "retrieval", "output": '[{"id": 1}]', "matches": 0},
        {"name": "send", "args": {"to": "a"}},
    ]  # fmt: skip
    reference = [
        {
            "template_id": "t",
            "questions": [
                {"id": "q1", "question_text": "?", "reference_steps": [[s] for s in steps]},
                {"id": 2, "question_text": "?", "reference_steps": [steps[:2], steps[2:]]},
            ],
        }
    ]
    for copies in (False, True):
        questions = prepare_reference(reference, copies=copies)
        assert [type(q) for q in questions] == [Question, Question]
        for question in questions:
            assert _remade(question) == question
            assert question.groups
            for group in question.groups:
                for step in group:
                    assert type(step) is ReferenceStep and _remade(step) == step
        assert questions[0].has_matches and questions[0].record == "template 't'"
        kinds = [step.kind for group in questions[0].groups or () for step in group]
        assert kinds == ["iri_discovery", "sparql", "retrieval", "args"]


def test_a_response_checked_quickly_is_the_one_init_makes() -> None:
    response = {
        "question_id": "q1",
        "actual_answer": "a",
        "input_tokens": 3,
        "output_tokens": 4,
        "total_tokens": 7,
        "elapsed_sec": 0.5,
        "actual_steps": [
            {"name": "a", "args": {}, "id": "c0", "status": "success"},
            {"name": "b", "status": "error", "error": "e"},
        ],
    }
    checked = check_response(("line", 1), None, response, Problems("r"), {"q1"}, None)
    assert type(checked) is Response and _remade(checked) == checked
    assert checked.successful == [0] and not checked.is_error
