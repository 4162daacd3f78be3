"""``ragas``: ``MultiTurnSample`` records of ragas data sets.

A trace is an object with ``user_input``, a list of messages with ``type`` ``human``, ``ai``
(``content``, ``tool_calls``: ``name`` and ``args``) or ``tool`` (``content``); a file holds one,
a list of them, or JSON Lines of them (``question_id`` and ``metadata`` beside ``user_input`` are
read too). ragas' tool messages carry neither a call id nor a tool name, so a result is linked
only where nothing else is possible: the one tool message after an AI message with one call.
After a message with several calls, the results cannot be told apart (never by position alone):
they are counted as ``unlinked_result`` and the calls as without output. Nor is there a status.

The sample's ``reference_tool_calls`` and ``reference`` belong to the reference side: they are
never part of a response; they are kept on the trace (``Trace.reference``: one reference step
group per call, in order, compared by name and arguments; the ``reference`` text as
``reference_answer``) for ``qa-eval import --write-reference``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ..errors import InputError
from .common import each_trace, finish, parse_arguments, read_header, text_of, word
from .model import ToolCall, Trace

__all__ = ["detect", "read"]

FORMAT = "ragas"
_TYPES = frozenset({"human", "ai", "tool"})


def _is_sample(value: Any) -> bool:
    if not isinstance(value, Mapping):
        return False
    messages = value.get("user_input")
    return (
        isinstance(messages, list)
        and bool(messages)
        and all(isinstance(m, Mapping) and word(m.get("type")) in _TYPES for m in messages[:50])
    )


def detect(record: Any) -> bool:
    """An object (or a list of objects) whose ``user_input`` is a list of ragas messages."""
    if isinstance(record, list) and record:
        return _is_sample(record[0])
    return _is_sample(record)


def read(records: Iterable[Any], source: str) -> Iterator[Trace]:
    """One trace per sample."""
    for record, where in each_trace(records, lambda record: isinstance(record, list)):
        yield read_trace(record, source, where)


def read_trace(record: Any, source: str, where: str) -> Trace:
    """One ``MultiTurnSample``."""
    trace = Trace(FORMAT, f"{source}:{where}")
    if not isinstance(record, Mapping) or not isinstance(record.get("user_input"), list):
        raise InputError(
            "not a ragas MultiTurnSample (an object with a user_input list of messages)",
            source=source,
            record=where,
        )
    read_header(trace, record)
    messages = record["user_input"]
    pending: list[ToolCall] = []
    results: list[Any] = []

    def settle() -> None:
        if len(pending) == 1 and len(results) == 1:
            text = text_of(results[0])
            pending[0].output = text if text is not None else results[0]
        elif results:
            trace.fidelity.losses["unlinked_result"] += len(results)
        pending.clear()
        results.clear()

    for i, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise InputError(
                "a message must be an object",
                source=source,
                record=where,
                field=f"user_input[{i}]",
            )
        kind = word(message.get("type"))
        content = message.get("content")
        if kind == "tool":
            if not pending:
                trace.fidelity.losses["unlinked_result"] += 1
            else:
                results.append(content)
            continue
        settle()
        if kind == "human" and trace.question is None:
            trace.question = text_of(content)
        elif kind == "ai":
            text = text_of(content)
            if text:
                trace.answer = text
            for call in message.get("tool_calls") or ():
                if not isinstance(call, Mapping):
                    continue
                name = call.get("name")
                args, error = parse_arguments(call.get("args"))
                made = ToolCall(
                    name=name if isinstance(name, str) else "", args=args, args_error=error
                )
                trace.calls.append(made)
                pending.append(made)
    settle()
    trace.reference = _reference(record)
    return finish(trace)


def _reference(record: Mapping[str, Any]) -> dict[str, Any] | None:
    """The sample's reference side as a reference question's fields, or None without one."""
    found: dict[str, Any] = {}
    if isinstance(record.get("reference"), str):
        found["reference_answer"] = record["reference"]
    groups = []
    for call in record.get("reference_tool_calls") or ():
        if isinstance(call, Mapping) and isinstance(call.get("name"), str):
            step: dict[str, Any] = {"name": call["name"]}
            if isinstance(call.get("args"), dict):
                step["args"] = call["args"]
            groups.append([step])
    if groups:
        found["reference_steps"] = groups
    return found or None
