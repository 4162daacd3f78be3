# ruff: noqa: E501  (one response a line)
"""The trajectory family in a run: computed with the deterministic results, aggregated, checked at
load, ``$llm`` through the judge (cached by the judge, costed) or an error without one, calls
without recorded arguments, and ragas' flat agent rows."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from openai_stub import StubServer, completion, prompt_text
from qa_eval import compute_aggregates, run_evaluation
from qa_eval.errors import InputError
from qa_eval.io.flat import flat_to_dataset
from qa_eval.run.prepare import prepare_reference

TRAJECTORY = {
    "match": "superset",
    "calls": [
        {"name": "search", "args": {"to": "BGO"}},
        {"name": "book", "args": {"flight": {"$any": True}}},
    ],
}


def dataset(*trajectories: Any) -> list[dict[str, Any]]:
    questions = [
        {"id": f"q{i}", "question_text": "fly", "reference_trajectory": t}
        for i, t in enumerate(trajectories)
    ]
    return [{"template_id": "t", "questions": questions}]


def steps(*calls: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"name": n, "args": a, "status": "success"} for n, a in calls]


def test_a_run_writes_and_aggregates_the_trajectory_keys() -> None:
    reference = dataset(TRAJECTORY, TRAJECTORY)
    responses = [
        {"question_id": "q0", "actual_steps": steps(("search", {"to": "BGO"}), ("book", {"flight": "F1"}))},
        {"question_id": "q1", "actual_steps": steps(("search", {"to": "TRD"}))},
    ]  # fmt: skip
    results = run_evaluation(copy.deepcopy(reference), responses)
    assert [r["trajectory_match"] for r in results] == [1.0, 0.0]
    assert [r["tool_recall"] for r in results] == [1.0, 0.0]
    calls = results[1]["reference_trajectory"]["calls"]
    assert calls[0]["mismatch"] == 'search: args.to: reference "BGO", actual "TRD"'
    assert calls[1]["mismatch"] == "not called"
    assert results[0]["reference_trajectory"]["calls"][1]["matches"] == 1
    assert "matches" not in reference[0]["questions"][0]["reference_trajectory"]["calls"][0]
    micro = compute_aggregates(results)["micro"]
    assert micro["trajectory_match"]["mean"] == 0.5
    assert micro["tool_calls_missing"]["sum"] == 2
    off = run_evaluation(copy.deepcopy(reference), responses, disable=["trajectory"])
    assert "trajectory_match" not in off[0]
    assert "matches" not in off[0]["reference_trajectory"]["calls"][0]


def test_an_error_response_gets_no_trajectory_values() -> None:
    results = run_evaluation(dataset(TRAJECTORY), [{"question_id": "q0", "error": "timeout"}])
    assert "trajectory_match" not in results[0]


def test_llm_comparator_without_a_judge_is_an_error_naming_it() -> None:
    trajectory = [{"name": "search", "args": {"to": {"$llm": "the city of Bergen"}}}]
    results = run_evaluation(dataset(trajectory), [{"question_id": "q0", "actual_steps": steps(("search", {"to": "Bergen, Norway"}))}])  # fmt: skip
    assert results[0]["trajectory_error"] == (
        "$llm comparator at reference_trajectory[0].args.to needs a judge (none configured)"
    )
    assert "trajectory_match" not in results[0]
    assert compute_aggregates(results)["micro"]["trajectory_match"]["failed"] == 1


def test_llm_comparator_asks_the_judge_once_per_value_and_costs_it() -> None:
    trajectory = {
        "match": "unordered",
        "calls": [
            {"name": "search", "args": {"to": {"$llm": "the city of Bergen"}}},
            {"name": "search", "args": {"to": {"$llm": "the city of Bergen"}}},
            {"name": "book"},
        ],
    }

    def script(payload: dict[str, Any], number: int) -> Any:
        same = "Bergen, Norway" in prompt_text(payload)
        return completion(json.dumps({"reason": "r", "same": same}))

    actual = steps(("search", {"to": "Bergen, Norway"}), ("search", {"to": "Oslo"}), ("book", {}))
    responses = [{"question_id": "q0", "actual_steps": actual}]
    config = {"llm": {"generation": {"base_url": "", "api_key": "x", "model": "gpt-4o-mini"}}}
    with StubServer(script) as server:
        config["llm"]["generation"]["base_url"] = server.url
        result = run_evaluation(dataset(trajectory), responses, config=config, cache=False)[0]
        texts = [prompt_text(r) for r in server.requests]
    assert len(texts) == 2  # two distinct values, not four pairs
    assert all("<reference>" in t and "the city of Bergen" in t for t in texts)
    assert result["trajectory_match"] == 0.0
    assert result["tool_recall"] == pytest.approx(2 / 3)
    assert result["trajectory_cost"] > 0
    assert result["llm_cost"] == result["trajectory_cost"]
    texts = [c.get("mismatch") for c in result["reference_trajectory"]["calls"]]
    assert sorted(texts, key=str) == [
        None,
        None,
        'search: args.to: the judge says "Oslo" does not mean "the city of Bergen"',
    ]


def test_calls_without_recorded_arguments_are_not_evaluable() -> None:
    actual = [{"name": "search", "lost": ["args"]}, {"name": "book", "args": {"flight": 1}}]
    results = run_evaluation(dataset(TRAJECTORY), [{"question_id": "q0", "actual_steps": actual}])
    assert results[0]["trajectory_error"] == (
        "not evaluable: 1 of 2 calls have no recorded arguments (content capture off)"
    )
    assert "tool_recall" not in results[0]


def test_responses_accept_the_keys_of_traces() -> None:
    actual = [
        {"name": "search", "args": '{"to": "BGO"}', "id": "c1", "output": "[...]"},
        {"name": "book", "args": "flight F1 please", "status": "error", "error": "bad", "lost": []},
    ]
    response = {"question_id": "q0", "actual_steps": actual, "trial": 1, "step_errors": [], "trace": {"id": "t"}}  # fmt: skip
    result = run_evaluation(dataset(TRAJECTORY), [response])[0]
    assert result["reference_trajectory"]["calls"][0]["matches"] == "c1"
    assert result["tool_calls_failed"] == 1
    assert result["trajectory_calls"][1] == {
        "index": 1, "name": "book", "id": None, "role": "failed", "reference": None, "repeated": False,
    }  # fmt: skip


def test_a_bad_reference_trajectory_is_refused_at_load_naming_question_and_field() -> None:
    bad = dataset({"calls": [{"name": "a"}, {"name": "b"}, {"name": "c", "args": {"date": {"$date": "soon"}}}]})  # fmt: skip
    with pytest.raises(InputError) as caught:
        prepare_reference(bad)
    error = caught.value
    assert error.record == "template 't' question 'q0'"
    assert error.field == "reference_trajectory.calls[2].args.date"
    assert str(error).endswith('$date needs a date, got "soon"')


def test_ragas_flat_rows_give_a_reference_trajectory_and_actual_steps() -> None:
    messages = [
        {"type": "human", "content": "Book me a flight to Bergen"},
        {"type": "ai", "content": "", "tool_calls": [{"name": "search", "args": {"to": "BGO"}}]},
        {"type": "tool", "content": "F1 at 10:00"},
        {"type": "ai", "content": "", "tool_calls": [{"name": "book", "args": {"flight": "F1"}}]},
        {"type": "tool", "content": "booked"},
        {"type": "ai", "content": "Booked F1."},
    ]
    row = {"user_input": messages, "reference_tool_calls": [{"name": "search", "args": {"to": "BGO"}}, {"name": "book", "args": {"flight": "F1"}}]}  # fmt: skip
    reference, responses = flat_to_dataset([(1, row)])
    question = reference[0]["questions"][0]
    assert question["question_text"] == "Book me a flight to Bergen"
    assert question["reference_trajectory"] == row["reference_tool_calls"]
    assert responses[0]["actual_answer"] == "Booked F1."
    assert [(s["name"], s["output"]) for s in responses[0]["actual_steps"]] == [
        ("search", "F1 at 10:00"),
        ("book", "booked"),
    ]
    result = run_evaluation(reference, responses)[0]
    assert result["trajectory_match"] == 1.0
    # a CSV cell holds JSON
    csv_row = {"user_input": json.dumps(messages), "reference_tool_calls": json.dumps(row["reference_tool_calls"])}  # fmt: skip
    assert flat_to_dataset([(1, csv_row)]) == (reference, responses)


def test_the_json_schemas_accept_trajectories_and_trace_steps() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    from qa_eval.schemas import load_schema

    reference = dataset(TRAJECTORY, [{"name": ["a", "b"], "args": '{"x": 1}', "optional": True}])
    jsonschema.validate(reference, load_schema("reference"))
    bad = dataset({"match": "loose", "calls": []})
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, load_schema("reference"))
    actual = [
        {"name": "a", "args": "raw text", "lost": ["output"]},
        {"name": "b", "args": '{"x": 1}'},
    ]
    jsonschema.validate([{"question_id": "q0", "actual_steps": actual}], load_schema("responses"))


def test_the_command_line_scores_trajectories_and_refuses_a_bad_one(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from qa_eval.cli import main

    good = tmp_path / "ref.json"
    good.write_text(json.dumps(dataset(TRAJECTORY)))
    responses = tmp_path / "responses.jsonl"
    actual = steps(("search", {"to": "BGO"}), ("book", {"flight": "F1"}))
    responses.write_text(json.dumps({"question_id": "q0", "actual_steps": actual}) + "\n")
    out = tmp_path / "results.json"
    assert main(["evaluate", str(good), str(responses), "--no-judge", "-q", "-o", str(out)]) == 0
    assert json.loads(out.read_text())[0]["trajectory_match"] == 1.0
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(dataset({"match": "loose", "calls": []})))
    capsys.readouterr()
    assert main(["evaluate", str(bad), str(responses), "--no-judge", "-q"]) == 2
    err = capsys.readouterr().err
    assert "question 'q0': reference_trajectory.match: must be one of strict" in err
    assert "Traceback" not in err
