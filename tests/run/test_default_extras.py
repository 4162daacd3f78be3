"""A default metric that cannot run with the installed extras is not a default (issue 36): with
the judge but without the embeddings extra (and no ``llm.embedding`` endpoint), the default
``answer_relevance`` is left out, with the reason in the run's signature (the command prints it
once as a note), instead of failing on every question; named in the config or ``--enable`` it
runs (and fails) as before."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from qa_eval import run_evaluation
from qa_eval.cli import main

DEMO = Path(__file__).resolve().parents[2] / "examples" / "powergrid"
JUDGE = {
    "llm": {
        "generation": {
            "provider": "openai",
            "model": "gpt-4o-mini",
            "base_url": "http://127.0.0.1:9/v1",
            "api_key": "x",
        }
    }
}
REFERENCE = [
    {"template_id": "t", "questions": [{"id": "q", "question_text": "Q?", "reference_answer": "A"}]}
]
RESPONSES = [{"question_id": "q", "actual_answer": "A"}]


def _without_onnxruntime() -> Any:
    return mock.patch("qa_eval.run.options.available", lambda module: module != "onnxruntime")


def test_the_default_answer_relevance_is_left_out_without_the_embeddings_extra() -> None:
    pytest.importorskip("openai")
    with _without_onnxruntime():
        results = run_evaluation(REFERENCE, RESPONSES, config=JUDGE, dry_run=True)
    left_out = results.signature["metrics_left_out"]
    assert list(left_out) == ["answer_relevance"]
    assert "pip install 'qa-eval[embeddings]'; missing: onnxruntime" in left_out["answer_relevance"]
    assert "answer_relevance_error" not in results[0]


def test_named_it_runs_as_before() -> None:
    pytest.importorskip("openai")
    config = {**JUDGE, "answer_relevance": {"enabled": True}}
    with _without_onnxruntime():
        results = run_evaluation(REFERENCE, RESPONSES, config=config, dry_run=True)
    assert "metrics_left_out" not in results.signature


def test_the_dry_run_plans_no_answer_relevance_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("openai")
    import yaml

    config = tmp_path / "judge.yaml"
    config.write_text(yaml.safe_dump(JUDGE), encoding="utf-8")
    command = [
        "evaluate",
        str(DEMO / "reference.yaml"),
        str(DEMO / "responses-good.jsonl"),
        "-c",
        str(config),
        "--dry-run",
        "--no-cache",
    ]
    with _without_onnxruntime():
        assert main(command) == 0
    out = capsys.readouterr().out
    assert "answer_correctness" in out and "answer_relevance" not in out
