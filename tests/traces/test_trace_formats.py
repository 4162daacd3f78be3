"""Each message format imports one agent run to the same responses as the hand-written
``data/agent_run.expected.json``, less what the format cannot record (``_CANNOT``); the inputs
are built with the real SDK types (``openai``, ``anthropic``) where they are installed."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from qa_eval.traces import read_traces
from qa_eval.traces.formats import detect_format

DATA = Path(__file__).parent / "data"
EXPECTED = json.loads((DATA / "agent_run.expected.json").read_text(encoding="utf-8"))
QUESTION = "Who wrote Dune, and when was it first published?"
ANSWER = EXPECTED["actual_answer"]
ARGS = [json.dumps(s["args"]) for s in EXPECTED["actual_steps"]]
OUTPUTS = [s["output"] for s in EXPECTED["actual_steps"]]


def expected_for(fmt: str) -> dict[str, Any]:
    """The shared expected response, less what format ``fmt`` cannot record."""
    want = copy.deepcopy(EXPECTED)
    steps = want["actual_steps"]
    if fmt in ("openai-chat", "openai-responses", "ragas"):
        for step in steps:  # no tool status in these formats: the error is only the output
            step.pop("status")
            step.pop("error", None)
            step["lost"] = ["status"]
    if fmt == "ragas":  # no ids; two calls of one message: results cannot be told apart
        for step in steps:
            step.pop("id")
        for step in steps[:2]:
            step.pop("output")
            step["lost"] = ["output", "status"]
        for key in ("input_tokens", "output_tokens", "total_tokens"):
            want.pop(key)
    return want


def _without_trace(response: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in response.items() if k != "trace"}


def _import(tmp_path: Path, name: str, data: Any) -> tuple[list[dict[str, Any]], Any]:
    path = tmp_path / name
    if name.endswith(".jsonl"):
        path.write_text("".join(json.dumps(r) + "\n" for r in data), encoding="utf-8")
    else:
        path.write_text(json.dumps(data), encoding="utf-8")
    return read_traces(path)


# openai-chat ------------------------------------------------------------------------------------
def chat_trace() -> dict[str, Any]:
    """The run as Chat Completions messages, assistant turns from the openai SDK's types."""
    openai = pytest.importorskip("openai")
    from openai.types.chat import ChatCompletionMessage, ChatCompletionMessageToolCall
    from openai.types.chat.chat_completion_message_tool_call import Function
    from openai.types.completion_usage import CompletionUsage

    del openai

    def call(i: int, name: str) -> ChatCompletionMessageToolCall:
        return ChatCompletionMessageToolCall(
            id=f"call_{i + 1}", type="function", function=Function(name=name, arguments=ARGS[i])
        )

    first = ChatCompletionMessage(
        role="assistant", content=None, tool_calls=[call(0, "search"), call(1, "search")]
    )
    second = ChatCompletionMessage(role="assistant", content=None, tool_calls=[call(2, "fetch")])
    final = ChatCompletionMessage(role="assistant", content=ANSWER)
    usage = CompletionUsage(prompt_tokens=120, completion_tokens=40, total_tokens=160)
    return {
        "question_id": "q1",
        "model": "gpt-4o-mini",
        "usage": usage.model_dump(),
        "messages": [
            {"role": "system", "content": "You answer questions about books."},
            {"role": "user", "content": QUESTION},
            first.model_dump(),
            # the replies in another order than the calls: linked by tool_call_id
            {"role": "tool", "tool_call_id": "call_2", "content": OUTPUTS[1]},
            {"role": "tool", "tool_call_id": "call_1", "content": OUTPUTS[0]},
            second.model_dump(),
            {"role": "tool", "tool_call_id": "call_3", "content": OUTPUTS[2]},
            final.model_dump(),
        ],
    }


def test_openai_chat_imports_to_the_expected_response(tmp_path: Path) -> None:
    trace = chat_trace()
    assert detect_format(trace) == "openai-chat"
    responses, report = _import(tmp_path, "chat.json", trace)
    assert [_without_trace(r) for r in responses] == [expected_for("openai-chat")]
    assert responses[0]["trace"]["format"] == "openai-chat"
    assert report.fidelity.tool_calls == 3
    assert report.fidelity.losses == {"status": 3}


# openai-responses -------------------------------------------------------------------------------
def responses_trace() -> dict[str, Any]:
    """The run as Responses API items, made with ``openai.types.responses``."""
    pytest.importorskip("openai.types.responses", reason="openai < 1.66 has no Responses API")
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )
    from openai.types.responses.response_input_item import FunctionCallOutput

    def call(i: int, name: str) -> dict[str, Any]:
        item = ResponseFunctionToolCall(
            type="function_call",
            id=f"fc_{i + 1}",
            call_id=f"call_{i + 1}",
            name=name,
            arguments=ARGS[i],
            status="completed",
        )
        return item.model_dump()

    def output(i: int) -> dict[str, Any]:
        item = FunctionCallOutput(
            type="function_call_output", call_id=f"call_{i + 1}", output=OUTPUTS[i]
        )
        return item.model_dump()

    answer = ResponseOutputMessage(
        id="msg_1",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=ANSWER, annotations=[])],
    )
    # the usage as the API sends it (ResponseUsage's required details change between SDK versions)
    usage = {"input_tokens": 120, "output_tokens": 40, "total_tokens": 160}
    return {
        "metadata": {"question_id": "q1"},
        "input": [
            {"role": "user", "content": QUESTION},
            call(0, "search"),
            call(1, "search"),
            output(1),
            output(0),
            call(2, "fetch"),
            output(2),
        ],
        "output": [answer.model_dump()],
        "usage": usage,
    }


def test_openai_responses_imports_to_the_expected_response(tmp_path: Path) -> None:
    trace = responses_trace()
    assert detect_format(trace) == "openai-responses"
    responses, report = _import(tmp_path, "responses.jsonl", [trace])
    assert [_without_trace(r) for r in responses] == [expected_for("openai-responses")]
    assert report.fidelity.losses == {"status": 3}


def test_responses_built_in_tools_are_one_step_each(tmp_path: Path) -> None:
    pytest.importorskip("openai.types.responses", reason="openai < 1.66 has no Responses API")
    from openai.types.responses import ResponseFileSearchToolCall, ResponseFunctionWebSearch

    web = ResponseFunctionWebSearch.model_validate(
        {
            "id": "ws_1",
            "type": "web_search_call",
            "status": "completed",
            "action": {"type": "search", "query": "Dune author"},
        }
    )
    files = ResponseFileSearchToolCall(
        id="fs_1",
        type="file_search_call",
        status="failed",
        queries=["dune"],
        results=None,
    )
    mcp = {
        "type": "mcp_call",
        "id": "mcp_1",
        "name": "lookup",
        "server_label": "books",
        "arguments": '{"title": "Dune"',
        "output": None,
        "error": "server down",
    }
    trace = {"input": QUESTION, "output": [web.model_dump(), files.model_dump(), mcp]}
    (response,), report = _import(tmp_path, "builtin.json", trace)
    steps = response["actual_steps"]
    assert [s["name"] for s in steps] == ["web_search", "file_search", "lookup"]
    assert steps[0]["args"]["query"] == "Dune author" and steps[0]["status"] == "success"
    assert steps[0]["lost"] == ["output"]  # a web search item carries no results
    assert steps[1]["status"] == "error" and steps[1]["error"] == "file_search_call failed"
    assert steps[2]["args"] == '{"title": "Dune"' and steps[2]["error"] == "server down"
    assert response["step_errors"] == [
        "step 3 (lookup): arguments are not valid JSON: Expecting ',' delimiter at 1:17; raw "
        "text kept"
    ]
    assert report.fidelity.losses["args_invalid"] == 1


# anthropic --------------------------------------------------------------------------------------
def anthropic_trace() -> dict[str, Any]:
    """The run as Anthropic messages, assistant turns as the anthropic SDK's ``Message``."""
    pytest.importorskip("anthropic")
    from anthropic.types import Message, TextBlock, ToolUseBlock, Usage

    def reply(n: int, blocks: list[Any], tokens: tuple[int, int]) -> dict[str, Any]:
        message = Message(
            id=f"msg_{n}",
            type="message",
            role="assistant",
            model="claude-sonnet-4-5",
            content=blocks,
            stop_reason="tool_use",
            stop_sequence=None,
            usage=Usage(input_tokens=tokens[0], output_tokens=tokens[1]),
        )
        return message.model_dump()

    def use(i: int, name: str) -> ToolUseBlock:
        args = json.loads(ARGS[i])
        return ToolUseBlock(type="tool_use", id=f"call_{i + 1}", name=name, input=args)

    def result(i: int, error: bool = False) -> dict[str, Any]:
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": f"call_{i + 1}",
            "content": [{"type": "text", "text": OUTPUTS[i]}],
        }
        if error:
            block["is_error"] = True
        return block

    return {
        "question_id": "q1",
        "system": "You answer questions about books.",
        "messages": [
            {"role": "user", "content": QUESTION},
            reply(
                1, [TextBlock(type="text", text=""), use(0, "search"), use(1, "search")], (30, 10)
            ),
            {"role": "user", "content": [result(1), result(0)]},
            reply(2, [use(2, "fetch")], (40, 10)),
            {"role": "user", "content": [result(2, error=True)]},
            reply(3, [TextBlock(type="text", text=ANSWER)], (50, 20)),
        ],
    }


def test_anthropic_imports_to_the_expected_response(tmp_path: Path) -> None:
    trace = anthropic_trace()
    assert detect_format(trace) == "anthropic"
    responses, report = _import(tmp_path, "anthropic.json", [trace])
    assert [_without_trace(r) for r in responses] == [expected_for("anthropic")]
    assert report.fidelity.lossless  # tool results say whether they failed


# ragas ------------------------------------------------------------------------------------------
def ragas_sample() -> dict[str, Any]:
    """The run as a ragas ``MultiTurnSample`` (as its ``model_dump`` writes it)."""
    return {
        "question_id": "q1",
        "user_input": [
            {"type": "human", "content": QUESTION},
            {
                "type": "ai",
                "content": "",
                "tool_calls": [
                    {"name": "search", "args": json.loads(ARGS[0])},
                    {"name": "search", "args": json.loads(ARGS[1])},
                ],
            },
            {"type": "tool", "content": OUTPUTS[0]},
            {"type": "tool", "content": OUTPUTS[1]},
            {
                "type": "ai",
                "content": "",
                "tool_calls": [{"name": "fetch", "args": json.loads(ARGS[2])}],
            },
            {"type": "tool", "content": OUTPUTS[2]},
            {"type": "ai", "content": ANSWER},
        ],
        "reference_tool_calls": [{"name": "search", "args": {"query": "Dune author"}}],
    }


def test_ragas_imports_to_the_expected_response(tmp_path: Path) -> None:
    sample = ragas_sample()
    assert detect_format(sample) == "ragas"
    responses, report = _import(tmp_path, "ragas.jsonl", [sample])
    assert [_without_trace(r) for r in responses] == [expected_for("ragas")]
    assert report.fidelity.losses["unlinked_result"] == 2  # never linked by position alone
    assert "reference_tool_calls" not in json.dumps(responses)
