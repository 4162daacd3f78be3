"""A tiny tool-calling agent traced by real OpenTelemetry instrumentation, run as a program by the
OTLP tests (one process per run: the instrumentors patch the ``openai`` package globally, and
their settings are environment variables read when they start).

``python otel_agent.py BASE_URL OUT KIND`` asks two questions of the scripted server at
``BASE_URL`` (``tests/openai_stub.py`` with ``agent_script.script`` for the ``openai`` client, or
``agent_script.anthropic_script`` for the ``anthropic`` one; it replies with a tool call, then with
an answer). KIND is the instrumentation: ``openai-v2`` (OpenTelemetry's GenAI), ``openinference``,
``openllmetry`` (Traceloop's ``opentelemetry-instrumentation-openai``), ``openllmetry-events`` (the
same, messages as events), ``anthropic-openinference``, ``anthropic-openllmetry`` or
``langchain-openinference`` (the agent written with LangChain). The agent runs each question under
a root span, runs the tool the model asked for under a tool span (``q2``'s tool fails) and sends
its result back; its own spans follow the instrumentation's convention (OpenLLMetry's are what the
Traceloop SDK's ``@workflow``/``@tool`` write). The SDK's spans (and log records, for GenAI events)
are encoded by the exporter's own encoder and written as the collector's file exporter writes them:
one OTLP/JSON request per line in OUT; and as length-prefixed protobuf in OUT with the suffix
``.pb``.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToJson
from openai import OpenAI
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

try:
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter
except ImportError:  # its name before opentelemetry-sdk 1.39 (older OpenLLMetry needs those)
    from opentelemetry.sdk._logs.export import (  # type: ignore[attr-defined,no-redef]
        InMemoryLogExporter as InMemoryLogRecordExporter,
    )

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
ANTHROPIC_TOOLS = [
    {
        "name": tool["function"]["name"],
        "description": tool["function"]["description"],
        "input_schema": tool["function"]["parameters"],
    }
    for tool in TOOLS
]

REDACTED = "__REDACTED__"
QUESTIONS = [
    ("q1", "What is the capital of France?"),
    ("q2", "Who owns record 7?"),
]


def run_tool(name: str, args: dict[str, Any]) -> str:
    """The agent's tools: ``search`` answers, ``lookup`` fails."""
    if name == "lookup":
        raise LookupError(f"no record {args.get('id')}")
    return "Paris is the capital of France."


def instrument(kind: str, tracer_provider: TracerProvider, logger_provider: LoggerProvider) -> None:
    """Start ``kind``'s instrumentation of the ``openai`` or ``anthropic`` package."""
    if kind == "openai-v2":
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(
            tracer_provider=tracer_provider, logger_provider=logger_provider
        )
    elif kind == "openinference":
        from openinference.instrumentation.openai import OpenAIInstrumentor as OIOpenAI

        OIOpenAI().instrument(tracer_provider=tracer_provider)
    elif kind in ("openllmetry", "openllmetry-events"):
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor as LoopOpenAI

        # ``use_attributes=False``: messages as GenAI events (log records), not attributes (the
        # switch was ``use_legacy_attributes`` before 0.50)
        switch = (
            "use_attributes"
            if "use_attributes" in inspect.signature(LoopOpenAI.__init__).parameters
            else "use_legacy_attributes"
        )
        LoopOpenAI(**{switch: kind == "openllmetry"}).instrument(
            tracer_provider=tracer_provider, logger_provider=logger_provider
        )
    elif kind == "anthropic-openinference":
        from openinference.instrumentation.anthropic import AnthropicInstrumentor as OIAnthropic

        OIAnthropic().instrument(tracer_provider=tracer_provider)
    elif kind == "anthropic-openllmetry":
        from opentelemetry.instrumentation.anthropic import AnthropicInstrumentor as LoopAnthropic

        LoopAnthropic().instrument(tracer_provider=tracer_provider)
    elif kind == "langchain-openinference":
        from openinference.instrumentation.langchain import LangChainInstrumentor

        LangChainInstrumentor().instrument(tracer_provider=tracer_provider)
    else:
        raise SystemExit(f"unknown instrumentation {kind!r}")


def run_langchain(base_url: str) -> None:
    """The same agent written with LangChain (``ChatOpenAI`` with tools bound, ``@tool``
    functions, the loop in a ``RunnableLambda``): every span is the instrumentation's; the
    question id is OpenInference's ``using_metadata``."""
    from langchain_core.messages import HumanMessage, ToolMessage
    from langchain_core.runnables import RunnableLambda
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from openinference.instrumentation import using_metadata

    @tool
    def search(query: str) -> str:
        """the search tool"""
        return run_tool("search", {"query": query})

    @tool
    def lookup(id: int) -> str:  # the argument is named as the model calls it
        """the lookup tool"""
        return run_tool("lookup", {"id": id})

    tools = {"search": search, "lookup": lookup}
    model = ChatOpenAI(
        model="stub",
        base_url=base_url,
        api_key="test-key",
        max_retries=0,  # type: ignore[arg-type]
    ).bind_tools(list(tools.values()))

    def agent(question: str) -> str:
        messages: list[Any] = [HumanMessage(question)]
        reply = model.invoke(messages)
        messages.append(reply)
        for call in reply.tool_calls:
            try:
                result = tools[call["name"]].invoke(call["args"])
            except LookupError as error:
                result = f"error: {error}"
            messages.append(ToolMessage(result, tool_call_id=call["id"]))
        return str(model.invoke(messages).content)

    chain = RunnableLambda(agent).with_config(run_name="agent")
    for question_id, question in QUESTIONS:
        with using_metadata({"question_id": question_id}):
            chain.invoke(question)


class Model:
    """The model behind either SDK: ask with the conversation so far, get the tool calls
    (``id``, ``name``, ``arguments`` JSON text) and the text of its reply."""

    def __init__(self, base_url: str, anthropic: bool) -> None:
        self.anthropic = anthropic
        if anthropic:
            from anthropic import Anthropic

            self.client: Any = Anthropic(
                base_url=base_url.removesuffix("/v1"), api_key="test-key", max_retries=0
            )
        else:
            self.client = OpenAI(base_url=base_url, api_key="test-key", max_retries=0)

    def ask(self, messages: list[Any]) -> tuple[list[tuple[str, str, str]], str]:
        """One model call; its reply is appended to ``messages``."""
        if self.anthropic:
            reply = self.client.messages.create(
                model="stub", max_tokens=256, messages=messages, tools=ANTHROPIC_TOOLS
            )
            blocks = [b.model_dump() for b in reply.content]
            messages.append({"role": "assistant", "content": blocks})
            calls = [
                (b.id, b.name, json.dumps(b.input)) for b in reply.content if b.type == "tool_use"
            ]
            text = "".join(b.text for b in reply.content if b.type == "text")
            return calls, text
        completion = self.client.chat.completions.create(
            model="stub", messages=messages, tools=TOOLS
        )
        message = completion.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        return [
            (c.id, c.function.name, c.function.arguments) for c in message.tool_calls or []
        ], message.content or ""

    def give(self, messages: list[Any], results: list[tuple[str, str, bool]]) -> None:
        """Send the tools' results (call id, text, whether it failed) back to the model."""
        if self.anthropic:
            blocks = [
                {"type": "tool_result", "tool_use_id": i, "content": r, "is_error": failed}
                for i, r, failed in results
            ]
            messages.append({"role": "user", "content": blocks})
        else:
            for call_id, result, _ in results:
                messages.append({"role": "tool", "tool_call_id": call_id, "content": result})


def run_agent(kind: str, base_url: str, tracer: Any) -> None:
    """The agent with either SDK, its own root and tool spans in its instrumentation's
    convention."""
    model = Model(base_url, anthropic=kind.startswith("anthropic-"))
    # the agent's own spans follow its instrumentation's convention
    family = "oi" if kind.endswith("openinference") else "loop" if "openllmetry" in kind else "gen"
    if family == "loop":
        # OpenLLMetry's switch (the Traceloop SDK's decorators honour it the same way)
        capture = os.environ.get("TRACELOOP_TRACE_CONTENT", "true").lower() != "false"
    elif family == "oi":
        # OpenInference's TraceConfig: hidden values are written as "__REDACTED__" (the agent's
        # own spans too, as an OITracer writes them)
        capture = os.environ.get("OPENINFERENCE_HIDE_INPUTS", "").lower() != "true"
    else:
        capture = os.environ.get(
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", ""
        ).lower() not in ("", "false", "no_content")
    for question_id, question in QUESTIONS:
        shown = question if capture else REDACTED
        with tracer.start_as_current_span(
            "agent", attributes=root_attributes(family, question_id, shown)
        ) as root:
            messages: list[Any] = [{"role": "user", "content": question}]
            calls, _ = model.ask(messages)
            results = []
            for call_id, name, arguments in calls:
                with tracer.start_as_current_span(
                    f"{name}.tool" if family == "loop" else f"execute_tool {name}",
                    attributes=tool_attributes(family, call_id, name, arguments, capture),
                    record_exception=False,
                ) as span:
                    try:
                        result = run_tool(name, json.loads(arguments))
                        failed = False
                        if family == "oi":
                            span.set_attribute("output.value", result if capture else REDACTED)
                        elif family == "loop" and capture:
                            # the Traceloop SDK writes a tool's return value as JSON
                            span.set_attribute("traceloop.entity.output", json.dumps(result))
                        elif capture:
                            span.set_attribute("gen_ai.tool.call.result", result)
                    except LookupError as error:
                        result, failed = f"error: {error}", True
                        span.set_status(Status(StatusCode.ERROR, str(error)))
                results.append((call_id, result, failed))
            model.give(messages, results)
            _, answer = model.ask(messages)
            if family == "oi":
                root.set_attribute("output.value", answer if capture else REDACTED)
            elif family == "loop" and capture:
                # what the Traceloop SDK's @workflow writes: the arguments and the return value
                entity = json.dumps({"args": [question], "kwargs": {}})
                root.set_attribute("traceloop.entity.input", entity)
                root.set_attribute("traceloop.entity.output", json.dumps(answer))


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
    instrument(kind, tracer_provider, logger_provider)
    if kind.startswith("langchain-"):
        run_langchain(base_url)
    else:
        run_agent(kind, base_url, tracer_provider.get_tracer("qa-agent"))
    requests: list[Any] = [encode_spans(spans.get_finished_spans())]
    records = logs.get_finished_logs()
    if records:
        requests.append(encode_logs(records))
    lines = [MessageToJson(request, indent=None) for request in requests]
    with open(out, "w", encoding="utf-8") as file:
        file.write("\n".join(lines) + "\n")
    # the same requests as protobuf, each prefixed by its length (4 bytes, big-endian)
    chunks = [request.SerializeToString() for request in requests]
    data = b"".join(len(chunk).to_bytes(4, "big") + chunk for chunk in chunks)
    Path(out).with_suffix(".pb").write_bytes(data)


def root_attributes(family: str, question_id: str, question: str) -> dict[str, Any]:
    """The agent's root span, as an agent instrumented with ``family``'s convention writes it."""
    if family == "oi":
        return {
            "openinference.span.kind": "AGENT",
            "input.value": question,
            "metadata": json.dumps({"question_id": question_id}),
        }
    if family == "loop":
        # what the Traceloop SDK's @workflow and association properties write
        return {
            "traceloop.span.kind": "workflow",
            "traceloop.entity.name": "agent",
            "traceloop.workflow.name": "agent",
            "traceloop.association.properties.question_id": question_id,
        }
    return {"gen_ai.operation.name": "invoke_agent", "question_id": question_id}


def tool_attributes(
    family: str, call_id: str, name: str, arguments: str, capture: bool
) -> dict[str, Any]:
    """A tool span's attributes, as an agent instrumented with ``family``'s convention writes
    them (OpenLLMetry's @tool records no call id: the call is linked by name)."""
    if family == "oi":
        shown = arguments if capture else REDACTED
        return {"openinference.span.kind": "TOOL", "tool.name": name, "input.value": shown}
    if family == "loop":
        attributes: dict[str, Any] = {
            "traceloop.span.kind": "tool",
            "traceloop.entity.name": name,
            "traceloop.workflow.name": "agent",
            "traceloop.entity.path": "agent",
        }
        if capture:
            entity = {"args": [], "kwargs": json.loads(arguments)}
            attributes["traceloop.entity.input"] = json.dumps(entity)
        return attributes
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": call_id,
    }
    if capture:
        attributes["gen_ai.tool.call.arguments"] = arguments
    return attributes


if __name__ == "__main__":
    main()
