"""The first table shows what was measured (issue 36): the summary has the headline of every
family the run computed (an agent run's trajectory_match, tool_f1, tool_args_score), with trials
it counts questions and results apart, and the runs of ``evaluate --system NAME=...`` keep the
names given there in the report and in ``compare``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from qa_eval.cli import main

DEMO = Path(__file__).resolve().parents[2] / "examples" / "powergrid"


def _agent_files(tmp_path: Path, trials: int) -> tuple[Path, Path]:
    reference = tmp_path / "reference.yaml"
    search = {"name": "search_flights", "args": {"from": "OSL"}}
    reference.write_text(
        yaml.safe_dump(
            [
                {
                    "template_id": "t",
                    "questions": [
                        {
                            "id": "q1",
                            "question_text": "Book a flight.",
                            "reference_trajectory": [search, {"name": "book", "args": {}}],
                        },
                        {"id": "q2", "question_text": "Search.", "reference_trajectory": [search]},
                    ],
                }
            ]
        ),
        encoding="utf-8",
    )
    step = {**search, "output": "SK123"}
    rows = [
        {"question_id": q, "actual_answer": "ok", "actual_steps": [step], "trial": t}
        for t in range(1, trials + 1)
        for q in ("q1", "q2")
    ]
    if trials == 1:
        rows = [{k: v for k, v in r.items() if k != "trial"} for r in rows]
    responses = tmp_path / "responses.jsonl"
    responses.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    return reference, responses


def _header(out: str) -> list[str]:
    return out.splitlines()[0].split()


def test_an_agent_run_shows_its_trajectory_headlines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reference, responses = _agent_files(tmp_path, 1)
    assert main(["evaluate", str(reference), str(responses), "--no-judge"]) == 0
    out = capsys.readouterr().out
    header = _header(out)
    for metric in ("trajectory_match", "tool_f1", "tool_args_score"):
        assert metric in header
    assert "tool_recall" not in header and "tool_precision" not in header  # tool_f1 stands
    row = next(line for line in out.splitlines() if line.startswith("all questions (micro)"))
    assert row.split()[-3:] == ["0.500", "0.833", "0.750"]  # q1 found 1 of its 2 calls


def test_trials_count_questions_and_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reference, responses = _agent_files(tmp_path, 3)
    assert main(["evaluate", str(reference), str(responses), "--no-judge"]) == 0
    out = capsys.readouterr().out
    assert _header(out)[:4] == ["template", "questions", "results", "errors"]
    row = next(line for line in out.splitlines() if line.startswith("all questions (micro)"))
    assert row.split()[3:6] == ["2", "6", "0"]  # 2 questions, 6 results, no error


def test_the_report_and_compare_name_runs_by_their_system_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    command = [
        "evaluate",
        str(DEMO / "reference.yaml"),
        "--system",
        f"good={DEMO / 'responses-good.jsonl'}",
        "--system",
        f"flawed={DEMO / 'responses-flawed.jsonl'}",
        "-o",
        str(tmp_path / "results.yaml"),
        "--no-judge",
        "-q",
    ]
    assert main(command) == 0
    good, flawed = tmp_path / "results.good.yaml", tmp_path / "results.flawed.yaml"
    assert (
        yaml.safe_load((tmp_path / "results.good.signature.yaml").read_text())["system"] == "good"
    )
    page = tmp_path / "report.html"
    pytest.importorskip("jinja2")
    assert main(["report", str(good), str(flawed), "-o", str(page)]) == 0
    html = page.read_text(encoding="utf-8")
    assert "results.good" not in html and "results.flawed" not in html
    assert ">good<" in html and ">flawed<" in html
    capsys.readouterr()
    assert main(["compare", str(good), str(flawed), "--resamples", "200"]) == 0
    assert "flawed (B) against good (A)" in capsys.readouterr().out
