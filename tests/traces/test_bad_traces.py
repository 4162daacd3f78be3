"""Bad input in every format through ``qa-eval import``: a truncated file, an empty one, binary
garbage, hostile text in every string, a span tree with a cycle, a tool result whose call is
missing, ids that repeat. Each ends in exit 2 with one line naming the file, or exit 0 with the
loss counted in the report and the responses — never a traceback, never a silent 0. The files are
the shared agent run of ``data/agent_run.expected.json`` in each format (the builders of
``test_trace_formats.py`` and ``test_tree_formats.py``)."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import test_trace_formats as messages
import test_tree_formats as trees

from qa_eval.cli import run_command

BUILDERS: dict[str, Callable[[], Any]] = {
    "openai-chat": messages.chat_trace,
    "openai-responses": messages.responses_trace,
    "anthropic": messages.anthropic_trace,
    "ragas": messages.ragas_sample,
    "otlp-json": trees.genai_request,
    "langfuse": trees.langfuse_export,
    "langsmith": trees.langsmith_tree,
}
HOSTILE = "<script>alert(1)</script> {{7*7}} ${x} \u2028\x1b[31m' OR 1=1; --\n\x00"


def _cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run_command(argv)
    return code, out.getvalue(), err.getvalue()


def _import(path: Path, *extra: str) -> tuple[int, str, str, list[dict[str, Any]]]:
    """Import ``path``; the exit code, what was printed and the responses written."""
    out = path.with_name(path.name + ".out.jsonl")
    code, stdout, err = _cli(["import", str(path), "-o", str(out), *extra])
    assert code in (0, 2), err
    written = []
    if code == 2:
        assert err.count("\n") == 1 and err.startswith("qa-eval: error: "), err
        assert path.name in err, err
        assert "Traceback" not in err
    elif out.exists():
        lines = out.read_text(encoding="utf-8").split("\n")  # not splitlines: U+2028 is data
        written = [json.loads(line) for line in lines if line]
    return code, stdout, err, written


def _file(tmp_path: Path, fmt: str, data: Any) -> Path:
    tmp_path.mkdir(exist_ok=True)
    path = tmp_path / f"{fmt}.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.fixture(params=sorted(BUILDERS))
def fmt(request: pytest.FixtureRequest) -> str:
    return request.param  # type: ignore[no-any-return]


def test_truncated_empty_and_garbage_files_are_one_line(tmp_path: Path, fmt: str) -> None:
    data = json.dumps(BUILDERS[fmt]()).encode()
    cases = {
        "truncated.json": data[: len(data) // 2],
        "truncated.jsonl": data + b"\n" + data[: len(data) // 3],
        "empty.json": b"",
        "garbage.bin": os.urandom(64) + b"\x00\xff\xfe" + os.urandom(64),
    }
    for name, raw in cases.items():
        path = tmp_path / f"{fmt}-{name}"
        path.write_bytes(raw)
        for forced in ([], ["--format", fmt]):
            code, _, _, _ = _import(path, *forced)
            assert code == 2, (name, forced)


def test_garbage_as_otlp_proto_is_one_line(tmp_path: Path) -> None:
    pytest.importorskip("opentelemetry.proto", reason="needs opentelemetry-proto (the otlp extra)")
    for name, raw in {
        "garbage.pb": b"\x0a\xff\xff\xff\xff\x0f" + os.urandom(100),
        "empty.pb": b"",
        "text.pb": json.dumps(trees.genai_request()).encode(),
    }.items():
        path = tmp_path / name
        path.write_bytes(raw)
        code, stdout, err, _ = _import(path, "--format", "otlp-proto")
        assert code == 2 or "traces read: 0" in stdout, (name, err)


def _replace_strings(value: Any, keep: set[str]) -> Any:
    """Every string value hostile, but for the structural ones (``keep``: kinds, ids, names)."""
    if isinstance(value, dict):
        return {k: v if k in keep else _replace_strings(v, keep) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace_strings(v, keep) for v in value]
    if isinstance(value, str):
        try:  # JSON in a string (OTLP's message attributes): hostile inside, still JSON
            inner = json.loads(value)
        except ValueError:
            return value + HOSTILE
        if isinstance(inner, (dict, list)):
            return json.dumps(_replace_strings(inner, keep))
        return value + HOSTILE
    return value


STRUCTURE = {
    "role", "type", "id", "call_id", "tool_call_id", "tool_use_id", "name", "traceId", "spanId",
    "parentSpanId", "key", "startTimeUnixNano", "endTimeUnixNano", "parentObservationId",
    "startTime", "endTime", "run_type", "trace_id", "parent_run_id", "start_time", "end_time",
    "dotted_order", "lc", "status", "level", "question_id", "model", "schemaUrl", "intValue",
    "arguments", "input", "function",
}  # fmt: skip


def test_hostile_text_comes_out_as_it_went_in(tmp_path: Path, fmt: str) -> None:
    data = _replace_strings(BUILDERS[fmt](), STRUCTURE)
    code, _, err, written = _import(_file(tmp_path, fmt, data))
    assert code == 0, err
    (response,) = written
    text = json.dumps(response)
    assert json.dumps(HOSTILE)[1:-1] in text  # kept, escaped only by JSON
    assert response["actual_answer"].endswith(HOSTILE)


def test_a_result_whose_call_is_missing_is_counted(tmp_path: Path, fmt: str) -> None:
    data = BUILDERS[fmt]()
    if fmt == "openai-chat":
        data["messages"].insert(3, {"role": "tool", "tool_call_id": "call_9", "content": "?"})
    elif fmt == "openai-responses":
        data["input"].append({"type": "function_call_output", "call_id": "call_9", "output": "?"})
    elif fmt == "anthropic":
        block = {"type": "tool_result", "tool_use_id": "call_9", "content": "?"}
        data["messages"][2]["content"].append(block)
    elif fmt == "ragas":
        data["user_input"].append({"type": "tool", "content": "?"})
    elif fmt == "otlp-json":  # a tool reply sent to the last model call, for a call never made
        spans = data["resourceSpans"][0]["scopeSpans"][0]["spans"]
        chat = next(s for s in spans if s["spanId"] == trees._span_id("chat", 2))
        attr = next(a for a in chat["attributes"] if a["key"] == "gen_ai.input.messages")
        history = json.loads(attr["value"]["stringValue"])
        history.append(
            {
                "role": "tool",
                "parts": [{"type": "tool_call_response", "id": "call_9", "response": "?"}],
            }
        )
        attr["value"]["stringValue"] = json.dumps(history)
    elif fmt == "langfuse":
        generation = next(o for o in data["observations"] if o["id"] == "o-gen2")
        generation["input"].append({"role": "tool", "tool_call_id": "call_9", "content": "?"})
    else:
        llm = data["child_runs"][-1]
        reply = trees._lc("ToolMessage", content="?", tool_call_id="call_9")
        llm["inputs"]["messages"][0].append(reply)
    before = _unlinked(_import(_file(tmp_path / "base", fmt, BUILDERS[fmt]()))[1])
    code, stdout, err, written = _import(_file(tmp_path, fmt, data))
    assert code == 0, err
    assert _unlinked(stdout) == before + 1  # ragas' sample already has 2 (never by position)
    assert len(written[0]["actual_steps"]) == 3  # the orphan is no step of its own
    _, _, err, _ = _import(_file(tmp_path, fmt, data), "--strict")
    assert err.startswith("qa-eval: error: strict: ") and "whose call is missing" in err
    assert f"{fmt}.json" in err  # names the file (and the record, where one record is the trace)


def _unlinked(report: str) -> int:
    return int(report.split("tool results whose call is missing: ")[1].split()[0])


TREES = ("otlp-json", "langfuse", "langsmith")


def _records(fmt: str, data: Any) -> tuple[list[dict[str, Any]], str, str]:
    """The records of a tree file, with the names of their id and parent fields."""
    if fmt == "otlp-json":
        return data["resourceSpans"][0]["scopeSpans"][0]["spans"], "spanId", "parentSpanId"
    if fmt == "langfuse":
        return data["observations"], "id", "parentObservationId"
    return data["child_runs"], "id", "parent_run_id"


@pytest.mark.parametrize("tree", TREES)
def test_a_cycle_is_cut_and_counted(tmp_path: Path, tree: str) -> None:
    data = BUILDERS[tree]()
    records, key, parent = _records(tree, data)
    if tree == "langsmith":  # flat runs: the root's parent is its last child
        runs = [dict(data, child_runs=[]), *records]
        runs[0][parent] = runs[-1][key]
        data = runs
    else:
        records[0][parent] = records[-1][key]
        records[-1][parent] = records[0][key]
    code, stdout, err, written = _import(_file(tmp_path, tree, data))
    assert code == 0, err
    assert "records whose parent is missing or in a cycle (read as roots): 0" not in stdout
    assert [s["name"] for s in written[0]["actual_steps"]] == ["search", "search", "fetch"]


@pytest.mark.parametrize("tree", TREES)
def test_repeated_ids_keep_the_first_and_are_counted(tmp_path: Path, tree: str) -> None:
    data = BUILDERS[tree]()
    records, _, _ = _records(tree, data)
    twin = copy.deepcopy(records[-1])
    records.append(twin)
    code, stdout, err, written = _import(_file(tmp_path, tree, data))
    assert code == 0, err
    assert "records whose id repeats (the first kept): 1" in stdout
    assert len(written[0]["actual_steps"]) == 3


@pytest.mark.parametrize("fmt_", ["openai-chat", "openai-responses", "anthropic"])
def test_repeated_call_ids_take_their_results_in_order(tmp_path: Path, fmt_: str) -> None:
    """Message formats have no record ids; a call id given twice links its results in order."""
    data = json.loads(json.dumps(BUILDERS[fmt_]()).replace('"call_2"', '"call_1"'))
    code, _, err, written = _import(_file(tmp_path, fmt_, data))
    assert code == 0, err
    steps = written[0]["actual_steps"]
    assert [s["id"] for s in steps] == ["call_1", "call_1", "call_3"]
    assert all("output" in s for s in steps)
