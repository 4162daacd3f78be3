"""The shortcuts of a question's evaluation (``run.question``) give what the long way gives."""

from __future__ import annotations

from typing import Any

from qa_eval import run_evaluation


def _step(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args}


def _run(groups: list[list[dict[str, Any]]], actual: list[dict[str, Any]]) -> dict[str, Any]:
    reference = [
        {
            "template_id": "t",
            "questions": [{"id": "q", "question_text": "?", "reference_steps": groups}],
        }
    ]
    steps = [{**step, "status": "success"} for step in actual]
    return run_evaluation(reference, [{"question_id": "q", "actual_steps": steps}])[0]  # type: ignore[no-any-return]


def test_as_many_matches_as_groups_still_explain_a_step_left_unmatched() -> None:
    # Fewer matches than groups leave a step unmatched without asking; as many matches as
    # groups ask, and a group of two steps with one matched still has one to explain.
    result = _run([[_step("a", x=1), _step("b", y=2)]], [_step("a", x=1)])
    assert result["reference_steps"] == [
        [
            {"name": "a", "args": {"x": 1}, "matches": 0},
            {"name": "b", "args": {"y": 2}, "mismatch": "no actual step named b"},
        ]
    ]
    assert result["steps_score"] == 0.5
    fewer = _run([[_step("a", x=1)], [_step("b", y=2)]], [_step("a", x=1)])
    assert fewer["reference_steps"][1] == [
        {"name": "b", "args": {"y": 2}, "mismatch": "no actual step named b"}
    ]
    whole = _run([[_step("a", x=1)]], [_step("a", x=1)])
    assert whole["reference_steps"] == [[{"name": "a", "args": {"x": 1}, "matches": 0}]]
    assert whole["steps_score"] == 1.0


def test_several_matches_are_annotated_in_reference_order() -> None:
    # One match is annotated as it comes; several are sorted first (here found in the other
    # order: the actual steps run b before a, a group's steps in any order).
    result = _run([[_step("a", x=1), _step("b", y=2)]], [_step("b", y=2), _step("a", x=1)])
    assert result["reference_steps"] == [
        [
            {"name": "a", "args": {"x": 1}, "matches": 1},
            {"name": "b", "args": {"y": 2}, "matches": 0},
        ]
    ]
    assert result["steps_score"] == 1.0


_AGENT = {
    "reference_goal": "the goal",
    "reference_topics": ["topic"],
    "reference_contexts": ["a context"],
    "reference_tool_calls": [{"name": "a", "args": {}}],
    "rubrics": {"score1_description": "bad"},
}


def test_only_questions_prepared_without_agent_fields_skip_their_search() -> None:
    # Preparing notes whether a question has a field of the agent or ragas metrics; a question
    # made without that note (agent_fields True) is searched, with the same result.
    from dataclasses import replace

    from qa_eval.run.prepare.reference import prepare_reference
    from qa_eval.run.prepare.responses import prepare_responses
    from qa_eval.run.question import (
        AGENT_REFERENCE_KEYS,
        RAGAS_REFERENCE_KEYS,
        evaluate_question,
    )

    assert set(_AGENT) | {"reference_trajectory"} == {*AGENT_REFERENCE_KEYS, *RAGAS_REFERENCE_KEYS}
    base = {"question_text": "?", "reference_steps": [[_step("a", x=1)]]}
    questions = [{"id": "plain", **base}] + [
        {"id": key, **base, key: value} for key, value in _AGENT.items()
    ]
    prepared = prepare_reference([{"template_id": "t", "questions": questions}])
    assert [q.agent_fields for q in prepared] == [False] + [True] * len(_AGENT)
    responses = prepare_responses(
        [{"question_id": q["id"], "actual_steps": [_step("a", x=1)]} for q in questions],
        prepared,
    )
    for question in prepared:
        response = responses[question.question_id][0]
        result = evaluate_question(question, response)
        searched = evaluate_question(replace(question, agent_fields=True), response)
        assert searched == result
        assert [k for k in _AGENT if k in result] == [k for k in _AGENT if k in question.raw]
