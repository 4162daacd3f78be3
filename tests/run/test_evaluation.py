"""The public API: input shapes, no mutation, event loops, golden results, and the CLI."""

from __future__ import annotations

import asyncio
import copy
import json
import math
from pathlib import Path

import pytest
import yaml

import qa_eval
from qa_eval import arun_evaluation, compute_aggregates, run_evaluation
from qa_eval.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
DATA = Path(__file__).resolve().parents[1] / "data"


def load_examples() -> tuple[list, list]:
    reference = qa_eval.read_reference(EXAMPLES / "reference.yaml")
    responses = list(qa_eval.read_responses(EXAMPLES / "responses.jsonl"))
    return reference, responses


def test_inputs_are_not_mutated() -> None:
    reference, responses = load_examples()
    before = (copy.deepcopy(reference), copy.deepcopy(responses))
    results = run_evaluation(reference, responses)
    assert (reference, responses) == before
    assert any(
        "matches" in step for r in results for g in r.get("reference_steps", []) for step in g
    )


def test_results_used_as_the_reference_give_the_same_results() -> None:
    # Results carry "matches" in their reference steps; evaluated again as a reference, the
    # stale annotations are dropped and the matches found anew.
    reference, responses = load_examples()
    first = run_evaluation(reference, responses)
    by_id = {r["question_id"]: r for r in first}
    again = copy.deepcopy(reference)
    for template in again:
        for question in template["questions"]:
            if "reference_steps" in question:
                question["reference_steps"] = copy.deepcopy(
                    by_id[question["id"]]["reference_steps"]
                )
                for group in question["reference_steps"]:
                    for step in group:
                        step["matches"] = "stale"
    second = run_evaluation(again, responses)
    assert second == first


def test_response_shapes_give_the_same_results(tmp_path: Path) -> None:
    reference, responses = load_examples()
    as_list = run_evaluation(reference, responses)
    as_dict = run_evaluation(reference, {r["question_id"]: r for r in responses})
    keyed = {
        r["question_id"]: {k: v for k, v in r.items() if k != "question_id"} for r in responses
    }
    as_keys = run_evaluation(reference, keyed)
    assert as_list == as_dict == as_keys


def test_async_and_inside_a_running_loop() -> None:
    reference, responses = load_examples()
    expected = run_evaluation(reference, responses)

    async def inside() -> tuple[list, list]:
        # The sync API called from a coroutine (as in Jupyter) must not fail.
        return run_evaluation(reference, responses), await arun_evaluation(reference, responses)

    sync_in_loop, awaited = asyncio.run(inside())
    assert sync_in_loop == expected == awaited
    # Outside a loop a judge-free run goes without one (issue 36): the same signature too.
    assert sync_in_loop.signature == expected.signature == awaited.signature


def test_missing_response_is_an_error_result() -> None:
    reference, responses = load_examples()
    results = run_evaluation(reference, responses[1:])
    first = results[0]
    assert first["status"] == "error" and first["error"] == "no response for this question"
    assert first["steps_score"] == 0.0


def test_golden_results_and_aggregates() -> None:
    """The bundled examples against checked-in expected outputs."""
    reference, responses = load_examples()
    results = run_evaluation(reference, responses)
    aggregates = compute_aggregates(results)
    expected = yaml.safe_load((DATA / "examples-expected.yaml").read_text(encoding="utf-8"))
    assert results == expected["results"]
    assert aggregates == expected["aggregates"]


def test_example_scores_are_the_hand_computed_ones() -> None:
    reference, responses = load_examples()
    scores = {r["question_id"]: r["steps_score"] for r in run_evaluation(reference, responses)}
    assert scores == {
        "transformers-oslo": 1.0,  # extra column, renamed and reordered columns and rows
        "transformers-bergen": 1.0,  # failed first query ignored, second one matches
        # The last group's query misses a row, so matching stops before the IRI group.
        "transformers-trondheim": 0.0,
        "voltage-oslo-bergen": 1.0,  # 420 (integer) equals 420.0 (decimal)
        "voltage-bergen-trondheim": 0.0,  # an error response
        "docs-oslo": 0.5,  # recall@2 of [doc:1, doc:2] in [doc:1, doc:0]
    }


# Aggregates.
def _result(template: str, **values: object) -> dict:
    return {"template_id": template, "status": "success", **values}


def test_aggregates_ignore_nan_and_say_n() -> None:
    results = [
        _result("a", answer_f1=1.0, steps_score=1.0, input_tokens=10),
        _result("a", answer_f1=float("nan"), steps_score=0.0, input_tokens=20),
        _result("b", answer_f1=0.5, steps_score=0.5),
        {"template_id": "b", "status": "error", "error": "x", "steps_score": 0.0},
    ]
    agg = compute_aggregates(results)
    a, b = agg["per_template"]["a"], agg["per_template"]["b"]
    assert a["answer_f1"] == {
        "sum": 1.0,
        "mean": 1.0,
        "median": 1.0,
        "min": 1.0,
        "max": 1.0,
        "n": 1,
        "skipped": 1,
    }
    assert a["input_tokens"]["mean"] == 15 and a["input_tokens"]["n"] == 2
    assert b["input_tokens"] == {"sum": 0, "mean": 0, "median": 0, "min": 0, "max": 0, "n": 0}
    assert (b["number_of_error_samples"], b["number_of_success_samples"]) == (1, 1)
    assert b["steps_score"]["mean"] == 0.25
    assert agg["micro"]["answer_f1"]["mean"] == 0.75 and agg["micro"]["answer_f1"]["n"] == 2
    assert agg["macro"]["answer_f1"] == {"mean": 0.75, "n": 2}
    assert agg["macro"]["steps_score"]["mean"] == pytest.approx((0.5 + 0.25) / 2)
    assert not any(
        isinstance(v, float) and math.isnan(v)
        for s in agg["micro"].values()
        if isinstance(s, dict)
        for v in s.values()
    )


def test_aggregate_step_counters() -> None:
    empty = json.dumps({"head": {"vars": ["x"]}, "results": {"bindings": []}})
    text_with_bindings = json.dumps(
        {
            "head": {"vars": ["x"]},
            "results": {"bindings": [{"x": {"type": "literal", "value": '"bindings": []'}}]},
        }
    )
    steps = [
        {"name": "sparql_query", "status": "success", "output": empty},
        {"name": "sparql_query", "status": "error", "error": "boom"},
        {"name": "sparql_query", "status": "success", "output": text_with_bindings},
        {"name": "search", "status": "success", "output": "plain text"},
    ]
    agg = compute_aggregates([_result("t", actual_steps=steps)])
    assert agg["per_template"]["t"]["steps"] == {
        "total": {"sparql_query": 3, "search": 1},
        "once_per_sample": {"sparql_query": 1, "search": 1},
        "empty_results": {"sparql_query": 1},
        "errors": {"sparql_query": 1},
    }
    assert agg["micro"]["steps"] == agg["per_template"]["t"]["steps"]


def test_retrieval_step_metrics_are_aggregated() -> None:
    steps = [
        {"name": "retrieval", "status": "success", "output": "[]", "retrieval_context_recall": 0.5}
    ]
    agg = compute_aggregates([_result("t", actual_steps=steps)])
    assert agg["per_template"]["t"]["retrieval_context_recall"]["mean"] == 0.5
    assert agg["macro"]["retrieval_context_recall"]["mean"] == 0.5


# CLI.
@pytest.mark.parametrize("suffix", [".yaml", ".json", ".jsonl"])
def test_cli_evaluate_then_aggregate(
    tmp_path: Path, suffix: str, capsys: pytest.CaptureFixture
) -> None:
    results_file = tmp_path / f"results{suffix}"
    aggregates_file = tmp_path / "aggregates.yaml"
    code = main(
        [
            "evaluate",
            str(EXAMPLES / "reference.yaml"),
            str(EXAMPLES / "responses.jsonl"),
            "-o",
            str(results_file),
            "--aggregates",
            str(aggregates_file),
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "transformers_in_substation" in out and "all questions (micro)" in out
    written = qa_eval.read_results(results_file)
    reference, responses = load_examples()
    assert written == json.loads(json.dumps(run_evaluation(reference, responses)))
    assert main(["aggregate", str(results_file), "-o", str(tmp_path / "again.json")]) == 0
    again = json.loads((tmp_path / "again.json").read_text(encoding="utf-8"))
    first = yaml.safe_load(aggregates_file.read_text(encoding="utf-8"))
    assert again["micro"] == first["micro"]


def test_cli_rejects_unknown_output_format_before_running(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    code = main(
        [
            "evaluate",
            str(EXAMPLES / "reference.yaml"),
            str(EXAMPLES / "responses.jsonl"),
            "-o",
            str(tmp_path / "results.txt"),
        ]
    )
    assert code == 2
    assert "unknown output format" in capsys.readouterr().err


def test_cli_unexpected_failure_exits_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr("qa_eval.run.files.compute_aggregates", boom)
    code = main(["evaluate", str(EXAMPLES / "reference.yaml"), str(EXAMPLES / "responses.jsonl")])
    assert code == 1
    err = capsys.readouterr().err
    assert "unexpected error: RuntimeError: disk on fire" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("output", "empty"),
    [
        ('{"head": {"vars": ["x"]}, "results": {"bindings": []}}', True),
        ('{"head":{"vars":["x"]},"results":{"bindings" : [ ]}}', True),
        ('{"head": {"vars": ["bindings"]}, "results": {"bindings": []}}', True),
        (
            '{"head": {"vars": ["bindings"]}, "results": {"bindings": [{"bindings": '
            '{"type": "literal", "value": "x"}}]}}',
            False,
        ),
        (
            '{"head": {"vars": ["x"]}, "results": {"bindings": [{"x": {"type": "literal", '
            '"value": "\\"bindings\\": []"}}]}}',
            False,
        ),
        ('{"boolean": true}', False),
        ('[{"id": "d1", "text": "bindings"}]', False),
        ('{"bindings": []}', False),  # not a SPARQL result: no 'results'
        ("not json", False),
        (None, False),
    ],
)
def test_empty_result_detection(output: object, empty: bool) -> None:
    from qa_eval.aggregate import empty_result

    assert empty_result(output) is empty


def test_the_garbage_collector_is_left_as_it_was() -> None:
    import gc

    reference, responses = load_examples()
    run_evaluation(reference, responses)
    assert gc.get_freeze_count() == 0 and gc.isenabled()
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        run_evaluation(reference, responses)
        assert gc.get_freeze_count() == frozen  # the caller's freeze is not undone
    finally:
        gc.unfreeze()


def test_the_interpreters_own_frozen_objects_are_not_taken_for_the_callers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Python 3.12 starts with a few hundred objects frozen: a run still keeps its inputs out of
    the collector's scans (freezes them, and gives everything back as it ends)."""
    import gc

    from qa_eval.run import execute

    reference, responses = load_examples()
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert frozen > 0
        monkeypatch.setattr(execute, "_INTERPRETER_FROZEN", frozen)
        run_evaluation(reference, responses)
        assert gc.get_freeze_count() == 0  # frozen by the run, and all given back
    finally:
        gc.unfreeze()


def test_python_dash_m_runs_the_cli(tmp_path: Path) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "qa_eval",
            "evaluate",
            str(EXAMPLES / "reference.yaml"),
            str(EXAMPLES / "responses.jsonl"),
            "-q",
            "-o",
            str(tmp_path / "r.json"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert len(json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))) == 6
