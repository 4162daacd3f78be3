"""compare_runs / format_table: hand-computed tables, the bootstrap, pairing, edge cases."""

from __future__ import annotations

import json
import math
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import qa_eval.compare as compare
from fakes import scipy_p
from qa_eval.aggregate import METRICS
from qa_eval.cli import main
from qa_eval.compare import signflip
from qa_eval.compare.runs import compare_runs, default_metrics, lower_is_better
from qa_eval.compare.table import format_table


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


def test_two_pairs_exact_test_by_hand() -> None:
    # deltas (1, 0.5): the four sign vectors give sums 1.5, 0.5, -0.5, -1.5; two reach |1.5|.
    a = run("t1", "steps_score", [0.0, 0.0])
    b = run("t1", "steps_score", [1.0, 0.5])
    row = overall(compare_runs(a, b), "steps_score")
    assert row["delta"] == 0.75
    assert row["p_value"] == 0.5  # the smallest p two questions can give
    assert row["testable"] is False and row["p_adjusted"] is None and row["better"] is None
    assert (row["ci_low"], row["ci_high"]) == (None, None)  # no shift can be rejected
    single = overall(compare_runs(a[:1], b[:1]), "steps_score")
    assert (single["n"], single["p_value"], single["testable"]) == (1, 1.0, False)


def test_six_pairs_exact_test_by_hand() -> None:
    # deltas 1..6 all positive: only s = +-1 reach |21| of the 64 sign vectors, p = 2/64.
    a = run("t1", "answer_f1", [0.0] * 6)
    b = run("t1", "answer_f1", [v / 8 for v in range(1, 7)])
    row = overall(compare_runs(a, b), "answer_f1")
    assert row["p_value"] == 2 / 64
    assert row["testable"] is True
    assert row["p_adjusted"] == 2 / 64  # a family of one
    assert row["better"] == "b"
    # deltas -1, 2, 3, 4, 5, 6 (eighths): |sum| = 19; extreme: +-(all) with 21, +-(flip 1) 19,
    # so p = 4 / 64, not significant at 5%.
    b[0]["answer_f1"] = -1 / 8
    row = overall(compare_runs(a, b), "answer_f1")
    assert row["p_value"] == 4 / 64
    assert row["better"] is None
    assert row["ci_low"] is not None and row["ci_low"] <= 0 <= row["ci_high"]


def test_ties_and_rounding_do_not_change_an_exact_p() -> None:
    # 0.1 + 0.2 != 0.3 in binary: deltas within 1e-12 are ties; a zero mean gives p = 1.
    a = run("t1", "answer_f1", [0.3, 0.3, 0.0, 0.6, 0.2, 0.1, 0.4, 0.0])
    b = run("t1", "answer_f1", [0.1 + 0.2, 0.1 + 0.2, 0.0, 0.7, 0.1, 0.1, 0.4, 0.0])
    row = overall(compare_runs(a, b), "answer_f1")
    assert row["ties"] == 6 and row["wins"] == 1 and row["losses"] == 1
    assert row["p_value"] == 1.0
    assert row["ci_low"] <= 0.0 <= row["ci_high"]


# ---------------------------------------------------------------- the permutation test


def shifted_runs(n: int, shift: float, noise: float, seed: int) -> tuple[list, list]:
    rng = np.random.default_rng(seed)
    base = rng.uniform(0, 1, n)
    other = base + shift + rng.normal(0, noise, n)
    return run("t1", "answer_f1", base.tolist()), run("t1", "answer_f1", other.tolist())


def test_exact_p_values_match_scipy() -> None:
    # Values on a 1/64 grid: every sum is exact in binary, so scipy's own tie rule is exact too.
    rng = np.random.default_rng(17)
    for trial in range(60):
        n = int(rng.integers(2, 13))
        if trial % 2:
            deltas = rng.integers(-64, 65, n) / 64
        else:  # Bernoulli scores: many ties and zeros
            deltas = (rng.integers(0, 2, n) - rng.integers(0, 2, n)).astype(float)
        p, _, _ = compare.sign_flip_test(deltas)
        assert p == pytest.approx(scipy_p(deltas), abs=1e-12), deltas


def test_interval_is_the_inverted_test() -> None:
    # theta inside the interval: scipy's exact test of d - theta does not reject; outside: it does.
    rng = np.random.default_rng(5)
    for _ in range(12):
        n = int(rng.integers(6, 11))
        deltas = rng.integers(-40, 60, n) / 64
        p, low, high = compare.sign_flip_test(deltas)
        assert low is not None and high is not None
        assert (low <= 0 <= high) == (p >= 0.05)
        for theta in np.linspace(low - 0.5, high + 0.5, 15):
            if min(abs(theta - low), abs(theta - high)) < 1e-9:
                continue
            assert (scipy_p(deltas - theta) >= 0.05) == (low < theta < high), (deltas, theta)


def test_monte_carlo_p_is_close_to_the_exact_p() -> None:
    n = compare.EXACT_MAX_N + 2
    deltas = np.random.default_rng(3).integers(-20, 40, n) / 64
    signs = 1 - 2 * ((np.arange(2**n)[:, None] >> np.arange(n)) & 1)
    exact = np.mean(np.abs(signs @ deltas) >= abs(deltas.sum()) - 1e-12)
    resamples = 20_000
    p, low, high = compare.sign_flip_test(deltas, resamples=resamples, rng=np.random.default_rng(1))
    assert p >= 1 / (resamples + 1)
    assert abs(p - exact) <= 4 * math.sqrt(exact * (1 - exact) / resamples) + 1e-4
    assert low is not None and high is not None and low < deltas.mean() < high


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
    assert row["p_value"] == 1.0 and row["p_adjusted"] == 1.0
    assert (row["wins"], row["losses"], row["ties"]) == (0, 0, 30)
    assert row["better"] is None


def test_clear_improvement_is_significant() -> None:
    a, b = shifted_runs(50, 0.3, 0.1, seed=5)
    comparison = compare_runs(a, b)
    row = overall(comparison, "answer_f1")
    assert row["p_value"] == 1 / (10_000 + 1)  # Monte Carlo: no random flip is as extreme
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


def test_chunked_sign_flips_give_the_same_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = shifted_runs(37, 0.1, 0.3, seed=9)
    whole = compare_runs(a, b, resamples=1000)
    monkeypatch.setattr(signflip, "_CHUNK_ELEMENTS", 100)
    assert compare_runs(a, b, resamples=1000) == whole


def test_a_row_does_not_depend_on_the_other_metrics_but_its_adjustment_does() -> None:
    a, b = shifted_runs(25, 0.1, 0.3, seed=2)
    for ra, rb, i in zip(a, b, range(25)):
        ra["steps_score"], rb["steps_score"] = i / 25, (i % 5) / 5
    both = overall(compare_runs(a, b, resamples=2000), "answer_f1")
    alone = overall(compare_runs(a, b, resamples=2000, metrics=["answer_f1"]), "answer_f1")
    own = ("p_adjusted", "better")
    assert {k: v for k, v in both.items() if k not in own} == {
        k: v for k, v in alone.items() if k not in own
    }
    assert alone["p_adjusted"] == alone["p_value"]
    assert both["p_adjusted"] >= both["p_value"]


# ---------------------------------------------------------------- Holm and the mark


def test_holm_adjustment_by_hand() -> None:
    # Three metrics, each with six positive deltas: p = 2/64 each, 3 * 2/64 > 0.05 adjusted.
    a = [result(f"q{i}", m1=0.0, m2=0.0, m3=0.0, m4=0.0) for i in range(6)]
    b = [result(f"q{i}", m1=0.5, m2=0.25 * (i + 1), m3=1.0, m4=0.0) for i in range(6)]
    b[0]["m4"] = 1.0  # one win, five ties: p = 1
    comparison = compare_runs(a, b)
    rows = {m: overall(comparison, m) for m in ("m1", "m2", "m3", "m4")}
    for name in ("m1", "m2", "m3"):
        assert rows[name]["p_value"] == 2 / 64
        assert rows[name]["p_adjusted"] == pytest.approx(4 * 2 / 64)
        assert rows[name]["better"] is None  # significant alone, not in a family of four
    assert rows["m4"]["p_value"] == 1.0 and rows["m4"]["p_adjusted"] == 1.0
    alone = overall(compare_runs(a, b, metrics=["m1"]), "m1")
    assert alone["p_adjusted"] == 2 / 64 and alone["better"] == "b"


def test_holm_matches_a_direct_implementation_and_marks_follow_adjusted_p() -> None:
    rng = np.random.default_rng(8)
    a, b = [], []
    for t in range(6):
        n = 4 + 3 * t
        shift = 0.3 if t % 2 else 0.0
        for i in range(n):
            x = float(rng.uniform())
            a.append(result(f"t{t}q{i}", f"t{t}", f1=x, g=float(rng.uniform())))
            b.append(
                result(
                    f"t{t}q{i}",
                    f"t{t}",
                    f1=x + shift + float(rng.normal(0, 0.2)),
                    g=float(rng.uniform()),
                )
            )
    comparison = compare_runs(a, b, resamples=2000)
    alpha = comparison["method"]["alpha"]
    assert alpha == pytest.approx(0.05)
    for family in (
        [e["overall"] for e in comparison["metrics"]],
        [r for e in comparison["metrics"] for r in e["per_template"]],
    ):
        tested = sorted((r for r in family if r["testable"]), key=lambda r: r["p_value"])
        expected, running = [], 0.0
        for rank, row in enumerate(tested):
            running = max(running, min(1.0, (len(tested) - rank) * row["p_value"]))
            expected.append(running)
        assert [r["p_adjusted"] for r in tested] == pytest.approx(expected)
        for row in family:
            assert row["testable"] == (row["n"] >= 6)  # exact up to 16, so 2^(1-n) < 0.05
            if not row["testable"]:
                assert row["p_adjusted"] is None and row["better"] is None
            significant = row["p_adjusted"] is not None and row["p_adjusted"] < alpha
            assert (row["better"] is not None) == significant
            if significant:
                assert row["better"] == ("b" if row["delta"] > 0 else "a")
            if row["ci_low"] is not None:
                assert (row["ci_low"] <= 0 <= row["ci_high"]) == (row["p_value"] >= alpha)
    assert any(r["better"] == "b" for e in comparison["metrics"] for r in e["per_template"])


def test_testable_depends_on_the_level() -> None:
    a = run("t1", "answer_f1", [0.0] * 5)
    b = run("t1", "answer_f1", [1.0] * 5)
    strict = overall(compare_runs(a, b), "answer_f1")
    assert strict["testable"] is False and strict["p_value"] == 2 / 32
    loose = overall(compare_runs(a, b, confidence=0.9), "answer_f1")
    assert loose["testable"] is True and loose["better"] == "b"
    assert (loose["ci_low"], loose["ci_high"]) == (1.0, 1.0)
    # beyond the exact range the Monte Carlo floor 1 / (resamples + 1) decides
    a, b = run("t1", "answer_f1", [0.0] * 20), run("t1", "answer_f1", [1.0] * 20)
    assert overall(compare_runs(a, b, resamples=19), "answer_f1")["testable"] is False
    assert overall(compare_runs(a, b, resamples=20), "answer_f1")["testable"] is True


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
    for key in ("mean_a", "mean_b", "delta", "ci_low", "ci_high", "p_value", "p_adjusted"):
        assert empty[key] is None
    assert empty["better"] is None and empty["testable"] is False
    assert (empty["wins"], empty["losses"], empty["ties"]) == (0, 0, 0)
    single = overall(comparison, "steps_score")
    assert (single["n"], single["delta"], single["losses"]) == (1, -0.5, 1)
    assert single["p_value"] == 1.0 and single["ci_low"] is None and not single["testable"]
    # the table leaves out the row without values
    lines = format_table(comparison, width=100).splitlines()
    assert any(line.startswith("steps_score ") for line in lines)
    assert not any(line.startswith("answer_f1") for line in lines)


def test_no_paired_questions_is_an_error() -> None:
    with pytest.raises(ValueError, match="no question is in both runs"):
        compare_runs([], [], metrics=["answer_f1"])
    a = run("t1", "answer_f1", [0.5, 0.6])
    b = run("t1", "answer_f1", [0.5, 0.6], start=2)
    with pytest.raises(ValueError, match=r"A: 2 questions, B: 2"):
        compare_runs(a, b)
    errors = [result(f"q{i}", status="error") for i in range(2)]
    with pytest.raises(ValueError, match="all 2 paired questions are an error"):
        compare_runs(a, errors, errors="exclude")


def test_unknown_metric_is_an_error_listing_the_metrics() -> None:
    a = [result("q0", steps_score=1.0, answer_f1=0.5)]
    with pytest.raises(ValueError, match="unknown metric 'steps_scor'; the runs have: answer_f1"):
        compare_runs(a, a, metrics=["steps_scor"])
    with pytest.raises(ValueError, match="unknown metrics 'x', 'y'"):
        compare_runs(a, a, metrics=["steps_score", "x", "y"])
    with pytest.raises(ValueError, match="nothing to compare"):
        compare_runs([result("q0")], [result("q0")])
    with pytest.raises(ValueError, match="nothing to compare"):
        compare_runs(a, a, metrics=[])


def test_errors_count_as_failures_by_default() -> None:
    # The candidate errors on 8 of 11 questions: excluding them hides it, failing them shows it.
    a = [result(f"q{i}", answer_f1=0.8, input_tokens=100) for i in range(11)]
    b = [result(f"q{i}", answer_f1=0.8, input_tokens=100) for i in range(3)]
    b += [result(f"q{i}", status="error", error="timeout") for i in range(3, 11)]
    failed = compare_runs(a, b)
    row = overall(failed, "answer_f1")
    assert (row["n"], row["errors_a"], row["errors_b"]) == (11, 0, 8)
    assert row["mean_b"] == pytest.approx(0.8 * 3 / 11)
    assert row["delta"] == pytest.approx(-0.8 * 8 / 11)
    assert (row["wins"], row["losses"], row["ties"]) == (0, 8, 3)
    assert row["better"] == "a" and row["p_value"] == 2 / 2**8
    # lower-is-better usage metrics keep the values an error carries: none here
    tokens = overall(failed, "input_tokens")
    assert (tokens["n"], tokens["missing_b"], tokens["errors_b"]) == (3, 8, 8)
    assert failed["method"]["errors"] == "fail"
    excluded = compare_runs(a, b, errors="exclude")
    row = overall(excluded, "answer_f1")
    assert (row["n"], row["delta"], row["p_value"]) == (3, 0.0, 1.0)
    assert (row["errors_a"], row["errors_b"]) == (0, 8)  # still shown
    assert excluded["questions"]["excluded"] == 8


def test_error_results_in_each_mode() -> None:
    a = [
        result("q0", steps_score=1.0),
        result("q1", steps_score=1.0, input_tokens=10),
        result("q2", steps_score=0.5),
        result("q3", status="error", steps_score=0.0),
        result("q4", status="error"),
    ]
    b = [
        result("q0", steps_score=1.0),
        result("q1", status="error", steps_score=0.0, input_tokens=40),
        result("q2", steps_score=1.0),
        result("q3", status="error", steps_score=0.0),
        result("q4", status="error"),
    ]
    failed = compare_runs(a, b)
    row = overall(failed, "steps_score")
    # q3: both errors carrying the metric, a tie at 0; q4: neither carries it, missing
    assert (row["n"], row["wins"], row["losses"], row["ties"]) == (4, 1, 1, 2)
    assert (row["missing_a"], row["missing_b"], row["errors_a"], row["errors_b"]) == (1, 1, 2, 3)
    assert row["delta"] == pytest.approx(-0.5 / 4)
    tokens = overall(failed, "input_tokens")  # lower is better: the error's own 40 tokens
    assert (tokens["n"], tokens["delta"]) == (1, 30.0)
    excluded = compare_runs(a, b, errors="exclude")
    assert excluded["questions"]["excluded"] == 3
    assert excluded["questions"]["errors_b"] == 3
    row = overall(excluded, "steps_score")
    assert (row["n"], row["delta"], row["wins"], row["losses"]) == (2, 0.25, 1, 0)
    included = compare_runs(a, b, errors="include")
    assert included["questions"]["excluded"] == 0
    row = overall(included, "steps_score")
    assert (row["n"], row["wins"], row["losses"]) == (4, 1, 1)
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
    with pytest.raises(ValueError, match="between 1 and 1,000,000"):
        compare_runs(a, a, resamples=1_000_001)
    with pytest.raises(ValueError, match="resamples must be an integer"):
        compare_runs(a, a, resamples=10.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="confidence"):
        compare_runs(a, a, confidence=1.0)
    with pytest.raises(ValueError, match="errors"):
        compare_runs(a, a, errors="drop")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="mapping"):
        compare_runs([1], a)  # type: ignore[list-item]
    with pytest.raises(ValueError, match="question_id"):
        compare_runs([{"template_id": "t1"}], a)
    with pytest.raises(ValueError, match="at least one"):
        compare.sign_flip_test([])
    with pytest.raises(ValueError, match="finite"):
        compare.sign_flip_test([1.0, math.nan])
    with pytest.raises(ValueError, match="confidence"):
        compare.sign_flip_test([1.0, 2.0], confidence=95)
    with pytest.raises(ValueError, match="resamples"):
        compare.sign_flip_test([1.0, 2.0], resamples=-5)


# ---------------------------------------------------------------- output


def sample_comparison() -> dict:
    a, b = shifted_runs(12, 0.2, 0.1, seed=3)
    for i, (ra, rb) in enumerate(zip(a, b)):
        ra["template_id"] = rb["template_id"] = "t1" if i < 6 else "t2"
        ra["input_tokens"], rb["input_tokens"] = 1000 + 10 * i, 900 + 7 * i
        ra["retrieval_context_precision"] = rb["retrieval_context_precision"] = 0.5
    return compare_runs(a, b, resamples=1000, labels=("baseline", "candidate"))


ROW_KEYS = {
    "n", "mean_a", "mean_b", "delta", "ci_low", "ci_high", "p_value", "p_adjusted", "better",
    "testable", "wins", "losses", "ties", "errors_a", "errors_b", "questions", "missing_a",
    "missing_b", "skipped_a", "skipped_b",
}  # fmt: skip


def test_output_is_plain_json() -> None:
    comparison = sample_comparison()
    assert json.loads(json.dumps(comparison, allow_nan=False)) == comparison
    assert orjson.loads(orjson.dumps(comparison)) == comparison
    assert set(comparison) == {"labels", "method", "questions", "templates", "metrics"}
    assert set(comparison["metrics"][0]) == {"metric", "direction", "overall", "per_template"}
    for entry in comparison["metrics"]:
        assert set(entry["overall"]) == ROW_KEYS
        for row in entry["per_template"]:
            assert set(row) == ROW_KEYS | {"template_id"}
    assert comparison["method"]["alpha"] == 0.05


def test_format_table() -> None:
    comparison = sample_comparison()
    text = format_table(comparison, width=100)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 100
    # the verdict first: B named against A, with what is significant
    assert lines[0].startswith("candidate (B) against baseline (A): better on answer_f1 +0.202")
    header = next(line for line in lines if line.startswith("metric"))
    columns = ("n", "mean A", "mean B", "delta", "err A/B", "95% CI", "p", "p adj", "better")
    for column in (*columns, "W/L/T"):
        assert column in header
    row = overall(comparison, "answer_f1")
    assert row["better"] == "b"
    f1 = next(line for line in lines if line.startswith("answer_f1 "))
    assert f"{row['delta']:+.3f}" in f1
    assert f"{row['wins']}/{row['losses']}/{row['ties']}" in f1
    assert f1.split()[-2:] == ["B", "12/0/0"]
    assert any(line.startswith("input_tokens (-)") for line in lines)
    # overall rows first, then the per-template block; 6 pairs per template are testable
    assert lines.index(f1) < lines.index(next(x for x in lines if x.startswith("per template")))
    t2 = next(line for line in lines if line.startswith("  t2 "))
    assert "n<6" not in t2
    # a name longer than the column gets a line of its own
    long_name = lines.index("retrieval_context_precision")
    assert lines[long_name + 1].lstrip().startswith("12 ")
    start = lines.index(next(x for x in lines if x.startswith("delta =")))
    assert len(lines) - start <= 2  # the short note
    explained = format_table(comparison, width=100, explain=True).splitlines()
    start = explained.index(next(x for x in explained if x.startswith("delta =")))
    legend = " ".join(explained[start:])
    for words in ("sign-flip permutation test", "Holm", "p adj < 0.05", "1,000 random"):
        assert words in legend
    relabelled = format_table(comparison, labels=("x.json", "y.json"))
    assert relabelled.startswith("y.json (B) against x.json (A): ")


def test_format_table_fits_any_width() -> None:
    comparison = sample_comparison()
    comparison["labels"]["a"] = "a-label-that-is-much-longer-than-the-narrowest-terminal " * 2
    for width in (20, 40, 60, 80, 100, 140, 200):
        text = format_table(comparison, width=width)
        assert max(len(line) for line in text.splitlines()) <= width, width
        assert "answer_f1" in text and "+0.202" in text
    wide = format_table(comparison, width=200)
    assert "mean A" in wide and "W/L/T" in wide
    narrow = format_table(comparison, width=80).splitlines()
    header = next(line for line in narrow if line.startswith("metric"))
    assert "mean A" not in header and "p adj" in header and "err A/B" in header
    assert any("--format json has them all" in line for line in narrow)
    records = format_table(comparison, width=40)
    assert "p adj" in records and "mean A 0.386" in records


def test_format_table_small_templates_are_too_small_to_test() -> None:
    a = run("t1", "answer_f1", [0.0, 0.0]) + run("t2", "answer_f1", [0.0] * 8, start=2)
    b = run("t1", "answer_f1", [1.0, 1.0]) + run("t2", "answer_f1", [1.0] * 8, start=2)
    comparison = compare_runs(a, b)
    lines = format_table(comparison, width=120, per_template=True, explain=True).splitlines()
    t1 = next(line for line in lines if line.startswith("  t1 "))
    t2 = next(line for line in lines if line.startswith("  t2 "))
    assert "n<6" in t1 and "0.500" not in t1 and t1.split()[-2] != "B"
    assert t2.split()[-2] == "B"  # 8 wins: p = 2/256, Holm over the testable rows
    assert any(line.startswith("n<6: too few pairs") for line in lines)
    # without --per-template, the row too small to test is left out; the testable one stays
    lines = format_table(comparison, width=120).splitlines()
    assert not any(line.startswith("  t1 ") for line in lines)
    assert any(line.startswith("  t2 ") for line in lines)


def test_format_table_single_template_and_missing_values() -> None:
    a = [result("q0", answer_f1=0.5), result("q1", answer_f1=0.5)]
    b = [result("q0"), result("q1", answer_f1=1.0)]
    text = format_table(compare_runs(a, b, resamples=10), width=120)
    assert "per template" not in text
    f1 = next(line for line in text.splitlines() if line.startswith("answer_f1"))
    assert f1.split()[1:] == ["1", "0.500", "1.000", "+0.500", "0/0", "-", "n<6", "-", "1/0/0"]


def test_report_rows() -> None:
    comparison = sample_comparison()
    flat = compare.report_rows(comparison)
    assert flat["a"] == "baseline" and "Holm" in flat["method"]
    first = flat["metrics"][0]
    for key in ("p_value", "p_adjusted", "better", "testable", "errors_a", "errors_b", "ci"):
        assert key in first


# ---------------------------------------------------------------- the command line


def write_runs(tmp_path: Path) -> tuple[str, str]:
    def template(i: int) -> str:
        return "t1" if i < 4 else "t2"

    a = [result(f"q{i}", template(i), answer_f1=0.5, steps_score=1.0) for i in range(10)]
    b = [result(f"q{i}", template(i), answer_f1=0.75, steps_score=1.0) for i in range(7)]
    b += [result(f"q{i}", "t2", status="error", steps_score=0.0) for i in range(7, 10)]
    pa, pb = tmp_path / "a.json", tmp_path / "b.json"
    pa.write_text(json.dumps(a))
    pb.write_text(json.dumps(b))
    return str(pa), str(pb)


def test_cli_compare_counts_errors_unless_excluded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = write_runs(tmp_path)
    assert main(["compare", a, b, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    row = overall(data, "answer_f1")
    assert (row["n"], row["errors_b"], row["losses"], row["wins"]) == (10, 3, 3, 7)
    assert data["method"]["errors"] == "fail"
    assert main(["compare", a, b, "--format", "json", "--exclude-errors"]) == 0
    data = json.loads(capsys.readouterr().out)
    row = overall(data, "answer_f1")
    assert (row["n"], row["errors_b"], row["wins"], row["better"]) == (7, 3, 7, "b")
    assert data["method"]["errors"] == "exclude"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--metric", "steps_scor"], "unknown metric 'steps_scor'; the runs have: answer_f1, "),
        (["--resamples", "0"], "--resamples must be between 1 and 1,000,000"),
        (["--resamples", "2000000"], "--resamples must be between 1 and 1,000,000"),
        (["--include-errors"], "--include-errors was removed"),
    ],
)
def test_cli_compare_refuses_bad_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    a, b = write_runs(tmp_path)
    assert main(["compare", a, b, *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_cli_compare_without_paired_questions_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, _ = write_runs(tmp_path)
    other = tmp_path / "other.json"
    other.write_text(json.dumps([result("x1", answer_f1=1.0)]))
    assert main(["compare", a, str(other)]) == 2
    assert "no question is in both runs" in capsys.readouterr().err


def test_cli_compare_table_fits_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = write_runs(tmp_path)
    for columns in ("60", "100", "160"):
        monkeypatch.setenv("COLUMNS", columns)
        assert main(["compare", a, b]) == 0
        text = capsys.readouterr().out
        assert max(len(line) for line in text.splitlines()) <= int(columns)
        assert "Holm" in text and "err A/B" in text


def test_report_comparison_counts_errors_unless_excluded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = write_runs(tmp_path)
    out = tmp_path / "report.html"
    assert main(["report", a, b, "-o", str(out)]) == 0
    html = out.read_text()
    section = html[html.index('id="comparison"') : html.index('<section id="templates">')]
    headers = re.findall(r"<th>([^<]*)</th>", section)
    assert {"metric", "template", "n", "delta", "interval", "p", "p adj", "err A/B"} <= set(headers)
    assert "<dt>errors</dt><dd>fail</dd>" in section
    assert main(["report", a, b, "-o", str(out), "--exclude-errors"]) == 0
    assert "<dt>errors</dt><dd>exclude</dd>" in out.read_text()
    other = tmp_path / "other.json"
    other.write_text(json.dumps([result("x1", answer_f1=1.0)]))
    assert main(["report", a, str(other), "-o", str(out)]) == 2
    assert "no question is in both runs" in capsys.readouterr().err


# ------------------------------------------------------------------ values near the float range


def _rounded(exact: Fraction) -> Fraction:
    """``exact`` rounded to a float's 53 significant bits, at any exponent (no overflow)."""
    if exact == 0:
        return exact
    shift = exact.numerator.bit_length() - exact.denominator.bit_length()
    return Fraction(float(exact / Fraction(2) ** shift)) * Fraction(2) ** shift


def _in_floats(exact: Fraction) -> float | None:
    try:
        return float(exact)
    except OverflowError:
        return None


def _mean_model(values: list[float]) -> float | None:
    """``sum / n`` of floats, the sum the float nearest the exact one (exact when it is not)."""
    exact = sum(map(Fraction, values), Fraction(0))
    total = _in_floats(exact)
    if total is None:
        return _in_floats(exact / len(values))
    return _in_floats(Fraction(total) / len(values))


_SIZED = st.floats(1e-280, 1.7e308) | st.floats(-1.7e308, -1e-280) | st.just(0.0)
_VALUES = (
    _SIZED
    | st.sampled_from([1.7e308, -1.7e308, 1.0, 0.5])
    | st.integers(-(2**64), 2**64)
    | st.integers(-(2**1100), 2**1100)
)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(_VALUES, _VALUES), min_size=1, max_size=8))
def test_values_near_the_float_range_compare_without_overflow(pairs: list[tuple[Any, Any]]) -> None:
    """Huge ints and floats up to 1.7e308: no exception, no NaN or infinity; an int beyond the
    float range is skipped; the means are the exact ones rounded, and the delta is the mean of
    the rounded differences (null when it is beyond the float range)."""
    a = [{"question_id": str(i), "answer_f1": x} for i, (x, _) in enumerate(pairs)]
    b = [{"question_id": str(i), "answer_f1": y} for i, (_, y) in enumerate(pairs)]
    out = compare_runs(a, b, resamples=200)
    text = json.dumps(out, allow_nan=True)
    assert "NaN" not in text and "Infinity" not in text
    row = out["metrics"][0]["overall"]
    floats = [(_in_floats(Fraction(x)), _in_floats(Fraction(y))) for x, y in pairs]
    used = [(float(x), float(y)) for x, y in floats if x is not None and y is not None]
    assert row["skipped_a"] == sum(x is None for x, _ in floats)
    assert row["skipped_b"] == sum(y is None for _, y in floats)
    assert row["n"] == len(used)
    if not used:
        assert row["delta"] is None
        return
    assert row["mean_a"] == _mean_model([x for x, _ in used])
    assert row["mean_b"] == _mean_model([y for _, y in used])
    differences = [_rounded(Fraction(y) - Fraction(x)) for x, y in used]
    delta = _rounded(sum(differences, Fraction(0)))
    assert row["delta"] == _in_floats(_rounded(delta / len(used)))
    assert 0.0 <= row["p_value"] <= 1.0
    if row["ci_low"] is not None:
        assert row["ci_low"] <= row["delta"] <= row["ci_high"]
