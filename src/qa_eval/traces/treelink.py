"""What the tree-shaped trace readers (OTLP, Langfuse, LangSmith) share: arguments parsed as
JSON, a planned call linked to the record that executed it, calls ordered, and each call's losses
counted into the trace's fidelity.

A model's reply may plan a tool call (with its id, name and arguments) and a separate span,
observation or run record its execution (with its output and status). The two are one call:
linked by the call id where both have one, else by name and order under the same parent (the
k-th unlinked plan of ``search`` under an agent span ↔ the k-th unlinked execution of ``search``
under it), never by position alone.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .model import ToolCall, Trace

__all__ = [
    "Message",
    "as_text",
    "chat_message",
    "depths",
    "finish",
    "from_json",
    "link",
    "messages_of",
    "parse_args",
    "text_of",
]


def parse_args(value: Any) -> tuple[Any, str | None]:
    """Arguments as an object: JSON text parsed, the raw text and the JSON error when invalid."""
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value).decode("utf-8", "replace")
    if not isinstance(value, str):
        return value, None
    if not value.strip():
        return None, None
    try:
        return json.loads(value), None
    except json.JSONDecodeError as error:
        return value, f"{error.msg} at {error.lineno}:{error.colno}"
    except RecursionError:
        return value, "nested too deeply"


def text_of(content: Any) -> str | None:
    """The text of a message content: a string, or the text parts of a list of parts."""
    if content is None:
        return None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [t for part in content if (t := _part_text(part)) is not None]
        return "".join(texts) if texts else None
    if isinstance(content, dict):
        return _part_text(content)
    return str(content)


def _part_text(part: Any) -> str | None:
    if isinstance(part, str):
        return part
    if isinstance(part, dict) and part.get("type", "text") in ("text", "output_text", "input_text"):
        for key in ("text", "content"):
            if isinstance(part.get(key), str):
                return str(part[key])
    return None


@dataclass
class Message:
    """One message of a conversation as a trace recorded it."""

    role: str
    text: str | None = None
    calls: list[tuple[str | None, str, Any]] = field(default_factory=list)
    result_of: str | None = None
    result: Any = None


def from_json(value: Any) -> Any:
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in ("{", "["):
            try:
                return json.loads(text)
            except (json.JSONDecodeError, RecursionError):
                return value
    return value


def chat_message(item: Any) -> Message | None:
    """A Chat Completions-shaped message (deprecated GenAI events and attributes, OpenInference
    ``input.value``)."""
    if not isinstance(item, dict):
        return None
    if "parts" in item:
        return parts_message(item)
    role = str(item.get("role") or "")
    message = Message(role, text_of(item.get("content")))
    for call in item.get("tool_calls") or []:
        if isinstance(call, dict):
            inner = call.get("function")
            function: dict[str, Any] = inner if isinstance(inner, dict) else call
            name = function.get("name")
            if name is not None:
                arguments = function.get("arguments", function.get("args"))
                message.calls.append((as_text(call.get("id")), str(name), arguments))
    if role == "tool" or item.get("tool_call_id") is not None:
        message.result_of = as_text(item.get("tool_call_id") or item.get("id"))
        message.result = item.get("content")
        message.text = None
    return message


def parts_message(item: dict[str, Any]) -> Message:
    """A GenAI ``gen_ai.input.messages``/``gen_ai.output.messages`` message of parts."""
    message = Message(str(item.get("role") or ""))
    texts = []
    for part in item.get("parts") or []:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("content"), str):
            texts.append(part["content"])
        elif kind == "tool_call" and part.get("name") is not None:
            message.calls.append(
                (as_text(part.get("id")), str(part["name"]), part.get("arguments"))
            )
        elif kind == "tool_call_response":
            message.result_of = as_text(part.get("id"))
            message.result = part.get("response", part.get("result"))
    message.text = "".join(texts) if texts else None
    return message


def as_text(value: Any) -> str | None:
    return None if value is None else str(value)


def messages_of(value: Any) -> list[Message]:
    value = from_json(value)
    if isinstance(value, dict):
        if isinstance(value.get("messages"), list):
            value = value["messages"]
        elif isinstance(value.get("choices"), list):
            value = [c.get("message") for c in value["choices"] if isinstance(c, dict)]
        else:
            value = [value]
    if isinstance(value, list):
        return [m for item in value if (m := chat_message(item)) is not None]
    return []


def depths(parent: dict[str, str | None]) -> tuple[dict[str, int], int]:
    """The depth of each record in a parent map, after cutting (in place) each link to a missing
    parent and one link of each cycle; with how many links were cut."""
    broken = 0
    for key, above in parent.items():
        if above is not None and above not in parent:
            parent[key] = None
            broken += 1
    depth: dict[str, int] = {}
    for start in parent:
        while start not in depth:
            path: list[str] = []
            seen: set[str] = set()
            node: str | None = start
            while node is not None and node not in depth and node not in seen:
                seen.add(node)
                path.append(node)
                node = parent[node]
            if node is not None and node in seen:  # a cycle: its entry becomes a root
                broken += 1
                parent[node] = None
                continue
            base = depth[node] if node is not None else -1
            for item in reversed(path):
                base += 1
                depth[item] = base
    return depth, broken


def _merge(plan: ToolCall, done: ToolCall) -> ToolCall:
    """One call from its plan (id, arguments) and its execution (output, status, record)."""
    if done.args is None and done.args_error is None and "args_schema" not in done.lost:
        done.args, done.args_error = plan.args, plan.args_error
    elif done.args_error is not None and plan.args is not None and plan.args_error is None:
        done.args, done.args_error = plan.args, None  # the plan's JSON, not the executor's repr
    elif done.args is None and plan.args is not None:
        done.args, done.args_error = plan.args, plan.args_error
        done.lost = [item for item in done.lost if item != "args_schema"]
    done.id = done.id or plan.id
    if done.output is None:
        done.output = plan.output
    if done.status is None:
        done.status, done.error = plan.status, plan.error
    return done


def link(planned: list[ToolCall], executed: list[ToolCall]) -> list[ToolCall]:
    """Planned and executed calls as one list: a pair linked by id, else by name and order under
    the same parent, is one call; what stays unlinked stays, as it is."""
    by_id: dict[str, ToolCall] = {}
    for plan in planned:
        if plan.id is not None:
            by_id.setdefault(plan.id, plan)
    linked: set[int] = set()
    calls: list[ToolCall] = []
    rest: list[ToolCall] = []
    for done in executed:
        match = by_id.get(done.id) if done.id is not None else None
        if match is not None and id(match) not in linked:
            linked.add(id(match))
            calls.append(_merge(match, done))
        else:
            rest.append(done)
    waiting: dict[tuple[str | None, str], list[ToolCall]] = defaultdict(list)
    for plan in planned:
        if id(plan) not in linked:
            waiting[(plan.parent, plan.name)].append(plan)
    for done in rest:
        queue = waiting.get((done.parent, done.name))
        candidates = [p for p in queue or [] if done.id is None or p.id is None]
        if candidates:
            plan = candidates[0]
            queue.remove(plan)  # type: ignore[union-attr]
            linked.add(id(plan))
            calls.append(_merge(plan, done))
        else:
            calls.append(done)
    calls.extend(plan for plan in planned if id(plan) not in linked)
    return calls


def _order_key(call: ToolCall, depth: Mapping[str, int]) -> tuple[float, int]:
    start = math.inf if call.start is None else float(call.start)
    return start, depth.get(call.parent, 0) if call.parent is not None else 0


def finish(
    trace: Trace,
    calls: Iterable[ToolCall],
    depth: Mapping[str, int] | None = None,
    extra: dict[str, int] | None = None,
) -> Trace:
    """Order the calls (start time, then depth of their parent), list what each lacks, and count
    it all into ``trace.fidelity`` (with ``extra`` losses the reader counted itself)."""
    ordered = sorted(calls, key=lambda call: _order_key(call, depth or {}))
    for call in ordered:
        lost = [item for item in call.lost if item in ("args_schema",)]
        if call.args is None and "args_schema" not in lost:
            lost.append("args")
        if call.args_error is not None:
            lost.append("args_invalid")
        if call.output is None and call.status != "error":
            lost.append("output")
        if call.status is None:
            lost.append("status")
        call.lost = lost
        trace.fidelity.losses.update(lost)
    trace.calls = ordered
    trace.fidelity.traces = 1
    trace.fidelity.tool_calls = len(ordered)
    for name, count in (extra or {}).items():
        if count:
            trace.fidelity.losses[name] += count
    return trace
