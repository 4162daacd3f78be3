"""Nothing a user types is silently ignored (issue 36): an option naming a metric refuses an
unknown one with exit code 2 and the nearest known names, as ``--by`` does."""

from __future__ import annotations

from pathlib import Path

import pytest

from qa_eval.cli import main

DEMO = Path(__file__).resolve().parents[2] / "examples" / "powergrid"


def _evaluate(tmp_path: Path, *extra: str) -> list[str]:
    return [
        "evaluate",
        str(DEMO / "reference.yaml"),
        str(DEMO / "responses-good.jsonl"),
        "--no-judge",
        "-q",
        "-o",
        str(tmp_path / "results.json"),
        *extra,
    ]


@pytest.mark.parametrize(
    ("option", "value", "nearest"),
    [
        ("--pass-threshold", "tool_f2=0.8", "did you mean tool_f1"),
        ("--fail-under", "steps_scor=0.5", "did you mean steps_score"),
    ],
)
def test_evaluate_refuses_an_unknown_metric(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str, value: str, nearest: str
) -> None:
    assert main(_evaluate(tmp_path, option, value)) == 2
    err = capsys.readouterr().err
    assert f"{option} {value.partition('=')[0]}: unknown metric; {nearest}" in err
    assert not (tmp_path / "results.json").exists()  # refused before the run


def test_aggregate_refuses_an_unknown_pass_threshold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_evaluate(tmp_path)) == 0
    results = str(tmp_path / "results.json")
    assert main(["aggregate", results, "--pass-threshold", "steps_scor=0.5"]) == 2
    assert "did you mean steps_score" in capsys.readouterr().err
    assert main(["aggregate", results, "--pass-threshold", "steps_score=0.5"]) == 0


@pytest.mark.parametrize(
    ("option", "value", "nearest"),
    [
        ("--enable", "faithfulnes", "faithfulness"),
        ("--disable", "answer_relevanc", "answer_relevance"),
    ],
)
def test_a_metric_switch_not_known_names_the_nearest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str, value: str, nearest: str
) -> None:
    assert main(_evaluate(tmp_path, option, value)) == 2
    assert f"invalid choice: '{value}'; did you mean {nearest}" in capsys.readouterr().err
