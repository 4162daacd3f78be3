"""What the tree-shaped trace readers (OTLP, Langfuse, LangSmith) share beyond ``common``: the
messages their model calls record (Chat Completions-shaped, or GenAI messages of parts), the tool
calls those messages plan, the results later model calls were sent, the depth of each record in a
possibly broken tree, the usage of several model calls summed, and the tool calls and answer the
Langfuse and LangSmith readers gather from their model calls in order (:class:`ModelCalls`).

Linking a plan to its execution, ordering and counting the losses are ``common``'s, shared with
the message formats.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from typing import Any

from .common import finish, link, parse_arguments, text_of
from .model import ToolCall, Trace

__all__ = [
    "Message",
    "ModelCalls",
    "answer_in_order",
    "as_text",
    "chat_message",
    "depths",
    "fill_results",
    "from_json",
    "iso_nanos",
    "messages_of",
    "planned_calls",
    "sum_usage",
]


@dataclass
class Message:
    """One message of a conversation as a trace recorded it."""

    role: str
    text: str | None = None
    calls: list[tuple[str | None, str, Any]] = field(default_factory=list)
    result_of: str | None = None
    result: Any = None


def from_json(value: Any) -> Any:
    """A string holding a JSON object or array, parsed (as it was when it does not parse); any
    other value as it is."""
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


def answer_in_order(messages: list[Message]) -> None:
    """Give each tool result without a call id (OpenLLMetry's ``gen_ai.tool.message`` events
    carry none) the id of the next call the assistant message before it made, in order."""
    waiting: list[str] = []
    for message in messages:
        if message.calls:
            waiting = [call_id for call_id, _, _ in message.calls if call_id]
        elif message.role == "tool" and not message.result_of:
            if waiting:
                message.result_of = waiting.pop(0)
        elif message.result_of and message.result_of in waiting:
            waiting.remove(message.result_of)


def as_text(value: Any) -> str | None:
    """A value as text (an id written as a number, say), None kept."""
    return None if value is None else str(value)


def iso_nanos(value: str, naive: tzinfo | None = None) -> int | None:
    """An ISO 8601 time as Unix nanoseconds (to the microsecond), None when it is not one; a time
    without a zone is in ``naive`` (else the local zone of its date)."""
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None and naive is not None:
        moment = moment.replace(tzinfo=naive)
    return int(moment.timestamp() * 1_000_000) * 1000


def messages_of(value: Any) -> list[Message]:
    """The messages of a model call's input or output: a list of messages, an object with
    ``messages`` or OpenAI's ``choices``, or one message (JSON text parsed first)."""
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


def planned_calls(
    message: Message, record_id: str, parent: str | None, start: int | None
) -> list[ToolCall]:
    """The tool calls a model's message plans, as calls of the record that holds them."""
    calls = []
    for call_id, name, arguments in message.calls:
        args, error = parse_arguments(arguments)
        calls.append(
            ToolCall(
                name=name,
                args=args,
                args_error=error,
                id=call_id,
                record_id=record_id,
                parent=parent,
                start=start,
            )
        )
    return calls


def fill_results(calls: list[ToolCall], results: Mapping[str, Any]) -> int:
    """Give each result later model calls were sent (call id -> result, in the order first seen)
    to the call of that id that has no output yet; how many results have no call."""
    unlinked = 0
    for call_id, result in results.items():
        holder = next((c for c in calls if c.id == call_id), None)
        if holder is None:
            unlinked += 1
        elif holder.output is None:
            holder.output = result
    return unlinked


@dataclass
class ModelCalls:
    """What a trace's model calls, read in order, give: the question (the first user message, if
    the trace did not say it), the results they were sent, the calls they plan, the last reply."""

    question: str | None = None
    last_answer: str | None = None
    planned: list[ToolCall] = field(default_factory=list)
    results: dict[str, Any] = field(default_factory=dict)

    def add(
        self,
        inputs: list[Message],
        replies: list[Message],
        record_id: str,
        parent: str | None,
        start: int | None,
    ) -> None:
        """Note one model call: the messages it was sent and its replies."""
        for message in inputs:
            if self.question is None and message.role == "user" and message.text:
                self.question = message.text
            if message.result_of is not None:
                self.results.setdefault(message.result_of, message.result)
        for message in replies:
            if message.text:
                self.last_answer = message.text
            self.planned.extend(planned_calls(message, record_id, parent, start))

    def finish(
        self,
        trace: Trace,
        answer: str | None,
        executed: list[ToolCall],
        depth: dict[str, int],
        duplicates: int,
        broken: int,
    ) -> Trace:
        """The trace completed: its question, its answer (``answer``, else the last reply), its
        planned calls linked to the ``executed`` ones and given their results, its losses."""
        trace.question = self.question
        trace.answer = answer if answer is not None else self.last_answer
        calls = link(self.planned, executed)
        unlinked = fill_results(calls, self.results)
        return finish(
            trace,
            calls,
            depth,
            {"duplicate_id": duplicates, "broken_parent": broken, "unlinked_result": unlinked},
        )


def sum_usage(trace: Trace, counted: list[tuple[int | None, int | None, int | None]]) -> None:
    """Set the trace's tokens to the sum of the (input, output, total) usages counted: each sum
    only where every usage has that count (a total from input + output where it has none)."""
    if not counted:
        return

    def total(values: list[int | None]) -> int | None:
        return sum(v for v in values if v is not None) if None not in values else None

    totals = [
        u[2] if u[2] is not None else (None if u[0] is None or u[1] is None else u[0] + u[1])
        for u in counted
    ]
    trace.input_tokens = total([u[0] for u in counted])
    trace.output_tokens = total([u[1] for u in counted])
    trace.total_tokens = total(totals)
