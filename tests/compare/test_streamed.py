"""compare_files: two JSON Lines results files compared as columns give compare_runs' output of the
runs read whole, bit for bit, and its errors; ``qa-eval compare`` takes that path for JSON Lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qa_eval.cli import main
from qa_eval.cli.runfiles import read_results_file
from qa_eval.compare.columns import scan_results
from qa_eval.compare.runs import compare_runs
from qa_eval.compare.streamed import compare_files
from qa_eval.errors import QaEvalError

_VALUES = st.one_of(
    st.none(),
    st.sampled_from([0, 1, 0.0, -0.0, 0.5, 1.0, 2, 1e300, -3.25]),
    st.floats(-1e6, 1e6, allow_nan=False),
    st.integers(-(10**20), 10**20),
    st.sampled_from(["n/a", True, [1], {"x": 1}]),
)


@st.composite
def _result(draw: Any, qid: Any) -> dict[str, Any]:
    result: dict[str, Any] = {
        "template_id": draw(st.sampled_from(["t1", "t2", 3, None])),
        "question_id": qid,
    }
    status = draw(st.sampled_from(["success", "error", None, "missing"]))
    if status == "missing":
        if draw(st.booleans()):
            result["error"] = "boom"
    elif status is not None:
        result["status"] = status
    for key in ("answer_f1", "steps_score", "elapsed_sec", "my_metric"):
        if draw(st.booleans()):
            result[key] = draw(_VALUES)
    if draw(st.booleans()):
        result["actual_steps"] = [
            {"name": draw(st.sampled_from(["retrieval", "sparql_query"])), **extra}
            for extra in draw(
                st.lists(
                    st.fixed_dictionaries({}, optional={"retrieval_ndcg": _VALUES}), max_size=3
                )
            )
        ]
    return result


@st.composite
def _run(draw: Any) -> list[dict[str, Any]]:
    ids = draw(st.lists(st.sampled_from(["q1", "q2", "q3", 4, 5, "6", "q7"]), max_size=7))
    if draw(st.booleans()):
        ids = list(dict.fromkeys(ids))  # no repeated id: paired by question_id alone
    return [draw(_result(qid)) for qid in ids]


def _write(path: Path, results: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in results))  # ints beyond 64 bits too
    return path


def _outcome(call: Any) -> Any:
    try:
        return orjson.dumps(call())
    except ValueError as e:
        return type(e).__name__, str(e)


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    a=_run(),
    b=_run(),
    errors=st.sampled_from(["fail", "exclude", "include"]),
    metrics=st.sampled_from([None, ["answer_f1"], ["steps_score", "answer_f1"], ["nope"]]),
    lower=st.sampled_from([(), ("answer_f1",)]),
)
def test_columns_give_compare_runs_bit_for_bit(
    tmp_path: Path, a: list, b: list, errors: str, metrics: Any, lower: tuple
) -> None:
    path_a, path_b = _write(tmp_path / "a.jsonl", a), _write(tmp_path / "b.jsonl", b)
    options: dict[str, Any] = {
        "metrics": metrics,
        "errors": errors,
        "lower_better": lower,
        "resamples": 50,
        "labels": ("x", "y"),
    }

    def streamed() -> Any:
        scans = scan_results(path_a, "compare"), scan_results(path_b, "compare")
        return compare_files(*scans, **options)

    def whole() -> Any:  # read as qa-eval compare reads a file that is not JSON Lines
        runs = [read_results_file(str(path), "compare") for path in (path_a, path_b)]
        return compare_runs(*runs, **options)

    assert _outcome(streamed) == _outcome(whole)


def _mix(count: int, shift: float) -> list[dict[str, Any]]:
    return [
        {
            "template_id": f"t{i % 7}",
            "question_id": f"q{i}",
            "status": "error" if i % 11 == int(shift * 10) else "success",
            "answer_f1": ((i * 37) % 100) / 100 + (shift if i % 3 else 0.0),
            "elapsed_sec": 1.0 + (i % 5) * shift,
        }
        for i in range(count)
    ]


def test_many_pairs_use_the_monte_carlo_test_and_give_the_same_bytes(tmp_path: Path) -> None:
    a, b = _mix(400, 0.0), _mix(380, 0.3)[::-1]
    path_a, path_b = _write(tmp_path / "a.jsonl", a), _write(tmp_path / "b.jsonl", b)
    got = compare_files(path_a, path_b, resamples=500, seed=3)  # paths: scanned first
    assert orjson.dumps(got) == orjson.dumps(compare_runs(a, b, resamples=500, seed=3))
    assert got["questions"]["paired"] == 380 and got["metrics"][0]["overall"]["n"] > 16


def test_a_run_with_trials_is_refused_by_the_columns(tmp_path: Path) -> None:
    trials = [{"question_id": "q1", "template_id": "t", "trial": 1, "answer_f1": 1.0}]
    path = _write(tmp_path / "a.jsonl", trials)
    scanned = scan_results(path, "compare")
    assert scanned.whole
    with pytest.raises(ValueError, match="read whole"):
        compare_files(scanned, scanned)


@pytest.mark.parametrize("trials", [False, True])
def test_cli_compare_of_json_lines_prints_what_compare_runs_gives(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], trials: bool
) -> None:
    a, b = _mix(60, 0.0), _mix(60, 0.2)
    if trials:  # read whole, as before
        for result in a:
            result["trial"] = 1
    path_a, path_b = _write(tmp_path / "a.jsonl", a), _write(tmp_path / "b.jsonl", b)
    assert main(["compare", str(path_a), str(path_b), "--format", "json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    expected = compare_runs(a, b, labels=("a", "b"))
    assert printed == json.loads(orjson.dumps(expected))


def test_cli_compare_of_json_lines_refuses_as_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _mix(5, 0.0)
    path_a = _write(tmp_path / "a.jsonl", a)
    path_b = _write(tmp_path / "b.jsonl", [*a, a[0]])
    assert main(["compare", str(path_a), str(path_b)]) == 2
    assert "run b: template 't0' question 'q0' appears more than once" in capsys.readouterr().err
    path_c = _write(tmp_path / "c.jsonl", [{"question_id": [1]}])
    assert main(["compare", str(path_a), str(path_c)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "c.jsonl" in err and "question_id" in err
    assert main(["compare", str(path_a), str(path_a), "--fail-on-regression", "nope:0"]) == 2
    assert "--fail-on-regression nope: no such metric" in capsys.readouterr().err
    with pytest.raises(QaEvalError):
        from qa_eval.cli.runfiles import compared_metrics

        compared_metrics(None, lambda: ["answer_f1"], [("nope", 0.0)])
