"""The commands that work on several runs: evaluate --system, compare, refresh-references, and
--format json for machines."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from qa_eval.cli import main

DEMO = Path(__file__).resolve().parents[2] / "examples" / "powergrid"


def _systems(tmp_path: Path, *extra: str) -> list[str]:
    return [
        "evaluate",
        str(DEMO / "reference.yaml"),
        "--system",
        f"good={DEMO / 'responses-good.jsonl'}",
        "--system",
        f"flawed={DEMO / 'responses-flawed.jsonl'}",
        "-o",
        str(tmp_path / "results.yaml"),
        "--aggregates",
        str(tmp_path / "aggregates.yaml"),
        *extra,
    ]


def test_evaluate_several_systems_writes_one_run_each_and_compares(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "120")  # the table fits the terminal
    assert main(_systems(tmp_path)) == 0
    printed = capsys.readouterr().out
    assert "== system good" in printed and "== good vs flawed" in printed
    good = yaml.safe_load((tmp_path / "results.good.yaml").read_text())
    flawed = yaml.safe_load((tmp_path / "results.flawed.yaml").read_text())
    assert len(good) == len(flawed) == 11
    aggregates = yaml.safe_load((tmp_path / "aggregates.flawed.yaml").read_text())
    assert aggregates["system"] == "flawed"
    # the compare row of steps_score printed under the two systems' names; flawed's error
    # counts as a failed answer (0)
    assert sum(r["status"] == "error" for r in flawed) == 1
    row = next(line for line in printed.splitlines() if line.startswith("steps_score"))
    mean_flawed = sum(r.get("steps_score", 0.0) for r in flawed) / 11
    mean_good = sum(r["steps_score"] for r in good) / 11
    delta = f"{mean_flawed - mean_good:+.3f}"
    assert row.split()[1:6] == ["11", f"{mean_good:.3f}", f"{mean_flawed:.3f}", delta, "0/1"]
    # --exclude-errors: the comparison leaves out the question flawed got an error on
    assert main(_systems(tmp_path, "--exclude-errors")) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("steps_"))
    paired = {r["question_id"] for r in flawed if r["status"] == "success"}
    mean_flawed = sum(r["steps_score"] for r in flawed if r["question_id"] in paired) / len(paired)
    assert row.split()[1:4] == [str(len(paired)), "1.000", f"{mean_flawed:.3f}"]


def test_format_json_prints_only_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_systems(tmp_path, "--format", "json")) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data["systems"]) == {"good", "flawed"}
    (comparison,) = data["comparisons"]
    assert comparison["labels"] == {"a": "good", "b": "flawed"}
    steps = next(m for m in comparison["metrics"] if m["metric"] == "steps_score")
    assert steps["overall"]["delta"] < 0 and steps["overall"]["ci_high"] < 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--system", "x"], "--system takes NAME=FILE"),
        (["--system", "a=f", "--system", "a=g"], "given twice"),
        ([], "give RESPONSES, or --system"),
    ],
)
def test_bad_system_options(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["evaluate", str(DEMO / "reference.yaml"), *args]) == 2
    assert message in capsys.readouterr().err


def test_compare_command_text_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_systems(tmp_path, "-q")) == 0
    capsys.readouterr()
    a, b = tmp_path / "results.good.yaml", tmp_path / "results.flawed.yaml"
    assert main(["compare", str(a), str(b), "--resamples", "500"]) == 0
    text = capsys.readouterr().out
    assert "flawed (B) against good (A): " in text and "W/L/T" in text  # the --system names
    out = tmp_path / "comparison.json"
    assert main(["compare", str(a), str(b), "--format", "json", "-o", str(out)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(out.read_text())
    assert main(["compare", str(a), str(tmp_path / "missing.yaml")]) == 2


def test_refresh_references_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reference = tmp_path / "reference.yaml"
    shutil.copy(DEMO / "reference.yaml", reference)
    before = reference.read_bytes()
    assert main(["refresh-references", str(reference), "--store", str(DEMO / "graph.ttl")]) == 0
    assert "0 changed" in capsys.readouterr().out
    assert reference.read_bytes() == before
    graph = tmp_path / "graph.ttl"
    graph.write_text(
        (DEMO / "graph.ttl")
        .read_text(encoding="utf-8")
        .replace('"1000.0"^^xsd:decimal', '"1100.0"^^xsd:decimal'),
        encoding="utf-8",
    )
    code = main(
        [
            "refresh-references",
            str(reference),
            "--store",
            str(graph),
            "--dry-run",
            "--format",
            "json",
        ]
    )
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["written"] is None and reference.read_bytes() == before
    assert report["changes"] and all(c["added"] and c["removed"] for c in report["changes"])
    assert main(["refresh-references", str(reference)]) == 2
    assert "one of the arguments --store --endpoint is required" in capsys.readouterr().err


def test_report_command_writes_one_html_file_with_the_comparison(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_systems(tmp_path, "-q")) == 0
    runs = [str(tmp_path / "results.good.yaml"), str(tmp_path / "results.flawed.yaml")]
    out = tmp_path / "report.html"
    assert main(["report", *runs, "-o", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    page = out.read_text(encoding="utf-8")
    assert 'id="comparison"' in page and ">flawed<" in page  # the --system name
    assert main(["report", runs[0], "-o", str(out), "--no-compare"]) == 0
    assert 'id="comparison"' not in out.read_text(encoding="utf-8")
    assert main(["report", *runs, "-o", str(tmp_path / "missing" / "r.html")]) == 2
    assert "the folder does not exist" in capsys.readouterr().err
