"""Optimal matching of reference calls to actual tool calls, and the trajectory metrics.

Each pair (reference call i, successful actual call j) of the same tool name gets an argument
score s (``comparators.ArgsSpec.count``: satisfied reference arguments / reference arguments,
1 without any) and matches when every reference argument is satisfied and the mode refuses no
actual argument. The assignment maximises, lexicographically, the matched required
calls, then all matched calls, then the total argument score of the required calls (then of the
optional ones), through one weight per pair::

    w = matched * (K1 * required + K2) + s * (1 if required else 1e-6) + 1e-9
    K2 = n + 1,   K1 = (min(n, m) + 1) * K2

(0 for a pair of different names: never assigned). Unordered modes solve the assignment problem
(``scipy.optimize.linear_sum_assignment`` when scipy is importable, else the O(n^2 m) Hungarian
algorithm below), on each connected block of same-name pairs; ordered modes (``strict``, or
``ordered: true``) the O(n m) weighted alignment (dynamic programming, as for the longest common
subsequence). Neither is ever greedy, so the result does not depend on the order of the
reference list where the mode ignores order.

A trajectory matches when, for ``strict`` and ``unordered``, every required reference call and
every successful actual call is matched; ``superset``: every required reference call;
``subset``: every successful actual call. Failed calls (``status: error``) never match and are
never extra. The chosen acceptable trajectory is the first that matches, else the one with the
best ``tool_f1`` (ties: the first). Source: the modes of LangChain agentevals 0.0.9
(``trajectory_match_mode``), with optimal instead of first-fit matching.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from .calls import ActualCall, TrajectoryScore, actual_calls
from .comparators.values import LlmAnswers, freeze
from .explain import explain_reference_call
from .reference import RefCall, Reference

__all__ = ["assign", "evaluate_trajectory", "score_one"]

_SCIPY = importlib.util.find_spec("scipy") is not None
_SMALL = 144
"""Blocks up to this many cells are solved by the Hungarian algorithm below: faster there than
scipy's call (its array conversion), the same optimum."""


def _hungarian(cost: list[list[float]]) -> list[tuple[int, int]]:
    """A minimum-cost assignment of every row (rows <= columns): O(n^2 m)."""
    n, m = len(cost), len(cost[0])
    inf = float("inf")
    u, v = [0.0] * (n + 1), [0.0] * (m + 1)
    p, way = [0] * (m + 1), [0] * (m + 1)
    for i in range(1, n + 1):
        p[0], j0 = i, 0
        minv, used = [inf] * (m + 1), [False] * (m + 1)
        while True:
            used[j0] = True
            i0, delta, j1 = p[j0], inf, 0
            row = cost[i0 - 1]
            for j in range(1, m + 1):
                if not used[j]:
                    cur = row[j - 1] - u[i0] - v[j]
                    if cur < minv[j]:
                        minv[j], way[j] = cur, j0
                    if minv[j] < delta:
                        delta, j1 = minv[j], j
            for j in range(m + 1):
                if used[j]:
                    u[p[j]] += delta
                    v[j] -= delta
                else:
                    minv[j] -= delta
            j0 = j1
            if p[j0] == 0:
                break
        while j0:
            j1 = way[j0]
            p[j0] = p[j1]
            j0 = j1
    return [(p[j] - 1, j - 1) for j in range(1, m + 1) if p[j]]


def _max_assignment(w: list[list[float]]) -> list[tuple[int, int]]:
    """The pairs of a maximum-weight assignment with a positive weight."""
    n, m = len(w), len(w[0])
    if _SCIPY and n * m > _SMALL:
        import numpy as np
        from scipy.optimize import linear_sum_assignment  # type: ignore[import-untyped]

        rows, cols = linear_sum_assignment(np.asarray(w, dtype=float), maximize=True)
        pairs = list(zip(rows.tolist(), cols.tolist()))
    elif n <= m:
        pairs = _hungarian([[-x for x in row] for row in w])
    else:
        flipped = _hungarian([[-w[i][j] for i in range(n)] for j in range(m)])
        pairs = [(i, j) for j, i in flipped]
    return [(i, j) for i, j in pairs if w[i][j] > 0]


def _blocks(rows: list[dict[int, float]]) -> list[tuple[list[int], list[int]]]:
    """The connected blocks (rows, columns) of the positive entries of a sparse matrix."""
    parent: dict[Any, Any] = {}

    def find(x: Any) -> Any:
        root = x
        while parent.get(root, root) != root:
            root = parent[root]
        while x != root:
            parent[x], x = root, parent.get(x, x)
        return root

    for i, row in enumerate(rows):
        for j in row:
            a, b = find(("r", i)), find(("c", j))
            if a != b:
                parent[a] = b
    blocks: dict[Any, tuple[list[int], list[int]]] = {}
    columns: set[int] = set()
    for i, row in enumerate(rows):
        if row:
            blocks.setdefault(find(("r", i)), ([], []))[0].append(i)
            columns.update(row)
    for j in sorted(columns):
        blocks[find(("c", j))][1].append(j)
    return list(blocks.values())


def _unordered(
    rows: list[dict[int, float]], blocks: list[tuple[list[int], list[int]]] | None = None
) -> list[tuple[int, int]]:
    """The maximum-weight assignment, block by block (``blocks``: known already)."""
    pairs: list[tuple[int, int]] = []
    for block_rows, cols in _blocks(rows) if blocks is None else blocks:
        if len(block_rows) == 1 or len(cols) == 1:
            best = max((rows[i].get(j, 0.0), -i, -j) for i in block_rows for j in cols)
            pairs.append((-best[1], -best[2]))
            continue
        # each row's best column (the first of its ties): when no two rows want the same one,
        # that is the optimum (no assignment can do better than every row's maximum)
        chosen = [max(rows[i].items(), key=lambda item: (item[1], -item[0]))[0] for i in block_rows]
        if len(set(chosen)) == len(chosen) and all(
            sum(1 for x in rows[i].values() if x == rows[i][j]) == 1
            for i, j in zip(block_rows, chosen)
        ):
            pairs += zip(block_rows, chosen)
            continue
        sub = [[rows[i].get(j, 0.0) for j in cols] for i in block_rows]
        pairs += [(block_rows[a], cols[b]) for a, b in _max_assignment(sub)]
    return pairs


def _ordered(w: list[list[float]]) -> list[tuple[int, int]]:
    """The maximum-weight order-preserving alignment (dynamic programming)."""
    n, m = len(w), len(w[0])
    best = [[0.0] * (m + 1) for _ in range(n + 1)]
    for i in range(1, n + 1):
        row, prev, weights = best[i], best[i - 1], w[i - 1]
        for j in range(1, m + 1):
            value = prev[j] if prev[j] >= row[j - 1] else row[j - 1]
            weight = weights[j - 1]
            if weight > 0 and prev[j - 1] + weight > value:
                value = prev[j - 1] + weight
            row[j] = value
    pairs = []
    i, j = n, m
    while i and j:
        weight = w[i - 1][j - 1]
        if weight > 0 and best[i][j] == best[i - 1][j - 1] + weight:
            pairs.append((i - 1, j - 1))
            i, j = i - 1, j - 1
        elif best[i][j] == best[i - 1][j]:
            i -= 1
        else:
            j -= 1
    return pairs[::-1]


def assign(w: list[list[float]], ordered: bool) -> list[tuple[int, int]]:
    """The (row, column) pairs of a maximum-weight one-to-one assignment of the positive
    weights; order-preserving on both sides when ``ordered``."""
    if not w or not w[0]:
        return []
    if ordered:
        return _ordered(w)
    return _unordered([{j: x for j, x in enumerate(row) if x > 0} for row in w])


def _f1(matched: int, matched_required: int, required: int, m: int) -> tuple[int, int]:
    """``tool_f1`` = 2PR / (P + R) as an integer fraction (numerator, denominator): with P = k/m
    and R = q/r it is 2kq / (kr + qm), so one division rounds it (2/3, not 0.6666666666666665)
    and equal F1s compare equal."""
    k, q, r = matched, matched_required, required
    if not r:
        return (2 * k, k + m) if m else (1, 1)  # R = 1
    if not m:
        return 0, 1  # R = 0, P = 1
    den = k * r + q * m
    return (2 * k * q, den) if den else (0, 1)


def score_one(
    calls: tuple[RefCall, ...],
    done: list[ActualCall],
    by_name: dict[str, list[int]],
    mode: str,
    ordered: bool,
    llm: LlmAnswers,
) -> TrajectoryScore:
    """One acceptable trajectory scored against the successful calls ``done`` (``by_name``:
    their positions by tool name)."""
    n, m = len(calls), len(done)
    k2 = n + 1.0
    k1 = (min(n, m) + 1) * k2
    rows: list[dict[int, float]] = []
    scores: dict[tuple[int, int], tuple[int, int, bool]] = {}
    for i, ref in enumerate(calls):
        row: dict[int, float] = {}
        count = ref.args.count
        bonus = k2 if ref.optional else k1 + k2
        scale = 1e-6 if ref.optional else 1.0
        for name in ref.names:
            for j in by_name.get(name, ()):
                satisfied, units, foreign = count(done[j].args, llm)
                scores[i, j] = (satisfied, units, not foreign and satisfied == units)
                if scores[i, j][2]:
                    row[j] = bonus + scale + 1e-9
                else:
                    row[j] = (satisfied / units if units else 1.0) * scale + 1e-9
        rows.append(row)
    if ordered and rows and m:
        pairs = dict(_ordered([[row.get(j, 0.0) for j in range(m)] for row in rows]))
    elif all(len(c.names) == 1 for c in calls):  # the blocks are the tool names
        groups: dict[str, list[int]] = {}
        for i, call in enumerate(calls):
            if rows[i]:
                groups.setdefault(call.names[0], []).append(i)
        pairs = dict(_unordered(rows, [(g, by_name[name]) for name, g in groups.items()]))
    else:
        pairs = dict(_unordered(rows))
    matched = {i: j for i, j in pairs.items() if rows[i][j] >= k2}
    required = [i for i, c in enumerate(calls) if not c.optional]
    matched_required = sum(1 for i in required if i in matched)
    recall = matched_required / len(required) if required else 1.0
    precision = len(matched) / m if m else 1.0
    # no required call and no successful call: P = R = 1, so F1 = 1; only unmatched actual
    # calls: P = 0; nothing called: R = 0 (F1 0); optional calls matching every actual call: 1
    num, den = _f1(len(matched), matched_required, len(required), m)
    f1 = num / den
    parts = []
    for i in required:
        if i in pairs:
            satisfied, units, _ = scores[i, pairs[i]]
            parts.append(1.0 if units == 0 else satisfied / units)
    # fsum is correctly rounded, so the value does not depend on the order of the reference list
    args_score = math.fsum(parts) / len(required) if required else 1.0
    all_required = matched_required == len(required)
    all_actual = len(matched) == m
    if mode in ("strict", "unordered"):
        ok = all_required and all_actual
    elif mode == "superset":
        ok = all_required
    else:
        ok = all_actual
    return TrajectoryScore(calls, pairs, matched, scores, ok, recall, precision, f1, args_score)


def _exact_f1(outcome: TrajectoryScore, m: int) -> Fraction:
    """``tool_f1`` as an exact fraction, so that equal F1s of two acceptable trajectories tie
    (the first wins) instead of being told apart by rounding."""
    required = [i for i, c in enumerate(outcome.calls) if not c.optional]
    q = sum(1 for i in required if i in outcome.matched)
    return Fraction(*_f1(len(outcome.matched), q, len(required), m))


def _repeated(done: list[ActualCall]) -> set[int]:
    seen: set[tuple[str, Any]] = set()
    out = set()
    for act in done:
        key = (act.name, freeze(act.args))
        if key in seen:
            out.add(act.index)
        seen.add(key)
    return out


def evaluate_trajectory(
    reference: Reference, raw: Any, steps: Sequence[Any], llm: LlmAnswers | None = None
) -> dict[str, Any]:
    """The trajectory result keys of one question (see docs/metrics/trajectory.md), with the
    copy of ``reference_trajectory`` (``raw``) annotated with ``matches`` / ``mismatch``."""
    llm = llm if llm is not None else LlmAnswers()
    acts = actual_calls(steps)
    lost = sum(a.lost_args for a in acts)
    if lost and reference.args_matter:
        return {
            "trajectory_error": f"not evaluable: {lost} of {len(acts)} calls have no recorded "
            "arguments (content capture off)"
        }
    done = [a for a in acts if a.ok]
    m = len(done)
    by_name: dict[str, list[int]] = {}
    for j, act in enumerate(done):
        by_name.setdefault(act.name, []).append(j)
    ordered = reference.ordered or reference.match == "strict"
    outcomes = [
        score_one(t, done, by_name, reference.match, ordered, llm) for t in reference.trajectories
    ]
    chosen = (
        max(range(len(outcomes)), key=lambda k: (outcomes[k].match, _exact_f1(outcomes[k], m), -k))
        if len(outcomes) > 1
        else 0
    )
    best = outcomes[chosen]
    by_actual = {done[j].index: i for i, j in best.matched.items()}
    repeated = _repeated(done)
    calls = []
    for act in acts:
        ref = by_actual.get(act.index)
        if not act.ok:
            role = "failed"
        elif ref is None:
            role = "extra"
        else:
            role = "optional" if best.calls[ref].optional else "matched"
        calls.append(
            {
                "index": act.index,
                "name": act.name,
                "id": act.id,
                "role": role,
                "reference": ref,
                "repeated": act.index in repeated,
            }
        )
    required = best.required
    missing = sum(1 for i, c in enumerate(best.calls) if not c.optional and i not in best.matched)
    extra = sum(1 for c in calls if c["role"] == "extra")
    failed = sum(1 for c in calls if c["role"] == "failed")
    reason = (
        f"{reference.match}{' ordered' if ordered and reference.match != 'strict' else ''}, "
        f"args {reference.args}: {required - missing} of {required} required calls matched, "
        f"{extra} extra, {failed} failed"
        + (f" (alternative {chosen})" if len(outcomes) > 1 else "")
    )
    if not best.calls:
        reason += "; tool_calls_ratio is null: the chosen trajectory has no call"
    return {
        "trajectory_match": 1.0 if best.match else 0.0,
        "trajectory_alternative": chosen,
        "tool_recall": best.recall,
        "tool_precision": best.precision,
        "tool_f1": best.f1,
        "tool_args_score": best.args_score,
        "tool_calls_missing": missing,
        "tool_calls_extra": extra,
        "tool_calls_failed": failed,
        "tool_calls_repeated": len(repeated),
        "tool_calls_ratio": len(done) / len(best.calls) if best.calls else None,
        "trajectory_reason": reason,
        "trajectory_calls": calls,
        "reference_trajectory": _annotated(raw, reference, chosen, best, done, acts, ordered, llm),
    }


def _annotated(
    raw: Any,
    reference: Reference,
    chosen: int,
    best: TrajectoryScore,
    done: list[ActualCall],
    acts: list[ActualCall],
    ordered: bool,
    llm: LlmAnswers,
) -> Any:
    """A copy of the reference trajectory, the chosen trajectory's calls annotated."""

    def clean(calls: Any) -> list[Any]:
        return [
            {k: v for k, v in c.items() if k not in ("matches", "mismatch")}
            if isinstance(c, Mapping)
            else c
            for c in calls
        ]

    copy: Any
    if reference.mapping:
        copy = dict(raw)
        copy["calls"] = clean(raw["calls"])
        if "alternatives" in raw:
            copy["alternatives"] = [clean(a) for a in raw["alternatives"]]
        target = copy["calls"] if chosen == 0 else copy["alternatives"][chosen - 1]
    else:
        copy = target = clean(raw)
    for i, call in enumerate(best.calls):
        if i in best.matched:
            act = done[best.matched[i]]
            target[i]["matches"] = act.id if act.id is not None else act.index
        else:
            target[i]["mismatch"] = explain_reference_call(call, i, best, done, acts, ordered, llm)
    return copy
