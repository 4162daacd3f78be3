"""Hand-made OTLP/JSON for the OTLP reader's tests: spans and log records written as the OTLP
specification defines them (hex ids, int64s as strings, ``AnyValue``s)."""

from __future__ import annotations

from typing import Any

TRACE = "5b8efff798038103d269b633813fc60c"
OTHER = "0af7651916cd43dd8448eb211c80319c"


def any_value(value: Any) -> dict[str, Any]:
    """A Python value as an OTLP ``AnyValue``."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, (list, tuple)):
        return {"arrayValue": {"values": [any_value(v) for v in value]}}
    if isinstance(value, dict):
        return {"kvlistValue": {"values": attributes(value)}}
    return {"stringValue": str(value)}


def attributes(values: dict[str, Any]) -> list[dict[str, Any]]:
    """Attributes as OTLP key-value pairs."""
    return [{"key": k, "value": any_value(v)} for k, v in values.items()]


def span(
    span_id: str,
    parent: str | None,
    name: str,
    attrs: dict[str, Any],
    start: int,
    end: int,
    *,
    trace: str = TRACE,
    error: str | None = None,
    events: list[tuple[str, dict[str, Any]]] = (),  # type: ignore[assignment]
) -> dict[str, Any]:
    """One span; times in seconds from an arbitrary epoch, written as nanoseconds."""
    record: dict[str, Any] = {
        "traceId": trace,
        "spanId": span_id,
        "name": name,
        "kind": 1,
        "startTimeUnixNano": str(1_700_000_000_000_000_000 + start * 1_000_000_000),
        "endTimeUnixNano": str(1_700_000_000_000_000_000 + end * 1_000_000_000),
        "attributes": attributes(attrs),
        "events": [
            {"name": n, "timeUnixNano": "1", "attributes": attributes(a)} for n, a in events
        ],
        "status": {"code": 2, "message": error} if error else {},
    }
    if parent:
        record["parentSpanId"] = parent
    return record


def request(*spans: dict[str, Any], resource: dict[str, Any] | None = None) -> dict[str, Any]:
    """An ``ExportTraceServiceRequest`` holding the spans."""
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": attributes(resource or {"service.name": "agent"})},
                "scopeSpans": [{"scope": {"name": "test"}, "spans": list(spans)}],
            }
        ]
    }


def log(span_id: str, event: str, body: dict[str, Any], trace: str = TRACE) -> dict[str, Any]:
    """One GenAI event as a log record (the event's name in ``event.name``)."""
    return {
        "traceId": trace,
        "spanId": span_id,
        "timeUnixNano": "1700000000000000000",
        "attributes": attributes({"event.name": event, "gen_ai.system": "openai"}),
        "body": any_value(body),
    }


def logs_request(*records: dict[str, Any]) -> dict[str, Any]:
    """An ``ExportLogsServiceRequest`` holding the log records."""
    return {
        "resourceLogs": [
            {"resource": {"attributes": []}, "scopeLogs": [{"logRecords": list(records)}]}
        ]
    }
