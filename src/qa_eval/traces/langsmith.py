"""LangSmith runs (``langsmith``) read into one :class:`Trace` per trace.

A record is a run tree as LangSmith's SDK and export give it (a run with ``run_type``
``chain``/``llm``/``tool``/..., ``inputs``, ``outputs``, ``error``, ``start_time``/``end_time``,
``extra.metadata``, ``trace_id``, ``dotted_order`` and nested ``child_runs``), a list of runs, or
flat runs (``list_runs``, JSON Lines) linked by ``parent_run_id`` and grouped by ``trace_id``.
A ``tool`` run is a tool's execution (its ``inputs`` the arguments, ``outputs`` the result, which
LangChain writes as a ``ToolMessage`` with the ``tool_call_id``); an ``llm`` run is a model call
whose reply may plan tool calls (LangChain's serialised ``AIMessage`` ``tool_calls``, or OpenAI's
``choices``), with token usage in the run's ``prompt_tokens``/``completion_tokens``, its outputs'
``usage_metadata`` or ``llm_output.token_usage``. The question id is the root run's
``extra.metadata.question_id``. docs/traces.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

from .common import parse_arguments, text_of
from .model import ToolCall, Trace
from .treelink import (
    Message,
    ModelCalls,
    as_text,
    chat_message,
    depths,
    from_json,
    iso_nanos,
    sum_usage,
)

__all__ = ["detect", "read"]

_ROLES = {
    "HumanMessage": "user",
    "human": "user",
    "AIMessage": "assistant",
    "AIMessageChunk": "assistant",
    "ai": "assistant",
    "SystemMessage": "system",
    "system": "system",
    "ToolMessage": "tool",
    "tool": "tool",
}


def detect(record: Any) -> bool:
    """Whether a record is a LangSmith run (or a list of runs)."""
    if isinstance(record, list) and record:
        record = record[0]
    return isinstance(record, dict) and "run_type" in record and "id" in record


def _nanos(value: Any) -> int | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value * 1_000_000_000) if value < 1e11 else int(value * 1_000_000)
    if not isinstance(value, str):
        return None
    return iso_nanos(value, datetime.now().astimezone().tzinfo)


def _flatten(run: dict[str, Any]) -> list[dict[str, Any]]:
    """A run tree as flat runs, each child's parent set from where it is nested."""
    flat: list[dict[str, Any]] = []
    stack: list[tuple[dict[str, Any], str | None]] = [(run, None)]
    while stack:
        item, parent = stack.pop()
        if not isinstance(item, dict) or item.get("id") is None:
            continue
        node = {k: v for k, v in item.items() if k != "child_runs"}
        if node.get("parent_run_id") is None and parent is not None:
            node["parent_run_id"] = parent
        flat.append(node)
        children = item.get("child_runs")
        if isinstance(children, list):
            stack.extend((child, str(item["id"])) for child in reversed(children))
    return flat


def read(records: Iterable[Any], source: str) -> Iterator[Trace]:
    """The traces of a LangSmith file's records."""
    loose: dict[str, list[dict[str, Any]]] = {}
    current: str | None = None
    for record in records:
        for run in record if isinstance(record, list) else [record]:
            if not detect(run):
                continue
            flat = _flatten(run)
            if isinstance(run.get("child_runs"), list) and run["child_runs"]:
                yield _trace(flat, source)  # a whole tree in one record
                continue
            trace_id = str(run.get("trace_id") or run["id"])
            if current is not None and trace_id != current and trace_id not in loose:
                yield _trace(loose.pop(current), source)
            current = trace_id
            loose.setdefault(trace_id, []).extend(flat)
    for runs in loose.values():
        yield _trace(runs, source)


def _langchain(value: Any) -> Any:
    """A LangChain message (serialised ``{"lc": 1, "id": [..., "AIMessage"], "kwargs": ...}`` or
    ``{"type": "ai", "data": ...}``) as a Chat Completions-shaped one; anything else as it is."""
    if not isinstance(value, dict):
        return value
    if value.get("lc") is not None and isinstance(value.get("kwargs"), dict):
        path = value.get("id")
        kind = path[-1] if isinstance(path, list) and path else ""
        body = dict(value["kwargs"])
    elif isinstance(value.get("data"), dict) and value.get("type") in _ROLES:
        kind, body = str(value["type"]), dict(value["data"])
    elif value.get("type") in _ROLES and "role" not in value:
        kind, body = str(value["type"]), dict(value)
    else:
        return value
    body["role"] = _ROLES.get(str(kind), str(body.get("type") or ""))
    return body


def _messages(value: Any) -> list[Message]:
    """Messages from an llm run's inputs or outputs, whichever shape they have."""
    value = from_json(value)
    if isinstance(value, dict):
        for key in ("messages", "generations", "choices", "output", "message"):
            if key in value:
                return _messages(value[key])
        if "prompts" in value and isinstance(value["prompts"], list):
            return [Message("user", str(p)) for p in value["prompts"]]
        value = _langchain(value)
        if "text" in value and "role" not in value and "content" not in value:
            return [Message("assistant", str(value["text"]))]
        message = chat_message(value)
        return [message] if message is not None else []
    if isinstance(value, list):
        return [m for item in value for m in _messages(item)]
    if isinstance(value, str):
        return [Message("", value)]
    return []


def _generation(value: Any) -> Any:
    if isinstance(value, dict) and "message" in value:
        return value["message"]
    return value


def _replies(outputs: Any) -> list[Message]:
    outputs = from_json(outputs)
    if isinstance(outputs, dict) and isinstance(outputs.get("generations"), list):
        items: list[Any] = []
        for batch in outputs["generations"]:
            items.extend(batch if isinstance(batch, list) else [batch])
        replies = []
        for item in items:
            inner = _generation(item)
            if inner is item and isinstance(item, dict) and "text" in item:
                replies.append(Message("assistant", str(item["text"])))
            else:
                replies.extend(_messages(inner))
        return [m for m in replies if m.role in ("assistant", "")]
    return [m for m in _messages(outputs) if m.role in ("assistant", "")]


def _usage(run: dict[str, Any]) -> tuple[int | None, int | None, int | None]:
    fields = (run.get("prompt_tokens"), run.get("completion_tokens"), run.get("total_tokens"))
    if any(isinstance(v, int) and v for v in fields):
        return tuple(_int(v) for v in fields)  # type: ignore[return-value]
    outputs = run.get("outputs") if isinstance(run.get("outputs"), dict) else {}
    candidates: list[Any] = [(outputs or {}).get("usage_metadata"), (outputs or {}).get("usage")]
    llm_output = (outputs or {}).get("llm_output")
    if isinstance(llm_output, dict):
        candidates.append(llm_output.get("token_usage"))
    generations = (outputs or {}).get("generations")
    if isinstance(generations, list):
        for batch in generations:
            for item in batch if isinstance(batch, list) else [batch]:
                message = _langchain(_generation(item))
                if isinstance(message, dict):
                    candidates.append(message.get("usage_metadata"))
    for usage in candidates:
        if isinstance(usage, dict):
            found = (
                _int(usage.get("input_tokens", usage.get("prompt_tokens"))),
                _int(usage.get("output_tokens", usage.get("completion_tokens"))),
                _int(usage.get("total_tokens")),
            )
            if any(v is not None for v in found):
                return found
    return None, None, None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: Any) -> str | None:
    value = from_json(value)
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in ("question", "input", "query", "answer", "output", "content"):
            if isinstance(value.get(key), str):
                return str(value[key])
    return None


def _tool(run: dict[str, Any], parent: str | None, start: int | None) -> ToolCall:
    """A ``tool`` run: the execution of one call."""
    extra = run.get("extra") if isinstance(run.get("extra"), dict) else {}
    metadata = (extra or {}).get("metadata")
    call = ToolCall(
        name=str(run.get("name") or ""),
        record_id=str(run["id"]),
        parent=parent,
        start=start,
        id=as_text(metadata.get("tool_call_id")) if isinstance(metadata, dict) else None,
    )
    inputs = from_json(run.get("inputs"))
    if isinstance(inputs, dict):
        call.id = call.id or as_text(inputs.get("tool_call_id"))
        if set(inputs) - {"tool_call_id", "callbacks"} == {"input"}:
            inputs = inputs["input"]
        else:
            inputs = {k: v for k, v in inputs.items() if k not in ("tool_call_id", "callbacks")}
    call.args, call.args_error = parse_arguments(inputs)
    outputs = from_json(run.get("outputs"))
    if isinstance(outputs, dict) and "output" in outputs and len(outputs) == 1:
        outputs = outputs["output"]
    message = _langchain(outputs)
    failed = False
    if isinstance(message, dict) and message.get("role") == "tool":
        call.id = call.id or as_text(message.get("tool_call_id"))
        failed = message.get("status") == "error"
        outputs = message.get("content")
    call.output = outputs
    error = run.get("error")
    if error or failed:
        call.status = "error"
        call.error = as_text(error) or text_of(outputs) or "error"
    elif run.get("end_time") is not None or run.get("outputs") is not None:
        call.status = "success"
    return call


def _trace(runs: list[dict[str, Any]], source: str) -> Trace:
    unique: dict[str, dict[str, Any]] = {}
    for run in runs:
        unique.setdefault(str(run["id"]), run)
    duplicates = len(runs) - len(unique)
    parent = {key: as_text(run.get("parent_run_id")) for key, run in unique.items()}
    depth, broken = depths(parent)
    start = {key: _nanos(run.get("start_time")) for key, run in unique.items()}
    end = {key: _nanos(run.get("end_time")) for key, run in unique.items()}
    order = sorted(
        unique,
        key=lambda k: (start[k] or 0, str(unique[k].get("dotted_order") or ""), depth[k]),
    )
    roots = [key for key in order if parent[key] is None]
    root = unique[roots[0]] if roots else unique[order[0]]
    trace = Trace(
        format="langsmith",
        source=source,
        trace_id=as_text(root.get("trace_id")) or str(root["id"]),
        root_span_id=str(root["id"]),
    )
    root_key = str(root["id"])
    if start[root_key] is not None and end[root_key] is not None:
        trace.elapsed_sec = (end[root_key] - start[root_key]) / 1e9  # type: ignore[operator]
    for key in [root_key, *order]:
        extra = unique[key].get("extra")
        metadata = extra.get("metadata") if isinstance(extra, dict) else None
        if isinstance(metadata, dict) and metadata.get("question_id") is not None:
            trace.question_id = str(metadata["question_id"])
            break
    extra = root.get("extra")
    metadata = extra.get("metadata") if isinstance(extra, dict) else None
    if isinstance(metadata, dict) and metadata.get("trial") is not None:  # repeated runs
        trace.metadata["trial"] = metadata["trial"]
    executed: list[ToolCall] = []
    usages: list[tuple[int | None, int | None, int | None]] = []
    question = _text(root.get("inputs")) if root.get("run_type") != "llm" else None
    answer = _text(root.get("outputs")) if root.get("run_type") != "llm" else None
    seen = ModelCalls(question=question)
    for key in order:
        run = unique[key]
        kind = str(run.get("run_type", "")).lower()
        if kind == "tool":
            executed.append(_tool(run, parent[key], start[key]))
            continue
        if kind != "llm":
            continue
        extra = run.get("extra")
        invocation = extra.get("invocation_params") if isinstance(extra, dict) else None
        if trace.model is None and isinstance(invocation, dict):
            model = invocation.get("model") or invocation.get("model_name")
            trace.model = as_text(model)
        if not _nested(key, parent, unique):
            usages.append(_usage(run))
        replies = _replies(run.get("outputs"))
        seen.add(_messages(run.get("inputs")), replies, key, parent[key], end[key] or start[key])
    own = _usage(root) if root.get("run_type") != "llm" else (None, None, None)
    counted = [own] if any(v is not None for v in own) else [u for u in usages if any(u)]
    sum_usage(trace, counted)
    return seen.finish(trace, answer, executed, depth, duplicates, broken)


def _nested(key: str, parent: dict[str, str | None], runs: dict[str, dict[str, Any]]) -> bool:
    """Whether an llm run is inside another llm run (its usage is counted there)."""
    node = parent.get(key)
    while node is not None:
        if str(runs[node].get("run_type", "")).lower() == "llm":
            return True
        node = parent.get(node)
    return False
