"""The judge-free run's shortcuts give what the long way gives: results kept in their places
without ``Pipeline.unscored`` (the long way runs with an ``on_result`` callback), and the C test
for a step's ``lost`` key (``run.question._any_lost``) answers as the step-by-step test."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from qa_eval import run_evaluation
from qa_eval.run.question import _any_lost

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "run.py"


def _dump(results: list[dict[str, Any]]) -> str:
    return json.dumps(results, default=repr)


def test_results_kept_directly_are_those_handed_on_one_by_one() -> None:
    spec = importlib.util.spec_from_file_location("qa_eval_benchmark_run", BENCHMARK)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    reference, responses = bench.failing_mix(200, templates=5)
    seen: list[dict[str, Any]] = []
    kept = run_evaluation(reference, responses)
    handed = run_evaluation(reference, responses, on_result=seen.append)
    assert _dump(kept) == _dump(handed) == _dump(seen)
    assert len(kept) == 200
    assert kept.signature["options"] == handed.signature["options"]


STEP = st.one_of(
    st.dictionaries(st.sampled_from(["name", "lost", "output"]), st.just("x"), max_size=3),
    st.sampled_from(["lost", "a lost step", "", 3, None, ["lost"], ("lost",)]),
)


@settings(max_examples=300, deadline=None)
@given(steps=st.one_of(st.lists(STEP, max_size=5), st.text(max_size=8), st.just({"lost": 1})))
def test_any_lost_is_the_step_by_step_test(steps: Any) -> None:
    expected = any(isinstance(step, dict) and "lost" in step for step in steps)
    assert _any_lost(steps) is expected
