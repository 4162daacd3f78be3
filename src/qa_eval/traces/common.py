"""What the message-format readers share: arguments parsed as JSON with the reason kept when they
are not, text taken out of message content, planned calls linked to their results by id (else by
name and order), and a trace finished: calls ordered and their losses counted.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import InputError
from ..io.limits import check_writable
from .model import ToolCall, Trace

__all__ = [
    "Linker",
    "add_tokens",
    "explicit_question_id",
    "finish",
    "messages_of",
    "number",
    "parse_arguments",
    "read_header",
    "set_result",
    "text_of",
    "tokens_from",
    "word",
]


def parse_arguments(raw: Any) -> tuple[Any, str | None]:
    """(arguments, why they are raw text): a JSON object string parsed, a mapping kept; other
    JSON, or text that does not parse, kept as it is with the reason."""
    if raw is None or isinstance(raw, dict):
        return raw, None
    if not isinstance(raw, str):
        return raw, f"arguments are {type(raw).__name__}, not a JSON object"
    if not raw.strip():
        return {}, None  # an empty arguments string is a call without arguments
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as e:
        return raw, f"arguments are not valid JSON: {e.msg} at {e.lineno}:{e.colno}"
    except RecursionError:
        return raw, "arguments are not valid JSON: nested too deeply"
    if not isinstance(value, dict):
        return raw, f"arguments are JSON {type(value).__name__}, not an object"
    try:
        check_writable(value, "arguments")
    except InputError as e:
        return raw, f"arguments cannot be kept as an object ({e.problem})"
    return value, None


def text_of(content: Any) -> str | None:
    """The text of message content: a string, or the text parts of a list of parts joined by
    newlines (``text``, ``input_text``, ``output_text``); None when there is none."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif (
                isinstance(part, Mapping)
                and isinstance(part.get("text"), str)
                and part.get("type") in (None, "text", "input_text", "output_text")
            ):
                parts.append(part["text"])
        return "\n".join(parts) if parts else None
    return None


def word(value: Any) -> str | None:
    """A value used as a kind (``role``, ``type``, ``status``): itself when it is a string, else
    None (so a list or a mapping there is an unknown kind, never a crash)."""
    return value if isinstance(value, str) else None


def number(value: Any) -> int | None:
    """An integer token count, or None (booleans, negatives and other types are not counts)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def tokens_from(usage: Any) -> tuple[int | None, int | None, int | None]:
    """(input, output, total) tokens of a ``usage`` mapping in the OpenAI (``prompt_tokens``,
    ``completion_tokens``) or Anthropic / Responses (``input_tokens``, ``output_tokens``) names."""
    if not isinstance(usage, Mapping):
        return None, None, None
    given = number(usage.get("input_tokens"))
    if given is None:
        given = number(usage.get("prompt_tokens"))
    taken = number(usage.get("output_tokens"))
    if taken is None:
        taken = number(usage.get("completion_tokens"))
    total = number(usage.get("total_tokens"))
    if total is None and given is not None and taken is not None:
        total = given + taken
    return given, taken, total


def add_tokens(trace: Trace, usage: Any) -> None:
    """Add one model call's ``usage`` to the trace's token counts."""
    given, taken, total = tokens_from(usage)
    if given is not None:
        trace.input_tokens = (trace.input_tokens or 0) + given
    if taken is not None:
        trace.output_tokens = (trace.output_tokens or 0) + taken
    if total is not None:
        trace.total_tokens = (trace.total_tokens or 0) + total


def explicit_question_id(record: Any) -> Any:
    """An explicit question id: ``question_id`` (or ``qa_eval.question_id``) at the record's top
    level or in its ``metadata``; None without one. Only strings and integers are ids."""
    if not isinstance(record, Mapping):
        return None
    places = [record]
    if isinstance(record.get("metadata"), Mapping):
        places.append(record["metadata"])
    for place in places:
        for key in ("question_id", "qa_eval.question_id"):
            value = place.get(key)
            if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
                return value
    return None


def read_header(trace: Trace, record: Mapping[str, Any]) -> None:
    """What a trace object carries beside its messages: question id, id, model, metadata,
    usage (the trace's own total) and ``elapsed_sec``."""
    trace.question_id = explicit_question_id(record)
    if isinstance(record.get("id"), (str, int)) and not isinstance(record.get("id"), bool):
        trace.trace_id = str(record["id"])
    if isinstance(record.get("trace_id"), str):
        trace.trace_id = record["trace_id"]
    if isinstance(record.get("model"), str):
        trace.model = record["model"]
    if isinstance(record.get("metadata"), Mapping):
        trace.metadata = dict(record["metadata"])
    elapsed = record.get("elapsed_sec")
    if isinstance(elapsed, (int, float)) and not isinstance(elapsed, bool) and elapsed >= 0:
        trace.elapsed_sec = float(elapsed)


class Linker:
    """Links results to the calls planned before them: by call id when both have one (the
    earliest planned call of that id still waiting), else by name and order among the waiting
    calls of that name. Never by position alone: a result with neither is not linked."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.waiting: list[ToolCall] = []

    def plan(self, call: ToolCall) -> None:
        """A call the model asked for (its result may come later)."""
        self.trace.calls.append(call)
        self.waiting.append(call)

    def result(self, call_id: Any, name: Any = None) -> ToolCall | None:
        """The waiting call a result belongs to (taken off the waiting list), or None: then the
        result is counted as ``unlinked_result``."""
        found = None
        if isinstance(call_id, str) and call_id:
            found = next((c for c in self.waiting if c.id == call_id), None)
        elif isinstance(name, str) and name:
            found = next((c for c in self.waiting if c.name == name and c.id is None), None)
            if found is None:
                found = next((c for c in self.waiting if c.name == name), None)
        if found is None:
            self.trace.fidelity.losses["unlinked_result"] += 1
            return None
        self.waiting.remove(found)
        return found


def set_result(call: ToolCall, output: Any, is_error: Any = None) -> None:
    """A result's output on its call; ``is_error`` True or False sets the status (None: the
    format does not say), the output text becoming the error of a failed call."""
    call.output = output
    if is_error is True:
        call.status = "error"
        text = output if isinstance(output, str) else text_of(output)
        call.error = text if text is not None else "the tool reported an error"
    elif is_error is False:
        call.status = "success"


def finish(trace: Trace, starts_known: bool = False) -> Trace:
    """Order the calls (by start time when every call has one; else as they appear) and count
    what each lacks in ``lost`` and in the trace's fidelity."""
    if starts_known and all(c.start is not None for c in trace.calls):
        trace.calls.sort(key=lambda c: c.start or 0)
    fidelity = trace.fidelity
    fidelity.traces = 1
    fidelity.tool_calls = len(trace.calls)
    for call in trace.calls:
        lost = list(call.lost)
        if call.args is None:
            lost.append("args")
        elif call.args_error is not None:
            lost.append("args_invalid")
        if call.output is None and call.status != "error":
            lost.append("output")
        if call.status is None:
            lost.append("status")
        call.lost = list(dict.fromkeys(lost))
        fidelity.losses.update(call.lost)
    return trace


def messages_of(record: Any, key: str = "messages") -> Iterable[Any] | None:
    """The message list of a trace: the record itself when it is a list, else its ``key``."""
    if isinstance(record, list):
        return record
    if isinstance(record, Mapping) and isinstance(record.get(key), list):
        return record[key]  # type: ignore[no-any-return]
    return None
