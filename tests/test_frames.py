"""qa_eval.frames: results and aggregates as DataFrames, and the HTML summary for Jupyter."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path
from typing import Any

import pytest

from qa_eval import compute_aggregates, read_reference, read_responses, run_evaluation
from qa_eval.extras import MissingExtra
from qa_eval.frames import (
    ResultsSummary,
    aggregates_to_pandas,
    results_html,
    results_to_pandas,
)

pd = pytest.importorskip("pandas")

DEMO = Path(__file__).resolve().parent.parent / "examples" / "powergrid"


@pytest.fixture(scope="module")
def flawed() -> Any:
    return run_evaluation(
        read_reference(DEMO / "reference.yaml"),
        read_responses(DEMO / "responses-flawed.jsonl"),
    )


def _with_judge_metrics(results: Any) -> list[dict[str, Any]]:
    """The demo results with answer metrics on some questions and labels, as a judge adds."""
    rows = [dict(r) for r in results]
    for i, row in enumerate(rows):
        if i % 3 != 2:
            row["answer_f1"] = [1.0, 0.5, 0.25, 0.0][i % 4]
            row["answer_correctness_reason"] = f"reason {i}"
        if i % 2:
            row["answer_class"] = "CORRECT" if i % 4 == 1 else "WRONG"
        row["question_type"] = "count" if "capacity" in row["question_id"] else "list"
    return rows


def test_one_row_per_question_with_metric_columns(flawed: Any) -> None:
    rows = _with_judge_metrics(flawed)
    frame = results_to_pandas(rows)
    assert len(frame) == 11
    assert list(frame.columns[:7]) == [
        "template_id",
        "question_id",
        "question_text",
        "status",
        "error",
        "reference_answer",
        "actual_answer",
    ]
    metrics = ["answer_f1", "steps_score", "input_tokens", "output_tokens", "total_tokens"]
    assert list(frame.columns[7:12]) == metrics
    assert list(frame.columns[-2:]) == ["actual_steps", "reference_steps"]
    for metric in [*metrics, "elapsed_sec"]:
        assert frame[metric].dtype == "float64"
    assert list(frame["question_id"]) == [r["question_id"] for r in rows]
    error = frame[frame["question_id"] == "transformers-kristiansand"].iloc[0]
    assert error["status"] == "error" and math.isnan(error["total_tokens"])
    assert error["error"].startswith("Agent stopped")
    # The frame's means are the aggregates' micro means (missing values are skipped, not 0).
    micro = compute_aggregates(rows)["micro"]
    for metric in [*metrics, "elapsed_sec"]:
        assert frame[metric].mean() == pytest.approx(micro[metric]["mean"])
        assert frame[metric].count() == micro[metric]["n"]
    # Steps are JSON text that reads back as the results' steps.
    for row, (actual, reference) in zip(
        rows, zip(frame["actual_steps"], frame["reference_steps"], strict=True), strict=True
    ):
        assert json.loads(actual) == row["actual_steps"]
        assert json.loads(reference) == row["reference_steps"]
    assert frame.attrs == {}  # plain dicts carry no signature
    assert results_to_pandas(flawed).attrs["signature"]["qa_eval_version"]


def test_values_that_are_not_numbers_are_missing_in_metric_columns() -> None:
    rows = [
        {"template_id": "t", "question_id": "a", "status": "success", "steps_score": 1},
        {"template_id": "t", "question_id": "b", "status": "success", "steps_score": "x"},
        {"template_id": "t", "question_id": "c", "status": "success", "steps_score": True},
        {"template_id": "t", "question_id": "d", "status": "success"},
    ]
    frame = results_to_pandas(rows)
    assert frame["steps_score"].tolist()[0] == 1.0
    assert frame["steps_score"].isna().tolist() == [False, True, True, True]
    assert list(results_to_pandas([]).columns) == []
    with pytest.raises(TypeError, match=r"result \[0\] must be a mapping"):
        results_to_pandas(["no"])


def test_aggregates_frame_has_every_statistic(flawed: Any) -> None:
    rows = _with_judge_metrics(flawed)
    aggregates = compute_aggregates(rows)
    frame = aggregates_to_pandas(aggregates)
    templates = list(aggregates["per_template"])
    assert list(frame.index) == [
        *(("template", t) for t in templates),
        ("micro", "all"),
        ("macro", "all"),
        ("tag:question_type", "list"),
        ("tag:question_type", "count"),
    ]
    assert frame.index.names == ["group", "name"]
    assert frame.columns.names == ["metric", "statistic"]
    assert frame.columns[0] == ("samples", "errors")
    blocks = {("template", t): s for t, s in aggregates["per_template"].items()}
    blocks["micro", "all"] = aggregates["micro"]
    blocks["macro", "all"] = aggregates["macro"]
    for value, summary in aggregates["per_tag"]["question_type"].items():
        blocks["tag:question_type", value] = summary
    checked = 0
    for row, summary in blocks.items():
        for metric, block in summary.items():
            if metric == "steps" or not isinstance(block, dict):
                continue
            if "counts" in block:
                for label, count in block["counts"].items():
                    assert frame.loc[row, (metric, label)] == count
                continue
            for statistic, value in block.items():
                cell = frame.loc[row, (metric, statistic)]
                if statistic not in ("n", "skipped") and block["n"] == 0:
                    assert math.isnan(cell)  # no value: missing, not 0
                else:
                    assert cell == pytest.approx(value)
                checked += 1
    assert checked > 150
    assert frame.loc[("micro", "all"), ("samples", "errors")] == 1
    assert frame.loc[("micro", "all"), ("answer_class", "CORRECT")] == 3
    assert math.isnan(frame.loc[("macro", "all"), ("steps_score", "median")])
    means = frame.xs("mean", axis=1, level="statistic")
    assert means.loc[("macro", "all"), "steps_score"] == pytest.approx(
        aggregates["macro"]["steps_score"]["mean"]
    )
    assert len(aggregates_to_pandas(aggregates, tags=False)) == len(templates) + 2
    with pytest.raises(TypeError, match="compute_aggregates"):
        aggregates_to_pandas({"per_template": {}})


def test_missing_pandas_names_the_extra(monkeypatch: pytest.MonkeyPatch, flawed: Any) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "pandas" else real(name, *a)
    )
    with pytest.raises(MissingExtra, match=r"pip install 'qa-eval\[pandas\]'"):
        results_to_pandas(flawed)
    with pytest.raises(MissingExtra, match="aggregates_to_pandas needs"):
        aggregates_to_pandas(compute_aggregates(flawed))
    assert "transformers-oslo" in results_html(flawed)  # the HTML summary needs no pandas


def test_html_summary_escapes_and_truncates(flawed: Any) -> None:
    rows = _with_judge_metrics(flawed)
    rows[0] = {**rows[0], "question_id": "<script>alert(1)</script>", "status": "error",
               "error": "<img src=x onerror=alert(2)>"}  # fmt: skip
    text = results_html(rows, max_rows=5)
    assert "<script>" not in text and "<img" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "error: &lt;img src=x onerror=alert(2)&gt;" in text
    assert text.count("<tr><td>") == 2 + 5  # answer_f1, steps_score means; the first 5 questions
    assert "… and 6 more" in text
    assert "<td>steps_score</td><td>0.3409</td><td>11</td><td>0.3542</td>" in text
    assert "<b>11 questions</b>, 2 errors" in text

    summary = ResultsSummary(flawed, max_rows=3)
    assert summary._repr_html_() == results_html(flawed, max_rows=3)
    assert repr(summary) == "<ResultsSummary: 11 questions, 1 error>"
    frame = summary.to_pandas()
    assert len(frame) == 11 and "signature" in frame.attrs
    assert "0 questions" in results_html([])


def test_results_of_run_evaluation_have_to_pandas_and_html() -> None:
    pytest.importorskip("pandas")
    from qa_eval import run_evaluation

    reference = [{"template_id": "<i>t</i>", "questions": [{"id": "q", "question_text": "?"}]}]
    results = run_evaluation(reference, [{"question_id": "q", "actual_answer": "a"}])
    frame = results.to_pandas()
    assert list(frame["question_id"]) == ["q"]
    html = results._repr_html_()
    assert "&lt;i&gt;t&lt;/i&gt;" in html and "<i>t</i>" not in html
