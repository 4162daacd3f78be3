"""The questions table of one run: what the URL asks for (:class:`TableView`) and its page.

Filters: template, tag (``key=value``), a metric's range, errors, a failed metric (one with a
``<metric>_error``), trial; a search of the indexed text (question, answers, reasons,
``mismatch`` texts, errors): plain words (every word must occur; FTS5, words and their
prefixes as the ``unicode61`` tokenizer cuts them) or a Python regular expression (tried on the
rows the other filters and the word index leave: :mod:`.regex`). Sorting by position, id,
template or any metric (SQLite's order: a missing value is smallest). Every value reaches SQL
as a parameter; column names come only from the index's own table of metrics.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any
from urllib.parse import urlencode

from ..errors import InputError
from .index import LOCK, Index
from .regex import COUNT_BUDGET, NO_ROW, VocabLookup, fts_prefilter, required_runs, scan

__all__ = [
    "PAGE_SIZES",
    "Page",
    "TableView",
    "failed_of",
    "page_of",
    "tags_of",
    "templates_of",
    "trials_of",
]

PAGE_SIZES = (25, 50, 100, 200)
_FIXED_SORTS = {"pos": "pos", "qid": "qid", "template": "tpl", "trial": "trial"}


@dataclass(frozen=True)
class TableView:
    """The state of the questions table: every field is a URL parameter (defaults left out)."""

    template: str = ""
    tag: str = ""
    metric: str = ""
    low: float | None = None
    high: float | None = None
    errors: str = ""  # "only", "none" or ""
    failed: str = ""
    trial: int | None = None
    q: str = ""
    regex: bool = False
    count: bool = False  # a regular expression's matches counted to the end
    sort: str = "pos"
    desc: bool = False
    page: int = 1
    size: int = 50

    @classmethod
    def from_query(cls, params: Mapping[str, str]) -> TableView:
        """The view a URL's query asks for; a bad value is an ``InputError`` naming it."""
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = params.get(f.name)
            if raw is None or raw == "":
                continue
            try:
                if f.name in ("low", "high"):
                    values[f.name] = float(raw)
                elif f.name in ("trial", "page", "size"):
                    values[f.name] = int(raw)
                elif f.name in ("regex", "desc", "count"):
                    values[f.name] = raw in ("1", "true", "on", "yes")
                else:
                    values[f.name] = raw
            except ValueError:
                raise InputError(f"not a number: {raw!r}", field=f.name) from None
        view = cls(**values)
        if view.page < 1:
            raise InputError("must be 1 or more", field="page")
        if view.size not in PAGE_SIZES:
            raise InputError(f"must be one of {', '.join(map(str, PAGE_SIZES))}", field="size")
        if view.errors not in ("", "only", "none"):
            raise InputError("must be 'only' or 'none'", field="errors")
        return view

    def query(self, **changes: Any) -> str:
        """The URL query of this view with ``changes`` (defaults left out)."""
        view = replace(self, **changes)
        default = TableView()
        pairs = []
        for f in fields(view):
            value = getattr(view, f.name)
            if value != getattr(default, f.name):
                pairs.append((f.name, "1" if value is True else str(value)))
        return urlencode(pairs)


@dataclass(frozen=True)
class Page:
    """One page of the table: its rows (mappings), how many match (``exact``: else at least
    that many: a regular expression's count stopped early), the metric columns."""

    rows: list[dict[str, Any]]
    total: int
    metrics: list[str]
    view: TableView
    exact: bool = True

    @property
    def pages(self) -> int:
        """How many pages the matching rows fill (at least 1)."""
        return max(1, -(-self.total // self.view.size))


def _words(text: str) -> str:
    """An FTS5 query for every word of ``text`` (each quoted: no FTS syntax reaches it)."""
    words = re.findall(r"\w+", text)
    return " ".join('"' + w.replace('"', '""') + '"' for w in words)


def _where(
    index: Index, view: TableView
) -> tuple[str, list[Any], re.Pattern[str] | None, str | None]:
    clauses: list[str] = []
    params: list[Any] = []
    if view.template:
        clauses.append("tpl = ?")
        params.append(view.template)
    if view.tag:
        key, sep, value = view.tag.partition("=")
        if not sep:
            raise InputError("a tag filter is key=value", field="tag")
        condition = index.tag_filter(key)
        if condition is None:
            raise InputError(f"no tag {key!r} in {index.source.name}", field="tag")
        clauses.append(condition)
        params.append(value)
    if view.metric:
        col = _column(index, view.metric, "metric")
        if view.low is not None:
            clauses.append(f"{col} >= ?")
            params.append(view.low)
        if view.high is not None:
            clauses.append(f"{col} <= ?")
            params.append(view.high)
        if view.low is None and view.high is None:
            clauses.append(f"{col} IS NOT NULL")
    if view.errors:
        clauses.append("err = ?")
        params.append(1 if view.errors == "only" else 0)
    if view.failed:
        clauses.append("pos IN (SELECT pos FROM failed WHERE metric = ?)")
        params.append(view.failed)
    if view.trial is not None:
        clauses.append("trial = ?")
        params.append(view.trial)
    pattern = prefilter = None
    if view.q and view.regex:
        try:
            pattern = re.compile(view.q)
        except re.error as e:
            raise InputError(f"not a regular expression: {e}", field="q") from None
        prefilter = fts_prefilter(required_runs(view.q), _vocabulary(index))
    elif view.q and _words(view.q):
        clauses.append("pos IN (SELECT rowid FROM qf WHERE qf MATCH ?)")
        params.append(_words(view.q))
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params, pattern, prefilter


_FEW = 50_000
"""Word-index candidates of a regular expression few enough to be gathered before a sort."""


def _regex_rows(
    index: Index, where: str, params: list[Any], prefilter: str | None, order: str, direction: str
) -> Iterator[tuple[int]]:
    """The positions of the rows ``qa_regexp`` (the pattern) matches, in the table's order,
    among those the other filters leave and, with a pre-filter, the word index too. In the
    file's order they stream from the word index; another order gathers the candidates first
    when they are few, else tries every row in that order (a common pattern fills a page soon)."""
    if prefilter == NO_ROW:
        return iter(())
    ordered = f"ORDER BY {order} {direction}, pos {direction}"
    match = " AND qa_regexp(doc)"
    if prefilter is None:
        clause = where + match if where else " WHERE qa_regexp(doc)"
        return index.db.execute(f"SELECT pos FROM q{clause} {ordered}", params)
    more = where.replace(" WHERE ", " AND ", 1)
    if order == "pos":
        return index.db.execute(
            f"SELECT q.pos FROM qf JOIN q ON q.pos = qf.rowid WHERE qf MATCH ?{more}"
            f" AND qa_regexp(q.doc) ORDER BY qf.rowid {direction}",
            [prefilter, *params],
        )
    probe = "SELECT count(*) FROM (SELECT rowid FROM qf WHERE qf MATCH ? LIMIT ?)"
    if index.db.execute(probe, (prefilter, _FEW + 1)).fetchone()[0] > _FEW:
        clause = where + match if where else " WHERE qa_regexp(doc)"
        return index.db.execute(f"SELECT pos FROM q{clause} {ordered}", params)
    return index.db.execute(
        f"SELECT pos FROM q WHERE pos IN (SELECT rowid FROM qf WHERE qf MATCH ?){more}"
        f"{match} {ordered}",
        [prefilter, *params],
    )


_VOCABULARIES: weakref.WeakKeyDictionary[Index, VocabLookup] = weakref.WeakKeyDictionary()


def _vocabulary(index: Index) -> VocabLookup:
    found = _VOCABULARIES.get(index)
    if found is None:
        found = _VOCABULARIES[index] = VocabLookup(index.db)
    return found


def _column(index: Index, name: str, field: str) -> str:
    col = index.metrics.get(name)
    if col is None:
        raise InputError(f"no metric {name!r} in {index.source.name}", field=field)
    return col


def page_of(index: Index, view: TableView) -> Page:
    """The rows of ``view``'s page and how many rows match."""
    with LOCK:
        where, params, pattern, prefilter = _where(index, view)
    if view.sort in _FIXED_SORTS:
        order = _FIXED_SORTS[view.sort]
    else:
        order = _column(index, view.sort, "sort")
    direction = "DESC" if view.desc else "ASC"
    names = list(index.metrics)
    cols = ", ".join(index.metrics[n] for n in names)
    select = "SELECT pos, qid, tpl, trial, question, err, traced" + (f", {cols}" if cols else "")
    sql = f"{select} FROM q{where} ORDER BY {order} {direction}, pos {direction} LIMIT ? OFFSET ?"
    exact = True
    with LOCK:
        start = (view.page - 1) * view.size
        if pattern is None:
            total = index.db.execute(f"SELECT count(*) FROM q{where}", params).fetchone()[0]
            found = index.db.execute(sql, [*params, view.size, start]).fetchall()
        else:  # the rows the word index leaves, tried in order with the expression
            search = pattern.search
            index.db.create_function(
                "qa_regexp", 1, lambda text: search(text or "") is not None, deterministic=True
            )
            matches = _regex_rows(index, where, params, prefilter, order, direction)
            budget = None if view.count else COUNT_BUDGET
            found_scan = scan(matches, start, view.size, budget, index.db)
            total, exact, chosen = found_scan.total, found_scan.exact, found_scan.chosen
            by_pos = {
                row[0]: row
                for row in index.db.execute(
                    f"{select} FROM q WHERE pos IN ({', '.join('?' * len(chosen))})", chosen
                )
            }
            found = [by_pos[p] for p in chosen]
    rows = []
    for row in found:
        pos, qid, tpl, trial, question, err, traced, *values = row
        rows.append(
            {
                "pos": pos,
                "question_id": qid,
                "template": tpl,
                "trial": trial,
                "question": question,
                "error": bool(err),
                "traced": bool(traced),
                "values": dict(zip(names, values)),
            }
        )
    return Page(rows, total, names, view, exact)


def templates_of(index: Index) -> list[str]:
    """The templates of the run, in order."""
    return [value for _, value, _ in index.facets.get("template", [])]


def tags_of(index: Index, per_key: int = 50) -> list[tuple[str, str, int]]:
    """(key, value, questions) of the run's tags: every key, each with its ``per_key`` most
    common values (the filter takes any value of a known key)."""
    by_key: dict[str, list[tuple[str, str, int]]] = {}
    for key, value, n in index.facets.get("tag", []):
        by_key.setdefault(key, []).append((key, value, n))
    out = []
    for key in sorted(by_key):
        out += sorted(by_key[key], key=lambda t: (-t[2], t[1]))[:per_key]
    return out


def trials_of(index: Index) -> list[int]:
    """The trial numbers present."""
    return sorted(int(value) for _, value, _ in index.facets.get("trial", []))


def failed_of(index: Index) -> list[str]:
    """The metrics that failed (``<metric>_error``) on some question."""
    return [value for _, value, _ in index.facets.get("failed", [])]
