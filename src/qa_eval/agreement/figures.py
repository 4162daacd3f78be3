"""One judge against people's labels on one metric: accuracy, kappa and the confusion matrix,
ROC AUC and a chosen threshold's cross-validated accuracy, Spearman, Kendall and the mean absolute
error, each with its interval; and the items they disagree on most.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError
from .judges import Item, Judge, reason_of
from .labels import Kind, Label, LabelValue
from .stats import (
    Statistic,
    auc_statistic,
    bootstrap_interval,
    clopper_pearson,
    confusion_matrix,
    kappa_statistic,
    kendall_statistic,
    mae_statistic,
    spearman_statistic,
)

DISAGREEMENTS = 10
"""How many disagreements a metric lists per judge (the largest gaps)."""

FOLDS = 5
"""Folds of the cross-validation of a chosen threshold."""


def seeded_rng(seed: int, *parts: Any) -> np.random.Generator:
    """A generator seeded by ``seed`` and a tag of ``parts`` (judge, metric, template, ...)."""
    tag = zlib.crc32("\x00".join(map(repr, parts)).encode())
    return np.random.default_rng([seed, tag])


def finite_or_none(value: float) -> float | None:
    """A float, or None where it is not finite (JSON has no NaN)."""
    return float(value) if math.isfinite(value) else None


def interval_of(
    statistic: Statistic, n: int, resamples: int, confidence: float, rng: np.random.Generator
) -> list[float | None]:
    """The BCa bootstrap interval of ``statistic`` over ``n`` items, as a JSON list."""
    return bootstrap_interval(
        statistic, n, resamples=resamples, confidence=confidence, seed=rng
    ).as_list()


def point_of(statistic: Statistic, n: int) -> float | None:
    """``statistic`` on all ``n`` items, or None when there are none."""
    return finite_or_none(float(statistic(np.arange(n)[None, :])[0])) if n else None


def _best_threshold(values: np.ndarray, positive: np.ndarray) -> tuple[float, float]:
    """(threshold, accuracy): the cut ``value >= t`` with the highest accuracy (the middle one
    of the best cuts, each between two distinct values or beyond them all)."""
    distinct = np.unique(values)
    cuts = np.concatenate(
        [[distinct[0] - 1.0], (distinct[:-1] + distinct[1:]) / 2.0, [distinct[-1] + 1.0]]
    )
    hits = np.array([np.count_nonzero((values >= t) == positive) for t in cuts])
    best = np.flatnonzero(hits == hits.max())
    choice = best[len(best) // 2]
    return float(cuts[choice]), float(hits[choice] / values.size)


def _threshold_cv(
    values: np.ndarray, positive: np.ndarray, folds: int, rng: np.random.Generator
) -> dict[str, Any] | None:
    """In-sample vs cross-validated accuracy of a chosen threshold (None below 2 items a
    fold)."""
    n = values.size
    k = min(folds, n // 2)
    if k < 2:
        return None
    order = rng.permutation(n)
    hits = 0
    for fold in range(k):
        test = order[fold::k]
        train = np.setdiff1d(order, test)
        cut, _ = _best_threshold(values[train], positive[train])
        hits += int(np.count_nonzero((values[test] >= cut) == positive[test]))
    _, in_sample = _best_threshold(values, positive)
    cross = hits / n
    return {
        "folds": k,
        "accuracy_in_sample": in_sample,
        "accuracy_cv": cross,
        "optimism": in_sample - cross,
    }


def _classification(
    judge: Sequence[LabelValue],
    label: Sequence[LabelValue],
    resamples: int,
    confidence: float,
    rng: np.random.Generator,
) -> dict[str, Any]:
    """Accuracy, kappa and the confusion matrix of class (or boolean) values."""
    n = len(judge)
    hits = sum(j == lab for j, lab in zip(judge, label))
    kappa = kappa_statistic(judge, label)
    matrix, classes = confusion_matrix(judge, label)
    return {
        "accuracy": hits / n if n else None,
        "accuracy_ci": clopper_pearson(hits, n, confidence).as_list(),
        "kappa": point_of(kappa, n),
        "kappa_ci": interval_of(kappa, n, resamples, confidence, rng),
        "confusion": {
            "classes": [c if isinstance(c, (bool, str)) else _class_number(c) for c in classes],
            "rows": "label",
            "columns": "judge",
            "counts": matrix.tolist(),
        },
    }


def _class_number(value: Any) -> Any:
    number = float(value)
    return int(number) if number.is_integer() else number


@dataclass
class Paired:
    """One metric's items for one judge: keys, judge values, people's labels."""

    keys: list[Item]
    judge: list[LabelValue]
    label: list[LabelValue]
    results: list[Mapping[str, Any]]


def _figures(
    paired: Paired,
    kind: Kind,
    judge_kind: str,
    threshold: float | None,
    resamples: int,
    confidence: float,
    rng: np.random.Generator,
) -> dict[str, Any]:
    """The figures of one judge on one metric over some items (all, or one template's)."""
    n = len(paired.keys)
    row: dict[str, Any] = {"n": n}
    if n == 0:
        return row
    if kind == "continuous":
        x = [float(v) for v in paired.judge]
        y = [float(v) for v in paired.label]
        for name, make in (
            ("spearman", spearman_statistic),
            ("kendall", kendall_statistic),
            ("mae", mae_statistic),
        ):
            statistic = make(x, y)
            row[name] = point_of(statistic, n)
            row[f"{name}_ci"] = interval_of(statistic, n, resamples, confidence, rng)
        return row
    if kind == "binary" and judge_kind == "continuous":
        scores = [float(v) for v in paired.judge]
        positive = [bool(v) for v in paired.label]
        auc = auc_statistic(scores, positive)
        row["auc"] = point_of(auc, n)
        row["auc_ci"] = interval_of(auc, n, resamples, confidence, rng)
        assert threshold is not None
        row["threshold"] = threshold
        called = [s >= threshold for s in scores]
        row.update(_classification(called, positive, resamples, confidence, rng))
        return row
    if kind == "binary":
        row.update(
            _classification(
                [bool(v) for v in paired.judge],
                [bool(v) for v in paired.label],
                resamples,
                confidence,
                rng,
            )
        )
        return row
    row.update(_classification(paired.judge, paired.label, resamples, confidence, rng))
    return row


def judge_values_kind(values: Sequence[LabelValue], kind: Kind, metric: str, judge: str) -> str:
    """``binary``, ``class`` or ``continuous``: how the judge's values of a metric are read."""
    text = [v for v in values if isinstance(v, str)]
    if kind == "class":
        return "class"
    if text:
        raise InputError(
            f"the values of {metric} are text (e.g. {text[0]!r}) but its labels are "
            f"{'numbers' if kind == 'continuous' else 'true/false'}",
            source=judge,
            field=metric,
        )
    if kind == "continuous":
        return "continuous"
    if all(isinstance(v, bool) or v in (0.0, 1.0) for v in values):
        return "binary"
    return "continuous"


def class_value(value: LabelValue) -> LabelValue:
    """A judge's class as labels hold it: text compared with text (``True`` -> ``"true"``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(_class_number(value))
    return value


def _gap(judge: LabelValue, label: LabelValue, kind: Kind) -> float:
    if kind == "class":
        return 0.0 if judge == label else 1.0
    return abs(float(judge) - float(label))


def _disagreements(
    paired: Paired,
    items: Mapping[Item, list[Label]],
    kind: Kind,
    metric: str,
    limit: int,
    wrong: Sequence[bool] | None = None,
) -> tuple[list[dict[str, Any]], int]:
    """The items with the largest gap between judge and label, at most ``limit`` of them, and
    how many there are in all (gap 0 left out; with ``wrong``, only the items the judge's call
    got wrong: a value on the right side of its threshold is not a disagreement)."""
    gaps = [_gap(j, lab, kind) for j, lab in zip(paired.judge, paired.label)]
    kept = [i for i, g in enumerate(gaps) if g > 1e-12 and (wrong is None or wrong[i])]
    order = sorted(kept, key=lambda i: -gaps[i])
    out = []
    for i in order[:limit]:
        result = paired.results[i]
        entry: dict[str, Any] = {
            "question_id": result.get("question_id"),
            "template_id": result.get("template_id"),
            "question_text": result.get("question_text"),
            "judge": paired.judge[i],
            "label": paired.label[i],
            "gap": gaps[i],
            "reason": reason_of(result, metric),
        }
        people = items[paired.keys[i]]
        if len(people) > 1:
            entry["annotators"] = {p.annotator or f"#{k}": p.value for k, p in enumerate(people)}
        out.append(entry)
    return out, len(kept)


def metric_entry(
    judge: Judge,
    name: str,
    kind: Kind,
    judge_kind: str,
    pair: Paired,
    items: Mapping[Item, list[Label]],
    tied: int,
    cut: float | None,
    resamples: int,
    confidence: float,
    seed: int,
    folds: int,
    limit: int,
) -> tuple[dict[str, Any], Any]:
    """One judge's entry for one metric, and the classes it called (for McNemar and kappa)."""
    entry: dict[str, Any] = {"metric": name, "kind": kind, "judge_values": judge_kind}
    threshold_cv = None
    if kind == "binary" and judge_kind == "continuous" and pair.keys:
        scores = np.array([float(v) for v in pair.judge])
        positive = np.array([bool(v) for v in pair.label])
        if cut is None:
            cut, _ = _best_threshold(scores, positive)
            threshold_cv = _threshold_cv(
                scores, positive, folds, seeded_rng(seed, "cv", judge.label, name)
            )
    rng = seeded_rng(seed, judge.label, name, None)
    entry.update(_figures(pair, kind, judge_kind, cut, resamples, confidence, rng))
    entry["n_tied"] = tied
    if threshold_cv is not None:
        entry["threshold_cv"] = threshold_cv
    per_template: dict[str, Any] = {}
    templates = list(dict.fromkeys(r.get("template_id") for r in pair.results))
    if len(templates) > 1:
        for template in templates:
            chosen = [i for i, r in enumerate(pair.results) if r.get("template_id") == template]
            sub = Paired(
                [pair.keys[i] for i in chosen],
                [pair.judge[i] for i in chosen],
                [pair.label[i] for i in chosen],
                [pair.results[i] for i in chosen],
            )
            figures = _figures(
                sub,
                kind,
                judge_kind,
                cut,
                resamples,
                confidence,
                seeded_rng(seed, judge.label, name, template),
            )
            figures.pop("confusion", None)
            per_template[str(template)] = figures
    entry["per_template"] = per_template
    if kind == "continuous":
        called: Any = None
    elif kind == "binary" and judge_kind == "continuous":
        called = [float(v) >= cut for v in pair.judge]  # type: ignore[operator]
    elif kind == "binary":
        called = [bool(v) for v in pair.judge]
    else:
        called = list(pair.judge)
    if kind == "binary":
        pair.label = [bool(v) for v in pair.label]
    wrong = None if called is None else [c != lab for c, lab in zip(called, pair.label)]
    entry["disagreements"], entry["n_disagreements"] = _disagreements(
        pair, items, kind, name, limit, wrong
    )
    return entry, called
