"""``keys="graphrag-eval"`` on graphrag-eval's own test data: results and aggregates equal its
expected files with ``==`` (tests/data/graphrag-eval, see the NOTICE there), through the API,
the async and streaming forms, ``evaluate_files`` and the command line; without the option the
only differences are the keys docs/compatibility.md lists."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from qa_eval import arun_evaluation, compute_aggregates, iter_evaluation, run_evaluation
from qa_eval.cli import main
from qa_eval.errors import QaEvalError
from qa_eval.run.files import evaluate_files

DATA = Path(__file__).resolve().parents[1] / "data" / "graphrag-eval"

# (reference, responses, expected results, expected aggregates or None), as graphrag-eval's
# tests/test_evaluation.py pairs them
CASES = [
    ("reference_1", "actual_responses_1", "evaluation_1", "evaluation_summary_1"),
    ("reference_1", "actual_responses_2", "evaluation_2", "evaluation_summary_2"),
    ("reference_2", "actual_responses_3", "evaluation_4", None),
    ("reference_3", "actual_responses_3", "evaluation_5", None),
    ("reference_4", "actual_responses_3", "evaluation_6", None),
]
IDS = [case[2] for case in CASES]


def _yaml(name: str) -> Any:
    return yaml.safe_load((DATA / f"{name}.yaml").read_text(encoding="utf-8"))


def _responses(name: str) -> dict[str, Any]:
    """Responses keyed by question id, as the original's tests read them."""
    lines = (DATA / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    return {r["question_id"]: r for r in map(json.loads, filter(None, lines))}


@pytest.mark.parametrize(("reference", "responses", "expected", "summary"), CASES, ids=IDS)
def test_results_and_aggregates_equal_the_original_expected_files(
    reference: str, responses: str, expected: str, summary: str | None
) -> None:
    results = run_evaluation(_yaml(reference), _responses(responses), keys="graphrag-eval")
    assert results == _yaml(expected)
    if summary is not None:
        assert compute_aggregates(results, keys="graphrag-eval") == _yaml(summary)


def test_async_and_streaming_forms_give_the_same_keys() -> None:
    reference, responses = _yaml("reference_1"), _responses("actual_responses_1")
    expected = _yaml("evaluation_1")
    done = asyncio.run(arun_evaluation(reference, responses, keys="graphrag-eval"))
    assert done == expected
    with iter_evaluation(reference, responses, keys="graphrag-eval") as stream:
        assert list(stream) == expected
    assert stream.signature is not None and stream.signature["options"]["keys"] == "graphrag-eval"


def test_the_projection_does_not_change_the_callers_data() -> None:
    reference, responses = _yaml("reference_1"), _responses("actual_responses_1")
    before = json.dumps([reference, responses], sort_keys=True)
    full = run_evaluation(reference, responses)
    run_evaluation(reference, responses, keys="graphrag-eval")
    compute_aggregates(full, keys="graphrag-eval")
    assert json.dumps([reference, responses], sort_keys=True) == before
    assert any("mismatch" in s for r in full for g in r["reference_steps"] for s in g)
    assert all("n" in block for block in compute_aggregates(full)["macro"].values())


def _paths(value: Any, path: str = "") -> set[str]:
    """Every key path of a nested value; list positions are left out (``a[].b``)."""
    if isinstance(value, dict):
        out = set()
        for key, item in value.items():
            here = f"{path}/{key}"
            out.add(here)
            out |= _paths(item, here)
        return out
    if isinstance(value, list):
        return set().union(*(_paths(item, path + "[]") for item in value)) if value else set()
    return set()


def _documented() -> set[str]:
    from compat_doc import documented_keys

    return set(documented_keys())


@pytest.mark.parametrize(("reference", "responses", "expected", "summary"), CASES, ids=IDS)
def test_by_default_only_documented_keys_are_added(
    reference: str, responses: str, expected: str, summary: str | None
) -> None:
    results = run_evaluation(_yaml(reference), _responses(responses))
    outputs = [(list(results), _yaml(expected))]
    if summary is not None:
        outputs.append((compute_aggregates(results), _yaml(summary)))
    documented = _documented()
    for ours, theirs in outputs:
        added = _paths(ours) - _paths(theirs)
        assert {p.rsplit("/", 1)[1] for p in added} <= documented, sorted(added)
        assert _paths(theirs) <= _paths(ours)  # nothing of 6.6.1's is missing
    # and the values of the keys both write are the same
    projected = run_evaluation(_yaml(reference), _responses(responses), keys="graphrag-eval")
    assert projected == _yaml(expected)


def test_evaluate_files_writes_the_original_keys(tmp_path: Path) -> None:
    out, agg = tmp_path / "results.yaml", tmp_path / "aggregates.yaml"
    run = evaluate_files(
        DATA / "reference_1.yaml",
        DATA / "actual_responses_1.jsonl",
        output=out,
        aggregates=agg,
        keys="graphrag-eval",
        cache=False,
    )
    assert yaml.safe_load(out.read_text(encoding="utf-8")) == _yaml("evaluation_1")
    assert yaml.safe_load(agg.read_text(encoding="utf-8")) == _yaml("evaluation_summary_1")
    # the run itself keeps qa-eval's keys: the gates and the summary read them
    assert "n" in run.aggregates["micro"]["steps_score"]
    assert "signature" in run.aggregates


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_cli_keys_graphrag_eval(tmp_path: Path, suffix: str) -> None:
    out, agg = tmp_path / f"results{suffix}", tmp_path / "aggregates.yaml"
    args = ["evaluate", str(DATA / "reference_1.yaml"), str(DATA / "actual_responses_1.jsonl")]
    args += ["-o", str(out), "--aggregates", str(agg), "--keys", "graphrag-eval", "-q"]
    assert main([*args, "--no-cache"]) == 0
    text = out.read_text(encoding="utf-8")
    results = (
        [json.loads(line) for line in text.splitlines()] if suffix == ".jsonl" else json.loads(text)
    )
    assert results == _yaml("evaluation_1")
    assert yaml.safe_load(agg.read_text(encoding="utf-8")) == _yaml("evaluation_summary_1")
    assert not Path(f"{out}.partial.jsonl").exists()


def test_cli_aggregate_keys_graphrag_eval(tmp_path: Path) -> None:
    results = tmp_path / "results.json"
    evaluated = ["evaluate", str(DATA / "reference_1.yaml"), str(DATA / "actual_responses_2.jsonl")]
    assert main([*evaluated, "-o", str(results), "-q", "--no-cache"]) == 0
    agg = tmp_path / "aggregates.json"
    assert main(["aggregate", str(results), "-o", str(agg), "--keys", "graphrag-eval"]) == 0
    assert json.loads(agg.read_text(encoding="utf-8")) == _yaml("evaluation_summary_2")
    assert main(["aggregate", str(results), "-o", str(agg)]) == 0
    assert json.loads(agg.read_text(encoding="utf-8")) != _yaml("evaluation_summary_2")


def test_an_unknown_key_set_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(QaEvalError, match="keys must be one of 'qa-eval', 'graphrag-eval'"):
        run_evaluation(_yaml("reference_3"), _responses("actual_responses_3"), keys="6.6.1")
    with pytest.raises(QaEvalError, match="not 'ragas'"):
        compute_aggregates([], keys="ragas")
    with pytest.raises(QaEvalError, match="keys must be one of"):
        evaluate_files(DATA / "reference_3.yaml", DATA / "actual_responses_3.jsonl", keys="x")
    assert main(["evaluate", str(DATA / "reference_3.yaml"), "r.jsonl", "--keys", "ragas"]) == 2
    err = capsys.readouterr().err
    assert "argument --keys: invalid choice: 'ragas'" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
