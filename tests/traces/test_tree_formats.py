"""Each tree-shaped format imports the agent run of ``data/agent_run.expected.json`` to the same
response as the hand-made one, less what the format cannot record and plus what it records beyond
it (``expected_for``): OTLP/JSON in the current GenAI conventions and in OpenInference's, the
same GenAI request as protobuf (encoded by ``opentelemetry-proto``), a Langfuse export and a
LangSmith run tree. Each file goes through ``read_traces`` and through ``qa-eval import``.

The run: the model plans ``search`` twice in its first reply (``call_1``, ``call_2``), ``fetch``
in its second (``call_3``, which fails with ``HTTP 404: not found``), and answers in its third;
its three model calls use 30+10, 40+10 and 50+20 tokens; the agent's root record lasts 10 s.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest
import tree_files
from otlp_files import TRACE, request, span

from qa_eval.cli import run_command
from qa_eval.traces import read_traces
from qa_eval.traces.formats import detect_format

DATA = Path(__file__).parent / "data"
EXPECTED = json.loads((DATA / "agent_run.expected.json").read_text(encoding="utf-8"))
QUESTION = "Who wrote Dune, and when was it first published?"
ANSWER = EXPECTED["actual_answer"]
STEPS = EXPECTED["actual_steps"]
ARGS = [json.dumps(s["args"]) for s in STEPS]
OUTPUTS = [s["output"] for s in STEPS]
ERROR = STEPS[2]["error"]
TOKENS = [(30, 10), (40, 10), (50, 20)]
PLANS = [[0, 1], [2], []]
"""The calls (indexes into ``STEPS``) each of the three model replies plans."""
TOOL_TIMES = [(3, 4), (3.5, 4.5), (6, 7)]
"""When each tool ran (seconds into the run); model calls at 1-2, 5-6 and 8-9."""
CHAT_TIMES = [(1, 2), (5, 6), (8, 9)]


def expected_for(fmt: str) -> dict[str, Any]:
    """The shared expected response as format ``fmt`` records it: every tree format records the
    run's duration (its root's), which the hand-made response does not have."""
    want = copy.deepcopy(EXPECTED)
    want["elapsed_sec"] = 10.0
    if fmt == "langfuse":
        want["elapsed_sec"] = 10.5  # the trace's own ``latency`` (it wins over the root's span)
    return want


def _without_trace(response: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in response.items() if k != "trace"}


def _cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run_command(argv)
    return code, out.getvalue(), err.getvalue()


def check_imports(tmp_path: Path, name: str, data: bytes, fmt: str) -> tuple[dict[str, Any], Any]:
    """``data`` (a file named ``name``) reads to the expected response of ``fmt``, through
    ``read_traces`` and through ``qa-eval import``; the response's ``trace`` and the report."""
    path = tmp_path / name
    path.write_bytes(data)
    responses, report = read_traces(path)
    assert [_without_trace(r) for r in responses] == [expected_for(fmt)]
    assert responses[0]["trace"]["format"] == fmt
    assert report.fidelity.tool_calls == 3 and report.fidelity.lossless
    out = tmp_path / f"{name}.responses.jsonl"
    code, stdout, err = _cli(["import", str(path), "-o", str(out)])
    assert code == 0, err
    assert "tool calls: 3" in stdout
    written = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert written == json.loads(json.dumps(responses))
    return responses[0]["trace"], report


# otlp-json: the current GenAI conventions ---------------------------------------------------------
ROOT = "a0a0a0a0a0a0a0a0"


def _span_id(kind: str, i: int) -> str:
    return f"{kind}{i}".ljust(16, "0").encode().hex()[:16]


def genai_request() -> dict[str, Any]:
    """The run as the GenAI semantic conventions (1.37) write it: an ``invoke_agent`` root, a
    ``chat`` span per model call (messages as parts) and an ``execute_tool`` span per tool."""
    spans = [span(ROOT, None, "invoke_agent books", _root_genai(), 0, 10)]
    history: list[dict[str, Any]] = [
        {"role": "user", "parts": [{"type": "text", "content": QUESTION}]}
    ]
    for n, planned in enumerate(PLANS):
        if planned:
            parts = [
                {
                    "type": "tool_call",
                    "id": STEPS[i]["id"],
                    "name": STEPS[i]["name"],
                    "arguments": STEPS[i]["args"],
                }
                for i in planned
            ]
        else:
            parts = [{"type": "text", "content": ANSWER}]
        output = [{"role": "assistant", "parts": parts, "finish_reason": "stop"}]
        attrs = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.input.messages": json.dumps(history),
            "gen_ai.output.messages": json.dumps(output),
            "gen_ai.usage.input_tokens": TOKENS[n][0],
            "gen_ai.usage.output_tokens": TOKENS[n][1],
        }
        start, end = CHAT_TIMES[n]
        spans.append(span(_span_id("chat", n), ROOT, "chat gpt-4o-mini", attrs, start, end))
        history = history + output
        for i in planned:
            step = STEPS[i]
            history.append(
                {
                    "role": "tool",
                    "parts": [
                        {"type": "tool_call_response", "id": step["id"], "response": step["output"]}
                    ],
                }
            )
            tool = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": step["name"],
                "gen_ai.tool.call.id": step["id"],
                "gen_ai.tool.call.arguments": ARGS[i],
                "gen_ai.tool.call.result": step["output"],
            }
            start, end = TOOL_TIMES[i]
            error = step.get("error")
            spans.append(
                _span_at(
                    _span_id("tool", i),
                    ROOT,
                    f"execute_tool {step['name']}",
                    tool,
                    start,
                    end,
                    error,
                )
            )
    document = request(*spans)
    document["resourceSpans"][0]["scopeSpans"][0]["schemaUrl"] = (
        "https://opentelemetry.io/schemas/1.37.0"
    )
    return document


def _root_genai() -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "books",
        "question_id": "q1",
    }


def _span_at(
    span_id: str,
    parent: str,
    name: str,
    attrs: dict[str, Any],
    start: float,
    end: float,
    error: str | None,
) -> dict[str, Any]:
    """A span at fractional seconds (``otlp_files.span`` takes whole ones)."""
    record = span(span_id, parent, name, attrs, 0, 0, error=error)
    base = 1_700_000_000_000_000_000
    record["startTimeUnixNano"] = str(base + int(start * 1_000_000_000))
    record["endTimeUnixNano"] = str(base + int(end * 1_000_000_000))
    return record


def test_otlp_json_genai_conventions(tmp_path: Path) -> None:
    document = genai_request()
    assert detect_format(document) == "otlp-json"
    trace, report = check_imports(
        tmp_path, "genai.json", json.dumps(document).encode(), "otlp-json"
    )
    assert (trace["trace_id"], trace["root_span_id"]) == (TRACE, ROOT)
    assert set(report.fidelity.conventions) == {"gen_ai 1.37.0"}


# otlp-json: OpenInference -------------------------------------------------------------------------
def openinference_request() -> dict[str, Any]:
    """The run as OpenInference writes it: an ``AGENT`` root with the question and answer, ``LLM``
    spans with flattened messages, ``TOOL`` spans without a call id (linked to the plan by name
    and order under the same parent)."""
    root = {
        "openinference.span.kind": "AGENT",
        "input.value": QUESTION,
        "output.value": ANSWER,
        "metadata": json.dumps({"question_id": "q1"}),
    }
    spans = [span(ROOT, None, "agent", root, 0, 10)]
    for n, planned in enumerate(PLANS):
        attrs: dict[str, Any] = {
            "openinference.span.kind": "LLM",
            "llm.model_name": "gpt-4o-mini",
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": QUESTION,
            "llm.output_messages.0.message.role": "assistant",
            "llm.token_count.prompt": TOKENS[n][0],
            "llm.token_count.completion": TOKENS[n][1],
            "llm.token_count.total": sum(TOKENS[n]),
        }
        prefix = "llm.output_messages.0.message"
        for m, i in enumerate(planned):
            call = f"{prefix}.tool_calls.{m}.tool_call"
            attrs[f"{call}.id"] = STEPS[i]["id"]
            attrs[f"{call}.function.name"] = STEPS[i]["name"]
            attrs[f"{call}.function.arguments"] = ARGS[i]
        if not planned:
            attrs[f"{prefix}.content"] = ANSWER
        start, end = CHAT_TIMES[n]
        spans.append(span(_span_id("llm", n), ROOT, "ChatCompletion", attrs, start, end))
        for i in planned:
            step = STEPS[i]
            tool = {
                "openinference.span.kind": "TOOL",
                "tool.name": step["name"],
                "input.value": ARGS[i],
                "output.value": step["output"],
            }
            start, end = TOOL_TIMES[i]
            spans.append(
                _span_at(
                    _span_id("tool", i), ROOT, step["name"], tool, start, end, step.get("error")
                )
            )
    return request(*spans)


def test_otlp_json_openinference(tmp_path: Path) -> None:
    document = openinference_request()
    assert detect_format(document) == "otlp-json"
    trace, report = check_imports(
        tmp_path, "oi.jsonl", (json.dumps(document) + "\n").encode(), "otlp-json"
    )
    assert (trace["trace_id"], trace["root_span_id"]) == (TRACE, ROOT)
    assert set(report.fidelity.conventions) == {"openinference"}


# otlp-proto --------------------------------------------------------------------------------------
def test_otlp_proto_genai_conventions(tmp_path: Path) -> None:
    pytest.importorskip(
        "opentelemetry.proto.collector.trace.v1.trace_service_pb2",
        reason="needs opentelemetry-proto (the otlp extra)",
    )
    from google.protobuf.json_format import ParseDict
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    document = genai_request()
    for resource in document["resourceSpans"]:  # ids are bytes in protobuf
        for scope in resource["scopeSpans"]:
            for record in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in record:
                        record[key] = base64.b64encode(bytes.fromhex(record[key])).decode()
    data = ParseDict(document, ExportTraceServiceRequest()).SerializeToString()
    trace, _ = check_imports(tmp_path, "genai.pb", data, "otlp-proto")
    assert (trace["trace_id"], trace["root_span_id"]) == (TRACE, ROOT)


# langfuse ----------------------------------------------------------------------------------------
def _at(second: float) -> str:
    return f"2026-01-02T03:04:{second:06.3f}Z"


def _observation(
    oid: str, kind: str, parent: str | None, times: tuple[float, float], **fields: Any
) -> dict[str, Any]:
    start, end = _at(times[0]), _at(times[1])
    return tree_files.observation(oid, kind, parent, start, end, "lf-trace-1", **fields)


def _chat_call(i: int) -> dict[str, Any]:
    step = STEPS[i]
    return {
        "id": step["id"],
        "type": "function",
        "function": {"name": step["name"], "arguments": ARGS[i]},
    }


def langfuse_export() -> dict[str, Any]:
    """The run as Langfuse's public API gives a trace: generations with Chat Completions messages,
    tool observations (the first carries its call id in ``metadata``, the others are linked by
    name and order), the failed fetch at ``level: ERROR``."""
    observations = [_observation("o-root", "AGENT", None, (0, 10), name="books-agent")]
    history: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
    for n, planned in enumerate(PLANS):
        output: dict[str, Any] = (
            {"role": "assistant", "content": None, "tool_calls": [_chat_call(i) for i in planned]}
            if planned
            else {"role": "assistant", "content": ANSWER}
        )
        usage = {"input": TOKENS[n][0], "output": TOKENS[n][1], "total": sum(TOKENS[n])}
        observations.append(
            _observation(
                f"o-gen{n}",
                "GENERATION",
                "o-root",
                CHAT_TIMES[n],
                model="gpt-4o-mini",
                input=list(history),
                output=output,
                usageDetails=usage,
            )
        )
        history.append(output)
        for i in planned:
            step = STEPS[i]
            fields: dict[str, Any] = {
                "name": step["name"],
                "input": step["args"],
                "output": step["output"],
            }
            if i == 0:
                fields["metadata"] = {"tool_call_id": step["id"]}
            if step.get("error"):
                fields.update(level="ERROR", statusMessage=step["error"])
            observations.append(
                _observation(f"o-tool{i}", "TOOL", "o-root", TOOL_TIMES[i], **fields)
            )
            history.append({"role": "tool", "tool_call_id": step["id"], "content": step["output"]})
    return {
        "id": "lf-trace-1",
        "name": "books-agent",
        "timestamp": _at(0),
        "input": {"question": QUESTION},
        "output": ANSWER,
        "metadata": {"question_id": "q1"},
        "latency": 10.5,
        "observations": observations,
    }


def test_langfuse(tmp_path: Path) -> None:
    export = langfuse_export()
    assert detect_format(export) == "langfuse"
    trace, _ = check_imports(tmp_path, "langfuse.json", json.dumps(export).encode(), "langfuse")
    assert (trace["trace_id"], trace["root_span_id"]) == ("lf-trace-1", "o-root")


# langsmith ---------------------------------------------------------------------------------------
LS_TRACE = "0a000000-0000-4000-8000-000000000000"


def _ls_id(n: int) -> str:
    return f"0a000000-0000-4000-8000-{n:012d}"


_lc = tree_files.lc


def _run(
    n: int, name: str, run_type: str, times: tuple[float, float], **fields: Any
) -> dict[str, Any]:
    start = _at(times[0]).replace("Z", "000+00:00")
    end = _at(times[1]).replace("Z", "000+00:00")
    parent = None if n == 0 else LS_TRACE
    order = f"20260102T0304{int(times[0] * 1000):05d}000Z{_ls_id(n)}"
    return tree_files.run(_ls_id(n), name, run_type, start, end, parent, LS_TRACE, order, **fields)


def langsmith_tree() -> dict[str, Any]:
    """The run as LangSmith's SDK gives a run tree: an ``AgentExecutor`` chain, ``llm`` runs with
    LangChain's serialised messages, ``tool`` runs whose outputs are ``ToolMessage``s (the failed
    one with ``error``)."""
    root = _run(
        0,
        "AgentExecutor",
        "chain",
        (0, 10),
        inputs={"input": QUESTION},
        outputs={"output": ANSWER},
        extra={"metadata": {"question_id": "q1"}},
    )
    history = [_lc("HumanMessage", content=QUESTION)]
    number = 1
    for n, planned in enumerate(PLANS):
        calls = [
            {
                "name": STEPS[i]["name"],
                "args": STEPS[i]["args"],
                "id": STEPS[i]["id"],
                "type": "tool_call",
            }
            for i in planned
        ]
        message = _lc("AIMessage", content="" if planned else ANSWER, tool_calls=calls)
        usage = {
            "prompt_tokens": TOKENS[n][0],
            "completion_tokens": TOKENS[n][1],
            "total_tokens": sum(TOKENS[n]),
        }
        root["child_runs"].append(
            _run(
                number,
                "ChatOpenAI",
                "llm",
                CHAT_TIMES[n],
                inputs={"messages": [list(history)]},
                outputs={
                    "generations": [[{"text": "", "message": message}]],
                    "llm_output": {"token_usage": usage},
                },
                extra={"invocation_params": {"model": "gpt-4o-mini"}},
            )
        )
        number += 1
        history.append(message)
        for i in planned:
            step = STEPS[i]
            status = "error" if step.get("error") else "success"
            reply = _lc(
                "ToolMessage", content=step["output"], tool_call_id=step["id"], status=status
            )
            fields: dict[str, Any] = {
                "inputs": {"input": repr(step["args"])},
                "outputs": {"output": reply},
            }
            if step.get("error"):
                fields["error"] = step["error"]
            root["child_runs"].append(_run(number, step["name"], "tool", TOOL_TIMES[i], **fields))
            number += 1
            history.append(reply)
    return root


def test_langsmith(tmp_path: Path) -> None:
    tree = langsmith_tree()
    with contextlib.suppress(ImportError):  # the SDK's own model accepts the file, where installed
        from langsmith.schemas import Run

        assert str(Run.model_validate(tree).id) == LS_TRACE
    assert detect_format(tree) == "langsmith"
    trace, _ = check_imports(
        tmp_path, "langsmith.jsonl", (json.dumps(tree) + "\n").encode(), "langsmith"
    )
    assert (trace["trace_id"], trace["root_span_id"]) == (LS_TRACE, LS_TRACE)


# one reading of arguments -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "arguments", ['{"q": "x"}', "", "[1, 2]", '{"q": "x",', "null", '"text"', "[" * 5000]
)
def test_arguments_read_the_same_in_every_format(tmp_path: Path, arguments: str) -> None:
    """A call's arguments text becomes the same step (``args``, ``lost``, ``step_errors``) from
    a chat message, an OTLP tool span and a Langfuse tool observation."""
    chat = {
        "question_id": "q1",
        "messages": [
            {"role": "user", "content": QUESTION},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "f", "arguments": arguments},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "out"},
        ],
    }
    tool = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "f",
        "gen_ai.tool.call.id": "c1",
        "gen_ai.tool.call.arguments": arguments,
        "gen_ai.tool.call.result": "out",
    }
    otel = request(
        span(ROOT, None, "agent", {"question_id": "q1"}, 0, 2),
        span(_span_id("tool", 0), ROOT, "execute_tool f", tool, 1, 2),
    )
    steps = []
    for name, data in (("chat.json", chat), ("otlp.json", otel)):
        path = tmp_path / name
        path.write_text(json.dumps(data), encoding="utf-8")
        (response,), _ = read_traces(path)
        (step,) = response["actual_steps"]
        steps.append(({k: step.get(k) for k in ("args", "lost")}, response.get("step_errors")))
    assert steps[0][0]["args"] == steps[1][0]["args"]
    # chat has no status: that loss is its own; the rest is the same
    assert [x for x in steps[0][0]["lost"] or [] if x != "status"] == (steps[1][0]["lost"] or [])
    assert steps[0][1] == steps[1][1]
