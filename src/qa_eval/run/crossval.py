"""Do few-shot examples from the labels help the judge? K-fold cross-validation.

The labelled items (those with texts and a people's label that is not a tie) are shuffled
(seeded) and split into K folds. The judge is run once on every item without examples, and once
per fold on that fold's items with examples drawn (``qa_eval.agreement.examples.pick_examples``)
only from the other folds: no item is ever judged with itself, or any item of its fold, as an
example, so the gain is not the examples scoring themselves. Both runs are then measured against
the labels as two judges on the same items (``qa_eval.agreement.agreement``: every figure with
its interval, and the paired comparison: McNemar's exact test on accuracy, the paired bootstrap
on kappa or Spearman, Holm-adjusted). The report's ``method.cross_validation`` says how.

Which prompt takes the examples: the family that writes the labelled metric
(``answer_correctness`` for ``answer_f1``, ``answer_recall``, ...; a custom metric for one of its
outputs). The texts are those of the results file that was labelled (``question_text``,
``reference_answer``, ``actual_answer``, and the steps when present).
"""

from __future__ import annotations

import os
import random
from collections.abc import Mapping, Sequence
from typing import Any

from ..agreement.examples import examples_from_labels, pick_examples
from ..agreement.judges import Judge
from ..agreement.labels import Labels, labels_from_records, read_labels
from ..agreement.measure import AgreementReport, agreement
from ..config import EXAMPLE_METRICS, SWITCHES, EvalConfig, as_config
from ..errors import InputError
from ..vocabulary.registry import METRICS
from .evaluation import run_evaluation

__all__ = ["WITH", "WITHOUT", "cross_validate", "example_family", "split_results"]

WITHOUT = "no examples"
WITH = "with examples (cross-validated)"


def example_family(config: EvalConfig, metric: str) -> str:
    """The metric whose prompt takes examples for a labelled result key (``answer_f1`` ->
    ``answer_correctness``; a custom output -> its custom metric); ``InputError`` otherwise."""
    for definition in config.custom_definitions:
        if metric in definition.outputs:
            return definition.name
    for name in EXAMPLE_METRICS:
        if metric in {key.name for key in METRICS[name].keys}:
            return name
    raise InputError(
        f"the labelled metric {metric!r} is written by no metric whose prompt takes examples "
        f"({', '.join(EXAMPLE_METRICS)} or a custom metric of the config)"
    )


def split_results(
    results: Sequence[Mapping[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A reference and responses rebuilt from a results file (one per question id, first seen)."""
    templates: dict[str, list[dict[str, Any]]] = {}
    responses: list[dict[str, Any]] = []
    seen: set[str] = set()
    for row in results:
        qid = str(row.get("question_id"))
        if qid in seen or not row.get("question_text"):
            continue
        seen.add(qid)
        question = {"id": qid, "question_text": row["question_text"]}
        for key in ("reference_answer", "reference_steps"):
            if row.get(key) is not None:
                question[key] = row[key]
        templates.setdefault(str(row.get("template_id") or "labelled"), []).append(question)
        response: dict[str, Any] = {"question_id": qid}
        for key in ("actual_answer", "actual_steps"):
            if row.get(key) is not None:
                response[key] = row[key]
        responses.append(response)
    reference = [{"template_id": t, "questions": qs} for t, qs in templates.items()]
    return reference, responses


def cross_validate(
    results: Sequence[Mapping[str, Any]],
    labels: Labels | str | Any,
    config: EvalConfig | Mapping[str, Any] | str | None,
    metric: str,
    *,
    folds: int = 5,
    count: int = 4,
    pick: str = "balanced",
    seed: int = 0,
    cache: Any = True,
    threshold: float | Mapping[str, float] | None = None,
    resamples: int = 2000,
) -> AgreementReport:
    """The judge without examples and with cross-validated examples, measured against the
    labels on the same items (see the module docstring); ``results`` give the labelled texts."""
    if folds < 2:
        raise ValueError(f"cross-validation needs at least 2 folds, got {folds}")
    if count < 1:
        raise ValueError(f"examples per prompt must be at least 1, got {count}")
    settings = as_config(config)
    family = example_family(settings, metric)
    if isinstance(labels, Labels):
        people = labels
    elif isinstance(labels, (str, os.PathLike)):
        people = read_labels(labels)
    else:
        people = labels_from_records(labels)
    reference, responses = split_results(results)
    answers = {r["question_id"]: r.get("actual_answer") for r in responses}
    texts = {
        q["id"]: (q["question_text"], q.get("reference_answer"), answer)
        for t in reference
        for q in t["questions"]
        if isinstance(answer := answers.get(q["id"]), str)
    }
    candidates = examples_from_labels(people, texts, metric)
    if len(candidates) < folds:
        raise InputError(
            f"{len(candidates)} labelled item(s) with texts for {folds} folds",
            source=people.source,
        )
    order = list(candidates)
    random.Random(seed).shuffle(order)
    fold_of = {ex.question_id: i % folds for i, ex in enumerate(order)}
    labelled = set(fold_of)
    switch = "custom" if family not in SWITCHES else family
    others = [s for s in SWITCHES if s != switch]
    base = settings.with_options(examples={})

    def run(ids: set[str], with_config: EvalConfig) -> list[dict[str, Any]]:
        ref = [{**t, "questions": [q for q in t["questions"] if q["id"] in ids]} for t in reference]
        ref = [t for t in ref if t["questions"]]
        resp = [r for r in responses if r["question_id"] in ids]
        return list(run_evaluation(ref, resp, with_config, disable=others, cache=cache))

    without = run(labelled, base)
    with_examples: list[dict[str, Any]] = []
    shown: list[int] = []
    for k in range(folds):
        pool = [ex for ex in candidates if fold_of[ex.question_id] != k]
        chosen = pick_examples(pool, count, pick, seed + k)
        shown.append(len(chosen))
        fold = {qid for qid, f in fold_of.items() if f == k}
        with_examples += run(fold, base.with_options(examples={family: chosen}))
    report = agreement(
        [Judge(WITHOUT, without, _model(settings)), Judge(WITH, with_examples, _model(settings))],
        people,
        metric=metric,
        threshold=threshold,
        resamples=resamples,
        seed=seed,
    )
    report.method["cross_validation"] = {
        "folds": folds,
        "items": len(labelled),
        "family": family,
        "examples_per_prompt": count,
        "examples_shown": shown,
        "pick": pick,
        "seed": seed,
        "note": "each fold judged with examples drawn only from the other folds",
    }
    return report


def _model(config: EvalConfig) -> str | None:
    generation = config.generation
    model = getattr(generation, "model", None) if generation is not None else None
    return model if isinstance(model, str) else None
