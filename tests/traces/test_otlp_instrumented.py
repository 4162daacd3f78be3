"""OTLP traces written by real instrumentation libraries around a small agent
(``otel_agent.py``) talking to the scripted server, the spans encoded by the exporter's own
encoder: the official GenAI instrumentation of the ``openai`` client
(``opentelemetry-instrumentation-openai-v2``), OpenInference's for ``openai`` and ``anthropic``
(``openinference-instrumentation-openai``/``-anthropic``) and OpenLLMetry's (Traceloop's
``opentelemetry-instrumentation-openai``/``-anthropic``). Each file must read into the traces the
agent ran: question, tool calls (planned in the model's reply, executed in a tool span: one call),
statuses, answer, tokens and ids; minus what a library does not record, said where expected."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from agent_script import (
    ANSWER,
    PLAN,
    TOOL_ERROR,
    TOOL_OUTPUT,
    anthropic_script,
    have,
    script,
    usage,
)

from openai_stub import StubServer
from qa_eval.cli import run_command
from qa_eval.traces import otlp
from qa_eval.traces.model import Trace

AGENT = Path(__file__).with_name("otel_agent.py")
BASE = ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.common", "openai")
# the modules each instrumentation needs, by the agent's name for it (all in the test extra)
LIBRARIES = {
    "openai-v2": ("opentelemetry.instrumentation.openai_v2",),
    "openinference": ("openinference.instrumentation.openai",),
    "openllmetry": ("opentelemetry.instrumentation.openai",),
    "openllmetry-events": ("opentelemetry.instrumentation.openai",),
    "anthropic-openinference": ("openinference.instrumentation.anthropic", "anthropic"),
    "anthropic-openllmetry": ("opentelemetry.instrumentation.anthropic", "anthropic"),
    "langchain-openinference": ("openinference.instrumentation.langchain", "langchain_openai"),
}


DATA = Path(__file__).with_name("data")


def needs(kind: str) -> Any:
    """Skip unless the OpenTelemetry SDK and ``kind``'s instrumentation are installed."""
    modules = BASE + LIBRARIES[kind]
    return pytest.mark.skipif(
        not have(*modules), reason=f"needs {' and '.join(modules)} (test extra)"
    )


def run_agent(tmp_path: Path, kind: str, env: dict[str, str]) -> list[Trace]:
    """Run the agent under ``kind``'s instrumentation and read the file it wrote."""
    out = tmp_path / f"{kind}.jsonl"
    variables = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "TRACELOOP_"))}
    variables.update(env)
    with StubServer(anthropic_script if kind.startswith("anthropic-") else script) as server:
        done = subprocess.run(
            [sys.executable, str(AGENT), f"http://127.0.0.1:{server.port}/v1", str(out), kind],
            env=variables,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert otlp.detect(records[0])
    return list(otlp.read(records, str(out)))


def expected_calls(question: str, with_content: bool, ids: bool = True) -> list[dict[str, Any]]:
    """The one tool call the agent made for ``question``, as the reader should give it (without
    ``ids``: a trace that records the call's id nowhere)."""
    call_id, name, args = PLAN[question]
    failed = name in TOOL_ERROR
    # the agent sends a failed tool's error back to the model as the tool's result
    output = f"error: {TOOL_ERROR[name]}" if failed else TOOL_OUTPUT[name]
    return [
        {
            "name": name,
            "id": call_id if ids else None,
            "args": args if with_content else None,
            "output": output if with_content else None,
            "status": "error" if failed else "success",
            "error": TOOL_ERROR.get(name),
            "lost": [] if with_content else ["args"] + ([] if failed else ["output"]),
        }
    ]


def check(traces: list[Trace], with_content: bool, conventions: set[str], ids: bool = True) -> None:
    """Both questions' traces read as the agent ran them."""
    assert [t.question_id for t in traces] == ["q1", "q2"]
    for number, (trace, question) in enumerate(zip(traces, PLAN, strict=True)):
        got = [
            {k: getattr(c, k) for k in ("name", "id", "args", "output", "status", "error", "lost")}
            for c in trace.calls
        ]
        expected = expected_calls(question, with_content, ids)
        assert got == expected
        assert trace.calls[0].record_id and trace.calls[0].parent == trace.root_span_id
        assert trace.question == (question if with_content else None)
        assert trace.answer == (ANSWER[question] if with_content else None)
        replies = [usage(2 * number), usage(2 * number + 1)]
        assert trace.input_tokens == sum(u["prompt_tokens"] for u in replies)
        assert trace.output_tokens == sum(u["completion_tokens"] for u in replies)
        assert trace.total_tokens == trace.input_tokens + trace.output_tokens
        assert trace.model == "stub"
        assert trace.trace_id and len(trace.trace_id) == 32
        assert trace.root_span_id and len(trace.root_span_id) == 16
        assert trace.elapsed_sec is not None and 0 < trace.elapsed_sec < 60
        assert trace.fidelity.traces == 1 and trace.fidelity.tool_calls == 1
        assert set(trace.fidelity.conventions) == conventions
        assert not trace.fidelity.unknown_attributes
        assert sum(trace.fidelity.losses.values()) == sum(len(c["lost"]) for c in expected)


@needs("openai-v2")
def test_genai_conventions_with_content(tmp_path: Path) -> None:
    traces = run_agent(
        tmp_path,
        "openai-v2",
        {
            "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "span_only",
        },
    )
    check(traces, with_content=True, conventions={"gen_ai", "gen_ai 1.37.0"})


@needs("openai-v2")
def test_genai_conventions_without_content_counts_lost_arguments(tmp_path: Path) -> None:
    traces = run_agent(tmp_path, "openai-v2", {})
    check(traces, with_content=False, conventions={"gen_ai", "gen_ai 1.37.0"})
    assert traces[0].fidelity.losses["args"] == 1


OI_KINDS = ("openinference", "anthropic-openinference", "langchain-openinference")


@pytest.mark.parametrize("kind", [pytest.param(k, marks=needs(k)) for k in OI_KINDS])
def test_openinference(tmp_path: Path, kind: str) -> None:
    """Also the agent written with LangChain (every span OpenInference's: its tool span's status
    holds the error's repr and traceback, the error read is the exception's message)."""
    traces = run_agent(tmp_path, kind, {})
    check(traces, with_content=True, conventions={"openinference"})


HIDE = {"OPENINFERENCE_HIDE_INPUTS": "true", "OPENINFERENCE_HIDE_OUTPUTS": "true"}


@pytest.mark.parametrize(
    "kind", [pytest.param(k, marks=needs(k)) for k in ("openinference", "anthropic-openinference")]
)
def test_openinference_hidden_values_are_lost_not_read(tmp_path: Path, kind: str) -> None:
    """OpenInference's TraceConfig writes hidden inputs and outputs as ``__REDACTED__``: read as
    not recorded (never a question, answer or arguments of that text). The messages go with
    them, so the call's id is recorded nowhere."""
    traces = run_agent(tmp_path, kind, HIDE)
    check(traces, with_content=False, conventions={"openinference"}, ids=False)
    assert traces[0].fidelity.losses["args"] == 1


# OpenLLMetry (0.50 and later) writes its model calls in the current GenAI conventions
# (``gen_ai.input.messages``/``gen_ai.output.messages``, no schema URL), or with
# ``use_attributes=False`` as GenAI events (log records, deprecated conventions); the agent's own
# workflow and tool spans are the Traceloop SDK's (``traceloop.*``: counted as openllmetry).
LOOP_KINDS = ("openllmetry", "openllmetry-events", "anthropic-openllmetry")
LOOP_CONVENTIONS = {
    "openllmetry": {"gen_ai", "openllmetry"},
    "openllmetry-events": {"gen_ai", "gen_ai deprecated", "openllmetry"},
    "anthropic-openllmetry": {"gen_ai", "openllmetry"},
}


@pytest.mark.parametrize("kind", [pytest.param(k, marks=needs(k)) for k in LOOP_KINDS])
def test_openllmetry_with_content(tmp_path: Path, kind: str) -> None:
    traces = run_agent(tmp_path, kind, {})
    check(traces, with_content=True, conventions=LOOP_CONVENTIONS[kind])


@pytest.mark.parametrize("kind", [pytest.param(k, marks=needs(k)) for k in LOOP_KINDS])
def test_openllmetry_without_content_counts_lost_arguments(tmp_path: Path, kind: str) -> None:
    """``TRACELOOP_TRACE_CONTENT=false``: no messages, no tool input or output. The Traceloop
    SDK's tool span records no call id, so the call's id is lost too, except where the events
    still carry the planned call (its id and name, without arguments)."""
    traces = run_agent(tmp_path, kind, {"TRACELOOP_TRACE_CONTENT": "false"})
    check(
        traces,
        with_content=False,
        conventions=LOOP_CONVENTIONS[kind],
        ids=kind == "openllmetry-events",
    )
    assert traces[0].fidelity.losses["args"] == 1


@pytest.mark.parametrize(
    ("name", "with_content"),
    [
        ("openllmetry-0.47.5-openai", True),
        ("openllmetry-0.47.5-openai-no-content", False),
        ("openllmetry-0.47.5-anthropic", True),
    ],
)
def test_openllmetry_before_0_50_flattened_attributes(name: str, with_content: bool) -> None:
    """Files the same agent wrote under OpenLLMetry 0.47.5 (``opentelemetry-instrumentation-
    openai``/``-anthropic`` with opentelemetry-sdk 1.38; they need an SDK older than the test
    extra's, so they are kept as recorded): flattened ``gen_ai.prompt.N.*`` and
    ``gen_ai.completion.N.*`` attributes, the Anthropic tool results as JSON content blocks, and
    deprecated GenAI usage attributes (``gen_ai.usage.prompt_tokens``). Without content
    (``TRACELOOP_TRACE_CONTENT=false``) the call's id is recorded nowhere."""
    path = DATA / f"{name}.jsonl"
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    traces = list(otlp.read(records, str(path)))
    check(
        traces,
        with_content=with_content,
        conventions={"openllmetry", "gen_ai deprecated"},
        ids=with_content,
    )


REFERENCE = [
    {
        "template_id": "agent",
        "questions": [
            {
                "id": question_id,
                "question_text": question,
                "reference_steps": [[{"name": name, "args": args}]],
            }
            for question_id, (question, (_, name, args)) in zip(
                ("q1", "q2"), PLAN.items(), strict=True
            )
        ],
    }
]


def _cli(argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run_command(argv)
    return code, out.getvalue() + err.getvalue()


def _results(path: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return sorted(
        (
            {k: v for k, v in r.items() if k not in ("elapsed_sec",)}
            for r in rows
            if "question_id" in r
        ),
        key=lambda r: r["question_id"],
    )


GENAI_CONTENT = {
    "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "span_only",
}
NO_LOOP_CONTENT = {"TRACELOOP_TRACE_CONTENT": "false"}


@pytest.mark.parametrize(
    ("kind", "env", "lost_args"),
    [
        pytest.param(kind, env, lost, marks=needs(kind), id=name)
        for name, kind, env, lost in (
            ("genai-content", "openai-v2", GENAI_CONTENT, 0),
            ("genai-no-content", "openai-v2", {}, 2),
            ("openinference", "openinference", {}, 0),
            ("anthropic-openinference", "anthropic-openinference", {}, 0),
            ("anthropic-openinference-hidden", "anthropic-openinference", HIDE, 2),
            ("langchain-openinference", "langchain-openinference", {}, 0),
            ("openllmetry", "openllmetry", {}, 0),
            ("openllmetry-no-content", "openllmetry", NO_LOOP_CONTENT, 2),
            ("openllmetry-events-no-content", "openllmetry-events", NO_LOOP_CONTENT, 2),
            ("anthropic-openllmetry", "anthropic-openllmetry", {}, 0),
            ("anthropic-openllmetry-no-content", "anthropic-openllmetry", NO_LOOP_CONTENT, 2),
        )
    ],
)
def test_instrumented_files_import_and_evaluate_end_to_end(
    tmp_path: Path, kind: str, env: dict[str, str], lost_args: int
) -> None:
    """The agent's own file (OTLP/JSON, and the same as protobuf) through ``qa-eval import``
    then ``evaluate``, and through ``evaluate`` on the trace file: the same results, the lost
    arguments counted."""
    run_agent(tmp_path, kind, env)
    spans = tmp_path / f"{kind}.jsonl"
    reference = tmp_path / "reference.json"
    reference.write_text(json.dumps(REFERENCE), encoding="utf-8")
    imported: dict[str, list[dict[str, Any]]] = {}
    for form, path in (("otlp-json", spans), ("otlp-proto", spans.with_suffix(".pb"))):
        responses = tmp_path / f"responses-{form}.jsonl"
        code, printed = _cli(["import", str(path), "-r", str(reference), "-o", str(responses)])
        assert code == 0, printed
        assert f"calls without arguments (content capture off): {lost_args}" in printed
        rows = [json.loads(line) for line in responses.read_text(encoding="utf-8").splitlines()]
        assert [r["question_id"] for r in rows] == ["q1", "q2"]
        assert all(r["trace"]["format"] == form for r in rows)
        for row in rows:
            row["trace"] = {k: v for k, v in row["trace"].items() if k not in ("format", "source")}
        imported[form] = rows
    assert imported["otlp-proto"] == imported["otlp-json"]
    responses = tmp_path / "responses-otlp-json.jsonl"
    via_import, direct = tmp_path / "via-import.jsonl", tmp_path / "direct.jsonl"
    for source, out in ((responses, via_import), (spans, direct)):
        code, printed = _cli(
            ["evaluate", str(reference), str(source), "--no-judge", "-q", "-o", str(out)]
        )
        assert code == 0, printed
    assert _results(via_import) == _results(direct)
    assert [r["question_id"] for r in _results(direct)] == ["q1", "q2"]
