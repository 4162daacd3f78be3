"""``evaluate --pass-threshold`` over responses with repeated trials: the aggregates file has
pass@k and pass^k per template and overall, the signature records the thresholds, the terminal
summary shows the table, and a bad threshold is a one-line error (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from qa_eval.cli import main
from qa_eval.io.files import read_data

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _trials(tmp_path: Path, count: int = 3) -> Path:
    """The example responses, each given ``count`` times as trials 1..count; in the last trial
    every step fails, so its steps_score is 0."""
    lines = []
    for line in (EXAMPLES / "responses.jsonl").read_text().splitlines():
        response = json.loads(line)
        for trial in range(1, count + 1):
            copy = dict(response, trial=trial)
            if trial == count:
                copy["actual_steps"] = [
                    dict(step, status="error") for step in response.get("actual_steps", [])
                ]
            lines.append(json.dumps(copy))
    path = tmp_path / "trials.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_pass_threshold_adds_pass_at_k_to_the_aggregates(tmp_path: Path, capsys: Any) -> None:
    responses = _trials(tmp_path)
    out, agg = tmp_path / "results.jsonl", tmp_path / "aggregates.json"
    code = main(
        ["evaluate", str(EXAMPLES / "reference.yaml"), str(responses), "-o", str(out),
         "--aggregates", str(agg), "--pass-threshold", "steps_score=0.5", "--no-judge"]
    )  # fmt: skip
    assert code == 0
    aggregates = read_data(agg)
    trials = aggregates["micro"]["trials"]
    assert trials["n_trials"] == {"min": 3, "max": 3}
    table = trials["steps_score"]
    assert table["threshold"] == 0.5
    # per question: the first two trials' scores as in the example, the last one 0
    results = [r for r in read_data(out) if isinstance(r.get("steps_score"), (int, float))]
    assert all(r["trial"] in (1, 2, 3) for r in results)
    passed = {r["question_id"]: 0 for r in results}
    for r in results:
        passed[r["question_id"]] += r["steps_score"] >= 0.5
    # pass^3 = C(c,3)/C(3,3): 0 whenever a trial failed, which the last always does
    assert table["pass_hat_k"]["3"] == 0.0
    assert table["pass_at_k"]["1"] == pytest.approx(
        sum(c / 3 for c in passed.values()) / len(passed)
    )
    assert aggregates["signature"]["options"]["pass_thresholds"] == {"steps_score": 0.5}
    assert all("trials" in group for group in aggregates["per_template"].values())
    shown = capsys.readouterr().out
    assert "pass@k" in shown and "steps_score" in shown


def test_aggregate_command_takes_pass_thresholds(tmp_path: Path, capsys: Any) -> None:
    responses = _trials(tmp_path)
    out = tmp_path / "results.jsonl"
    assert main(["evaluate", str(EXAMPLES / "reference.yaml"), str(responses), "-o", str(out),
                 "--no-judge", "-q"]) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["aggregate", str(out), "--pass-threshold", "steps_score=1"]) == 0
    printed = capsys.readouterr().out
    assert "pass_hat_k" in printed and "threshold: 1.0" in printed


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("steps_score", "--pass-threshold takes KEY=VALUE, not 'steps_score'"),
        ("steps_score=high", "--pass-threshold 'steps_score=high': 'high' is not a number"),
        ("steps_score=nan", "the value must be a finite number"),
    ],
)
def test_a_bad_pass_threshold_exits_2_with_one_line(
    item: str, message: str, tmp_path: Path, capsys: Any
) -> None:
    code = main(["evaluate", str(EXAMPLES / "reference.yaml"), str(EXAMPLES / "responses.jsonl"),
                 "--no-judge", "--pass-threshold", item])  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_the_report_shows_the_pass_table_with_the_run_thresholds(tmp_path: Path) -> None:
    """The report reads the thresholds from the results' signature; a template name is text."""
    responses = _trials(tmp_path)
    out, page = tmp_path / "results.json", tmp_path / "report.html"
    assert main(["evaluate", str(EXAMPLES / "reference.yaml"), str(responses), "-o", str(out),
                 "--no-judge", "-q", "--pass-threshold", "steps_score=0.5"]) == 0  # fmt: skip
    assert main(["report", str(out), "-o", str(page)]) == 0
    html = page.read_text()
    section = html[
        html.index('<section id="trials">') : html.index(
            "</section>", html.index('<section id="trials">')
        )
    ]
    assert section.count('<td class="l">steps_score</td>') == 4  # 3 templates and all
    assert "pass^k" in section
    plain = tmp_path / "plain.html"
    results = read_data(out)
    for result in results:
        result.pop("trial")
    (tmp_path / "plain.json").write_text(json.dumps(results[::3]))  # one per question
    assert main(["report", str(tmp_path / "plain.json"), "-o", str(plain)]) == 0
    assert 'id="trials"' not in plain.read_text()
