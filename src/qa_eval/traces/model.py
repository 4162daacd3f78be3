"""What every trace reader produces: a :class:`Trace` of :class:`ToolCall` records, and the losses
it counted (:class:`Fidelity`), from which ``qa_eval.traces`` writes one response per trace.

Each format module (``chat``, ``responses``, ``anthropic``, ``otlp``, ``langfuse``, ``langsmith``,
``ragas``) turns its records into these; linking a planned call to its executed record, ordering,
matching traces to questions and the fidelity report are done once, on these records.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["CONTENT", "LOSSES", "TRACE_LOSSES", "Fidelity", "ToolCall", "Trace", "capture_setting"]

Status = Literal["success", "error"]

LOSSES: dict[str, str] = {
    "question": "traces without the question",
    "answer": "traces without an answer",
    "contexts": "retrieval calls without their contexts",
    "args": "calls without arguments (content capture off)",
    "output": "calls without a result",
    "status": "calls without a status",
    "args_schema": "calls whose arguments are a schema, not values",
    "args_invalid": "calls whose arguments are not valid JSON (raw text kept)",
    "unlinked_result": "tool results whose call is missing",
    "unknown_attribute": "attributes of an unknown convention",
    "duplicate_id": "records whose id repeats (the first kept)",
    "broken_parent": "records whose parent is missing or in a cycle (read as roots)",
}
"""What a reader may fail to find, by the name it is counted under, and how the report says it:
per trace (``question``, ``answer``), per ``retrieval`` call (``contexts``: the call's result, the
chunks that context metrics read) and per call (the rest)."""

TRACE_LOSSES = ("question", "answer")
"""The losses counted once per trace (the others per call, or per record)."""

CONTENT = ("question", "answer", "contexts", "args", "output")
"""The losses a capture setting of the instrumentation decides (``status`` and the rest are the
format's or the tree's)."""

_CAPTURE = (
    (
        "openllmetry",
        "TRACELOOP_TRACE_CONTENT=true (OpenLLMetry; the default)",
    ),
    (
        "openinference",
        "OPENINFERENCE_HIDE_INPUTS and OPENINFERENCE_HIDE_OUTPUTS unset or false (OpenInference; "
        "the default)",
    ),
    (
        "gen_ai",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only with "
        "OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental (OpenTelemetry's GenAI "
        "instrumentations; =true for the deprecated events); tool spans written by the agent "
        "must set gen_ai.tool.call.arguments and gen_ai.tool.call.result",
    ),
)
_FORMAT_CAPTURE = {
    "langfuse": "the Langfuse SDK's input and output capture (observe(capture_input=True, "
    "capture_output=True), the default)",
    "langsmith": "LANGSMITH_HIDE_INPUTS and LANGSMITH_HIDE_OUTPUTS unset or false (LangSmith; "
    "the default)",
}


def capture_setting(format: str, conventions: Iterable[str]) -> str | None:
    """The setting that keeps the content a trace of ``format`` (with these OTLP conventions)
    lost, or None when nothing the user sets would (the message formats record what they
    record)."""
    if format in _FORMAT_CAPTURE:
        return _FORMAT_CAPTURE[format]
    seen = list(conventions)
    for prefix, setting in _CAPTURE:
        if any(name.startswith(prefix) for name in seen):
            return setting
    return None


@dataclass
class ToolCall:
    """One tool call as a trace recorded it; ``None`` where the trace did not record a part."""

    name: str
    args: Any = None
    """An object (parsed JSON arguments), the raw text when it is not valid JSON, or ``None``."""
    output: Any = None
    status: Status | None = None
    error: str | None = None
    id: str | None = None
    """The call's own id (``tool_call_id``, ``call_id``, ``tool_use_id``, ...) where it has one."""
    record_id: str | None = None
    """The id of the span, observation, run or item that holds it."""
    parent: str | None = None
    start: int | None = None
    """Start time in nanoseconds since the epoch, where the trace has it."""
    lost: list[str] = field(default_factory=list)
    """The :data:`LOSSES` names of what this call lacks (``"args"``, ``"output"``, ...)."""
    args_error: str | None = None
    """Why ``args`` is raw text (the JSON error)."""


@dataclass
class Fidelity:
    """What was read and what was lost, for one trace or summed over many."""

    traces: int = 0
    tool_calls: int = 0
    losses: Counter[str] = field(default_factory=Counter)
    unknown_attributes: Counter[str] = field(default_factory=Counter)
    conventions: Counter[str] = field(default_factory=Counter)
    """Conventions detected (``gen_ai 1.37``, ``gen_ai deprecated``, ``openinference``, ...)."""

    def add(self, other: Fidelity) -> None:
        """Add another report's counts to this one."""
        self.traces += other.traces
        self.tool_calls += other.tool_calls
        self.losses.update(other.losses)
        self.unknown_attributes.update(other.unknown_attributes)
        self.conventions.update(other.conventions)

    @property
    def lossless(self) -> bool:
        """Whether nothing was lost (``--strict`` fails otherwise)."""
        return not any(self.losses.values()) and not any(self.unknown_attributes.values())


@dataclass
class Trace:
    """One agent run as read from a trace file, before it becomes a response."""

    format: str
    source: str
    """Where it was read: ``file`` or ``file:record``, for messages."""
    trace_id: str | None = None
    root_span_id: str | None = None
    """The root span, observation or run id (where scores are written back)."""
    question_id: str | None = None
    """An explicit question id found in the trace, if any."""
    question: str | None = None
    """The first user message."""
    answer: str | None = None
    """The last assistant text."""
    calls: list[ToolCall] = field(default_factory=list)
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    elapsed_sec: float | None = None
    model: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    fidelity: Fidelity = field(default_factory=Fidelity)
    reference: dict[str, Any] | None = None
    """The reference side a trace carries (ragas' ``reference`` and ``reference_tool_calls``, as
    ``reference_answer`` and ``reference_steps``): never part of its response; ``qa-eval import
    --write-reference`` writes it as a reference dataset."""
