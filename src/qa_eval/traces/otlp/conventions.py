"""What one span says, by the conventions agents write: the current GenAI semantic conventions
(``gen_ai.operation.name`` ``chat``/``execute_tool``/``invoke_agent``, ``gen_ai.tool.*``,
``gen_ai.input.messages``/``gen_ai.output.messages`` with parts), the deprecated ones
(``gen_ai.prompt``/``gen_ai.completion``, ``gen_ai.*.message``/``gen_ai.choice`` events on spans
or as log records, ``gen_ai.usage.prompt_tokens``), OpenLLMetry's flattened
``gen_ai.prompt.N.*``/``gen_ai.completion.N.tool_calls.M.*`` and ``traceloop.*``, and
OpenInference (``openinference.span.kind``, ``tool.*``, ``input.value``/``output.value``,
``llm.input_messages``/``llm.output_messages``, ``llm.token_count.*``); and the attributes none
of them names.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..common import parse_arguments, text_of
from ..model import ToolCall
from ..treelink import Message, answer_in_order, as_text, chat_message, from_json, messages_of
from .records import Event, Span

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
_OWNED = ("traceloop.", "openinference.", "tool.", "tool_call.", "input.", "output.", "message.")
"""Prefixes whose every attribute some convention reads: watched, and known as a whole."""
_WATCHED = ("gen_ai.", "llm.", "ai.", *_OWNED)
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
    *_OWNED,
)
_INDEX = re.compile(r"\.\d+(?=\.|$)")
_SCHEMA_VERSION = re.compile(r"/schemas/(\d+\.\d+(?:\.\d+)?)")
_OPENLLMETRY = re.compile(r"^gen_ai\.(prompt|completion)\.(\d+)\.(.+)$")
_OPENINFERENCE = re.compile(r"^llm\.(input|output)_messages\.(\d+)\.message\.(.+)$")


_TRACEBACK = "Traceback (most recent call last)"


@dataclass
class Reading:
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


def _event_message(event: Event) -> tuple[str, Message] | None:
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
        if isinstance(choice, str):  # JSON text, as bridges write an event body's nested values
            choice = from_json(choice)
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


def first_of(attributes: dict[str, Any], *keys: str) -> Any:
    """The value of the first of ``keys`` set in ``attributes``, or None."""
    for key in keys:
        if attributes.get(key) is not None:
            return attributes[key]
    return None


def read_span(span: Span, events: list[Event]) -> Reading:
    """What a span says, whatever convention it is written in."""
    a = span.attributes
    reading = Reading()
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
        first_of(
            a,
            "gen_ai.usage.input_tokens",
            "gen_ai.usage.prompt_tokens",
            "llm.token_count.prompt",
            "llm.usage.prompt_tokens",
        )
    )
    completion = _int(
        first_of(
            a,
            "gen_ai.usage.output_tokens",
            "gen_ai.usage.completion_tokens",
            "llm.token_count.completion",
            "llm.usage.completion_tokens",
        )
    )
    total = _int(
        first_of(a, "llm.token_count.total", "llm.usage.total_tokens", "gen_ai.usage.total_tokens")
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


def _tool_call(span: Span) -> ToolCall:
    a = span.attributes
    name = first_of(
        a, "gen_ai.tool.name", "tool.name", "tool_call.function.name", "traceloop.entity.name"
    )
    if name is None:
        name = span.name.removeprefix("execute_tool ").strip() or span.name
    call = ToolCall(
        name=str(name),
        id=as_text(first_of(a, "gen_ai.tool.call.id", "tool_call.id", "tool.id")),
        record_id=span.span_id,
        parent=span.parent,
        start=span.start,
    )
    raw = first_of(a, "gen_ai.tool.call.arguments", "input.value", "tool_call.function.arguments")
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
    output = first_of(a, "gen_ai.tool.call.result", "output.value")
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


def _exception(span: Span) -> str | None:
    for event in span.events:
        if event.name == "exception":
            message = event.attributes.get("exception.message")
            if message:
                return str(message)
    return None


def count_unknown(attributes: dict[str, Any], into: Counter[str]) -> None:
    """Counts into ``into`` the watched attributes no convention names (indexes read as ``.N``)."""
    for key in attributes:
        if key.startswith(_WATCHED) and not key.startswith(_KNOWN) and key not in _CURRENT_KEYS:
            if key in _DEPRECATED_KEYS:
                continue
            into[_INDEX.sub(".N", key)] += 1
