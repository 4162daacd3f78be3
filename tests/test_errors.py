"""The error hierarchy: ``JudgeError`` and its skips are ``QaEvalError``s (importable from the
judge's face), and joining the hierarchy changes nothing a user sees: a judge error in
one metric stays that metric's ``<metric>_error``, a budget skip too, and the CLI exits 0."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

import qa_eval.judge as judge_face
from fakes import items_dataset
from openai_stub import Reply, StubServer, asked_text, completion, error, oracle_content
from qa_eval import errors
from qa_eval.cli import main
from qa_eval.errors import QaEvalError
from qa_eval.judge import calls as judge
from qa_eval.judge import faults, usage

JUDGE_ERRORS = ("JudgeError", "BudgetExceeded", "DryRunSkip", "Deferred", "JudgeUnavailable")


@pytest.mark.parametrize("name", JUDGE_ERRORS)
def test_judge_errors_are_qa_eval_errors_importable_from_judge(name: str) -> None:
    cls = getattr(errors, name)
    assert issubclass(cls, QaEvalError)
    assert getattr(judge_face, name) is cls
    if name != "JudgeUnavailable":  # the run stops on that one; the others are one metric's
        assert issubclass(cls, errors.JudgeError)
    assert not issubclass(cls, ValueError)  # ``except ValueError`` does not start catching them


def test_the_judge_face_names_what_its_modules_define() -> None:
    assert judge_face.Judge is judge.Judge
    assert judge_face.Usage is usage.Usage and judge_face.Verdict is usage.Verdict
    assert judge_face.total_cost is usage.total_cost
    assert "Judge" in dir(judge_face)
    with pytest.raises(AttributeError):
        judge_face.no_such_name  # noqa: B018
    assert faults.retry_after({"retry-after": "3"}) == 3.0


def _files(tmp_path: Path, url: str) -> list[str]:
    reference, responses = items_dataset(3)
    ref = tmp_path / "reference.yaml"
    ref.write_text(yaml.safe_dump(reference), encoding="utf-8")
    answers = tmp_path / "responses.jsonl"
    answers.write_text("".join(json.dumps(r) + "\n" for r in responses), encoding="utf-8")
    config = tmp_path / "judge.yaml"
    endpoint = {"provider": "openai", "base_url": url, "api_key": "x"}
    llm = {
        "generation": endpoint,
        "embedding": {**endpoint, "model": "text-embedding-3-small"},
        "retry_base": 0.001,
        "prices": {"gpt-4o-mini": {"input": 1_000_000, "output": 0}},  # $1 per prompt token
    }
    config.write_text(yaml.safe_dump({"llm": llm}), encoding="utf-8")
    return [str(ref), str(answers), "-c", str(config), "--no-cache", "-q"]


def test_a_judge_error_in_one_metric_is_that_metrics_error_and_the_cli_exits_0(
    tmp_path: Path, capsys: Any
) -> None:
    def script(request: dict[str, Any], number: int) -> Reply:
        if "[qa-eval:answer-correctness]" in asked_text(request):
            return error(400, "Invalid value for 'temperature'")  # a 4xx: the metric's error
        return completion(oracle_content(request), prompt_tokens=1, completion_tokens=1)

    out = tmp_path / "results.json"
    with StubServer(script) as server:
        code = main(["evaluate", *_files(tmp_path, server.url), "-o", str(out)])
    assert code == 0, capsys.readouterr().err
    results = json.loads(out.read_text(encoding="utf-8"))
    assert len(results) == 3
    for result in results:
        assert result["answer_correctness_error"].startswith("judge call failed (400)")
        assert "answer_f1" not in result
        assert isinstance(result["answer_relevance"], float)  # the other metric is judged
        assert "answer_relevance_error" not in result


def test_a_budget_skip_is_a_metric_error_not_a_usage_error(tmp_path: Path, capsys: Any) -> None:
    def script(request: dict[str, Any], number: int) -> Reply:
        return completion(oracle_content(request), prompt_tokens=1, completion_tokens=1)

    out = tmp_path / "results.json"
    with StubServer(script) as server:
        args = [*_files(tmp_path, server.url), "--concurrency", "1", "--max-cost", "1.5"]
        code = main(["evaluate", *args, "-o", str(out)])
        calls = len(server.chat_requests)
    assert code == 0, capsys.readouterr().err  # not 2: a skip is no bad input
    assert calls == 2  # $1 a call: the third would start at $2 > $1.5
    results = json.loads(out.read_text(encoding="utf-8"))
    skipped = [
        r[key]
        for r in results
        for key in ("answer_correctness_error", "answer_relevance_error")
        if key in r
    ]
    assert skipped and set(skipped) == {"budget exceeded"}
    assert len(skipped) == 2 * len(results) - calls
