"""The judged agent metrics on the command line: ``--enable agent`` runs ``goal_accuracy`` and
``trajectory_judgement`` (over the scripted judge), and ``qa-eval metrics`` describes them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from openai_stub import StubServer
from qa_eval.cli import main

pytest.importorskip("pydantic")


def _files(tmp_path: Path, url: str) -> tuple[Path, Path, Path]:
    reference = tmp_path / "reference.yaml"
    reference.write_text(
        yaml.safe_dump(
            [
                {
                    "template_id": "t",
                    "questions": [
                        {
                            "id": "q1",
                            "question_text": "Book a flight from Oslo to Bergen.",
                            "reference_goal": "a flight from OSL to BGO is booked",
                            "reference_trajectory": [
                                {"name": "search_flights", "args": {"from": "OSL"}},
                                {"name": "book", "args": {"flight": {"$any": True}}},
                            ],
                        },
                        {"id": "q2", "question_text": "What is 2 + 2?", "reference_answer": "4"},
                    ],
                }
            ]
        ),
        encoding="utf-8",
    )
    step = {"name": "search_flights", "args": {"from": "OSL"}, "output": "SK123"}
    responses = tmp_path / "responses.jsonl"
    responses.write_text(
        "\n".join(
            json.dumps(r)
            for r in (
                {"question_id": "q1", "actual_answer": "Booked SK123.", "actual_steps": [step]},
                {"question_id": "q2", "actual_answer": "4", "actual_steps": []},
            )
        ),
        encoding="utf-8",
    )
    config = tmp_path / "judge.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "llm": {
                    "generation": {
                        "provider": "openai",
                        "model": "gpt-4o-mini",
                        "base_url": url,
                        "api_key": "x",
                    }
                },
                "answer_correctness": False,
                "answer_relevance": False,
                "goal_accuracy": {"max_prompt_tokens": 6000},
            }
        ),
        encoding="utf-8",
    )
    return reference, responses, config


def test_enable_agent_on_the_command_line(stub: StubServer, tmp_path: Path) -> None:
    reference, responses, config = _files(tmp_path, stub.url)
    out, aggregates = tmp_path / "results.json", tmp_path / "aggregates.json"
    code = main(
        [
            "evaluate", str(reference), str(responses), "-c", str(config), "-q",
            "--enable", "agent", "-o", str(out), "--aggregates", str(aggregates),
        ]
    )  # fmt: skip
    assert code == 0
    first, second = json.loads(out.read_text(encoding="utf-8"))
    assert first["goal_accuracy"] in (0.0, 1.0) and second["goal_accuracy"] in (0.0, 1.0)
    assert 0.0 <= first["trajectory_judgement"] <= 1.0
    assert "against the reference trajectory" in first["trajectory_judgement_reason"]
    assert "trajectory_judgement" not in second  # no reference trajectory, no call: not judged
    assert first["reference_trajectory"][1]["args"] == {"flight": {"$any": True}}
    micro: dict[str, Any] = json.loads(aggregates.read_text(encoding="utf-8"))["micro"]
    assert micro["goal_accuracy"]["n"] == 2 and micro["trajectory_judgement"]["n"] == 1


def test_metrics_command_describes_the_agent_metrics(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["metrics", "goal_accuracy"]) == 0
    out = capsys.readouterr().out
    assert "goal_accuracy" in out and "group agent" in out and "docs/metrics/agent.md" in out
    assert "max_prompt_tokens" in out
    assert main(["metrics", "trajectory_judgement_reason", "--format", "json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)
    assert entry["name"] == "trajectory_judgement" and entry["groups"] == ["agent"]
    assert [o["name"] for o in entry["options"]] == ["max_prompt_tokens"]
