"""OpenTelemetry traces (``otlp-json``, ``otlp-proto``) read into one :class:`Trace` per trace id.

The file is OTLP/JSON as the OTLP specification defines it (``ExportTraceServiceRequest``:
``resourceSpans`` → ``scopeSpans`` → ``spans``; hex ``traceId``/``spanId``, base64 where a
protobuf JSON printer wrote them; int64s as strings; ``AnyValue``s), one request per document or
per line (the collector's file exporter), log requests (``resourceLogs``) among them; or the same
as protobuf (``read_bytes``; the ``otlp`` extra).

Spans are read by the conventions agents write: the current GenAI semantic conventions
(``gen_ai.operation.name`` ``chat``/``execute_tool``/``invoke_agent``, ``gen_ai.tool.*``,
``gen_ai.input.messages``/``gen_ai.output.messages`` with parts), the deprecated ones
(``gen_ai.prompt``/``gen_ai.completion``, ``gen_ai.*.message``/``gen_ai.choice`` events on spans
or as log records, ``gen_ai.usage.prompt_tokens``), OpenLLMetry's flattened
``gen_ai.prompt.N.*``/``gen_ai.completion.N.tool_calls.M.*`` and ``traceloop.*``, and
OpenInference (``openinference.span.kind``, ``tool.*``, ``input.value``/``output.value``,
``llm.input_messages``/``llm.output_messages``, ``llm.token_count.*``). docs/traces.md.

Memory: spans are grouped by trace id. A trace is given out once it is complete (a root span, and
the parent of every span read) and :data:`HOLD` further records have passed without touching it; so
a JSON Lines file whose traces are contiguous is read in memory bounded by a few traces, and a
file whose traces interleave holds what is still open. Spans that come for a trace already given
out are an error naming the record (never a trace read twice).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError
from ..extras import MissingExtra, require
from .common import finish, link, parse_arguments, text_of
from .model import ToolCall, Trace
from .treelink import (
    Message,
    answer_in_order,
    as_text,
    chat_message,
    depths,
    fill_results,
    from_json,
    messages_of,
    planned_calls,
    sum_usage,
)

__all__ = ["HOLD", "detect", "looks_binary", "read", "read_bytes"]

HOLD = 4
"""How many further records a complete trace waits for late spans or log records before it is
given out."""

_REQUEST_KEYS = ("resourceSpans", "resource_spans", "resourceLogs", "resource_logs")
_MODEL_OPERATIONS = {"chat", "text_completion", "generate_content", "completion"}
_AGENT_OPERATIONS = {"invoke_agent", "create_agent", "invoke_workflow"}
_MODEL_HINTS = (
    "gen_ai.system",
    "gen_ai.request.model",
    "gen_ai.usage.prompt_tokens",
    "gen_ai.usage.input_tokens",
    "llm.model_name",
)
_DEPRECATED_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
_CURRENT_KEYS = {
    "gen_ai.operation.name",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.provider.name",
    "gen_ai.tool.name",
    "gen_ai.tool.call.id",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
}
_DEPRECATED_KEYS = {
    "gen_ai.prompt",
    "gen_ai.completion",
    "gen_ai.usage.prompt_tokens",
    "gen_ai.usage.completion_tokens",
    "gen_ai.system",
}
_WATCHED = (
    "gen_ai.",
    "llm.",
    "traceloop.",
    "openinference.",
    "tool.",
    "tool_call.",
    "input.",
    "output.",
    "ai.",
    "message.",
)
_KNOWN = (
    "gen_ai.request.",
    "gen_ai.response.",
    "gen_ai.openai.",
    "gen_ai.usage.",
    "gen_ai.agent.",
    "gen_ai.evaluation.",
    "gen_ai.embeddings.",
    "gen_ai.retrieval.",
    "gen_ai.data_source.",
    "gen_ai.conversation.",
    "gen_ai.workflow.",
    "gen_ai.token.",
    "gen_ai.output.type",
    "gen_ai.is_streaming",  # OpenLLMetry
    "gen_ai.prompt.",
    "gen_ai.completion.",
    "gen_ai.tool.",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "llm.input_messages.",
    "llm.output_messages.",
    "llm.tools.",
    "llm.token_count.",
    "llm.cost.",
    "llm.prompt_template.",
    "llm.prompts",
    "llm.choices",
    "llm.request.",
    "llm.response.",
    "llm.usage.",
    "llm.headers",
    "llm.is_streaming",
    "llm.user",
    "llm.frequency_penalty",
    "llm.presence_penalty",
    "llm.top_k",
    "llm.chat.",
    "llm.model_name",
    "llm.provider",
    "llm.system",
    "llm.invocation_parameters",
    "llm.finish_reason",
    "llm.function_call",
    "traceloop.",
    "openinference.",
    "tool.",
    "tool_call.",
    "input.",
    "output.",
    "message.",
)
_INDEX = re.compile(r"\.\d+(?=\.|$)")
_SCHEMA_VERSION = re.compile(r"/schemas/(\d+\.\d+(?:\.\d+)?)")
_OPENLLMETRY = re.compile(r"^gen_ai\.(prompt|completion)\.(\d+)\.(.+)$")
_OPENINFERENCE = re.compile(r"^llm\.(input|output)_messages\.(\d+)\.message\.(.+)$")
_HEX = frozenset("0123456789abcdefABCDEF")
# what OpenInference writes for a value its TraceConfig hides (OPENINFERENCE_HIDE_INPUTS, ...):
# read as not recorded
_REDACTED = "__REDACTED__"
_TRACEBACK = "Traceback (most recent call last)"


# --- OTLP/JSON as the specification defines it -------------------------------------------------


def _get(record: dict[str, Any], camel: str, snake: str | None = None) -> Any:
    value = record.get(camel)
    if value is None and snake is not None:
        value = record.get(snake)
    return value


def _any_value(value: Any) -> Any:
    """An ``AnyValue`` as Python: strings, ints (from int64 text), floats, bools, lists, dicts."""
    if not isinstance(value, dict):
        return value
    for camel, snake in (("stringValue", "string_value"), ("boolValue", "bool_value")):
        if camel in value or snake in value:
            return _get(value, camel, snake)
    for camel, snake, kind in (
        ("intValue", "int_value", int),
        ("doubleValue", "double_value", float),
    ):
        if camel in value or snake in value:
            raw = _get(value, camel, snake)
            try:
                return kind(raw)
            except (TypeError, ValueError):
                return raw
    if "arrayValue" in value or "array_value" in value:
        array = _get(value, "arrayValue", "array_value") or {}
        return [_any_value(item) for item in (array.get("values") or [])]
    if "kvlistValue" in value or "kvlist_value" in value:
        return _attributes((_get(value, "kvlistValue", "kvlist_value") or {}).get("values"))
    if "bytesValue" in value or "bytes_value" in value:
        return _get(value, "bytesValue", "bytes_value")
    return None


def _attributes(items: Any) -> dict[str, Any]:
    if not isinstance(items, list):
        return {}
    return {
        str(item.get("key")): _any_value(item.get("value"))
        for item in items
        if isinstance(item, dict) and item.get("key") is not None
    }


def _id(value: Any, size: int) -> str | None:
    """A trace or span id as lower-case hex: hex as OTLP/JSON writes it, or base64 as a protobuf
    JSON printer does (told apart by length)."""
    if not isinstance(value, str) or not value:
        return None
    if len(value) == 2 * size and _HEX.issuperset(value):
        return value.lower()
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return value
    return raw.hex() if len(raw) == size else value


def _nanos(value: Any) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


@dataclass
class _Event:
    name: str
    time: int | None
    attributes: dict[str, Any]
    body: Any = None


@dataclass
class _Span:
    trace_id: str
    span_id: str
    parent: str | None
    name: str
    start: int | None
    end: int | None
    attributes: dict[str, Any]
    events: list[_Event]
    error: bool
    message: str | None
    resource: dict[str, Any]
    schema: str | None
    order: int


@dataclass
class _Open:
    spans: list[_Span] = field(default_factory=list)
    logs: list[tuple[str | None, _Event]] = field(default_factory=list)
    last: int = 0


def _status(record: dict[str, Any]) -> tuple[bool, str | None]:
    status = record.get("status") or {}
    code = status.get("code")
    error = code in (2, "2", "STATUS_CODE_ERROR", "ERROR")
    message = status.get("message")
    return error, message if isinstance(message, str) and message else None


def _spans(request: dict[str, Any], counter: list[int]) -> Iterator[_Span]:
    for resource_spans in _get(request, "resourceSpans", "resource_spans") or []:
        if not isinstance(resource_spans, dict):
            continue
        resource = _attributes((resource_spans.get("resource") or {}).get("attributes"))
        outer_schema = _get(resource_spans, "schemaUrl", "schema_url")
        scopes = _get(resource_spans, "scopeSpans", "scope_spans") or resource_spans.get(
            "instrumentationLibrarySpans", []
        )
        for scope_spans in scopes:
            if not isinstance(scope_spans, dict):
                continue
            schema = _get(scope_spans, "schemaUrl", "schema_url") or outer_schema
            for record in scope_spans.get("spans") or []:
                if not isinstance(record, dict):
                    continue
                trace_id = _id(_get(record, "traceId", "trace_id"), 16)
                span_id = _id(_get(record, "spanId", "span_id"), 8)
                if trace_id is None or span_id is None:
                    continue
                error, message = _status(record)
                events = [
                    _Event(
                        str(event.get("name", "")),
                        _nanos(_get(event, "timeUnixNano", "time_unix_nano")),
                        _attributes(event.get("attributes")),
                    )
                    for event in record.get("events") or []
                    if isinstance(event, dict)
                ]
                counter[0] += 1
                yield _Span(
                    trace_id=trace_id,
                    span_id=span_id,
                    parent=_id(_get(record, "parentSpanId", "parent_span_id"), 8),
                    name=str(record.get("name", "")),
                    start=_nanos(_get(record, "startTimeUnixNano", "start_time_unix_nano")),
                    end=_nanos(_get(record, "endTimeUnixNano", "end_time_unix_nano")),
                    attributes={
                        key: value
                        for key, value in _attributes(record.get("attributes")).items()
                        if value != _REDACTED
                    },
                    events=events,
                    error=error,
                    message=message,
                    resource=resource,
                    schema=schema if isinstance(schema, str) else None,
                    order=counter[0],
                )


def _logs(request: dict[str, Any]) -> Iterator[tuple[str, str | None, _Event]]:
    for resource_logs in _get(request, "resourceLogs", "resource_logs") or []:
        if not isinstance(resource_logs, dict):
            continue
        for scope_logs in _get(resource_logs, "scopeLogs", "scope_logs") or []:
            if not isinstance(scope_logs, dict):
                continue
            for record in _get(scope_logs, "logRecords", "log_records") or []:
                if not isinstance(record, dict):
                    continue
                trace_id = _id(_get(record, "traceId", "trace_id"), 16)
                if trace_id is None:
                    continue  # a log record outside any trace belongs to no run
                attributes = _attributes(record.get("attributes"))
                name = _get(record, "eventName", "event_name") or attributes.get("event.name")
                body = _any_value(record.get("body"))
                if not name and isinstance(body, dict):
                    name = body.get("event.name")
                time = _nanos(_get(record, "timeUnixNano", "time_unix_nano")) or _nanos(
                    _get(record, "observedTimeUnixNano", "observed_time_unix_nano")
                )
                event = _Event(str(name or ""), time, attributes, body)
                yield trace_id, _id(_get(record, "spanId", "span_id"), 8), event


def detect(record: Any) -> bool:
    """Whether a record is an OTLP/JSON export request (spans or logs)."""
    if isinstance(record, list) and record:
        record = record[0]
    return isinstance(record, dict) and any(key in record for key in _REQUEST_KEYS)


def _requests(record: Any) -> Iterator[dict[str, Any]]:
    if isinstance(record, list):
        for item in record:
            yield from _requests(item)
    elif isinstance(record, dict):
        yield record


def read(records: Iterable[Any], source: str) -> Iterator[Trace]:
    """The traces of an OTLP/JSON file's records (requests, one per document or line)."""
    return _read(records, source, "otlp-json")


def _read(records: Iterable[Any], source: str, form: str) -> Iterator[Trace]:
    pending: dict[str, _Open] = {}
    given: set[str] = set()
    counter = [0]
    number = 0
    for number, record in enumerate(records, 1):
        where = f"record {number}"
        try:
            for request in _requests(record):
                for span in _spans(request, counter):
                    _late(span.trace_id, given, source, where)
                    open_trace = pending.setdefault(span.trace_id, _Open())
                    open_trace.spans.append(span)
                    open_trace.last = number
                for trace_id, span_id, event in _logs(request):
                    _late(trace_id, given, source, where)
                    open_trace = pending.setdefault(trace_id, _Open())
                    open_trace.logs.append((span_id, event))
                    open_trace.last = number
        except RecursionError:
            raise InputError("nested too deeply", source=source, record=where) from None
        for trace_id in [
            t for t, o in pending.items() if o.last <= number - HOLD and _complete_open(o)
        ]:
            given.add(trace_id)
            yield _trace(trace_id, pending.pop(trace_id), source, form)
    for trace_id, open_trace in pending.items():
        yield _trace(trace_id, open_trace, source, form)


def _complete_open(open_trace: _Open) -> bool:
    ids = {span.span_id for span in open_trace.spans}
    has_root = any(span.parent is None for span in open_trace.spans)
    return has_root and all(span.parent is None or span.parent in ids for span in open_trace.spans)


def _late(trace_id: str, given: set[str], source: str, where: str) -> None:
    if trace_id in given:
        raise InputError(
            f"spans or log records of trace {trace_id} come {HOLD} or more records after the trace "
            "was complete; keep each trace's records together",
            source=source,
            record=where,
        )


# --- protobuf ---------------------------------------------------------------------------------


def looks_binary(head: bytes) -> bool:
    """Whether a file's first bytes are protobuf rather than JSON."""
    stripped = head.lstrip()
    if not stripped:
        return False
    if stripped[:1] in (b"{", b"["):
        return False
    return head[:1] in (b"\x0a", b"\x00")


def read_bytes(data: bytes, source: str) -> Iterator[Trace]:
    """The traces of an OTLP protobuf file: one ``ExportTraceServiceRequest`` (or logs request),
    or several each prefixed by its length (4 bytes, big-endian), as the collector's file exporter
    writes them."""
    try:
        trace_service = require(
            "opentelemetry.proto.collector.trace.v1.trace_service_pb2", "reading OTLP protobuf"
        )
    except ImportError:  # the opentelemetry namespace without opentelemetry-proto in it
        raise MissingExtra(
            "reading OTLP protobuf needs the optional package 'opentelemetry-proto': "
            "pip install 'qa-eval[otlp]'"
        ) from None
    from google.protobuf.json_format import MessageToDict
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    ExportTraceServiceRequest = trace_service.ExportTraceServiceRequest

    def messages() -> Iterator[dict[str, Any]]:
        for number, chunk in enumerate(_chunks(data, source), 1):
            problem = None
            found: dict[str, Any] = {}
            # protobuf names no type: a logs request may parse as a trace request of nonsense
            for kind in (ExportTraceServiceRequest, ExportLogsServiceRequest):
                message = kind()
                try:
                    message.ParseFromString(chunk)
                except (DecodeError, RuntimeError, ValueError) as error:
                    problem = problem or str(error)
                    continue
                found = MessageToDict(message)
                if _plausible(found):
                    break
            else:
                if problem is not None and not _plausible(found):
                    raise InputError(
                        f"not an OTLP protobuf message ({problem})",
                        source=source,
                        record=f"message {number}",
                    )
            yield found

    yield from _read(messages(), source, "otlp-proto")


def _plausible(request: dict[str, Any]) -> bool:
    """Whether a decoded request holds spans or log records with ids of the right size."""
    for span in _spans(request, [0]):
        return _HEX.issuperset(span.trace_id + span.span_id) and len(span.span_id) == 16
    for trace_id, _, _ in _logs(request):
        return _HEX.issuperset(trace_id) and len(trace_id) == 32
    return False


def _chunks(data: bytes, source: str) -> list[bytes]:
    if data[:1] != b"\x00":
        return [data]
    chunks = []
    offset = 0
    while offset < len(data):
        if offset + 4 > len(data):
            raise InputError("truncated length prefix", source=source, record=f"byte {offset}")
        size = int.from_bytes(data[offset : offset + 4], "big")
        if offset + 4 + size > len(data):
            raise InputError(
                f"message of {size} bytes cut short", source=source, record=f"byte {offset}"
            )
        chunks.append(data[offset + 4 : offset + 4 + size])
        offset += 4 + size
    return chunks


# --- one trace --------------------------------------------------------------------------------


@dataclass
class _Reading:
    """What one span says, by convention."""

    kind: str = "other"  # model, tool, agent, other
    inputs: list[Message] = field(default_factory=list)
    outputs: list[Message] = field(default_factory=list)
    call: ToolCall | None = None
    usage: tuple[int | None, int | None, int | None] = (None, None, None)
    conventions: set[str] = field(default_factory=set)


def _flattened(attributes: dict[str, Any], pattern: re.Pattern[str], side: str) -> list[Message]:
    """Messages from flattened attributes (OpenLLMetry ``gen_ai.completion.0.tool_calls.0.name``,
    OpenInference ``llm.output_messages.0.message.tool_calls.0.tool_call.function.name``)."""
    rows: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        match = pattern.match(key)
        if match and match.group(1) == side:
            rows.setdefault(int(match.group(2)), {})[match.group(3)] = value
    messages = []
    for index in sorted(rows):
        row = rows[index]
        role = str(row.get("role") or ("assistant" if side in ("completion", "output") else ""))
        content = row.get("content")
        if content is None:
            parts = sorted(
                (k, v) for k, v in row.items() if k.startswith("contents.") and k.endswith(".text")
            )
            content = "".join(str(v) for _, v in parts) if parts else None
        blocks = _anthropic_blocks(content)
        if blocks is not None:
            messages.extend(_block_messages(role, blocks))
            continue
        message = Message(role, None if content is None else str(content))
        calls: dict[int, dict[str, Any]] = {}
        for key, value in row.items():
            if key.startswith("tool_calls."):
                digits, _, rest = key[len("tool_calls.") :].partition(".")
                if digits.isdigit():
                    calls.setdefault(int(digits), {})[rest.removeprefix("tool_call.")] = value
        for number in sorted(calls):
            call = calls[number]
            name = call.get("name", call.get("function.name"))
            if name is not None:
                arguments = call.get("arguments", call.get("function.arguments"))
                message.calls.append((as_text(call.get("id")), str(name), arguments))
        result_of = row.get("tool_call_id")
        if role == "tool" or result_of is not None:
            message.result_of, message.result, message.text = as_text(result_of), content, None
        messages.append(message)
    return messages


def _anthropic_blocks(content: Any) -> list[dict[str, Any]] | None:
    """Anthropic content blocks that OpenLLMetry (before 0.50) wrote as a message's JSON
    ``content`` (``[{"type": "tool_result", "tool_use_id": ...}]``); None for other content."""
    if not (isinstance(content, str) and content.lstrip().startswith("[")):
        return None
    parsed = from_json(content)
    if (
        isinstance(parsed, list)
        and parsed
        and all(isinstance(b, dict) and isinstance(b.get("type"), str) for b in parsed)
        and any(b["type"] in ("text", "tool_use", "tool_result") for b in parsed)
    ):
        return parsed
    return None


def _block_messages(role: str, blocks: list[dict[str, Any]]) -> list[Message]:
    """One message for the text and ``tool_use`` blocks, one for each ``tool_result``."""
    message = Message(role, text_of(blocks))
    results = []
    for block in blocks:
        if block["type"] == "tool_use" and block.get("name") is not None:
            message.calls.append((as_text(block.get("id")), str(block["name"]), block.get("input")))
        elif block["type"] == "tool_result":
            content = block.get("content")
            result = Message(
                "tool", result=text_of(content) if isinstance(content, list) else content
            )
            result.result_of = as_text(block.get("tool_use_id"))
            results.append(result)
    return ([message] if message.text is not None or message.calls else []) + results


def _event_message(event: _Event) -> tuple[str, Message] | None:
    """A deprecated GenAI event (span event or log record) as an input or output message."""
    payload = event.body if isinstance(event.body, dict) else {}
    if not payload:
        payload = {k: v for k, v in event.attributes.items() if not k.startswith("gen_ai.system")}
    if event.name in _DEPRECATED_EVENTS:
        item = dict(payload)
        item["role"] = _DEPRECATED_EVENTS[event.name]
        if item["role"] == "tool":
            item.setdefault("tool_call_id", item.get("id") or "")
        message = chat_message(item)
        return ("input", message) if message else None
    if event.name == "gen_ai.choice":
        choice = payload.get("message")
        inner: dict[str, Any] = choice if isinstance(choice, dict) else {}
        message = chat_message({"role": "assistant", **inner})
        return ("output", message) if message else None
    if event.name == "gen_ai.content.prompt" and "gen_ai.prompt" in event.attributes:
        return "prompt", Message("", event.attributes["gen_ai.prompt"])
    if event.name == "gen_ai.content.completion" and "gen_ai.completion" in event.attributes:
        return "completion", Message("", event.attributes["gen_ai.completion"])
    return None


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def _first(attributes: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        if attributes.get(key) is not None:
            return attributes[key]
    return None


def _read_span(span: _Span, events: list[_Event]) -> _Reading:
    """What a span says, whatever convention it is written in."""
    a = span.attributes
    reading = _Reading()
    operation = a.get("gen_ai.operation.name")
    oi_kind = str(a.get("openinference.span.kind") or "").upper()
    loop_kind = str(a.get("traceloop.span.kind") or "").lower()
    if any(key in a for key in _CURRENT_KEYS):
        version = _SCHEMA_VERSION.search(span.schema or "")
        reading.conventions.add(f"gen_ai {version.group(1)}" if version else "gen_ai")
    if any(key in a for key in _DEPRECATED_KEYS) or any(
        e.name in _DEPRECATED_EVENTS or e.name == "gen_ai.choice" for e in events
    ):
        reading.conventions.add("gen_ai deprecated")
    if loop_kind or "llm.request.type" in a or any(_OPENLLMETRY.match(k) for k in a):
        reading.conventions.add("openllmetry")
    if oi_kind or any(_OPENINFERENCE.match(k) for k in a) or "llm.token_count.prompt" in a:
        reading.conventions.add("openinference")

    if operation == "execute_tool" or oi_kind == "TOOL" or loop_kind == "tool":
        reading.kind = "tool"
        reading.call = _tool_call(span)
        return reading
    if (
        operation in _MODEL_OPERATIONS
        or oi_kind == "LLM"
        or "llm.request.type" in a
        or any(_OPENLLMETRY.match(k) for k in a)
    ):
        reading.kind = "model"
    elif operation in _AGENT_OPERATIONS or oi_kind in ("AGENT", "CHAIN") or loop_kind:
        reading.kind = "agent"
    elif not operation and not oi_kind and any(key in a for key in _MODEL_HINTS):
        reading.kind = "model"  # deprecated conventions: no operation name

    inputs: list[Message] = []
    outputs: list[Message] = []
    for event in events:
        found = _event_message(event)
        if found is not None:
            side, message = found
            if side == "input":
                inputs.append(message)
            elif side == "output":
                outputs.append(message)
            elif side == "prompt":
                inputs.extend(messages_of(message.text) or [Message("user", message.text)])
            else:
                outputs.extend(messages_of(message.text) or [Message("assistant", message.text)])
        details = event.attributes
        if "gen_ai.input.messages" in details:
            inputs.extend(messages_of(details["gen_ai.input.messages"]))
        if "gen_ai.output.messages" in details:
            outputs.extend(messages_of(details["gen_ai.output.messages"]))
    inputs.extend(messages_of(a.get("gen_ai.input.messages")))
    outputs.extend(messages_of(a.get("gen_ai.output.messages")))
    for key, side, target in (
        ("gen_ai.prompt", "user", inputs),
        ("gen_ai.completion", "assistant", outputs),
    ):
        if isinstance(a.get(key), str):
            target.extend(messages_of(a[key]) or [Message(side, a[key])])
    inputs.extend(_flattened(a, _OPENLLMETRY, "prompt"))
    outputs.extend(_flattened(a, _OPENLLMETRY, "completion"))
    inputs.extend(_flattened(a, _OPENINFERENCE, "input"))
    outputs.extend(_flattened(a, _OPENINFERENCE, "output"))
    for key, role, target in (
        ("input.value", "user", inputs),
        ("output.value", "assistant", outputs),
        ("traceloop.entity.input", "user", inputs),
        ("traceloop.entity.output", "assistant", outputs),
    ):
        if not target and a.get(key) is not None:
            value = _json_text(a[key]) if key.startswith("traceloop.") else a[key]
            target.extend(_valuemessages_of(value, role))
    answer_in_order(inputs)
    reading.inputs, reading.outputs = inputs, outputs
    prompt = _int(
        _first(
            a,
            "gen_ai.usage.input_tokens",
            "gen_ai.usage.prompt_tokens",
            "llm.token_count.prompt",
            "llm.usage.prompt_tokens",
        )
    )
    completion = _int(
        _first(
            a,
            "gen_ai.usage.output_tokens",
            "gen_ai.usage.completion_tokens",
            "llm.token_count.completion",
            "llm.usage.completion_tokens",
        )
    )
    total = _int(
        _first(a, "llm.token_count.total", "llm.usage.total_tokens", "gen_ai.usage.total_tokens")
    )
    reading.usage = (prompt, completion, total)
    return reading


def _valuemessages_of(value: Any, role: str) -> list[Message]:
    """Messages from an ``input.value``/``output.value``: chat messages or a reply in JSON, a
    LangChain-style ``{"input": ...}``/``{"output": ...}``, or plain text."""
    parsed = from_json(value)
    if isinstance(parsed, (dict, list)):
        messages = messages_of(parsed)
        if messages and any(m.role for m in messages):
            return messages
        if isinstance(parsed, dict):
            for key in ("input", "question", "query", "output", "answer", "content"):
                if isinstance(parsed.get(key), str):
                    return [Message(role, parsed[key])]
            # the Traceloop SDK's decorated function: {"args": [...], "kwargs": {...}}
            arguments = parsed.get("args")
            if isinstance(arguments, list) and arguments and isinstance(arguments[0], str):
                return [Message(role, arguments[0])]
        return []
    return [Message(role, str(value))] if value not in (None, "") else []


def _json_text(value: Any) -> Any:
    """A value the Traceloop SDK wrote with ``json.dumps`` (a string as ``"text"``): the string
    inside; anything else as it is."""
    if isinstance(value, str) and value.startswith('"') and value.endswith('"'):
        try:
            parsed = json.loads(value)
        except (json.JSONDecodeError, RecursionError):
            return value
        if isinstance(parsed, str):
            return parsed
    return value


def _tool_call(span: _Span) -> ToolCall:
    a = span.attributes
    name = _first(
        a, "gen_ai.tool.name", "tool.name", "tool_call.function.name", "traceloop.entity.name"
    )
    if name is None:
        name = span.name.removeprefix("execute_tool ").strip() or span.name
    call = ToolCall(
        name=str(name),
        id=as_text(_first(a, "gen_ai.tool.call.id", "tool_call.id", "tool.id")),
        record_id=span.span_id,
        parent=span.parent,
        start=span.start,
    )
    raw = _first(a, "gen_ai.tool.call.arguments", "input.value", "tool_call.function.arguments")
    if raw is None and a.get("traceloop.entity.input") is not None:
        entity = from_json(a["traceloop.entity.input"])
        if isinstance(entity, dict) and ("kwargs" in entity or "args" in entity):
            raw = entity.get("kwargs") if entity.get("kwargs") or not entity.get("args") else entity
        else:
            raw = a["traceloop.entity.input"]
    if raw is None and a.get("tool.parameters") is not None:
        parameters = from_json(a["tool.parameters"])
        if _is_schema(parameters):
            call.lost.append("args_schema")
        else:
            raw = a["tool.parameters"]
    call.args, call.args_error = parse_arguments(raw)
    output = _first(a, "gen_ai.tool.call.result", "output.value")
    if output is None:
        output = _json_text(a.get("traceloop.entity.output"))
    call.output = output
    if span.error:
        call.status = "error"
        message = span.message
        if message and _TRACEBACK in message:
            # OpenInference's LangChain spans: repr(error) and the whole traceback as the status
            message = _exception(span) or message.split(_TRACEBACK)[0].strip() or None
        call.error = message or _exception(span) or str(a.get("error.type") or "error")
    else:
        call.status = "success"
    return call


def _is_schema(value: Any) -> bool:
    return isinstance(value, dict) and (
        "properties" in value or value.get("type") == "object" or "$schema" in value
    )


def _exception(span: _Span) -> str | None:
    for event in span.events:
        if event.name == "exception":
            message = event.attributes.get("exception.message")
            if message:
                return str(message)
    return None


def _question_id(spans: list[_Span]) -> str | None:
    for span in spans:
        for attributes in (span.attributes, span.resource):
            value = _first(
                attributes,
                "qa_eval.question_id",
                "question_id",
                "traceloop.association.properties.question_id",
            )
            if value is not None:
                return str(value)
            metadata = from_json(attributes.get("metadata"))
            if isinstance(metadata, dict) and metadata.get("question_id") is not None:
                return str(metadata["question_id"])
    return None


def _unknown(attributes: dict[str, Any], into: Counter[str]) -> None:
    for key in attributes:
        if key.startswith(_WATCHED) and not key.startswith(_KNOWN) and key not in _CURRENT_KEYS:
            if key in _DEPRECATED_KEYS:
                continue
            into[_INDEX.sub(".N", key)] += 1


def _tree(spans: list[_Span]) -> tuple[list[_Span], dict[str, int], int, int]:
    """Spans with unique ids, the depth of each, and how many repeated ids and broken parent links
    (missing, or in a cycle: read as roots) there were."""
    unique: dict[str, _Span] = {}
    for span in spans:
        unique.setdefault(span.span_id, span)
    parent = {span.span_id: span.parent for span in unique.values()}
    depth, broken = depths(parent)
    for span in unique.values():
        span.parent = parent[span.span_id]
    return list(unique.values()), depth, len(spans) - len(unique), broken


def _trace(trace_id: str, open_trace: _Open, source: str, form: str) -> Trace:
    spans, depth, duplicates, broken = _tree(open_trace.spans)
    trace = Trace(format=form, source=source, trace_id=trace_id)
    events: dict[str, list[_Event]] = {span.span_id: list(span.events) for span in spans}
    spans.sort(key=lambda s: (s.start if s.start is not None else 0, depth[s.span_id], s.order))
    roots = [span for span in spans if span.parent is None]
    root = min(roots, key=lambda s: (s.start or 0, -(s.end or 0))) if roots else None
    for span_id, event in open_trace.logs:
        target = span_id if span_id in events else (root.span_id if root else None)
        if target is not None:
            events[target].append(event)
    if root is not None:
        trace.root_span_id = root.span_id
        if len(roots) == 1 and root.start is not None and root.end is not None:
            trace.elapsed_sec = (root.end - root.start) / 1e9
        else:
            starts = [s.start for s in spans if s.start is not None]
            ends = [s.end for s in spans if s.end is not None]
            if starts and ends:
                trace.elapsed_sec = (max(ends) - min(starts)) / 1e9
    trace.question_id = _question_id(([root] if root else []) + spans)
    readings = {span.span_id: _read_span(span, events[span.span_id]) for span in spans}
    by_id = {span.span_id: span for span in spans}
    planned: list[ToolCall] = []
    executed: list[ToolCall] = []
    results: dict[str, Any] = {}
    known_ids: set[str] = set()
    question_at: tuple[int, str] | None = None
    answer_at: tuple[int, int, str] | None = None
    for span in spans:
        reading = readings[span.span_id]
        trace.fidelity.conventions.update(reading.conventions)
        _unknown(span.attributes, trace.fidelity.unknown_attributes)
        if reading.call is not None:
            executed.append(reading.call)
            continue
        if trace.model is None and reading.kind == "model":
            model = _first(
                span.attributes,
                "gen_ai.response.model",
                "gen_ai.request.model",
                "llm.model_name",
                "llm.response.model",
                "llm.request.model",
            )
            trace.model = None if model is None else str(model)
        for side, messages in (("in", reading.inputs), ("out", reading.outputs)):
            for message in messages:
                if message.result_of is not None and message.result_of not in results:
                    results[message.result_of] = message.result
                at = span.end if side == "out" else span.start
                for call in planned_calls(message, span.span_id, span.parent, at):
                    if side == "in" and (call.id is None or call.id in known_ids):
                        continue  # the history a later call repeats
                    if call.id is not None:
                        known_ids.add(call.id)
                    planned.append(call)
        for message in reading.inputs:
            if message.role == "user" and message.text and span.start is not None:
                if question_at is None or span.start < question_at[0]:
                    question_at = (span.start, message.text)
                break
            if message.role == "user" and message.text and question_at is None:
                question_at = (0, message.text)
                break
        texts = [m.text for m in reading.outputs if m.role in ("assistant", "") and m.text]
        if texts:
            key = (span.end or 0, depth[span.span_id], texts[-1])
            if answer_at is None or key[:2] >= answer_at[:2]:
                answer_at = key
    trace.question = question_at[1] if question_at else None
    trace.answer = answer_at[2] if answer_at else None
    calls = link(planned, executed)
    unlinked = fill_results(calls, results)
    _tokens(trace, spans, readings, by_id, root)
    finish(
        trace,
        calls,
        depth,
        {"duplicate_id": duplicates, "broken_parent": broken, "unlinked_result": unlinked},
    )
    trace.fidelity.losses["unknown_attribute"] += sum(trace.fidelity.unknown_attributes.values())
    if not trace.fidelity.losses["unknown_attribute"]:
        del trace.fidelity.losses["unknown_attribute"]
    return trace


def _tokens(
    trace: Trace,
    spans: list[_Span],
    readings: dict[str, _Reading],
    by_id: dict[str, _Span],
    root: _Span | None,
) -> None:
    """The trace's own usage (its root or agent span) where it has one, else the sum of its model
    calls (a model span inside another model span with usage is counted once)."""
    if (
        root is not None
        and readings[root.span_id].kind != "model"
        and any(v is not None for v in readings[root.span_id].usage)
    ):
        counted = [readings[root.span_id].usage]
    else:
        counted = []
        for span in spans:
            reading = readings[span.span_id]
            if reading.kind != "model" or all(v is None for v in reading.usage):
                continue
            node = span.parent
            nested = False
            while node is not None and node in by_id:
                above = readings[node]
                if above.kind == "model" and any(v is not None for v in above.usage):
                    nested = True
                    break
                node = by_id[node].parent
            if not nested:
                counted.append(reading.usage)
    sum_usage(trace, counted)
