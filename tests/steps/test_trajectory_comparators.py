# ruff: noqa: E501  (hand tables: one case a line)
"""Hand tables of every argument comparator: what it accepts, what it refuses and the words of
the refusal (docs/metrics/trajectory.md)."""

from __future__ import annotations

from typing import Any

import pytest

from qa_eval.steps.trajectory.comparators import (
    LlmAnswers,
    canonical,
    compile_args,
    parse_args,
    parse_tolerance,
)

pytest.importorskip("rapidfuzz", reason="$fuzzy needs rapidfuzz (the ragas-metrics extra)")


def problems(reference: Any, actual: Any, mode: str = "superset") -> list[str]:
    """The mismatches of one argument ``v``."""
    spec = compile_args({"v": reference}, mode, "args")
    return spec.score({"v": actual} if actual is not None else {})[2]


# (reference value, actual value, mismatch text or None when it matches)
TABLE: list[tuple[Any, Any, str | None]] = [
    ({"$any": True}, "anything", None),
    ({"$any": True}, None, "args.v: reference any, actual missing"),
    ({"$regex": "BG."}, "BGO", None),
    ({"$regex": "BG."}, "OBGO", 'args.v: "OBGO" does not match /BG./'),
    ({"$regex": r"\d+"}, 42, None),
    ({"$number": 10, "abs_tol": 0.5}, 10.4, None),
    ({"$number": 10, "abs_tol": 0.5}, "10.2", None),
    ({"$number": 10, "abs_tol": 0.5}, 10.6, "args.v: reference 10, actual 10.6 (abs_tol 0.5)"),
    ({"$number": 100, "rel_tol": 0.1}, 109, None),
    ({"$number": 100, "rel_tol": 0.1}, 111, None),  # math.isclose: 11 <= 0.1 * max(100, 111)
    ({"$number": 100, "rel_tol": 0.1}, 112, "args.v: reference 100, actual 112 (rel_tol 0.1)"),
    ({"$number": 1}, True, "args.v: reference 1, actual true (not a number)"),
    (1, 1.0, None),
    (1, True, "args.v: reference 1, actual true"),
    ("1", 1, 'args.v: reference "1", actual 1'),
    ({"$date": "2026-12-01", "tolerance": "1d"}, "2026-12-02", None),
    ({"$date": "2026-12-01", "tolerance": "1d"}, "2026-11-30", None),
    ({"$date": "2026-12-01", "tolerance": "1d"}, "2026-12-03", "args.v: 2026-12-03 is 2 days from 2026-12-01 (tolerance 1 day)"),
    ({"$date": "2026-12-01", "tolerance": "36h"}, "2026-12-02", None),
    ({"$date": "2026-12-01", "tolerance": "36h"}, "2026-12-03", "args.v: 2026-12-03 is 2 days from 2026-12-01 (tolerance 1 day 12 hours)"),
    ({"$date": "2026-12-01", "tolerance": "P2D"}, "2026-12-03", None),
    ({"$date": "2026-12-01"}, "2026-12-01T23:59:00", None),
    ({"$date": "2026-12-01"}, "tomorrow", 'args.v: reference 2026-12-01, actual "tomorrow"'),
    ({"$datetime": "2026-12-01T10:00:00Z", "tolerance": "5m"}, "2026-12-01T10:04:00+00:00", None),
    ({"$datetime": "2026-12-01T10:00:00Z", "tolerance": "5m"}, "2026-12-01T12:04:00+02:00", None),
    ({"$datetime": "2026-12-01T10:00:00Z", "tolerance": "5m"}, "2026-12-01T10:06:00Z", "args.v: 2026-12-01T10:06:00Z is 6 minutes from 2026-12-01T10:00:00Z (tolerance 5 minutes)"),
    ({"$datetime": "2026-12-01T10:00:00", "tolerance": "30s"}, "2026-12-01T10:00:20", None),
    ({"$datetime": "2026-12-01T10:00:00", "tolerance": "30s"}, "2026-12-01T10:00:31", "args.v: 2026-12-01T10:00:31 is 31 seconds from 2026-12-01T10:00:00 (tolerance 30 seconds)"),
    ({"$datetime": "2026-12-01T10:00:00", "tolerance": "PT1H30M"}, "2026-12-01T11:29:00", None),
    ({"$set": [1, 2, 3]}, [3, 2, 1], None),
    ({"$set": [1, 2, 2]}, [2, 1, 2], None),
    ({"$set": [1, 2, 3]}, [1, 2], "args.v: 2 of 3 reference items found among 2 actual items (order ignored)"),
    ({"$set": [{"$regex": "a."}, "ab"]}, ["ab", "ax"], None),
    ({"$text": "New York!"}, "  new   york", None),
    ({"$text": "New York"}, "Newark", 'args.v: reference "New York", actual "Newark" (text normalised)'),
    ({"$fuzzy": "Bergen airport"}, "Bergen airprot", None),
    ({"$fuzzy": "Bergen airport", "min": 0.95}, "Bergen airprot", 'args.v: reference "Bergen airport", actual "Bergen airprot" (similarity 0.93 < 0.95)'),
    ({"$one_of": ["BGO", "BERGEN"]}, "BERGEN", None),
    ({"$one_of": ["BGO", {"$text": "bergen"}]}, "Bergen.", None),
    ({"$one_of": ["BGO", "BERGEN"]}, "OSL", 'args.v: reference one of "BGO", "BERGEN", actual "OSL"'),
    ([1, 2], [1, 2], None),
    ([1, 2], [2, 1], "args.v[0]: reference 1, actual 2; args.v[1]: reference 2, actual 1"),
    ([1, 2], [1], "args.v: reference 2 items, actual 1"),
    ({"a": {"b": 1}}, {"a": {"b": 2}}, "args.v.a.b: reference 1, actual 2"),
    ({"a": 1}, '{"a": 1}', None),
]  # fmt: skip


@pytest.mark.parametrize(("reference", "actual", "expected"), TABLE)
def test_comparators(reference: Any, actual: Any, expected: str | None) -> None:
    assert problems(reference, actual) == ([] if expected is None else expected.split("; "))


def test_argument_modes_count_the_reference_arguments_satisfied() -> None:
    # issue 25: "fraction of reference arguments satisfied"; c is no reference argument (it
    # stops exact and subset from matching, but lowers no score); subset: b may be left out
    reference = {"a": 1, "b": 2}
    actual = {"a": 1, "c": 3}
    assert compile_args(reference, "exact", "args").score(actual)[:2] == (1, 2)
    assert compile_args(reference, "superset", "args").score(actual)[:2] == (1, 2)
    assert compile_args(reference, "subset", "args").score(actual)[:2] == (2, 2)
    assert compile_args(reference, "subset", "args").score(actual)[2] == [
        "args.c: not in the reference, actual 3"
    ]
    assert compile_args(reference, "subset", "args").count(actual) == (2, 2, 1)
    assert compile_args(reference, "ignore", "args").score(actual)[:2] == (0, 0)
    assert compile_args(reference, "exact", "args").score(actual)[2] == [
        "args.b: reference 2, actual missing",
        "args.c: not in the reference, actual 3",
    ]


def test_json_string_arguments_are_parsed_and_raw_text_kept() -> None:
    assert parse_args('{"b": 2, "a": 1.0}') == {"b": 2, "a": 1.0}
    assert parse_args("not json") == "not json"
    assert parse_args(None) == {}
    spec = compile_args('{"a": 1, "b": 2}', "exact", "args")
    assert spec.score(parse_args('{"b": 2, "a": 1.0}')) == (2, 2, [])
    assert spec.score("not json")[2] == ["args: reference an object, actual raw text"]
    assert canonical({"b": 2, "a": 1.0}) == canonical({"a": 1, "b": 2})


def test_llm_answers_are_looked_up_and_pending_ones_collected() -> None:
    spec = compile_args({"q": {"$llm": "the city of Bergen"}}, "exact", "args.q")
    llm = LlmAnswers()
    assert spec.score({"q": "Bergen, Norway"}, llm)[2] == ["args.q: not judged yet ($llm)"]
    assert list(llm.pending) == [("the city of Bergen", '"Bergen, Norway"')]
    llm.answers[("the city of Bergen", '"Bergen, Norway"')] = True
    assert spec.score({"q": "Bergen, Norway"}, llm) == (1, 1, [])
    llm.answers[("the city of Bergen", '"Bergen, Norway"')] = False
    assert spec.score({"q": "Bergen, Norway"}, llm)[2] == [
        'args.q: the judge says "Bergen, Norway" does not mean "the city of Bergen"'
    ]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("1d", 86400), ("2h", 7200), ("30m", 1800), ("10s", 10), ("1w", 604800), ("1.5h", 5400),
     ("P1D", 86400), ("PT2H", 7200), ("P1DT2H30M", 95400), ("PT0.5S", 0.5), ("P1W", 604800)],
)  # fmt: skip
def test_tolerance_units(text: str, seconds: float) -> None:
    assert parse_tolerance(text, "x").total_seconds() == seconds


@pytest.mark.parametrize("text", ["1y", "P1M", "P", "PT", "soon", "", "-1d"])
def test_tolerances_refused(text: str) -> None:
    from qa_eval.steps.trajectory.comparators import TrajectoryError

    with pytest.raises(TrajectoryError, match="tolerance must be like"):
        parse_tolerance(text, "x")
