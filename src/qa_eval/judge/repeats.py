"""Judge variance: every LLM metric asked ``llm.repeats`` (``--repeats``) times per question.

A judge asked the same question twice does not always say the same thing (sampling at a
temperature above 0, and even at 0 on most hosted models). With ``repeats = N > 1`` each question's
LLM metrics are computed N times; repeat ``r`` (0-based) is a distinct cache entry (``r`` goes into
the cache key when above 0, so a cache made without repeats serves repeat 0 and a rerun replays all
N). The N records are merged into the question's result (:func:`merge_repeats`):

- **values** (the aggregated metrics: ``answer_f1``, ``faithfulness``, the ``retrieval_*`` step
  metrics, custom numeric outputs, ...): the key keeps its name and holds the mean over the
  repeats that gave a value; ``<key>_sd`` is their sample standard deviation (``N - 1`` in the
  denominator; null with fewer than 2 values) and ``<key>_repeats`` the list of per-repeat values
  (null where a repeat gave none). With ``x_r`` the value of repeat ``r`` and ``k`` their number:

      key = (1/k) Σ_r x_r        key_sd = sqrt( Σ_r (x_r - key)² / (k - 1) )

- **labels** (``answer_class``, ``factual_accuracy_grade``, custom outputs that are not numbers):
  the key holds the most frequent label (a tie goes to the one an earlier repeat gave),
  ``<key>_repeats`` every repeat's label and ``<key>_flipped`` whether they differ.
- **verdicts** (the per-statement or per-chunk judgements): ``faithfulness_verdicts_flipped``,
  ``context_precision_verdicts_flipped``, ``context_recall_verdicts_flipped`` say whether the
  sequence of verdicts (supported / relevant / attributed) differs between repeats; the lists
  themselves are the first repeat's.
- **costs** (``*_cost``, ``llm_cost``): the sum over the repeats (what the question cost).
- **errors** (``*_error``): kept when every repeat failed; when only some did, the value is the
  mean of the others and ``<key>_repeats`` (e.g. ``answer_correctness_error_repeats``) lists each
  repeat's error (null where it succeeded).
- everything else (reasons, claim counts, statements, generated questions): the first repeat's
  that has the key. Offline metrics (semantic similarity, BERTScore) are computed once.
- ``judge_repeats``: N.

Aggregates (:class:`JudgeTally`) put the judge's noise next to the spread between questions, for
each metric block of a group that has repeats, over the questions with at least 2 values:

    judge_sd = sqrt( mean_q s_q² )                  s_q²: the sample variance of question q's
                                                    repeats (the noise of one judge call)
    judge_se = sqrt( Σ_q v_q / k_q ) / n            the standard error of the group's mean that
                                                    the judge alone causes (v_q = s_q², or the
                                                    mean s² for a question with fewer than 2
                                                    values; n questions in the mean)
    sd       = the sample standard deviation of the question values (between questions)

and ``label_flips: {label: {n, flipped, share}}``: of the ``n`` questions with at least 2 labels,
how many flipped. The mean of the question means varies by ``judge_se`` from one judge run to the
next; ``judge_sd`` / sqrt(N) is the noise left in a single question's mean.

``compare`` (:func:`judge_noise`): the delta of two runs, ``mean_i (B_i - A_i)``, moves between two
judge runs of the same answers by a standard error of

    judge_se = sqrt( Σ_i (v_Ai / k_Ai + v_Bi / k_Bi) ) / n

(judge calls are independent; an error scored 0 has no judge noise). A question with fewer than 2
values takes its run's mean s² (if that run has none, the other run's: the same judge is assumed
to be as noisy on both). ``within_judge_noise`` is true when ``|delta| < 2 · judge_se``: a
difference of this size comes from the judge's own noise alone about 95 % of the time (normal
approximation), so it says nothing about the systems until more repeats or questions shrink it.
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

import orjson

__all__ = [
    "SIGMAS",
    "JudgeTally",
    "judge_noise",
    "merge_repeats",
    "question_variance",
    "sample_variance",
    "score_repeated",
]

SIGMAS = 2.0
"""A delta within this many judge standard errors is ``within_judge_noise``."""
OFFLINE_PREFIXES = ("semantic_similarity", "bertscore")
"""Keys of metrics computed without the judge: once per question, in repeat 0."""
VERDICTS: dict[str, tuple[str, str]] = {
    "faithfulness_verdicts": ("faithfulness_statements", "supported"),
    "context_precision_verdicts": ("context_precision_verdicts", "relevant"),
    "context_recall_verdicts": ("context_recall_statements", "attributed"),
}
"""Verdict label name -> (the result key of the list, the field of each item)."""
LABELS = ("answer_class", "factual_accuracy_grade")
MARKER = "judge_repeats"

ScoreOnce = Callable[[Mapping[str, Any], list[Any], int], Awaitable[dict[str, Any]]]
"""Scores a result once, as the repeat it is given (its judge asks carry that index into their
cache keys; the offline metrics run in repeat 0 only), and returns the new result."""


def _number(value: Any) -> bool:
    """Whether a value is a number within the float range (not NaN, not infinite)."""
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and -sys.float_info.max <= value <= sys.float_info.max
    )


def sample_variance(values: Sequence[float]) -> float | None:
    """The sample variance (``n - 1`` in the denominator) of finite numbers; None for fewer
    than 2, or when it is beyond the float range."""
    n = len(values)
    if n < 2:
        return None
    if min(values) == max(values):
        return 0.0  # exactly: the rounding of the mean would make a tiny variance of nothing
    try:
        mean = math.fsum(values) / n
        variance = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    except OverflowError:  # values whose squares are beyond the float range
        return None
    return variance if math.isfinite(variance) else None


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def _hashable(value: Any) -> Any:
    if isinstance(value, (dict, list)):
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    return value


def _mode(values: Sequence[Any]) -> Any:
    """The most frequent value; a tie goes to the one seen first."""
    counts = Counter(_hashable(v) for v in values)
    best = max(counts.values())
    return next(v for v in values if counts[_hashable(v)] == best)


def _verdicts(record: Mapping[str, Any], label: str) -> tuple[Any, ...] | None:
    key, field = VERDICTS[label]
    items = record.get(key)
    if not isinstance(items, list):
        return None
    return tuple(item.get(field) if isinstance(item, Mapping) else None for item in items)


def merge_repeats(
    records: Sequence[Mapping[str, Any]], value_keys: Iterable[str]
) -> dict[str, Any]:
    """The keys of ``records`` (each repeat's new keys, repeat 0 first) merged as the module
    docstring says."""
    values = frozenset(value_keys)
    order: dict[str, None] = {}
    for record in records:
        order.update(dict.fromkeys(record))
    out: dict[str, Any] = {}
    n = len(records)
    for key in order:
        present = [r[key] for r in records if key in r]
        if key.startswith(OFFLINE_PREFIXES):
            if key in records[0]:
                out[key] = records[0][key]
            continue
        if key == "llm_cost" or key.endswith("_cost"):
            costs = [v for v in present if _number(v)]
            out[key] = math.fsum(costs) if costs else present[0]
        elif key.endswith("_error"):
            if len(present) == n:
                out[key] = present[0]
            else:
                out[f"{key}_repeats"] = [r.get(key) for r in records]
        elif key in values or key in LABELS:
            given = [v for v in present if v is not None]
            if not given:
                out[key] = present[0]
            elif all(_number(v) for v in given):
                out[key] = _mean(given)
                variance = sample_variance(given)
                out[f"{key}_sd"] = math.sqrt(variance) if variance is not None else None
                out[f"{key}_repeats"] = [
                    r.get(key) if _number(r.get(key)) else None for r in records
                ]
            else:
                out[key] = _mode(given)
                out[f"{key}_repeats"] = [r.get(key) for r in records]
                if len(given) >= 2:
                    out[f"{key}_flipped"] = len({_hashable(v) for v in given}) > 1
        else:
            out[key] = present[0]
    for label in VERDICTS:
        seen = [v for v in (_verdicts(r, label) for r in records) if v is not None]
        if len(seen) >= 2:
            out[f"{label}_flipped"] = len(set(seen)) > 1
    return out


async def score_repeated(
    score_once: ScoreOnce,
    result: Mapping[str, Any],
    matched: list[Any],
    repeats: int,
    value_keys: Iterable[str],
) -> dict[str, Any]:
    """``result`` scored ``repeats`` times (``score_once`` as repeat 0, 1, ...), concurrently,
    with the merged keys: a new result."""
    import asyncio  # here: the aggregates read this module's tallies without an event loop

    steps = result["actual_steps"]
    scored = await asyncio.gather(*(score_once(result, matched, i) for i in range(repeats)))
    keys = list(value_keys)
    merged = merge_repeats([{k: v for k, v in s.items() if k not in result} for s in scored], keys)
    merged_steps = list(steps)
    for index, original in enumerate(steps):
        changed = [s["actual_steps"][index] for s in scored]
        if all(step is original for step in changed):
            continue
        news = [
            {k: v for k, v in step.items() if not (isinstance(original, Mapping) and k in original)}
            if step is not original
            else {}
            for step in changed
        ]
        merged_steps[index] = {**original, **merge_repeats(news, keys)}
    return {**result, **merged, "actual_steps": merged_steps, MARKER: repeats}


# ---------------------------------------------------------------- aggregates


def question_variance(record: Mapping[str, Any], metric: str) -> tuple[float | None, int]:
    """(sample variance of the repeats of ``metric`` in one result or step, number of values);
    (None, 1) without repeats."""
    listed = record.get(f"{metric}_repeats")
    if not isinstance(listed, list):
        return None, 1
    values = [float(v) for v in listed if _number(v)]
    return sample_variance(values), max(len(values), 1)


class _Spread:
    """The per-question (variance or None, number of values) of one metric in one group."""

    __slots__ = ("items",)

    def __init__(self) -> None:
        self.items: list[tuple[float | None, int]] = []

    def summary(self) -> dict[str, Any] | None:
        measured = [v for v, _ in self.items if v is not None]
        if not measured:
            return None
        n = len(self.items)
        try:
            pooled = _mean(measured)
            total = math.fsum((pooled if v is None else v) / k for v, k in self.items)
        except OverflowError:  # variances that add up beyond the float range
            return None
        return {
            "judge_sd": math.sqrt(pooled),
            "judge_n": len(measured),
            "judge_se": math.sqrt(total) / n,
        }


class JudgeTally:
    """Judge variance of the questions of one aggregate group (see the module docstring)."""

    def __init__(self) -> None:
        self.spreads: dict[str, _Spread] = {}
        self.flips: dict[str, list[int]] = {}

    def add(self, result: Mapping[str, Any], metrics: frozenset[str]) -> None:
        """Count one result (nothing to do unless it was scored with repeats)."""
        if MARKER not in result:
            return
        self._record(result, metrics)
        for step in result.get("actual_steps") or ():
            if isinstance(step, Mapping):
                self._record(step, metrics)

    def _record(self, record: Mapping[str, Any], metrics: frozenset[str]) -> None:
        for key, value in record.items():
            if key.endswith("_flipped") and isinstance(value, bool):
                tally = self.flips.setdefault(key[: -len("_flipped")], [0, 0])
                tally[0] += 1
                tally[1] += value
            elif key in metrics and _number(value):
                spread = self.spreads.get(key)
                if spread is None:
                    spread = self.spreads[key] = _Spread()
                spread.items.append(question_variance(record, key))

    def extend(self, key: str, items: list[tuple[float | None, int]]) -> None:
        """Add per-question (variance, number of values) items of one metric."""
        self.spreads.setdefault(key, _Spread()).items.extend(items)

    def merge(self, other: JudgeTally) -> None:
        """Add another group's questions."""
        for key, spread in other.spreads.items():
            self.spreads.setdefault(key, _Spread()).items.extend(spread.items)
        for key, (n, flipped) in other.flips.items():
            tally = self.flips.setdefault(key, [0, 0])
            tally[0] += n
            tally[1] += flipped

    def annotate(self, out: dict[str, Any], values: Mapping[str, list[int | float]]) -> None:
        """Add ``judge_sd``, ``judge_n``, ``judge_se`` and the between-question ``sd`` to the
        metric blocks of a group summary, and its ``label_flips``."""
        for key, spread in self.spreads.items():
            block = out.get(key)
            found = spread.summary()
            if not isinstance(block, dict) or found is None:
                continue
            variance = sample_variance([float(v) for v in values.get(key, []) if _number(v)])
            block["sd"] = math.sqrt(variance) if variance is not None else None
            block.update(found)
        if self.flips:
            out["label_flips"] = {
                key: {"n": n, "flipped": flipped, "share": flipped / n if n else None}
                for key, (n, flipped) in sorted(self.flips.items())
            }


# ---------------------------------------------------------------- compare


def judge_noise(
    variances: Sequence[tuple[tuple[float | None, int], tuple[float | None, int]]],
) -> float | None:
    """The judge's standard error of ``mean_i (B_i - A_i)`` from each pair's (variance, count)
    of A and of B (see the module docstring); a count of 0 is a value without judge noise (an
    error scored 0). None when neither run measured any variance, or when the variances add up
    beyond the float range."""
    if not variances:
        return None
    pooled: list[float | None] = []
    try:
        for side in (0, 1):
            measured = [v for v, k in (pair[side] for pair in variances) if v is not None and k > 0]
            pooled.append(_mean(measured) if measured else None)
    except OverflowError:  # variances that add up beyond the float range
        return None
    if pooled[0] is None and pooled[1] is None:
        return None
    fill = [p if p is not None else pooled[1 - i] for i, p in enumerate(pooled)]
    total = 0.0
    for pair in variances:
        for side in (0, 1):
            variance, k = pair[side]
            if k > 0:
                total += (fill[side] if variance is None else variance) / k  # type: ignore[operator]
    return math.sqrt(total) / len(variances) if math.isfinite(total) else None


def within_noise(delta: float, judge_se: float) -> bool:
    """Whether ``|delta| < SIGMAS * judge_se``."""
    return abs(delta) < SIGMAS * judge_se
