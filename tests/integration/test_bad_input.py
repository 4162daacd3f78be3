"""Every kind of bad input gives a located one-line error, or an error for one question only."""

from __future__ import annotations

import copy
import json
import math
import re
from pathlib import Path

import pytest

from qa_eval import InputError, read_reference, read_responses, run_evaluation
from qa_eval.cli import main
from qa_eval.run.prepare import prepare_reference, prepare_responses

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


def test_response_for_unknown_question_without_a_counter_is_named() -> None:
    # A run leaves such responses out with a warning (tests/integration/test_dropin_calls.py);
    # the checker without a counter for them still names the record.
    with pytest.raises(InputError) as caught:
        prepare_responses([{"question_id": "nope"}], prepare_reference(reference()))
    assert str(caught.value) == (
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
    assert "reference_steps[0][0].output: results.bindings[0].x: unknown term type 'iri'" in message


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
    path.write_text('{"question_id": "q1"}\n\n{"question_id": "q1"}\n', encoding="utf-8")
    with pytest.raises(InputError) as caught:
        run_evaluation(reference(), read_responses(path), responses_source=str(path))
    assert str(caught.value).startswith(
        f"{path}: line 3 (question_id 'q1'): question_id: duplicate response (also line 1"
    )


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


# Files that load but could not be written, hostile YAML, odd JSON (issue 14) ---------------
def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(argv)
    err = capsys.readouterr().err
    if code == 2:
        assert err.count("\n") == 1, err
    return code, err


def _write_reference(tmp_path: Path) -> Path:
    path = tmp_path / "ref.json"
    path.write_text(json.dumps(good_reference()), encoding="utf-8")
    return path


def _evaluate_responses(
    tmp_path: Path, name: str, text: str, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, str]:
    responses = tmp_path / name
    responses.write_text(text, encoding="utf-8")
    out = tmp_path / "results.jsonl"
    argv = ["evaluate", str(_write_reference(tmp_path)), str(responses), "-q", "-o", str(out)]
    return _cli([*argv, *extra], capsys)


def _yaml_responses(extra: str) -> str:
    return f"- question_id: q1\n  actual_steps: []\n{extra}- question_id: q2\n"


def test_yaml_integer_beyond_64_bits_is_refused_at_load(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = _yaml_responses("  input_tokens: 123456789012345678901234567890\n")
    code, err = _evaluate_responses(tmp_path, "r.yaml", text, capsys)
    assert code == 2
    assert "r.yaml: line 3, column 17: integer beyond 64 bits" in err
    assert not (tmp_path / "results.jsonl").exists()
    assert not (tmp_path / "results.jsonl.partial.jsonl").exists()


def test_yaml_integer_of_many_digits_is_refused_without_converting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 20,000 digits: int() refuses more than 4,300; sexagesimal text converts slowly.
    for value, problem in (
        ("1" + "0" * 20_000, "integer beyond 64 bits (of 20,001 digits)"),
        (":".join(["59"] * 50_000), "not a 64-bit integer (149,999 characters)"),
    ):
        code, err = _evaluate_responses(
            tmp_path, "r.yaml", _yaml_responses(f"  custom: {{id: {value}}}\n"), capsys
        )
        assert code == 2 and problem in err and len(err) < 300


def test_64_bit_integers_are_kept(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = _yaml_responses(f"  custom: [{2**64 - 1}, {-(2**63)}]\n")
    assert _evaluate_responses(tmp_path, "r.yaml", text, capsys)[0] == 0
    results = read_responses(tmp_path / "results.jsonl")
    assert results[0]["question_id"] == "q1" and results[0].get("actual_steps") == []


def test_json_integers_beyond_64_bits_read_as_orjson_reads_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # NaN makes orjson give up, the standard library reads the line: both give a float.
    for line in (
        '{"question_id": "q1", "x": 123456789012345678901234567890}',
        '{"question_id": "q1", "x": 123456789012345678901234567890, "y": NaN}',
    ):
        code, _ = _evaluate_responses(tmp_path, "r.jsonl", line + "\n", capsys)
        assert code == 0
        (tmp_path / "results.jsonl").unlink()


@pytest.mark.parametrize("digits", [400, 4400, 50_000])
def test_json_integer_beyond_the_float_range(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], digits: int
) -> None:
    line = '{"question_id": "q1", "x": 1' + "0" * digits + ', "y": NaN}\n'
    code, err = _evaluate_responses(tmp_path, "r.jsonl", line, capsys)
    assert code == 2
    assert "r.jsonl: line 1: JSON does not parse: number is infinity" in err


@pytest.mark.parametrize(
    ("levels", "nan"),
    [(201, False), (300, False), (1024, False), (1100, False), (300, True), (5000, True)],
)
def test_deep_json_is_refused_at_load(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], levels: int, nan: bool
) -> None:
    deep = "[" * levels + "]" * levels
    line = '{"question_id": "q1", "x": ' + deep + (', "y": NaN' if nan else "") + "}\n"
    code, err = _evaluate_responses(tmp_path, "r.jsonl", line, capsys)
    assert code == 2
    assert "r.jsonl: line 1: " in err
    assert "nested more than 200 levels deep" in err or "nested too deeply" in err


def test_nesting_up_to_the_limit_is_written_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deep = "[" * 198 + "]" * 198  # the line is an object, x a list of lists: 199 levels
    line = '{"question_id": "q1", "x": ' + deep + "}\n"
    for suffix in (".jsonl", ".json", ".yaml"):
        out = tmp_path / f"results{suffix}"
        argv = ["evaluate", str(_write_reference(tmp_path)), str(tmp_path / "r.jsonl")]
        (tmp_path / "r.jsonl").write_text(line, encoding="utf-8")
        assert _cli([*argv, "-q", "-o", str(out)], capsys)[0] == 0
        assert _cli(["aggregate", str(out)], capsys)[0] == 0


def test_deep_yaml_is_refused_before_it_is_built(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # qa-eval counts the depth on the parser's events, in its own words: block style, flow style
    # and depth reached through an alias. All three stay below the 1,000 levels at which the
    # libyaml inside PyYAML's wheels (6.0.4 on) stops on its own, so the refusal is qa-eval's.
    for text in (
        "- question_id: q1\n  x: " + "[" * 300 + "]" * 300 + "\n",
        "- question_id: q1\n  x:\n  " + "- " * 250 + "y\n",
        "- a: &d " + "[" * 150 + "]" * 150 + "\n  b: " + "[" * 100 + "*d" + "]" * 100 + "\n",
    ):
        code, err = _evaluate_responses(tmp_path, "r.yaml", text, capsys)
        assert code == 2 and "nested more than 200 levels deep" in err, err
        assert "r.yaml: line " in err


def test_yaml_deeper_than_the_yaml_library_allows_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # ~50,000 levels crashed the interpreter in libyaml's composer. Which check refuses them
    # depends on the PyYAML installed: libyaml's scanner reads ahead of the events, and from
    # PyYAML 6.0.4 on it has a nesting limit of its own. Either way: exit 2, one line (_cli checks
    # that), the file and the place named; the wording is the library's or qa-eval's.
    text = "- question_id: q1\n  x: " + "[" * 50_000 + "]" * 50_000 + "\n"
    code, err = _evaluate_responses(tmp_path, "r.yaml", text, capsys)
    assert code == 2
    assert re.search(r"r\.yaml: line 2, column \d+: \S", err), err
    assert len(err) < 400


def test_deep_yaml_is_refused_by_qa_eval_where_the_yaml_library_sets_no_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # PyYAML's pure-Python parser (used where PyYAML was built without libyaml) and the libyaml
    # of older wheels have no nesting limit: qa-eval's own check is what refuses the text.
    import yaml

    import qa_eval.io.files

    monkeypatch.setattr(qa_eval.io.files, "_Loader", yaml.SafeLoader)
    path = tmp_path / "r.yaml"
    path.write_text("- question_id: q1\n  x: " + "[" * 50_000 + "]" * 50_000 + "\n", "utf-8")
    with pytest.raises(InputError, match=r"r\.yaml: line 2, column \d+: nested more than 200"):
        read_responses(path)


def test_recursive_yaml_alias_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = "- question_id: q1\n  actual_steps: &s [{name: x, output: *s}]\n"
    code, err = _evaluate_responses(tmp_path, "r.yaml", text, capsys)
    assert code == 2
    assert "r.yaml: line 2, column 39: recursive alias *s" in err


def _alias_bomb(levels: int = 9) -> str:
    lines = ["- question_id: q1", "  x: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, levels):
        lines.append(f"  x{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]")
    lines.append(f"  actual_steps: [{{name: s, output: *a{levels - 1}}}]")
    return "\n".join(lines) + "\n"


def test_yaml_alias_bomb_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = _alias_bomb()
    assert len(text) < 600  # 9^9 copies of "lol" once expanded
    code, err = _evaluate_responses(tmp_path, "r.yaml", text, capsys)
    assert code == 2
    assert "r.yaml: line 7, column 22: " in err and "aliases repeat more than" in err


def test_yaml_aliases_within_the_budget_and_merge_keys_are_read(tmp_path: Path) -> None:
    path = tmp_path / "ref.yaml"
    path.write_text(
        "- template_id: t1\n"
        "  questions:\n"
        "  - &q {id: q1, question_text: 'Which?', reference_steps: [[&step {name: a, args: {}}]]}\n"
        "  - {<<: *q, id: q2}\n"
        "  - {id: q3, question_text: *q, reference_steps: [[*step, *step]]}\n",
        encoding="utf-8",
    )
    data = read_reference(path)
    assert [q["id"] for q in data[0]["questions"]] == ["q1", "q2", "q3"]
    assert data[0]["questions"][1]["question_text"] == "Which?"


def test_alias_bomb_in_a_signature_fails_report_fast(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "run.jsonl"
    results.write_text('{"question_id": "q1", "steps_score": 1.0}\n', encoding="utf-8")
    (tmp_path / "run.signature.yaml").write_text(_alias_bomb(12), encoding="utf-8")
    code, err = _cli(["report", str(results), "-o", str(tmp_path / "r.html")], capsys)
    assert code == 2 and "run.signature.yaml: line " in err and "aliases repeat" in err


def test_messages_cut_long_values(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A value repeated by aliases within the budget is still large: it is shown cut short.
    text = "- question_id: q1\n  status: &v " + "x" * 100_000 + "\n  other: *v\n"
    code, err = _evaluate_responses(tmp_path, "r.yaml", text, capsys)
    assert code == 2 and "status: must be 'success' or 'error', got 'xxx" in err
    assert len(err) < 300


@pytest.mark.parametrize(
    ("name", "text", "where"),
    [
        ("r.yaml", "- question_id: q1\n  question_id: q2\n", "r.yaml: line 2, column 3"),
        ("r.yaml", "- {question_id: q1, x: {a: 1, a: 2}}\n", "r.yaml: line 1, column 31"),
        ("r.json", '[{"question_id": "q1", "question_id": "q2"}]', "r.json"),
        (
            "r.jsonl",
            '{"question_id": "q1"}\n{"question_id": "q2", "x": {"a": 1, "a": 1}}\n',
            "r.jsonl: line 2",
        ),
        ("r.jsonl", '{"question_id": "q1", "x": "a:b", "x": "c"}\n', "r.jsonl: line 1"),
        ("r.jsonl", '{"question_id": "q1", "x\\u003a": 1, "x:": 2}\n', "r.jsonl: line 1"),
        ("r.jsonl", '{"question_id": "q1", "x" : 1, "x" : NaN}\n', "r.jsonl: line 1"),
    ],
)
def test_duplicate_keys_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, where: str
) -> None:
    code, err = _evaluate_responses(tmp_path, name, text, capsys)
    assert code == 2
    assert err.startswith(f"qa-eval: error: {tmp_path / where}")
    assert "duplicate key" in err


def test_colons_and_escapes_without_duplicates_are_read(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(
        '{"question_id": "q1", "x:y": "a:b", "z" : "\\u003a", "w\\u003a": {"w:": 1}}\n',
        encoding="utf-8",
    )
    (record,) = read_responses(path)
    assert record == {"question_id": "q1", "x:y": "a:b", "z": ":", "w:": {"w:": 1}}


def test_yaml_control_character_error_is_one_line_with_line_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = _evaluate_responses(tmp_path, "r.yaml", "- question_id: q1\n  x: \x07\n", capsys)
    assert code == 2
    # The reason's words are PyYAML's; the place and the character's code are qa-eval's.
    assert "r.yaml: line 2, column 6: YAML does not parse: " in err
    assert err.rstrip().endswith("(#x0007)"), err


def test_unicode_line_separators_inside_json_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    answer = "one\u2028two\u2029three\u0085four\rfive"
    line = json.dumps({"question_id": "q1", "actual_answer": answer}, ensure_ascii=False)
    assert "\u2028" in line
    code, _ = _evaluate_responses(tmp_path, "r.jsonl", line + "\r\n", capsys)
    assert code == 0
    written = (tmp_path / "results.jsonl").read_text(encoding="utf-8")
    assert "\u2028" in written  # written raw, and read back by every command
    results = read_responses(tmp_path / "results.jsonl")
    assert results[0]["actual_answer"] == answer
    other = tmp_path / "other.jsonl"
    other.write_text(written, encoding="utf-8")
    assert _cli(["aggregate", str(tmp_path / "results.jsonl")], capsys)[0] == 0
    assert _cli(["compare", str(tmp_path / "results.jsonl"), str(other)], capsys)[0] == 0
    html = tmp_path / "report.html"
    assert _cli(["report", str(tmp_path / "results.jsonl"), "-o", str(html)], capsys)[0] == 0


def test_flat_csv_cell_longer_than_the_csv_default_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import csv

    path = tmp_path / "rows.csv"
    context = "c" * 200_000
    path.write_text(f'question,answer,contexts\nWhich?,A,"{context}"\n', encoding="utf-8")
    limit = csv.field_size_limit()
    out = tmp_path / "results.json"
    assert _cli(["evaluate-flat", str(path), "-q", "-o", str(out)], capsys)[0] == 0
    assert csv.field_size_limit() == limit  # the process-wide limit is given back
    (result,) = json.loads(out.read_text(encoding="utf-8"))
    assert context in result["actual_steps"][0]["output"]


def test_flat_csv_with_a_column_twice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "rows.csv"
    path.write_text("question,answer,answer\nWhich?,A,B\n", encoding="utf-8")
    code, err = _cli(["evaluate-flat", str(path), "-q"], capsys)
    assert code == 2 and "rows.csv: line 1: the column 'answer' appears twice" in err


@pytest.mark.parametrize(
    ("record", "field"),
    [
        ('{"question_id": {"a": 1}, "steps_score": 1}', "question_id"),
        ('{"question_id": ["q"], "steps_score": 1}', "question_id"),
        ('{"steps_score": 1}', "question_id"),
        ('{"question_id": "q", "template_id": [1]}', "template_id"),
        ("[1, 2]", None),
    ],
)
def test_bad_results_are_exit_2_in_every_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], record: str, field: str | None
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question_id": "q0", "steps_score": 0.5}\n' + record + "\n", encoding="utf-8")
    good = tmp_path / "good.jsonl"
    good.write_text('{"question_id": "q0", "steps_score": 1.0}\n', encoding="utf-8")
    for argv in (
        ["aggregate", str(bad)],
        ["compare", str(good), str(bad)],
        ["compare", str(bad), str(good)],
        ["report", str(bad), "-o", str(tmp_path / "r.html")],
    ):
        code, err = _cli(argv, capsys)
        assert code == 2, (argv, err)
        assert f"{bad}: line 2: " in err
        if field:
            assert f"line 2: {field}: " in err


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1", "0"])
def test_max_cost_must_be_positive_and_finite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    code, err = _evaluate_responses(
        tmp_path, "r.jsonl", '{"question_id": "q1"}\n', capsys, f"--max-cost={value}"
    )
    assert code == 2 and "--max-cost must be a positive, finite number" in err


def test_unwritable_values_are_refused_before_any_judge_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from openai_stub import StubServer, oracle

    config = tmp_path / "judge.yaml"
    deep = "[" * 300 + "]" * 300
    with StubServer(oracle()) as server:
        config.write_text(
            f"llm:\n  generation:\n    provider: openai\n    base_url: {server.url}\n"
            "    api_key: x\n",
            encoding="utf-8",
        )
        line = '{"question_id": "q1", "actual_answer": "A", "x": ' + deep + "}\n"
        code, err = _evaluate_responses(
            tmp_path, "r.jsonl", line, capsys, "--config", str(config), "--no-cache"
        )
        assert code == 2 and "nested more than 200 levels deep" in err
        assert server.requests == []


def test_one_writer_writes_what_orjson_cannot(tmp_path: Path) -> None:
    from qa_eval.io.files import write_data
    from qa_eval.io.limits import dump_json

    # Values a caller of the API can hand over: integers beyond 64 bits, deep nesting, keys of
    # other types. orjson refuses them; the writer falls back to the standard library.
    deep: object = "x"
    for _ in range(300):
        deep = [deep]
    record = {"question_id": "q1", "big": 2**70, "deep": deep, (1, 2): "tuple key"}
    line = dump_json(record)
    assert b'"big": 1180591620717411303424' in line and b'"(1, 2)": "tuple key"' in line
    assert json.loads(line)["deep"] == deep
    for suffix in (".json", ".jsonl"):
        write_data(tmp_path / f"out{suffix}", [record])
        text = (tmp_path / f"out{suffix}").read_text(encoding="utf-8")
        assert "1180591620717411303424" in text
    assert dump_json({"a": 1}) == b'{"a":1}'  # the usual case: orjson, compact


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("!!int abc", "cannot read 'abc' as int"),
        ("!!float x", "cannot read 'x' as float"),
        ("!!bool maybe", "cannot read 'maybe' as bool"),
        ("!!timestamp nope", "cannot read 'nope' as timestamp"),
        ("2024-02-30", "cannot read '2024-02-30' as timestamp (day is out of range for month)"),
        ("!!int " + "z" * 10_000, "not a 64-bit integer (10,000 characters)"),
    ],
    ids=["int", "float", "bool", "timestamp", "date", "long"],
)
def test_yaml_scalars_that_do_not_read_as_their_type(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str, problem: str
) -> None:
    text = f"- question_id: q1\n  x: {value}\n"
    code, err = _evaluate_responses(tmp_path, "r.yaml", text, capsys)
    assert code == 2 and f"r.yaml: line 2, column 6: {problem}" in err and len(err) < 400


@pytest.mark.parametrize(
    ("start", "timestamp", "problem"),
    [
        ("99999999999d-ago", "2025-01-03T00:00:00Z", "'99999999999d-ago' from the actual step"),
        ("9" * 5000 + "d-ago", "2025-01-03T00:00:00Z", "is out of range"),
        ("99999d-ahead", "9999-12-31T00:00:00Z", "'99999d-ahead' from the actual step"),
        ("1d-ago", "0001-01-01T00:00:00+05:00", "'execution_timestamp' as an ISO 8601 time"),
    ],
    ids=["far past", "5000 digits", "beyond 9999", "anchor before year 1 in UTC"],
)
def test_times_out_of_range_are_that_steps_error(start: str, timestamp: str, problem: str) -> None:
    ref, responses = _data_points("2025-01-01T00:00:30Z", timestamp)
    responses[0]["actual_steps"][0]["args"]["start"] = start
    result = run_evaluation(ref, responses)[0]
    assert result["steps_score"] == 0.0
    (error,) = result["step_errors"]
    assert problem in error and len(error) < 300


def test_absolute_times_out_of_range_in_utc_compare_as_text() -> None:
    # Year 1 at +05:00 is before year 1 in UTC: such a time is compared as text, as any
    # text that is not a time is.
    far = "0001-01-01T00:00:00+05:00"
    ref, responses = _data_points(far, "2025-01-03T00:00:00Z")
    ref[0]["questions"][0]["reference_steps"][0][0]["args"]["start"] = far
    assert run_evaluation(ref, responses)[0]["steps_score"] == 1.0
    responses[0]["actual_steps"][0]["args"]["start"] = "0001-01-01T00:00:00+06:00"
    result = run_evaluation(ref, responses)[0]
    assert result["steps_score"] == 0.0 and "step_errors" not in result


@pytest.mark.parametrize("bad_id", [["d1"], {"a": 1}, None])
def test_retrieval_context_ids_must_be_strings_or_numbers(bad_id: object) -> None:
    step = {"name": "retrieval", "args": {"k": 2}, "output": [{"id": "d1"}, {"id": "d2"}]}
    actual = dict(step, id="r", status="success", output=[{"id": bad_id}, {"id": "d2"}])
    results = run_evaluation(reference([[step]]), [{"question_id": "q1", "actual_steps": [actual]}])
    assert results[0]["steps_score"] == 0.0
    assert "'id' (a string or a number)" in results[0]["step_errors"][0]
    message = error_message(reference([[dict(step, output=[{"id": bad_id}])]]))
    assert "reference_steps[0][0].output: retrieval output item [0]: 'id' must be" in message


# Fields of the wrong type, found when the files are loaded (issue [1/6]) -------------------
def _question(**fields: object) -> list[dict]:
    ref = reference([[copy.deepcopy(SPARQL_STEP)]])
    ref[0]["questions"][0].update(fields)
    return ref


@pytest.mark.parametrize(
    ("questions", "found"),
    [
        (5, "int 5"),
        (2.5, "float 2.5"),
        (True, "bool True"),
        (None, "null"),
        ("q1", "str 'q1'"),
        ({"id": "q1"}, "dict"),
    ],
)
def test_questions_that_are_not_a_list(
    questions: object, found: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The fuzzer's two crashes (an int and a float): the command line read the questions
    # (for --by) before the loader checked them.
    data = [{"template_id": "t1", "questions": questions}]
    line = f"template 't1': questions: must be a list, got {found}"
    assert error_message(data) == f"reference: {line}"
    path = tmp_path / "ref.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    responses = tmp_path / "resp.jsonl"
    responses.write_text('{"question_id": "q1"}\n', encoding="utf-8")
    for extra in ([], ["--by", "question_type"]):
        code, err = _cli(["evaluate", str(path), str(responses), "-q", *extra], capsys)
        assert code == 2
        assert err.startswith(f"qa-eval: error: {path}: ")
    assert _cli(["evaluate", str(path), str(responses), "-q"], capsys)[1].endswith(f"{line}\n")


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ([{"questions": []}], "template [0]: template_id: missing"),
        (
            [{"template_id": 1.5, "questions": []}],
            "template [0]: template_id: must be a string or an integer, got float 1.5",
        ),
        (
            [{"template_id": "t1", "questions": [{"id": ["q1"], "question_text": "?"}]}],
            "template 't1' question [0]: id: must be a string or an integer, got list",
        ),
        (
            [{"template_id": "t1", "questions": [{"id": True, "question_text": "?"}]}],
            "template 't1' question [0]: id: must be a string or an integer, got bool True",
        ),
        (_question(question_text=7), "question_text: must be a string, got int 7"),
        (_question(reference_answer=["A"]), "reference_answer: must be a string, got list"),
        (
            _question(question_type=["list"]),
            "question_type: must be a string, a number, true or false, got list",
        ),
        (
            reference([[{"name": "tool", "required_columns": "x"}]]),
            "reference_steps[0][0].required_columns: must be a list of column names, got str 'x'",
        ),
        (
            reference([[dict(SPARQL_STEP, required_columns=["x", 1])]]),
            "reference_steps[0][0].required_columns[1]: must be a column name (a string), got "
            "int 1",
        ),
        (
            reference([[{"name": "tool", "args": ["q"]}]]),
            "reference_steps[0][0].args: must be a mapping, got list",
        ),
        (
            reference([[{"name": 3}]]),
            "reference_steps[0][0].name: must be a step name, got int 3",
        ),
        (reference("steps"), "reference_steps: must be a non-empty list of step groups"),
    ],
)
def test_reference_fields_of_the_wrong_type(data: list, expected: str) -> None:
    assert expected in error_message(data)


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ({"question_id": 1.5}, "response [0]: question_id: must be a string or an integer, got "),
        ({"actual_answer": "A"}, "response [0]: question_id: missing"),
        ({"question_id": "q1", "actual_answer": ["A"]}, "actual_answer: must be a string, got"),
        ({"question_id": "q1", "error": {"code": 500}}, "error: must be a string, got dict"),
        ({"question_id": "q1", "input_tokens": "5"}, "input_tokens: must be a number, got str '5'"),
        ({"question_id": "q1", "elapsed_sec": math.nan}, "at least 0, got float nan"),
        ({"question_id": "q1", "total_tokens": math.inf}, "at least 0, got float inf"),
        ({"question_id": "q1", "output_tokens": -1}, "at least 0, got int -1"),
        ({"question_id": "q1", "actual_steps": "sparql_query"}, "actual_steps: must be a list"),
        (
            {"question_id": "q1", "actual_steps": [{"name": "x", "id": 1.0}]},
            "actual_steps[0].id: must be a string or an integer, got float 1.0",
        ),
        (
            {"question_id": "q1", "actual_steps": [{"name": "x", "id": ["s"]}]},
            "actual_steps[0].id: must be a string or an integer, got list",
        ),
        (
            {"question_id": "q1", "actual_steps": [{"name": "x", "error": 404}]},
            "actual_steps[0].error: must be a string, got int 404",
        ),
        (
            {"question_id": "q1", "actual_steps": [{"name": "x", "args": ["q"]}]},
            "actual_steps[0].args: must be a mapping or a string, got list",
        ),
        (
            {"question_id": "q1", "actual_steps": [{"name": "x", "lost": "args"}]},
            "actual_steps[0].lost: must be a list of strings, got str 'args'",
        ),
        ({"question_id": "q1", "actual_steps": [{"id": "s1"}]}, "actual_steps[0].name: missing"),
    ],
)
def test_response_fields_of_the_wrong_type(response: dict, expected: str) -> None:
    message = error_message(reference(), [response])
    assert message.startswith("responses: response [0]")
    assert expected in message


def test_response_field_of_the_wrong_type_on_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = json.dumps({"question_id": "q1", "elapsed_sec": "1.5"})
    code, err = _evaluate_responses(tmp_path, "r.jsonl", line + "\n", capsys)
    assert code == 2
    assert err == (
        f"qa-eval: error: {tmp_path / 'r.jsonl'}: line 1 (question_id 'q1'): elapsed_sec: must "
        "be a number, got str '1.5'\n"
    )


def test_integers_beyond_64_bits_given_to_the_library_are_evaluated() -> None:
    # Files refuse them (YAML) or read them as floats (JSON); Python objects keep them, and
    # the reference's fingerprint is computed all the same.
    ref = reference([[{"name": "tool", "args": {"k": 2**70}}]])
    ref[0]["template_id"] = 2**65
    actual = {"name": "tool", "status": "success", "args": {"k": 2**70}}
    results = run_evaluation(ref, [{"question_id": "q1", "actual_steps": [actual]}])
    assert results[0]["steps_score"] == 1.0
    assert results.signature["reference"]["fingerprint"].startswith("sha256:")
    other = reference([[{"name": "tool", "args": {"k": 2**70 + 1}}]])
    other[0]["template_id"] = 2**65
    assert run_evaluation(other, []).signature != results.signature


def test_a_sparql_output_whose_results_are_not_a_mapping_is_no_match() -> None:
    iri_step = {"name": "iri_discovery", "args": {"q": "x"}, "output": "urn:a"}
    broken = {"head": {"vars": ["x"]}, "results": 7}
    actual = {"name": "iri_discovery", "id": "s", "status": "success", "output": broken}
    results = run_evaluation(
        reference([[iri_step]]), [{"question_id": "q1", "actual_steps": [actual]}]
    )
    assert results[0]["steps_score"] == 0.0


def test_a_reference_without_questions_writes_an_empty_stream(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = tmp_path / "ref.json"
    ref.write_text("[]", encoding="utf-8")
    responses = tmp_path / "r.jsonl"
    responses.write_text('{"question_id": "q1"}\n', encoding="utf-8")
    out = tmp_path / "results.jsonl"
    Path(f"{out}.partial.jsonl").write_text('{"question_id": "stale"}\n', encoding="utf-8")
    code, err = _cli(["evaluate", str(ref), str(responses), "-q", "-o", str(out)], capsys)
    assert code == 0, err
    assert out.read_text(encoding="utf-8") == ""
    assert _cli(["aggregate", str(out)], capsys)[0] == 0
