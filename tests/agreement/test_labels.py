"""Labels files: CSV, JSON Lines and YAML rows read with their kinds; a bad row is one error
naming the file, the row and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from qa_eval.agreement.labels import labels_from_records, read_labels
from qa_eval.errors import InputError


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_csv_rows_are_parsed_by_cell_text(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "labels.csv",
        "question_id,metric,label,annotator\n"
        "q1,faithfulness,true,ann\n"
        "q1,faithfulness,No,bob\n"
        "q2,answer_f1,0.5,ann\n"
        "q2,answer_class,correct,\n"
        "\n"
        "7,answer_f1,1,ann\n"
        'q3,answer_class,"two\nlines",ann\n'
        "q4,answer_class,wrong,ann\n",
    )
    labels = read_labels(path)
    assert [(r.question_id, r.value, r.annotator, r.row) for r in labels.rows] == [
        ("q1", True, "ann", "row 2"),
        ("q1", False, "bob", "row 3"),
        ("q2", 0.5, "ann", "row 4"),
        ("q2", "correct", "", "row 5"),
        ("7", 1.0, "ann", "row 7"),
        ("q3", "two\nlines", "ann", "row 9"),
        ("q4", "wrong", "ann", "row 10"),
    ]
    assert labels.kinds == {
        "faithfulness": "binary",
        "answer_f1": "continuous",
        "answer_class": "class",
    }
    assert labels.annotators == ["ann", "bob", ""]
    assert list(labels.items("faithfulness")) == [(None, "q1")]


def test_jsonl_and_yaml_keep_the_values_types(tmp_path: Path) -> None:
    jsonl = write(
        tmp_path,
        "labels.jsonl",
        '{"question_id": 1, "metric": "m", "label": "1"}\n'
        '{"question_id": 2, "metric": "m", "label": "0", "template_id": "t"}\n',
    )
    labels = read_labels(jsonl)
    assert labels.kinds == {"m": "class"} and labels.rows[1].key == ("t", "2")
    yaml = write(
        tmp_path,
        "labels.yaml",
        "- {question_id: q, metric: m, label: 0}\n- {question_id: r, metric: m, label: true}\n",
    )
    assert read_labels(yaml).kinds == {"m": "binary"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("question_id,metric,label\nq1,m,\n", "labels.csv: row 2: label: missing or empty"),
        ("question_id,metric\nq1,m\n", "labels.csv: row 1: the header has no label column"),
        ("question_id,metric,label\nq1,m,1\nq1,m,0\n", "labels.csv: row 3: question 'q1'"),
        ("question_id,metric,label\nq1,m,nan\n", "labels.csv: row 2: label: must be a finite"),
        (
            "question_id,metric,label\nq1,m,1\nq2,m,yes\nq3,m,2\n",
            "labels.csv: row 3: label: metric",
        ),
        ("question_id,metric,label\nq1,m,1\nq2,m,good\n", "labels.csv: row 3: label: metric 'm'"),
        ("question_id,metric,label\nq1,m,1,extra\n", "labels.csv: row 2: 4 cells"),
        ("", "labels.csv: the file is empty"),
    ],
)
def test_bad_csv_rows_name_the_file_row_and_field(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, "labels.csv", text)
    with pytest.raises(InputError) as caught:
        read_labels(path)
    assert str(caught.value).startswith(str(tmp_path / message.split(":")[0]) + ":")
    assert message.split(": ", 1)[1] in str(caught.value)


@pytest.mark.parametrize(
    ("record", "field"),
    [
        ({"question_id": [1], "metric": "m", "label": 1}, "question_id"),
        ({"question_id": "q", "metric": 3, "label": 1}, "metric"),
        ({"question_id": "q", "metric": "m", "label": {"a": 1}}, "label"),
        ({"question_id": "q", "metric": "m", "label": 1, "score": 2}, "score"),
        ({"question_id": "q", "metric": "m"}, "label"),
    ],
)
def test_bad_records_name_the_record_and_field(record: dict, field: str) -> None:
    with pytest.raises(InputError) as caught:
        labels_from_records([{"question_id": "ok", "metric": "m", "label": 1}, record], "mine")
    assert str(caught.value).startswith(f"mine: record [1]: {field}: ")


def test_a_file_that_is_not_a_list_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="labels must be a list of rows, got dict"):
        read_labels(write(tmp_path, "labels.yaml", "a: 1\n"))
    with pytest.raises(InputError, match="no label rows"):
        read_labels(write(tmp_path, "empty.yaml", "[]\n"))


def test_a_superseding_row_changes_or_clears_the_earlier_one(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "labels.csv",
        "question_id,metric,label,annotator,note,supersedes\n"
        "q1,m,true,ana,,\n"
        "q2,m,true,ana,,\n"
        "q1,m,false,ben,,\n"
        "q3,m,false,ana,,\n"
        "q1,m,false,ana,second thoughts,true\n"  # ana changes q1
        "q3,m,,ana,,yes\n"  # and takes q3 back
        "q4,m,true,ana,,true\n"  # superseding nothing: an ordinary row
        "q5,m,true,ana,,\n"
        "q5,m,,ana,,true\n"
        "q5,m,false,ana,,\n",  # cleared, then labelled again by a plain row
    )
    labels = read_labels(path)
    got = [(r.question_id, r.annotator, r.value, r.row) for r in labels.rows]
    assert got == [
        ("q1", "ana", False, "row 6"),  # the earlier row's place, the later row's value
        ("q2", "ana", True, "row 3"),
        ("q1", "ben", False, "row 4"),
        ("q4", "ana", True, "row 8"),
        ("q5", "ana", False, "row 11"),
    ]
    jsonl = write(
        tmp_path,
        "labels.jsonl",
        '{"question_id": "q", "metric": "m", "label": 0.2}\n'
        '{"question_id": "q", "metric": "m", "label": 0.7, "supersedes": true}\n',
    )
    assert [r.value for r in read_labels(jsonl).rows] == [0.7]


@pytest.mark.parametrize(
    ("text", "message"),
    [  # an accidental repeat is still refused, with the row that came first
        ("question_id,metric,label,supersedes\nq1,m,1,\nq1,m,0,false\n", "row 3: question 'q1'"),
        ("question_id,metric,label,supersedes\nq1,m,1,\nq1,m,0,maybe\n", "row 3: supersedes"),
        ("question_id,metric,label\nq1,m,\n", "row 2: label: missing or empty"),
        ("question_id,metric,label,supersedes\nq1,m,,true\n", "no label rows"),
    ],
)
def test_supersedes_is_said_or_the_repeat_is_refused(
    tmp_path: Path, text: str, message: str
) -> None:
    path = write(tmp_path, "labels.csv", text)
    with pytest.raises(InputError, match=message) as caught:
        read_labels(path)
    assert "\n" not in str(caught.value)


def test_qa_eval_agreement_measures_the_labels_as_superseded(tmp_path: Path) -> None:
    import json

    from qa_eval.cli import main

    demo = Path(__file__).resolve().parents[2] / "examples" / "powergrid"
    out = tmp_path / "results.jsonl"
    command = ["evaluate", str(demo / "reference.yaml"), str(demo / "responses-good.jsonl")]
    assert main([*command, "--no-judge", "-q", "-o", str(out)]) == 0
    ids = [json.loads(line)["question_id"] for line in out.read_text().splitlines()]
    final = {q: i % 3 != 0 for i, q in enumerate(ids)}
    plain = ["question_id,metric,label,annotator,supersedes"]
    plain += [f"{q},steps_score,{str(v).lower()},ana," for q, v in final.items()]
    corrected = ["question_id,metric,label,annotator,supersedes"]
    corrected += [f"{q},steps_score,{str(not v).lower()},ana," for q, v in final.items()]
    corrected += [f"{q},steps_score,{str(v).lower()},ana,true" for q, v in final.items()]
    corrected += ["extra,steps_score,true,ana,", "extra,steps_score,,ana,true"]  # taken back
    reports = []
    for name, lines in (("plain.csv", plain), ("corrected.csv", corrected)):
        labels = write(tmp_path, name, "\n".join(lines) + "\n")
        report = tmp_path / f"{name}.json"
        run = ["agreement", str(out), "--labels", str(labels), "--format", "json"]
        assert main([*run, "-o", str(report)]) == 0
        data = json.loads(report.read_text())
        data.pop("labels", None)  # names the file
        reports.append(data)
    assert reports[0] == reports[1]
    assert reports[0]["judges"][0]["metrics"][0]["n"] == len(ids)
