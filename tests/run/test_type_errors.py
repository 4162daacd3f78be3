"""Results given to the Python API whose ids cannot key a group or a pair (a list, a mapping, a
nested one) are refused with an ``InputError`` naming the record and the field, not a bare
``TypeError: unhashable type``; hashable ids of any kind work as before."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qa_eval import InputError, compute_aggregates
from qa_eval.compare.runs import compare_runs, default_metrics

BAD = [
    ["t1"],
    [],
    {"id": "t1"},
    {},
    [{"nested": ["x"]}],
    {"a": {"b": [1]}},
    ("t1", ["x"]),  # a tuple holding a list: unhashable too
    {1, 2},
    bytearray(b"t1"),
]

leaves = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5))
unhashable = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
).filter(lambda v: isinstance(v, (list, dict)))


def results(n: int = 4) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        out.append(
            {
                "template_id": f"t{i % 2}",
                "question_id": f"q{i}",
                "status": "success",
                "answer_f1": i / n,
                "steps_score": 1.0 - i / n,
                "actual_steps": [
                    {"name": "retrieval", "status": "success", "retrieval_answer_recall": 0.5},
                    {"name": "sparql", "status": "success", "output": "{}"},
                ],
            }
        )
    return out


def _refused(call: Any) -> str:
    with pytest.raises(InputError) as caught:
        call()
    text = str(caught.value)
    assert "\n" not in text
    return text


# --------------------------------------------------------------------------- compute_aggregates


@pytest.mark.parametrize("bad", BAD, ids=repr)
@pytest.mark.parametrize("position", [0, 3])
def test_aggregates_refuse_an_unhashable_template_id(bad: Any, position: int) -> None:
    data = results()
    data[position]["template_id"] = bad
    text = _refused(lambda: compute_aggregates(data))
    assert text.startswith(f"result [{position}] (question_id 'q{position}'): template_id: ")
    assert f"got {type(bad).__name__}" in text


@given(unhashable)
@settings(max_examples=60, deadline=None)
def test_aggregates_refuse_any_list_or_mapping_id(bad: Any) -> None:
    data = results()
    data[2]["template_id"] = bad
    with pytest.raises(InputError, match=r"^result \[2\] \(question_id 'q2'\): template_id: "):
        compute_aggregates(data)


def test_aggregates_name_the_position_without_a_usable_question_id() -> None:
    data = results()
    data[1]["template_id"] = ["t"]
    data[1]["question_id"] = ["q"]
    assert _refused(lambda: compute_aggregates(data)).startswith("result [1]: template_id: ")


def test_aggregates_of_hashable_ids_are_unchanged() -> None:
    data = results()
    plain = compute_aggregates(copy.deepcopy(data))
    for result, tid in zip(data, [7, ("t", 1), 7, ("t", 1)]):
        result["template_id"] = tid
    other = compute_aggregates(data)
    assert list(other["per_template"]) == [7, ("t", 1)]
    assert other["micro"] == plain["micro"] and other["macro"] == plain["macro"]
    assert list(other["per_template"].values()) == list(plain["per_template"].values())


def test_aggregates_count_odd_step_names_as_before_and_skip_unhashable_tags() -> None:
    data = results()
    data[0]["actual_steps"][1]["name"] = ["sparql"]  # counted under its text, as before
    data[0]["question_type"] = {"kind"}  # an unhashable tag value is no group, as a list
    data[1]["question_type"] = ["kind"]
    data[2]["question_type"] = "factoid"
    out = compute_aggregates(data)
    assert out["micro"]["steps"]["total"]["['sparql']"] == 1
    assert list(out["per_tag"]["question_type"]) == ["factoid"]


# --------------------------------------------------------------------------------- compare_runs


@pytest.mark.parametrize("bad", BAD, ids=repr)
@pytest.mark.parametrize("side", ["a", "b"])
@pytest.mark.parametrize("field", ["question_id", "template_id"])
def test_compare_refuses_unhashable_ids(bad: Any, side: str, field: str) -> None:
    a, b = results(), results()
    (a if side == "a" else b)[2][field] = bad
    text = _refused(lambda: compare_runs(a, b, labels=("base", "new"), resamples=200))
    label = "base" if side == "a" else "new"
    record = "result [2]" if field == "question_id" else "result [2] (question_id 'q2')"
    assert text.startswith(f"run {label}: {record}: {field}: must be a string or a number")


@pytest.mark.parametrize("bad", BAD, ids=repr)
@pytest.mark.parametrize("side", ["a", "b"])
def test_compare_refuses_unhashable_step_names(bad: Any, side: str) -> None:
    a, b = results(), results()
    (a if side == "a" else b)[3]["actual_steps"][1]["name"] = bad
    text = _refused(lambda: compare_runs(a, b, resamples=200))
    label = "A" if side == "a" else "B"
    assert text.startswith(
        f"run {label}: result [3] (question_id 'q3'): actual_steps[1].name: "
        "must be a string or a number"
    )
    with pytest.raises(InputError, match=r"^run 2: result \[3\]"):
        default_metrics(results(), (a if side == "a" else b))


@given(unhashable, st.sampled_from(["question_id", "template_id", "step"]))
@settings(max_examples=60, deadline=None)
def test_compare_refuses_any_list_or_mapping_id(bad: Any, field: str) -> None:
    a, b = results(), results()
    if field == "step":
        b[1]["actual_steps"][0]["name"] = bad
        where = "actual_steps[0].name"
    else:
        b[1][field] = bad
        where = field
    with pytest.raises(InputError, match=rf"^run B: result \[1\].*: {re.escape(where)}: "):
        compare_runs(a, b, resamples=100)


def test_compare_of_hashable_ids_is_unchanged() -> None:
    a, b = results(), results()
    for r in b:
        r["answer_f1"] = min(1.0, r["answer_f1"] + 0.25)
    plain = compare_runs(a, b, resamples=500)
    for run in (a, b):
        for r, tid in zip(run, [7, ("t", 1), 7, ("t", 1)]):
            r["template_id"] = tid
            r["question_id"] = (r["question_id"], 0)
    other = compare_runs(a, b, resamples=500)
    assert other["templates"] == [7, "('t', 1)"]
    for mine, theirs in zip(other["metrics"], plain["metrics"]):
        assert mine["metric"] == theirs["metric"]
        assert mine["overall"] == theirs["overall"]
    assert other["questions"] == plain["questions"]
