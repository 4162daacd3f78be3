"""Reference steps are not scored on what a trace lost: a step named like a reference step with no
recorded output or arguments makes steps_score not evaluable, never a 0."""

from __future__ import annotations

from typing import Any

from qa_eval import compute_aggregates, run_evaluation


def reference() -> list[dict[str, Any]]:
    """Two questions with one SPARQL-like step each, compared by output."""
    return [
        {
            "template_id": "t",
            "questions": [
                {
                    "id": f"q{i}",
                    "question_text": "?",
                    "reference_steps": [[{"name": "search", "args": {"q": "x"}, "output": "o"}]],
                }
                for i in range(3)
            ],
        }
    ]


def step(**extra: Any) -> dict[str, Any]:
    """An actual search step that found the reference output, with ``extra`` keys."""
    return {"name": "search", "args": {"q": "x"}, "status": "success", "output": "o", **extra}


def test_a_lost_output_or_arguments_make_the_steps_not_evaluable() -> None:
    responses = [
        {"question_id": "q0", "actual_steps": [step()]},
        {"question_id": "q1", "actual_steps": [{**step(lost=["output"]), "output": None}]},
        {
            "question_id": "q2",
            "actual_steps": [step(lost=["status"]), step(name="other", lost=["args"])],
        },
    ]
    results = run_evaluation(reference(), responses)
    assert results[0]["steps_score"] == 1.0
    assert "steps_score" not in results[1]
    assert results[1]["steps_score_error"] == (
        "not evaluable: 1 of 1 steps named like reference steps have no recorded output "
        "(the trace did not capture them)"
    )
    assert "mismatch" not in results[1]["reference_steps"][0][0]
    # a lost status, or lost arguments of a step no reference step is named like, change nothing
    assert results[2]["steps_score"] == 1.0
    aggregates = compute_aggregates(results)
    steps = aggregates["micro"]["steps_score"]
    assert steps["n"] == 2 and steps["failed"] == 1 and steps["mean"] == 1.0


def test_responses_the_full_checks_prepare_are_tested_for_lost_steps_by_the_run() -> None:
    """A response with a trial is left to the full checks, which do not note that no step is
    lost (the fast path does): the run then tests its steps itself, with the same scores, and
    finds a lost output."""
    responses = [
        {"question_id": "q0", "actual_steps": [step()]},
        {"question_id": "q1", "trial": 1, "actual_steps": [step()]},
        {
            "question_id": "q2",
            "trial": 1,
            "actual_steps": [{**step(lost=["output"]), "output": None}],
        },
    ]
    results = run_evaluation(reference(), responses)
    assert results[0]["steps_score"] == results[1]["steps_score"] == 1.0
    assert "steps_score" not in results[2]
    assert results[2]["steps_score_error"].startswith("not evaluable: 1 of 1 steps")


def test_only_steps_checked_plain_skip_the_test_for_lost_ones() -> None:
    # The response check marks steps it found plain (dicts, none with "lost"); the evaluation
    # skips its own test for those only, and a response it tests (its steps lost, or not marked
    # plain) gives what the marked one gives when nothing was lost.
    from dataclasses import replace

    from qa_eval.run.prepare.reference import prepare_reference
    from qa_eval.run.prepare.responses import prepare_responses
    from qa_eval.run.question import evaluate_question

    questions = prepare_reference(reference())
    responses = prepare_responses(
        [
            {"question_id": "q0", "actual_steps": [step()]},
            {"question_id": "q1", "actual_steps": [step(lost=["output"])]},
            {"question_id": "q2"},
        ],
        questions,
    )
    plain, lost, without = (responses[f"q{i}"][0] for i in range(3))
    assert plain.plain and without.plain and not lost.plain
    tested = replace(plain, plain=False)
    assert evaluate_question(questions[0], tested) == evaluate_question(questions[0], plain)
    assert evaluate_question(questions[0], plain)["steps_score"] == 1.0
    assert "steps_score_error" in evaluate_question(questions[1], lost)
