"""Step matching and steps_score: ordering rules, greedy agreement, and the optimal assignment."""

from __future__ import annotations

import itertools
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from fakes import prepared_groups
from qa_eval.steps.compare import StepScorer
from qa_eval.steps.matching import (
    best_matches,
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
