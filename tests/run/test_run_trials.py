"""Repeated trials in a run: responses with ``trial`` (several per question id), the errors for
a duplicate (question id, trial) pair and for a question with and without trials (in memory and
streamed alike), one result per trial carrying ``trial``, and the judge's cache across trials."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from openai_stub import Reply, StubServer, completion, oracle_content
from qa_eval import run_evaluation
from qa_eval.errors import InputError
from qa_eval.io.keysets import original_result
from qa_eval.run.evaluation import iter_evaluation
from qa_eval.run.prepare import prepare_reference, prepare_responses
from qa_eval.run.stream import JsonLinesResponses


def _reference(n: int = 3) -> list[dict[str, Any]]:
    return [
        {
            "template_id": "t",
            "questions": [
                {
                    "id": f"q{i}",
                    "question_text": f"What is stored under item-{i}?",
                    "reference_answer": f"Item {i} holds {i * 7} units.",
                }
                for i in range(n)
            ],
        }
    ]


def _response(qid: str, trial: Any = None, answer: str = "some answer") -> dict[str, Any]:
    out: dict[str, Any] = {"question_id": qid, "actual_answer": answer}
    if trial is not None:
        out["trial"] = trial
    return out


def _errors(responses: list[dict[str, Any]], tmp_path: Path) -> tuple[str, str]:
    """The error in memory and the error when the same lines are streamed from a file."""
    questions = prepare_reference(_reference())
    with pytest.raises(InputError) as memory:
        prepare_responses(responses, questions)
    path = tmp_path / "responses.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in responses))
    with pytest.raises(InputError) as streamed:
        JsonLinesResponses(path).index(questions, "responses")
    return str(memory.value), str(streamed.value)


def test_a_duplicate_question_and_trial_pair_is_an_error_naming_both_records(
    tmp_path: Path,
) -> None:
    memory, streamed = _errors(
        [_response("q0", 1), _response("q0", 2), _response("q0", 1)], tmp_path
    )
    assert memory == (
        "responses: response [2] (question_id 'q0'): trial: duplicate trial 1 "
        "(also response [0] (question_id 'q0'))"
    )
    assert streamed == (
        "responses: line 3 (question_id 'q0'): trial: duplicate trial 1 "
        "(also line 1 (question_id 'q0'))"
    )


@pytest.mark.parametrize(
    ("first", "second", "message"),
    [
        (None, 1, "trial: given here but not in another response to this question"),
        (1, None, "trial: missing here but given in another response to this question"),
    ],
)
def test_a_question_with_and_without_trial_is_an_error(
    first: Any, second: Any, message: str, tmp_path: Path
) -> None:
    memory, streamed = _errors([_response("q1", first), _response("q1", second)], tmp_path)
    assert memory == (
        f"responses: response [1] (question_id 'q1'): {message} (response [0] (question_id 'q1'))"
    )
    expected = f"responses: line 2 (question_id 'q1'): {message} (line 1 (question_id 'q1'))"
    assert streamed == expected


def test_without_trials_a_second_response_is_still_a_duplicate(tmp_path: Path) -> None:
    memory, _ = _errors([_response("q0"), _response("q0")], tmp_path)
    assert memory.endswith("question_id: duplicate response (also response [0] (question_id 'q0'))")


@pytest.mark.parametrize("bad", [True, 1.5, [1], {"n": 1}])
def test_a_trial_must_be_an_integer_or_a_string(bad: Any, tmp_path: Path) -> None:
    memory, streamed = _errors([_response("q0", bad)], tmp_path)
    assert memory.startswith("responses: response [0] (question_id 'q0'): trial: must be a string")
    assert streamed.startswith("responses: line 1 (question_id 'q0'): trial: must be a string")


def test_every_trial_is_its_own_result_in_reference_order(tmp_path: Path) -> None:
    """Trials 'a' and 'b' of q2 come before q0's in the file; the results follow the reference
    (q0, q1, q2) and, within a question, the order read; a question without a response is one
    result; in memory and streamed give the same results."""
    responses = [
        _response("q2", "b"),
        _response("q0", 1),
        _response("q2", "a"),
        _response("q0", 0),
        _response("q0", 2),
    ]
    results = run_evaluation(_reference(), responses)
    path = tmp_path / "responses.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in responses))
    streamed = list(iter_evaluation(_reference(), JsonLinesResponses(path)))
    seen = [(r["question_id"], r.get("trial")) for r in results]
    assert seen == [("q0", 1), ("q0", 0), ("q0", 2), ("q1", None), ("q2", "b"), ("q2", "a")]
    assert [dict(r) for r in streamed] == [dict(r) for r in results]
    assert results[3]["status"] == "error" and "trial" not in results[3]
    assert "trial" not in original_result(results[0])


def _judged(responses: list[dict[str, Any]], cache: Path) -> tuple[Any, int]:
    """The results of a run over the stub judge, and how many chat calls reached it."""

    def script(request: dict[str, Any], number: int) -> Reply:
        return completion(oracle_content(request))

    with StubServer(script) as server:
        endpoint = {"provider": "openai", "base_url": server.url, "api_key": "x"}
        results = run_evaluation(
            _reference(1),
            responses,
            config={"llm": {"generation": {**endpoint, "model": "gpt-4o-mini"}}},
            cache=cache,
            disable=["answer_relevance"],
        )
        return results, len(server.chat_requests)


def test_identical_trials_are_judged_once_through_the_cache(tmp_path: Path) -> None:
    """Three trials of q0 with the same answer and one with another cost the judge calls of two
    answers (the repeats come from the reply cache), and the repeats get the same values."""
    same, other = "item-0 holds 0 units.", "item-0 holds 5 units."
    _, one_answer = _judged([_response("q0", answer=same)], tmp_path / "alone.sqlite3")
    responses = [_response("q0", t, same if t < 3 else other) for t in range(4)]
    results, calls = _judged(responses, tmp_path / "trials.sqlite3")
    assert one_answer > 0 and calls == 2 * one_answer
    assert [r["trial"] for r in results] == [0, 1, 2, 3]
    assert results[0]["answer_f1"] == results[1]["answer_f1"] == results[2]["answer_f1"]
    assert "answer_f1" in results[3]
