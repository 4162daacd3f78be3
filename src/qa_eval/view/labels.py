"""People's labels written by the viewer: one row per label, appended at once.

The file is the labels file ``qa-eval agreement`` reads (``.csv`` with a header row, or
``.jsonl``): ``question_id``, ``template_id``, ``metric``, ``label``, ``annotator`` and ``note``.
Each label is one ``write`` to a descriptor opened with ``O_APPEND`` under an exclusive
``flock``, then ``fsync``: a crash or a kill loses at most the label being written, and two
viewers (or two processes) appending to one file never interleave their rows. A file a killed
writer left without its last newline gets one before the next row.

A person labels an item once per metric: the reader refuses a second row of the same question,
metric and annotator, so the viewer refuses it too (change a label by editing the file).
"""

from __future__ import annotations

import contextlib
import csv
import fcntl
import io
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from ..errors import InputError

__all__ = ["COLUMNS", "LabelRow", "append_label", "labelled_items", "read_rows"]

COLUMNS = ("question_id", "template_id", "metric", "label", "annotator", "note")


@dataclass(frozen=True)
class LabelRow:
    """One label as written."""

    question_id: str
    template_id: str | None
    metric: str
    label: bool | float | str
    annotator: str
    note: str = ""

    def cells(self) -> dict[str, Any]:
        """The row's fields (``template_id`` and ``note`` left empty when not given)."""
        return {
            "question_id": self.question_id,
            "template_id": self.template_id or "",
            "metric": self.metric,
            "label": self.label,
            "annotator": self.annotator,
            "note": self.note,
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
        if (row.question_id, row.template_id, row.metric) in labelled_items(path, row.annotator):
            raise InputError(
                f"question {row.question_id!r} was already labelled on {row.metric!r} by "
                f"{row.annotator!r}",
                source=str(path),
            )
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
            if missing:
                raise InputError(f"the header has no {', '.join(missing)} column", source=str(path))
            text = prefix + _csv_text(row, header)
        else:
            data = {k: v for k, v in row.cells().items() if v not in ("", None)}
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


def labelled_items(path: Path, annotator: str) -> set[tuple[str, str | None, str]]:
    """(question id, template id or None, metric) of every label ``annotator`` wrote."""
    out = set()
    for record in read_rows(path):
        if record.get("annotator", "") == annotator:
            template = record.get("template_id") or None
            out.add((record.get("question_id", ""), template, record.get("metric", "")))
    return out
