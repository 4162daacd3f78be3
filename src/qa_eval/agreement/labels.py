"""People's labels: read from CSV, JSON Lines, JSON or YAML, checked row by row.

A label row has ``question_id`` (the result's id), ``metric`` (a result key: ``answer_f1``,
``faithfulness``, ``answer_class``, a custom output, ...), ``label`` (a number, a boolean or a
class), and optionally ``annotator`` (several people may label one item, one row each),
``template_id`` (only needed when a results file repeats a question id across templates) and
``note`` (the annotator's words, as ``qa-eval view`` writes them; not measured) and
``supersedes``.

One annotator labels an item (question, template, metric) once: a second row of the same item and
annotator is refused, unless it says ``supersedes`` (``true``/``yes``/``1`` in CSV, ``true`` in
JSON and YAML): then it replaces the earlier row (which keeps its place), and with an empty
``label`` it clears it (the item has no label of that annotator, and a plain row may label it
again). A superseding row without an
earlier one is an ordinary row (or, cleared, nothing). This is how ``qa-eval view`` changes a
label by appending a row, while a file with an accidental repeat is still refused.

In a CSV file ``true`` / ``false`` / ``yes`` / ``no`` (any case) are booleans, a number is a
number, anything else is a class. In JSON and YAML the value's own type counts (``"1"`` is the
class ``1``). A metric's labels are of one kind:

- ``binary``: booleans, or numbers that are all 0 or 1;
- ``class``: text;
- ``continuous``: numbers (at least one neither 0 nor 1).

A bad row is an ``InputError`` naming the file, the row (``row N``: the CSV line, header = row
1; ``line N`` of JSON Lines; ``record [i]`` of JSON or YAML) and the field.
"""

from __future__ import annotations

import csv
import io
import math
import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..errors import InputError
from ..io.files import read_data, read_text

__all__ = [
    "Kind",
    "Label",
    "LabelValue",
    "Labels",
    "labels_from_records",
    "people_label",
    "read_labels",
    "vote",
]

LabelValue = bool | float | str
Kind = Literal["binary", "class", "continuous"]

_FIELDS = ("question_id", "metric", "label", "annotator", "template_id", "note", "supersedes")
_REQUIRED = ("question_id", "metric", "label")
_TRUE = frozenset({"true", "yes"})
_FALSE = frozenset({"false", "no"})


@dataclass(frozen=True)
class Label:
    """One person's label of one metric of one question."""

    question_id: str
    metric: str
    value: LabelValue
    annotator: str = ""
    template_id: str | None = None
    row: str = ""
    """Where it was read: ``row 7``, ``line 3``, ``record [2]``."""

    @property
    def key(self) -> tuple[str | None, str]:
        """(template id or None, question id): the item the label is about."""
        return (self.template_id, self.question_id)


@dataclass
class Labels:
    """The labels of one file (or list of records), by metric."""

    rows: list[Label]
    source: str = "labels"
    kinds: dict[str, Kind] = field(default_factory=dict)
    """Each metric's kind of label (see the module docstring)."""

    @property
    def metrics(self) -> list[str]:
        """The metrics labelled, in the order they first appear."""
        return list(dict.fromkeys(label.metric for label in self.rows))

    @property
    def annotators(self) -> list[str]:
        """The annotators named (``""`` for rows without one), in order of appearance."""
        return list(dict.fromkeys(label.annotator for label in self.rows))

    def items(self, metric: str) -> dict[tuple[str | None, str], list[Label]]:
        """The labels of ``metric`` by item, in the order the items first appear."""
        out: dict[tuple[str | None, str], list[Label]] = {}
        for label in self.rows:
            if label.metric == metric:
                out.setdefault(label.key, []).append(label)
        return out


def read_labels(path: str | os.PathLike[str]) -> Labels:
    """Read a labels file: ``.csv`` (header row), ``.jsonl``, ``.json`` or ``.yaml``."""
    source = str(path)
    if Path(path).suffix.lower() == ".csv":
        return _checked(_csv_records(Path(path)), source)
    data = read_data(path)
    line_numbers = getattr(data, "line_numbers", None)
    if isinstance(data, Mapping) and isinstance(data.get("labels"), list):
        data = data["labels"]
    if not isinstance(data, list):
        kind = "null" if data is None else type(data).__name__
        raise InputError(f"labels must be a list of rows, got {kind}", source=source)
    rows = []
    for position, record in enumerate(data):
        where = f"line {line_numbers[position]}" if line_numbers else f"record [{position}]"
        rows.append((where, record, False))
    return _checked(rows, source)


def labels_from_records(records: Iterable[Mapping[str, Any]], source: str = "labels") -> Labels:
    """Labels from in-memory rows (mappings with the fields of a labels file)."""
    return _checked([(f"record [{i}]", r, False) for i, r in enumerate(records)], source)


def _csv_records(path: Path) -> list[tuple[str, Any, bool]]:
    """The rows of a CSV file as (``row N``, mapping, True), N the file's line (header: 1)."""
    text = read_text(path)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise InputError("the file is empty: expected a header row", source=str(path)) from None
    missing = [f for f in _REQUIRED if f not in header]
    if missing:
        raise InputError(
            f"the header has no {', '.join(missing)} column (it has: {', '.join(header)})",
            source=str(path),
            record="row 1",
        )
    rows = []
    for cells in reader:
        number = reader.line_num  # the file's line (a quoted cell may span lines: its last)
        if not any(c.strip() for c in cells):
            continue
        if len(cells) > len(header):
            raise InputError(
                f"{len(cells)} cells, but the header has {len(header)} columns",
                source=str(path),
                record=f"row {number}",
            )
        rows.append((f"row {number}", dict(zip(header, cells)), True))
    return rows


def _checked(rows: Sequence[tuple[str, Any, bool]], source: str) -> Labels:
    """Parse and check every row, then each metric's kind; the first problem is an error."""
    kept: dict[tuple[Any, ...], Label] = {}
    seen: dict[tuple[Any, ...], str] = {}
    for where, record, from_text in rows:
        replaces = _supersedes(record, source, where)
        label = _parse_row(record, where, source, from_text, cleared_ok=replaces)
        identity = (label.template_id, label.question_id, label.metric, label.annotator)
        if identity in seen and not replaces:
            who = f"annotator {label.annotator!r}" if label.annotator else "no annotator"
            raise InputError(
                f"question {label.question_id!r}, metric {label.metric!r} and {who} were "
                f"already labelled in {seen[identity]} (several people labelling one item: give "
                "each row an annotator; a correction: mark its row supersedes)",
                source=source,
                record=where,
            )
        if label.value is _CLEARED:  # the item is unlabelled again: a plain row may follow
            kept.pop(identity, None)
            seen.pop(identity, None)
        else:
            seen[identity] = where
            kept[identity] = label
    labels = list(kept.values())
    if not labels:
        raise InputError("no label rows", source=source)
    result = Labels(labels, source)
    for metric in result.metrics:
        result.kinds[metric] = _kind(result, metric)
    return result


_CLEARED: Any = object()
"""The value of a superseding row with an empty label: the earlier label is cleared."""


def _supersedes(record: Any, source: str, where: str) -> bool:
    """Whether a row says it supersedes the earlier row of its item (``supersedes``)."""
    value = record.get("supersedes") if isinstance(record, Mapping) else None
    if value is None or value is False or value == "":
        return False
    if value is True:
        return True
    if isinstance(value, str) and value.strip().lower() in ("true", "yes", "1", "false", "no", "0"):
        return value.strip().lower() in ("true", "yes", "1")
    raise InputError(
        f"must be true or false, got {value!r}", source=source, record=where, field="supersedes"
    )


def _parse_row(
    record: Any, where: str, source: str, from_text: bool, cleared_ok: bool = False
) -> Label:
    """One row as a :class:`Label` (``from_text``: CSV cells, all strings; ``cleared_ok``: an
    empty label is allowed, the value is then ``_CLEARED``)."""
    if not isinstance(record, Mapping):
        kind = "null" if record is None else type(record).__name__
        raise InputError(f"a label row must be a mapping, got {kind}", source=source, record=where)
    unknown = [k for k in record if k not in _FIELDS]
    if unknown:
        raise InputError(
            f"unknown field (a label row has {', '.join(_FIELDS)})",
            source=source,
            record=where,
            field=str(unknown[0]),
        )
    cleared = False
    for name in _REQUIRED:
        value = record.get(name)
        if value is None or (isinstance(value, str) and not value.strip()):
            if name == "label" and cleared_ok:
                cleared = True
                continue
            raise InputError("missing or empty", source=source, record=where, field=name)
    qid = _identifier(record["question_id"], source, where, "question_id")
    metric = record["metric"]
    if not isinstance(metric, str):
        raise InputError(
            f"must be a metric name (text), got {type(metric).__name__}",
            source=source,
            record=where,
            field="metric",
        )
    template = record.get("template_id")
    if isinstance(template, str) and not template.strip():
        template = None
    annotator = record.get("annotator")
    if annotator is None or (isinstance(annotator, str) and not annotator.strip()):
        annotator = ""
    return Label(
        question_id=qid,
        metric=metric.strip(),
        value=_CLEARED if cleared else _value(record["label"], source, where, from_text),
        annotator=_identifier(annotator, source, where, "annotator") if annotator != "" else "",
        template_id=None
        if template is None
        else _identifier(template, source, where, "template_id"),
        row=where,
    )


def _identifier(value: Any, source: str, where: str, name: str) -> str:
    """An id (text or integer) as text."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InputError(
            f"must be text or an integer, got {type(value).__name__}",
            source=source,
            record=where,
            field=name,
        )
    return str(value).strip()


def _value(value: Any, source: str, where: str, from_text: bool) -> LabelValue:
    """A label: a boolean, a finite number or a class (non-empty text)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        number = float(value)
        if not math.isfinite(number):
            raise InputError(
                f"must be a finite number, got {value!r}",
                source=source,
                record=where,
                field="label",
            )
        return number
    if isinstance(value, str):
        text = value.strip()
        if from_text:
            if text.lower() in _TRUE:
                return True
            if text.lower() in _FALSE:
                return False
            try:
                number = float(text)
            except ValueError:
                return text
            if not math.isfinite(number):
                raise InputError(
                    f"must be a finite number, got {text!r}",
                    source=source,
                    record=where,
                    field="label",
                )
            return number
        return text
    raise InputError(
        f"must be a number, a boolean or a class (text), got {type(value).__name__}",
        source=source,
        record=where,
        field="label",
    )


def _kind(labels: Labels, metric: str) -> Kind:
    """The kind of one metric's labels; a row of another kind than the first is an error."""
    rows = [label for label in labels.rows if label.metric == metric]
    first = rows[0]
    text = isinstance(first.value, str)
    for label in rows:
        if isinstance(label.value, str) != text:
            want = "classes (text)" if text else "numbers or booleans"
            raise InputError(
                f"metric {metric!r} was labelled with {want} in {first.row}, so "
                f"{label.value!r} does not fit",
                source=labels.source,
                record=label.row,
                field="label",
            )
    if text:
        return "class"
    if all(isinstance(label.value, bool) or label.value in (0.0, 1.0) for label in rows):
        return "binary"
    booleans = [label for label in rows if isinstance(label.value, bool)]
    if booleans:
        raise InputError(
            f"metric {metric!r} has numeric labels other than 0 and 1, so the boolean "
            f"{booleans[0].value!r} does not fit",
            source=labels.source,
            record=booleans[0].row,
            field="label",
        )
    return "continuous"


def people_label(labels: Sequence[Label], kind: Kind) -> LabelValue | None:
    """The people's label of an item: majority (None on a tie), or the mean when continuous."""
    if kind == "continuous":
        return math.fsum(float(label.value) for label in labels) / len(labels)
    votes = Counter(vote(label.value, kind) for label in labels).most_common()
    if len(votes) > 1 and votes[0][1] == votes[1][1]:
        return None
    return votes[0][0]


def vote(value: LabelValue, kind: Kind) -> LabelValue:
    """A label as a vote: a binary label as a boolean (1 and True are one vote)."""
    return bool(value) if kind == "binary" else value
