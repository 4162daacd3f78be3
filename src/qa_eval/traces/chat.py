"""``openai-chat``: Chat Completions messages (the ``openai`` SDK's logs, LangChain and
agentevals message lists).

A trace is a list of messages or an object with ``messages`` (and optionally ``question_id``,
``metadata``, ``model``, ``usage``, ``elapsed_sec``); a file holds one, a list of them, JSON Lines
of them, or JSON Lines of single messages (one trace). An assistant message's ``tool_calls``
(``id``, ``function.name``, ``function.arguments`` as a JSON string that may be invalid) are
linked to the ``role: tool`` replies by ``tool_call_id``; a legacy ``function_call`` to the
``role: function`` reply by name and order. Chat messages record no tool status: every call's
status is unknown (counted as lost).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from .common import (
    Linker,
    add_tokens,
    each_trace,
    finish,
    message_list,
    parse_arguments,
    set_result,
    text_of,
    tokens_from,
    word,
)
from .model import ToolCall, Trace

__all__ = ["detect", "read"]

FORMAT = "openai-chat"
_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})


def _is_message(value: Any) -> bool:
    return isinstance(value, Mapping) and word(value.get("role")) in _ROLES and "type" not in value


def _is_trace(value: Any) -> bool:
    if isinstance(value, list):
        return bool(value) and all(_is_message(m) for m in value[:50])
    return isinstance(value, Mapping) and _is_trace(value.get("messages"))


def _traces(record: Any) -> bool:
    """Whether a record is a list of traces (objects with ``messages``, or message lists)."""
    return (
        isinstance(record, list)
        and bool(record)
        and (
            isinstance(record[0], list)
            or (isinstance(record[0], Mapping) and "messages" in record[0])
        )
    )


def detect(record: Any) -> bool:
    """A list of chat messages, an object with ``messages``, a list of such objects (or of
    message lists), or one chat message (JSON Lines of messages)."""
    if _traces(record):
        return _is_trace(record[0])
    return _is_trace(record) or _is_message(record)


def read(records: Iterable[Any], source: str) -> Iterator[Trace]:
    """One trace per list of messages or object with ``messages``; single messages make one."""
    loose: list[Any] = []
    for record, where in each_trace(records, _traces):
        if _is_message(record):
            loose.append(record)
        else:
            yield read_trace(record, source, where)
    if loose:
        yield read_trace(loose, source, "messages")


def read_trace(record: Any, source: str, where: str) -> Trace:
    """One trace: a list of messages or an object with ``messages``."""
    trace = Trace(FORMAT, f"{source}:{where}")
    messages = message_list(record, trace, source, where, "a chat trace")
    linker = Linker(trace)
    own_usage = isinstance(record, Mapping) and record.get("usage") is not None
    for message in messages:
        _message(trace, linker, message, own_usage)
    if own_usage:
        trace.input_tokens, trace.output_tokens, trace.total_tokens = tokens_from(record["usage"])
    return finish(trace)


def _message(trace: Trace, linker: Linker, message: Mapping[str, Any], own_usage: bool) -> None:
    role = message.get("role")
    content = message.get("content")
    if role == "user":
        if trace.question is None:
            trace.question = text_of(content)
    elif role == "assistant":
        text = text_of(content)
        if text:
            trace.answer = text
        for call in message.get("tool_calls") or ():
            if isinstance(call, Mapping):
                linker.plan(_call(call))
        legacy = message.get("function_call")
        if isinstance(legacy, Mapping):
            linker.plan(_call({"function": legacy}))
        if not own_usage and message.get("usage") is not None:
            add_tokens(trace, message["usage"])
    elif role in ("tool", "function"):
        call = linker.result(message.get("tool_call_id"), message.get("name"))
        if call is not None:
            text = text_of(content)
            set_result(call, text if text is not None else content)


def _call(call: Mapping[str, Any]) -> ToolCall:
    function = call.get("function")
    function = function if isinstance(function, Mapping) else {}
    name = function.get("name")
    raw = function.get("arguments")
    args, error = parse_arguments(raw)
    call_id = call.get("id")
    return ToolCall(
        name=name if isinstance(name, str) else "",
        args=args,
        id=call_id if isinstance(call_id, str) else None,
        args_error=error,
    )
