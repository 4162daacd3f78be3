"""Every kind of bad input gives a located one-line error, or an error for one question only."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from qa_eval import InputError, read_reference, read_responses, run_evaluation
from qa_eval.cli import main

SPARQL_JSON = "application/sparql-results+json"


def sparql_output(rows: list[str]) -> str:
    return json.dumps(
        {
            "head": {"vars": ["x"]},
            "results": {"bindings": [{"x": {"type": "uri", "value": v}} for v in rows]},
        }
    )


def reference(steps: list | None = None, qid: str = "q1") -> list[dict]:
    question = {"id": qid, "question_text": "Which?"}
    if steps is not None:
        question["reference_steps"] = steps
    return [{"template_id": "t1", "questions": [question]}]


SPARQL_STEP = {
    "name": "sparql_query",
    "args": {"query": "SELECT ?x {}"},
    "output": sparql_output(["urn:a"]),
    "output_media_type": SPARQL_JSON,
    "required_columns": ["x"],
}


def good_reference() -> list[dict]:
    ref = reference([[copy.deepcopy(SPARQL_STEP)]], "q1")
    ref[0]["questions"].append(
        {"id": "q2", "question_text": "Other?", "reference_steps": [[copy.deepcopy(SPARQL_STEP)]]}
    )
    return ref


def ok_response(qid: str) -> dict:
    return {
        "question_id": qid,
        "actual_steps": [
            {
                "name": "sparql_query",
                "id": "s1",
                "status": "success",
                "output": sparql_output(["urn:a"]),
            }
        ],
    }


def error_message(ref: object, responses: object = ()) -> str:
    with pytest.raises(InputError) as caught:
        run_evaluation(ref, list(responses))
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_missing_required_columns() -> None:
    step = {k: v for k, v in SPARQL_STEP.items() if k != "required_columns"}
    message = error_message(reference([[step]]))
    assert message.startswith("reference: template 't1' question 'q1': ")
    assert "reference_steps[0][0].required_columns: missing" in message


def test_empty_reference_group() -> None:
    assert "reference_steps[0]: a group must be a non-empty list" in error_message(reference([[]]))


def test_empty_reference_steps() -> None:
    assert "reference_steps: must be a non-empty list" in error_message(reference([]))


def test_duplicate_question_ids() -> None:
    ref = reference()
    ref.append({"template_id": "t2", "questions": [{"id": "q1", "question_text": "Again?"}]})
    message = error_message(ref)
    assert (
        "template 't2' question 'q1': id: duplicate question id (also in template 't1')" in message
    )


def test_response_for_unknown_question() -> None:
    message = error_message(reference(), [{"question_id": "nope"}])
    assert message == (
        "responses: response [0] (question_id 'nope'): question_id: no question "
        "with this id in the reference dataset"
    )


def test_duplicate_response() -> None:
    message = error_message(reference(), [{"question_id": "q1"}, {"question_id": "q1"}])
    assert "duplicate response (also response [0]" in message


@pytest.mark.parametrize("top", [{"template_id": "t"}, "text", 3, None])
def test_reference_top_level_of_the_wrong_type(top: object) -> None:
    assert "the top level must be a list of templates" in error_message(top)


def test_responses_top_level_of_the_wrong_type() -> None:
    with pytest.raises(InputError, match="responses must be a list, a mapping"):
        run_evaluation(reference(), "not responses")


def test_invalid_reference_output_json() -> None:
    step = dict(SPARQL_STEP, output="{not json")
    message = error_message(reference([[step]]))
    assert "reference_steps[0][0].output: not a SPARQL JSON result: not valid JSON" in message


def test_invalid_term_in_a_reference_column_is_found_on_load() -> None:
    # The required columns of a reference result are read when the dataset is loaded, so a
    # bad term is the reference's problem, not a 0 charged to the response's step.
    output = json.dumps(
        {"head": {"vars": ["x"]}, "results": {"bindings": [{"x": {"type": "iri", "value": "a"}}]}}
    )
    message = error_message(reference([[dict(SPARQL_STEP, output=output)]]))
    assert "reference_steps[0][0].output: unknown term type 'iri'" in message


def test_all_problems_are_counted_in_one_line() -> None:
    ref = reference([[]])
    ref[0]["questions"].append({"id": "q2"})
    message = error_message(ref)
    assert message.endswith("(and 1 more problem)")


# Problems in one response: that question records them, the others are evaluated normally.
def _evaluate_with(bad_step: dict, extra: dict | None = None) -> list[dict]:
    bad = {"question_id": "q1", "actual_steps": [bad_step], **(extra or {})}
    return run_evaluation(good_reference(), [bad, ok_response("q2")])


def test_successful_step_without_output() -> None:
    results = _evaluate_with({"name": "sparql_query", "id": "s9", "status": "success"})
    assert results[0]["steps_score"] == 0.0
    assert results[0]["step_errors"] == [
        "actual_steps[0] (id s9): output: missing in a successful step"
    ]
    assert results[1]["steps_score"] == 1.0 and "step_errors" not in results[1]


def test_invalid_json_in_a_step_output() -> None:
    results = _evaluate_with(
        {"name": "sparql_query", "id": "s9", "status": "success", "output": '{"head": '}
    )
    assert results[0]["steps_score"] == 0.0
    assert results[0]["step_errors"][0].startswith(
        "actual_steps[0] (id s9): output: not valid JSON"
    )
    assert results[1]["steps_score"] == 1.0


def test_inf_and_nan_literals() -> None:
    def output(value: str) -> str:
        return json.dumps(
            {
                "head": {"vars": ["v"]},
                "results": {
                    "bindings": [
                        {
                            "v": {
                                "type": "literal",
                                "datatype": "http://www.w3.org/2001/XMLSchema#double",
                                "value": value,
                            }
                        }
                    ]
                },
            }
        )

    ref = reference([[dict(SPARQL_STEP, output=output("INF"), required_columns=["v"])]])
    ref[0]["questions"].append(
        {
            "id": "q2",
            "question_text": "?",
            "reference_steps": [[dict(SPARQL_STEP, output=output("NaN"), required_columns=["v"])]],
        }
    )
    responses = [
        {
            "question_id": "q1",
            "actual_steps": [
                {"name": "sparql_query", "id": "a", "status": "success", "output": output("INF")}
            ],
        },
        {
            "question_id": "q2",
            "actual_steps": [
                {"name": "sparql_query", "id": "b", "status": "success", "output": output("NaN")}
            ],
        },
    ]
    results = run_evaluation(ref, responses)
    assert [r["steps_score"] for r in results] == [1.0, 1.0]


RETRIEVAL_OUTPUT = json.dumps([{"id": "d1", "text": "a"}, {"id": "d2", "text": "b"}])


def test_missing_args_k() -> None:
    ref = reference(
        [[{"name": "retrieval", "args": {"query": "x", "k": 2}, "output": RETRIEVAL_OUTPUT}]]
    )
    ref[0]["questions"].append(
        {
            "id": "q2",
            "question_text": "?",
            "reference_steps": [
                [{"name": "retrieval", "args": {"query": "x", "k": 2}, "output": RETRIEVAL_OUTPUT}]
            ],
        }
    )
    responses = [
        {
            "question_id": "q1",
            "actual_steps": [
                {
                    "name": "retrieval",
                    "id": "r",
                    "args": {},
                    "status": "success",
                    "output": RETRIEVAL_OUTPUT,
                }
            ],
        },
        {
            "question_id": "q2",
            "actual_steps": [
                {
                    "name": "retrieval",
                    "id": "r",
                    "args": {"k": 2},
                    "status": "success",
                    "output": RETRIEVAL_OUTPUT,
                }
            ],
        },
    ]
    results = run_evaluation(ref, responses)
    assert results[0]["step_errors"] == [
        "actual_steps[0] (id r): args.k: must be a positive integer, got None"
    ]
    assert results[0]["steps_score"] == 0.0
    assert results[1]["steps_score"] == 1.0


def _data_points(start: str, timestamp: object) -> tuple[list, list]:
    ref = reference(
        [
            [
                {
                    "name": "retrieve_data_points",
                    "args": {"external_id": "m1", "start": "2d-ago", "end": "now"},
                }
            ]
        ]
    )
    step = {
        "name": "retrieve_data_points",
        "id": "d",
        "status": "success",
        "args": {"external_id": "m1", "start": start, "end": "2025-01-03T00:00:00Z"},
    }
    if timestamp is not None:
        step["execution_timestamp"] = timestamp
    return ref, [{"question_id": "q1", "actual_steps": [step]}]


def test_relative_time_with_string_execution_timestamp() -> None:
    # The original crashes on a string timestamp; it is ISO 8601 text, so it is parsed.
    ref, responses = _data_points("2025-01-01T00:00:30Z", "2025-01-03T00:00:00Z")
    assert run_evaluation(ref, responses)[0]["steps_score"] == 1.0


def test_relative_time_without_a_usable_timestamp() -> None:
    ref, responses = _data_points("2025-01-01T00:00:30Z", "yesterday")
    result = run_evaluation(ref, responses)[0]
    assert result["steps_score"] == 0.0
    assert "execution_timestamp" in result["step_errors"][0]


# File-level problems.
def test_file_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "ref.yaml"
    path.write_bytes(b"- template_id: t\n  questions: []\n# caf\xe9\n")
    with pytest.raises(InputError) as caught:
        read_reference(path)
    assert str(caught.value) == f"{path}: line 3: not UTF-8 text (byte 0xe9 at offset 38)"


def test_yaml_that_does_not_parse(tmp_path: Path) -> None:
    path = tmp_path / "ref.yaml"
    path.write_text("- template_id: t\n  questions: [\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"ref\.yaml: line 3, column 1: YAML does not parse"):
        read_reference(path)


def test_jsonl_line_that_does_not_parse(tmp_path: Path) -> None:
    path = tmp_path / "responses.jsonl"
    path.write_text('{"question_id": "q1"}\n\n{"question_id": \n', encoding="utf-8")
    with pytest.raises(InputError, match=r"responses\.jsonl: line 3: JSON does not parse"):
        read_responses(path)


def test_jsonl_records_are_named_by_line(tmp_path: Path) -> None:
    path = tmp_path / "responses.jsonl"
    path.write_text('{"question_id": "q1"}\n\n{"question_id": "zz"}\n', encoding="utf-8")
    with pytest.raises(InputError) as caught:
        run_evaluation(reference(), read_responses(path), responses_source=str(path))
    assert str(caught.value).startswith(f"{path}: line 3 (question_id 'zz'): question_id:")


def test_cli_reports_bad_input_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    ref = tmp_path / "ref.yaml"
    ref.write_text("template_id: t\n", encoding="utf-8")
    responses = tmp_path / "r.jsonl"
    responses.write_text("", encoding="utf-8")
    assert main(["evaluate", str(ref), str(responses)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"qa-eval: error: {ref}: the top level must be a list of templates")


def test_cli_usage_error_is_one_line(capsys: pytest.CaptureFixture) -> None:
    assert main(["evaluate"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "required" in err


def test_cli_missing_file(capsys: pytest.CaptureFixture, tmp_path: Path) -> None:
    assert main(["aggregate", str(tmp_path / "none.yaml")]) == 2
    assert "none.yaml: no such file" in capsys.readouterr().err
