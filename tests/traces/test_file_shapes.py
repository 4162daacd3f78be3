"""JSON Lines or one JSON document is told by a trace file's content, whatever its name, for every
format: the collector's file exporter writes one ``ExportTraceServiceRequest`` per line into the
``.json`` file its configuration names, and a document written over several lines may be named
``.jsonl``. Through ``read_traces`` and ``qa-eval import``."""

from __future__ import annotations

import contextlib
import copy
import gzip
import io
import json
from pathlib import Path
from typing import Any

import pytest
import test_langfuse
import test_langsmith
from otlp_files import OTHER, TRACE, request, span

from qa_eval.cli import run_command
from qa_eval.traces import read_traces


def _chat(qid: str) -> dict[str, Any]:
    return {
        "question_id": qid,
        "messages": [
            {"role": "user", "content": f"question {qid}"},
            {"role": "assistant", "content": f"answer {qid}"},
        ],
    }


def _otlp(qid: str, trace: str) -> dict[str, Any]:
    root = {"gen_ai.operation.name": "invoke_agent", "question_id": qid}
    tool = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "search",
        "gen_ai.tool.call.id": f"call_{qid}",
        "gen_ai.tool.call.arguments": '{"q": "x"}',
        "gen_ai.tool.call.result": "found",
    }
    return request(
        span("a" * 15 + qid[-1], None, "agent", root, 0, 9, trace=trace),
        span(
            "b" * 15 + qid[-1], "a" * 15 + qid[-1], "execute_tool search", tool, 1, 2, trace=trace
        ),
    )


def _langfuse(qid: str) -> dict[str, Any]:
    text = json.dumps(test_langfuse.export()).replace('"t1"', f'"t-{qid}"')
    return {**json.loads(text), "metadata": {"question_id": qid}}


def _records(fmt: str) -> list[Any]:
    """Two records of ``fmt``: two traces (LangSmith: the flat runs of one trace)."""
    if fmt == "openai-chat":
        return [_chat("q1"), _chat("q2")]
    if fmt == "openai-responses":
        return [
            {
                "question_id": qid,
                "input": f"question {qid}",
                "output": [{"type": "message", "role": "assistant", "content": f"a {qid}"}],
            }
            for qid in ("q1", "q2")
        ]
    if fmt == "anthropic":
        return [
            {
                "question_id": qid,
                "system": "be brief",
                "messages": [{"role": "user", "content": f"question {qid}"}],
            }
            for qid in ("q1", "q2")
        ]
    if fmt == "ragas":
        return [
            {"question_id": qid, "user_input": [{"type": "human", "content": qid}]}
            for qid in ("q1", "q2")
        ]
    if fmt == "otlp-json":
        return [_otlp("q1", TRACE), _otlp("q2", OTHER)]
    if fmt == "langfuse":
        return [_langfuse("q1"), _langfuse("q2")]
    assert fmt == "langsmith"
    return copy.deepcopy(test_langsmith.flat())


FORMATS = ("openai-chat", "openai-responses", "anthropic", "ragas", "otlp-json", "langfuse")


def _plain(responses: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Responses without where they were read (line or record numbers differ by shape)."""
    return [{k: v for k, v in r.items() if k != "trace"} for r in responses]


def _import(path: Path, out: Path) -> tuple[int, str]:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        code = run_command(["import", str(path), "-o", str(out)])
    return code, printed.getvalue()


@pytest.mark.parametrize("fmt", [*FORMATS, "langsmith"])
@pytest.mark.parametrize("name", ["spans.json", "spans.txt", "spans.json.gz"])
def test_json_lines_in_a_file_of_any_name(tmp_path: Path, fmt: str, name: str) -> None:
    records = _records(fmt)
    lines = "".join(json.dumps(r) + "\n" for r in records).encode()
    reference = tmp_path / "reference.jsonl"
    reference.write_bytes(lines)
    expected, _ = read_traces(reference)
    assert len(expected) == (1 if fmt == "langsmith" else 2)
    path = tmp_path / name
    if name.endswith(".gz"):
        path.write_bytes(gzip.compress(lines))
    else:
        path.write_bytes(lines)
    got, report = read_traces(path)
    assert _plain(got) == _plain(expected)
    assert dict(report.formats) == {fmt: len(expected)}
    code, printed = _import(path, tmp_path / "out.jsonl")
    assert code == 0, printed
    written = (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()
    assert _plain([json.loads(line) for line in written]) == _plain(expected)


@pytest.mark.parametrize("fmt", FORMATS)
def test_one_document_over_several_lines_named_jsonl(tmp_path: Path, fmt: str) -> None:
    record = _records(fmt)[0]
    compact = tmp_path / "one.json"
    compact.write_text(json.dumps(record), encoding="utf-8")
    expected, _ = read_traces(compact)
    pretty = tmp_path / "pretty.jsonl"
    pretty.write_text(json.dumps(record, indent=2), encoding="utf-8")
    got, _ = read_traces(pretty)
    assert _plain(got) == _plain(expected) and len(got) == 1


def test_a_damaged_json_lines_file_still_names_its_line(tmp_path: Path) -> None:
    """Content that is neither one document nor JSON Lines keeps the error of the shape it
    looks like: the first bad line of JSON Lines, the document's place otherwise."""
    lines = tmp_path / "spans.json"
    lines.write_text(json.dumps(_chat("q1")) + "\n" + '{"messages": [\n', encoding="utf-8")
    code, printed = _import(lines, tmp_path / "out.jsonl")
    assert code == 2 and "spans.json: line 2" in printed and "Traceback" not in printed
    document = tmp_path / "doc.jsonl"
    document.write_text('{\n  "messages": [\n', encoding="utf-8")
    code, printed = _import(document, tmp_path / "out.jsonl")
    assert code == 2 and "doc.jsonl: line 1" in printed
    assert not (tmp_path / "out.jsonl").exists()
