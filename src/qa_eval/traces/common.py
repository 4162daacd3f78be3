"""What every trace reader shares (the message formats and the tree-shaped ones alike): arguments
parsed as JSON with the reason kept when they are not, text taken out of message content, planned
calls linked to their results or executions by id (else by name and order under the same parent,
never by position alone), and a trace finished: calls ordered and their losses counted.

A model's reply may plan a tool call (with its id, name and arguments) and a later message, span,
observation or run record its result or execution. The two are one call: linked by the call id
where both have one, else by name and order under the same parent (the k-th waiting plan of
``search`` under an agent span <-> the k-th unlinked execution of ``search`` under it).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from ..errors import InputError
from ..io.limits import check_writable
from .model import ToolCall, Trace

__all__ = [
    "Linker",
    "add_tokens",
    "each_trace",
    "explicit_question_id",
    "finish",
    "link",
    "list_of_objects_with",
    "message_list",
    "number",
    "parse_arguments",
    "read_header",
    "set_result",
    "text_of",
    "tokens_from",
    "word",
]


def parse_arguments(raw: Any) -> tuple[Any, str | None]:
    """(arguments, why they are raw text): a JSON object string (or UTF-8 bytes) parsed, a mapping
    kept; other JSON, or text that does not parse, kept as it is with the reason."""
    if isinstance(raw, (bytes, bytearray)):
        raw = bytes(raw).decode("utf-8", "replace")
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
    """The text of message content: a string, a text part (``{"type": "text", "text": ...}``, or
    ``content`` instead of ``text``), or the text parts of a list of parts joined by newlines
    (``text``, ``input_text``, ``output_text``); None when there is none."""
    if isinstance(content, list):
        texts = [t for part in content if (t := _part_text(part)) is not None]
        return "\n".join(texts) if texts else None
    return _part_text(content)


def _part_text(part: Any) -> str | None:
    if isinstance(part, str):
        return part
    if isinstance(part, Mapping) and part.get("type", "text") in (
        "text",
        "input_text",
        "output_text",
    ):
        for key in ("text", "content"):
            if isinstance(part.get(key), str):
                return str(part[key])
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
    """Links results (or executions) to the calls planned before them: by call id when the result
    has one (the earliest waiting plan of that id), else by name and order among the waiting plans
    of that name under the same parent (those without an id first: a plan with an id waits for
    its own). Never by position alone: a result with neither is not linked."""

    def __init__(self, trace: Trace | None = None) -> None:
        self.trace = trace
        self.waiting: list[ToolCall] = []

    def plan(self, call: ToolCall) -> None:
        """A call the model asked for (its result may come later)."""
        if self.trace is not None:
            self.trace.calls.append(call)
        self.waiting.append(call)

    def take(
        self, call_id: Any, name: Any = None, parent: str | None = None, by_name: bool = True
    ) -> ToolCall | None:
        """The waiting call a result belongs to, taken off the waiting list; None if none."""
        found = None
        has_id = isinstance(call_id, str) and bool(call_id)
        if has_id:
            found = next((c for c in self.waiting if c.id == call_id), None)
        if found is None and by_name and isinstance(name, str) and name:
            same = [c for c in self.waiting if c.name == name and c.parent == parent]
            found = next((c for c in same if c.id is None), None)
            if found is None and not has_id and same:
                found = same[0]
        if found is not None:
            self.waiting.remove(found)
        return found

    def result(self, call_id: Any, name: Any = None) -> ToolCall | None:
        """The waiting call a message's result belongs to (taken off the waiting list), or None:
        then the result is counted as ``unlinked_result``."""
        found = self.take(call_id, name, by_name=not (isinstance(call_id, str) and call_id))
        if found is None and self.trace is not None:
            self.trace.fidelity.losses["unlinked_result"] += 1
        return found


def link(planned: list[ToolCall], executed: list[ToolCall]) -> list[ToolCall]:
    """Planned and executed calls as one list: a pair linked by :class:`Linker`'s rules (every id
    first, then names) is one call, taking the execution's record and what the plan adds; what
    stays unlinked stays, as it is."""
    linker = Linker()
    for call in planned:
        linker.plan(call)
    pairs: dict[int, ToolCall] = {}
    for by_name in (False, True):  # every id first: a name never takes another call's plan
        for done in executed:
            if id(done) in pairs or (done.id is None and not by_name):
                continue
            plan = linker.take(done.id, done.name if by_name else None, done.parent, by_name)
            if plan is not None:
                pairs[id(done)] = plan
    calls = [_merge(pairs[id(done)], done) if id(done) in pairs else done for done in executed]
    return calls + linker.waiting


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


def finish(
    trace: Trace,
    calls: Iterable[ToolCall] | None = None,
    depth: Mapping[str, int] | None = None,
    extra: Mapping[str, int] | None = None,
) -> Trace:
    """Order the calls (``calls``, else the trace's own) by start time, then the depth of their
    parent (a call without a start after those with one; as they appear otherwise), list what
    each lacks in its ``lost`` and count it all into ``trace.fidelity``, with the ``extra``
    losses the reader counted itself."""
    ordered = sorted(trace.calls if calls is None else calls, key=lambda c: _order(c, depth or {}))
    fidelity = trace.fidelity
    for call in ordered:
        lost = list(call.lost)
        if call.args is None and "args_schema" not in lost:
            lost.append("args")
        elif call.args_error is not None:
            lost.append("args_invalid")
        if call.output is None and call.status != "error":
            lost.append("output")
        if call.status is None:
            lost.append("status")
        call.lost = list(dict.fromkeys(lost))
        fidelity.losses.update(call.lost)
    trace.calls = ordered
    fidelity.traces = 1
    fidelity.tool_calls = len(ordered)
    for name, count in (extra or {}).items():
        if count:
            fidelity.losses[name] += count
    return trace


def _order(call: ToolCall, depth: Mapping[str, int]) -> tuple[float, int]:
    start = math.inf if call.start is None else float(call.start)
    return start, depth.get(call.parent, 0) if call.parent is not None else 0


def each_trace(records: Iterable[Any], many: Callable[[Any], bool]) -> Iterator[tuple[Any, str]]:
    """(trace record, where) for each record of a file: ``record N``, or ``record N[i]`` for the
    items of a record that ``many`` says is a list of traces."""
    for n, record in enumerate(records, start=1):
        where = f"record {n}"
        if many(record):
            for i, item in enumerate(record):
                yield item, f"{where}[{i}]"
        else:
            yield record, where


def list_of_objects_with(*keys: str) -> Callable[[Any], bool]:
    """For :func:`each_trace`: whether a record is a list of trace objects (its first item a
    mapping with one of ``keys``)."""

    def many(record: Any) -> bool:
        return (
            isinstance(record, list)
            and bool(record)
            and isinstance(record[0], Mapping)
            and any(key in record[0] for key in keys)
        )

    return many


def message_list(
    record: Any, trace: Trace, source: str, where: str, what: str
) -> list[Mapping[str, Any]]:
    """The messages of a message-format trace (a list, or an object with ``messages`` whose
    header goes on ``trace``); an ``InputError`` naming ``what`` was expected, or the first
    message that is not an object."""
    messages = record if isinstance(record, list) else None
    if isinstance(record, Mapping):
        read_header(trace, record)
        messages = record.get("messages")
    if not isinstance(messages, list):
        raise InputError(
            f"not {what} (a list of messages, or an object with messages)",
            source=source,
            record=where,
        )
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise InputError(
                "a message must be an object", source=source, record=where, field=f"messages[{i}]"
            )
    return messages
