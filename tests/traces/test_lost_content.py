"""What a trace lost is reported, always: real spans of the official GenAI instrumentation of the
``openai`` client with content capture off (its default) record neither the question, the answer,
the tool arguments nor the results. ``qa-eval import`` counts each of them per run and per trace
and names the setting that keeps them; ``--strict`` fails; and every metric that needs the lost
answer is ``not evaluable`` for that question (never absent, never 0), counted as failed by the
aggregates, failing ``evaluate --strict``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agent_script import ANSWER, PLAN
from test_otlp_instrumented import _cli, needs, run_agent

from openai_stub import Reply, StubServer
from qa_eval import compute_aggregates

SETTING = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only"
REFERENCE = [
    {
        "template_id": "agent",
        "questions": [
            {
                "id": question_id,
                "question_text": question,
                "reference_answer": ANSWER[question],
                "reference_steps": [[{"name": name, "args": args}]],
            }
            for question_id, (question, (_, name, args)) in zip(
                ("q1", "q2"), PLAN.items(), strict=True
            )
        ],
    }
]


@pytest.fixture(scope="module")
def spans(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The agent's spans, content capture off (the instrumentation's default)."""
    folder = tmp_path_factory.mktemp("no-content")
    run_agent(folder, "openai-v2", {})
    return folder / "openai-v2.jsonl"


def _reference(tmp_path: Path) -> Path:
    path = tmp_path / "reference.json"
    path.write_text(json.dumps(REFERENCE), encoding="utf-8")
    return path


@needs("openai-v2")
def test_import_counts_every_lost_field_and_names_the_setting(spans: Path, tmp_path: Path) -> None:
    out = tmp_path / "responses.jsonl"
    code, printed = _cli(["import", str(spans), "-r", str(_reference(tmp_path)), "-o", str(out)])
    assert code == 0, printed
    for line in (
        "  traces without the question: 2",
        "  traces without an answer: 2",
        "  calls without arguments (content capture off): 2",
        "  calls without a result: 1",  # q2's tool failed: its error is its result
    ):
        assert line in printed.splitlines(), printed
    assert f"to keep what 2 traces lost: {SETTING}" in printed
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert all("actual_answer" not in r for r in rows)
    assert all(r["trace"]["lost"] == ["question", "answer"] for r in rows)
    assert all(r["trace"]["keep"].startswith(SETTING) for r in rows)
    code, printed = _cli(["import", str(spans), "--strict", "-o", str(tmp_path / "s.jsonl")])
    assert code == 2 and "2 traces without the question" in printed
    assert "2 traces without an answer" in printed and not (tmp_path / "s.jsonl").exists()


def _judge(tmp_path: Path, url: str) -> Path:
    config = tmp_path / "judge.yaml"
    config.write_text(
        f"llm:\n  generation: {{provider: openai, model: gpt-4o-mini, base_url: '{url}', "
        "api_key: x}\n",
        encoding="utf-8",
    )
    return config


@needs("openai-v2")
def test_answer_metrics_are_not_evaluable_never_absent(spans: Path, tmp_path: Path) -> None:
    calls: list[Any] = []

    def judge(request: dict[str, Any], number: int) -> Reply:
        calls.append(request)
        return Reply(status=500, body={"error": {"message": "no call was expected"}})

    results = tmp_path / "results.jsonl"
    reference = _reference(tmp_path)
    with StubServer(judge) as server:
        code, printed = _cli(
            [
                "evaluate",
                str(reference),
                str(spans),
                *("-c", str(_judge(tmp_path, server.url))),
                *("--disable", "answer_relevance", "--enable", "exact_match", "--strict"),
                *("-o", str(results)),
            ]
        )
    assert code == 3, printed  # --strict: the values that could not be computed fail the run
    assert "traces without an answer" in printed and SETTING in printed
    rows = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
    assert [r["question_id"] for r in rows] == ["q1", "q2"]
    for row in rows:
        for metric in ("answer_correctness", "exact_match"):
            assert metric not in row
            error = row[f"{metric}_error"]
            assert error.startswith("not evaluable: the trace did not record the answer"), error
            assert SETTING in error
    assert not calls  # nothing was asked of the judge about an answer it cannot see
    micro = compute_aggregates(rows)["micro"]
    for key in ("answer_f1", "answer_recall", "answer_precision", "exact_match"):
        assert (micro[key]["failed"], micro[key]["n"]) == (2, 0), (key, micro[key])
