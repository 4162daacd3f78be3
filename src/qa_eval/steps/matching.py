"""Match reference step groups to actual steps and compute ``steps_score``.

Definition (QA-evaluation README of graphrag-eval, "Reference Q&A Data" and ``steps_score``):
reference steps come in groups executed in order; steps within a group may run in any order. The
groups are matched from the last one backwards. An actual step matches at most one reference step,
only successful actual steps match, and every step matched to a group comes before every step
matched to the group after it. A group that is not fully matched ends the matching (its partial
matches still count). With ``s_g`` the sum of the match scores in group ``g`` (1 per matched step,
or a retrieval step's recall@k) and ``G`` the number of groups::

    steps_score = (1 / G) * sum_g  s_g / |g|

The original matches greedily: for each reference step (last first) it takes the latest unused
actual step that scores above 0. That can miss a better assignment, e.g. reference group [X, Y]
against actual steps [a1 (matches Y only), a2 (matches X and Y)]: greedy gives Y -> a2 and leaves
X unmatched (0.5); X -> a2, Y -> a1 scores 1.0. qa-eval computes the greedy matching and the best
matching under the same rules, and keeps the greedy one unless the best one scores higher, so it
agrees with the original wherever the original was already optimal.

The best matching is found by dynamic programming over (group, boundary): for each group, a
subset DP over its reference steps scans the candidate actual steps from the boundary down. The
search runs only when the greedy score is below an upper bound (each reference step's best score
over the steps the ordering leaves it, steps shared), so the usual imperfect answer - a missing
SPARQL row, a retrieval recall below 1 - costs no search.

When every group has one step (the usual reference), the greedy matching and the bound are
computed in one pass over the actual steps whose name can match
(``StepScorer.matchable_names``): the other steps score 0 without a comparison. The same pairs
are compared in the same order as on the general path, so the same problems are recorded. Its
search, when the bound calls for one, is ``best_matches`` written for one step per group: the
same result, from the scores of the steps whose name can match.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import itemgetter

from .compare import StepScorer
from .kinds import ReferenceStep

__all__ = [
    "Match",
    "best_matches",
    "fully_matched",
    "greedy_matches",
    "match_steps",
    "steps_score",
    "upper_bound",
]

Match = tuple[int, int, int, float]
"""(group index, step index in the group, actual step index, score)."""

_EPSILON = 1e-12
_MAX_EXACT_GROUP = 12  # subset DP over 2**12 states per candidate; larger groups stay greedy


def fully_matched(groups: Sequence[Sequence[ReferenceStep]], matches: Sequence[Match]) -> bool:
    """Whether ``matches`` give every reference step of ``groups`` a whole match: then
    ``steps.explain`` has nothing to explain."""
    size = 0
    for group in groups:  # (a loop, not sum() over a map: fewer instructions for a few)
        size += len(group)
    if len(matches) != size:
        return False
    for match in matches:  # (a loop, not all() over a generator: one call fewer)
        if not match[3] >= _WHOLE:
            return False
    return len(set(map(_STEP, matches))) == len(matches)  # (each step once)


_WHOLE = 1.0 - _EPSILON
_STEP = itemgetter(0, 1)  # (group, step index) of a match


def greedy_matches(
    groups: Sequence[Sequence[ReferenceStep]], scorer: StepScorer, candidates: Sequence[int]
) -> list[Match]:
    """The original library's greedy matching (last group first, latest actual step first)."""
    matches: list[Match] = []
    upto = len(scorer.actual)
    latest_first = candidates[::-1]
    score_of = scorer.score
    for g in range(len(groups) - 1, -1, -1):
        group = groups[g]
        if len(group) == 1:
            # Hot path, the usual group of one step: no step of its own to skip.
            ref = group[0]
            for a in latest_first:
                if a < upto:
                    score = score_of(ref, a)
                    if score > 0.0:
                        matches.append((g, ref.index, a, score))
                        upto = a
                        break
            else:
                break  # not matched: the matching ends here
            continue
        used: list[int] = []  # the actual steps this group took (a group is small)
        for ref in reversed(group):
            for a in latest_first:
                if a < upto and a not in used:
                    score = score_of(ref, a)
                    if score > 0.0:
                        matches.append((g, ref.index, a, score))
                        used.append(a)
                        break
        if len(used) < len(group):
            break  # a group not fully matched ends the matching; its matches count
        upto = min(used)
    return matches


def steps_score(groups: Sequence[Sequence[ReferenceStep]], matches: Sequence[Match]) -> float:
    """``steps_score`` of a matching: mean over groups of (sum of scores / group size)."""
    if not groups:
        return 0.0
    per_group = [0.0] * len(groups)
    for g, _, _, score in matches:
        per_group[g] += score
    total = 0.0
    for group_sum, group in zip(per_group, groups):
        total += group_sum / len(group)
    return total / len(groups)


def best_matches(
    groups: Sequence[Sequence[ReferenceStep]], scorer: StepScorer, candidates: Sequence[int]
) -> list[Match]:
    """A matching with the highest ``steps_score`` under the ordering rules."""
    if any(len(group) > _MAX_EXACT_GROUP for group in groups):
        return greedy_matches(groups, scorer, candidates)

    memo: dict[tuple[int, int], tuple[float, tuple[Match, ...]]] = {}

    def solve(g: int, upto: int) -> tuple[float, tuple[Match, ...]]:
        # Best total for groups g, g-1, ..., 0 using actual steps with index < upto.
        if g < 0:
            return 0.0, ()
        known = memo.get((g, upto))
        if known is None:
            known = memo[(g, upto)] = solve_group(g, upto)
        return known

    def solve_group(g: int, upto: int) -> tuple[float, tuple[Match, ...]]:
        group = groups[g]
        size = len(group)
        full = (1 << size) - 1
        # dp[mask] = (sum of scores, matches) using candidates scanned so far (from upto down).
        dp: dict[int, tuple[float, tuple[Match, ...]]] = {0: (0.0, ())}
        best_total: float = 0.0
        best_plan: tuple[Match, ...] = ()
        for a in reversed([c for c in candidates if c < upto]):
            scores = [scorer.score(ref, a) for ref in group]
            if not any(s > 0.0 for s in scores):
                continue
            updates: dict[int, tuple[float, tuple[Match, ...]]] = {}
            for mask, (total, plan) in dp.items():
                for i, s in enumerate(scores):
                    if s <= 0.0 or mask & (1 << i):
                        continue
                    new_mask = mask | (1 << i)
                    entry = (total + s, (*plan, (g, group[i].index, a, s)))
                    if new_mask == full:
                        # The group is complete and its earliest step is a: continue below a.
                        rest_total, rest_plan = solve(g - 1, a)
                        value = entry[0] / size + rest_total
                        if value > best_total + _EPSILON:
                            best_total, best_plan = value, entry[1] + rest_plan
                    current = updates.get(new_mask) or dp.get(new_mask)
                    if current is None or entry[0] > current[0] + _EPSILON:
                        updates[new_mask] = entry
            dp.update(updates)
        # Stopping at this group with a partial matching.
        for mask, (total, plan) in dp.items():
            if mask != full and total / size > best_total + _EPSILON:
                best_total, best_plan = total / size, plan
        return best_total, best_plan

    return list(solve(len(groups) - 1, len(scorer.actual))[1])


def upper_bound(
    groups: Sequence[Sequence[ReferenceStep]], scorer: StepScorer, candidates: Sequence[int]
) -> float:
    """A bound no matching's ``steps_score`` exceeds: from the last group back, each reference
    step counts its best score over the actual steps the ordering leaves it, as if the steps
    could be shared, and a group some step of which scores 0 everywhere ends the count."""
    if not groups:
        return 0.0
    total = 0.0
    upto = len(scorer.actual)
    score_of = scorer.score
    for g in range(len(groups) - 1, -1, -1):
        group = groups[g]
        usable = [a for a in candidates if a < upto]
        group_total = 0.0
        complete = True
        latest = -1  # the latest actual step that scores above 0 for this group
        for ref in group:
            best = 0.0
            for a in usable:
                score = score_of(ref, a)
                if score > 0.0:
                    if score > best:  # (max(), without a call per step)
                        best = score
                    if a > latest:
                        latest = a
            group_total += best
            complete = complete and best > 0.0
        total += group_total / len(group)
        if not complete:
            break
        upto = latest  # a later group's steps all come after the earlier groups' steps
    return total / len(groups)


def match_steps(
    groups: Sequence[Sequence[ReferenceStep]], scorer: StepScorer
) -> tuple[list[Match], float]:
    """Match and score: the greedy matching unless the best one scores strictly higher."""
    candidates = scorer.successful()
    # Groups of one step (the usual reference) in one pass: ``_match_groups``' result, from
    # the steps whose name can match (the rest score 0 with no comparison) and the same
    # pairs, in the same order (so the same problems are recorded).
    #
    # With one step per group the greedy matching and ``upper_bound`` stop at the same group
    # and leave each group the same steps (a group's latest step scoring above 0 is its greedy
    # match), so the bound adds only each matched group's steps before its match. The
    # candidates are in order: those before a match's position are the steps before it.
    # Neither reaches a group before the one they stop at, nor does the search (that group
    # scores 0 on every step the ordering leaves it), so the groups are checked as they come.
    matches: list[Match] = []
    stop = len(candidates)  # the candidates before this position come before every match
    g = len(groups)
    while g:  # (not a range: most questions stop at the first group they reach)
        g -= 1
        group = groups[g]
        if len(group) != 1:
            return _match_groups(groups, scorer, candidates)
        if not stop:
            break  # (no step left to compare: not matched)
        ref = group[0]
        # (called, not bound first: most questions reach one group, most no further)
        i, score = scorer.latest_match(ref, candidates, stop)
        if i < 0:
            break  # not matched: the matching ends here
        matches.append((g, ref.index, candidates[i], score))
        stop = i
    if not matches:
        return matches, 0.0  # (the bound is 0 too)
    # steps_score: the groups' scores summed from the first group on, over the groups.
    greedy_score = 0.0
    j = len(matches)
    while j:  # (not reversed(): one or two matches, mostly)
        j -= 1
        greedy_score += matches[j][3]
    greedy_score /= len(groups)
    if greedy_score >= 1.0 - _EPSILON:
        return matches, greedy_score
    # upper_bound: each matched group's best score over its steps up to its match.
    # (a match's position found again here, where the bound needs it, rather than kept for
    # every question)
    total = 0.0
    for g, _, a, best in matches:
        total += scorer.best_before(groups[g][0], candidates, candidates.index(a), best)
    if greedy_score >= total / len(groups) - _EPSILON:
        return matches, greedy_score
    if not _ONE.issuperset(map(len, groups)):
        # (a group of several steps, never reached: the general search, whose rule for a
        # large group may differ)
        return _match_groups(groups, scorer, candidates)
    searched = _best_singletons(groups, scorer, candidates)
    searched_score = steps_score(groups, searched)
    if searched_score > greedy_score + 1e-9:  # (as ``_searched`` decides)
        return searched, searched_score
    return matches, greedy_score


_ONE = frozenset((1,))


def _match_groups(
    groups: Sequence[Sequence[ReferenceStep]], scorer: StepScorer, candidates: Sequence[int]
) -> tuple[list[Match], float]:
    """``match_steps`` of any groups: the greedy matching, the bound, the search when the bound
    is higher."""
    greedy = greedy_matches(groups, scorer, candidates)
    greedy_score = steps_score(groups, greedy)
    if greedy_score >= 1.0 - _EPSILON or not candidates:
        return greedy, greedy_score
    if greedy_score >= upper_bound(groups, scorer, candidates) - _EPSILON:
        return greedy, greedy_score  # nothing can score higher: skip the search
    return _searched(groups, scorer, candidates, greedy, greedy_score)


def _searched(
    groups: Sequence[Sequence[ReferenceStep]],
    scorer: StepScorer,
    candidates: Sequence[int],
    greedy: list[Match],
    greedy_score: float,
) -> tuple[list[Match], float]:
    """The best matching when it scores strictly higher than the greedy one, else the greedy."""
    best = best_matches(groups, scorer, candidates)
    best_score = steps_score(groups, best)
    if best_score > greedy_score + 1e-9:
        return best, best_score
    return greedy, greedy_score


def _best_singletons(
    groups: Sequence[Sequence[ReferenceStep]], scorer: StepScorer, candidates: Sequence[int]
) -> list[Match]:
    """``best_matches`` when every group has one step, with the same result: the same sums,
    in the same order, and the same choice among equal ones (the latest step first, a sum
    kept unless another beats it by more than ``_EPSILON``). Only the steps whose name can
    match are scored (the rest score 0): pairs the greedy matching and the bound compared
    already, so no new problem is recorded.

    ``solve(g, stop)``: the best total and matches of groups g, g-1, ..., 0 over the
    candidates before position ``stop``."""
    actual = scorer.actual
    score_of = scorer.score
    memo: dict[tuple[int, int], tuple[float, tuple[Match, ...]]] = {}

    def solve(g: int, stop: int) -> tuple[float, tuple[Match, ...]]:
        known = memo.get((g, stop))
        if known is not None:
            return known
        ref = groups[g][0]
        names = scorer.matchable_names(ref)
        best_total = 0.0
        best_plan: tuple[Match, ...] = ()
        for i in range(stop - 1, -1, -1):
            a = candidates[i]
            if actual[a].get("name") in names:
                score = score_of(ref, a)
                if score > 0.0:
                    rest_total, rest_plan = solve(g - 1, i) if g else (0.0, ())
                    value = score + rest_total
                    if value > best_total + _EPSILON:
                        best_total = value
                        best_plan = ((g, ref.index, a, score), *rest_plan)
        known = memo[(g, stop)] = (best_total, best_plan)
        return known

    return list(solve(len(groups) - 1, len(candidates))[1])
