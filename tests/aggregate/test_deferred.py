"""``compute_aggregates`` appends a result's values to their series unchecked and checks each
series once, in bulk (``Series.settle``: its types, and a float sum that is finite only when
every value is); a series the bulk check cannot pass is read value by value. Either way the
aggregates are those of the values checked one at a time as they come (the partial
aggregates' groups, which read their series between results), byte for byte."""

from __future__ import annotations

import json
from typing import Any

import pytest

from qa_eval.aggregate import compute_aggregates
from qa_eval.aggregate.compute import AggregateSpec
from qa_eval.aggregate.partial import PartialAggregates
from qa_eval.aggregate.summaries import plain


class _Float(float):
    """A float of another type: a number, which the bulk check does not pass."""


def _checked_one_by_one(results: list[dict[str, Any]]) -> dict[str, Any]:
    partial = PartialAggregates(AggregateSpec.of())
    partial.add(results)
    return plain(partial.finish())


# Each list of values leaves the bulk check undecided: the series is read value by value.
_UNDECIDED = {
    "a NaN": [0.5, float("nan"), 1],
    "an infinity": [float("-inf"), 0.25],
    "finite floats whose sum is not": [1e308, 1e308, 0.5],
    "an int beyond the float range": [10**400, 0.5, 2],
    "a boolean": [True, 1, 0.5],
    "text and None": ["x", None, 3, 0.75],
    "a float subclass": [_Float(0.5), 1.5],
}


@pytest.mark.parametrize("values", _UNDECIDED.values(), ids=_UNDECIDED.keys())
def test_values_the_bulk_check_cannot_pass_are_read_one_by_one(values: list[Any]) -> None:
    results = [
        {"template_id": "t", "question_id": str(i), "steps_score": v, "elapsed_sec": 1.5}
        for i, v in enumerate(values)
    ]
    aggregates = compute_aggregates(results)
    assert json.dumps(aggregates, default=repr) == json.dumps(
        _checked_one_by_one(results), default=repr
    )
    block = aggregates["per_template"]["t"]["steps_score"]
    numbers = [
        v
        for v in values
        if type(v) is not bool and isinstance(v, (int, float)) and abs(v) != float("inf")
    ]
    numbers = [v for v in numbers if v == v]  # (not NaN)
    assert block["n"] == len(numbers)
    assert block.get("skipped", 0) == sum(v is not None for v in values) - len(numbers)


def test_values_the_bulk_check_passes_keep_their_types_and_order() -> None:
    values = [1, 1.0, 0.0, -0.0, 2**53 + 1, 0.5, 3]
    results = [
        {"template_id": "t", "question_id": str(i), "steps_score": v} for i, v in enumerate(values)
    ]
    aggregates = compute_aggregates(results)
    assert json.dumps(aggregates) == json.dumps(_checked_one_by_one(results))
    assert aggregates["per_template"]["t"]["steps_score"]["n"] == len(values)


def test_rows_of_alternating_key_lists_and_step_metrics_keep_the_results_order() -> None:
    """A deferred group gathers the values of results that share a key list as rows: a result
    of other keys, or a step metric of a series with rows pending, adds them first."""
    results: list[dict[str, Any]] = []
    for i in range(12):
        result: dict[str, Any] = {"template_id": "t", "question_id": str(i)}
        recall, score = 1 if i % 2 else 1.0, [0, 0.0, 1, 1.0][i % 4]
        if i % 3:  # (another key list now and then: its values in another order)
            result.update(status="success", steps_score=score, retrieval_answer_recall=recall)
        else:
            result.update(retrieval_answer_recall=recall, steps_score=score)
        if i % 4 == 1:  # a step metric after the result's own value of the same series
            result["actual_steps"] = [{"name": "retrieval", "retrieval_answer_recall": 1.0}]
        results.append(result)
    aggregates = compute_aggregates(results)
    assert json.dumps(aggregates) == json.dumps(_checked_one_by_one(results))
    assert aggregates["per_template"]["t"]["retrieval_answer_recall"]["n"] == 12 + 3
