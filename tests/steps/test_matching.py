"""Step matching and steps_score: ordering rules, greedy agreement, and the optimal assignment."""

from __future__ import annotations

import itertools
import json
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from fakes import prepared_groups
from qa_eval.steps.compare import StepScorer
from qa_eval.steps.matching import (
    best_matches,
    fully_matched,
    greedy_matches,
    match_steps,
    steps_score,
    upper_bound,
)


def groups_of(spec: list[list[str]]):
    """Reference groups of text steps named 'tool' whose outputs are the given strings."""
    return prepared_groups([[{"name": "tool", "output": out} for out in group] for group in spec])


def actual(outputs: list[str | None], failed: tuple[int, ...] = ()) -> list[dict]:
    return [
        {
            "name": "tool",
            "id": f"c{i}",
            "status": "error" if i in failed else "success",
            "output": out,
        }
        for i, out in enumerate(outputs)
    ]


def score(spec: list[list[str]], outputs: list[str | None], failed: tuple[int, ...] = ()) -> float:
    return match_steps(groups_of(spec), StepScorer(actual(outputs, failed)))[1]


def test_all_matched_in_order() -> None:
    assert score([["a"], ["b"]], ["a", "b"]) == 1.0


def test_order_is_enforced_between_groups() -> None:
    # b must come after a; here it comes before, so only the last group matches.
    assert score([["a"], ["b"]], ["b", "a"]) == 0.5


def test_any_order_within_a_group() -> None:
    assert score([["a", "b"]], ["b", "a"]) == 1.0


def test_failed_steps_never_match() -> None:
    assert score([["a"]], ["a"], failed=(0,)) == 0.0


def test_partial_last_group_stops_matching() -> None:
    # The last group is half matched; the earlier group is not looked at.
    assert score([["a"], ["b", "c"]], ["a", "b"]) == 0.25


def test_extra_steps_are_ignored() -> None:
    assert score([["a"]], ["x", "a", "y"]) == 1.0


def test_an_actual_step_matches_only_one_reference_step() -> None:
    assert score([["a", "a"]], ["a"]) == 0.5
    assert score([["a", "a"]], ["a", "a"]) == 1.0


class _TableScorer(StepScorer):
    """A scorer with a fixed score table, to test matching independently of comparators."""

    def __init__(
        self, n_actual: int, table: dict[tuple[int, int, int], float], failed: tuple[int, ...] = ()
    ) -> None:
        super().__init__(
            [
                {"name": "x", "id": f"c{i}", "status": "error" if i in failed else "success"}
                for i in range(n_actual)
            ]
        )
        self.table = table

    def score(self, ref, act_index):  # type: ignore[no-untyped-def]
        return self.table.get((ref.group, ref.index, act_index), 0.0)

    def matchable_names(self, ref):  # type: ignore[no-untyped-def]
        return _EVERY_NAME  # (the table ignores names)

    # StepScorer's scans, as they are defined: from ``score`` (here the table's).

    def latest_match(self, ref, candidates, stop):  # type: ignore[no-untyped-def]
        for i in range(stop - 1, -1, -1):
            found = self.score(ref, candidates[i])
            if found > 0.0:
                return i, found
        return -1, 0.0

    def best_before(self, ref, candidates, stop, best):  # type: ignore[no-untyped-def]
        return max([best, *(self.score(ref, a) for a in candidates[:stop])])


class _EveryName:
    def __contains__(self, name: object) -> bool:
        return True


_EVERY_NAME = _EveryName()


def test_greedy_counterexample_gets_the_best_assignment() -> None:
    groups = groups_of([["x", "y"]])
    # a0 matches Y only; a1 matches X and Y. Greedy: Y -> a1 (latest), X unmatched.
    scorer = _TableScorer(2, {(0, 1, 0): 1.0, (0, 0, 1): 1.0, (0, 1, 1): 1.0})
    greedy = greedy_matches(groups, scorer, scorer.successful())
    assert steps_score(groups, greedy) == 0.5
    matches, total = match_steps(groups, scorer)
    assert total == 1.0
    assert sorted((g, i, a) for g, i, a, _ in matches) == [(0, 0, 1), (0, 1, 0)]


def test_boundary_choice_can_matter() -> None:
    # Last group [Z] can use a1 or a2; group 0 [W] scores 1.0 only on a1, so Z must take a2.
    groups = groups_of([["w"], ["z"]])
    scorer = _TableScorer(3, {(1, 0, 2): 1.0, (1, 0, 1): 1.0, (0, 0, 1): 1.0, (0, 0, 0): 0.3})
    assert match_steps(groups, scorer)[1] == 1.0


def _brute_force(groups, scorer: StepScorer) -> float:
    """Every assignment that follows the rules, enumerated."""
    candidates = scorer.successful()
    best = 0.0

    def go(g: int, upto: int, total: float) -> None:
        nonlocal best
        best = max(best, total)
        if g < 0:
            return
        group = groups[g]
        usable = [a for a in candidates if a < upto]
        for choice in itertools.product([None, *usable], repeat=len(group)):
            picked = [a for a in choice if a is not None]
            if len(set(picked)) != len(picked):
                continue
            scores = [
                scorer.score(ref, a) if a is not None else 0.0 for ref, a in zip(group, choice)
            ]
            if any(a is not None and s <= 0.0 for a, s in zip(choice, scores)):
                continue
            value = total + sum(scores) / len(group)
            if len(picked) == len(group):
                go(g - 1, min(picked), value)
            else:
                best = max(best, value)

    go(len(groups) - 1, len(scorer.actual), 0.0)
    return best / len(groups)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 10_000))
def test_matching_is_optimal_and_never_below_greedy(seed: int) -> None:
    rnd = random.Random(seed)
    spec = [[f"s{g}{i}" for i in range(rnd.randint(1, 3))] for g in range(rnd.randint(1, 3))]
    groups = groups_of(spec)
    n = rnd.randint(0, 6)
    table = {}
    for group in groups:
        for ref in group:
            for a in range(n):
                if rnd.random() < 0.35:
                    table[(ref.group, ref.index, a)] = rnd.choice([1.0, 1.0, 0.5, 0.25])
    failed = tuple(a for a in range(n) if rnd.random() < 0.15)
    scorer = _TableScorer(n, table, failed)
    greedy = steps_score(groups, greedy_matches(groups, scorer, scorer.successful()))
    best = steps_score(groups, best_matches(groups, scorer, scorer.successful()))
    chosen = match_steps(groups, scorer)[1]
    expected = _brute_force(groups, scorer)
    assert abs(best - expected) < 1e-9
    assert abs(chosen - expected) < 1e-9
    assert chosen >= greedy - 1e-12
    # The bound that lets match_steps skip the search is never below the best matching.
    assert upper_bound(groups, scorer, scorer.successful()) >= expected - 1e-9


# Why an unmatched reference step did not match (steps.explain).


def why(steps: list[list[dict]], actual_steps: list[dict], error: object = None) -> dict:
    from qa_eval.steps.explain import explain_unmatched

    groups = prepared_groups(steps)
    scorer = StepScorer(actual_steps)
    matches, _ = match_steps(groups, scorer)
    return explain_unmatched(groups, scorer, matches, error)


def test_nothing_to_explain_when_every_step_matches() -> None:
    assert why([[{"name": "tool", "output": "a"}]], actual(["a"])) == {}


def test_not_evaluated_groups_and_the_stopping_group() -> None:
    steps = [[{"name": "tool", "output": "a"}], [{"name": "tool", "output": "b"}]]
    found = why(steps, actual(["a", "x"]))
    assert found[(0, 0)] == (
        "not evaluated: group 2 has no match, and matching stops there (on its own this step "
        "would match actual step tool [0] (id c0))"
    )
    assert found[(1, 0)] == (
        "closest of 2 candidates, actual step tool [1] (id c1): output differs at line 1: "
        "reference b, actual x"
    )


def test_no_step_an_error_step_and_an_error_response() -> None:
    step = [[{"name": "other", "output": "a"}]]
    assert why(step, actual(["a"])) == {(0, 0): "no actual step named other"}
    failed = [{"name": "tool", "id": "c0", "status": "error", "error": "Prefix not found: g"}]
    assert why([[{"name": "tool", "output": "a"}]], failed) == {
        (0, 0): "the actual step tool [0] (id c0) has status error: Prefix not found: g"
    }
    assert why([[{"name": "tool", "output": "a"}]], [], "timed out") == {
        (0, 0): "the response is an error (timed out) with no actual steps"
    }


def test_order_and_a_step_taken_by_another_reference_step() -> None:
    steps = [[{"name": "first", "output": "a"}], [{"name": "tool", "output": "b"}]]
    late = [
        {"name": "tool", "id": "c0", "status": "success", "output": "b"},
        {"name": "first", "id": "c1", "status": "success", "output": "a"},
    ]
    assert why(steps, late)[(0, 0)] == (
        "the actual first steps [1] come after the steps matched to group 2, and a step of "
        "group 1 must come before them"
    )
    same = [[{"name": "tool", "output": "a"}, {"name": "tool", "output": "a"}]]
    assert why(same, actual(["a"])) == {
        (0, 0): "actual step tool [0] (id c0): it matches, but it is matched to step 2 of group 1"
    }


def test_the_closest_candidate_is_explained() -> None:
    ref = {
        "name": "lookup",
        "output": '{"a": 1, "b": [1, 2]}',
        "output_media_type": "application/json",
    }
    steps = [
        {"name": "lookup", "id": f"c{i}", "status": "success", "output": out}
        for i, out in enumerate(['{"a": 1, "b": [1, 3]}', '{"a": 2}'])
    ]
    text = why([[ref]], steps)[(0, 0)]
    assert text.startswith("closest of 2 candidates, actual step lookup [")
    assert "output differs at $" in text


def test_retrieval_and_arguments() -> None:
    retrieval = {"name": "retrieval", "args": {"k": 2}, "output": '[{"id": "d1"}, {"id": "d2"}]'}
    got = [{"name": "retrieval", "args": {"k": 2}, "status": "success", "output": '[{"id": "d3"}]'}]
    assert why([[retrieval]], got) == {
        (0, 0): "actual step retrieval [0]: reference ids not in the top 2: d1, d2"
    }
    half = [dict(got[0], output='[{"id": "d1"}, {"id": "d9"}]')]
    assert why([[retrieval]], half) == {
        (0, 0): "partly matched by actual step retrieval [0]: reference ids not in the top 2: d2"
    }
    points = {
        "name": "retrieve_data_points",
        "args": {"external_id": "x", "granularity": "1h", "limit": 100, "start": "1d-ago"},
    }
    act = {
        "name": "retrieve_data_points",
        "status": "success",
        "execution_timestamp": "2024-01-02T00:00:00Z",
        "args": {"external_id": "x", "granularity": "2h", "limit": 50, "start": "2024-01-01"},
    }
    assert why([[points]], [act]) == {
        (0, 0): "actual step retrieve_data_points [0]: granularity: reference 1h, actual 2h; "
        "limit: reference 100, actual 50"
    }
    series = {"name": "retrieve_time_series", "args": {"mrid": ["a", "b"], "limit": 10}}
    other = {
        "name": "retrieve_time_series",
        "status": "success",
        "args": {"mrid": "a", "limit": 10},
    }
    assert why([[series]], [other]) == {
        (0, 0): 'actual step retrieve_time_series [0]: mrid: reference ["a","b"], actual a'
    }
    plain = {"name": "tool", "args": {"q": "x", "n": 1}}
    assert why([[plain]], [{"name": "tool", "status": "success", "args": {"q": "x", "n": 2}}]) == {
        (0, 0): "actual step tool [0]: arguments differ at args.n: reference 1, actual 2"
    }


def test_problems_of_the_actual_step_are_the_reason() -> None:
    ref = {"name": "lookup", "output": "{}", "output_media_type": "application/json"}
    bad = [{"name": "lookup", "status": "success", "output": "{not json"}]
    text = why([[ref]], bad)[(0, 0)]
    assert text.startswith("actual step lookup [0]: output: not valid JSON")


def test_mismatch_kinds() -> None:
    from qa_eval.steps.explain import mismatch_kinds

    assert mismatch_kinds("not evaluated: group 2 has no match, ...") == ["not evaluated"]
    assert mismatch_kinds("actual step q [0]: column ?mva not found; 2 rows missing: x=1; y=2") == [
        "column not found",
        "rows missing",
    ]
    assert mismatch_kinds("actual step q [0]: ASK result is false, expected true") == ["ASK value"]
    assert mismatch_kinds("something else") == ["other"]


# The one-step-groups path of match_steps against the general path (issue 36).


def _general(groups, scorer: StepScorer):  # type: ignore[no-untyped-def]
    """match_steps' general path: greedy, the bound, the search when the bound is higher."""
    candidates = scorer.successful()
    greedy = greedy_matches(groups, scorer, candidates)
    greedy_score = steps_score(groups, greedy)
    if greedy_score >= 1.0 - 1e-12 or not candidates:
        return greedy, greedy_score
    if greedy_score >= upper_bound(groups, scorer, candidates) - 1e-12:
        return greedy, greedy_score
    best = best_matches(groups, scorer, candidates)
    best_score = steps_score(groups, best)
    return (best, best_score) if best_score > greedy_score + 1e-9 else (greedy, greedy_score)


def _select(rows: list[str], var: str = "v") -> str:
    bindings = [{var: {"type": "literal", "value": r}} for r in rows]
    return json.dumps({"head": {"vars": [var]}, "results": {"bindings": bindings}})


_SINGLE_REFS = [
    {"name": "tool", "output": "a"},
    {"name": "tool", "output": "b"},
    {"name": "other", "output": "a"},
    {"name": "send", "args": {"to": 1}},
    {"name": "get", "output": '{"x": 1}', "output_media_type": "application/json"},
    {"name": "retrieval", "args": {"k": 3}, "output": json.dumps([{"id": "d1"}, {"id": "d2"}])},
    {
        "name": "sparql_query",
        "output": _select(["a", "b"]),
        "output_media_type": "application/sparql-results+json",
        "required_columns": ["v"],
    },
    {
        "name": "iri_discovery",
        "output": "urn:x",
        "output_media_type": "text/uri",
        "required_columns": ["uri"],
    },
]
_SINGLE_ACTUALS = [
    {"name": "tool", "output": "a"},
    {"name": "tool", "output": "b"},
    {"name": "tool"},  # no output: a problem
    {"name": "other", "output": "a"},
    {"name": "send", "args": {"to": 1}},
    {"name": "send", "args": {"to": 2}},
    {"name": "get", "output": '{"x": 1}'},
    {"name": "get", "output": "{not json"},
    {"name": "retrieval", "args": {"k": 3}, "output": json.dumps([{"id": "d1"}])},
    {"name": "retrieval", "args": {"k": 3}, "output": json.dumps([{"id": "d2"}, {"id": "d1"}])},
    {"name": "retrieval", "args": {"k": 0}, "output": json.dumps([{"id": "d1"}])},
    {"name": "retrieval", "args": {"k": 2}, "output": "[1]"},
    {"name": "sparql_query", "output": _select(["b", "a"], "w")},
    {"name": "sparql_query", "output": _select(["a"])},
    {"name": "sparql_query", "output": '{"head": {}, "boolean": true}'},
    {"name": "sparql_query", "output": '{"results": {"bindings": [{"v": {"type": 1}}]}}'},
    {"name": "sparql_query", "output": "[]"},
    {"name": "sparql_query", "output": "urn:x"},
    {"name": "autocomplete_search", "output": '{"uri": "urn:x"}'},
    {"name": "autocomplete_search"},
    {"name": "tool", "output": "a", "status": "error"},
]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(range(len(_SINGLE_REFS))), min_size=1, max_size=4),
    st.lists(st.sampled_from(range(len(_SINGLE_ACTUALS))), min_size=0, max_size=9),
)
def test_one_step_groups_match_as_the_general_path(refs: list[int], steps: list[int]) -> None:
    groups = prepared_groups([[_SINGLE_REFS[r]] for r in refs])
    actual_steps = [{**_SINGLE_ACTUALS[s], "id": f"c{i}"} for i, s in enumerate(steps)]
    fast, general = StepScorer(actual_steps), StepScorer(actual_steps)
    expected = _general(groups, general)
    assert match_steps(groups, fast) == expected
    # The same problems, recorded first for each step (step_errors shows them).
    assert list(fast.problems.items()) == list(general.problems.items())
    # The pairs left out are those whose names cannot match, each scoring 0.
    for key, value in general._scores.items():
        assert fast._scores.get(key, 0.0) == value
    # Matched again with the same scorer (whose scans compare again, without reading the
    # scores kept): the same result, and no new problem.
    assert match_steps(groups, fast) == expected
    assert list(fast.problems.items()) == list(general.problems.items())


def test_the_names_a_reference_step_can_match() -> None:
    groups = prepared_groups([[_SINGLE_REFS[0]], [_SINGLE_REFS[7]]])
    scorer = StepScorer([])
    assert tuple(scorer.matchable_names(groups[0][0])) == ("tool",)  # type: ignore[arg-type]
    iri = scorer.matchable_names(groups[1][0])
    assert "sparql_query" in iri and "autocomplete_search" in iri and "iri_discovery" not in iri


@settings(max_examples=400, deadline=None)
@given(st.integers(0, 100_000))
def test_one_step_groups_search_as_the_general_search(seed: int) -> None:
    # match_steps' own search for one-step groups (``_best_singletons``) against the general
    # path's ``best_matches``: the same matches, ties included (scores whose sums differ by a
    # rounding error, or are equal along different steps).
    rnd = random.Random(seed)
    groups = groups_of([[f"s{g}"] for g in range(rnd.randint(1, 4))])
    n = rnd.randint(1, 9)
    table = {
        (ref.group, ref.index, a): rnd.choice([1.0, 0.7, 0.6, 0.5, 0.3, 0.2, 0.1])
        for group in groups
        for ref in group
        for a in range(n)
        if rnd.random() < 0.6
    }
    failed = tuple(a for a in range(n) if rnd.random() < 0.1)
    scorer = _TableScorer(n, table, failed)
    assert match_steps(groups, scorer) == _general(groups, _TableScorer(n, table, failed))


def test_a_group_of_several_steps_after_one_step_groups() -> None:
    # The one-step path meets a group of two steps after matching the last group: the
    # general path decides, from the scores and problems it kept.
    spec = [[{"name": "tool", "output": "a"}, {"name": "tool", "output": "b"}]]
    spec.append([{"name": "tool", "output": "c"}])
    groups = prepared_groups(spec)
    outputs = ["b", None, "a", "c"]
    steps = [{"name": "tool", "id": f"c{i}", "output": out} for i, out in enumerate(outputs)]
    fast, general = StepScorer(steps), StepScorer(steps)
    matches, total = match_steps(groups, fast)
    assert (matches, total) == _general(groups, general)
    assert total == 1.0 and sorted(a for _, _, a, _ in matches) == [0, 2, 3]
    assert list(fast.problems) == list(general.problems) == [1]


def test_a_large_group_the_matching_never_reaches_keeps_the_general_rule() -> None:
    # One-step groups [W], [Z] after a group of 13 steps. Z scores 0.5 on a2, 1.0 on a1; W
    # scores 0 everywhere, so the matching stops there. The bound (1.0 for Z) calls for a
    # search, which the general path skips for a group of more than 12 steps (greedy kept):
    # so does match_steps, although the search would reach Z -> a1 only.
    groups = groups_of([[f"b{i}" for i in range(13)], ["w"], ["z"]])
    table = {(2, 0, 2): 0.5, (2, 0, 1): 1.0}
    matches, total = match_steps(groups, _TableScorer(3, table))
    assert (matches, total) == _general(groups, _TableScorer(3, table))
    assert matches == [(2, 0, 2, 0.5)] and abs(total - 0.5 / 3) < 1e-12
    # Without the large group, the search finds the better step.
    small = groups_of([["w"], ["z"]])
    table = {(1, 0, 2): 0.5, (1, 0, 1): 1.0}
    assert match_steps(small, _TableScorer(3, table)) == ([(1, 0, 1, 1.0)], 0.5)


def test_a_step_of_no_known_kind_is_compared_as_text() -> None:
    # A reference step made by hand, without a kind: its output compared as text, as before.
    from qa_eval.steps.kinds import ReferenceStep

    ref = ReferenceStep(0, 0, {"name": "tool", "output": "a"}, "tool", None)
    assert ref.kind == ""
    steps = [
        {"name": "tool", "output": "a"},
        {"name": "tool", "output": "b"},
        {"name": "other", "output": "a"},
        {"name": "tool", "id": "c3"},
    ]
    scorer = StepScorer(steps)
    assert [scorer.score(ref, a) for a in range(4)] == [1.0, 0.0, 0.0, 0.0]
    assert scorer.problems == {3: "actual_steps[3] (id c3): output: missing in a successful step"}
    assert match_steps([[ref]], StepScorer(steps)) == ([(0, 0, 0, 1.0)], 1.0)


def test_fully_matched() -> None:
    groups = groups_of([["a"], ["b", "c"]])
    whole = [(0, 0, 0, 1.0), (1, 0, 2, 1.0), (1, 1, 1, 1.0)]
    assert fully_matched(groups, whole)
    assert not fully_matched(groups, whole[:2])  # a step left unmatched
    assert not fully_matched(groups, [*whole[:2], (1, 0, 1, 1.0)])  # a step matched twice
    assert not fully_matched(groups, [*whole[:2], (1, 1, 1, 0.5)])  # a partial match
    assert not fully_matched(groups, [])  # (no match: decided without counting the steps)
    # No match, and no step to match: nothing to explain.
    assert fully_matched([], []) and fully_matched([[], []], [])
    assert not fully_matched([[], *groups_of([["a"]])], [])
