"""OTLP as protobuf (``otlp-proto``, the ``otlp`` extra): the same requests as the JSON tests,
encoded by ``opentelemetry-proto``, read into the same traces; length-prefixed files; damaged ones
are one error naming where."""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest
from otlp_files import log, logs_request, request, span

from qa_eval.errors import InputError
from qa_eval.traces import otlp

proto = pytest.importorskip(
    "opentelemetry.proto.collector.trace.v1.trace_service_pb2",
    reason="needs opentelemetry-proto (the otlp extra)",
)
from google.protobuf.json_format import ParseDict  # noqa: E402
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (  # noqa: E402
    ExportLogsServiceRequest,
)

ROOT, TOOL = "a1a1a1a1a1a1a1a1", "c3c3c3c3c3c3c3c3"
TOOL_SPAN = {
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.name": "search",
    "gen_ai.tool.call.id": "c1",
    "gen_ai.tool.call.arguments": '{"q": "x"}',
    "gen_ai.tool.call.result": "found",
}


def encoded(document: dict[str, Any], kind: Any) -> bytes:
    """A JSON request as protobuf bytes (ids hex in JSON, bytes in protobuf)."""
    document = copy.deepcopy(document)

    def fix(record: Any) -> None:
        if isinstance(record, dict):
            for key in ("traceId", "spanId", "parentSpanId"):
                if key in record:
                    record[key] = base64.b64encode(bytes.fromhex(record[key])).decode()
            for value in record.values():
                fix(value)
        elif isinstance(record, list):
            for value in record:
                fix(value)

    fix(document)
    return ParseDict(document, kind()).SerializeToString()


def spans() -> dict[str, Any]:
    """An agent span with a tool span below it."""
    return request(
        span(ROOT, None, "agent", {"question_id": "q1"}, 0, 5),
        span(TOOL, ROOT, "execute_tool search", TOOL_SPAN, 1, 2, error="boom"),
    )


def fields(trace: Any) -> tuple[Any, ...]:
    """What a trace says, but its format."""
    calls = [vars(c) for c in trace.calls]
    return (trace.trace_id, trace.root_span_id, trace.question_id, trace.elapsed_sec, calls)


def test_protobuf_reads_as_json() -> None:
    data = encoded(spans(), proto.ExportTraceServiceRequest)
    assert otlp.looks_binary(data[:16]) and not otlp.looks_binary(b'{"resourceSpans"')
    (from_proto,) = otlp.read_bytes(data, "t.pb")
    (from_json,) = otlp.read([spans()], "t.json")
    assert from_proto.format == "otlp-proto" and from_json.format == "otlp-json"
    assert fields(from_proto) == fields(from_json)
    assert from_proto.calls[0].status == "error" and from_proto.calls[0].error == "boom"


def test_length_prefixed_messages_with_logs() -> None:
    events = logs_request(log(ROOT, "gen_ai.user.message", {"content": "Who?"}))
    chunks = [
        encoded(spans(), proto.ExportTraceServiceRequest),
        encoded(events, ExportLogsServiceRequest),
    ]
    data = b"".join(len(c).to_bytes(4, "big") + c for c in chunks)
    assert otlp.looks_binary(data[:16])
    (trace,) = otlp.read_bytes(data, "t.pb")
    assert trace.question == "Who?" and trace.calls[0].args == {"q": "x"}


@pytest.mark.parametrize("cut", [3, 10])
def test_damaged_protobuf_is_one_error(cut: int) -> None:
    chunk = encoded(spans(), proto.ExportTraceServiceRequest)
    framed = len(chunk).to_bytes(4, "big") + chunk
    with pytest.raises(
        InputError,
        match=r"^t.pb: (byte 0: (truncated length prefix|message of \d+ bytes cut short))",
    ):
        list(otlp.read_bytes(framed[:cut], "t.pb"))
    with pytest.raises(InputError, match=r"^t.pb: message 1: not an OTLP protobuf message"):
        list(otlp.read_bytes(chunk[: len(chunk) - cut], "t.pb"))
