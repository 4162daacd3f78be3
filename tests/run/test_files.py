"""evaluate_files / plan_evaluation / run_plan: the ``qa-eval evaluate`` command as a function.

Each test runs the CLI and the API on the same input and compares what they write (results,
signature, aggregates, the partial stream), byte for byte where the CLI writes a file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from fakes import items_dataset
from openai_stub import StubServer
from qa_eval import QaEvalError, evaluate_files, plan_evaluation, run_plan
from qa_eval.cli import main
from qa_eval.cli.console import plan_table
from qa_eval.io.files import read_data
from qa_eval.run.files import Observer, PartialFile

ROOT = Path(__file__).parents[2]


def _config(tmp_path: Path, url: str) -> Path:
    endpoint = {"provider": "openai", "base_url": url, "api_key": "x"}
    settings = {
        "llm": {
            "generation": {**endpoint, "model": "gpt-4o-mini"},
            "embedding": {**endpoint, "model": "text-embedding-3-small"},
            "concurrency": 2,
        }
    }
    path = tmp_path / "judge.yaml"
    path.write_text(json.dumps(settings), encoding="utf-8")
    return path


def _inputs(tmp_path: Path, n: int = 8, name: str = "responses") -> tuple[Path, Path]:
    reference, responses = items_dataset(n)
    for i, question in enumerate(reference[0]["questions"]):
        question["question_type"] = "even" if i % 2 == 0 else "odd"
    ref, resp = tmp_path / "reference.json", tmp_path / f"{name}.jsonl"
    ref.write_bytes(orjson.dumps(reference))
    resp.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in responses[::-1]))
    return ref, resp


def _rounded(data: Any) -> Any:
    """``data`` with its floats to 9 significant digits: a run's total cost is a sum in the order
    the judge calls finish, which may differ in the last bits between two runs."""
    if isinstance(data, float):
        return float(f"{data:.9g}")
    if isinstance(data, dict):
        return {k: _rounded(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_rounded(v) for v in data]
    return data


def _dirs(tmp_path: Path) -> tuple[Path, Path]:
    cli, api = tmp_path / "cli", tmp_path / "api"
    cli.mkdir()
    api.mkdir()
    return cli, api


@pytest.mark.parametrize("suffix", [".yaml", ".json", ".jsonl"])
def test_evaluate_files_writes_what_the_cli_writes(
    stub: StubServer, tmp_path: Path, capsys: Any, suffix: str
) -> None:
    ref, resp = _inputs(tmp_path)
    config = _config(tmp_path, stub.url)
    cli, api = _dirs(tmp_path)
    args = [str(ref), str(resp), "-c", str(config), "--no-cache", "-q", "--by", "question_type"]
    out = ["-o", str(cli / f"results{suffix}"), "--aggregates", str(cli / "agg.yaml")]
    assert main(["evaluate", *args, *out]) == 0
    calls = len(stub.chat_requests)
    assert calls > 0

    run = evaluate_files(
        ref,
        resp,
        config=config,
        cache=False,
        output=api / f"results{suffix}",
        aggregates=api / "agg.yaml",
        by=["question_type"],
    )
    assert len(stub.chat_requests) == 2 * calls  # the same judge calls again (no cache)
    name = f"results{suffix}"
    assert (api / name).read_bytes() == (cli / name).read_bytes()
    for name in ("results.signature.yaml", "agg.yaml"):  # run totals: sums in finishing order
        assert _rounded(read_data(api / name)) == _rounded(read_data(cli / name)), name
    assert not (api / f"results{suffix}.partial.jsonl").exists()
    (system,) = run.systems
    assert system.name is None and system.written == [
        str(api / f"results{suffix}"),
        str(api / "agg.yaml"),
    ]
    assert [r["question_id"] for r in run.results] == [f"q{i}" for i in range(8)]
    assert run.aggregates["micro"]["number_of_success_samples"] == 8
    assert run.aggregates["signature"] == system.signature
    assert system.signature["usage"]["total"]["calls"] == calls
    assert set(run.aggregates["per_tag"]["question_type"]) == {"even", "odd"}


def test_the_cli_json_is_the_run_summary_for_several_systems(
    stub: StubServer, tmp_path: Path, capsys: Any
) -> None:
    ref, good = _inputs(tmp_path, 6, "good")
    flawed = tmp_path / "flawed.jsonl"
    flawed.write_bytes(
        b"".join(
            orjson.dumps({"question_id": f"q{i}", "actual_answer": "I do not know."}) + b"\n"
            for i in range(6)
        )
    )
    config = _config(tmp_path, stub.url)
    cli, api = _dirs(tmp_path)
    systems = ["--system", f"good={good}", "--system", f"flawed={flawed}"]
    args = [str(ref), *systems, "-c", str(config), "--no-cache", "--format", "json"]
    assert main(["evaluate", *args, "-o", str(cli / "results.yaml")]) == 0
    printed = json.loads(capsys.readouterr().out)

    run = evaluate_files(
        ref,
        systems={"good": good, "flawed": flawed},
        config=config,
        cache=False,
        output=api / "results.yaml",
    )
    assert [s.name for s in run.systems] == ["good", "flawed"]
    assert printed["comparisons"][0]["labels"] == {"a": "good", "b": "flawed"}
    assert _rounded(orjson.loads(orjson.dumps(run.summary(), default=str))) == _rounded(printed)
    for name in ("good", "flawed"):
        file = f"results.{name}.yaml"
        assert (api / file).read_bytes() == (cli / file).read_bytes(), file
        file = f"results.{name}.signature.yaml"
        assert _rounded(read_data(api / file)) == _rounded(read_data(cli / file)), file
    assert not (api / "results.yaml").exists()


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_an_interrupted_run_leaves_the_finished_results_in_the_partial_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str
) -> None:
    ref, resp = _inputs(tmp_path, 30)
    whole = evaluate_files(ref, resp)  # no judge: the steps and offline metrics only
    expected = {r["question_id"]: r for r in whole.results}
    real, real_lines = PartialFile.write, PartialFile.write_lines

    def write(self: PartialFile, result: dict[str, Any], flush: bool = True) -> None:
        real(self, result, flush)
        if self.count == 12:
            raise KeyboardInterrupt

    def write_lines(self: PartialFile, data: bytes, count: int) -> None:  # streamed: in batches
        lines = data.splitlines(keepends=True)
        real_lines(self, b"".join(lines[:12]), min(count, 12))
        raise KeyboardInterrupt

    monkeypatch.setattr(PartialFile, "write", write)
    monkeypatch.setattr(PartialFile, "write_lines", write_lines)
    output = tmp_path / f"results{suffix}"
    with pytest.raises(KeyboardInterrupt):
        evaluate_files(ref, resp, output=output)
    partial = tmp_path / f"results{suffix}.partial.jsonl"
    written = [json.loads(line) for line in partial.read_bytes().splitlines()]
    assert len(written) == 12 and not output.exists()
    assert all(expected[r["question_id"]] == r for r in written)
    if suffix == ".jsonl":  # streamed: in reference order
        assert [r["question_id"] for r in written] == [f"q{i}" for i in range(12)]


class _Recorder(Observer):
    def __init__(self) -> None:
        self.events: list[Any] = []

    def system_started(self, system: Any) -> None:
        self.events.append(("started", system.name))

    def note(self, text: str) -> None:
        self.events.append(("note", text))

    def system_finished(self, run: Any) -> None:
        self.events.append(("finished", len(run.results)))


def test_a_partial_file_left_by_an_earlier_run_is_replaced_with_a_note(tmp_path: Path) -> None:
    ref, resp = _inputs(tmp_path, 4)
    output = tmp_path / "results.yaml"
    partial = tmp_path / "results.yaml.partial.jsonl"
    partial.write_text('{"question_id": "old"}\n', encoding="utf-8")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n", encoding="utf-8")
    with pytest.raises(QaEvalError):  # bad input: the earlier file stays as it was
        evaluate_files(ref, bad, output=output)
    assert partial.read_text(encoding="utf-8") == '{"question_id": "old"}\n'
    recorder = _Recorder()
    evaluate_files(ref, resp, output=output, observer=recorder)
    assert recorder.events[0] == ("started", None) and recorder.events[-1] == ("finished", 4)
    (note,) = [text for kind, text in recorder.events if kind == "note"]
    assert note.startswith(f"replacing {partial}, left by an earlier run that did not finish")
    assert not partial.exists() and output.exists()


def test_flat_rows_give_what_evaluate_flat_gives(
    stub: StubServer, tmp_path: Path, capsys: Any
) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_bytes(
        b"".join(
            orjson.dumps(
                {
                    "prompt": f"What is item {i}?",
                    "answer": f"Item {i} is a box of size {i}.",
                    "contexts": [f"Item {i} is a red box.", f"Its size is {i}."],
                    "ground_truth": f"Item {i} is a red box of size {i}.",
                }
            )
            + b"\n"
            for i in range(4)
        )
    )
    config = _config(tmp_path, stub.url)
    cli, api = _dirs(tmp_path)
    common = ["-c", str(config), "--no-cache", "-q", "--column", "question=prompt"]
    assert main(["evaluate-flat", str(rows), *common, "-o", str(cli / "r.json")]) == 0
    run = evaluate_files(
        flat=rows,
        columns={"question": "prompt"},
        config=config,
        cache=False,
        output=api / "r.json",
    )
    assert (api / "r.json").read_bytes() == (cli / "r.json").read_bytes()
    assert run.plan.flat and run.plan.reference_source == str(rows)
    # the made-up retrieval step of a flat row gets no retrieval_answer_* metrics
    assert not [k for r in run.results for s in r["actual_steps"] for k in s if "answer_" in k]
    assert all("answer_f1" in r for r in run.results)  # judged


def test_a_dry_run_counts_the_calls_the_cli_prints(
    stub: StubServer, tmp_path: Path, capsys: Any
) -> None:
    ref, resp = _inputs(tmp_path, 6)
    config = _config(tmp_path, stub.url)
    assert main(["evaluate", str(ref), str(resp), "-c", str(config), "--dry-run", "-q"]) == 0
    printed = capsys.readouterr().out
    plan = plan_evaluation(ref, resp, config=config, dry_run=True)
    assert plan.questions == 6 and [s.name for s in plan.systems] == [None]
    (calls,) = plan.judge_calls()
    assert calls.total_calls > 0 and "answer_correctness" in calls.metrics
    assert printed.startswith(plan_table(calls) + "\n")
    run = run_plan(plan)
    assert run.systems == [] and run.dry_run
    assert stub.chat_requests == []
    # the estimate of the whole run from a sample: the sample's calls, scaled
    estimate = plan.estimate(sample=3)
    (sample,) = plan.judge_calls(sample=3)
    assert estimate.sampled == 3 and estimate.questions == 6
    assert estimate.calls == round(sample.total_calls * 2)
    assert plan.estimate(sample=100).calls == calls.total_calls
    assert stub.chat_requests == []


def test_bad_options_name_the_parameter(tmp_path: Path) -> None:
    ref, resp = _inputs(tmp_path, 2)
    cases: list[tuple[dict[str, Any], str]] = [
        ({"concurrency": 0}, "concurrency must be at least 1"),
        ({"max_cost": float("nan")}, "max_cost must be a positive, finite number"),
        ({"no_wait": True}, "no_wait goes with batch"),
        ({"batch": True, "cache": False}, "batch needs the cache"),
        ({"repeats": 0}, "repeats must be between 1 and"),
        ({"no_judge": True, "dry_run": True}, "dry_run plans the judge's calls"),
        ({"dry_run": True}, "dry_run needs a judge"),
        ({"systems": {"a": resp}}, "give either responses or systems, not both"),
        ({"by": ["colour"]}, "by colour: no question has this key"),
    ]
    for options, message in cases:
        with pytest.raises(QaEvalError, match=message):
            plan_evaluation(ref, resp, **options)
    with pytest.raises(QaEvalError, match="give responses or systems"):
        plan_evaluation(ref)
    with pytest.raises(QaEvalError, match="'a' is given twice"):
        plan_evaluation(ref, systems=[("a", resp), ("a", resp)])


def test_check_config_runs_before_any_input_is_read(tmp_path: Path) -> None:
    seen: list[Any] = []

    def refuse(config: Any) -> None:
        seen.append(config)
        raise QaEvalError("refused")

    with pytest.raises(QaEvalError, match="refused"):
        plan_evaluation(tmp_path / "missing.yaml", tmp_path / "missing.jsonl", check_config=refuse)
    assert len(seen) == 1 and seen[0].generation is None


def test_import_qa_eval_stays_light_and_the_api_names_resolve() -> None:
    code = (
        "import sys, qa_eval\n"
        "heavy = [m for m in ('numpy', 'rich', 'openai', 'pydantic', 'jinja2') "
        "if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "from qa_eval import EvalConfig, Run, build_report, compare_runs, evaluate_files, "
        "load_config, plan_evaluation, read_flat\n"
        "assert set(qa_eval.__all__) <= set(dir(qa_eval))\n"
        "for name in qa_eval.__all__: getattr(qa_eval, name)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_console_scripts_exist_and_answer_correctness_keeps_its_name(
    tmp_path: Path, capsys: Any
) -> None:
    import importlib
    import tomllib

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    for target in scripts.values():
        module, _, name = target.partition(":")
        assert callable(getattr(importlib.import_module(module), name)), target
    main_of = scripts["answer-correctness"].partition(":")
    command = getattr(importlib.import_module(main_of[0]), main_of[2])
    source = tmp_path / "in.tsv"
    source.write_text("Question\tAnswer\nq\ta\n", encoding="utf-8")
    assert command(["-i", str(source), "-o", str(tmp_path / "out.tsv")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("answer-correctness: error: ") and "'Reference answer'" in err
    assert command(["--in-file", str(source)]) == 2  # argparse's error, one line
    assert "the following arguments are required" in capsys.readouterr().err


def test_by_tags_are_copied_into_new_results_not_into_the_run_results() -> None:
    from qa_eval.run.question import Results
    from qa_eval.run.tags import with_tags

    reference = [
        {
            "template_id": "t",
            "questions": [{"id": "q1", "question_text": "Q?", "area": "north"}, {"id": "q2"}],
        }
    ]
    run = Results([{"question_id": "q1", "template_id": "t"}, {"question_id": "q2"}])
    run.signature = {"qa_eval_version": "x"}
    before = [dict(r) for r in run]
    tagged = with_tags(run, reference, ["area"])
    assert [dict(r) for r in run] == before  # the run's results are not changed
    assert tagged[0]["area"] == "north" and "area" not in tagged[1]
    assert isinstance(tagged, Results) and tagged.signature == run.signature
    assert with_tags(run, reference, ["template_id"]) is run  # nothing to copy: the same list
