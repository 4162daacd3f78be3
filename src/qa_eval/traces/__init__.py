"""Agent traces in, responses out: the formats agents already write (Chat Completions and
Responses API messages, Anthropic messages, OTLP traces, Langfuse and LangSmith exports, ragas
samples), read into one response per trace with a report of what was lost (docs/traces.md).
"""

from typing import TYPE_CHECKING

from ..extras import lazy_face

if TYPE_CHECKING:
    from .model import LOSSES, Fidelity, ToolCall, Trace

_NAMES = {
    "LOSSES": "model",
    "Fidelity": "model",
    "ToolCall": "model",
    "Trace": "model",
}

__all__ = ["LOSSES", "Fidelity", "ToolCall", "Trace"]

__getattr__, __dir__ = lazy_face(__name__, _NAMES)
