"""compare_runs with repeated trials: each side's value per question is the mean over its trials
(errors as the errors mode says), the pairs are questions, and the test stays valid: checked by
simulation under the null with 3-10 trials per question."""

from __future__ import annotations

import math

import numpy as np
import pytest

from qa_eval.compare.runs import collapse_trials, compare_runs

ALPHA = 0.05


def _trials(qid: str, values: list[float | None], error: int | None = None) -> list[dict]:
    out = []
    for trial, value in enumerate(values):
        result: dict = {"template_id": "t", "question_id": qid, "trial": trial}
        result["status"] = "error" if trial == error else "success"
        if value is not None:
            result["score"] = value
        out.append(result)
    return out


def test_each_side_is_the_mean_over_its_trials() -> None:
    """A: q1 trials 1, 0, 1 (mean 2/3), q2 one trial 0; B: q1 0.5, 0.5 (mean 0.5), q2 1, 1, 1, 1.
    Deltas per question: -1/6 and +1; the trial counts do not weigh the questions."""
    a = [*_trials("q1", [1.0, 0.0, 1.0]), *_trials("q2", [0.0])]
    b = [*_trials("q1", [0.5, 0.5]), *_trials("q2", [1.0, 1.0, 1.0, 1.0])]
    comparison = compare_runs(a, b, metrics=["score"])
    row = comparison["metrics"][0]["overall"]
    assert comparison["questions"]["paired"] == 2
    assert row["n"] == 2
    assert row["mean_a"] == pytest.approx((2 / 3 + 0) / 2)
    assert row["mean_b"] == pytest.approx((0.5 + 1) / 2)
    assert row["delta"] == pytest.approx((-1 / 6 + 1) / 2)
    assert (row["wins"], row["losses"]) == (1, 1)
    # the metrics found by default are the same: trial is no metric
    assert [m["metric"] for m in compare_runs(a, b)["metrics"]] == ["score"]


@pytest.mark.parametrize(
    ("errors", "expected"), [("fail", (1.0 + 0.0 + 0.5) / 3), ("exclude", 0.75), ("include", 0.75)]
)
def test_an_error_trial_counts_as_the_errors_mode_says(errors: str, expected: float) -> None:
    """Trials 1.0, error (no value), 0.5: fail makes the error 0, exclude and include leave it
    out (it carries no value)."""
    (merged,) = collapse_trials(
        _trials("q", [1.0, None, 0.5], error=1), {"score": "higher"}, errors
    )  # type: ignore[arg-type]
    assert merged["score"] == pytest.approx(expected)
    assert merged["status"] == "success" and merged["trials"] == 3


def test_a_question_is_an_error_only_when_every_trial_is() -> None:
    run = [
        {"template_id": "t", "question_id": "q", "trial": t, "status": "error"} for t in range(2)
    ]
    (merged,) = collapse_trials(run, {"score": "higher"})
    assert merged["status"] == "error" and "score" not in merged


def test_a_run_without_trials_is_left_as_it_is() -> None:
    run = [{"template_id": "t", "question_id": "q", "score": 1.0}]
    assert collapse_trials(run, {"score": "higher"}) is run


def test_a_non_finite_trial_is_skipped_unless_another_has_a_value() -> None:
    (merged,) = collapse_trials(_trials("q", [math.inf, 0.5]), {"score": "higher"})
    assert merged["score"] == 0.5
    (alone,) = collapse_trials(_trials("q", [math.inf]), {"score": "higher"})
    assert math.isnan(alone["score"])


def _null_runs(rng: np.random.Generator, questions: int) -> tuple[list[dict], list[dict]]:
    """Two systems with the same distribution: per question a difficulty p, each trial passes
    with chance p; each system runs 3-10 trials per question (its own count)."""
    a: list[dict] = []
    b: list[dict] = []
    for q in range(questions):
        p = rng.uniform(0.1, 0.9)
        for run in (a, b):
            n = int(rng.integers(3, 11))
            for trial, passed in enumerate(rng.random(n) < p):
                run.append(
                    {
                        "template_id": "t",
                        "question_id": f"q{q}",
                        "trial": trial,
                        "status": "success",
                        "trajectory_match": float(passed),
                    }
                )
    return a, b


def test_false_positive_rate_under_the_null_with_trials_is_at_most_nominal() -> None:
    """200 repetitions of 20 questions: the rate of p < 0.05 stays within alpha plus two
    binomial standard errors (0.05 + 0.031)."""
    repetitions = 200
    rejected = 0
    for seed in range(repetitions):
        rng = np.random.default_rng(50_000 + seed)
        a, b = _null_runs(rng, 20)
        row = compare_runs(a, b, metrics=["trajectory_match"], resamples=499, seed=seed)
        overall = row["metrics"][0]["overall"]
        assert overall["n"] == 20
        rejected += overall["p_value"] < ALPHA
    rate = rejected / repetitions
    assert rate <= ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / repetitions), rate
