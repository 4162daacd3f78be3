"""The LangSmith reader on hand-written runs following the SDK's ``Run`` schema and LangChain's
serialised messages (a run tree with ``child_runs``, and the same runs flat, as ``list_runs``
gives them), validated by the ``langsmith`` SDK's model where it is installed: the same agent run
as the OTLP and Langfuse tests, read to the same calls."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import tree_files

from qa_eval.traces import langsmith

QUESTION = "What is the capital of France?"
TRACE = "0a000000-0000-4000-8000-000000000001"
IDS = {
    name: f"0a000000-0000-4000-8000-00000000000{n}"
    for n, name in enumerate(["root", "llm1", "tool", "llm2"], 1)
}


def at(second: int) -> str:
    """An ISO time ``second`` seconds into the run."""
    return f"2026-01-02T03:04:{second:02d}.000000+00:00"


lc = tree_files.lc


def run(
    name: str, run_type: str, start: int, end: int, parent: str | None, **fields: Any
) -> dict[str, Any]:
    """One run as the SDK's ``Run`` has it (``label``: its name when not ``name``)."""
    order = f"20260102T0304{start:02d}000000Z{IDS[name]}"
    label = fields.pop("label", name)
    return tree_files.run(
        IDS[name], label, run_type, at(start), at(end), parent, TRACE, order, **fields
    )


def tree(failing: bool = False) -> dict[str, Any]:
    """The agent answering one question with one tool call, as a run tree."""
    call = {
        "name": "search",
        "args": {"query": "capital of France"},
        "id": "call_q1",
        "type": "tool_call",
    }
    planned = lc("AIMessage", content="", tool_calls=[call])
    if failing:
        tool_fields: dict[str, Any] = {"error": "LookupError('no record 7')", "outputs": None}
    else:
        reply = lc(
            "ToolMessage",
            content="Paris is the capital of France.",
            tool_call_id="call_q1",
            status="success",
        )
        tool_fields = {"outputs": {"output": reply}}
    root = run(
        "root",
        "chain",
        0,
        9,
        None,
        label="AgentExecutor",
        inputs={"input": QUESTION},
        outputs={"output": "Paris."},
        extra={"metadata": {"question_id": "q1"}},
    )
    root["child_runs"] = [
        run(
            "llm1",
            "llm",
            1,
            2,
            IDS["root"],
            label="ChatOpenAI",
            inputs={"messages": [[lc("HumanMessage", content=QUESTION)]]},
            outputs={
                "generations": [[{"text": "", "message": planned}]],
                "llm_output": {
                    "token_usage": {
                        "prompt_tokens": 50,
                        "completion_tokens": 10,
                        "total_tokens": 60,
                    }
                },
            },
            extra={"invocation_params": {"model": "gpt-x"}},
        ),
        # LangChain's tracer writes a tool's input as the Python repr of its arguments
        run(
            "tool",
            "tool",
            3,
            4,
            IDS["root"],
            label="search",
            inputs={"input": "{'query': 'capital of France'}"},
            **tool_fields,
        ),
        run(
            "llm2",
            "llm",
            5,
            8,
            IDS["root"],
            label="ChatOpenAI",
            inputs={"messages": [[lc("HumanMessage", content=QUESTION), planned]]},
            outputs={
                "generations": [
                    [
                        {
                            "text": "Paris.",
                            "message": lc(
                                "AIMessage",
                                content="Paris.",
                                usage_metadata={
                                    "input_tokens": 51,
                                    "output_tokens": 11,
                                    "total_tokens": 62,
                                },
                            ),
                        }
                    ]
                ]
            },
        ),
    ]
    return root


def flat() -> list[dict[str, Any]]:
    """The same runs, flat."""
    root = tree()
    children = root.pop("child_runs")
    return [root, *children]


def test_runs_validate_against_the_sdk_schema() -> None:
    schemas = pytest.importorskip("langsmith.schemas", reason="needs langsmith")
    for record in flat():
        parsed = schemas.Run(**copy.deepcopy(record))
        assert str(parsed.id) == record["id"] and parsed.run_type == record["run_type"]


@pytest.mark.parametrize("shape", ["tree", "flat"])
def test_a_run_tree_and_flat_runs_read_the_same(shape: str) -> None:
    records = [tree()] if shape == "tree" else flat()
    (trace,) = langsmith.read(records, "ls.jsonl")
    (call,) = trace.calls
    assert (call.name, call.id, call.args, call.output, call.status, call.error, call.lost) == (
        "search",
        "call_q1",
        {"query": "capital of France"},
        "Paris is the capital of France.",
        "success",
        None,
        [],
    )
    assert call.record_id == IDS["tool"] and call.parent == IDS["root"]
    assert (trace.trace_id, trace.root_span_id, trace.question_id) == (TRACE, IDS["root"], "q1")
    assert (trace.question, trace.answer, trace.model) == (QUESTION, "Paris.", "gpt-x")
    assert (trace.input_tokens, trace.output_tokens, trace.total_tokens) == (101, 21, 122)
    assert trace.elapsed_sec == 9
    assert trace.fidelity.lossless and trace.fidelity.tool_calls == 1


def test_a_failed_tool_run() -> None:
    (trace,) = langsmith.read([tree(failing=True)], "ls.json")
    (call,) = trace.calls
    assert (call.status, call.error, call.output, call.lost) == (
        "error",
        "LookupError('no record 7')",
        None,
        [],
    )
    assert call.args == {"query": "capital of France"}  # linked by name and order: the plan's


def test_root_totals_are_not_added_to_model_calls() -> None:
    root = tree()
    root.update(prompt_tokens=500, completion_tokens=50, total_tokens=550)
    (trace,) = langsmith.read([root], "ls.json")
    assert (trace.input_tokens, trace.output_tokens, trace.total_tokens) == (500, 50, 550)


def test_flat_runs_of_two_traces_with_broken_links() -> None:
    first = flat()
    second = copy.deepcopy(first)
    for record in second:
        record["trace_id"] = "other"
    second[2]["parent_run_id"] = "missing"
    second.append(copy.deepcopy(second[1]))
    traces = list(langsmith.read([*first, *second], "ls.jsonl"))
    assert [t.trace_id for t in traces] == [TRACE, "other"]
    assert traces[1].fidelity.losses == {"broken_parent": 1, "duplicate_id": 1}
    assert traces[0].fidelity.lossless


def test_deep_trees_and_hostile_text() -> None:
    hostile = "</script>{{x}}\u202e\n'\"\x00"
    root = tree()
    node = root
    for depth in range(3000):  # deeper than Python's recursion limit
        child = run("root", "chain", 0, 9, None, label=hostile)
        child["id"] = f"deep-{depth}"
        node["child_runs"] = [*node["child_runs"], child]
        node = child
    node.update(run_type="tool", inputs={hostile: hostile}, outputs={"output": hostile})
    (trace,) = langsmith.read([root], "ls.json")
    first = trace.calls[0]
    assert (first.name, first.args, first.output) == (
        hostile,
        {hostile: hostile},
        hostile,
    )
    assert [c.name for c in trace.calls] == [hostile, "search"]
    assert trace.calls[1].id == "call_q1"


def test_detect() -> None:
    assert langsmith.detect(tree()) and langsmith.detect(flat())
    assert not langsmith.detect({"observations": [], "id": 1}) and not langsmith.detect([])
