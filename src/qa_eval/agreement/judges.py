"""The judges read (results files, each one judge) and what their results say about an item: the
value of a metric, and the reason given for it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..aggregate import as_float
from ..errors import InputError
from ..io import kinds
from ..io.files import check_results, read_data, signature_path
from ..vocabulary.lookup import key_info
from .labels import Label, Labels, LabelValue, labels_from_records, read_labels

Item = tuple[str | None, str]


@dataclass
class Judge:
    """One judge's results: its label, model and the per-question results."""

    label: str
    results: Sequence[Mapping[str, Any]]
    model: str | None = None
    source: str | None = None


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


def as_judges(results: Any) -> list[Judge]:
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


def as_labels(labels: Any) -> Labels:
    """People's labels: a labels file, a :class:`Labels`, or a list of label rows."""
    if isinstance(labels, Labels):
        return labels
    if isinstance(labels, (str, os.PathLike)):
        return read_labels(labels)
    return labels_from_records(labels)


def index_judge(judge: Judge) -> tuple[dict[Item, Mapping[str, Any]], dict[str, list[Item]]]:
    """A judge's results by (template, question) and the keys of each question id."""
    by_key: dict[Item, Mapping[str, Any]] = {}
    by_qid: dict[str, list[Item]] = {}
    for result in judge.results:
        template = result.get("template_id")
        key = (None if template is None else str(template), str(result.get("question_id")))
        by_key[key] = result
        by_qid.setdefault(key[1], []).append(key)
    return by_key, by_qid


def find_result(
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


def judge_value(result: Mapping[str, Any], metric: str) -> LabelValue | None:
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


def reason_of(result: Mapping[str, Any], metric: str) -> str | None:
    """The judge's reason for a result key: ``<metric>_reason``, else the reason of the family
    that writes the key (``answer_f1`` -> ``answer_correctness_reason``)."""
    reason = result.get(f"{metric}_reason")
    if reason is None:
        owner = key_info(metric)
        if owner is not None:
            reason = result.get(f"{owner[0].name}_reason")
    return reason if isinstance(reason, str) else None
