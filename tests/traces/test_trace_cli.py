"""``qa-eval import`` and ``qa-eval evaluate`` on trace files, end to end, in process."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import yaml

from qa_eval.cli import run_command

DATA = Path(__file__).parent / "data"
REFERENCE = str(DATA / "reference.yaml")
EXPECTED = json.loads((DATA / "agent_run.expected.json").read_text(encoding="utf-8"))


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run_command(argv)
    return code, out.getvalue(), err.getvalue()


def _trace(question: str, calls: list[dict[str, Any]], answer: str, **top: Any) -> dict[str, Any]:
    """A chat trace in which each call is made and answered in turn."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
    for i, step in enumerate(calls):
        call = {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": step["name"], "arguments": json.dumps(step["args"])},
        }
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": step["output"]})
    messages.append({"role": "assistant", "content": answer})
    return {**top, "messages": messages}


def _traces(tmp_path: Path) -> Path:
    path = tmp_path / "traces.jsonl"
    runs = [
        _trace(
            "Who wrote Dune, and when was it first published?",
            EXPECTED["actual_steps"],
            EXPECTED["actual_answer"],
            usage={"prompt_tokens": 120, "completion_tokens": 40},
        ),
        _trace("who wrote   SOLARIS?", [], "Stanislaw Lem."),
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in runs), encoding="utf-8")
    return path


def _results(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_import_then_evaluate_equals_evaluate_on_the_traces(tmp_path: Path) -> None:
    traces = _traces(tmp_path)
    responses = tmp_path / "responses.jsonl"
    code, out, err = _run(["import", str(traces), "-r", REFERENCE, "-o", str(responses)])
    assert code == 0, err
    assert "traces read: 2 (openai-chat 2) from 1 file" in out
    assert "  calls without a status: 3" in out
    assert "questions found: 1 by id, 1 by text" not in out  # no explicit ids here
    assert "questions found: 2 by text" in out
    imported = _results(responses)
    assert [r["question_id"] for r in imported] == ["q1", "q2"]
    assert imported[0]["total_tokens"] == 160

    via_file, direct = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    code, _, err = _run(
        ["evaluate", REFERENCE, str(responses), "--no-judge", "-q", "-o", str(via_file)]
    )
    assert code == 0, err
    code, _, err = _run(["evaluate", REFERENCE, str(traces), "--no-judge", "-q", "-o", str(direct)])
    assert code == 0, err
    assert (
        "note: traces: 2 read (openai-chat 2), 3 tool calls; lost: 3 calls without a status" in err
    )
    assert _results(via_file) == _results(direct)
    assert _results(direct)[0]["steps_score"] == 1.0  # the search step matches the reference's

    plain = yaml.safe_load((tmp_path / "a.signature.yaml").read_text(encoding="utf-8"))
    from_traces = yaml.safe_load((tmp_path / "b.signature.yaml").read_text(encoding="utf-8"))
    assert "traces" not in plain  # a responses file's signature is as it was
    assert from_traces["traces"]["losses"] == {"status": 3}
    assert from_traces["traces"]["per_trace"] == {
        "q1": {"traces": 1, "tool_calls": 3, "losses": {"status": 3}}
    }
    assert {k: v for k, v in from_traces.items() if k != "traces"}.keys() == plain.keys()


def test_systems_of_traces_and_several_trace_files(tmp_path: Path) -> None:
    traces = _traces(tmp_path)
    lines = traces.read_text(encoding="utf-8").splitlines()
    first, second = tmp_path / "one.jsonl", tmp_path / "two.json"
    first.write_text(lines[0] + "\n", encoding="utf-8")
    second.write_text(lines[1], encoding="utf-8")
    out = tmp_path / "r.jsonl"
    code, _, err = _run(
        ["evaluate", REFERENCE, str(first), str(second), "--no-judge", "-q", "-o", str(out)]
    )
    assert code == 0, err
    assert [r["question_id"] for r in _results(out)] == ["q1", "q2"]
    code, _, err = _run(
        [
            "evaluate",
            REFERENCE,
            "--system",
            f"a={traces}",
            "--system",
            f"b={first}",
            "--no-judge",
            "-q",
            "-o",
            str(tmp_path / "s.jsonl"),
        ]
    )
    assert code == 0, err
    assert len(_results(tmp_path / "s.b.jsonl")) == 2


def test_bad_commands_are_one_line(tmp_path: Path) -> None:
    traces = _traces(tmp_path)
    out = tmp_path / "r.jsonl"
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    responses = tmp_path / "resp.jsonl"
    responses.write_text('{"question_id": "q1", "actual_answer": "x"}\n', encoding="utf-8")
    cases = [
        (["import", str(traces), "--strict", "-o", str(out)], "strict: the traces lost"),
        (["import", str(empty), "-o", str(out)], "no traces in"),
        (["aggregate", str(traces)], "looks like agent traces"),
        (
            ["evaluate", REFERENCE, str(traces), str(responses), "--no-judge"],
            "several files must all be agent traces",
        ),
    ]
    for argv, words in cases:
        code, _, err = _run(argv)
        assert code == 2 and err.count("\n") == 1 and words in err, (argv, err)
    assert not out.exists() and not (tmp_path / "r.jsonl.partial").exists()


def test_a_ragas_file_writes_its_reference_side_and_evaluates_against_it(tmp_path: Path) -> None:
    samples = [
        {
            "user_input": [
                {"type": "human", "content": "Weather in Paris?"},
                {
                    "type": "ai",
                    "content": "",
                    "tool_calls": [{"name": "weather", "args": {"city": "Paris"}}],
                },
                {"type": "tool", "content": "sunny"},
                {"type": "ai", "content": "Sunny."},
            ],
            "reference": "It is sunny.",
            "reference_tool_calls": [{"name": "weather", "args": {"city": "Paris"}}],
            "question_id": "w1",
        },
        {
            "user_input": [
                {"type": "human", "content": "And Rome?"},
                {"type": "ai", "content": "No idea."},
            ],
            "reference_tool_calls": [{"name": "weather", "args": {"city": "Rome"}}],
            "question_id": "w2",
        },
    ]
    traces = tmp_path / "ragas.jsonl"
    traces.write_text("".join(json.dumps(s) + "\n" for s in samples), encoding="utf-8")
    reference, responses = tmp_path / "ref.yaml", tmp_path / "resp.jsonl"
    code, out, err = _run(
        ["import", str(traces), "-o", str(responses), "--write-reference", str(reference)]
    )
    assert code == 0, err
    assert f"wrote 2 reference questions to {reference}" in out
    written = yaml.safe_load(reference.read_text(encoding="utf-8"))
    assert written[0]["questions"][0] == {
        "id": "w1",
        "question_text": "Weather in Paris?",
        "reference_answer": "It is sunny.",
        "reference_steps": [[{"name": "weather", "args": {"city": "Paris"}}]],
    }
    imported = responses.read_text(encoding="utf-8")
    assert "reference_steps" not in imported and "It is sunny." not in imported  # never in one
    results = tmp_path / "results.jsonl"
    code, _, err = _run(
        ["evaluate", str(reference), str(responses), "--no-judge", "-q", "-o", str(results)]
    )
    assert code == 0, err
    assert [r["steps_score"] for r in _results(results)] == [1.0, 0.0]
    code, _, err = _run(
        [
            "import",
            str(_traces(tmp_path)),
            "-o",
            str(tmp_path / "x.jsonl"),
            "--write-reference",
            str(tmp_path / "x.yaml"),
        ]
    )
    assert code == 2 and "no trace carries a reference side" in err
    assert not (tmp_path / "x.jsonl").exists()


def test_evaluate_files_takes_trace_files_from_python(tmp_path: Path) -> None:
    from qa_eval.run.files import evaluate_files

    traces = _traces(tmp_path)
    run = evaluate_files(REFERENCE, [traces], no_judge=True)
    assert [r["question_id"] for r in run.results] == ["q1", "q2"]
    assert run.systems[0].signature["traces"]["formats"] == {"openai-chat": 2}


def test_import_writes_yaml_and_json_too(tmp_path: Path) -> None:
    traces = _traces(tmp_path)
    for suffix in (".yaml", ".json"):
        out = tmp_path / f"responses{suffix}"
        code, _, err = _run(["import", str(traces), "-o", str(out)])
        assert code == 0, err
        written = yaml.safe_load(out.read_text(encoding="utf-8"))
        assert [len(r["actual_steps"]) for r in written] == [3, 0]
