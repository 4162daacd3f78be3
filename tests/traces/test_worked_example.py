"""The worked example of docs/traces.md, run as written: its reference and its commands are read
from the page (the blocks after ``<!-- worked-example: ... -->``), the agent runs under the
official GenAI instrumentation against the scripted server instead of a model, the ``qa-eval``
commands run in process, and the scores go to a local OTLP/HTTP receiver instead of a collector.
What arrives there must carry the trace id and root span id of each question's original spans."""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from agent_script import PLAN, have, script
from test_export import Receiver

from openai_stub import StubServer
from qa_eval.cli import run_command

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "traces.md"
NEEDED = (
    "opentelemetry.sdk",
    "opentelemetry.exporter.otlp.proto.common",
    "opentelemetry.instrumentation.openai_v2",
    "openai",
)


pytestmark = pytest.mark.skipif(
    not have(*NEEDED),
    reason="needs opentelemetry-sdk and the openai-v2 instrumentation (test extra)",
)


def doc_block(name: str) -> str:
    """The fenced block after ``<!-- worked-example: NAME -->`` in docs/traces.md."""
    text = DOC.read_text(encoding="utf-8")
    found = re.search(
        rf"<!-- worked-example: {re.escape(name)} -->\n```\w*\n(.*?)\n```", text, re.S
    )
    assert found, f"docs/traces.md has no worked-example block {name!r}"
    return found.group(1)


def commands(block: str) -> list[list[str]]:
    """The commands of a shell block (comments dropped, continued lines joined)."""
    joined = re.sub(r"\\\n\s*", " ", block)
    return [
        shlex.split(line, comments=True)
        for line in joined.splitlines()
        if line.split("#")[0].strip()
    ]


def root_spans(path: Path) -> dict[str, str]:
    """trace id -> root span id (hex) of the spans file the agent wrote (``MessageToJson`` writes
    ids in base64)."""
    roots = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        for resource in json.loads(line).get("resourceSpans", []):
            for scope in resource["scopeSpans"]:
                for record in scope["spans"]:
                    if not record.get("parentSpanId"):
                        trace = base64.b64decode(record["traceId"]).hex()
                        roots[trace] = base64.b64decode(record["spanId"]).hex()
    return roots


def _value(attribute: dict[str, Any]) -> Any:
    value = attribute["value"]
    return next(iter(value.values()))


def run_example(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, receiver: Receiver, capture: bool = True
) -> dict[str, str]:
    """Run the documented commands in ``tmp_path`` (without ``capture``, leaving out the
    ``export`` of the content capture setting); what each ``qa-eval`` command printed."""
    (tmp_path / "reference.yaml").write_text(doc_block("reference.yaml") + "\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    printed: dict[str, str] = {}
    with StubServer(script) as server:
        for argv in commands(doc_block("commands")):
            argv = [
                a.replace("http://localhost:8000", f"http://127.0.0.1:{server.port}").replace(
                    "http://localhost:4318", receiver.url
                )
                for a in argv
            ]
            if argv[0] == "export":
                name, _, value = argv[1].partition("=")
                if capture or "CAPTURE_MESSAGE_CONTENT" not in name:
                    env[name] = value
            elif argv[0] == "python":
                agent = tmp_path / argv[1]  # the page's own program
                agent.write_text(doc_block(argv[1]) + "\n", encoding="utf-8")
                done = subprocess.run(
                    [sys.executable, str(agent), *argv[2:]],
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=120,
                )
                assert done.returncode == 0, done.stderr
            else:
                assert argv[0] == "qa-eval", argv
                out, err = io.StringIO(), io.StringIO()
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                    code = run_command(argv[1:])
                assert code == 0, err.getvalue()
                printed[argv[1]] = out.getvalue() + err.getvalue()
    return printed


def test_the_worked_example_runs_as_documented(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    receiver = Receiver()
    try:
        printed = run_example(tmp_path, monkeypatch, receiver)
    finally:
        receiver.close()
    # what the page shows the commands print is what they print
    assert printed["import"] == doc_block("import output") + "\n"
    assert printed["export-scores"] == doc_block("export output") + "\n"
    # the spans became one response per question, every call with its arguments and result
    responses = [
        json.loads(line) for line in (tmp_path / "responses.jsonl").read_text().splitlines()
    ]
    assert [r["question_id"] for r in responses] == ["q1", "q2"]
    for response, (call_id, name, args) in zip(responses, PLAN.values(), strict=True):
        (step,) = response["actual_steps"]
        assert (step["id"], step["name"], step["args"]) == (call_id, name, args)
        assert "lost" not in step
    assert responses[1]["actual_steps"][0]["status"] == "error"
    # evaluated and reported
    check_results(tmp_path, "results")
    assert (tmp_path / "report.html").stat().st_size > 0
    # the scores arrived at the receiver, each on its question's original trace and root span
    roots = root_spans(tmp_path / "spans.jsonl")
    assert len(roots) == 2
    events = []
    for path, _, body in receiver.requests:
        assert path == "/v1/logs"
        for resource in json.loads(body)["resourceLogs"]:
            for scope in resource["scopeLogs"]:
                events.extend(scope["logRecords"])
    assert events
    by_question: dict[str, set[tuple[str, str]]] = {}
    names: set[str] = set()
    for event in events:
        attributes = {a["key"]: _value(a) for a in event["attributes"]}
        assert attributes["event.name"] == "gen_ai.evaluation.result"
        names.add(attributes["gen_ai.evaluation.name"])
        by_question.setdefault(attributes["qa_eval.question_id"], set()).add(
            (event["traceId"], event["spanId"])
        )
    trace_of = {r["question_id"]: r["trace"]["trace_id"] for r in responses}
    for question, pairs in by_question.items():
        trace = trace_of[question]
        assert pairs == {(trace, roots[trace])}
    assert set(by_question) == {"q1", "q2"}
    assert {"trajectory_match", "tool_f1"} <= names


def check_results(tmp_path: Path, block: str) -> None:
    """Each line of the page's block is a part of that question's result in results.jsonl."""
    results = {
        r["question_id"]: r
        for r in map(json.loads, (tmp_path / "results.jsonl").read_text().splitlines())
        if "question_id" in r
    }
    shown = [json.loads(line) for line in doc_block(block).splitlines()]
    assert [line["question_id"] for line in shown] == sorted(results)
    for line in shown:
        result = results[line["question_id"]]
        assert {k: result.get(k) for k in line} == line


def test_without_content_capture_the_trajectory_is_not_evaluable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same commands with content capture off: every call lost its arguments, so the
    trajectory metrics say "not evaluable" for each question, never 0."""
    receiver = Receiver()
    try:
        printed = run_example(tmp_path, monkeypatch, receiver, capture=False)
    finally:
        receiver.close()
    assert "calls without arguments (content capture off): 2" in printed["import"]
    check_results(tmp_path, "results without content")
    for line in (tmp_path / "results.jsonl").read_text().splitlines():
        result = json.loads(line)
        assert "trajectory_match" not in result and "tool_f1" not in result


def test_the_install_line_pins_versions_the_tests_run_with() -> None:
    """The page's install line pins each package inside the range the test extra holds (the
    versions these tests run the agent with), and pins every package the agent imports."""
    from packaging.requirements import Requirement

    pins = dict(re.findall(r'"([a-z0-9-]+)==([^"]+)"', doc_block("install")))
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    extra = re.search(r"^test = \[(.*?)^\]", pyproject, re.S | re.M)
    assert extra, "pyproject.toml has no test extra"
    ranges = {
        (r := Requirement(text)).name: r.specifier
        for text in re.findall(r'^\s*"([^"]+)"', extra.group(1), re.M)
    }
    for name, version in pins.items():
        if name in ranges:
            assert ranges[name].contains(version, prereleases=True), (name, version)
    imported = set(
        re.findall(r"^(?:from|import) ([a-z0-9_]+(?:\.[a-z0-9_]+)*)", doc_block("agent.py"), re.M)
    )
    wanted = {
        "openai": "openai",
        "opentelemetry.instrumentation.openai_v2": "opentelemetry-instrumentation-openai-v2",
        "opentelemetry.exporter.otlp.proto.common.trace_encoder": (
            "opentelemetry-exporter-otlp-proto-common"
        ),
        "opentelemetry.sdk.trace": "opentelemetry-sdk",
    }
    for module, package in wanted.items():
        assert module in imported and package in pins, (module, package)
    assert {"httpx", "opentelemetry-util-genai"} <= set(pins)
