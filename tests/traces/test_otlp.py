"""The OTLP reader on hand-made files: each convention (deprecated GenAI events on spans and as log
records, OpenLLMetry's flattened attributes, OpenInference's tool parameters), linking, tokens,
broken trees, streaming, protobuf, and hostile text."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from otlp_files import OTHER, TRACE, any_value, log, logs_request, request, span

from qa_eval.errors import InputError
from qa_eval.traces import otlp

ROOT, MODEL1, TOOL, MODEL2 = (
    "a1a1a1a1a1a1a1a1",
    "b2b2b2b2b2b2b2b2",
    "c3c3c3c3c3c3c3c3",
    "d4d4d4d4d4d4d4d4",
)
QUESTION = "What is the capital of France?"
CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "search", "arguments": '{"query": "capital"}'},
}


def one(records: list[Any]) -> Any:
    """The one trace the records hold."""
    traces = list(otlp.read(records, "t.json"))
    assert len(traces) == 1
    return traces[0]


def steps(trace: Any) -> list[tuple[Any, ...]]:
    """The calls' content, in order."""
    return [(c.name, c.id, c.args, c.output, c.status, c.error, c.lost) for c in trace.calls]


def deprecated_spans(with_events: bool) -> list[dict[str, Any]]:
    """An agent whose model spans write the deprecated GenAI events (when ``with_events``)."""
    usage = {"gen_ai.system": "openai", "gen_ai.request.model": "gpt-x"}
    events1 = [
        ("gen_ai.user.message", {"content": QUESTION}),
        (
            "gen_ai.choice",
            {"index": 0, "finish_reason": "tool_calls", "message": {"tool_calls": [CALL]}},
        ),
    ]
    events2 = [
        ("gen_ai.user.message", {"content": QUESTION}),
        ("gen_ai.assistant.message", {"tool_calls": [CALL]}),
        ("gen_ai.tool.message", {"content": "Paris", "id": "call_1"}),
        ("gen_ai.choice", {"index": 0, "message": {"content": "Paris."}}),
    ]
    return [
        span(ROOT, None, "agent", {"qa_eval.question_id": "q1"}, 0, 10),
        span(
            MODEL1,
            ROOT,
            "chat gpt-x",
            {**usage, "gen_ai.usage.prompt_tokens": 30, "gen_ai.usage.completion_tokens": 5},
            1,
            3,
            events=events1 if with_events else [],
        ),
        span(
            MODEL2,
            ROOT,
            "chat gpt-x",
            {**usage, "gen_ai.usage.prompt_tokens": 40, "gen_ai.usage.completion_tokens": 7},
            5,
            8,
            events=events2 if with_events else [],
        ),
    ]


EXPECTED_DEPRECATED = [("search", "call_1", {"query": "capital"}, "Paris", None, None, ["status"])]


def test_deprecated_events_on_spans() -> None:
    trace = one([request(*deprecated_spans(with_events=True))])
    assert steps(trace) == EXPECTED_DEPRECATED
    assert (trace.question, trace.answer, trace.question_id) == (QUESTION, "Paris.", "q1")
    assert (trace.input_tokens, trace.output_tokens, trace.total_tokens) == (70, 12, 82)
    assert trace.trace_id == TRACE and trace.root_span_id == ROOT and trace.elapsed_sec == 10
    assert trace.fidelity.conventions["gen_ai deprecated"] == 2
    assert trace.fidelity.losses == {"status": 1}


def test_deprecated_events_as_log_records_read_the_same() -> None:
    spans = deprecated_spans(with_events=False)
    logs = [
        log(MODEL1, "gen_ai.user.message", {"content": QUESTION}),
        log(MODEL1, "gen_ai.choice", {"index": 0, "message": {"tool_calls": [CALL]}}),
        log(MODEL2, "gen_ai.tool.message", {"content": "Paris", "id": "call_1"}),
        log(MODEL2, "gen_ai.choice", {"index": 0, "message": {"content": "Paris."}}),
    ]
    trace = one([request(*spans), logs_request(*logs)])
    assert steps(trace) == EXPECTED_DEPRECATED
    assert (trace.question, trace.answer) == (QUESTION, "Paris.")


def _as_text(records: list[Any]) -> list[Any]:
    """The same records with each ``gen_ai.choice`` event's ``message`` as JSON text, as bridges
    that move event bodies onto span events write nested values."""
    text = json.dumps(records)
    for message in ({"tool_calls": [CALL]}, {"content": "Paris."}):
        nested = json.dumps(any_value(message))
        flat = json.dumps({"stringValue": json.dumps(message)})
        assert nested in text
        text = text.replace(nested, flat)
    return json.loads(text)  # type: ignore[no-any-return]


def test_a_choice_message_given_as_json_text_is_read_as_its_value() -> None:
    on_spans = one(_as_text([request(*deprecated_spans(with_events=True))]))
    assert steps(on_spans) == EXPECTED_DEPRECATED
    assert (on_spans.question, on_spans.answer) == (QUESTION, "Paris.")
    logs = [
        log(MODEL1, "gen_ai.user.message", {"content": QUESTION}),
        log(MODEL1, "gen_ai.choice", {"index": 0, "message": {"tool_calls": [CALL]}}),
        log(MODEL2, "gen_ai.tool.message", {"content": "Paris", "id": "call_1"}),
        log(MODEL2, "gen_ai.choice", {"index": 0, "message": {"content": "Paris."}}),
    ]
    spans = deprecated_spans(with_events=False)
    as_logs = one(_as_text([request(*spans), logs_request(*logs)]))
    assert steps(as_logs) == EXPECTED_DEPRECATED
    assert as_logs.answer == "Paris."


def test_openllmetry_flattened_calls_link_to_tool_spans_by_name_and_order() -> None:
    model = {
        "llm.request.type": "chat",
        "gen_ai.prompt.0.role": "user",
        "gen_ai.prompt.0.content": QUESTION,
        "gen_ai.completion.0.role": "assistant",
        "gen_ai.completion.0.tool_calls.0.name": "search",
        "gen_ai.completion.0.tool_calls.0.arguments": '{"query": "a"}',
        "gen_ai.completion.0.tool_calls.1.name": "search",
        "gen_ai.completion.0.tool_calls.1.arguments": '{"query": "b"}',
        "llm.usage.total_tokens": 9,
        "gen_ai.usage.prompt_tokens": 6,
        "gen_ai.usage.completion_tokens": 3,
    }
    tool = {"traceloop.span.kind": "tool", "traceloop.entity.name": "search"}
    answer = {"llm.request.type": "chat", "gen_ai.completion.0.content": "It is Paris."}
    trace = one(
        [
            request(
                span(ROOT, None, "workflow", {"traceloop.span.kind": "workflow"}, 0, 20),
                span(MODEL1, ROOT, "openai.chat", model, 1, 2),
                span(TOOL, ROOT, "search.tool", {**tool, "traceloop.entity.output": "A"}, 3, 4),
                span("e5e5e5e5e5e5e5e5", ROOT, "search.tool", {**tool}, 5, 6, error="timeout"),
                span(MODEL2, ROOT, "openai.chat", answer, 7, 8),
            )
        ]
    )
    # no ids: the first planned search is the first executed one under the same parent
    assert steps(trace) == [
        ("search", None, {"query": "a"}, "A", "success", None, []),
        ("search", None, {"query": "b"}, None, "error", "timeout", []),
    ]
    assert [c.record_id for c in trace.calls] == [TOOL, "e5e5e5e5e5e5e5e5"]
    assert (trace.question, trace.answer, trace.total_tokens) == (QUESTION, "It is Paris.", 9)
    assert trace.fidelity.conventions["openllmetry"] == 5


def test_openllmetry_events_results_without_ids_answer_the_calls_in_order() -> None:
    """OpenLLMetry's ``gen_ai.tool.message`` events carry no call id: each answers the next call
    of the assistant message before it. Traceloop SDK tool and workflow spans write their values
    with ``json.dumps`` (a string in quotes; arguments as ``{"args": [...], "kwargs": {...}}``)."""
    calls = [
        {"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{}"}},
        {"id": "c2", "type": "function", "function": {"name": "lookup", "arguments": "{}"}},
    ]
    logs = [
        log(MODEL2, "gen_ai.user.message", {"content": QUESTION}),
        log(MODEL2, "gen_ai.assistant.message", {"content": None, "tool_calls": calls}),
        log(MODEL2, "gen_ai.tool.message", {"content": "found"}),
        log(MODEL2, "gen_ai.tool.message", {"content": "missing"}),
    ]
    workflow = {
        "traceloop.span.kind": "workflow",
        "traceloop.entity.input": json.dumps({"args": [QUESTION], "kwargs": {}}),
        "traceloop.entity.output": json.dumps("It is Paris."),
    }
    tool = {
        "traceloop.span.kind": "tool",
        "traceloop.entity.name": "search",
        "traceloop.entity.input": json.dumps({"args": [], "kwargs": {"q": "x"}}),
        "traceloop.entity.output": json.dumps("found it"),
    }
    trace = one(
        [
            request(
                span(ROOT, None, "agent.workflow", workflow, 0, 9),
                span(TOOL, ROOT, "search.tool", tool, 1, 2),
                span(MODEL2, ROOT, "openai.chat", {"gen_ai.operation.name": "chat"}, 3, 4),
            ),
            logs_request(*logs),
        ]
    )
    assert steps(trace) == [
        ("search", "c1", {"q": "x"}, "found it", "success", None, []),
        ("lookup", "c2", {}, "missing", None, None, ["status"]),
    ]
    assert (trace.question, trace.answer) == (QUESTION, "It is Paris.")


def test_openinference_redacted_values_are_not_recorded() -> None:
    hidden = "__REDACTED__"
    agent = {"openinference.span.kind": "AGENT", "input.value": hidden, "output.value": hidden}
    tool = {"openinference.span.kind": "TOOL", "tool.name": "search", "input.value": hidden}
    trace = one(
        [
            request(
                span(ROOT, None, "agent", agent, 0, 9),
                span(TOOL, ROOT, "search", {**tool, "output.value": hidden}, 1, 2),
            )
        ]
    )
    assert steps(trace) == [("search", None, None, None, "success", None, ["args", "output"])]
    assert (trace.question, trace.answer) == (None, None)


def test_a_status_holding_a_traceback_gives_the_exception_message() -> None:
    """OpenInference's LangChain tool spans: the status is the error's repr and traceback."""
    status = "LookupError('no record 7')Traceback (most recent call last):\n  File x\nLookupError"
    tool = {"openinference.span.kind": "TOOL", "tool.name": "lookup", "input.value": "{}"}
    event = ("exception", {"exception.type": "LookupError", "exception.message": "no record 7"})
    with_event = span(TOOL, ROOT, "lookup", tool, 1, 2, error=status, events=[event])
    without = span(MODEL1, ROOT, "lookup", tool, 3, 4, error=status)
    trace = one([request(span(ROOT, None, "agent", {}, 0, 9), with_event, without)])
    assert [c.error for c in trace.calls] == ["no record 7", "LookupError('no record 7')"]


def test_a_planned_call_under_another_parent_is_not_linked() -> None:
    model = {
        "llm.request.type": "chat",
        "gen_ai.completion.0.tool_calls.0.name": "search",
        "gen_ai.completion.0.tool_calls.0.arguments": "{}",
    }
    trace = one(
        [
            request(
                span(ROOT, None, "agent", {}, 0, 9),
                span(MODEL1, ROOT, "chat", model, 1, 2),
                span(MODEL2, ROOT, "sub", {}, 2, 8),
                span(
                    TOOL,
                    MODEL2,
                    "tool",
                    {"openinference.span.kind": "TOOL", "tool.name": "search", "input.value": "{}"},
                    3,
                    4,
                ),
            )
        ]
    )
    assert len(trace.calls) == 2
    assert trace.fidelity.losses == {"output": 2, "status": 1}


def test_openinference_tool_parameters_schema_or_values() -> None:
    schema = {"type": "object", "properties": {"query": {"type": "string"}}}
    tool = {"openinference.span.kind": "TOOL", "tool.name": "search", "output.value": "x"}
    trace = one(
        [
            request(
                span(ROOT, None, "agent", {"openinference.span.kind": "AGENT"}, 0, 9),
                span(TOOL, ROOT, "t", {**tool, "tool.parameters": json.dumps(schema)}, 1, 2),
                span(MODEL1, ROOT, "t", {**tool, "tool.parameters": '{"query": "q"}'}, 3, 4),
            )
        ]
    )
    assert steps(trace) == [
        ("search", None, None, "x", "success", None, ["args_schema"]),
        ("search", None, {"query": "q"}, "x", "success", None, []),
    ]
    assert trace.fidelity.losses == {"args_schema": 1}


def test_current_genai_parts_invalid_arguments_and_unlinked_results() -> None:
    output = [
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": "c1", "name": "calc", "arguments": '{"x": 1,, }'}
            ],
        }
    ]
    inputs = [
        {"role": "user", "parts": [{"type": "text", "content": QUESTION}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c9", "response": "?"}]},
    ]
    chat = {
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": json.dumps(inputs),
        "gen_ai.output.messages": json.dumps(output),
    }
    trace = one([request(span(ROOT, None, "chat", chat, 0, 1))])
    (call,) = trace.calls
    assert (call.name, call.id, call.args) == ("calc", "c1", '{"x": 1,, }')
    assert call.args_error == (
        "arguments are not valid JSON: Expecting property name enclosed in double quotes at 1:9"
    )
    assert call.lost == ["args_invalid", "output", "status"]
    assert trace.fidelity.losses["unlinked_result"] == 1


def test_structured_arguments_and_any_values() -> None:
    tool = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "f",
        "gen_ai.tool.call.id": "c",
        "gen_ai.tool.call.arguments": {
            "n": 3,
            "on": True,
            "xs": [1.5, "a"],
            "deep": {"k": "v"},
        },
        "gen_ai.tool.call.result": 42,
    }
    trace = one([request(span(ROOT, None, "execute_tool f", tool, 0, 1))])
    assert steps(trace) == [
        (
            "f",
            "c",
            {"n": 3, "on": True, "xs": [1.5, "a"], "deep": {"k": "v"}},
            42,
            "success",
            None,
            [],
        )
    ]


def test_root_usage_is_the_total_not_added_to_model_calls() -> None:
    root = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.usage.input_tokens": 100,
        "gen_ai.usage.output_tokens": 10,
    }
    model = {
        "gen_ai.operation.name": "chat",
        "gen_ai.usage.input_tokens": 60,
        "gen_ai.usage.output_tokens": 6,
    }
    trace = one(
        [
            request(
                span(ROOT, None, "a", root, 0, 9),
                span(MODEL1, ROOT, "c", model, 1, 2),
                span(MODEL2, ROOT, "c", model, 3, 4),
            )
        ]
    )
    assert (trace.input_tokens, trace.output_tokens, trace.total_tokens) == (100, 10, 110)


def test_nested_model_spans_count_once() -> None:
    outer = {
        "openinference.span.kind": "LLM",
        "llm.token_count.prompt": 5,
        "llm.token_count.completion": 2,
        "llm.token_count.total": 7,
    }
    trace = one(
        [
            request(
                span(ROOT, None, "a", {}, 0, 9),
                span(MODEL1, ROOT, "lc", outer, 1, 5),
                span(MODEL2, MODEL1, "oa", outer, 2, 4),
            )
        ]
    )
    assert trace.total_tokens == 7


def test_unknown_attributes_are_counted() -> None:
    attrs = {
        "gen_ai.operation.name": "chat",
        "gen_ai.brand_new.thing": 1,
        "ai.toolCall.name": "x",
        "llm.new_messages.3.text": "y",
        "http.method": "POST",
    }
    trace = one([request(span(ROOT, None, "a", attrs, 0, 1))])
    assert trace.fidelity.unknown_attributes == {
        "gen_ai.brand_new.thing": 1,
        "ai.toolCall.name": 1,
        "llm.new_messages.N.text": 1,
    }
    assert trace.fidelity.losses["unknown_attribute"] == 3 and not trace.fidelity.lossless


@pytest.mark.parametrize("shape", ["cycle", "self", "missing", "duplicate"])
def test_broken_trees_are_counted_not_fatal(shape: str) -> None:
    spans = {
        "cycle": [
            span(ROOT, TOOL, "a", {}, 0, 9),
            span(MODEL1, ROOT, "b", {}, 1, 2),
            span(TOOL, MODEL1, "c", {}, 3, 4),
        ],
        "self": [span(ROOT, ROOT, "a", {}, 0, 9)],
        "missing": [span(ROOT, "ffffffffffffffff", "a", {}, 0, 9)],
        "duplicate": [span(ROOT, None, "a", {}, 0, 9), span(ROOT, None, "a", {}, 0, 9)],
    }[shape]
    trace = one([request(*spans)])
    name = "duplicate_id" if shape == "duplicate" else "broken_parent"
    assert trace.fidelity.losses == {name: 1}
    assert trace.root_span_id is not None


def test_base64_ids_are_read_as_hex() -> None:
    import base64

    record = span(ROOT, None, "a", {}, 0, 1)
    record["traceId"] = base64.b64encode(bytes.fromhex(TRACE)).decode()
    record["spanId"] = base64.b64encode(bytes.fromhex(ROOT)).decode()
    record["status"] = {"code": "STATUS_CODE_OK"}
    trace = one([request(record)])
    assert (trace.trace_id, trace.root_span_id) == (TRACE, ROOT)


def contiguous(count: int, seen: list[int]) -> Iterator[dict[str, Any]]:
    """``count`` one-span traces, one per line, noting how many lines were read."""
    for number in range(count):
        seen.append(number)
        yield request(
            span(ROOT, None, "a", {"question_id": str(number)}, 0, 1, trace=f"{number:032x}")
        )


def test_contiguous_traces_are_given_out_as_they_complete() -> None:
    seen: list[int] = []
    traces = otlp.read(contiguous(1000, seen), "big.jsonl")
    first = next(traces)
    assert first.question_id == "0" and len(seen) == otlp.HOLD + 1
    assert [t.question_id for t in traces] == [str(n) for n in range(1, 1000)]


def test_spans_after_their_trace_was_given_out_are_an_error() -> None:
    records = [request(span(ROOT, None, "a", {}, 0, 1))]
    records += [request(span(ROOT, None, "a", {}, 0, 1, trace=OTHER))] * otlp.HOLD
    records += [request(span(MODEL1, ROOT, "b", {}, 0, 1))]
    with pytest.raises(InputError, match=r"t.json: record 6: spans or log records of trace 5b8e"):
        list(otlp.read(records, "t.json"))


def test_interleaved_traces_are_grouped() -> None:
    records = [
        request(span(MODEL1, ROOT, "c", {}, 1, 2), span(MODEL1, ROOT, "c", {}, 1, 2, trace=OTHER)),
        request(span(ROOT, None, "a", {"question_id": "x"}, 0, 3, trace=OTHER)),
        request(span(ROOT, None, "a", {"question_id": "y"}, 0, 3)),
    ]
    traces = list(otlp.read(records, "t.json"))
    assert sorted((t.question_id, t.trace_id) for t in traces) == [("x", OTHER), ("y", TRACE)]
    assert all(not t.fidelity.losses for t in traces)


HOSTILE = "</script><img src=x onerror=alert(1)>{{7*7}}\u202e'; DROP TABLE x;--\n\x00"


def test_hostile_text_is_data() -> None:
    tool = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": HOSTILE,
        "gen_ai.tool.call.id": HOSTILE,
        "gen_ai.tool.call.arguments": json.dumps({HOSTILE: HOSTILE}),
        "gen_ai.tool.call.result": HOSTILE,
    }
    chat = {
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": json.dumps(
            [{"role": "user", "parts": [{"type": "text", "content": HOSTILE}]}]
        ),
    }
    trace = one(
        [
            request(
                span(ROOT, None, "a", {"question_id": HOSTILE}, 0, 9, error=HOSTILE),
                span(MODEL1, ROOT, "c", chat, 1, 2),
                span(TOOL, ROOT, HOSTILE, tool, 3, 4, error=HOSTILE),
            )
        ]
    )
    assert steps(trace) == [(HOSTILE, HOSTILE, {HOSTILE: HOSTILE}, HOSTILE, "error", HOSTILE, [])]
    assert (trace.question_id, trace.question) == (HOSTILE, HOSTILE)


def test_garbage_records_are_skipped_not_fatal() -> None:
    records = [
        {
            "resourceSpans": [
                None,
                3,
                {"scopeSpans": [{"spans": [None, {"traceId": 5}, {"spanId": "x"}]}]},
            ]
        },
        "text",
        [1, 2],
    ]
    assert list(otlp.read(records, "t.json")) == []


def test_detect() -> None:
    assert otlp.detect(request()) and otlp.detect(logs_request()) and otlp.detect([request()])
    assert not otlp.detect({"messages": []}) and not otlp.detect([]) and not otlp.detect("x")


def test_protobuf_without_the_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from qa_eval import extras

    monkeypatch.setattr(extras, "available", lambda module: False)
    with pytest.raises(extras.MissingExtra, match=r"pip install 'qa-eval\[otlp\]'"):
        list(otlp.read_bytes(b"\x0a\x00", "t.pb"))
