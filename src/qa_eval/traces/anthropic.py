"""``anthropic``: Messages API conversations (the ``anthropic`` SDK).

A trace is a list of messages or an object with ``messages`` (and ``system``, ``question_id``,
``metadata``, ``model``, ``usage``); a file holds one, a list of them, or JSON Lines of them.
An assistant message's ``tool_use`` (and ``server_tool_use``) blocks (``id``, ``name``, ``input``)
are linked to the ``tool_result`` blocks of a later user message by ``tool_use_id``; a result
with ``is_error: true`` makes the call's status ``error`` (its content the error text), otherwise
``success``. A message's own ``usage`` (a ``Message`` the SDK returned) is summed, unless the
trace carries its own total.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from .common import (
    Linker,
    add_tokens,
    each_trace,
    finish,
    list_of_objects_with,
    message_list,
    parse_arguments,
    set_result,
    text_of,
    tokens_from,
    word,
)
from .model import ToolCall, Trace

__all__ = ["detect", "read"]

FORMAT = "anthropic"
_CALLS = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})
_MARKS = _CALLS | {"tool_result", "thinking", "redacted_thinking", "mcp_tool_result"}


def _blocks(message: Any) -> list[Any]:
    content = message.get("content") if isinstance(message, Mapping) else None
    return content if isinstance(content, list) else []


def _is_result(block: Any) -> bool:
    kind = block.get("type") if isinstance(block, Mapping) else None
    return isinstance(kind, str) and (kind == "tool_result" or kind.endswith("_tool_result"))


def _marked(messages: Any) -> bool:
    if not isinstance(messages, list):
        return False
    for message in messages[:50]:
        if not isinstance(message, Mapping) or "tool_calls" in message:
            return False
        for block in _blocks(message):
            if isinstance(block, Mapping) and (
                word(block.get("type")) in _MARKS or _is_result(block)
            ):
                return True
    return False


def detect(record: Any) -> bool:
    """Messages with Anthropic content blocks (``tool_use``, ``tool_result``, ``thinking``), or
    an object with ``messages`` and a ``system`` prompt beside them (Chat Completions puts the
    system prompt among the messages)."""
    if (
        isinstance(record, list)
        and record
        and isinstance(record[0], Mapping)
        and ("messages" in record[0])
    ):
        return detect(record[0])
    if isinstance(record, Mapping):
        messages = record.get("messages")
        if isinstance(messages, list) and "system" in record and "role" not in record:
            return all(isinstance(m, Mapping) and "role" in m for m in messages[:50])
        return _marked(messages)
    return _marked(record)


def read(records: Iterable[Any], source: str) -> Iterator[Trace]:
    """One trace per list of messages or object with ``messages``."""
    for record, where in each_trace(records, list_of_objects_with("messages")):
        yield read_trace(record, source, where)


def read_trace(record: Any, source: str, where: str) -> Trace:
    """One trace: a list of messages or an object with ``messages``."""
    trace = Trace(FORMAT, f"{source}:{where}")
    messages = message_list(record, trace, source, where, "an Anthropic trace")
    linker = Linker(trace)
    own_usage = isinstance(record, Mapping) and record.get("usage") is not None
    for message in messages:
        _message(trace, linker, message)
        if not own_usage and message.get("usage") is not None:
            add_tokens(trace, message["usage"])
    if own_usage:
        trace.input_tokens, trace.output_tokens, trace.total_tokens = tokens_from(record["usage"])
    return finish(trace)


def _message(trace: Trace, linker: Linker, message: Mapping[str, Any]) -> None:
    role = message.get("role")
    content = message.get("content")
    if role == "user":
        text = text_of(content)
        if trace.question is None and text:
            trace.question = text
        for block in _blocks(message):
            if _is_result(block):
                call = linker.result(block.get("tool_use_id"))
                if call is not None:
                    output = block.get("content")
                    text = text_of(output)
                    is_error = block.get("is_error") is True
                    if not is_error and isinstance(output, Mapping) and "error_code" in output:
                        is_error = True  # a server tool's error block
                        text = str(output.get("error_code"))
                    set_result(call, text if text is not None else output, is_error)
                    if is_error and text is not None:
                        call.error = text
    elif role == "assistant":
        text = text_of(content)
        if text:
            trace.answer = text
        for block in _blocks(message):
            if isinstance(block, Mapping) and word(block.get("type")) in _CALLS:
                name = block.get("name")
                block_id = block.get("id")
                args, error = parse_arguments(block.get("input"))
                linker.plan(
                    ToolCall(
                        name=name if isinstance(name, str) else "",
                        args=args,
                        id=block_id if isinstance(block_id, str) else None,
                        args_error=error,
                    )
                )
            elif _is_result(block):  # a server tool's result comes in the same reply
                call = linker.result(block.get("tool_use_id"))
                if call is not None:
                    output = block.get("content")
                    failed = isinstance(output, Mapping) and "error_code" in output
                    set_result(call, output, failed)
                    if failed:
                        call.error = str(output.get("error_code"))  # type: ignore[union-attr]
