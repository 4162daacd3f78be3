"""Review by a person: ``--review FILE`` writes one CSV row per question (``id``, ``question``,
``answer``, ``query``, and blank ``decision`` and ``edit`` columns); ``apply_review`` keeps the
rows marked ``accept``, takes an ``edit`` as the new question text, and re-runs every kept query
against the graph: a question whose result changed since it was generated is left out and named.

The CSV (UTF-8, comma-separated, RFC 4180 quoting; the viewer writes the same columns):
``decision`` is ``accept``, ``reject`` or empty (undecided: not kept); ``edit`` is a replacement
question text or empty.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..io.files import read_reference, read_text
from ..refresh.reference import refresh_reference
from ..refresh.runners import QueryRunner
from ..refresh.writer import write_atomically

__all__ = [
    "REVIEW_COLUMNS",
    "Decision",
    "ReviewResult",
    "apply_review",
    "apply_review_file",
    "read_review",
    "review_text",
    "write_review",
]

REVIEW_COLUMNS = ("id", "question", "answer", "query", "decision", "edit")
DECISIONS = ("accept", "reject", "")


def _sparql_query(question: Mapping[str, Any]) -> str:
    for group in reversed(question.get("reference_steps") or []):
        for step in group:
            if step.get("name") == "sparql_query":
                return str((step.get("args") or {}).get("query", ""))
    return ""


def review_text(data: Iterable[Mapping[str, Any]]) -> str:
    """The review CSV of reference data (templates of questions)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(REVIEW_COLUMNS)
    for template in data:
        for q in template.get("questions", []):
            writer.writerow(
                [
                    q["id"],
                    q["question_text"],
                    q.get("reference_answer", ""),
                    _sparql_query(q),
                    "",
                    "",
                ]
            )
    return out.getvalue()


def write_review(path: str | os.PathLike[str], data: Iterable[Mapping[str, Any]]) -> None:
    """Write the review CSV in one step."""
    file = Path(path)
    if not file.parent.is_dir():
        raise InputError("the folder does not exist", source=str(file))
    write_atomically(file, review_text(data).encode("utf-8"))


@dataclass(frozen=True)
class Decision:
    """One reviewed row: ``accept``, ``reject`` or ``""`` (undecided), and the edited question
    text (or None)."""

    decision: str
    edit: str | None

    @property
    def keep(self) -> bool:
        """Whether the question is kept (accepted)."""
        return self.decision == "accept"


def read_review(path: str | os.PathLike[str]) -> dict[str, Decision]:
    """The decisions of a review CSV, by question id."""
    source = str(path)
    text = read_text(Path(path))
    rows = csv.reader(io.StringIO(text.lstrip("\ufeff")))
    header = next(rows, None)
    if header is None:
        raise InputError("the review file is empty", source=source)
    columns = [h.strip().lower() for h in header]
    missing = [c for c in ("id", "decision", "edit") if c not in columns]
    if missing:
        raise InputError(
            f"no {missing[0]!r} column (a review file has: {', '.join(REVIEW_COLUMNS)})",
            source=source,
        )
    at = {c: columns.index(c) for c in ("id", "decision", "edit")}
    decisions: dict[str, Decision] = {}
    for line, row in enumerate(rows, start=2):
        if not any(cell.strip() for cell in row):
            continue
        cells = row + [""] * (len(columns) - len(row))
        qid = cells[at["id"]].strip()
        decision = cells[at["decision"]].strip().lower()
        if decision not in DECISIONS:
            raise InputError(
                f"decision must be accept, reject or empty, got {decision[:40]!r}",
                source=source,
                record=f"row {line}",
                field="decision",
            )
        if qid in decisions:
            raise InputError(
                f"question {qid!r} is reviewed twice", source=source, record=f"row {line}"
            )
        edit = cells[at["edit"]].strip()
        decisions[qid] = Decision(decision, edit or None)
    return decisions


@dataclass
class ReviewResult:
    """What applying a review kept, left out and found changed."""

    data: list[dict[str, Any]]
    kept: int = 0
    rejected: int = 0
    undecided: int = 0
    edited: int = 0
    changed: list[str] = field(default_factory=list)


def apply_review(
    decisions: Mapping[str, Decision],
    data: list[dict[str, Any]],
    run_query: QueryRunner,
    source: str = "reference",
) -> ReviewResult:
    """Keep the accepted questions (with their edits), re-run their queries and leave out the
    ones whose result changed."""
    known = {q.get("id") for t in data for q in t.get("questions", [])}
    unknown = sorted(set(decisions) - known)
    if unknown:
        raise InputError(
            f"the review names question {unknown[0]!r}, which {source} does not hold "
            "(is it the review of another file?)"
        )
    result = ReviewResult([])
    kept: list[dict[str, Any]] = []
    for template in data:
        questions = []
        for question in template.get("questions", []):
            decision = decisions.get(question.get("id"))
            if decision is None or not decision.keep:
                if decision is not None and decision.decision == "reject":
                    result.rejected += 1
                else:
                    result.undecided += 1
                continue
            question = dict(question)
            if decision.edit is not None and decision.edit != question.get("question_text"):
                question["question_text"] = decision.edit
                generated = dict(question.get("generated") or {})
                generated["wording"] = "edited by a reviewer"
                question["generated"] = generated
                result.edited += 1
            questions.append(question)
        if questions:
            kept.append({**template, "questions": questions})
    refreshed = refresh_reference(kept, run_query, source)
    changed = {(c.template_id, c.question_id) for c in refreshed.changes}
    for template in kept:
        template["questions"] = [
            q
            for q in template["questions"]
            if (template.get("template_id"), q.get("id")) not in changed
        ]
    result.changed = sorted(str(qid) for _, qid in changed)
    result.data = [t for t in kept if t["questions"]]
    result.kept = sum(len(t["questions"]) for t in result.data)
    return result


def apply_review_file(
    review: str | os.PathLike[str], reference: str | os.PathLike[str], run_query: QueryRunner
) -> ReviewResult:
    """``apply_review`` on files."""
    return apply_review(read_review(review), read_reference(reference), run_query, str(reference))
