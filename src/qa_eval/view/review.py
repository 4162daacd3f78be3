"""Review of generated references: a decision per generated question, kept in the review CSV
that ``qa-eval generate --apply-review`` reads.

The file's columns are ``id,question,answer,query,decision,edit``: ``decision`` is ``accept``,
``reject`` or empty (not reviewed yet), ``edit`` a replacement question text or empty. The
viewer reads the file, shows each question with its answer and query, and writes a decision at
once: the whole file (small: one row per generated question) is written aside and renamed over
the old one under an exclusive lock, so a kill loses at most the decision being made, and the
other columns and rows are kept as they were.
"""

from __future__ import annotations

import csv
import fcntl
import io
import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError

__all__ = ["DECISIONS", "REVIEW_COLUMNS", "ReviewRow", "decide", "read_review"]

REVIEW_COLUMNS = ("id", "question", "answer", "query", "decision", "edit")
DECISIONS = ("accept", "reject", "")


@dataclass(frozen=True)
class ReviewRow:
    """One generated question and the decision on it."""

    id: str
    question: str
    answer: str
    query: str
    decision: str
    edit: str


def _rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError("no such file", source=str(path)) from None
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", source=str(path)) from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = [h.strip().lower() for h in reader.fieldnames or []]
    reader.fieldnames = header
    missing = [c for c in REVIEW_COLUMNS if c not in header]
    if missing:
        raise InputError(
            f"a review file has the columns {','.join(REVIEW_COLUMNS)}; missing: "
            f"{', '.join(missing)}",
            source=str(path),
            record="row 1",
        )
    rows = []
    for record in reader:
        row = {(k or "").strip(): v or "" for k, v in record.items()}
        row["decision"] = row.get("decision", "").strip().lower()
        if row["decision"] not in DECISIONS:
            raise InputError(
                "must be accept, reject or empty",
                source=str(path),
                record=f"row {reader.line_num}",
                field="decision",
            )
        rows.append(row)
    return header, rows


def read_review(path: str | os.PathLike[str]) -> list[ReviewRow]:
    """The rows of a review file, checked (columns present, decisions known)."""
    _, rows = _rows(Path(path))
    return [ReviewRow(*(row.get(c, "") for c in REVIEW_COLUMNS)) for row in rows]


def decide(path: str | os.PathLike[str], row_id: str, decision: str, edit: str = "") -> None:
    """Record the decision (and edited question) on the generated question ``row_id``."""
    if decision not in DECISIONS:
        raise InputError(f"decision must be accept, reject or empty, got {decision!r}")
    file = Path(path)
    lock = os.open(file, os.O_RDONLY)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        header, rows = _rows(file)
        found = [row for row in rows if row.get("id") == row_id]
        if not found:
            raise InputError(f"no question with id {row_id!r}", source=str(file))
        for row in found:
            row["decision"] = decision
            row["edit"] = edit
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=header, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        scratch = file.with_name(f".{file.name}.{os.getpid()}.tmp")
        with scratch.open("w", encoding="utf-8", newline="") as out:
            out.write(buffer.getvalue())
            out.flush()
            os.fsync(out.fileno())
        os.replace(scratch, file)
    finally:
        os.close(lock)
