"""A tiny tool-calling agent traced by real OpenTelemetry instrumentation, run as a program by the
OTLP tests (one process per run: the instrumentors patch the ``openai`` package globally, and
their settings are environment variables read when they start).

``python otel_agent.py BASE_URL OUT {openai-v2,openinference}`` asks two questions of the scripted
server at ``BASE_URL`` (``tests/openai_stub.py``; it replies with a tool call, then with an
answer). The agent runs each question under a root span, runs the tool the model asked for under a
tool span (``q2``'s tool fails) and sends its result back. The SDK's spans (and, for the legacy
GenAI conventions, its log records) are encoded by the exporter's own encoder and written as the
collector's file exporter writes them: one OTLP/JSON request per line.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from google.protobuf.json_format import MessageToJson
from openai import OpenAI
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"the {name} tool",
            "parameters": {"type": "object", "properties": {key: {"type": kind}}},
        },
    }
    for name, key, kind in (("search", "query", "string"), ("lookup", "id", "integer"))
]

QUESTIONS = [
    ("q1", "What is the capital of France?"),
    ("q2", "Who owns record 7?"),
]


def run_tool(name: str, args: dict[str, Any]) -> str:
    """The agent's tools: ``search`` answers, ``lookup`` fails."""
    if name == "lookup":
        raise LookupError(f"no record {args.get('id')}")
    return "Paris is the capital of France."


def main() -> None:
    """Run the agent over both questions and write the file."""
    base_url, out, kind = sys.argv[1:4]
    resource = Resource.create({"service.name": "qa-agent"})
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logs = InMemoryLogRecordExporter()
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    if kind == "openai-v2":
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(
            tracer_provider=tracer_provider, logger_provider=logger_provider
        )
    else:
        from openinference.instrumentation.openai import OpenAIInstrumentor as OIInstrumentor

        OIInstrumentor().instrument(tracer_provider=tracer_provider)
    tracer = tracer_provider.get_tracer("qa-agent")
    client = OpenAI(base_url=base_url, api_key="test-key", max_retries=0)
    oi = kind == "openinference"
    capture = os.environ.get(
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", ""
    ).lower() not in (
        "",
        "false",
        "no_content",
    )
    for question_id, question in QUESTIONS:
        root_attributes: dict[str, Any] = (
            {
                "openinference.span.kind": "AGENT",
                "input.value": question,
                "metadata": json.dumps({"question_id": question_id}),
            }
            if oi
            else {"gen_ai.operation.name": "invoke_agent", "question_id": question_id}
        )
        with tracer.start_as_current_span("agent", attributes=root_attributes) as root:
            messages: list[Any] = [{"role": "user", "content": question}]
            reply = client.chat.completions.create(model="stub", messages=messages, tools=TOOLS)
            message = reply.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls or []:
                name, arguments = call.function.name, call.function.arguments
                tool_attributes: dict[str, Any] = (
                    {"openinference.span.kind": "TOOL", "tool.name": name, "input.value": arguments}
                    if oi
                    else {
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": name,
                        "gen_ai.tool.call.id": call.id,
                    }
                )
                if capture and not oi:
                    tool_attributes["gen_ai.tool.call.arguments"] = arguments
                with tracer.start_as_current_span(
                    f"execute_tool {name}", attributes=tool_attributes, record_exception=False
                ) as span:
                    try:
                        result = run_tool(name, json.loads(arguments))
                        if oi or capture:
                            key = "output.value" if oi else "gen_ai.tool.call.result"
                            span.set_attribute(key, result)
                    except LookupError as error:
                        result = f"error: {error}"
                        span.set_status(Status(StatusCode.ERROR, str(error)))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
            final = client.chat.completions.create(model="stub", messages=messages, tools=TOOLS)
            answer = final.choices[0].message.content or ""
            if oi:
                root.set_attribute("output.value", answer)
    lines = [MessageToJson(encode_spans(spans.get_finished_spans()), indent=None)]
    records = logs.get_finished_logs()
    if records:
        lines.append(MessageToJson(encode_logs(records), indent=None))
    with open(out, "w", encoding="utf-8") as file:
        file.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
