"""Few-shot examples drawn from people's labels, for a judge's prompt.

An example is one labelled item: its question, its answer (and the reference answer when
known) and the people's label of it on one metric (their majority, or their mean for continuous
labels; an item whose annotators tie is never an example). The texts come from a results file
of ``qa-eval evaluate`` (``question_text``, ``reference_answer``, ``actual_answer`` by
``question_id``) or from the reference and responses files of the run that was labelled.

Which examples: ``first`` (the labelled items in the order of the texts' file), ``balanced``
(round-robin over the label values, each in that order: true, false, true, ...) or ``random``
(a seeded shuffle, ``seed``). See docs/agreement.md ("A judge that learns from the labels").
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..io.files import read_data
from ..prompts import Example
from .labels import Labels, people_label, read_labels

__all__ = ["PICKS", "Texts", "examples_from_labels", "load_examples", "pick_examples", "read_texts"]

PICKS = ("first", "balanced", "random")
"""How examples are chosen among the labelled items."""

Texts = Mapping[str, tuple[str, str | None, str]]
"""question_id -> (question, reference answer or None, answer)."""


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def read_texts(paths: Sequence[str | os.PathLike[str]]) -> dict[str, tuple[str, str | None, str]]:
    """The texts of labelled items: one results file, or a reference file and a responses file
    (``InputError`` naming the file when neither shape fits)."""
    if len(paths) == 1:
        rows = _records(read_data(paths[0]), paths[0])
        return {
            str(r.get("question_id")): (
                r["question_text"],
                _text(r.get("reference_answer")),
                answer,
            )
            for r in rows
            if r.get("question_id") is not None
            and _text(r.get("question_text"))
            and (answer := _text(r.get("actual_answer")))
        }
    if len(paths) != 2:
        raise InputError("give one results file, or a reference file and a responses file")
    questions: dict[str, tuple[str, str | None]] = {}
    for template in _records(read_data(paths[0]), paths[0]):
        for q in template.get("questions") or []:
            if isinstance(q, Mapping) and _text(q.get("question_text")):
                questions[str(q.get("id"))] = (q["question_text"], _text(q.get("reference_answer")))
    out: dict[str, tuple[str, str | None, str]] = {}
    for r in _records(read_data(paths[1]), paths[1]):
        qid = str(r.get("question_id"))
        if qid in questions and (answer := _text(r.get("actual_answer"))):
            out.setdefault(qid, (*questions[qid], answer))
    return out


def _records(data: Any, path: str | os.PathLike[str]) -> list[Mapping[str, Any]]:
    if isinstance(data, Mapping):
        data = [data]
    if not isinstance(data, list) or not all(isinstance(r, Mapping) for r in data):
        raise InputError("must be a list of records", source=str(path))
    return data


def examples_from_labels(
    labels: Labels | str | os.PathLike[str], texts: Texts, metric: str | None = None
) -> list[Example]:
    """Every labelled item with texts, as an example, in the texts' order; ``metric``: the
    labelled metric (default: the only one labelled)."""
    people = labels if isinstance(labels, Labels) else read_labels(labels)
    if metric is None:
        if len(people.metrics) != 1:
            raise InputError(
                f"labels of {len(people.metrics)} metrics: say which (examples_metric)",
                source=people.source,
            )
        metric = people.metrics[0]
    if metric not in people.kinds:
        raise InputError(f"no label of the metric {metric!r}", source=people.source)
    kind = people.kinds[metric]
    by_qid = {qid: people_label(rows, kind) for (_, qid), rows in people.items(metric).items()}
    return [
        Example(question, answer, label, metric, reference, qid)
        for qid, (question, reference, answer) in texts.items()
        if (label := by_qid.get(qid)) is not None
    ]


def pick_examples(
    candidates: Iterable[Example], count: int, pick: str = "balanced", seed: int = 0
) -> tuple[Example, ...]:
    """``count`` examples chosen by ``pick`` (``first``, ``balanced`` or ``random``, seeded)."""
    pool = list(candidates)
    if pick not in PICKS:
        raise ValueError(f"pick must be one of {', '.join(PICKS)}, not {pick!r}")
    if pick == "random":
        random.Random(seed).shuffle(pool)
        return tuple(pool[:count])
    if pick == "first":
        return tuple(pool[:count])
    groups: dict[Any, list[Example]] = {}
    for ex in pool:
        groups.setdefault(repr(ex.label), []).append(ex)
    chosen: list[Example] = []
    queues = [list(reversed(g)) for g in groups.values()]
    while len(chosen) < count and any(queues):
        for queue in queues:
            if queue and len(chosen) < count:
                chosen.append(queue.pop())
    return tuple(chosen)


def load_examples(
    labels: str | os.PathLike[str],
    sources: Sequence[str | os.PathLike[str]],
    *,
    metric: str | None = None,
    count: int = 4,
    pick: str = "balanced",
    seed: int = 0,
    base: Path | None = None,
) -> tuple[Example, ...]:
    """The examples of a config block: labels and texts read (paths relative to ``base``)."""
    root = base or Path()
    texts = read_texts([root / s for s in sources])
    found = examples_from_labels(read_labels(root / labels), texts, metric)
    if not found:
        raise InputError(
            "no labelled item has a question and an answer in the examples' texts",
            source=str(root / labels),
        )
    return pick_examples(found, count, pick, seed)
