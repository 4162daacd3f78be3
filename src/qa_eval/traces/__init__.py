"""Agent traces in, responses out: the formats agents already write (Chat Completions and
Responses API messages, Anthropic messages, OTLP traces, Langfuse and LangSmith exports, ragas
samples), read into one response per trace with a report of what was lost (docs/traces.md).
"""

from typing import TYPE_CHECKING

from ..extras import lazy_face

if TYPE_CHECKING:
    from .formats import FORMATS
    from .model import LOSSES, Fidelity, ToolCall, Trace
    from .read import (
        TraceLossError,
        TraceReport,
        is_trace_file,
        iter_responses,
        read_traces,
        to_response,
    )

_NAMES = {
    "FORMATS": "formats",
    "LOSSES": "model",
    "Fidelity": "model",
    "ToolCall": "model",
    "Trace": "model",
    "TraceLossError": "read",
    "TraceReport": "read",
    "is_trace_file": "read",
    "iter_responses": "read",
    "read_traces": "read",
    "to_response": "read",
}

__all__ = [
    "FORMATS",
    "LOSSES",
    "Fidelity",
    "ToolCall",
    "Trace",
    "TraceLossError",
    "TraceReport",
    "is_trace_file",
    "iter_responses",
    "read_traces",
    "to_response",
]

__getattr__, __dir__ = lazy_face(__name__, _NAMES)
