"""qa_eval.testing.assert_scores: thresholds on micro and per-template means, readable failures."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from qa_eval import compute_aggregates, read_reference, read_responses, run_evaluation, write_data
from qa_eval.testing import assert_scores, check_scores

DEMO = Path(__file__).resolve().parent.parent / "examples" / "powergrid"


@pytest.fixture(scope="module")
def flawed() -> list[dict[str, Any]]:
    results = run_evaluation(
        read_reference(DEMO / "reference.yaml"),
        read_responses(DEMO / "responses-flawed.jsonl"),
    )
    return list(results)


def test_failure_lists_the_failing_metrics_and_the_worst_questions(
    flawed: list[dict[str, Any]],
) -> None:
    with pytest.raises(AssertionError) as caught:
        assert_scores(flawed, steps_score=0.9, answer_f1=0.7, total_tokens=5000)
    message = str(caught.value)
    lines = message.splitlines()
    assert lines[0] == "2 of 3 score checks failed (11 questions, 1 error response):"
    assert lines[1] == "  steps_score: micro mean 0.3409 < 0.9 (n = 11)"
    assert lines[2] == "    worst questions:"
    assert lines[3].startswith(  # the reason of the step that was compared, not "not evaluated"
        "      steps_score = 0: question 'transformers-oslo' "
        "(template 'transformers_at_substation_SUBSTATION'); actual step sparql_query [1] (id "
        "call_102): 1 row missing"
    )
    assert lines[4].endswith(
        "question 'transformers-kristiansand' (template 'transformers_at_substation_SUBSTATION'); "
        "error response: Agent stopped: maximum number of iterations (25) reached"
    )
    assert len([line for line in lines if line.startswith("      steps_score = 0:")]) == 5
    assert lines[8] == (
        "  answer_f1: micro: no question has a value (not computed in this run, or a misspelt "
        "metric name)"
    )
    assert len(lines) == 9
    assert "total_tokens" not in message  # 3141 on average: below its maximum, passed


def test_passing_checks_are_returned(flawed: list[dict[str, Any]]) -> None:
    checks = assert_scores(flawed, steps_score=0.34, total_tokens=3200)
    assert [(c.metric, c.passed, c.lower_is_better) for c in checks] == [
        ("steps_score", True, False),
        ("total_tokens", True, True),
    ]
    micro = compute_aggregates(flawed)["micro"]
    assert checks[0].mean == pytest.approx(micro["steps_score"]["mean"])
    assert (checks[0].n, checks[1].n) == (11, 10)
    assert checks[1].describe() == "total_tokens: micro mean 3141 <= 3200 (n = 10)"


@pytest.mark.parametrize(
    ("threshold", "passed"), [(0.3409, True), (0.341, False), (0.0, True), (1.0, False)]
)
def test_a_threshold_is_a_minimum_of_the_micro_mean(
    flawed: list[dict[str, Any]], threshold: float, passed: bool
) -> None:
    (check,) = check_scores(flawed, steps_score=threshold)
    assert check.passed is passed
    if passed:
        assert_scores(flawed, steps_score=threshold)
    else:
        with pytest.raises(AssertionError):
            assert_scores(flawed, steps_score=threshold)


def test_lower_is_better_metrics_take_a_maximum(flawed: list[dict[str, Any]]) -> None:
    with pytest.raises(AssertionError) as caught:
        assert_scores(flawed, elapsed_sec=2.0)
    message = str(caught.value)
    assert "elapsed_sec: micro mean 2.48 > 2 (n = 10)" in message
    worst = [line for line in message.splitlines() if line.startswith("      ")]
    values = [float(line.split("=")[1].split(":")[0]) for line in worst]
    assert values == sorted(values, reverse=True) and all(v > 2.0 for v in values)


def test_per_template_and_template_thresholds(flawed: list[dict[str, Any]]) -> None:
    checks = check_scores(flawed, steps_score=0.3, per_template=True)
    scopes = {c.scope: c.passed for c in checks}
    assert scopes == {
        "micro": True,
        "template 'transformers_at_substation_SUBSTATION'": False,  # 0.25
        "template 'substations_directly_connected_SUBSTATION1_SUBSTATION2'": True,
        "template 'longest_lines_of_operator_OPERATOR'": True,
        "template 'transformer_capacity_in_region_REGION'": True,
    }
    with pytest.raises(AssertionError) as caught:
        assert_scores(flawed, steps_score=0.3, per_template=True)
    message = str(caught.value)
    assert (
        "steps_score: template 'transformers_at_substation_SUBSTATION' mean 0.25 < 0.3 (n = 3)"
        in message
    )
    oslo_line = "      steps_score = 0: question 'transformers-oslo'; actual step sparql_query"
    assert oslo_line in message

    only = {"longest_lines_of_operator_OPERATOR": {"steps_score": 0.5}}
    assert [c.scope for c in assert_scores(flawed, templates=only)] == [
        "template 'longest_lines_of_operator_OPERATOR'"
    ]
    with pytest.raises(AssertionError, match=r"mean 0\.5 < 0\.6"):
        assert_scores(
            flawed, templates={"longest_lines_of_operator_OPERATOR": {"steps_score": 0.6}}
        )
    with pytest.raises(ValueError, match="no result has template_id 'nope'"):
        assert_scores(flawed, templates={"nope": {"steps_score": 0.5}})


def test_worst_questions_say_why_a_step_did_not_match(flawed: list[dict[str, Any]]) -> None:
    results = copy.deepcopy(flawed)
    oslo = next(r for r in results if r["question_id"] == "transformers-oslo")
    oslo["reference_steps"][1][0]["mismatch"] = '1 row missing: name="OSLO T3"'
    halden = next(r for r in results if r["question_id"] == "connected-oslo-halden")
    halden["step_errors"] = ["actual_steps[0]: output is not JSON"]
    for group in halden["reference_steps"]:  # as in results written before 'mismatch' existed
        for step in group:
            step.pop("mismatch", None)
    with pytest.raises(AssertionError) as caught:
        assert_scores(results, steps_score=0.9)
    message = str(caught.value)
    assert "question 'transformers-oslo' (template 'transformers_at_substation_SUBSTATION'); " \
        '1 row missing: name="OSLO T3"' in message  # fmt: skip
    assert "question 'connected-oslo-halden'" in message
    assert "; actual_steps[0]: output is not JSON" in message
    assert "worst questions" not in str(_raised(results, steps_score=0.9, worst=0))


def _raised(results: Any, **kwargs: Any) -> AssertionError:
    with pytest.raises(AssertionError) as caught:
        assert_scores(results, **kwargs)
    return caught.value


def test_custom_metrics_and_names_that_are_not_identifiers() -> None:
    results = [
        {"template_id": "t", "question_id": f"q{i}", "status": "success", "my-score": v}
        for i, v in enumerate([1.0, 0.5, None, "n/a", 0.0])
    ]
    (check,) = assert_scores(results, {"my-score": 0.5})  # mean of 1, 0.5, 0: 0.5
    assert (check.mean, check.n) == (0.5, 3)
    with pytest.raises(AssertionError, match=r"my-score: micro mean 0\.5 < 0\.51 \(n = 3\)"):
        assert_scores(results, {"my-score": 0.51})


def test_a_results_file_can_be_given(tmp_path: Path, flawed: list[dict[str, Any]]) -> None:
    path = tmp_path / "results.jsonl"
    write_data(path, flawed)
    assert assert_scores(path, steps_score=0.34)[0].n == 11
    assert assert_scores(str(path), steps_score=0.34)[0].passed


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({}, ValueError, "give at least one threshold"),
        ({"steps_score": "high"}, TypeError, "steps_score: the threshold must be a number"),
        ({"steps_score": True}, TypeError, "must be a number"),
        ({"steps_score": float("nan")}, ValueError, "finite"),
        ({"templates": {"t": {"steps_score": None}}}, TypeError, r"templates\['t'\]\.steps_score"),
    ],
)
def test_bad_thresholds(
    flawed: list[dict[str, Any]], kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        assert_scores(flawed, **kwargs)


def test_not_results() -> None:
    with pytest.raises(TypeError, match=r"result \[1\] must be a mapping"):
        assert_scores([{"question_id": "q"}, "oops"], steps_score=0.5)


def test_assert_test_passes_silently_and_prints_each_failed_metric() -> None:
    from qa_eval.metrics.collections import MetricResult
    from qa_eval.testing import assert_test

    good = MetricResult(0.9, "3 of 3 statements supported", threshold=0.7, name="faithfulness")
    assert_test(good)
    assert_test([good, MetricResult(0.2, "no threshold", name="other")])
    bad = MetricResult(0.25, "1 of 4 statements supported", threshold=0.7, name="faithfulness")
    broken = MetricResult.failed(ValueError("reference is missing"), "context_recall", 0.5)
    with pytest.raises(AssertionError) as caught:
        assert_test({"faithfulness": bad, "context_recall": broken, "ok": good})
    assert str(caught.value).splitlines() == [
        "2 of 3 metrics failed:",
        "  faithfulness: 0.25 < threshold 0.7; reason: 1 of 4 statements supported",
        "  context_recall: not scored: reference is missing",
    ]
    assert_test({"faithfulness": bad, "ok": good}, metrics={"ok": 0.7})  # only those named


def test_assert_test_reads_a_result_dict_with_the_thresholds_given() -> None:
    from qa_eval.metrics.collections import DeterministicMetric
    from qa_eval.testing import assert_test

    row = {"question_id": "q", "exact": 0.0, "exact_reason": "exact = 0", "bleu": 0.8}
    assert_test(row, {"bleu": 0.5})
    exact = DeterministicMetric("exact", lambda reference, response: 0.0, threshold=1.0)
    with pytest.raises(AssertionError, match=r"exact: 0 < threshold 1; reason: exact = 0"):
        assert_test(row, [exact])
    with pytest.raises(AssertionError, match="missing: not scored: no value"):
        assert_test(row, {"missing": 0.5})
    with pytest.raises(TypeError, match="metrics="):
        assert_test(row)


def test_assert_test_reads_the_run_key_of_a_face_whose_name_is_another_run_key() -> None:
    """ContextPrecision is named ``context_precision``, but a run holds its value (average
    precision) as ``context_precision_ap``; ``context_precision`` there is the share of useful
    chunks, another metric. AnswerRelevancy's value is ``answer_relevance``."""
    pytest.importorskip("openai")
    from openai import AsyncOpenAI

    from qa_eval.embeddings import embedding_factory
    from qa_eval.llms import llm_factory
    from qa_eval.metrics.collections import AnswerRelevancy, ContextPrecision
    from qa_eval.testing import assert_test

    client = AsyncOpenAI(api_key="x", base_url="http://127.0.0.1:9")  # never called
    llm = llm_factory("gpt-4o-mini", client=client)
    precision = ContextPrecision(llm=llm, threshold=0.5)
    row = {
        "question_id": "q",
        "context_precision": 1.0,  # 2 of 2 chunks useful...
        "context_precision_ap": 0.25,  # ...but ranked last: the class's value
        "context_precision_reason": "the useful chunks come last",
    }
    with pytest.raises(AssertionError) as caught:
        assert_test(row, [precision])
    assert "context_precision_ap: 0.25 < threshold 0.5" in str(caught.value)
    assert_test({**row, "context_precision_ap": 0.75}, [precision])
    # scored row by row (score_rows without a run): the value is under the object's name
    assert_test({"question_id": "q", "context_precision": 0.75}, [precision])
    with pytest.raises(AssertionError, match=r"context_precision: 0\.25 < threshold 0\.5"):
        assert_test({"question_id": "q", "context_precision": 0.25}, [precision])
    embeddings = embedding_factory("openai", client=client)
    relevancy = AnswerRelevancy(llm=llm, embeddings=embeddings, threshold=0.5)
    with pytest.raises(AssertionError, match=r"answer_relevance: 0\.1 < threshold 0\.5"):
        assert_test({"question_id": "q", "answer_relevance": 0.1}, [relevancy])
