"""Labels written by the viewer: appended at once, in the format ``qa-eval agreement`` reads,
safe with two writers on one file and after a writer was killed mid-row; review decisions."""

from __future__ import annotations

import csv
import multiprocessing
from pathlib import Path

import pytest

from qa_eval.agreement import read_labels
from qa_eval.errors import InputError
from qa_eval.view.labels import LabelRow, append_label, current_labels
from qa_eval.view.review import decide, read_review


def _writer(path: str, who: str, count: int) -> None:
    for i in range(count):
        append_label(Path(path), LabelRow(f"q{i}", "t", "faithfulness", i % 2 == 0, who, 'n,"x"'))


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_two_writers_on_one_file_do_not_corrupt_it(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"labels{suffix}"
    context = multiprocessing.get_context("fork")
    writers = [context.Process(target=_writer, args=(str(path), who, 60)) for who in ("a", "b")]
    for w in writers:
        w.start()
    for w in writers:
        w.join(60)
    assert [w.exitcode for w in writers] == [0, 0]
    labels = read_labels(path)
    assert len(labels.rows) == 120
    assert sorted(labels.annotators) == ["a", "b"]
    assert labels.kinds == {"faithfulness": "binary"}
    if suffix == ".csv":
        assert path.read_text().count("question_id,") == 1  # one header


def test_a_row_cut_by_a_kill_is_dropped_and_a_complete_one_kept(tmp_path: Path) -> None:
    path = tmp_path / "labels.csv"
    append_label(path, LabelRow("q1", None, "answer_class", "CORRECT", "ana"))
    with path.open("a") as f:
        f.write("q2,,answer_class,WRO")  # a writer killed within its row: never saved
    append_label(path, LabelRow("q3", None, "answer_class", "WRONG", "ana", "a note"))
    assert path.read_text().splitlines()[1:] == [
        "q1,,answer_class,CORRECT,ana,,", "q3,,answer_class,WRONG,ana,a note,"
    ]  # fmt: skip
    with path.open("a") as f:
        f.write("q4,,answer_class,WRONG,bo,typed by hand,")  # complete, no newline: kept
    append_label(path, LabelRow("q5", None, "answer_class", "WRONG", "ana"))
    labels = read_labels(path)
    assert [(r.question_id, r.annotator) for r in labels.rows] == [
        ("q1", "ana"), ("q3", "ana"), ("q4", "bo"), ("q5", "ana")
    ]  # fmt: skip
    jsonl = tmp_path / "labels.jsonl"
    append_label(jsonl, LabelRow("q1", None, "m", True, "ana"))
    with jsonl.open("a") as f:
        f.write('{"question_id": "q2", "met')
    append_label(jsonl, LabelRow("q3", None, "m", False, "ana"))
    assert [r.question_id for r in read_labels(jsonl).rows] == ["q1", "q3"]


def test_one_label_per_question_metric_and_annotator(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    append_label(path, LabelRow("q1", "t", "faithfulness", 0.7, "ana"))
    with pytest.raises(InputError, match="already labelled"):
        append_label(path, LabelRow("q1", "t", "faithfulness", 0.2, "ana"))
    append_label(path, LabelRow("q1", "t", "faithfulness", 0.4, "bo"))  # another person
    assert [r.value for r in read_labels(path).rows] == [0.7, 0.4]
    with pytest.raises(InputError, match=r"\.csv or \.jsonl"):
        append_label(tmp_path / "labels.yaml", LabelRow("q1", None, "m", True, "ana"))


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_a_label_is_changed_or_cleared_by_a_superseding_row(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"labels{suffix}"
    append_label(path, LabelRow("q1", "t", "faithfulness", True, "ana"))
    append_label(path, LabelRow("q2", "t", "faithfulness", True, "ana"))
    append_label(path, LabelRow("q1", "t", "faithfulness", True, "bo"))
    append_label(path, LabelRow("q1", "t", "faithfulness", False, "ana", "no", supersedes=True))
    append_label(path, LabelRow("q2", "t", "faithfulness", None, "ana", supersedes=True))
    assert current_labels(path, "ana").keys() == {("q1", "t", "faithfulness")}
    labels = read_labels(path)  # what qa-eval agreement reads
    assert [(r.question_id, r.annotator, r.value) for r in labels.rows] == [
        ("q1", "ana", False), ("q1", "bo", True)
    ]  # fmt: skip
    with pytest.raises(InputError, match=r"nothing|no label"):
        append_label(path, LabelRow("q2", "t", "faithfulness", None, "ana", supersedes=True))
    # cleared, q2 may be labelled again; a first label is written as a plain row
    append_label(path, LabelRow("q2", "t", "faithfulness", False, "ana", supersedes=True))
    assert [r.value for r in read_labels(path).rows if r.question_id == "q2"] == [False]
    assert len(path.read_text().splitlines()) == 6 + (suffix == ".csv")


def test_an_existing_csv_keeps_its_columns(tmp_path: Path) -> None:
    path = tmp_path / "labels.csv"
    path.write_text("metric,question_id,label,annotator\nfaithfulness,q0,1,bo\n")
    append_label(path, LabelRow("q1", "t", "faithfulness", False, "ana", "dropped"))
    assert path.read_text().splitlines()[-1] == "faithfulness,q1,false,ana"
    path.write_text("question_id,metric,label\nq0,m,1\n")
    with pytest.raises(InputError, match="no annotator column"):
        append_label(path, LabelRow("q1", None, "m", True, "ana"))
    path.write_text("question_id,metric,label,annotator\nq0,m,1,ana\n")  # no supersedes column
    with pytest.raises(InputError, match="no supersedes"):
        append_label(path, LabelRow("q0", None, "m", False, "ana", supersedes=True))
    assert path.read_text() == "question_id,metric,label,annotator\nq0,m,1,ana\n"


def test_review_decisions_keep_the_rest_of_the_file(tmp_path: Path) -> None:
    path = tmp_path / "review.csv"
    rows = [
        {"id": "g1", "question": "Q, one?", "answer": "A", "query": "SELECT 1\n# two lines",
         "decision": "", "edit": "", "extra": "kept"},
        {"id": "g2", "question": "Q two?", "answer": "B", "query": "ASK {}",
         "decision": "", "edit": "", "extra": ""},
    ]  # fmt: skip
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    decide(path, "g2", "reject")
    decide(path, "g1", "accept", "Question one?")
    got = read_review(path)
    assert [(r.id, r.decision, r.edit) for r in got] == [
        ("g1", "accept", "Question one?"), ("g2", "reject", "")
    ]  # fmt: skip
    with path.open(newline="") as f:
        assert [r["extra"] for r in csv.DictReader(f)] == ["kept", ""]
    assert got[0].query == "SELECT 1\n# two lines"
    with pytest.raises(InputError, match="no question with id"):
        decide(path, "g9", "accept")
    with pytest.raises(InputError, match="accept, reject or empty"):
        decide(path, "g1", "maybe")
    (tmp_path / "bad.csv").write_text("id,question\n1,x\n")
    with pytest.raises(InputError, match="missing: answer, query, decision, edit"):
        read_review(tmp_path / "bad.csv")
