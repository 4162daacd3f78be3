"""OTLP/JSON as the OTLP specification defines it (``ExportTraceServiceRequest``:
``resourceSpans`` → ``scopeSpans`` → ``spans``; hex ``traceId``/``spanId``, base64 where a
protobuf JSON printer wrote them; int64s as strings; ``AnyValue``s; log requests,
``resourceLogs``), read into spans and events whatever convention wrote them.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

_REQUEST_KEYS = ("resourceSpans", "resource_spans", "resourceLogs", "resource_logs")


HEX = frozenset("0123456789abcdefABCDEF")
# what OpenInference writes for a value its TraceConfig hides (OPENINFERENCE_HIDE_INPUTS, ...):
# read as not recorded
_REDACTED = "__REDACTED__"


def get_field(record: dict[str, Any], camel: str, snake: str | None = None) -> Any:
    """A record's field by its camelCase name, or its snake_case one."""
    value = record.get(camel)
    if value is None and snake is not None:
        value = record.get(snake)
    return value


def any_value(value: Any) -> Any:
    """An ``AnyValue`` as Python: strings, ints (from int64 text), floats, bools, lists, dicts."""
    if not isinstance(value, dict):
        return value
    for camel, snake in (("stringValue", "string_value"), ("boolValue", "bool_value")):
        if camel in value or snake in value:
            return get_field(value, camel, snake)
    for camel, snake, kind in (
        ("intValue", "int_value", int),
        ("doubleValue", "double_value", float),
    ):
        if camel in value or snake in value:
            raw = get_field(value, camel, snake)
            try:
                return kind(raw)
            except (TypeError, ValueError):
                return raw
    if "arrayValue" in value or "array_value" in value:
        array = get_field(value, "arrayValue", "array_value") or {}
        return [any_value(item) for item in (array.get("values") or [])]
    if "kvlistValue" in value or "kvlist_value" in value:
        return attributes_of((get_field(value, "kvlistValue", "kvlist_value") or {}).get("values"))
    if "bytesValue" in value or "bytes_value" in value:
        return get_field(value, "bytesValue", "bytes_value")
    return None


def attributes_of(items: Any) -> dict[str, Any]:
    """OTLP key-value attributes as a dict of Python values."""
    if not isinstance(items, list):
        return {}
    return {
        str(item.get("key")): any_value(item.get("value"))
        for item in items
        if isinstance(item, dict) and item.get("key") is not None
    }


def id_of(value: Any, size: int) -> str | None:
    """A trace or span id as lower-case hex: hex as OTLP/JSON writes it, or base64 as a protobuf
    JSON printer does (told apart by length)."""
    if not isinstance(value, str) or not value:
        return None
    if len(value) == 2 * size and HEX.issuperset(value):
        return value.lower()
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return value
    return raw.hex() if len(raw) == size else value


def nanos(value: Any) -> int | None:
    """A time in nanoseconds (int64 text read), or None."""
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


@dataclass
class Event:
    """A span event or a log record."""

    name: str
    time: int | None
    attributes: dict[str, Any]
    body: Any = None


@dataclass
class Span:
    """One span as read, whatever convention wrote it."""

    trace_id: str
    span_id: str
    parent: str | None
    name: str
    start: int | None
    end: int | None
    attributes: dict[str, Any]
    events: list[Event]
    error: bool
    message: str | None
    resource: dict[str, Any]
    schema: str | None
    order: int


def _status(record: dict[str, Any]) -> tuple[bool, str | None]:
    status = record.get("status") or {}
    code = status.get("code")
    error = code in (2, "2", "STATUS_CODE_ERROR", "ERROR")
    message = status.get("message")
    return error, message if isinstance(message, str) and message else None


def request_spans(request: dict[str, Any], counter: list[int]) -> Iterator[Span]:
    """The spans of an export request, numbered in reading order through ``counter``."""
    for resource_spans in get_field(request, "resourceSpans", "resource_spans") or []:
        if not isinstance(resource_spans, dict):
            continue
        resource = attributes_of((resource_spans.get("resource") or {}).get("attributes"))
        outer_schema = get_field(resource_spans, "schemaUrl", "schema_url")
        scopes = get_field(resource_spans, "scopeSpans", "scope_spans") or resource_spans.get(
            "instrumentationLibrarySpans", []
        )
        for scope_spans in scopes:
            if not isinstance(scope_spans, dict):
                continue
            schema = get_field(scope_spans, "schemaUrl", "schema_url") or outer_schema
            for record in scope_spans.get("spans") or []:
                if not isinstance(record, dict):
                    continue
                trace_id = id_of(get_field(record, "traceId", "trace_id"), 16)
                span_id = id_of(get_field(record, "spanId", "span_id"), 8)
                if trace_id is None or span_id is None:
                    continue
                error, message = _status(record)
                events = [
                    Event(
                        str(event.get("name", "")),
                        nanos(get_field(event, "timeUnixNano", "time_unix_nano")),
                        attributes_of(event.get("attributes")),
                    )
                    for event in record.get("events") or []
                    if isinstance(event, dict)
                ]
                counter[0] += 1
                yield Span(
                    trace_id=trace_id,
                    span_id=span_id,
                    parent=id_of(get_field(record, "parentSpanId", "parent_span_id"), 8),
                    name=str(record.get("name", "")),
                    start=nanos(get_field(record, "startTimeUnixNano", "start_time_unix_nano")),
                    end=nanos(get_field(record, "endTimeUnixNano", "end_time_unix_nano")),
                    attributes={
                        key: value
                        for key, value in attributes_of(record.get("attributes")).items()
                        if value != _REDACTED
                    },
                    events=events,
                    error=error,
                    message=message,
                    resource=resource,
                    schema=schema if isinstance(schema, str) else None,
                    order=counter[0],
                )


def request_logs(request: dict[str, Any]) -> Iterator[tuple[str, str | None, Event]]:
    """The log records of an export request that belong to a trace: trace id, span id, event."""
    for resource_logs in get_field(request, "resourceLogs", "resource_logs") or []:
        if not isinstance(resource_logs, dict):
            continue
        for scope_logs in get_field(resource_logs, "scopeLogs", "scope_logs") or []:
            if not isinstance(scope_logs, dict):
                continue
            for record in get_field(scope_logs, "logRecords", "log_records") or []:
                if not isinstance(record, dict):
                    continue
                trace_id = id_of(get_field(record, "traceId", "trace_id"), 16)
                if trace_id is None:
                    continue  # a log record outside any trace belongs to no run
                attributes = attributes_of(record.get("attributes"))
                name = get_field(record, "eventName", "event_name") or attributes.get("event.name")
                body = any_value(record.get("body"))
                if not name and isinstance(body, dict):
                    name = body.get("event.name")
                time = nanos(get_field(record, "timeUnixNano", "time_unix_nano")) or nanos(
                    get_field(record, "observedTimeUnixNano", "observed_time_unix_nano")
                )
                event = Event(str(name or ""), time, attributes, body)
                yield trace_id, id_of(get_field(record, "spanId", "span_id"), 8), event


def detect(record: Any) -> bool:
    """Whether a record is an OTLP/JSON export request (spans or logs)."""
    if isinstance(record, list) and record:
        record = record[0]
    return isinstance(record, dict) and any(key in record for key in _REQUEST_KEYS)


def requests_of(record: Any) -> Iterator[dict[str, Any]]:
    """The export requests in a record (a request, or a list of them)."""
    if isinstance(record, list):
        for item in record:
            yield from requests_of(item)
    elif isinstance(record, dict):
        yield record
