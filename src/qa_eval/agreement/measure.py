"""How far to trust a judge: its values measured against people's labels, per metric, per judge,
overall and per template, and judges compared with each other (docs/agreement.md).

Method (the formulas and their sources are in :mod:`.stats`):

- Items are matched by ``question_id`` (compared as text), or by ``(template_id, question_id)``
  when a label names its template. With several judges (results files), every judge is measured
  on the same items: those labelled for the metric that every judge has a value for.
- The people's label of an item is their majority for binary and class labels; an item whose
  annotators tie (as many ``true`` as ``false``, or two classes as frequent) has no majority and
  is left out of the judge's figures (``n_tied`` counts it). For continuous labels it is the
  annotators' mean.
- Binary labels and a binary judge (booleans, or values all 0 or 1): accuracy (Clopper-Pearson
  interval), Cohen's kappa, the confusion matrix. Binary labels and a continuous judge: ROC AUC,
  and accuracy, kappa and confusion at ``value >= threshold``: the threshold given, else the one
  with the highest accuracy on all items (the middle of the best ones), whose optimism is
  reported: the accuracy of thresholds chosen on K - 1 folds and applied to the K-th
  (``threshold_cv``). Class labels: accuracy, kappa, confusion. Continuous labels: Spearman,
  Kendall's tau-b, mean absolute error.
- Every coefficient but accuracy gets a BCa bootstrap interval over the items (``resamples``,
  seeded per judge, metric and template).
- Several annotators: Krippendorff's alpha among the people (nominal for binary and class
  labels, ordinal for integer labels with at most 10 levels, else interval), with its interval,
  and each annotator against the others' majority (or mean).
- The disagreements: the items with the largest ``|judge - label|`` (a wrong class counts 1),
  with the judge's reason (``<metric>_reason``, else its family's: ``answer_correctness_reason``
  for ``answer_f1``), the question and every annotator's label.
- Two judges or more: each pair on each metric, McNemar's exact test of accuracy and a paired
  bootstrap of kappa (binary, class) or Spearman (continuous); the p-values of a report are one
  family, Holm-adjusted (``qa_eval.compare.runs.holm``).
"""

from __future__ import annotations

import math
import os
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..aggregate import as_float
from ..compare.runs import holm
from ..errors import InputError
from ..io import kinds
from ..io.files import check_results, read_data, signature_path
from ..vocabulary.lookup import key_info
from .labels import (
    Kind,
    Label,
    Labels,
    LabelValue,
    labels_from_records,
    people_label,
    read_labels,
    vote,
)
from .stats import (
    RESAMPLES,
    Statistic,
    alpha_statistic,
    auc_statistic,
    bootstrap_interval,
    clopper_pearson,
    confusion_matrix,
    kappa_statistic,
    kendall_statistic,
    mae_statistic,
    mcnemar_exact,
    paired_bootstrap,
    spearman_statistic,
)

__all__ = ["AgreementReport", "Judge", "agreement", "judge_labels", "load_judges", "reason_of"]

DISAGREEMENTS = 10
"""How many disagreements a metric lists per judge (the largest gaps)."""

FOLDS = 5
"""Folds of the cross-validation of a chosen threshold."""

_ORDINAL_LEVELS = 10

Item = tuple[str | None, str]


@dataclass
class Judge:
    """One judge's results: its label, model and the per-question results."""

    label: str
    results: Sequence[Mapping[str, Any]]
    model: str | None = None
    source: str | None = None


@dataclass
class AgreementReport:
    """The agreement of one or more judges with people's labels (``to_dict`` is the JSON)."""

    judges: list[dict[str, Any]]
    comparisons: list[dict[str, Any]] = field(default_factory=list)
    annotators: dict[str, Any] | None = None
    labels: dict[str, Any] = field(default_factory=dict)
    method: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The report as plain JSON data (the schema ``agreement.schema.json``)."""
        out: dict[str, Any] = {"judges": self.judges}
        if self.comparisons:
            out["comparisons"] = self.comparisons
        if self.annotators is not None:
            out["annotators"] = self.annotators
        out["labels"] = self.labels
        out["method"] = self.method
        return out

    def metric(self, judge: str, metric: str) -> dict[str, Any] | None:
        """One judge's entry for one metric, or None."""
        for entry in self.judges:
            if entry["label"] == judge:
                for row in entry["metrics"]:
                    if row["metric"] == metric:
                        return dict(row)
        return None


# ----------------------------------------------------------------------- inputs


def load_judges(
    paths: Sequence[str | os.PathLike[str]], names: Sequence[str] | None = None
) -> list[Judge]:
    """Read results files (and the signature beside each, for the judge's model); a judge's
    label is its name in ``names``, else :func:`judge_labels` of the paths."""
    labels = list(names) if names else judge_labels(paths)
    judges = []
    for path, label in zip(paths, labels, strict=True):
        data = read_data(path)
        expected = "`qa-eval agreement` expects results written by `qa-eval evaluate -o`"
        kinds.require(data, str(path), (kinds.RESULTS,), expected)
        results = check_results(data, str(path))
        model = None
        sig_file = signature_path(path)
        if sig_file.is_file():
            model = _model_of(read_data(sig_file))
        judges.append(Judge(label, results, model, str(path)))
    return judges


def judge_labels(paths: Sequence[str | os.PathLike[str]]) -> list[str]:
    """A label per results file: its stem, without the first dotted part all of them share
    (``evaluate --system NAME -o results.jsonl`` writes ``results.NAME.jsonl``: the label is
    ``NAME``); a file's path when two labels would clash."""
    stems = [Path(p).stem for p in paths]
    heads = {stem.partition(".")[0] for stem in stems}
    if len(stems) > 1 and len(heads) == 1 and all("." in stem for stem in stems):
        stems = [stem.partition(".")[2] for stem in stems]
    return [s if stems.count(s) == 1 else str(p) for s, p in zip(stems, paths)]


def _model_of(signature: Any) -> str | None:
    """The judge model a run signature names."""
    judge = signature.get("judge") if isinstance(signature, Mapping) else None
    model = judge.get("model") if isinstance(judge, Mapping) else None
    return model if isinstance(model, str) else None


def _as_judges(results: Any) -> list[Judge]:
    """The judges of ``agreement``'s ``results`` argument (see its docstring)."""
    if isinstance(results, (str, os.PathLike)):
        return load_judges([results])
    if isinstance(results, Judge):
        return [results]
    if isinstance(results, Mapping):
        return [
            Judge(str(name), run, _model_of(getattr(run, "signature", None)))
            for name, run in results.items()
        ]
    items = list(results)
    if items and all(isinstance(r, (str, os.PathLike)) for r in items):
        return load_judges(items)
    if items and all(isinstance(r, Judge) for r in items):
        return items
    if all(isinstance(r, Mapping) for r in items):
        return [Judge("judge", items, _model_of(getattr(results, "signature", None)))]
    raise TypeError(
        "results must be a results file, a list of them, a list of result mappings, "
        "a mapping of judge name to results, or Judge objects"
    )


def _as_labels(labels: Any) -> Labels:
    if isinstance(labels, Labels):
        return labels
    if isinstance(labels, (str, os.PathLike)):
        return read_labels(labels)
    return labels_from_records(labels)


# ----------------------------------------------------------------------- values


def _index(judge: Judge) -> tuple[dict[Item, Mapping[str, Any]], dict[str, list[Item]]]:
    """A judge's results by (template, question) and the keys of each question id."""
    by_key: dict[Item, Mapping[str, Any]] = {}
    by_qid: dict[str, list[Item]] = {}
    for result in judge.results:
        template = result.get("template_id")
        key = (None if template is None else str(template), str(result.get("question_id")))
        by_key[key] = result
        by_qid.setdefault(key[1], []).append(key)
    return by_key, by_qid


def _find(
    item: Item,
    by_key: Mapping[Item, Mapping[str, Any]],
    by_qid: Mapping[str, list[Item]],
    judge: str,
    label: Label,
    source: str,
) -> Mapping[str, Any] | None:
    """The result a label is about (None when the judge has no such question)."""
    template, qid = item
    if template is not None:
        return by_key.get(item)
    found = by_qid.get(qid, [])
    if len(found) > 1:
        raise InputError(
            f"question {qid!r} is in {len(found)} templates of {judge}'s results: give the "
            "label a template_id",
            source=source,
            record=label.row,
            field="question_id",
        )
    return by_key[found[0]] if found else None


def _judge_value(result: Mapping[str, Any], metric: str) -> LabelValue | None:
    """A result's value of ``metric``: a boolean, a finite number or a class; None if absent."""
    value = result.get(metric)
    if isinstance(value, bool):
        return value
    number = as_float(value)
    if number is not None:
        return number
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


# ----------------------------------------------------------------------- figures


def _rng(seed: int, *parts: Any) -> np.random.Generator:
    tag = zlib.crc32("\x00".join(map(repr, parts)).encode())
    return np.random.default_rng([seed, tag])


def _number(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def _interval(
    statistic: Statistic, n: int, resamples: int, confidence: float, rng: np.random.Generator
) -> list[float | None]:
    return bootstrap_interval(
        statistic, n, resamples=resamples, confidence=confidence, seed=rng
    ).as_list()


def _point(statistic: Statistic, n: int) -> float | None:
    return _number(float(statistic(np.arange(n)[None, :])[0])) if n else None


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
        "kappa": _point(kappa, n),
        "kappa_ci": _interval(kappa, n, resamples, confidence, rng),
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
class _Paired:
    """One metric's items for one judge: keys, judge values, people's labels."""

    keys: list[Item]
    judge: list[LabelValue]
    label: list[LabelValue]
    results: list[Mapping[str, Any]]


def _figures(
    paired: _Paired,
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
            row[name] = _point(statistic, n)
            row[f"{name}_ci"] = _interval(statistic, n, resamples, confidence, rng)
        return row
    if kind == "binary" and judge_kind == "continuous":
        scores = [float(v) for v in paired.judge]
        positive = [bool(v) for v in paired.label]
        auc = auc_statistic(scores, positive)
        row["auc"] = _point(auc, n)
        row["auc_ci"] = _interval(auc, n, resamples, confidence, rng)
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


def _judge_kind(values: Sequence[LabelValue], kind: Kind, metric: str, judge: str) -> str:
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


def _class_value(value: LabelValue) -> LabelValue:
    """A judge's class as labels hold it: text compared with text (``True`` -> ``"true"``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(_class_number(value))
    return value


def reason_of(result: Mapping[str, Any], metric: str) -> str | None:
    """The judge's reason for a result key: ``<metric>_reason``, else the reason of the family
    that writes the key (``answer_f1`` -> ``answer_correctness_reason``)."""
    reason = result.get(f"{metric}_reason")
    if reason is None:
        owner = key_info(metric)
        if owner is not None:
            reason = result.get(f"{owner[0].name}_reason")
    return reason if isinstance(reason, str) else None


def _gap(judge: LabelValue, label: LabelValue, kind: Kind) -> float:
    if kind == "class":
        return 0.0 if judge == label else 1.0
    return abs(float(judge) - float(label))


def _disagreements(
    paired: _Paired,
    items: Mapping[Item, list[Label]],
    kind: Kind,
    metric: str,
    limit: int,
    wrong: Sequence[bool] | None = None,
) -> list[dict[str, Any]]:
    """The items with the largest gap between judge and label (gap 0 left out; with ``wrong``,
    only the items the judge's call got wrong: a value on the right side of its threshold is
    not a disagreement)."""
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
    return out


# ----------------------------------------------------------------------- annotators


def _alpha_level(labels: Sequence[Label], kind: Kind) -> str:
    """The level of measurement alpha uses for a metric's labels."""
    if kind != "continuous":
        return "nominal"
    values = {float(label.value) for label in labels}
    if all(v.is_integer() for v in values) and len(values) <= _ORDINAL_LEVELS:
        return "ordinal"
    return "interval"


def _annotator_block(
    metric: str,
    kind: Kind,
    items: Mapping[Item, list[Label]],
    resamples: int,
    confidence: float,
    seed: int,
) -> dict[str, Any] | None:
    """Krippendorff's alpha among the people and each annotator against the others."""
    if not any(len(people) > 1 for people in items.values()):
        return None
    all_labels = [label for people in items.values() for label in people]
    level = _alpha_level(all_labels, kind)
    units = [
        [vote(p.value, kind) if kind != "continuous" else float(p.value) for p in people]
        for people in items.values()
    ]
    statistic = alpha_statistic(units, level)  # type: ignore[arg-type]
    n = sum(len(u) >= 2 for u in units)
    block: dict[str, Any] = {
        "metric": metric,
        "level": level,
        "n": n,
        "alpha": _point(statistic, len(units)),
        "alpha_ci": _interval(
            statistic, len(units), resamples, confidence, _rng(seed, "alpha", metric)
        ),
        "raters": [],
    }
    names = list(dict.fromkeys(p.annotator for people in items.values() for p in people))
    for name in names:
        own: list[LabelValue] = []
        others: list[LabelValue] = []
        for people in items.values():
            mine = [p for p in people if p.annotator == name]
            rest = [p for p in people if p.annotator != name]
            if not mine or not rest:
                continue
            majority = people_label(rest, kind)
            if majority is None:
                continue
            own.append(vote(mine[0].value, kind) if kind != "continuous" else float(mine[0].value))
            others.append(majority)
        rater: dict[str, Any] = {"annotator": name, "n": len(own)}
        rng = _rng(seed, "rater", metric, name)
        if len(own) >= 2:
            if kind == "continuous":
                rho = spearman_statistic([float(v) for v in own], [float(v) for v in others])
                rater["spearman"] = _point(rho, len(own))
                rater["spearman_ci"] = _interval(rho, len(own), resamples, confidence, rng)
            else:
                kappa = kappa_statistic(own, others)
                hits = sum(a == b for a, b in zip(own, others))
                rater["accuracy"] = hits / len(own)
                rater["accuracy_ci"] = clopper_pearson(hits, len(own), confidence).as_list()
                rater["kappa"] = _point(kappa, len(own))
                rater["kappa_ci"] = _interval(kappa, len(own), resamples, confidence, rng)
        block["raters"].append(rater)
    return block


# ----------------------------------------------------------------------- comparisons


def _comparisons(
    per_metric: Mapping[str, tuple[Kind, dict[str, _Paired], dict[str, Any]]],
    judges: Sequence[Judge],
    resamples: int,
    confidence: float,
    seed: int,
) -> list[dict[str, Any]]:
    """Every pair of judges on every metric: McNemar on accuracy, paired bootstrap on kappa or
    Spearman; Holm over all the p-values of the report."""
    rows: list[dict[str, Any]] = []
    for metric, (kind, paired, calls) in per_metric.items():
        for i, first in enumerate(judges):
            for second in judges[i + 1 :]:
                a, b = paired[first.label], paired[second.label]
                n = len(a.keys)
                if n < 2:
                    continue
                rng = _rng(seed, "compare", metric, first.label, second.label)
                if kind == "continuous":
                    make = spearman_statistic
                    xa = [float(v) for v in a.judge]
                    xb = [float(v) for v in b.judge]
                    ys = [float(v) for v in a.label]
                    stats = make(xa, ys), make(xb, ys)
                    rows.append(
                        _bootstrap_row(
                            metric, "spearman", first, second, *stats, n, resamples, confidence, rng
                        )
                    )
                    continue
                ca, cb = calls[first.label], calls[second.label]
                truth = a.label
                right_a = [x == t for x, t in zip(ca, truth)]
                right_b = [x == t for x, t in zip(cb, truth)]
                p, only_a, only_b = mcnemar_exact(right_a, right_b)
                row = _comparison_row(
                    metric,
                    "accuracy",
                    "McNemar exact",
                    first,
                    second,
                    n,
                    sum(right_a) / n,
                    sum(right_b) / n,
                    p,
                    None,
                )
                row["only_a_right"], row["only_b_right"] = only_a, only_b
                rows.append(row)
                stats = kappa_statistic(ca, truth), kappa_statistic(cb, truth)
                rows.append(
                    _bootstrap_row(
                        metric, "kappa", first, second, *stats, n, resamples, confidence, rng
                    )
                )
    adjusted = holm([r["p_value"] for r in rows])
    for row, adjusted_p in zip(rows, adjusted):
        row["p_adjusted"] = adjusted_p
    return rows


def _bootstrap_row(
    metric: str,
    statistic: str,
    first: Judge,
    second: Judge,
    stat_a: Any,
    stat_b: Any,
    n: int,
    resamples: int,
    confidence: float,
    rng: Any,
) -> dict[str, Any]:
    """The comparison row of two judges' ``statistic`` by a paired bootstrap over the items."""
    diff = paired_bootstrap(stat_a, stat_b, n, resamples=resamples, confidence=confidence, seed=rng)
    return _comparison_row(
        metric, statistic, "paired bootstrap", first, second, n,
        diff.a, diff.b, diff.p_value, diff.interval.as_list(),
    )  # fmt: skip


def _comparison_row(
    metric: str,
    statistic: str,
    test: str,
    first: Judge,
    second: Judge,
    n: int,
    value_a: float,
    value_b: float,
    p: float | None,
    interval: list[float | None] | None,
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "metric": metric,
        "statistic": statistic,
        "test": test,
        "a": first.label,
        "b": second.label,
        "n": n,
        "value_a": _number(value_a),
        "value_b": _number(value_b),
        "difference": _number(value_b - value_a),
        "p_value": p,
    }
    if interval is not None:
        row["difference_ci"] = interval
    return row


# ----------------------------------------------------------------------- the report


def _cost(results: Sequence[Mapping[str, Any]]) -> tuple[float | None, float | None, int]:
    """(mean ``llm_cost`` per question, total, questions with a cost)."""
    costs = [c for r in results if (c := as_float(r.get("llm_cost"))) is not None]
    if not costs:
        return None, None, 0
    total = math.fsum(costs)
    return total / len(costs), total, len(costs)


def agreement(
    results: Any,
    labels: Any,
    metric: str | Sequence[str] | None = None,
    threshold: float | Mapping[str, float] | None = None,
    *,
    resamples: int = RESAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
    folds: int = FOLDS,
    disagreements: int = DISAGREEMENTS,
) -> AgreementReport:
    """Measure one or more judges against people's labels (see the module docstring).

    ``results``: a results file, a list of them (one per judge), a list of result mappings (one
    judge), a mapping of judge name to results, or :class:`Judge` objects. ``labels``: a labels
    file, :class:`~qa_eval.agreement.labels.Labels`, or a list of label rows. ``metric``: the
    metric(s) to measure (default: every metric labelled). ``threshold``: the cut of a
    continuous judge value against binary labels (one number, or one per metric)."""
    if resamples < 100:
        raise ValueError(f"resamples must be at least 100, got {resamples}")
    if not 0.5 < confidence < 1:
        raise ValueError(f"confidence must be between 0.5 and 1, got {confidence}")
    judges = _as_judges(results)
    if not judges:
        raise ValueError("no results to measure")
    people = _as_labels(labels)
    wanted = _metrics(people, metric)
    cuts = _thresholds(threshold, wanted)
    indexes = {j.label: _index(j) for j in judges}
    entries: dict[str, list[dict[str, Any]]] = {j.label: [] for j in judges}
    compared: dict[str, tuple[Kind, dict[str, _Paired], dict[str, Any]]] = {}
    blocks = []
    for name in wanted:
        kind = people.kinds[name]
        items = people.items(name)
        consensus = {key: people_label(rows, kind) for key, rows in items.items()}
        tied = sum(v is None for v in consensus.values())
        found: dict[str, dict[Item, Mapping[str, Any]]] = {}
        for judge in judges:
            by_key, by_qid = indexes[judge.label]
            found[judge.label] = {}
            for key, rows in items.items():
                result = _find(key, by_key, by_qid, judge.label, rows[0], people.source)
                if result is not None and _judge_value(result, name) is not None:
                    found[judge.label][key] = result
        common = [
            key
            for key in items
            if consensus[key] is not None and all(key in found[j.label] for j in judges)
        ]
        paired: dict[str, _Paired] = {}
        calls: dict[str, Any] = {}
        for judge in judges:
            rows_found = [found[judge.label][key] for key in common]
            values = [_judge_value(r, name) for r in rows_found]
            judge_kind = _judge_kind(values, kind, name, judge.source or judge.label)  # type: ignore[arg-type]
            if kind == "class":
                values = [_class_value(v) for v in values]  # type: ignore[arg-type]
            pair = _Paired(common, values, [consensus[k] for k in common], rows_found)  # type: ignore[arg-type,misc]
            paired[judge.label] = pair
            entry, called = _metric_entry(
                judge,
                name,
                kind,
                judge_kind,
                pair,
                items,
                tied,
                cuts.get(name),
                resamples,
                confidence,
                seed,
                folds,
                disagreements,
            )
            entry["missing"] = sum(
                k not in found[judge.label] for k in items if consensus[k] is not None
            )
            entries[judge.label].append(entry)
            calls[judge.label] = called
        compared[name] = (kind, paired, calls)
        block = _annotator_block(name, kind, items, resamples, confidence, seed)
        if block is not None:
            blocks.append(block)
    out_judges = []
    for judge in judges:
        per_question, total, costed = _cost(judge.results)
        out_judges.append(
            {
                "label": judge.label,
                "model": judge.model,
                "cost": per_question,
                "cost_total": total,
                "questions": len(judge.results),
                "questions_costed": costed,
                **({"source": judge.source} if judge.source else {}),
                "metrics": entries[judge.label],
            }
        )
    comparisons = (
        _comparisons(compared, judges, resamples, confidence, seed) if len(judges) > 1 else []
    )
    annotators = None
    if blocks:
        annotators = {"metrics": blocks}
        if len(blocks) == 1:
            annotators["alpha"] = blocks[0]["alpha"]
            annotators["alpha_ci"] = blocks[0]["alpha_ci"]
    return AgreementReport(
        judges=out_judges,
        comparisons=comparisons,
        annotators=annotators,
        labels={
            "source": people.source,
            "rows": len(people.rows),
            "metrics": {m: people.kinds[m] for m in wanted},
            "annotators": [a for a in people.annotators if a],
        },
        method={
            "confidence": confidence,
            "resamples": resamples,
            "seed": seed,
            "interval": "BCa bootstrap over items; Clopper-Pearson for accuracy",
            "majority_ties": "left out (n_tied)",
            "threshold_folds": folds,
            "comparison": "McNemar exact (accuracy), paired bootstrap (kappa, spearman)",
            "adjustment": "holm",
        },
    )


def _metric_entry(
    judge: Judge,
    name: str,
    kind: Kind,
    judge_kind: str,
    pair: _Paired,
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
                scores, positive, folds, _rng(seed, "cv", judge.label, name)
            )
    rng = _rng(seed, judge.label, name, None)
    entry.update(_figures(pair, kind, judge_kind, cut, resamples, confidence, rng))
    entry["n_tied"] = tied
    if threshold_cv is not None:
        entry["threshold_cv"] = threshold_cv
    per_template: dict[str, Any] = {}
    templates = list(dict.fromkeys(r.get("template_id") for r in pair.results))
    if len(templates) > 1:
        for template in templates:
            chosen = [i for i, r in enumerate(pair.results) if r.get("template_id") == template]
            sub = _Paired(
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
                _rng(seed, judge.label, name, template),
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
    entry["disagreements"] = _disagreements(pair, items, kind, name, limit, wrong)
    return entry, called


def _metrics(people: Labels, metric: str | Sequence[str] | None) -> list[str]:
    """The metrics to measure: those asked for (each labelled), else every labelled one."""
    if metric is None:
        return people.metrics
    wanted = [metric] if isinstance(metric, str) else list(metric)
    unknown = [m for m in wanted if m not in people.kinds]
    if unknown:
        raise InputError(
            f"no label for metric {unknown[0]!r} (labelled: {', '.join(people.metrics)})",
            source=people.source,
        )
    return wanted


def _thresholds(
    threshold: float | Mapping[str, float] | None, metrics: Sequence[str]
) -> dict[str, float]:
    """The thresholds given, by metric."""
    if threshold is None:
        return {}
    if isinstance(threshold, Mapping):
        return {str(k): float(v) for k, v in threshold.items()}
    return {m: float(threshold) for m in metrics}
