"""Langfuse traces (``langfuse``) read into one :class:`Trace` each.

A record is a trace as Langfuse's public API and export give it (``GET /api/public/traces/{id}``:
``id``, ``input``, ``output``, ``metadata``, ``latency`` and ``observations``), a list of them, or
a page of observations (``{"data": [...]}``, ``GET /api/public/v2/observations``) or single
observations (JSON Lines) grouped by their ``traceId``. Observations are linked by
``parentObservationId``; their ``type`` is ``TOOL`` (a tool's execution: ``input`` its arguments,
``output`` its result), ``GENERATION`` (a model call: ``input`` messages, ``output`` the reply
with any ``tool_calls``, ``usage``/``usageDetails``), or ``SPAN``, ``AGENT``, ``CHAIN``,
``EVENT``, ... ``level: ERROR`` with ``statusMessage`` marks a failure. The question id is the
trace's ``metadata.question_id`` (or a top-level ``question_id``). docs/traces.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from .common import parse_arguments, text_of
from .model import ToolCall, Trace
from .treelink import (
    Message,
    ModelCalls,
    as_text,
    depths,
    from_json,
    iso_nanos,
    messages_of,
    sum_usage,
)

__all__ = ["detect", "read"]

_TYPES = {
    "SPAN",
    "GENERATION",
    "EVENT",
    "AGENT",
    "TOOL",
    "CHAIN",
    "RETRIEVER",
    "EVALUATOR",
    "EMBEDDING",
    "GUARDRAIL",
}


def _is_observation(record: Any) -> bool:
    return (
        isinstance(record, dict)
        and "traceId" in record
        and str(record.get("type", "")).upper() in _TYPES
    )


def detect(record: Any) -> bool:
    """Whether a record is a Langfuse trace, a page of observations or an observation."""
    if isinstance(record, list) and record:
        record = record[0]
    if not isinstance(record, dict):
        return False
    if isinstance(record.get("observations"), list) and "id" in record:
        return True
    data = record.get("data")
    if isinstance(data, list) and data and _is_observation(data[0]):
        return True
    return _is_observation(record)


def _nanos(value: Any) -> int | None:
    return iso_nanos(value) if isinstance(value, str) else None


def read(records: Iterable[Any], source: str) -> Iterator[Trace]:
    """The traces of a Langfuse file's records."""
    loose: dict[str, list[dict[str, Any]]] = {}
    current: str | None = None
    for number, record in enumerate(records, 1):
        items = record if isinstance(record, list) else [record]
        for index, item in enumerate(items):
            where = f"{source}:record {number}" + (f"[{index}]" if isinstance(record, list) else "")
            if not isinstance(item, dict):
                continue
            if isinstance(item.get("observations"), list):
                yield _trace(item, item["observations"], where)
                continue
            data = item.get("data")
            page: list[Any] = data if isinstance(data, list) else [item]
            for observation in page:
                if not _is_observation(observation):
                    continue
                trace_id = str(observation["traceId"])
                if current is not None and trace_id != current and trace_id not in loose:
                    # observations come trace by trace: the previous trace is complete
                    yield _trace({"id": current}, loose.pop(current), source)
                current = trace_id
                loose.setdefault(trace_id, []).append(observation)
    for trace_id, observations in loose.items():
        yield _trace({"id": trace_id}, observations, source)


def _usage(observation: dict[str, Any]) -> tuple[int | None, int | None, int | None]:
    for key in ("usageDetails", "usage"):
        usage = observation.get(key)
        if isinstance(usage, dict) and usage:
            found = [
                _int(usage.get(name) or usage.get(alt))
                for name, alt in (
                    ("input", "prompt_tokens"),
                    ("output", "completion_tokens"),
                    ("total", "total_tokens"),
                )
            ]
            if any(v is not None for v in found):
                return found[0], found[1], found[2]
    return None, None, None


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _replies(output: Any) -> list[Message]:
    """A generation's output: a reply message, a list of them, a completion, or text."""
    value = from_json(output)
    if isinstance(value, str):
        return [Message("assistant", value)]
    if isinstance(value, dict) and "role" not in value and "choices" not in value:
        value = {"role": "assistant", **value}
    if isinstance(value, dict) and "role" in value and value.get("role") != "assistant":
        return messages_of(value)
    return [m for m in messages_of(value) if m.role in ("assistant", "")]


def _text(value: Any, keys: tuple[str, ...]) -> str | None:
    value = from_json(value)
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in keys:
            if isinstance(value.get(key), str):
                return str(value[key])
    return None


def _trace(record: dict[str, Any], observations: list[Any], source: str) -> Trace:
    trace = Trace(format="langfuse", source=source, trace_id=as_text(record.get("id")))
    metadata = record.get("metadata") if isinstance(record.get("metadata"), dict) else {}
    question_id = record.get("question_id") or (metadata or {}).get("question_id")
    trace.question_id = as_text(question_id)
    trial = (metadata or {}).get("trial")
    if trial is not None:  # repeated runs of one question
        trace.metadata["trial"] = trial
    unique: dict[str, dict[str, Any]] = {}
    duplicates = 0
    for observation in observations:
        if not isinstance(observation, dict) or observation.get("id") is None:
            continue
        key = str(observation["id"])
        if key in unique:
            duplicates += 1
        else:
            unique[key] = observation
    parent = {
        key: as_text(observation.get("parentObservationId")) for key, observation in unique.items()
    }
    depth, broken = depths(parent)
    start = {key: _nanos(o.get("startTime")) for key, o in unique.items()}
    end = {key: _nanos(o.get("endTime")) for key, o in unique.items()}
    order = sorted(unique, key=lambda k: (start[k] or 0, depth[k]))
    roots = [key for key in order if parent[key] is None]
    if roots:
        trace.root_span_id = roots[0]
    if isinstance(record.get("latency"), (int, float)):
        trace.elapsed_sec = float(record["latency"])
    elif roots and start[roots[0]] is not None and end[roots[0]] is not None:
        trace.elapsed_sec = (end[roots[0]] - start[roots[0]]) / 1e9  # type: ignore[operator]
    if trace.question_id is None:
        for key in order:
            meta = unique[key].get("metadata")
            if isinstance(meta, dict) and meta.get("question_id") is not None:
                trace.question_id = str(meta["question_id"])
                break
    executed: list[ToolCall] = []
    usages: list[tuple[int | None, int | None, int | None]] = []
    seen = ModelCalls(question=_text(record.get("input"), ("question", "input", "query")))
    answer = _text(record.get("output"), ("answer", "output", "content"))
    for key in order:
        observation = unique[key]
        kind = str(observation.get("type", "")).upper()
        if kind == "TOOL":
            executed.append(_tool(key, observation, parent[key], start[key]))
            continue
        if kind != "GENERATION":
            continue
        if trace.model is None and observation.get("model"):
            trace.model = str(observation["model"])
        usages.append(_usage(observation))
        inputs = messages_of(observation.get("input"))
        replies = _replies(observation.get("output"))
        seen.add(inputs, replies, key, parent[key], end[key] or start[key])
    sum_usage(trace, [u for u in usages if any(v is not None for v in u)])
    return seen.finish(trace, answer, executed, depth, duplicates, broken)


def _tool(key: str, observation: dict[str, Any], parent: str | None, start: int | None) -> ToolCall:
    """A ``TOOL`` observation: the execution of one call."""
    metadata = observation.get("metadata") if isinstance(observation.get("metadata"), dict) else {}
    call_id = (metadata or {}).get("tool_call_id") or (metadata or {}).get("gen_ai.tool.call.id")
    call = ToolCall(
        name=str(observation.get("name") or ""),
        id=as_text(call_id),
        record_id=key,
        parent=parent,
        start=start,
    )
    arguments = from_json(observation.get("input"))
    decorated = isinstance(arguments, dict) and set(arguments) == {"args", "kwargs"}
    if decorated and arguments["kwargs"] and not arguments["args"]:
        arguments = arguments["kwargs"]  # the @observe decorator's capture of keyword arguments
    call.args, call.args_error = parse_arguments(arguments)
    call.output = observation.get("output")
    if str(observation.get("level", "")).upper() == "ERROR":
        call.status = "error"
        call.error = as_text(observation.get("statusMessage")) or text_of(call.output) or "error"
    else:
        call.status = "success"
    return call
