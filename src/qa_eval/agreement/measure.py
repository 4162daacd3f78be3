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
  family, Holm-adjusted (``qa_eval.compare.rows.holm``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..aggregate import as_float
from ..errors import InputError
from .annotators import annotator_block
from .comparisons import compare_judges
from .figures import DISAGREEMENTS, FOLDS, Paired, class_value, judge_values_kind, metric_entry
from .judges import (
    Item,
    Judge,
    as_judges,
    as_labels,
    find_result,
    index_judge,
    judge_labels,
    judge_value,
    load_judges,
    reason_of,
)
from .labels import Kind, Labels, people_label
from .stats import RESAMPLES

# Judge, load_judges, judge_labels and reason_of are defined in .judges; offered here as before
__all__ = ["AgreementReport", "Judge", "agreement", "judge_labels", "load_judges", "reason_of"]


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
    judges = as_judges(results)
    if not judges:
        raise ValueError("no results to measure")
    people = as_labels(labels)
    wanted = _metrics(people, metric)
    cuts = _thresholds(threshold, wanted)
    indexes = {j.label: index_judge(j) for j in judges}
    entries: dict[str, list[dict[str, Any]]] = {j.label: [] for j in judges}
    compared: dict[str, tuple[Kind, dict[str, Paired], dict[str, Any]]] = {}
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
                result = find_result(key, by_key, by_qid, judge.label, rows[0], people.source)
                if result is not None and judge_value(result, name) is not None:
                    found[judge.label][key] = result
        common = [
            key
            for key in items
            if consensus[key] is not None and all(key in found[j.label] for j in judges)
        ]
        paired: dict[str, Paired] = {}
        calls: dict[str, Any] = {}
        for judge in judges:
            rows_found = [found[judge.label][key] for key in common]
            values = [judge_value(r, name) for r in rows_found]
            judge_kind = judge_values_kind(values, kind, name, judge.source or judge.label)  # type: ignore[arg-type]
            if kind == "class":
                values = [class_value(v) for v in values]  # type: ignore[arg-type]
            pair = Paired(common, values, [consensus[k] for k in common], rows_found)  # type: ignore[arg-type,misc]
            paired[judge.label] = pair
            entry, called = metric_entry(
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
        block = annotator_block(name, kind, items, resamples, confidence, seed)
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
        compare_judges(compared, judges, resamples, confidence, seed) if len(judges) > 1 else []
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
