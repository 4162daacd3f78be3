"""``Group.add`` reads each list of result keys once per aggregation (``Shape``) and results
with the same keys in the same order share it: the aggregates are those of results read key by
key, byte for byte, whatever the order of their keys and which error, label, tag and trial
keys they carry."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import qa_eval.aggregate.groups as groups
from qa_eval.aggregate import compute_aggregates

VALUES = st.sampled_from([0, 1, 1.0, 0.5, -0.0, None, "x", True, float("nan"), 10**20])
STEP = st.fixed_dictionaries(
    {"name": st.sampled_from(["sparql_query", "retrieval", "search", 7])},
    optional={
        "status": st.sampled_from(["success", "error"]),
        "output": st.sampled_from(['{"results": {"bindings": []}}', '{"bindings": [1]}', "x"]),
        "retrieval_answer_recall": VALUES,
        "retrieval_answer_recall_error": st.just("no chunks"),
    },
)
RESULT = st.fixed_dictionaries(
    {"template_id": st.sampled_from(["t1", "t2", 3])},
    optional={
        "question_id": st.sampled_from(["a", "b", "c"]),
        "status": st.sampled_from(["success", "error"]),
        "error": st.just("boom"),
        "question_type": st.sampled_from(["lookup", 1, None, ["x"]]),
        "answer_f1": VALUES,
        "steps_score": VALUES,
        "input_tokens": VALUES,
        "answer_correctness_error": st.just("no reply"),
        "steps_score_error": st.just("not evaluable"),
        "answer_class": st.sampled_from(["CORRECT", "ODD", 3]),
        "actual_steps": st.lists(st.one_of(STEP, st.just("not a step")), max_size=3),
        "trial": st.sampled_from([1, 2]),
        "custom_score": VALUES,
        "custom_error": st.just("failed"),
    },
)


@settings(max_examples=200, deadline=None)
@given(results=st.lists(RESULT, max_size=25), seed=st.integers(0, 2**32))
def test_shared_shapes_aggregate_as_results_read_key_by_key(
    results: list[dict[str, Any]], seed: int
) -> None:
    chance = random.Random(seed)
    shuffled = []
    for result in results:  # the same keys in another order, now and then
        items = list(result.items())
        if chance.random() < 0.5:
            chance.shuffle(items)
        shuffled.append(dict(items))
    arguments: dict[str, Any] = {"extra_metrics": ["custom_score"]}
    shared = json.dumps(compute_aggregates(shuffled, **arguments), default=repr)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(groups, "_SHAPES", 0)  # no shape remembered: each result read anew
        alone = json.dumps(compute_aggregates(shuffled, **arguments), default=repr)
    assert shared == alone


class _Overlapping(frozenset):  # type: ignore[type-arg]
    """A key set that always shares a key: every step of its name is read metric by metric."""

    def isdisjoint(self, other: Any) -> bool:
        return False


@settings(max_examples=200, deadline=None)
@given(results=st.lists(RESULT, max_size=25))
def test_the_shortcuts_aggregate_as_the_long_way(results: list[dict[str, Any]]) -> None:
    """A step without any of its name's metric and error keys is not read for them, and one tag
    is looked up, not the result's every key: the aggregates are those of the long way."""
    by = ("question_type",)
    short = json.dumps(compute_aggregates(results, by=by), default=repr)
    with pytest.MonkeyPatch.context() as patch:
        keys = {name: _Overlapping(k) for name, k in groups._STEP_KEYS.items()}
        patch.setattr(groups, "_STEP_KEYS", keys)
        # a second tag no result has: the tags are read with isdisjoint, as for several
        long = json.dumps(compute_aggregates(results, by=(*by, "no such tag")), default=repr)
    assert short == long
