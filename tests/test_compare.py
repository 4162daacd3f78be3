"""compare_runs / format_table: hand-computed tables, the bootstrap, pairing, edge cases."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import orjson
import pytest

from qa_eval import compare
from qa_eval.aggregate import METRICS
from qa_eval.compare import compare_runs, default_metrics, format_table, lower_is_better


def result(qid: Any, template: Any = "t1", status: str = "success", **metrics: Any) -> dict:
    return {"template_id": template, "question_id": qid, "status": status, **metrics}


def run(template: str, key: str, values: list[Any], start: int = 0) -> list[dict]:
    return [result(f"q{start + i}", template, **{key: v}) for i, v in enumerate(values)]


def entry(comparison: dict, metric: str) -> dict:
    (found,) = [m for m in comparison["metrics"] if m["metric"] == metric]
    return found


def overall(comparison: dict, metric: str) -> dict:
    return entry(comparison, metric)["overall"]


# ---------------------------------------------------------------- hand-computed tables


def test_hand_computed_means_delta_and_wins() -> None:
    a = run("t1", "answer_f1", [0.5, 1.0, 0.0, 0.25])
    b = run("t1", "answer_f1", [0.75, 1.0, 0.5, 0.0])
    row = overall(compare_runs(a, b, resamples=200), "answer_f1")
    # deltas 0.25, 0, 0.5, -0.25
    assert row["n"] == 4
    assert row["mean_a"] == 0.4375
    assert row["mean_b"] == 0.5625
    assert row["delta"] == 0.125
    assert (row["wins"], row["losses"], row["ties"]) == (2, 1, 1)
    assert row["questions"] == 4
    assert row["missing_a"] == row["missing_b"] == row["skipped_a"] == row["skipped_b"] == 0


def test_lower_is_better_metrics_count_a_drop_as_a_win() -> None:
    a = run("t1", "llm_cost", [0.01, 0.02, 0.03])
    b = run("t1", "llm_cost", [0.005, 0.03, 0.03])
    found = entry(compare_runs(a, b, resamples=200), "llm_cost")
    row = found["overall"]
    assert found["direction"] == "lower"
    assert row["delta"] == pytest.approx((0.005 + 0.03 + 0.03 - 0.06) / 3)
    assert (row["wins"], row["losses"], row["ties"]) == (1, 1, 1)
    assert lower_is_better("input_tokens") and lower_is_better("elapsed_sec")
    assert lower_is_better("faithfulness_cost")
    assert not lower_is_better("answer_f1") and not lower_is_better("steps_score")


def test_lower_better_option_marks_other_metrics() -> None:
    a = run("t1", "hops", [3, 4])
    b = run("t1", "hops", [2, 2])
    found = entry(compare_runs(a, b, resamples=100, lower_better=["hops"]), "hops")
    assert found["direction"] == "lower"
    assert found["overall"]["wins"] == 2


def test_two_pairs_bootstrap_distribution_by_hand() -> None:
    # deltas (0, 1): resampled means are 0, 0.5, 1 with chances 1/4, 1/2, 1/4.
    a = run("t1", "steps_score", [0.0, 0.0])
    b = run("t1", "steps_score", [0.0, 1.0])
    row = overall(compare_runs(a, b, resamples=20_000, seed=3), "steps_score")
    assert row["delta"] == 0.5
    assert (row["ci_low"], row["ci_high"]) == (0.0, 1.0)
    # |m* - 0.5| >= 0.5 exactly when m* is 0 or 1: half the resamples.
    assert row["p_value"] == pytest.approx(0.5, abs=0.02)
    assert row["better"] is None


# ---------------------------------------------------------------- the bootstrap


def shifted_runs(n: int, shift: float, noise: float, seed: int) -> tuple[list, list]:
    rng = np.random.default_rng(seed)
    base = rng.uniform(0, 1, n)
    other = base + shift + rng.normal(0, noise, n)
    return run("t1", "answer_f1", base.tolist()), run("t1", "answer_f1", other.tolist())


def test_ci_contains_true_delta_and_is_deterministic() -> None:
    a, b = shifted_runs(200, 0.2, 0.3, seed=11)
    first = compare_runs(a, b, seed=7)
    row = overall(first, "answer_f1")
    assert row["ci_low"] < 0.2 < row["ci_high"]
    assert row["ci_low"] < row["delta"] < row["ci_high"]
    assert compare_runs(a, b, seed=7) == first
    other = overall(compare_runs(a, b, seed=8), "answer_f1")
    assert (other["ci_low"], other["ci_high"]) != (row["ci_low"], row["ci_high"])
    assert other["delta"] == row["delta"]


def test_identical_runs_give_zero_delta_and_p_one() -> None:
    a, _ = shifted_runs(30, 0.0, 0.0, seed=1)
    comparison = compare_runs(a, [dict(r) for r in a], resamples=500)
    row = overall(comparison, "answer_f1")
    assert row["delta"] == 0.0
    assert (row["ci_low"], row["ci_high"]) == (0.0, 0.0)
    assert row["p_value"] == 1.0
    assert (row["wins"], row["losses"], row["ties"]) == (0, 0, 30)
    assert row["better"] is None


def test_clear_improvement_is_significant() -> None:
    a, b = shifted_runs(50, 0.3, 0.1, seed=5)
    comparison = compare_runs(a, b)
    row = overall(comparison, "answer_f1")
    assert row["p_value"] < 0.01
    assert row["p_value"] >= 1 / (10_000 + 1)
    assert row["ci_low"] > 0
    assert row["better"] == "b"
    reverse = overall(compare_runs(b, a), "answer_f1")
    assert reverse["ci_high"] < 0
    assert reverse["better"] == "a"


def test_lower_cost_in_b_is_b_better() -> None:
    a = run("t1", "llm_cost", [0.01 + 0.001 * i for i in range(20)])
    b = run("t1", "llm_cost", [0.005 + 0.001 * i + 0.0001 * (i % 3) for i in range(20)])
    row = overall(compare_runs(a, b), "llm_cost")
    assert row["delta"] < 0
    assert row["better"] == "b"
    assert row["wins"] == 20


def test_ci_matches_scipy_percentile_bootstrap() -> None:
    stats = pytest.importorskip("scipy.stats")
    a, b = shifted_runs(40, 0.05, 0.4, seed=21)
    deltas = np.array([y["answer_f1"] - x["answer_f1"] for x, y in zip(a, b)])
    reference = stats.bootstrap(
        (deltas,),
        np.mean,
        n_resamples=20_000,
        method="percentile",
        confidence_level=0.95,
        rng=np.random.default_rng(2),
    ).confidence_interval
    row = overall(compare_runs(a, b, resamples=20_000, seed=4), "answer_f1")
    standard_error = deltas.std(ddof=1) / math.sqrt(deltas.size)
    assert row["ci_low"] == pytest.approx(reference.low, abs=0.1 * standard_error)
    assert row["ci_high"] == pytest.approx(reference.high, abs=0.1 * standard_error)


def test_chunked_resampling_gives_the_same_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = shifted_runs(37, 0.1, 0.3, seed=9)
    whole = compare_runs(a, b, resamples=1000)
    monkeypatch.setattr(compare, "_CHUNK_ELEMENTS", 100)
    assert compare_runs(a, b, resamples=1000) == whole


def test_a_row_does_not_depend_on_the_other_metrics() -> None:
    a, b = shifted_runs(25, 0.1, 0.3, seed=2)
    for ra, rb, i in zip(a, b, range(25)):
        ra["steps_score"], rb["steps_score"] = i / 25, (i % 5) / 5
    both = compare_runs(a, b, resamples=2000)
    alone = compare_runs(a, b, resamples=2000, metrics=["answer_f1"])
    assert overall(both, "answer_f1") == overall(alone, "answer_f1")


# ---------------------------------------------------------------- pairing and edge cases


def test_unpaired_questions_are_counted() -> None:
    a = run("t1", "answer_f1", [0.1, 0.2, 0.3])  # q0..q2
    b = run("t1", "answer_f1", [0.5, 0.6, 0.7, 0.8], start=1)  # q1..q4
    comparison = compare_runs(a, b, resamples=100)
    assert comparison["questions"] == {
        "a": 3,
        "b": 4,
        "paired": 2,
        "only_a": 1,
        "only_b": 2,
        "errors_a": 0,
        "errors_b": 0,
        "excluded": 0,
        "template_mismatch": 0,
    }
    row = overall(comparison, "answer_f1")
    assert row["n"] == 2
    assert row["mean_a"] == pytest.approx(0.25)
    assert row["mean_b"] == pytest.approx(0.55)


def test_nan_and_non_numbers_are_skipped_and_counted() -> None:
    a = run("t1", "answer_f1", [0.5, math.nan, 0.5, 0.5, None])
    b = run("t1", "answer_f1", [1.0, 1.0, math.inf, "n/a", 1.0])
    comparison = compare_runs(a, b, resamples=100)
    row = overall(comparison, "answer_f1")
    assert row["n"] == 1
    assert row["delta"] == 0.5
    assert (row["skipped_a"], row["skipped_b"], row["missing_a"], row["missing_b"]) == (1, 2, 1, 0)
    assert row["questions"] == 5
    json.dumps(comparison, allow_nan=False)


def test_n_zero_and_n_one() -> None:
    a = [result("q0", answer_f1=0.5, steps_score=1.0)]
    b = [result("q0", steps_score=0.5)]
    comparison = compare_runs(a, b, resamples=100)
    empty = overall(comparison, "answer_f1")
    assert empty["n"] == 0
    assert empty["missing_b"] == 1
    for key in ("mean_a", "mean_b", "delta", "ci_low", "ci_high", "p_value", "better"):
        assert empty[key] is None
    assert (empty["wins"], empty["losses"], empty["ties"]) == (0, 0, 0)
    single = overall(comparison, "steps_score")
    assert (single["n"], single["delta"], single["losses"]) == (1, -0.5, 1)
    assert single["ci_low"] is None and single["p_value"] is None
    no_pairs = compare_runs([], [], resamples=10, metrics=["answer_f1"])
    assert overall(no_pairs, "answer_f1")["n"] == 0
    assert no_pairs["questions"]["paired"] == 0
    assert "metric" in format_table(no_pairs)


def test_error_results_are_excluded_by_default_or_included() -> None:
    a = [
        result("q0", steps_score=1.0),
        result("q1", steps_score=1.0),
        result("q2", steps_score=0.5),
    ]
    b = [
        result("q0", steps_score=1.0),
        result("q1", status="error", steps_score=0.0),
        result("q2", steps_score=1.0),
    ]
    excluded = compare_runs(a, b, resamples=100)
    assert excluded["questions"]["excluded"] == 1
    assert excluded["questions"]["errors_b"] == 1
    row = overall(excluded, "steps_score")
    assert (row["n"], row["delta"], row["wins"], row["losses"]) == (2, 0.25, 1, 0)
    included = compare_runs(a, b, resamples=100, errors="include")
    assert included["questions"]["excluded"] == 0
    row = overall(included, "steps_score")
    assert (row["n"], row["wins"], row["losses"]) == (3, 1, 1)
    assert row["delta"] == pytest.approx(-0.5 / 3)
    # without a status, an "error" key marks an error result
    no_status = [{"template_id": "t1", "question_id": "q0", "error": "boom"}]
    assert compare_runs(no_status, a[:1], resamples=10)["questions"]["errors_a"] == 1


def test_per_template_rows() -> None:
    a = run("t1", "answer_f1", [0.0, 0.0]) + run("t2", "answer_f1", [0.5, 0.5, 0.5], start=2)
    b = run("t1", "answer_f1", [1.0, 0.5]) + run("t2", "answer_f1", [0.5, 0.0, 0.5], start=2)
    comparison = compare_runs(a, b, resamples=100)
    assert comparison["templates"] == ["t1", "t2"]
    found = entry(comparison, "answer_f1")
    t1, t2 = found["per_template"]
    assert (t1["template_id"], t1["n"], t1["mean_b"], t1["delta"]) == ("t1", 2, 0.75, 0.75)
    assert (t1["wins"], t1["losses"], t1["ties"]) == (2, 0, 0)
    assert (t2["template_id"], t2["n"], t2["mean_a"], t2["mean_b"]) == ("t2", 3, 0.5, 1 / 3)
    assert (t2["wins"], t2["losses"], t2["ties"]) == (0, 1, 2)
    assert found["overall"]["n"] == 5
    assert found["overall"]["delta"] == pytest.approx((1.0 + 0.5 - 0.5) / 5)


def test_question_ids_repeated_across_templates_pair_by_template() -> None:
    a = [result("q1", "t1", answer_f1=0.0), result("q1", "t2", answer_f1=1.0)]
    b = [result("q1", "t2", answer_f1=1.0), result("q1", "t1", answer_f1=0.5)]
    comparison = compare_runs(a, b, resamples=100)
    assert comparison["method"]["paired_by"] == "template_id+question_id"
    row = overall(comparison, "answer_f1")
    assert (row["n"], row["delta"], row["ties"]) == (2, 0.25, 1)
    assert compare_runs(a[:1], b[1:], resamples=10)["method"]["paired_by"] == "question_id"
    with pytest.raises(ValueError, match="more than once"):
        compare_runs([result("q1"), result("q1")], b, resamples=10)


def test_template_mismatch_uses_run_a_template() -> None:
    a = [result("q1", "old", answer_f1=0.0)]
    b = [result("q1", "new", answer_f1=1.0)]
    comparison = compare_runs(a, b, resamples=10)
    assert comparison["questions"]["template_mismatch"] == 1
    assert comparison["templates"] == ["old"]


def test_default_metrics() -> None:
    a = [
        result(7, steps_score=1.0, llm_cost=0.1, my_judge=0.5, my_judge_reason="ok"),
        result(
            8,
            answer_f1=0.5,
            flag=True,
            actual_steps=[
                {"name": "retrieval", "retrieval_context_recall": 0.5},
                {"name": "retrieval", "retrieval_context_recall": 1.0},
                {"name": "sparql", "retrieval_context_recall": 0.0},
            ],
        ),
    ]
    b = [result(7, steps_score=0.0, custom_score=3), result(8, answer_f1=0.0)]
    top_level = [m for m in METRICS if m in {"answer_f1", "llm_cost", "steps_score"}]
    assert top_level == ["answer_f1", "llm_cost", "steps_score"]  # in METRICS order
    expected = [*top_level, "retrieval_context_recall", "my_judge", "custom_score"]
    assert default_metrics(a, b) == expected
    b[1]["actual_steps"] = [{"name": "retrieval", "retrieval_context_recall": 0.25}]
    row = overall(compare_runs(a, b, resamples=10), "retrieval_context_recall")
    assert (row["n"], row["mean_a"], row["mean_b"]) == (1, 0.75, 0.25)


def test_bad_arguments() -> None:
    a = run("t1", "answer_f1", [0.5])
    with pytest.raises(ValueError, match="resamples"):
        compare_runs(a, a, resamples=0)
    with pytest.raises(ValueError, match="confidence"):
        compare_runs(a, a, confidence=1.0)
    with pytest.raises(ValueError, match="errors"):
        compare_runs(a, a, errors="drop")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="mapping"):
        compare_runs([1], a)  # type: ignore[list-item]
    with pytest.raises(ValueError, match="question_id"):
        compare_runs([{"template_id": "t1"}], a)


# ---------------------------------------------------------------- output


def sample_comparison() -> dict:
    a, b = shifted_runs(12, 0.2, 0.1, seed=3)
    for i, (ra, rb) in enumerate(zip(a, b)):
        ra["template_id"] = rb["template_id"] = "t1" if i < 6 else "t2"
        ra["input_tokens"], rb["input_tokens"] = 1000 + 10 * i, 900 + 7 * i
        ra["retrieval_context_precision"] = rb["retrieval_context_precision"] = 0.5
    return compare_runs(a, b, resamples=1000, labels=("baseline", "candidate"))


def test_output_is_plain_json() -> None:
    comparison = sample_comparison()
    assert json.loads(json.dumps(comparison, allow_nan=False)) == comparison
    assert orjson.loads(orjson.dumps(comparison)) == comparison
    assert set(comparison) == {"labels", "method", "questions", "templates", "metrics"}
    assert set(comparison["metrics"][0]) == {"metric", "direction", "overall", "per_template"}


def test_format_table() -> None:
    comparison = sample_comparison()
    text = format_table(comparison)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 100
    assert lines[0] == "A = baseline" and lines[1] == "B = candidate"
    header = next(line for line in lines if line.startswith("metric"))
    for column in ("n", "mean A", "mean B", "delta", "95% CI", "p", "W/L/T"):
        assert column in header
    row = overall(comparison, "answer_f1")
    f1 = next(line for line in lines if line.startswith("answer_f1 "))
    assert f"{row['delta']:+.4f}" in f1
    assert f"{row['wins']}/{row['losses']}/{row['ties']}" in f1
    assert f1.index("answer_f1") >= 0 and "*" in f1  # CI excludes 0
    assert any(line.startswith("input_tokens (-)") for line in lines)
    # overall rows first, then the per-template block
    assert lines.index(f1) < lines.index(next(x for x in lines if x.startswith("per template")))
    assert any(line.startswith("  t2 ") for line in lines)
    # a name longer than the column gets a line of its own
    long_name = lines.index("retrieval_context_precision")
    assert lines[long_name + 1].lstrip().startswith("12 ")
    relabelled = format_table(comparison, labels=("x.json", "y.json"))
    assert relabelled.splitlines()[:2] == ["A = x.json", "B = y.json"]


def test_format_table_single_template_and_missing_values() -> None:
    a = [result("q0", answer_f1=0.5), result("q1", answer_f1=0.5)]
    b = [result("q0"), result("q1", answer_f1=1.0)]
    text = format_table(compare_runs(a, b, resamples=10))
    assert "per template" not in text
    f1 = next(line for line in text.splitlines() if line.startswith("answer_f1"))
    assert f1.split()[1:] == ["1", "0.5000", "1.0000", "+0.5000", "-", "-", "1/0/0"]
