"""An OTLP file's records read into one :class:`Trace` per trace id, each given out once it is
complete (a root span, and the parent of every span read) and :data:`HOLD` further records have
passed without touching it; so a JSON Lines file whose traces are contiguous is read in memory
bounded by a few traces, and a file whose traces interleave holds what is still open. Spans that
come for a trace already given out are an error naming the record (never a trace read twice).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ...errors import InputError
from ..model import Trace
from .assembly import OpenTrace, assemble_trace
from .records import request_logs, request_spans, requests_of

HOLD = 4
"""How many further records a complete trace waits for late spans or log records before it is
given out."""


def read(records: Iterable[Any], source: str) -> Iterator[Trace]:
    """The traces of an OTLP/JSON file's records (requests, one per document or line)."""
    return read_records(records, source, "otlp-json")


def read_records(records: Iterable[Any], source: str, form: str) -> Iterator[Trace]:
    """The traces of an OTLP file's requests, ``form`` naming their encoding."""
    pending: dict[str, OpenTrace] = {}
    given: set[str] = set()
    counter = [0]
    number = 0
    for number, record in enumerate(records, 1):
        where = f"record {number}"
        try:
            for request in requests_of(record):
                for span in request_spans(request, counter):
                    _late(span.trace_id, given, source, where)
                    open_trace = pending.setdefault(span.trace_id, OpenTrace())
                    open_trace.spans.append(span)
                    open_trace.last = number
                for trace_id, span_id, event in request_logs(request):
                    _late(trace_id, given, source, where)
                    open_trace = pending.setdefault(trace_id, OpenTrace())
                    open_trace.logs.append((span_id, event))
                    open_trace.last = number
        except RecursionError:
            raise InputError("nested too deeply", source=source, record=where) from None
        for trace_id in [
            t for t, o in pending.items() if o.last <= number - HOLD and _complete_open(o)
        ]:
            given.add(trace_id)
            yield assemble_trace(trace_id, pending.pop(trace_id), source, form)
    for trace_id, open_trace in pending.items():
        yield assemble_trace(trace_id, open_trace, source, form)


def _complete_open(open_trace: OpenTrace) -> bool:
    ids = {span.span_id for span in open_trace.spans}
    has_root = any(span.parent is None for span in open_trace.spans)
    return has_root and all(span.parent is None or span.parent in ids for span in open_trace.spans)


def _late(trace_id: str, given: set[str], source: str, where: str) -> None:
    if trace_id in given:
        raise InputError(
            f"spans or log records of trace {trace_id} come {HOLD} or more records after the trace "
            "was complete; keep each trace's records together",
            source=source,
            record=where,
        )
