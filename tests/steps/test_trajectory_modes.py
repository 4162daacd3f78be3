# ruff: noqa: E501  (hand tables: one case a line)
"""Hand tables of the trajectory modes x argument modes, the corner rules, optional calls,
alternatives, failed and repeated calls, and the mismatch texts (docs/metrics/trajectory.md)."""

from __future__ import annotations

import pytest

from qa_eval.steps.trajectory.comparators import TrajectoryError
from qa_eval.steps.trajectory.match import assign
from qa_eval.steps.trajectory.reference import parse_reference
from trajectory_helpers import call, evaluate, step

MODES = ("strict", "unordered", "superset", "subset")
REFERENCE = [call("A", x=1), call("B", y=2)]
# actual calls, and trajectory_match per argument mode as four digits: strict, unordered,
# superset, subset (worked out by hand from the definitions)
TABLE = {
    "same": ([step("A", x=1), step("B", y=2)], dict.fromkeys(("exact", "ignore", "superset", "subset"), "1111")),
    "reordered": ([step("B", y=2), step("A", x=1)], dict.fromkeys(("exact", "ignore", "superset", "subset"), "0111")),
    "extra call": ([step("A", x=1), step("B", y=2), step("C")], dict.fromkeys(("exact", "ignore", "superset", "subset"), "0010")),
    "missing call": ([step("A", x=1)], dict.fromkeys(("exact", "ignore", "superset", "subset"), "0001")),
    "extra argument": ([step("A", x=1, z=3), step("B", y=2)], {"exact": "0000", "ignore": "1111", "superset": "1111", "subset": "0000"}),
    "argument left out": ([step("A"), step("B", y=2)], {"exact": "0000", "ignore": "1111", "superset": "0000", "subset": "1111"}),
    "wrong value": ([step("A", x=9), step("B", y=2)], {"exact": "0000", "ignore": "1111", "superset": "0000", "subset": "0000"}),
}  # fmt: skip


@pytest.mark.parametrize("case", list(TABLE))
@pytest.mark.parametrize("args", ["exact", "ignore", "superset", "subset"])
def test_every_mode_and_argument_mode(case: str, args: str) -> None:
    steps, expected = TABLE[case]
    got = "".join(
        str(int(evaluate(REFERENCE, steps, match=mode, args=args)["trajectory_match"]))
        for mode in MODES
    )
    assert got == expected[args], (case, args)


def test_precision_recall_and_counts_of_a_partial_run() -> None:
    # B matched, A called with a wrong value (extra), C extra, a failed D
    steps = [step("A", x=9), step("B", y=2), step("C"), step("D", status="error")]
    out = evaluate(REFERENCE, steps)
    assert out["tool_recall"] == 0.5
    assert out["tool_precision"] == pytest.approx(1 / 3)
    assert out["tool_f1"] == pytest.approx(2 * 0.5 * (1 / 3) / (0.5 + 1 / 3))
    assert (out["tool_calls_missing"], out["tool_calls_extra"], out["tool_calls_failed"]) == (
        1,
        2,
        1,
    )
    assert out["tool_args_score"] == 0.5  # A: 0 of 1 argument, B: 1 of 1
    assert out["tool_calls_ratio"] == 1.5  # 3 successful calls / 2 reference calls
    assert [c["role"] for c in out["trajectory_calls"]] == ["extra", "matched", "extra", "failed"]
    assert out["trajectory_calls"][1]["reference"] == 1


def test_ordered_superset_keeps_the_order_of_matched_calls() -> None:
    assert (
        evaluate(REFERENCE, [step("B", y=2), step("A", x=1), step("B", y=2)], ordered=True)[
            "trajectory_match"
        ]
        == 1.0
    )
    out = evaluate(REFERENCE, [step("B", y=2), step("A", x=1)], ordered=True)
    assert out["trajectory_match"] == 0.0
    assert out["tool_recall"] == 0.5
    assert evaluate(REFERENCE, [step("B", y=2), step("A", x=1)])["trajectory_match"] == 1.0


def test_optional_calls_need_no_match_and_are_not_extra_when_matched() -> None:
    reference = [call("A", x=1), call("B", optional=True, y=2)]
    alone = evaluate(reference, [step("A", x=1)], match="unordered")
    assert (alone["trajectory_match"], alone["tool_recall"], alone["tool_precision"]) == (
        1.0,
        1.0,
        1.0,
    )
    both = evaluate(reference, [step("A", x=1), step("B", y=2)], match="unordered")
    assert both["trajectory_match"] == 1.0
    assert both["tool_calls_extra"] == 0
    assert [c["role"] for c in both["trajectory_calls"]] == ["matched", "optional"]
    other = evaluate(reference, [step("A", x=1), step("C")], match="unordered")
    assert other["trajectory_match"] == 0.0
    assert other["reference_trajectory"]["calls"][1]["mismatch"] == "optional, not called"


def test_alternatives_are_chosen_by_match_then_f1() -> None:
    alternatives = [[call("A", x=1), call("C")], [call("A", x=1), call("B", y=2), call("E")]]
    out = evaluate(REFERENCE, [step("A", x=1), step("C")], alternatives=alternatives)
    assert (out["trajectory_match"], out["trajectory_alternative"]) == (1.0, 1)
    assert out["reference_trajectory"]["alternatives"][0][1]["matches"] == 1
    assert "matches" not in out["reference_trajectory"]["calls"][0]
    # none matches: calls and alternative 1 both have F1 0.5, alternative 2 0.4: the first
    none = evaluate(REFERENCE, [step("A", x=1), step("B", y=9)], alternatives=alternatives)
    assert none["trajectory_match"] == 0.0
    assert none["trajectory_alternative"] == 0
    best = evaluate([call("Z")], [step("A", x=1), step("C"), step("D")], alternatives=alternatives)
    assert best["trajectory_alternative"] == 1  # F1 0.8 beats 0 and 0.333


def test_corner_rules() -> None:
    empty = evaluate([], [])
    assert (empty["tool_recall"], empty["tool_precision"], empty["tool_f1"]) == (1.0, 1.0, 1.0)
    assert empty["trajectory_match"] == 1.0
    assert empty["tool_calls_ratio"] is None
    assert "tool_calls_ratio is null" in empty["trajectory_reason"]
    only_actual = evaluate([], [step("A")])
    assert (only_actual["tool_recall"], only_actual["tool_precision"], only_actual["tool_f1"]) == (
        1.0,
        0.0,
        0.0,
    )
    assert only_actual["trajectory_match"] == 1.0  # superset of nothing
    assert evaluate([], [step("A")], match="unordered")["trajectory_match"] == 0.0
    only_reference = evaluate([call("A")], [])
    assert (
        only_reference["tool_recall"],
        only_reference["tool_precision"],
        only_reference["tool_f1"],
    ) == (0.0, 1.0, 0.0)
    assert only_reference["tool_calls_ratio"] == 0.0
    failed_only = evaluate([call("A")], [step("A", status="error")])
    assert failed_only["tool_calls_failed"] == 1
    assert failed_only["tool_calls_extra"] == 0
    assert (
        failed_only["reference_trajectory"]["calls"][0]["mismatch"] == "not called (A [0] failed)"
    )


def test_failed_calls_never_match_and_repeats_are_counted() -> None:
    steps = [step("A", status="error", x=1), step("A", x=1), step("A", x=1.0), step("B", y=2)]
    out = evaluate(REFERENCE, steps)
    assert out["trajectory_match"] == 1.0
    assert out["tool_calls_failed"] == 1
    assert out["tool_calls_repeated"] == 1  # x=1.0 is x=1
    assert out["tool_calls_extra"] == 1
    assert [c["repeated"] for c in out["trajectory_calls"]] == [False, False, True, False]


def test_a_name_list_accepts_any_of_its_tools() -> None:
    reference = [{"name": ["search", "search_v2"], "args": {"q": "x"}}]
    assert evaluate(reference, [step("search_v2", q="x")])["trajectory_match"] == 1.0


def test_optimal_assignment_where_first_fit_fails() -> None:
    # first-fit gives actual 0 ("ab") to the regex call, leaving "ax" for the literal "ab"
    reference = [call("A", q={"$regex": "a."}), call("A", q="ab")]
    steps = [step("A", q="ab"), step("A", q="ax")]
    for mode in MODES[1:]:
        assert evaluate(reference, steps, match=mode)["trajectory_match"] == 1.0
        assert evaluate(reference[::-1], steps, match=mode)["trajectory_match"] == 1.0


def test_mismatch_texts_at_the_argument_path() -> None:
    reference = [
        call("search_flights", **{"from": "OSL"}, to="BGO", date={"$date": "2026-12-01", "tolerance": "1d"}),
        call("book", flight={"$any": True}),
    ]  # fmt: skip
    steps = [
        step("search_flights", **{"from": "OSL"}, to="BGO", date="2026-12-03"),
        step("book"),
    ]
    calls = evaluate(reference, steps)["reference_trajectory"]["calls"]
    assert calls[0]["mismatch"] == (
        "search_flights: args.date: 2026-12-03 is 2 days from 2026-12-01 (tolerance 1 day)"
    )
    assert calls[1]["mismatch"] == "book: args.flight: reference any, actual missing"
    # the same-name call is taken by a better partner: the closest is named
    two = [call("search_flights", to="BGO", date="2026-12-01"), call("search_flights", to="BGO", date="2026-12-05", **{"from": "OSL"})]  # fmt: skip
    got = evaluate(two, [step("search_flights", to="BGO", date="2026-12-01"), step("book")])
    assert got["reference_trajectory"]["calls"][1]["mismatch"] == (
        "not called (closest: search_flights [0], 1 of 3 arguments equal)"
    )
    assert (
        evaluate([call("X")], [step("A")])["reference_trajectory"]["calls"][0]["mismatch"]
        == "not called"
    )
    nested = evaluate(
        [call("f", filter={"city": "Oslo", "n": 1})], [step("f", filter={"city": "Bergen", "n": 1})]
    )
    assert nested["reference_trajectory"]["calls"][0]["mismatch"] == (
        'f: args.filter.city: reference "Oslo", actual "Bergen"'
    )


def test_matches_names_the_call_id_or_position() -> None:
    steps = [{"name": "A", "args": {"x": 1}, "id": "call_7"}, step("B", y=2)]
    calls = evaluate(REFERENCE, steps)["reference_trajectory"]["calls"]
    assert [c.get("matches") for c in calls] == ["call_7", 1]


def test_calls_without_recorded_arguments_make_the_question_not_evaluable() -> None:
    steps = [step("A", x=1), {"name": "B", "lost": ["args"]}]
    out = evaluate(REFERENCE, steps)
    assert out == {
        "trajectory_error": "not evaluable: 1 of 2 calls have no recorded arguments "
        "(content capture off)"
    }
    assert evaluate(REFERENCE, steps, args="ignore")["trajectory_match"] == 1.0


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"calls": [{"name": "a", "args": {"d": {"$date": "soon"}}}]}, 'reference_trajectory.calls[0].args.d: $date needs a date, got "soon"'),
        ({"calls": [{"name": "a"}, {"name": "b"}, {"name": "c", "args": {"date": {"$date": 5}}}]}, "reference_trajectory.calls[2].args.date: $date needs a date, got 5"),
        ({"match": "loose", "calls": []}, 'reference_trajectory.match: must be one of strict, unordered, superset, subset, got "loose"'),
        ({"args": "fuzzy", "calls": []}, 'reference_trajectory.args: must be one of exact, ignore, subset, superset, got "fuzzy"'),
        ({"calls": [{"name": ""}]}, 'reference_trajectory.calls[0].name: must be a tool name or a non-empty list of names, got ""'),
        ({"calls": [{"name": "a", "optional": "yes"}]}, 'reference_trajectory.calls[0].optional: must be true or false, got "yes"'),
        ({"calls": [{"name": "a", "args": {"x": {"$near": 1}}}]}, "reference_trajectory.calls[0].args.x: unknown comparator $near"),
        ({"calls": [{"name": "a", "args": {"x": {"$number": 1, "tol": 1}}}]}, 'reference_trajectory.calls[0].args.x: $number takes no option "tol" (its options: abs_tol, rel_tol)'),
        ({"calls": [{"name": "a", "args": {"x": {"$regex": "("}}}]}, "reference_trajectory.calls[0].args.x: $regex is not a valid pattern"),
        ({"calls": [{"name": "a", "args": {"x": {"$date": "2026-01-01", "tolerance": "1y"}}}]}, "reference_trajectory.calls[0].args.x: tolerance must be like 1d"),
        ({"calls": [{"name": "a", "args": [1]}]}, "reference_trajectory.calls[0].args: must be a mapping, got list"),
        ({"calls": [], "alternatives": [[{"name": "a", "args": {"x": {"$any": False}}}]]}, "reference_trajectory.alternatives[0][0].args.x: $any takes true, got false"),
        ({"calls": [], "order": True}, 'reference_trajectory: unknown key "order"'),
        ({"match": "strict"}, "reference_trajectory.calls: missing"),
        ("A then B", 'reference_trajectory: must be a list of calls or a mapping, got "A then B"'),
        ([{"name": "a", "args": {"x": {"$fuzzy": "abc", "min": 90}}}], "reference_trajectory[0].args.x: min must be a number from 0 to 1, got 90"),
    ],
)  # fmt: skip
def test_bad_references_name_the_field_path(raw: object, message: str) -> None:
    with pytest.raises(TrajectoryError) as caught:
        parse_reference(raw)
    assert str(caught.value).startswith(message)


def test_the_list_form_has_the_defaults() -> None:
    reference = parse_reference([call("A", x=1)])
    assert (reference.match, reference.ordered, reference.args) == ("superset", False, "exact")
    assert parse_reference({"match": "strict", "calls": []}).ordered is True


def test_assignment_solvers_agree_with_brute_force() -> None:
    import itertools
    import random

    rng = random.Random(7)
    for _ in range(200):
        n, m = rng.randint(1, 5), rng.randint(1, 5)
        w = [[rng.choice([0.0, 0.0, 0.5, 1.0, 3.0]) for _ in range(m)] for _ in range(n)]
        best = 0.0
        for perm in itertools.permutations(range(max(n, m)), n):
            best = max(best, sum(w[i][j] for i, j in enumerate(perm) if j < m))
        assert sum(w[i][j] for i, j in assign(w, False)) == pytest.approx(best)
        ordered = assign(w, True)
        assert all(a < b and c < d for (a, c), (b, d) in itertools.pairwise(ordered))
        best_ordered = 0.0
        for cols in itertools.product(range(-1, m), repeat=n):
            chosen = [(i, j) for i, j in enumerate(cols) if j >= 0]
            if all(c < d for (_, c), (_, d) in itertools.pairwise(chosen)):
                best_ordered = max(best_ordered, sum(w[i][j] for i, j in chosen))
        assert sum(w[i][j] for i, j in ordered) == pytest.approx(best_ordered)
