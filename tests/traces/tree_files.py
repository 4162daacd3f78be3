"""Hand-made records for the tree readers' tests (Langfuse and LangSmith): an observation as
Langfuse's public API returns it, a run as the LangSmith SDK's ``Run`` has it, and a LangChain
message as its tracer serialises it. Times are given as the ISO strings the record holds."""

from __future__ import annotations

from typing import Any


def observation(
    oid: str,
    kind: str,
    parent: str | None,
    start: str,
    end: str,
    trace_id: str,
    **fields: Any,
) -> dict[str, Any]:
    """One Langfuse observation (``fields`` override the defaults; ``name`` defaults to the
    kind in lower case)."""
    record = {
        "id": oid,
        "traceId": trace_id,
        "type": kind,
        "name": fields.pop("name", kind.lower()),
        "startTime": start,
        "endTime": end,
        "parentObservationId": parent,
        "level": "DEFAULT",
        "statusMessage": None,
        "input": None,
        "output": None,
        "metadata": {},
    }
    record.update(fields)
    return record


def lc(kind: str, **kwargs: Any) -> dict[str, Any]:
    """A LangChain message (``kind`` such as ``AIMessage``) as its tracer serialises it."""
    return {
        "lc": 1,
        "type": "constructor",
        "id": ["langchain", "schema", "messages", kind],
        "kwargs": kwargs,
    }


def run(
    run_id: str,
    name: str,
    run_type: str,
    start: str,
    end: str,
    parent: str | None,
    trace_id: str,
    dotted_order: str,
    **fields: Any,
) -> dict[str, Any]:
    """One LangSmith run with no inputs, outputs or children (``fields`` override them)."""
    record = {
        "id": run_id,
        "name": name,
        "run_type": run_type,
        "start_time": start,
        "end_time": end,
        "inputs": {},
        "outputs": None,
        "error": None,
        "extra": {},
        "parent_run_id": parent,
        "trace_id": trace_id,
        "dotted_order": dotted_order,
        "child_runs": [],
    }
    record.update(fields)
    return record
