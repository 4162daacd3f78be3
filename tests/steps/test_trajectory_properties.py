# ruff: noqa: E501  (strategies: one a line)
"""Properties of the trajectory metrics on random trajectories (hypothesis): order independence
where the mode ignores order, the implications between modes, bounds, and precision under the
removal of an extra call."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from trajectory_helpers import evaluate

NAMES = st.sampled_from(["a", "b", "c"])
VALUES = st.sampled_from([1, 2, "x"])
ARGS = st.dictionaries(st.sampled_from(["p", "q"]), VALUES, max_size=2)
REF_CALL = st.builds(  # required calls, a string value sometimes a $regex (not an equivalence)
    lambda name, args, regex: {
        "name": name,
        "args": {k: ({"$regex": ".*"} if regex and isinstance(v, str) else v) for k, v in args.items()},
    },
    NAMES, ARGS, st.booleans(),
)  # fmt: skip
OPTIONAL_CALL = st.builds(
    lambda name, args, optional: {"name": name, "args": args, "optional": optional},
    NAMES, ARGS, st.booleans(),
)  # fmt: skip
ACT_CALL = st.builds(
    lambda name, args, ok: {"name": name, "args": args, "status": "success" if ok else "error"},
    NAMES, ARGS, st.integers(0, 5).map(lambda n: n > 0),
)  # fmt: skip
ARG_MODES = st.sampled_from(["exact", "ignore", "subset", "superset"])


def _values(out: dict[str, Any]) -> tuple[Any, ...]:
    keys = ("trajectory_match", "tool_recall", "tool_precision", "tool_f1", "tool_args_score")
    rounded = (round(out[k], 9) for k in keys)
    return (*rounded, out["tool_calls_missing"], out["tool_calls_extra"])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(OPTIONAL_CALL, max_size=5),
    st.lists(ACT_CALL, max_size=6),
    st.sampled_from(["unordered", "superset", "subset"]),
    ARG_MODES,
    st.randoms(use_true_random=False),
)
def test_order_free_modes_do_not_depend_on_either_list_order(
    reference: list[dict], actual: list[dict], mode: str, args: str, rng: Any
) -> None:
    base = evaluate(reference, actual, match=mode, args=args)
    shuffled_reference, shuffled_actual = reference[:], actual[:]
    rng.shuffle(shuffled_reference)
    rng.shuffle(shuffled_actual)
    assert _values(evaluate(shuffled_reference, actual, match=mode, args=args)) == _values(base)
    assert _values(evaluate(reference, shuffled_actual, match=mode, args=args)) == _values(base)


@settings(max_examples=300, deadline=None)
@given(st.lists(REF_CALL, max_size=5), st.lists(ACT_CALL, max_size=6), ARG_MODES)
def test_strict_implies_unordered_implies_superset_and_subset(
    reference: list[dict], actual: list[dict], args: str
) -> None:
    match = {
        mode: evaluate(reference, actual, match=mode, args=args)["trajectory_match"]
        for mode in ("strict", "unordered", "superset", "subset")
    }
    assert match["strict"] <= match["unordered"]
    assert match["unordered"] <= match["superset"]
    assert match["unordered"] <= match["subset"]
    assert match["unordered"] == min(match["superset"], match["subset"])
    ordered = evaluate(reference, actual, match="superset", args=args, ordered=True)
    assert ordered["trajectory_match"] <= match["superset"]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(OPTIONAL_CALL, max_size=5),
    st.lists(ACT_CALL, max_size=6),
    st.sampled_from(["strict", "unordered", "superset", "subset"]),
    ARG_MODES,
    st.booleans(),
)
def test_bounds_and_counts(
    reference: list[dict], actual: list[dict], mode: str, args: str, ordered: bool
) -> None:
    out = evaluate(reference, actual, match=mode, args=args, ordered=ordered)
    for key in ("tool_recall", "tool_precision", "tool_f1", "tool_args_score"):
        assert 0.0 <= out[key] <= 1.0
    done = sum(a["status"] == "success" for a in actual)
    required = sum(not r["optional"] for r in reference)
    roles = [c["role"] for c in out["trajectory_calls"]]
    assert roles.count("failed") == len(actual) - done == out["tool_calls_failed"]
    assert roles.count("extra") == out["tool_calls_extra"]
    assert out["tool_calls_missing"] == required - round(out["tool_recall"] * required)
    assert out["tool_args_score"] >= out["tool_recall"] - 1e-9  # a matched call scores 1
    if out["trajectory_match"] and mode in ("superset", "strict", "unordered"):
        assert out["tool_recall"] == 1.0


@settings(max_examples=300, deadline=None)
@given(
    st.lists(OPTIONAL_CALL, max_size=5),
    st.lists(ACT_CALL, min_size=1, max_size=6),
    st.sampled_from(["unordered", "superset", "subset"]),
    ARG_MODES,
)
def test_removing_an_extra_call_never_lowers_precision(
    reference: list[dict], actual: list[dict], mode: str, args: str
) -> None:
    out = evaluate(reference, actual, match=mode, args=args)
    for call in out["trajectory_calls"]:
        if call["role"] == "extra":
            fewer = [a for i, a in enumerate(actual) if i != call["index"]]
            after = evaluate(reference, fewer, match=mode, args=args)
            assert after["tool_precision"] >= out["tool_precision"] - 1e-12
            assert after["tool_recall"] == out["tool_recall"]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5)
    | st.sampled_from(["$any", "$date", "$regex", "$set", "$llm", "name", "args", "calls", "1d", "(", "2026-01-01"]),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(
        st.sampled_from(["name", "args", "optional", "calls", "match", "alternatives", "x", "$any",
                         "$date", "$regex", "$set", "$number", "$one_of", "$fuzzy", "tolerance",
                         "min", "abs_tol"]),
        inner, max_size=4,
    ),
    max_leaves=12,
)  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(JSON, st.lists(ACT_CALL, max_size=3))
def test_any_reference_is_read_or_refused_in_words(raw: Any, actual: list[dict]) -> None:
    from qa_eval.steps.trajectory.comparators import TrajectoryError
    from qa_eval.steps.trajectory.match import evaluate_trajectory
    from qa_eval.steps.trajectory.reference import parse_reference

    try:
        reference = parse_reference(raw)
    except TrajectoryError as e:
        assert str(e).startswith("reference_trajectory")
        return
    out = evaluate_trajectory(reference, raw, actual)
    assert "trajectory_error" in out or 0.0 <= out["tool_f1"] <= 1.0
