"""``openai-responses``: Responses API items (the Responses API, the Agents SDK).

A trace is a list of items or an object with ``input`` (a string or items) and ``output`` (a
``Response``'s items; with ``id``, ``model``, ``usage``, ``question_id``, ``metadata``); a file
holds one, a list of them, or JSON Lines of them. ``function_call`` items (``call_id``, ``name``,
``arguments`` as a JSON string) are linked to ``function_call_output`` items by ``call_id``, as
are ``custom_tool_call``, ``computer_call`` and ``local_shell_call`` to their outputs. Built-in
tools are one item each, call and result together: ``web_search_call``, ``file_search_call``,
``code_interpreter_call``, ``image_generation_call`` (status ``completed`` -> success, ``failed``
or ``incomplete`` -> error) and ``mcp_call`` (its ``error`` makes it a failure). A function
output says nothing of success: those calls' status is unknown (counted as lost).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ..errors import InputError
from .common import (
    Linker,
    each_trace,
    finish,
    list_of_objects_with,
    parse_arguments,
    read_header,
    set_result,
    text_of,
    tokens_from,
    word,
)
from .model import ToolCall, Trace

__all__ = ["detect", "read"]

FORMAT = "openai-responses"
_LINKED = {
    "function_call": "function_call_output",
    "custom_tool_call": "custom_tool_call_output",
    "computer_call": "computer_call_output",
    "local_shell_call": "local_shell_call_output",
}
_OUTPUTS = {v: k for k, v in _LINKED.items()}
_BUILT_IN = frozenset(
    {
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "image_generation_call",
        "mcp_call",
    }
)
_TYPES = frozenset({"message", "reasoning", "mcp_list_tools", "mcp_approval_request"})
_ALL = _TYPES | set(_LINKED) | set(_OUTPUTS) | _BUILT_IN
_STATUS = {"completed": "success", "failed": "error", "incomplete": "error"}


def _is_items(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and any(isinstance(i, Mapping) and word(i.get("type")) in _ALL for i in value[:50])
    )


def detect(record: Any) -> bool:
    """A list of Responses items, or an object with ``input`` / ``output`` items (a
    ``Response``: ``object: response``), or a list of such objects."""
    if (
        isinstance(record, list)
        and record
        and isinstance(record[0], Mapping)
        and ("output" in record[0] or "input" in record[0])
    ):
        return detect(record[0])
    if isinstance(record, Mapping):
        if record.get("object") == "response":
            return True
        if "messages" in record:
            return False
        return _is_items(record.get("output")) or _is_items(record.get("input"))
    return _is_items(record)


def read(records: Iterable[Any], source: str) -> Iterator[Trace]:
    """One trace per list of items or object with ``input`` / ``output``."""
    for record, where in each_trace(records, list_of_objects_with("output", "input")):
        yield read_trace(record, source, where)


def read_trace(record: Any, source: str, where: str) -> Trace:
    """One trace: a list of items, or an object with ``input`` and ``output``."""
    trace = Trace(FORMAT, f"{source}:{where}")
    items: list[Any] = []
    if isinstance(record, list):
        items = record
    elif isinstance(record, Mapping):
        read_header(trace, record)
        given = record.get("input")
        if isinstance(given, str):
            trace.question = given
        elif isinstance(given, list):
            items.extend(given)
        elif given is not None:
            raise InputError(
                "must be a string or a list of items", source=source, record=where, field="input"
            )
        output = record.get("output")
        if isinstance(output, list):
            items.extend(output)
        elif output is not None:
            raise InputError("must be a list of items", source=source, record=where, field="output")
        if record.get("usage") is not None:
            trace.input_tokens, trace.output_tokens, trace.total_tokens = tokens_from(
                record["usage"]
            )
    else:
        raise InputError(
            "not a Responses trace (a list of items, or an object with input and output)",
            source=source,
            record=where,
        )
    linker = Linker(trace)
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise InputError(
                "an item must be an object", source=source, record=where, field=f"items[{i}]"
            )
        _item(trace, linker, item)
    return finish(trace)


def _item(trace: Trace, linker: Linker, item: Mapping[str, Any]) -> None:
    kind = word(item.get("type"))
    if kind in (None, "message"):
        text = text_of(item.get("content"))
        if item.get("role") == "user" and trace.question is None:
            trace.question = text
        elif item.get("role") == "assistant" and text:
            trace.answer = text
    elif kind in _LINKED:
        raw = item.get("arguments") if kind == "function_call" else None
        if kind == "custom_tool_call":
            raw = {"input": item.get("input")} if "input" in item else None
        elif kind in ("computer_call", "local_shell_call"):
            raw = item.get("action") if isinstance(item.get("action"), Mapping) else None
        args, error = parse_arguments(raw)
        name = item.get("name") if kind in ("function_call", "custom_tool_call") else kind[:-5]
        linker.plan(
            ToolCall(
                name=name if isinstance(name, str) else "",
                args=args,
                id=_text(item.get("call_id")),
                record_id=_text(item.get("id")),
                args_error=error,
            )
        )
    elif kind in _OUTPUTS:
        call = linker.result(item.get("call_id"))
        if call is not None:
            output = item.get("output")
            text = text_of(output)
            set_result(call, text if text is not None else output)
    elif kind in _BUILT_IN:
        trace.calls.append(_built_in(kind, item))


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _built_in(kind: str, item: Mapping[str, Any]) -> ToolCall:
    """A built-in tool's item: call and result in one."""
    status = _STATUS.get(word(item.get("status")) or "")
    args: Any = None
    output: Any = None
    error = None
    name = kind[: -len("_call")]
    if kind == "web_search_call":
        action = item.get("action")
        args = dict(action) if isinstance(action, Mapping) else None
        if isinstance(action, Mapping) and action.get("sources") is not None:
            output = action.get("sources")
    elif kind == "file_search_call":
        args = {"queries": item.get("queries")} if "queries" in item else None
        output = item.get("results")
    elif kind == "code_interpreter_call":
        args = {"code": item.get("code")} if "code" in item else None
        output = item.get("outputs")
    elif kind == "image_generation_call":
        args = {}
        output = item.get("result")
    elif kind == "mcp_call":
        given = item.get("name")
        name = given if isinstance(given, str) else ""
        args, error = parse_arguments(item.get("arguments"))
        output = item.get("output")
        if item.get("error") is not None:
            status = "error"
        elif status is None and output is not None:
            status = "success"
    call = ToolCall(
        name=name,  # type: ignore[arg-type]
        args=args,
        output=output,
        status=status,  # type: ignore[arg-type]
        id=_text(item.get("id")),
        record_id=_text(item.get("id")),
        args_error=error if kind == "mcp_call" else None,
    )
    if status == "error":
        reason = item.get("error")
        call.error = reason if isinstance(reason, str) else f"{kind} {item.get('status')}"
    return call
