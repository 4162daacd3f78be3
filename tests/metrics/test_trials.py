"""Repeated trials: pass@k and pass^k by hand, their properties, the trials block of the
aggregates (one value per question in the means, pass@k per template and overall, consistency),
its JSON Schema, and the graphrag-eval projection without it."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from qa_eval.aggregate import compute_aggregates
from qa_eval.errors import QaEvalError
from qa_eval.metrics.agents.trials import consistency, pass_at_k, pass_hat_k, summarise
from qa_eval.schemas import load_schema

jsonschema = pytest.importorskip("jsonschema")

# n = 5 trials, c = 2 pass. By hand: C(5,k) = 5, 10, 10, 5, 1; C(3,k) = 3, 3, 1, 0, 0;
# C(2,k) = 2, 1, 0, 0, 0.
# pass@k = 1 - C(3,k)/C(5,k): 1 - 3/5, 1 - 3/10, 1 - 1/10, 1 - 0, 1 - 0
# pass^k = C(2,k)/C(5,k):     2/5, 1/10, 0, 0, 0
HAND = [
    (1, Fraction(2, 5), Fraction(2, 5)),
    (2, Fraction(7, 10), Fraction(1, 10)),
    (3, Fraction(9, 10), Fraction(0)),
    (4, Fraction(1), Fraction(0)),
    (5, Fraction(1), Fraction(0)),
]


@pytest.mark.parametrize(("k", "at_k", "hat_k"), HAND)
def test_pass_at_k_and_pass_hat_k_by_hand(k: int, at_k: Fraction, hat_k: Fraction) -> None:
    assert pass_at_k(5, 2, k) == at_k
    assert pass_hat_k(5, 2, k) == hat_k


def test_exact_for_a_hundred_trials() -> None:
    """n = 100, c = 1, k = 50: pass@k = 1 - C(99,50)/C(100,50) = 1/2 exactly; the float formula
    with factorials would overflow, and a product of ratios rounds."""
    assert pass_at_k(100, 1, 50) == Fraction(1, 2)
    assert pass_hat_k(100, 99, 50) == Fraction(math.comb(99, 50), math.comb(100, 50))
    assert pass_hat_k(100, 99, 50) == Fraction(1, 2)


@pytest.mark.parametrize(("n", "c", "k"), [(3, 4, 1), (3, 1, 0), (3, 1, 4), (3, -1, 1)])
def test_impossible_counts_are_refused(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError, match="need 0 <= c <= n"):
        pass_at_k(n, c, k)


@given(st.integers(1, 40).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_pass_hat_k_at_most_pass_at_1_at_most_pass_at_k_and_monotone(nc: tuple[int, int]) -> None:
    n, c = nc
    first = pass_at_k(n, c, 1)
    assert first == pass_hat_k(n, c, 1) == Fraction(c, n)
    for k in range(1, n + 1):
        assert 0 <= pass_hat_k(n, c, k) <= first <= pass_at_k(n, c, k) <= 1
        if k > 1:
            assert pass_at_k(n, c, k) >= pass_at_k(n, c, k - 1)
            assert pass_hat_k(n, c, k) <= pass_hat_k(n, c, k - 1)


@given(st.lists(st.integers(1, 12).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))),
                min_size=1, max_size=8))  # fmt: skip
def test_group_values_keep_the_order_and_the_mean(counts: list[tuple[int, int]]) -> None:
    """Over a group: pass^k <= pass@1 <= pass@k at every k every question reaches, pass@k is
    monotone there, and each value is the mean of the questions' values (as fractions)."""
    table = summarise(counts)
    low = min(n for n, _ in counts)
    at, hat = table["pass_at_k"], table["pass_hat_k"]
    for k in range(1, low + 1):
        assert hat[str(k)] <= at["1"] + 1e-12 and at["1"] <= at[str(k)] + 1e-12
        if k > 1:
            assert at[str(k)] >= at[str(k - 1)] - 1e-12
        exact = sum((pass_at_k(n, c, k) for n, c in counts), Fraction()) / len(counts)
        assert at[str(k)] == float(exact)
    assert set(at) == {str(k) for k in range(1, max(n for n, _ in counts) + 1)}


def test_a_question_with_fewer_trials_is_left_out_of_larger_k_and_counted() -> None:
    table = summarise([(5, 2), (3, 0)])
    assert table["questions"] == 2
    assert table["left_out"] == {"4": 1, "5": 1}
    # k = 2 averages both questions; k = 4 only the first
    assert table["pass_at_k"]["2"] == float((Fraction(7, 10) + 0) / 2)
    assert table["pass_at_k"]["4"] == 1.0


def test_consistency_is_the_share_of_the_most_common_choice() -> None:
    # 3 of 4 chose "a"; 2 of 2 chose 0; a question with no choice at all is not counted;
    # a trial with no choice is in the denominator (1 of 3)
    got = consistency([["a", "a", "b", "a"], [0, 0], [None, None], [1, None, None]])
    assert got == {"mean": float((Fraction(3, 4) + 1 + Fraction(1, 3)) / 3), "n": 3}
    assert consistency([[None]]) is None


# ----------------------------------------------------------------------------- aggregates
def _results(table: dict[tuple[str, str], list[Any]], key: str = "trajectory_match") -> list[Any]:
    out = []
    for (template, qid), values in table.items():
        for trial, value in enumerate(values):
            result = {"template_id": template, "question_id": qid, "status": "success"}
            result["trial"] = trial
            if value is not None:
                result[key] = value
                result["trajectory_alternative"] = 0 if value == 1 else None
            out.append(result)
    return out


def test_a_question_with_ten_trials_does_not_weigh_ten_times() -> None:
    """q1 has 10 trials all 1.0, q2 one trial of 0.0: the mean is (1 + 0) / 2, not 10 / 11;
    n counts questions, the sample counts count trials."""
    results = _results({("t", "q1"): [1.0] * 10, ("t", "q2"): [0.0]}, key="steps_score")
    micro = compute_aggregates(results)["micro"]
    assert micro["steps_score"]["mean"] == 0.5 and micro["steps_score"]["n"] == 2
    assert micro["number_of_success_samples"] == 11
    assert micro["trials"]["n_trials"] == {"min": 1, "max": 10}


def test_the_mean_over_trials_leaves_out_trials_without_a_value() -> None:
    results = _results({("t", "q1"): [1.0, None, 0.5]}, key="steps_score")
    block = compute_aggregates(results)["micro"]["steps_score"]
    assert block["mean"] == 0.75 and block["n"] == 1


def test_trials_block_per_template_and_overall() -> None:
    """trajectory_match passes at 1; a trial without a value (an error, say) fails; a question
    whose trials have no value at all is not counted."""
    table: dict[tuple[str, str], list[Any]] = {
        ("A", "a1"): [1, 1, 0, 0, 1],  # n 5, c 3
        ("A", "a2"): [0, 0, None],  # n 3, c 0
        ("B", "b1"): [1, 1, 1],  # n 3, c 3
        ("B", "b2"): [None, None],  # no value: left out of pass@k
    }
    aggregates = compute_aggregates(_results(table))
    a = aggregates["per_template"]["A"]["trials"]
    assert a["n_trials"] == {"min": 3, "max": 5} and a["questions"] == 2
    assert a["trajectory_match"]["threshold"] == 1.0
    assert a["trajectory_match"]["pass_at_k"]["1"] == float((Fraction(3, 5) + 0) / 2)
    assert a["trajectory_match"]["pass_hat_k"]["3"] == float(Fraction(1, 10) / 2)
    assert a["trajectory_match"]["left_out"] == {"4": 1, "5": 1}
    b = aggregates["per_template"]["B"]["trials"]["trajectory_match"]
    assert b["questions"] == 1 and b["pass_hat_k"] == {"1": 1.0, "2": 1.0, "3": 1.0}
    micro = aggregates["micro"]["trials"]["trajectory_match"]
    assert micro["questions"] == 3
    exact = (pass_at_k(5, 3, 2) + pass_at_k(3, 0, 2) + pass_at_k(3, 3, 2)) / 3
    assert micro["pass_at_k"]["2"] == float(exact)
    # consistency: a1 chose 0 in 3 of 5, a2 never (not counted), b1 3 of 3
    assert aggregates["micro"]["trials"]["trajectory_consistency"] == {
        "mean": float((Fraction(3, 5) + 1) / 2),
        "n": 2,
    }


def test_a_pass_threshold_adds_a_metric() -> None:
    results = _results({("t", "q1"): [0.9, 0.4, 0.7]}, key="answer_f1")
    trials = compute_aggregates(results, pass_thresholds={"answer_f1": 0.7})["micro"]["trials"]
    assert trials["answer_f1"]["threshold"] == 0.7
    assert trials["answer_f1"]["pass_at_k"]["1"] == float(Fraction(2, 3))
    assert "trajectory_match" not in trials
    plain = compute_aggregates(results)["micro"]["trials"]
    assert "answer_f1" not in plain


@pytest.mark.parametrize("bad", [{"answer_f1": "high"}, {"answer_f1": float("nan")}, {3: 0.5}])
def test_a_bad_pass_threshold_is_a_clear_error(bad: Any) -> None:
    with pytest.raises(QaEvalError, match="pass threshold"):
        compute_aggregates([], pass_thresholds=bad)


def test_no_trials_no_block() -> None:
    results = [{"template_id": "t", "question_id": "q", "status": "success", "steps_score": 1}]
    aggregates = compute_aggregates(results)
    assert "trials" not in aggregates["micro"]
    assert aggregates["micro"]["steps_score"]["n"] == 1


def test_aggregates_with_trials_validate_and_graphrag_keys_drop_them() -> None:
    table: dict[tuple[str, str], list[Any]] = {("A", "a1"): [1, 0, 1], ("A", "a2"): [0.5, 1]}
    results = _results(table)
    for result in results:
        result["question_type"] = "lookup"
        result["steps_score"] = 1.0
    aggregates = compute_aggregates(results, pass_thresholds={"steps_score": 0.5})
    assert "trials" in aggregates["per_tag"]["question_type"]["lookup"]
    validator = jsonschema.Draft202012Validator(load_schema("aggregates"))
    assert [e.message for e in validator.iter_errors(json.loads(json.dumps(aggregates)))] == []
    broken = json.loads(json.dumps(aggregates))
    broken["micro"]["trials"]["steps_score"]["pass_at_k"]["0"] = 2
    assert len(list(validator.iter_errors(broken))) >= 1
    original = compute_aggregates(results, keys="graphrag-eval")
    assert "trials" not in json.dumps(original)
    assert [e.message for e in validator.iter_errors(json.loads(json.dumps(original)))] == []
