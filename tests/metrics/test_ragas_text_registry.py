"""ragas' string metrics in the registry (the ``ragas-text`` group): off by default, switched on
by ``--enable ragas-text`` (or one name), each scoring the answer against the reference answer
with ragas' defaults, so a run, its aggregates, ``compare_runs``, the CLI and the report get them
like every other metric. No judge is needed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from qa_eval import compute_aggregates, run_evaluation
from qa_eval.cli import main
from qa_eval.compare.runs import compare_runs
from qa_eval.metrics import METRICS, direction
from qa_eval.metrics.textual import strings as text
from qa_eval.report import build_report

pytest.importorskip("sacrebleu", reason="the ragas-text group needs the 'ragas-metrics' extra")
pytest.importorskip("rouge_score", reason="the ragas-text group needs the 'ragas-metrics' extra")
pytest.importorskip("rapidfuzz", reason="the ragas-text group needs the 'ragas-metrics' extra")

GROUP = {
    "bleu_score": text.bleu_score,
    "chrf_score": text.chrf_score,
    "rouge_score": text.rouge_score,
    "exact_match": text.exact_match,
    "string_present": text.string_presence,
    "non_llm_string_similarity": text.non_llm_string_similarity,
}
PAIRS = [
    ("Paris is the capital of France", "Paris is the capital of France"),
    ("Oslo", "It is Bergen, not Oslo"),
    ("two transformers", "three"),
]


def reference() -> list[dict[str, Any]]:
    questions = [
        {"id": f"q{i}", "question_text": f"Q{i}?", "reference_answer": ref}
        for i, (ref, _) in enumerate(PAIRS)
    ]
    questions.append({"id": "noref", "question_text": "No reference?"})
    return [{"template_id": "t", "questions": questions}]


def responses(shift: int = 0) -> list[dict[str, Any]]:
    answers = [answer for _, answer in PAIRS]
    answers = answers[shift:] + answers[:shift]
    out = [{"question_id": f"q{i}", "actual_answer": a} for i, a in enumerate(answers)]
    return [*out, {"question_id": "noref", "actual_answer": "anything"}]


def test_the_group_is_opt_in_and_offline() -> None:
    for name in GROUP:
        metric = METRICS[name]
        assert not metric.default and metric.groups == ("ragas-text",) and metric.offline
        assert direction(name) == "higher"
    results = run_evaluation(reference(), responses())
    assert not any(name in r for r in results for name in GROUP)


def test_a_run_writes_the_functions_values_and_aggregates_them() -> None:
    results = run_evaluation(reference(), responses(), enable=["ragas-text"])
    for result, (ref, answer) in zip(results, PAIRS):
        for name, function in GROUP.items():
            assert result[name] == function(ref, answer).value, name
    assert not any(name in results[-1] for name in GROUP)  # no reference answer: not scored
    micro = compute_aggregates(results)["micro"]
    assert micro["exact_match"]["n"] == 3 and micro["exact_match"]["sum"] == 1.0
    assert micro["string_present"]["sum"] == 2.0  # "Oslo" occurs in the second answer


def test_one_metric_of_the_group_alone() -> None:
    results = run_evaluation(reference(), responses(), enable=["exact_match"])
    assert [r.get("exact_match") for r in results] == [1.0, 0.0, 0.0, None]
    assert "bleu_score" not in results[0]


def test_compare_and_the_report_take_the_new_keys() -> None:
    a = run_evaluation(reference(), responses(), enable=["ragas-text"])
    b = run_evaluation(reference(), responses(shift=1), enable=["ragas-text"])
    comparison = compare_runs(a, b, metrics=["exact_match", "rouge_score"], resamples=200)
    assert "exact_match" in json.dumps(comparison, default=str)
    page = build_report([("a", a), ("b", b)])
    assert "rouge_score" in page and "non_llm_string_similarity" in page


def test_the_cli_enables_the_group(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ref = tmp_path / "reference.yaml"
    ref.write_text(yaml.safe_dump(reference()), encoding="utf-8")
    resp = tmp_path / "responses.jsonl"
    resp.write_text("".join(json.dumps(r) + "\n" for r in responses()), encoding="utf-8")
    out = tmp_path / "results.jsonl"
    args = ["evaluate", str(ref), str(resp), "-q", "--enable", "ragas-text", "-o", str(out)]
    assert main(args) == 0
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert rows[0]["bleu_score"] == text.bleu_score(*PAIRS[0]).value
    capsys.readouterr()
    assert main(["metrics", "string_present", "--format", "json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)
    assert entry["groups"] == ["ragas-text"] and entry["default"] == "off"
