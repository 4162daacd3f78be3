"""What the scripted model does for the agent of ``otel_agent.py``: a tool call for each new
question, its answer once the tool's result is in the messages; shared by the OTLP tests and the
worked example of docs/traces.md."""

from __future__ import annotations

import importlib.util
import json
from typing import Any

from openai_stub import Reply


def have(*names: str) -> bool:
    """Whether every module named is installed (the instrumentation tests skip otherwise)."""
    for name in names:
        try:
            if importlib.util.find_spec(name) is None:
                return False
        except ImportError:
            return False
    return True


# What the scripted model does for each question: the tool call it plans, then its answer.
PLAN = {
    "What is the capital of France?": ("call_q1", "search", {"query": "capital of France"}),
    "Who owns record 7?": ("call_q2", "lookup", {"id": 7}),
}
ANSWER = {"What is the capital of France?": "Paris.", "Who owns record 7?": "I could not find it."}
TOOL_OUTPUT = {"search": "Paris is the capital of France."}
TOOL_ERROR = {"lookup": "no record 7"}


def usage(number: int) -> dict[str, int]:
    """The usage the server reports for its ``number``-th reply."""
    return {"prompt_tokens": 50 + number, "completion_tokens": 10 + number}


def script(request: dict[str, Any], number: int) -> Reply:
    """A tool call for a new question, the answer once the tool's result is in the messages."""
    question = request["messages"][0]["content"]
    if not any(message.get("role") == "tool" for message in request["messages"]):
        call_id, name, args = PLAN[question]
        function = {"name": name, "arguments": json.dumps(args)}
        message: dict[str, Any] = {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": call_id, "type": "function", "function": function}],
        }
        finish = "tool_calls"
    else:
        message, finish = {"role": "assistant", "content": ANSWER[question]}, "stop"
    tokens = usage(number)
    tokens["total_tokens"] = tokens["prompt_tokens"] + tokens["completion_tokens"]
    return Reply(
        body={
            "id": f"chatcmpl-{number}",
            "object": "chat.completion",
            "created": 0,
            "model": "stub",
            "choices": [{"index": 0, "finish_reason": finish, "message": message}],
            "usage": tokens,
        }
    )


def anthropic_script(request: dict[str, Any], number: int) -> Reply:
    """The same plan as :func:`script` for ``POST /v1/messages`` (the Anthropic Messages API):
    a ``tool_use`` block for a new question, the answer once a ``tool_result`` is sent back."""
    messages = request["messages"]
    question = messages[0]["content"]
    if isinstance(question, list):
        question = "".join(b.get("text", "") for b in question if isinstance(b, dict))
    answered = any(
        isinstance(m.get("content"), list)
        and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in m["content"])
        for m in messages
    )
    if not answered:
        call_id, name, args = PLAN[question]
        content: list[dict[str, Any]] = [
            {"type": "tool_use", "id": call_id, "name": name, "input": args}
        ]
        stop = "tool_use"
    else:
        content, stop = [{"type": "text", "text": ANSWER[question]}], "end_turn"
    tokens = usage(number)
    return Reply(
        body={
            "id": f"msg_{number}",
            "type": "message",
            "role": "assistant",
            "model": "stub",
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {
                "input_tokens": tokens["prompt_tokens"],
                "output_tokens": tokens["completion_tokens"],
            },
        }
    )
