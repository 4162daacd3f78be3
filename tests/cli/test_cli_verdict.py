"""What ``evaluate --system`` and ``compare`` print: the verdict first, a short table, the rest
behind ``--per-template`` and ``--explain``; ``--format json`` untouched by either."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from qa_eval.cli import main
from qa_eval.compare.runs import compare_runs
from qa_eval.io.files import read_data

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
        *extra,
    ]


def test_the_demo_two_systems_fit_in_about_forty_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    assert main(_systems(tmp_path)) == 0
    captured = capsys.readouterr()
    out, err = captured.out.splitlines(), captured.err.splitlines()
    assert len(out) + len(err) <= 41, captured.out
    # the no-judge note is the same for both systems: printed once
    assert sum(line.startswith("note: LLM metrics not computed") for line in err) == 1
    start = out.index("== good vs flawed")
    verdict = " ".join(out[start + 1 : start + 3])
    assert verdict.startswith("flawed (B) against good (A): worse on steps_score -0.659 (p adj")
    assert "better on input_tokens" in verdict
    assert out[start + 3] == (
        "11 paired questions; errors: A 0, B 1; per template: all 20 rows too few to test (n<6)"
    )
    header = next(i for i in range(start, len(out)) if out[i].startswith("metric "))
    assert header == start + 5
    # no per-template row is testable with 2-3 questions, so none is listed
    assert not any(line.startswith("  transformers_at_substation") for line in out)
    # token means without decimals, seconds with two, scores with three
    rows = {line.split()[0]: line.split() for line in out[header + 2 :] if line.strip()}
    assert rows["total_tokens"][2:5] == ["10", "3712", "3141"]  # name, (-), n, mean A, mean B
    assert rows["elapsed_sec"][2:5] == ["10", "3.11", "2.48"]
    assert rows["steps_score"][1:4] == ["11", "1.000", "0.341"]


def test_per_template_and_explain_on_evaluate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    assert main(_systems(tmp_path, "--per-template", "--explain")) == 0
    out = capsys.readouterr().out
    compared = out[out.index("== good vs flawed") :]
    assert "per template" in compared and "  transformers_at_substation_SUBSTATION" in compared
    assert compared.count("n<6") >= 20  # every per-template row, each too few to test
    assert "exact up to 16 pairs" in " ".join(compared.split())


def _result_files(tmp_path: Path) -> tuple[str, str]:
    a, b = [], []
    for i in range(13):
        template = "small" if i < 3 else "large"
        a.append({"template_id": template, "question_id": f"q{i}", "answer_f1": 0.25})
        b.append({"template_id": template, "question_id": f"q{i}", "answer_f1": 0.75})
    paths = tmp_path / "a.json", tmp_path / "b.json"
    for path, run in zip(paths, (a, b)):
        path.write_text(json.dumps(run))
    return str(paths[0]), str(paths[1])


def test_compare_command_per_template_and_explain(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    a, b = _result_files(tmp_path)
    assert main(["compare", a, b]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "b (B) against a (A): better on answer_f1 +0.500 (p adj <0.001)"
    block = lines.index(next(line for line in lines if line.startswith("per template ")))
    assert [line.split()[0] for line in lines[block:] if line.startswith("  ")] == ["large"]
    note = lines[max(i for i, line in enumerate(lines) if not line) + 1 :]
    assert len(note) <= 2 and "--per-template (1 more row)" in " ".join(note)
    assert main(["compare", a, b, "--per-template"]) == 0
    every = capsys.readouterr().out
    assert "  small" in every and "  large" in every
    assert main(["compare", a, b, "--explain"]) == 0
    explained = " ".join(capsys.readouterr().out.split())
    assert "two-sided paired sign-flip permutation test" in explained


def test_format_json_is_the_same_with_the_text_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = _result_files(tmp_path)
    assert main(["compare", a, b, "--format", "json"]) == 0
    plain = capsys.readouterr().out
    assert main(["compare", a, b, "--format", "json", "--per-template", "--explain"]) == 0
    assert capsys.readouterr().out == plain
    expected = compare_runs(read_data(a), read_data(b), labels=("a", "b"))
    assert plain == orjson.dumps(expected, option=orjson.OPT_INDENT_2).decode() + "\n"
    assert main(_systems(tmp_path, "--format", "json")) == 0
    plain = capsys.readouterr().out
    assert main(_systems(tmp_path, "--format", "json", "--per-template", "--explain")) == 0
    assert capsys.readouterr().out == plain
    assert json.loads(plain)["comparisons"][0]["labels"] == {"a": "good", "b": "flawed"}
