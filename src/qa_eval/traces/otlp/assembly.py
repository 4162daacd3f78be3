"""One trace assembled from its spans and log records: the span tree, the question and the answer,
the planned calls linked to the executed ones, the model and the tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..common import finish, link
from ..model import ToolCall, Trace
from ..treelink import depths, fill_results, from_json, planned_calls, sum_usage
from .conventions import Reading, count_unknown, first_of, read_span
from .records import Event, Span


@dataclass
class OpenTrace:
    """The spans and log records of one trace read so far, and the record that last touched it."""

    spans: list[Span] = field(default_factory=list)
    logs: list[tuple[str | None, Event]] = field(default_factory=list)
    last: int = 0


def _trial(root: Span | None) -> Any:
    """The trial a trace is (repeated runs of one question): the root span's ``qa_eval.trial``
    attribute, OpenInference's ``metadata`` JSON's ``trial``, or OpenLLMetry's
    ``traceloop.association.properties.trial``; None without one."""
    if root is None:
        return None
    attributes = root.attributes
    value = first_of(attributes, "qa_eval.trial", "traceloop.association.properties.trial")
    if value is None:
        metadata = from_json(attributes.get("metadata"))
        value = metadata.get("trial") if isinstance(metadata, dict) else None
    return value


def _question_id(spans: list[Span]) -> str | None:
    for span in spans:
        for attributes in (span.attributes, span.resource):
            value = first_of(
                attributes,
                "qa_eval.question_id",
                "question_id",
                "traceloop.association.properties.question_id",
            )
            if value is not None:
                return str(value)
            metadata = from_json(attributes.get("metadata"))
            if isinstance(metadata, dict) and metadata.get("question_id") is not None:
                return str(metadata["question_id"])
    return None


def _tree(spans: list[Span]) -> tuple[list[Span], dict[str, int], int, int]:
    """Spans with unique ids, the depth of each, and how many repeated ids and broken parent links
    (missing, or in a cycle: read as roots) there were."""
    unique: dict[str, Span] = {}
    for span in spans:
        unique.setdefault(span.span_id, span)
    parent = {span.span_id: span.parent for span in unique.values()}
    depth, broken = depths(parent)
    for span in unique.values():
        span.parent = parent[span.span_id]
    return list(unique.values()), depth, len(spans) - len(unique), broken


def assemble_trace(trace_id: str, open_trace: OpenTrace, source: str, form: str) -> Trace:
    """One trace from its spans and log records."""
    spans, depth, duplicates, broken = _tree(open_trace.spans)
    trace = Trace(format=form, source=source, trace_id=trace_id)
    events: dict[str, list[Event]] = {span.span_id: list(span.events) for span in spans}
    spans.sort(key=lambda s: (s.start if s.start is not None else 0, depth[s.span_id], s.order))
    roots = [span for span in spans if span.parent is None]
    root = min(roots, key=lambda s: (s.start or 0, -(s.end or 0))) if roots else None
    for span_id, event in open_trace.logs:
        target = span_id if span_id in events else (root.span_id if root else None)
        if target is not None:
            events[target].append(event)
    if root is not None:
        trace.root_span_id = root.span_id
        if len(roots) == 1 and root.start is not None and root.end is not None:
            trace.elapsed_sec = (root.end - root.start) / 1e9
        else:
            starts = [s.start for s in spans if s.start is not None]
            ends = [s.end for s in spans if s.end is not None]
            if starts and ends:
                trace.elapsed_sec = (max(ends) - min(starts)) / 1e9
    trace.question_id = _question_id(([root] if root else []) + spans)
    trial = _trial(root)
    if trial is not None:
        trace.metadata["trial"] = trial
    readings = {span.span_id: read_span(span, events[span.span_id]) for span in spans}
    by_id = {span.span_id: span for span in spans}
    planned: list[ToolCall] = []
    executed: list[ToolCall] = []
    results: dict[str, Any] = {}
    known_ids: set[str] = set()
    question_at: tuple[int, str] | None = None
    answer_at: tuple[int, int, str] | None = None
    for span in spans:
        reading = readings[span.span_id]
        trace.fidelity.conventions.update(reading.conventions)
        count_unknown(span.attributes, trace.fidelity.unknown_attributes)
        if reading.call is not None:
            executed.append(reading.call)
            continue
        if trace.model is None and reading.kind == "model":
            model = first_of(
                span.attributes,
                "gen_ai.response.model",
                "gen_ai.request.model",
                "llm.model_name",
                "llm.response.model",
                "llm.request.model",
            )
            trace.model = None if model is None else str(model)
        for side, messages in (("in", reading.inputs), ("out", reading.outputs)):
            for message in messages:
                if message.result_of is not None and message.result_of not in results:
                    results[message.result_of] = message.result
                at = span.end if side == "out" else span.start
                for call in planned_calls(message, span.span_id, span.parent, at):
                    if side == "in" and (call.id is None or call.id in known_ids):
                        continue  # the history a later call repeats
                    if call.id is not None:
                        known_ids.add(call.id)
                    planned.append(call)
        for message in reading.inputs:
            if message.role == "user" and message.text and span.start is not None:
                if question_at is None or span.start < question_at[0]:
                    question_at = (span.start, message.text)
                break
            if message.role == "user" and message.text and question_at is None:
                question_at = (0, message.text)
                break
        texts = [m.text for m in reading.outputs if m.role in ("assistant", "") and m.text]
        if texts:
            key = (span.end or 0, depth[span.span_id], texts[-1])
            if answer_at is None or key[:2] >= answer_at[:2]:
                answer_at = key
    trace.question = question_at[1] if question_at else None
    trace.answer = answer_at[2] if answer_at else None
    calls = link(planned, executed)
    unlinked = fill_results(calls, results)
    _tokens(trace, spans, readings, by_id, root)
    finish(
        trace,
        calls,
        depth,
        {"duplicate_id": duplicates, "broken_parent": broken, "unlinked_result": unlinked},
    )
    trace.fidelity.losses["unknown_attribute"] += sum(trace.fidelity.unknown_attributes.values())
    if not trace.fidelity.losses["unknown_attribute"]:
        del trace.fidelity.losses["unknown_attribute"]
    return trace


def _tokens(
    trace: Trace,
    spans: list[Span],
    readings: dict[str, Reading],
    by_id: dict[str, Span],
    root: Span | None,
) -> None:
    """The trace's own usage (its root or agent span) where it has one, else the sum of its model
    calls (a model span inside another model span with usage is counted once)."""
    if (
        root is not None
        and readings[root.span_id].kind != "model"
        and any(v is not None for v in readings[root.span_id].usage)
    ):
        counted = [readings[root.span_id].usage]
    else:
        counted = []
        for span in spans:
            reading = readings[span.span_id]
            if reading.kind != "model" or all(v is None for v in reading.usage):
                continue
            node = span.parent
            nested = False
            while node is not None and node in by_id:
                above = readings[node]
                if above.kind == "model" and any(v is not None for v in above.usage):
                    nested = True
                    break
                node = by_id[node].parent
            if not nested:
                counted.append(reading.usage)
    sum_usage(trace, counted)
