"""The time series and data points comparisons (issue 36 §6): the fast paths for the usual values
(texts, a text against a list of one, two lists of two texts, an absolute time equal to the
reference's) and the caches of parsed times and granularities give the results of the
definition, whatever values repeat with whatever execution timestamps."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qa_eval.steps.timeseries import (
    StepArgumentError,
    compare_data_points_steps,
    compare_time_series_steps,
    explain_data_points_steps,
    explain_time_series_steps,
)

ARGS = {
    "external_id": "e1",
    "aggregates": ["average", "max"],
    "granularity": "1d",
    "start": "2025-01-01T00:00:00Z",
    "end": "2025-02-01T00:00:00Z",
}


def points(args: dict[str, Any], anchor: Any = "2025-03-01T12:00:00Z") -> dict[str, Any]:
    step: dict[str, Any] = {"name": "retrieve_data_points", "args": args}
    if anchor is not None:
        step["execution_timestamp"] = anchor
    return step


def series(args: Any) -> dict[str, Any]:
    return {"name": "retrieve_time_series", "args": args}


def _as_sorted(value: Any) -> Any:
    """The definition of "equal as sorted lists": a text is a list of one, a list is sorted
    (by ``repr`` when its values do not order), anything else (and an empty value) as it is."""
    as_list = [value] if isinstance(value, str) and value else value
    if not as_list or not isinstance(as_list, list):
        return as_list
    try:
        return sorted(as_list)
    except TypeError:
        return sorted(as_list, key=repr)


_VALUES = st.one_of(
    st.sampled_from(["", "a", "b", "average", "max", 0, 1, 1.0, True, None, {}, []]),
    st.lists(st.sampled_from(["a", "b", "max", "average", 1, 1.0, True, None]), max_size=3),
)


@settings(max_examples=300, deadline=None)
@given(_VALUES, _VALUES, st.sampled_from([None, 5, 10]), st.sampled_from([None, 5, 10]))
def test_time_series_scores_as_the_definition(ref: Any, act: Any, ref_limit: Any, act_limit: Any):
    reference = series({"mrid": ref, "limit": ref_limit})
    actual = series({"mrid": act, "limit": act_limit})
    if not ref:
        expected = act is None and ref_limit == act_limit
    else:
        expected = _as_sorted(ref) == _as_sorted(act) and (not ref_limit or ref_limit == act_limit)
    assert compare_time_series_steps(reference, actual) == float(expected)
    if not expected:
        assert explain_time_series_steps(reference, actual) != "the arguments differ"


@settings(max_examples=300, deadline=None)
@given(_VALUES, _VALUES, _VALUES, _VALUES)
def test_data_points_ids_and_aggregates_compare_as_sorted_lists(
    ref_id: Any, act_id: Any, ref_aggregates: Any, act_aggregates: Any
) -> None:
    reference = points({**ARGS, "external_id": ref_id, "aggregates": ref_aggregates})
    actual = points({**ARGS, "external_id": act_id, "aggregates": act_aggregates})
    same_id = _as_sorted(ref_id) == _as_sorted(act_id)
    same_aggregates = _as_sorted(ref_aggregates) == _as_sorted(act_aggregates)
    assert compare_data_points_steps(reference, actual) == float(same_id and same_aggregates)
    text = explain_data_points_steps(reference, actual)
    assert ("external_id: " in text) == (not same_id)
    assert ("aggregates: " in text) == (not same_aggregates)


def test_lists_of_values_that_do_not_order_compare_by_their_sorted_reprs() -> None:
    """Equal lists whose values sort by ``repr`` in another order (True and 1) differ, as the
    definition's sorted lists do; two texts in either order are the same."""
    assert compare_time_series_steps(series({"mrid": ["b", "a"]}), series({"mrid": ["a", "b"]}))
    assert not compare_time_series_steps(
        series({"mrid": [True, 5.5, "s"]}), series({"mrid": [1, 5.5, "s"]})
    )
    assert compare_time_series_steps(series({"mrid": [1, "a"]}), series({"mrid": ["a", 1]}))
    assert not compare_time_series_steps(series({"mrid": ["a", "a"]}), series({"mrid": ["a"]}))
    assert not compare_time_series_steps(series({"mrid": ["a", "b"]}), series({"mrid": ["a", "a"]}))


@pytest.mark.parametrize(
    ("ref", "act", "same"),
    [
        ("1d", "1day", True),
        ("1day", "1d", True),  # (the other way round, with both texts cached already)
        ("1D", " 1days ", True),
        ("1d", "1h", False),
        ("2w", "2weeks", True),
        ("1mo", "1m", False),  # months are not minutes
        ("xx", "xx", True),
        ("", "", True),
        ("", None, False),
        (None, None, True),
        (1, 1, True),
    ],
)
def test_granularities_compare_normalised(ref: Any, act: Any, same: bool) -> None:
    for _ in range(2):  # the second time from the cache
        score = compare_data_points_steps(
            points({**ARGS, "granularity": ref}), points({**ARGS, "granularity": act})
        )
        assert score == float(same)


def test_a_cached_relative_time_resolves_against_each_execution_timestamp() -> None:
    """The same relative text, cached once, is resolved anew from each actual step's time."""
    reference = points({**ARGS, "start": "1d-ago", "end": "now"})
    for anchor, start in [
        ("2025-03-01T12:00:00Z", "2025-02-28T12:00:30Z"),
        ("2025-06-01T00:00:00Z", "2025-05-31T00:00:00Z"),
        ("2025-06-01T02:00:00+02:00", "2025-05-31T00:00:00Z"),
    ]:
        actual = points({**ARGS, "start": start, "end": anchor}, anchor)
        assert compare_data_points_steps(reference, actual) == 1.0
        # The same texts against the other anchors: more than 60 s apart.
        for other in ("2025-03-01T12:02:00Z", "2024-06-01T00:00:00Z"):
            moved = points({**ARGS, "start": start, "end": anchor}, other)
            assert compare_data_points_steps(reference, moved) == 0.0
            assert "more than 60 s apart" in explain_data_points_steps(reference, moved)
    # Relative on both sides: equal when they resolve to the same instant from the anchor.
    assert compare_data_points_steps(
        points({**ARGS, "start": "24h-ago", "end": "now"}),
        points({**ARGS, "start": "1440m-ago", "end": "0s-ago"}),
    )


def test_an_absolute_reference_time_never_matches_a_relative_one_even_when_equal_text() -> None:
    reference = points({**ARGS, "start": "2025-03-01T12:00:00Z"})
    actual = points({**ARGS, "start": "now"}, "2025-03-01T12:00:00Z")
    assert compare_data_points_steps(reference, actual) == 0.0
    assert "a relative time never matches" in explain_data_points_steps(reference, actual)


def test_equal_relative_texts_still_need_the_execution_timestamp() -> None:
    """Equal absolute texts are the same instant at once; equal relative ones are resolved,
    and without an execution timestamp that is an error, every time they are compared."""
    same = points({**ARGS, "start": "2025-01-01T00:00:00+01:00"})
    assert compare_data_points_steps(same, points(same["args"], anchor=None)) == 1.0
    relative = points({**ARGS, "start": "1d-ago"})
    for _ in range(2):
        with pytest.raises(StepArgumentError, match="execution_timestamp"):
            compare_data_points_steps(relative, points(relative["args"], anchor=None))
        with pytest.raises(StepArgumentError, match="execution_timestamp"):
            compare_data_points_steps(relative, points(relative["args"], anchor="bad"))
    assert compare_data_points_steps(relative, points(relative["args"])) == 1.0


def test_absolute_times_compare_as_instants_and_unreadable_ones_as_texts() -> None:
    cases = [
        ("2025-01-01T00:00:00Z", "2025-01-01T01:00:00+01:00", 1.0),
        ("2025-01-01T00:00:00", "2025-01-01T00:00:00Z", 1.0),  # a naive time is UTC
        ("2025-01-01T00:00:00Z", "2025-01-01T00:00:01Z", 0.0),
        ("yesterday", "yesterday", 1.0),
        ("yesterday", "today", 0.0),
        ("yesterday", "2025-01-01T00:00:00Z", 0.0),
    ]
    for _ in range(2):  # the second time from the cache
        for ref, act, score in cases:
            got = compare_data_points_steps(
                points({**ARGS, "start": ref}), points({**ARGS, "start": act})
            )
            assert got == score, (ref, act)


def test_a_relative_time_out_of_range_is_reported_with_its_anchor() -> None:
    reference = points({**ARGS, "start": "9999999999999d-ago"})
    for anchor in ("2025-01-01T00:00:00Z", "2026-01-01T00:00:00Z"):
        actual = points(reference["args"], anchor)
        with pytest.raises(StepArgumentError, match=anchor[:10]):
            compare_data_points_steps(reference, actual)
        assert explain_data_points_steps(reference, actual).startswith(
            "start: the relative time '9999999999999d-ago' from the actual step's"
        )
    near = points({**ARGS, "start": "99999999999d-ahead"})  # 12 digits: resolved, too far
    with pytest.raises(StepArgumentError, match="out of range"):
        compare_data_points_steps(near, points(near["args"]))


def test_explanations_name_each_differing_argument() -> None:
    reference = points(ARGS)
    actual = points(
        {**ARGS, "external_id": ["e2"], "granularity": "1h", "aggregates": ["max"], "limit": 3}
    )
    assert explain_data_points_steps(reference, actual) == (
        'external_id: reference e1, actual ["e2"]; granularity: reference 1d, actual 1h; '
        'aggregates: reference ["average","max"], actual ["max"]; limit: reference (none), '
        "actual 3"
    )
    assert explain_data_points_steps(reference, points(ARGS)) == "the arguments differ"
    assert explain_time_series_steps(series({"mrid": "m"}), series({"mrid": ["m"]})) == (
        "the arguments differ"
    )


def test_a_granularity_with_more_digits_than_int_reads_compares_without_an_error() -> None:
    """``int()`` refuses more than 4,300 digits: such a count is compared as written (leading
    zeros dropped) instead of raising out of the run."""
    long = "1" + "0" * 5000
    reference = points({**ARGS, "granularity": long + "d"})
    same = points({**ARGS, "granularity": "0" + long + "day"})
    other = points({**ARGS, "granularity": long + "1d"})
    assert compare_data_points_steps(reference, same) == 1.0
    assert compare_data_points_steps(reference, other) == 0.0


def test_equal_time_texts_are_explained_as_compared_read_before_or_not() -> None:
    """Equal texts known (from the cache of times) to be absolute are the same instant at
    once; a text not read yet, and an equal relative one, are left to the comparison of
    times, which reads the execution timestamp."""
    fresh = points({**ARGS, "start": "2031-05-06T07:08:09+03:00"})  # (not read before)
    for _ in range(2):
        assert compare_data_points_steps(fresh, points(fresh["args"], anchor=None)) == 1.0
        assert explain_data_points_steps(fresh, points(fresh["args"], anchor=None)) == (
            "the arguments differ"
        )
    relative = points({**ARGS, "end": "2h-ahead"})
    for _ in range(2):
        with pytest.raises(StepArgumentError, match="execution_timestamp"):
            compare_data_points_steps(relative, points(relative["args"], anchor=None))
        assert explain_data_points_steps(relative, points(relative["args"], anchor=None)) == (
            "end: a relative time needs the actual step's 'execution_timestamp' as an ISO 8601 "
            "time, got None"
        )


def test_arguments_in_a_mapping_of_another_type_compare_and_explain_as_in_a_dict() -> None:
    """A dict is told by its type; a dict of a subclass, or arguments that are no mapping
    (none), are read by ``_arguments``, with the same results."""
    from collections import OrderedDict

    wrong = {**ARGS, "granularity": "1h"}
    for args, other in [(ARGS, ARGS), (ARGS, wrong)]:
        plain = (points(args), points(other))
        ordered = (points(OrderedDict(args)), points(OrderedDict(other)))
        assert compare_data_points_steps(*ordered) == compare_data_points_steps(*plain)
        assert explain_data_points_steps(*ordered) == explain_data_points_steps(*plain)
    plain_series = (series({"mrid": "m"}), series({"mrid": ["n"]}))
    ordered_series = (series(OrderedDict(mrid="m")), series(OrderedDict(mrid=["n"])))
    assert compare_time_series_steps(*ordered_series) == 0.0
    assert explain_time_series_steps(*ordered_series) == (explain_time_series_steps(*plain_series))
    # Arguments that are no mapping count as none.
    assert compare_time_series_steps(series("m"), series(None)) == 1.0
    assert compare_data_points_steps(points("x"), points({})) == 1.0  # type: ignore[arg-type]
