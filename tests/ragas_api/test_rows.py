"""``qa_eval.metrics.collections.score_rows``: several metrics over many rows as one run, over real
HTTP against the scripted judge (``openai_stub``): shared calls, one budget, a signature, and
results that aggregates, ``compare_runs`` and the report take."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("openai")
pytest.importorskip("pydantic")

from openai import AsyncOpenAI

from openai_stub import StubServer, oracle
from qa_eval.metrics.collections import MetricResult

PRICES = {"gpt-4o-mini": {"input": 1.0, "output": 2.0}}


def _rows(n: int) -> list[dict[str, Any]]:
    return [
        {
            "user_input": f"Where is the Eiffel Tower? ({i})",
            "response": "The Eiffel Tower is in Paris.",
            "retrieved_contexts": ["The Eiffel Tower is in Paris.", "Berlin is big."],
            "reference": "The Eiffel Tower is in Paris." if i % 2 else "It is in Paris, France.",
        }
        for i in range(n)
    ]


@pytest.fixture
def stub() -> Any:
    with StubServer(oracle()) as server:
        yield server


def _llm(stub: Any, **kwargs: Any) -> Any:
    from qa_eval.llms import llm_factory

    client = AsyncOpenAI(base_url=stub.url, api_key="sk-test")
    return llm_factory("gpt-4o-mini", client=client, cache=False, **kwargs)


def _exact() -> Any:
    from qa_eval.metrics.collections import DeterministicMetric

    return DeterministicMetric(
        "exact", lambda reference, response: float(reference == response), threshold=1.0
    )


def test_two_metrics_share_calls_and_each_row_keeps_both(stub: Any) -> None:
    from qa_eval.metrics.collections import ContextPrecision, ContextRecall, score_rows

    llm = _llm(stub)
    rows = _rows(4)
    seen: list[int] = []
    results = score_rows(
        [ContextPrecision(llm=llm), ContextRecall(llm=llm), _exact()],
        rows,
        on_result=lambda i, r: seen.append(i),
    )
    together = len(stub.chat_requests)
    ContextPrecision(llm=llm).batch_score(
        [{k: r[k] for k in ("user_input", "reference", "retrieved_contexts")} for r in rows]
    )
    ContextRecall(llm=llm).batch_score(
        [{k: r[k] for k in ("user_input", "reference", "retrieved_contexts")} for r in rows]
    )
    apart = len(stub.chat_requests) - together
    assert together == 4 and apart == 8  # one combined call per row instead of two
    assert sorted(seen) == [0, 1, 2, 3]
    assert [r["question_id"] for r in results] == ["row-1", "row-2", "row-3", "row-4"]
    for row, result, scores in zip(rows, results, results.scores, strict=True):
        assert result["template_id"] == "all"
        assert scores["context_precision"].value == result["context_precision_ap"]
        assert scores["context_recall"].value == result["context_recall"]
        verdicts = result["context_recall_statements"]
        attributed = sum(s["attributed"] for s in verdicts)
        assert result["context_recall"] == attributed / len(verdicts)
        assert scores["context_recall"].reason.startswith(f"{attributed} of {len(verdicts)}")
        assert result["exact"] == float(row["reference"] == row["response"])
    signature = results.signature
    assert signature["judge"]["model"] == "gpt-4o-mini"
    assert signature["prompts"] and signature["qa_eval_version"]
    assert signature["usage"]["total"]["calls"] == 4
    assert signature["metrics"]["exact"]["scored"] == "row by row"
    assert signature["metrics"]["context_recall"]["scored"] == "as a run"
    assert results.extra_metrics == ["exact"]


def test_the_budget_stops_further_calls_and_keeps_every_row(stub: Any) -> None:
    from qa_eval.metrics.collections import Faithfulness, score_rows

    llm = _llm(stub, prices=PRICES, concurrency=1)
    rows = _rows(6)
    results = score_rows([Faithfulness(llm=llm), _exact()], rows, max_cost=1e-9, concurrency=1)
    assert len(results) == 6  # no row is lost
    assert 0 < len(stub.chat_requests) < 12  # six rows of two calls each, had it not stopped
    skipped = [s["faithfulness"] for s in results.scores if s["faithfulness"].error]
    assert skipped and all("budget" in (s.error or "") for s in skipped)
    assert all(r["exact"] is not None for r in results)  # the deterministic metric still runs
    assert results.signature["skipped_metric_values"]["budget"] >= len(skipped)


def test_a_metric_a_row_cannot_feed_a_run_is_scored_row_by_row(stub: Any) -> None:
    from qa_eval.metrics.collections import Faithfulness, score_rows

    llm = _llm(stub)
    rows = _rows(3)
    rows[1]["retrieved_contexts"] = []
    results = score_rows([Faithfulness(llm=llm)], rows)
    assert results.signature["metrics"]["faithfulness"]["scored"] == "row by row"
    assert "retrieved_contexts" in (results.scores[1]["faithfulness"].error or "")
    assert results[1]["faithfulness_error"] == results.scores[1]["faithfulness"].error
    assert all(isinstance(results[i]["faithfulness"], float) for i in (0, 2))


def test_results_feed_aggregates_compare_and_the_report(stub: Any) -> None:
    from qa_eval import compute_aggregates
    from qa_eval.compare import compare_runs
    from qa_eval.metrics.collections import ContextRecall, score_rows
    from qa_eval.report import build_report

    llm = _llm(stub)
    rows = _rows(4)
    first = score_rows([ContextRecall(llm=llm), _exact()], rows)
    changed = [dict(r, response=r["reference"]) for r in rows]
    second = score_rows([ContextRecall(llm=llm), _exact()], changed)
    aggregates = compute_aggregates(first, extra_metrics=first.extra_metrics)
    micro = aggregates["micro"]
    assert micro["exact"]["mean"] == pytest.approx(sum(r["exact"] for r in first) / 4)
    assert micro["context_recall"]["n"] == 4
    assert micro["context_recall"]["mean"] == pytest.approx(
        sum(r["context_recall"] for r in first) / 4
    )
    comparison = compare_runs(first, second, metrics=["exact"])
    (row,) = [m for m in comparison["metrics"] if m["metric"] == "exact"]
    overall = row["overall"]
    assert overall["mean_b"] == 1.0 and overall["mean_a"] == micro["exact"]["mean"]
    html = build_report([("first", first, first.signature), ("second", second)])
    assert "<html" in html.lower() and "exact" in html


def test_score_rows_checks_its_metrics() -> None:
    from qa_eval.errors import QaEvalError
    from qa_eval.metrics.collections import score_rows

    with pytest.raises(QaEvalError, match="at least one"):
        score_rows([], [{"response": "a"}])
    with pytest.raises(QaEvalError, match="metric objects"):
        score_rows(["faithfulness"], [{"response": "a"}])  # type: ignore[list-item]
    with pytest.raises(QaEvalError, match="named 'exact'"):
        score_rows([_exact(), _exact()], [{"response": "a", "reference": "a"}])


def test_rows_without_a_judge_score_deterministic_metrics() -> None:
    from qa_eval.metrics.collections import score_rows

    rows = [
        {"response": "a", "reference": "a", "id": "q1", "template_id": "t"},
        {"response": "b", "reference": "a", "id": "q2", "template_id": "t"},
    ]
    results = score_rows([_exact()], rows)
    assert [r["exact"] for r in results] == [1.0, 0.0]
    assert [r["question_id"] for r in results] == ["q1", "q2"]
    assert results.scores[1]["exact"] == MetricResult(0.0)
    assert results.signature["judge"] is None
