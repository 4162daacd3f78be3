"""``qa-eval agreement`` end to end: the table, JSON on stdout and in -o (valid against its
schema), a bad label row (exit 2, one line naming file, row and field), the --fail-under gates
(exit 3) and the usage errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from qa_eval.cli import main
from qa_eval.schemas import load_schema

jsonschema = pytest.importorskip("jsonschema")
N = 30


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    """Two judges' results (a cheap noisy one, a dear good one) and a labels CSV."""
    rng = np.random.default_rng(0)
    label = rng.random(N) < 0.5
    out = {}
    for name, flip, cost in (("mini", 0.3, 0.0003), ("big", 0.05, 0.005)):
        path = tmp_path / f"{name}.jsonl"
        lines = []
        for i in range(N):
            value = bool(label[i]) ^ bool(rng.random() < flip)
            lines.append(
                json.dumps(
                    {
                        "template_id": "t",
                        "question_id": f"q{i}",
                        "question_text": f"Q{i}?",
                        "faithfulness": 1.0 if value else 0.0,
                        "faithfulness_reason": "the answer says so",
                        "llm_cost": cost,
                    }
                )
            )
        path.write_text("\n".join(lines) + "\n")
        out[name] = path
    labels = tmp_path / "labels.csv"
    body = "".join(f"q{i},faithfulness,{'true' if label[i] else 'false'}\n" for i in range(N))
    labels.write_text("question_id,metric,label\n" + body)
    out["labels"] = labels
    return out


def test_the_table_shows_the_judges_side_by_side(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["agreement", str(files["mini"]), str(files["big"]), "--labels", str(files["labels"])]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "faithfulness (binary labels, n = 30, 95% intervals)" in out
    assert "mini" in out and "big" in out and "$0.0003" in out
    assert "faithfulness:" in out.splitlines()[-1]


def test_json_output_and_file_validate_against_the_schema(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "agreement.json"
    argv = ["agreement", str(files["mini"]), "--labels", str(files["labels"])]
    code = main([*argv, "--format", "json", "-o", str(target), "--label", "cheap"])
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(target.read_text())
    assert printed["judges"][0]["label"] == "cheap"
    validator = jsonschema.Draft202012Validator(load_schema("agreement"))
    assert not list(validator.iter_errors(printed))


def test_a_bad_label_row_is_one_line_and_exit_2(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("question_id,metric,label\nq1,faithfulness,true\nq2,faithfulness,\n")
    code = main(["agreement", str(files["mini"]), "--labels", str(bad)])
    err = capsys.readouterr().err
    assert code == 2
    assert err == f"qa-eval: error: {bad}: row 3: label: missing or empty\n"


def test_fail_under_gates_exit_3_when_a_judge_falls_short(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["agreement", str(files["mini"]), str(files["big"]), "--labels", str(files["labels"])]
    assert main([*argv, "--fail-under", "kappa=0.6", "accuracy=0.5"]) == 3
    err = capsys.readouterr().err
    assert "gate FAILED: fail-under kappa >= 0.6 [mini, faithfulness]" in err
    assert "gate passed: fail-under kappa >= 0.6 [big, faithfulness]" in err
    assert "1 of 4 quality gate(s) failed" in err
    assert main([*argv, "--fail-under", "accuracy=0.5"]) == 0
    assert main([*argv, "--fail-under", "spearman=0.5"]) == 3  # no metric has it: fails
    assert "no measured metric has a spearman" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--fail-under", "alpha=0.5"], "an agreement gate is one of"),
        (["--threshold", "faithfulness"], "--threshold takes METRIC=VALUE"),
        (["--threshold", "faithfulness=high"], "is not a number"),
        (["--label", "a", "--label", "b"], "--label was given 2 time(s) for 1 results file(s)"),
        (["--metric", "nope"], "no label for metric 'nope'"),
        (["--resamples", "5"], "--resamples must be at least 100"),
    ],
)
def test_usage_errors_exit_2(
    files: dict[str, Path], extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["agreement", str(files["mini"]), "--labels", str(files["labels"]), *extra])
    assert code == 2
    assert message in capsys.readouterr().err
