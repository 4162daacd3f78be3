"""The Langfuse reader on hand-written exports following the public API's shapes (a trace with
``observations``, and pages of observations), validated by the ``langfuse`` SDK's own model
where it is installed: the same agent run as the OTLP tests, read to the same calls."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest
import tree_files

from qa_eval.traces import langfuse

QUESTION = "What is the capital of France?"
CALL = {
    "id": "call_q1",
    "type": "function",
    "function": {"name": "search", "arguments": '{"query": "capital of France"}'},
}


def at(second: int) -> str:
    """An ISO time ``second`` seconds into the run."""
    return f"2026-01-02T03:04:{second:02d}.000Z"


def observation(
    oid: str, kind: str, parent: str | None, start: int, end: int, **fields: Any
) -> dict[str, Any]:
    """One observation of trace ``t1`` as the public API returns it."""
    return tree_files.observation(oid, kind, parent, at(start), at(end), "t1", **fields)


def export(failing: bool = False) -> dict[str, Any]:
    """The trace of the agent answering one question with one tool call."""
    tool: dict[str, Any] = {"name": "search", "input": {"query": "capital of France"}}
    tool.update(
        {"level": "ERROR", "statusMessage": "no record 7"}
        if failing
        else {"output": "Paris is the capital of France."}
    )
    history = [
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
    ]
    return {
        "id": "t1",
        "name": "agent",
        "timestamp": at(0),
        "input": {"question": QUESTION},
        "output": "Paris.",
        "metadata": {"question_id": "q1"},
        "latency": 9.5,
        "observations": [
            observation("o-root", "AGENT", None, 0, 9, name="agent"),
            observation(
                "o-gen1",
                "GENERATION",
                "o-root",
                1,
                2,
                model="gpt-x",
                input=[{"role": "user", "content": QUESTION}],
                output={"role": "assistant", "content": None, "tool_calls": [CALL]},
                usageDetails={"input": 50, "output": 10, "total": 60},
            ),
            observation("o-tool", "TOOL", "o-root", 3, 4, **tool),
            observation(
                "o-gen2",
                "GENERATION",
                "o-root",
                5,
                8,
                model="gpt-x",
                input=[
                    *history,
                    {
                        "role": "tool",
                        "tool_call_id": "call_q1",
                        "content": "Paris is the capital of France.",
                    },
                ],
                output={"role": "assistant", "content": "Paris."},
                usage={"input": 51, "output": 11, "total": 62},
            ),
        ],
    }


def test_validates_against_the_sdk_model() -> None:
    models = pytest.importorskip(
        "langfuse.api.commons.types.observation_v2", reason="needs langfuse"
    )
    for item in export()["observations"]:
        snake = {re.sub(r"[A-Z]", lambda m: "_" + m[0].lower(), k): v for k, v in item.items()}
        parsed = models.ObservationV2.model_validate({**snake, "project_id": "p"})
        assert (parsed.id, parsed.parent_observation_id) == (
            item["id"],
            item["parentObservationId"],
        )


def test_a_trace_with_observations() -> None:
    (trace,) = langfuse.read([export()], "lf.json")
    (call,) = trace.calls
    assert (call.name, call.id, call.args, call.output, call.status, call.lost) == (
        "search",
        "call_q1",
        {"query": "capital of France"},
        "Paris is the capital of France.",
        "success",
        [],
    )
    assert call.record_id == "o-tool" and call.parent == "o-root"
    assert (trace.trace_id, trace.root_span_id, trace.question_id) == ("t1", "o-root", "q1")
    assert (trace.question, trace.answer, trace.model) == (QUESTION, "Paris.", "gpt-x")
    assert (trace.input_tokens, trace.output_tokens, trace.total_tokens) == (101, 21, 122)
    assert trace.elapsed_sec == 9.5
    assert trace.fidelity.traces == 1 and trace.fidelity.tool_calls == 1 and trace.fidelity.lossless


def test_a_failed_tool() -> None:
    (trace,) = langfuse.read([export(failing=True)], "lf.json")
    (call,) = trace.calls
    assert (call.status, call.error, call.lost) == ("error", "no record 7", [])


def test_pages_of_observations_are_grouped_by_trace() -> None:
    first = export()["observations"]
    second = copy.deepcopy(first)
    for item in second:
        item["traceId"] = "t2"
    records = [{"data": first[:2], "meta": {"page": 1}}, {"data": first[2:]}, *second]
    traces = list(langfuse.read(records, "obs.jsonl"))
    assert [t.trace_id for t in traces] == ["t1", "t2"]
    assert [len(t.calls) for t in traces] == [1, 1]
    assert traces[0].calls[0].output == "Paris is the capital of France."


def test_broken_tree_duplicates_and_unlinked_results() -> None:
    document = export()
    observations = document["observations"]
    observations[0]["parentObservationId"] = "o-tool"  # a cycle through the tool
    observations.append(copy.deepcopy(observations[1]))  # a repeated id
    observations[3]["input"].append({"role": "tool", "tool_call_id": "nowhere", "content": "?"})
    (trace,) = langfuse.read([document], "lf.json")
    assert trace.fidelity.losses == {"broken_parent": 1, "duplicate_id": 1, "unlinked_result": 1}
    assert len(trace.calls) == 1


def test_decorator_inputs_and_hostile_text() -> None:
    hostile = "</script>{{x}}\u202e\n'\""
    document = export()
    tool = document["observations"][2]
    tool.update(
        name=hostile, input=json.dumps({"args": [], "kwargs": {hostile: hostile}}), output=hostile
    )
    document["observations"][1]["output"]["tool_calls"][0]["function"]["name"] = hostile
    (trace,) = langfuse.read([document], "lf.json")
    (call,) = trace.calls
    assert (call.name, call.args, call.output, call.id) == (
        hostile,
        {hostile: hostile},
        hostile,
        "call_q1",
    )


def test_detect() -> None:
    assert langfuse.detect(export()) and langfuse.detect({"data": export()["observations"]})
    assert langfuse.detect(export()["observations"][0]) and langfuse.detect([export()])
    assert not langfuse.detect({"resourceSpans": []}) and not langfuse.detect(
        {"run_type": "llm", "id": 1}
    )
