"""People's labels written by the viewer: one row per label, appended at once.

The file is the labels file ``qa-eval agreement`` reads (``.csv`` with a header row, or
``.jsonl``): ``question_id``, ``template_id``, ``metric``, ``label``, ``annotator`` and ``note``.
Each label is one ``write`` to a descriptor opened with ``O_APPEND`` under an exclusive
``flock``, then ``fsync``: a crash or a kill loses at most the label being written, and two
viewers (or two processes) appending to one file never interleave their rows. A file a killed
writer left without its last newline gets one before the next row.

A person labels an item once per metric; a change or a clear is a row that says
``supersedes`` (the labels format's rule: it replaces the earlier row of the item and
annotator, and an empty label clears it), so the file is only ever appended to. A second plain
row of a labelled item is refused, as the reader would refuse it. A CSV file whose header has no
``supersedes`` column (written by hand, or by an older viewer) takes new labels but no changes.
"""

from __future__ import annotations

import contextlib
import csv
import fcntl
import io
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson

from ..errors import InputError

__all__ = [
    "COLUMNS",
    "LabelRow",
    "append_label",
    "current_labels",
    "labelled_items",
    "read_rows",
]

COLUMNS = ("question_id", "template_id", "metric", "label", "annotator", "note", "supersedes")


@dataclass(frozen=True)
class LabelRow:
    """One label as written (``supersedes``: it changes the item's earlier label, or with a
    ``label`` of None clears it)."""

    question_id: str
    template_id: str | None
    metric: str
    label: bool | float | str | None
    annotator: str
    note: str = ""
    supersedes: bool = False

    def cells(self) -> dict[str, Any]:
        """The row's fields (``template_id``, ``note``, ``supersedes`` empty when not given)."""
        return {
            "question_id": self.question_id,
            "template_id": self.template_id or "",
            "metric": self.metric,
            "label": "" if self.label is None else self.label,
            "annotator": self.annotator,
            "note": self.note,
            "supersedes": "true" if self.supersedes else "",
        }


def _is_csv(path: Path) -> bool:
    return path.suffix.lower() == ".csv"


def _check_kind(path: Path) -> None:
    if path.suffix.lower() not in (".csv", ".jsonl"):
        raise InputError("the viewer writes labels to a .csv or .jsonl file", source=str(path))


def _csv_header(path: Path) -> list[str] | None:
    with contextlib.suppress(FileNotFoundError), path.open(encoding="utf-8-sig", newline="") as f:
        first = next(csv.reader(f), None)
        return [h.strip() for h in first] if first else None
    return None


def _csv_text(row: LabelRow, header: list[str]) -> str:
    cells = row.cells()
    value = cells["label"]
    if isinstance(value, bool):
        cells["label"] = "true" if value else "false"
    elif isinstance(value, float):
        cells["label"] = repr(value)
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow([cells.get(h, "") for h in header])
    return buffer.getvalue()


def append_label(path: Path, row: LabelRow) -> None:
    """Append one label to ``path`` (created with its header row when missing): one ``write``
    under an exclusive lock, then ``fsync``."""
    _check_kind(path)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        labelled = (row.question_id, row.template_id, row.metric) in labelled_items(
            path, row.annotator
        )
        if labelled and not row.supersedes:
            raise InputError(
                f"question {row.question_id!r} was already labelled on {row.metric!r} by "
                f"{row.annotator!r} (change it from the labelling page)",
                source=str(path),
            )
        if row.label is None and not labelled:
            raise InputError(
                f"question {row.question_id!r} has no label on {row.metric!r} by "
                f"{row.annotator!r} to clear",
                source=str(path),
            )
        if not labelled:
            row = replace(row, supersedes=False)  # a first label is a plain row
        size = os.fstat(fd).st_size
        prefix = ""
        if size and os.pread(fd, 1, size - 1) != b"\n":
            if _torn(fd, size, path):
                size = _cut_torn_tail(fd, size)
            else:
                prefix = "\n"  # a complete last row written without its newline (by hand)
        if _is_csv(path):
            header = _csv_header(path) if size else None
            if header is None:
                header = list(COLUMNS)
                prefix += ",".join(COLUMNS) + "\n"
            missing = [
                c for c in ("question_id", "metric", "label", "annotator") if c not in header
            ]
            if row.supersedes and "supersedes" not in header:
                missing.append("supersedes (needed to change a label)")
            if missing:
                raise InputError(f"the header has no {', '.join(missing)} column", source=str(path))
            text = prefix + _csv_text(row, header)
        else:
            data = {k: v for k, v in row.cells().items() if v not in ("", None)}
            if row.supersedes:
                data["supersedes"] = True
            text = prefix + orjson.dumps(data).decode() + "\n"
        os.write(fd, text.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)  # closing releases the lock


def _tail(fd: int, size: int) -> tuple[int, bytes]:
    """(where the last line starts, the last line) of the file open as ``fd``."""
    start = size
    while start > 0:
        step = min(start, 1 << 16)
        chunk = os.pread(fd, step, start - step)
        newline = chunk.rfind(b"\n")
        if newline >= 0:
            start = start - step + newline + 1
            break
        start -= step
    return start, os.pread(fd, size - start, start)


def _torn(fd: int, size: int, path: Path) -> bool:
    """Whether the last line (without its newline) is a row cut short: JSON that does not
    parse, or a CSV row with fewer cells than the header."""
    start, line = _tail(fd, size)
    text = line.decode("utf-8", errors="replace")
    if not _is_csv(path):
        try:
            orjson.loads(line)
        except orjson.JSONDecodeError:
            return True
        return False
    header = _csv_header(path) or []
    if start == 0:
        return not {"question_id", "metric", "label"} <= set(header)
    cells = next(csv.reader([text]), [])
    return len(cells) < len(header)


def _cut_torn_tail(fd: int, size: int) -> int:
    """Drop a row a killed writer left unfinished (its label was never saved); the new size."""
    start, line = _tail(fd, size)
    os.ftruncate(fd, start)
    print(
        f"qa-eval view: dropped an unfinished last row of the labels file: {line[:200]!r}",
        file=sys.stderr,
    )
    return start


def read_rows(path: Path) -> Iterator[dict[str, str]]:
    """The rows of a labels file as text mappings (an unreadable line is skipped)."""
    if not path.exists():
        return
    if _is_csv(path):
        with path.open(encoding="utf-8-sig", newline="") as f:
            for record in csv.DictReader(f):
                yield {k: (v or "") for k, v in record.items() if k is not None}
        return
    with path.open("rb") as f:
        for line in f:
            with contextlib.suppress(orjson.JSONDecodeError):
                data = orjson.loads(line)
                if isinstance(data, dict):
                    yield {k: "" if v is None else str(v) for k, v in data.items()}


def current_labels(path: Path, annotator: str) -> dict[tuple[str, str | None, str], dict[str, str]]:
    """The labels ``annotator`` holds now, by (question id, template id or None, metric), in the
    order first given: each row's text fields, superseding rows applied (a cleared one gone)."""
    out: dict[tuple[str, str | None, str], dict[str, str]] = {}
    for record in read_rows(path):
        if record.get("annotator", "") != annotator:
            continue
        template = record.get("template_id") or None
        key = (record.get("question_id", ""), template, record.get("metric", ""))
        replaces = record.get("supersedes", "").strip().lower() in ("true", "yes", "1")
        if replaces and not record.get("label", "").strip():
            out.pop(key, None)
        elif replaces or key not in out:
            out[key] = record
    return out


def labelled_items(path: Path, annotator: str) -> set[tuple[str, str | None, str]]:
    """(question id, template id or None, metric) of every label ``annotator`` holds now."""
    return set(current_labels(path, annotator))
