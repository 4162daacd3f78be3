"""``qa-eval agreement`` says what it did with every label and option (issue 36): label rows that
match no result are counted with the reason (a note; exit 2 when none match), ``--threshold`` on a
metric that is not measured is refused, the cut disagreement list ends with "and N more", and a
labels file given where results are expected is named as such."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qa_eval.cli import main

DEMO = Path(__file__).resolve().parents[2] / "examples" / "powergrid"


@pytest.fixture
def results(tmp_path: Path) -> tuple[Path, list[dict]]:
    out = tmp_path / "results.jsonl"
    command = ["evaluate", str(DEMO / "reference.yaml"), str(DEMO / "responses-good.jsonl")]
    assert main([*command, "--no-judge", "-q", "-o", str(out)]) == 0
    return out, [json.loads(line) for line in out.read_text().splitlines()]


def _labels(tmp_path: Path, rows: list[tuple[str, str, object]]) -> Path:
    path = tmp_path / "labels.csv"
    lines = ["question_id,metric,label", *(f"{q},{m},{v}" for q, m, v in rows)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_labels_matching_no_result_exit_2_with_the_reasons(
    tmp_path: Path, results: tuple[Path, list[dict]], capsys: pytest.CaptureFixture[str]
) -> None:
    out, _ = results
    labels = _labels(tmp_path, [("nope", "steps_score", 1), ("nope2", "steps_score", 0)])
    assert main(["agreement", str(out), "--labels", str(labels)]) == 2
    err = capsys.readouterr().err
    assert "2 of 2 label rows match no result: 2 name a question no results file has" in err


def test_labels_partly_matching_say_how_many_did_not(
    tmp_path: Path, results: tuple[Path, list[dict]], capsys: pytest.CaptureFixture[str]
) -> None:
    out, rows = results
    ids = [r["question_id"] for r in rows]
    labels = _labels(
        tmp_path,
        [
            *((q, "steps_score", 1) for q in ids),
            ("nope", "steps_score", 1),
            (ids[0], "faithful", 1),
        ],
    )
    assert main(["agreement", str(out), "--labels", str(labels)]) == 0
    err = capsys.readouterr().err
    assert (
        f"2 of {len(ids) + 2} label rows match no result: 1 name a question no results file has "
        "('nope'); 1 name a metric the results lack (faithful)"
    ) in err


def test_a_threshold_on_a_metric_not_measured_is_refused(
    tmp_path: Path, results: tuple[Path, list[dict]], capsys: pytest.CaptureFixture[str]
) -> None:
    out, rows = results
    labels = _labels(tmp_path, [(r["question_id"], "steps_score", 1) for r in rows])
    assert (
        main(["agreement", str(out), "--labels", str(labels), "--threshold", "faithfulness=0.5"])
        == 2
    )
    assert "--threshold faithfulness: unknown labelled metric (known: steps_score)" in (
        capsys.readouterr().err
    )


def test_the_cut_disagreement_list_says_how_many_more(
    tmp_path: Path, results: tuple[Path, list[dict]], capsys: pytest.CaptureFixture[str]
) -> None:
    out, rows = results
    labels = _labels(
        tmp_path, [(r["question_id"], "steps_score", 1 - r["steps_score"]) for r in rows]
    )
    assert main(["agreement", str(out), "--labels", str(labels)]) == 0
    text = capsys.readouterr().out
    listed = text.count("disagrees [results]")
    differing = sum(1 for r in rows if r["steps_score"] != 0.5)
    assert listed == 3 < differing
    assert f"and {differing - 3} more [results]" in text


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_a_labels_file_given_as_results_is_named(
    tmp_path: Path,
    results: tuple[Path, list[dict]],
    capsys: pytest.CaptureFixture[str],
    suffix: str,
) -> None:
    _, rows = results
    labels = _labels(tmp_path, [(rows[0]["question_id"], "steps_score", 1)])
    if suffix == ".jsonl":
        given = tmp_path / "labels.jsonl"
        given.write_text(json.dumps({"question_id": "q", "metric": "m", "label": 1}) + "\n")
    else:
        given = labels
    for command in (
        ["agreement", str(given), "--labels", str(labels)],
        ["report", str(given), "-o", str(tmp_path / "r.html")],
    ):
        assert main(command) == 2
        assert "looks like people's labels (qa-eval agreement --labels)" in capsys.readouterr().err


def test_report_takes_the_agreement_threshold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("jinja2")
    values = [0.1, 0.3, 0.45, 0.6, 0.7, 0.8, 0.9, 0.95, 0.2, 0.65]
    out = tmp_path / "results.jsonl"
    rows = [
        {"template_id": "t", "question_id": f"q{i}", "question_text": "Q?", "faithfulness": v}
        for i, v in enumerate(values)
    ]
    out.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    labels = _labels(
        tmp_path,
        [(r["question_id"], "faithfulness", str(v >= 0.5).lower()) for r, v in zip(rows, values)],
    )
    page = tmp_path / "report.html"
    command = ["report", str(out), "-o", str(page), "--labels", str(labels)]
    assert main(command) == 0
    assert "threshold chosen on these labels" in page.read_text(encoding="utf-8")
    assert main([*command, "--threshold", "faithfulness=0.85"]) == 0
    html = page.read_text(encoding="utf-8")
    assert "threshold chosen on these labels" not in html
    assert ">0.850<" in html  # the threshold column
    assert main([*command, "--threshold", "faithfulnes=0.5"]) == 2
    assert "--threshold faithfulnes: unknown labelled metric; did you mean faithfulness?" in (
        capsys.readouterr().err
    )
    assert main(["report", str(out), "-o", str(page), "--threshold", "faithfulness=0.5"]) == 2
    assert "give --labels" in capsys.readouterr().err
