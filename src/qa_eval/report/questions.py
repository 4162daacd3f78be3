"""The questions of the report: paired across runs as compare_runs pairs them, worst first.

Two runs: a question got worse in B when a higher-is-better metric fell (an error scoring 0, as
in the comparison's default) or B's answer became an error; those come first (a new error, then
the largest fall of the main score, then the most metrics fallen), then the rest by B's main
score. One run: errors first, then the main score ascending.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..aggregate import as_float, is_error, mean_of
from .model import STEP_METRIC_OWNER, Metric, RunSummary, template_name, values_of

__all__ = [
    "QuestionRef",
    "collect_questions",
    "judge_question",
    "order_questions",
    "ordering",
    "paired_values",
    "question_ref",
]

_TIE = 1e-12


@dataclass(frozen=True)
class QuestionRef:
    """One question across the runs (a result per run, None where a run lacks it)."""

    key: Any
    anchor: str
    template: str
    question_id: str
    text: str
    results: tuple[Mapping[str, Any] | None, ...]
    worse: bool = False  # B got worse than A (two runs)
    better: bool = False
    changes: tuple[tuple[str, float | None, float | None], ...] = ()  # metrics that got worse


def _value(result: Mapping[str, Any] | None, metric: str) -> float | None:
    if result is None:
        return None
    if metric in STEP_METRIC_OWNER and metric not in result:
        values = values_of([result], metric)
        return mean_of(values) if values else None
    value = result.get(metric)
    return as_float(value)


def paired_values(
    a: Mapping[str, Any] | None, b: Mapping[str, Any] | None, metric: str, fail: bool
) -> tuple[float | None, float | None]:
    """A question's values in two runs; with ``fail`` (compare's default) an error result
    scores 0 on a higher-is-better metric the other run has, as compare_runs counts it."""
    va, vb = _value(a, metric), _value(b, metric)
    if fail:
        if va is None and vb is not None and a is not None and is_error(a):
            va = 0.0
        if vb is None and va is not None and b is not None and is_error(b):
            vb = 0.0
    return va, vb


def question_key(result: Mapping[str, Any], by_template: bool) -> Any:
    """The key that pairs a question across runs (as compare_runs pairs them)."""
    qid = result.get("question_id")
    return (result.get("template_id"), qid) if by_template else qid


def _hashable(value: Any) -> Any:
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


def collect_questions(runs: Sequence[RunSummary], by_template: bool) -> list[QuestionRef]:
    """Every question of every run, one entry per question across runs (paired like compare),
    in the order of first appearance; results without a question id stay apart."""
    slots: dict[Any, list[Mapping[str, Any] | None]] = {}
    for index, run in enumerate(runs):
        for position, result in enumerate(run.records):
            if result.get("question_id") is None:
                key: Any = ("#", index, position)
            else:
                key = _hashable(question_key(result, by_template))
            slot = slots.setdefault(key, [None] * len(runs))
            if slot[index] is None:
                slot[index] = result
            else:  # a question twice in one run: kept, as its own entry
                slots[("#", index, position)] = [
                    result if i == index else None for i in range(len(runs))
                ]
    return [
        question_ref(key, number, results) for number, (key, results) in enumerate(slots.items())
    ]


def question_ref(key: Any, number: int, results: Sequence[Mapping[str, Any] | None]) -> QuestionRef:
    """Question ``number`` (from 0, in the order listed) with its result in each run."""
    first = next(r for r in results if r is not None)
    return QuestionRef(
        key=key,
        anchor=f"q-{number + 1}",
        template=template_name(first.get("template_id")),
        question_id="" if first.get("question_id") is None else str(first["question_id"]),
        text="" if first.get("question_text") is None else str(first["question_text"]),
        results=tuple(results),
    )


def ordering(metrics: Sequence[Metric], verdict: Any) -> tuple[Metric | None, bool]:
    """What puts questions worst first: the primary metric (the first score that is not a step
    metric) and whether an error scores 0 (unless the verdict left errors out)."""
    primary = next((m for m in metrics if m.higher and not m.step), None)
    return primary, verdict is None or verdict.method.get("errors", "fail") != "exclude"


def judge_question(question: QuestionRef, metrics: Sequence[Metric], fail: bool) -> QuestionRef:
    """A question of two runs marked worse or better in B, with the metrics that fell."""
    a, b = question.results[0], question.results[1]
    if a is None or b is None:
        return question
    changes = []
    better = False
    for metric in metrics:
        if not metric.higher:
            continue
        va, vb = paired_values(a, b, metric.name, fail)
        if va is None or vb is None:
            continue
        if vb < va - _TIE:
            changes.append((metric.name, va, vb))
        elif vb > va + _TIE:
            better = True
    new_error = is_error(b) and not is_error(a)
    worse = bool(changes) or new_error
    return dataclasses.replace(
        question, worse=worse, better=better and not worse, changes=tuple(changes)
    )


def order_questions(
    questions: Sequence[QuestionRef],
    metrics: Sequence[Metric],
    primary: Metric | None,
    two_runs: bool,
    fail: bool = True,
) -> list[QuestionRef]:
    """Questions worst first. Two runs: those that got worse in B (a new error first, then the
    largest fall of the primary score, then the most metrics fallen), then the rest by B's
    primary score. One run: errors first, then the primary score ascending."""
    judged = [judge_question(q, metrics, fail) for q in questions] if two_runs else list(questions)

    def worst_first(q: QuestionRef) -> tuple[Any, ...]:
        last = next((r for r in reversed(q.results[:2] if two_runs else q.results[:1]) if r), None)
        error = last is not None and is_error(last)
        score = _value(last, primary.name) if primary else None
        if primary and primary.lower and score is not None:
            score = -score
        if two_runs and q.worse:
            a, b = q.results[0], q.results[1]
            new_error = b is not None and a is not None and is_error(b) and not is_error(a)
            fall = 0.0
            if primary:
                va, vb = paired_values(a, b, primary.name, fail)
                fall = (va - vb) if va is not None and vb is not None else 0.0
            return (0, not new_error, -fall, -len(q.changes), score is None, score or 0.0)
        return (1, not error, score is None, score or 0.0)

    return sorted(judged, key=worst_first)
