"""The step counters (``total``, ``once_per_sample``, ``errors``, ``empty_results`` per step
name) are those of each step read on its own: ``Group.add`` rules most SPARQL results out as
empty from the text after their first ``"bindings"`` key without parsing them, and counts the
same as ``empty_result`` of every step's output."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from qa_eval.aggregate import compute_aggregates, empty_result

# Texts around "bindings" keys: the layouts ruled out without a parse (a row after the key),
# an empty array, an escaped key, a key in a string, text before the object.
_KEY = '"bindings"'
_AFTER = [
    ': [\n      {"s": 1}]',
    ': [\n    {"s": 1}]',
    ':[{"s": 1}]',
    ': [{"s": 1}]',
    ' : [ {"s": 1} ]',
    ": []",
    ":[]",
    ": [\n      ]",
    " : [ ]",
    ': [\n\n{"s": 1}]',
    ": 1",
    "",
]
_BEFORE = ["", "\\", " ", "{", ",", '"x\\']
OUTPUTS = st.builds(
    lambda start, parts, end: start + "".join(parts) + end,
    st.sampled_from(["", "{", ' {"results": {', '{"results": {', "[", '{"head": {}, "results": {']),
    st.lists(
        st.builds(lambda b, a: b + _KEY + a, st.sampled_from(_BEFORE), st.sampled_from(_AFTER)),
        min_size=1,
        max_size=3,
    ),
    st.sampled_from(["", "}}", "}", "]}}"]),
)
STEPS = st.lists(
    st.fixed_dictionaries(
        {"name": st.sampled_from(["sparql_query", "search"])},
        optional={"status": st.sampled_from(["success", "error"]), "output": OUTPUTS},
    ),
    max_size=4,
)


def _counted(results: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """The step counters of the results, each step read on its own."""
    counters: dict[str, dict[str, int]] = {}
    for result in results:
        for step in result["actual_steps"]:
            name = step["name"]
            if step.get("status") == "error":
                kind = "errors"
            elif empty_result(step.get("output")):
                kind = "empty_results"
            else:
                continue
            counts = counters.setdefault(kind, {})
            counts[name] = counts.get(name, 0) + 1
    return counters


@settings(max_examples=300, deadline=None)
@given(st.lists(STEPS, min_size=1, max_size=4))
def test_empty_results_are_those_of_each_output(steps: list[list[dict[str, Any]]]) -> None:
    results = [{"template_id": "t", "actual_steps": s} for s in steps]
    micro = compute_aggregates(results)["micro"].get("steps", {})
    expected = _counted(results)
    for kind in ("errors", "empty_results"):
        assert micro.get(kind, {}) == expected.get(kind, {})


def test_a_row_after_an_escaped_key_does_not_hide_an_empty_result() -> None:
    """The first "bindings" ends a key whose first quote is escaped (``a"bindings``) and has a
    row after it: the result is decided by the next key, whose array is empty."""
    output = '{"a\\"bindings": [{"s": 1}], "results": {"bindings": []}}'
    assert empty_result(output)
    results = [{"template_id": "t", "actual_steps": [{"name": "q", "output": output}]}]
    assert compute_aggregates(results)["micro"]["steps"]["empty_results"] == {"q": 1}


class _Int(int):
    """An int of another type: summed as a float with floats, as ``describe`` does."""


_VALUES = st.sampled_from([0, 1, 3, 0.0, -0.0, 0.5, 1.0, 2**53 + 1, -(2**60), 1e300, _Int(2)])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), _VALUES), min_size=1, max_size=12))
@example([("a", 2**53 + 1), ("b", 0.5)])  # fsum would round the int first: 2**53 + 0.5
def test_micro_is_describe_of_every_value(rows: list[tuple[str, Any]]) -> None:
    """micro's statistics (merged from the templates' series, their types and sorts reused)
    are ``describe`` of all the values, template after template; per template, those of its
    values."""
    from qa_eval.aggregate import describe

    results = [{"template_id": t, "answer_f1": v} for t, v in rows]
    out = compute_aggregates(results)
    values = []
    for template, summary in out["per_template"].items():
        mine = [v for t, v in rows if t == template]
        assert repr(summary["answer_f1"]) == repr(describe(mine))
        values += mine
    micro = out["micro"]["answer_f1"]
    assert repr(micro) == repr(describe(values))
    exact = sum(map(Fraction, values))  # (the model of the sum: exact, then rounded once)
    assert micro["sum"] == (exact if {type(v) for v in values} == {int} else float(exact))
