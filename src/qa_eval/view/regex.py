"""Regular-expression search of the questions table, pre-filtered by the word index.

A regular expression is matched, as documented, by Python's :mod:`re` (a ``str`` pattern,
compiled once) against each row's searched text (question, answers, reasons, ``mismatch`` texts
and errors). Scanning every row of a million costs seconds, so the rows tried are first narrowed
by the FTS5 word index the plain-word search uses, with terms the pattern cannot match without:

1. The pattern is parsed (``re._parser``) for its *required runs*: sequences of characters every
   match contains (literals, small character classes, a group or a repeat of at least one), each
   position a set of characters (a case-insensitive letter: every character ``re`` itself matches
   with it, e.g. ``k``, ``K`` and the Kelvin sign).
2. Each position is folded as the index's ``unicode61 remove_diacritics 2`` tokenizer folds it
   (asked of SQLite itself, one character at a time): a word character when every character of
   the set folds to one and the same character, a separator when every one is a separator.
3. A run of word characters in a required run is a term of the index, or a part of one: bounded by
   separators on both sides it is a whole term (``"after"``), on the left only a prefix
   (``"after"*``), on the right only a suffix and on neither side an infix: those two are looked
   up in the index's vocabulary (the terms that end with it, or contain it; when there are too
   many, or the run is shorter than three characters, it is not used).

A row the pattern matches has every such term (case and accents are folded on both sides), so
the rows that have them all (an FTS5 ``AND`` query) are a superset of the matches: only they are
tried with the pattern, and what it matches is exactly what a scan would. A pattern with no usable
run (``\\d{4}``, ``a|b``) tries every row the other filters leave.

The rows are tried in the table's order (the pattern is an SQL function of the query, so only
matches leave SQLite) until the page is filled, then counting goes on for at most
:data:`COUNT_BUDGET` seconds: past it the count is a lower bound (the page says "at least"
and offers to count them all).
"""

from __future__ import annotations

import re
import sqlite3
import sys
import threading
import time
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

__all__ = [
    "COUNT_BUDGET",
    "NO_ROW",
    "Scan",
    "VocabLookup",
    "fts_prefilter",
    "required_runs",
    "scan",
]

COUNT_BUDGET = 0.1
"""Seconds spent counting matches past the page before the count is given as "at least"."""
_MAX_SET = 16
_MAX_VOCAB = 2000
_MIN_LOOKUP = 3
_SEP = ""


def required_runs(pattern: str) -> list[list[frozenset[str]]]:
    """Sequences of character sets every match of ``pattern`` contains (empty when unknown)."""
    try:
        import re._constants as sre  # type: ignore[import-not-found]
        import re._parser as parser  # type: ignore[import-not-found]

        parsed = parser.parse(pattern)
        plain: list[list[frozenset[str]]] = []  # first as written: the characters used
        plain.append(_walk(parsed.data, False, plain, [], sre))
        _warm({char for run in plain for chars in run for char in chars})
        runs: list[list[frozenset[str]]] = []
        ignore = bool(parsed.state.flags & sre.SRE_FLAG_IGNORECASE)
        runs.append(_walk(parsed.data, ignore, runs, [], sre))
    except Exception:  # any surprise of the private parser: no pre-filter
        return []
    return [run for run in runs if run]


def _walk(items: Any, ignore: bool, runs: list[Any], cur: list[Any], sre: Any) -> list[Any]:
    """Add to ``cur`` the positions of ``items`` (parsed pattern), closing runs in ``runs``
    where a match may hold anything; the run still open at the end."""
    for op, av in items:
        if op is sre.LITERAL:
            cur.append(_chars(chr(av), ignore))
        elif op is sre.IN and _class_size(av, sre):
            found: set[str] = set()
            for sub_op, sub in av:
                codes = [sub] if sub_op is sre.LITERAL else range(sub[0], sub[1] + 1)
                for code in codes:
                    found |= _chars(chr(code), ignore)
            cur.append(frozenset(found))
        elif op is sre.SUBPATTERN:
            _group, add, remove, sub = av
            flag = sre.SRE_FLAG_IGNORECASE
            cur = _walk(
                sub.data, (ignore or bool(add & flag)) and not remove & flag, runs, cur, sre
            )
        elif op is sre.ATOMIC_GROUP:
            cur = _walk(av.data, ignore, runs, cur, sre)
        elif op in (sre.AT, sre.ASSERT, sre.ASSERT_NOT):
            continue  # zero width: the characters on either side stay adjacent
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT) and av[0] >= 1:
            runs.append(cur)
            runs.append(_walk(av[2].data, ignore, runs, [], sre))
            cur = []
        else:  # anything else may match anything: the run ends
            runs.append(cur)
            cur = []
    return cur


def _class_size(av: Any, sre: Any) -> bool:
    """Whether a character class is a few literals and ranges (at most ``_MAX_SET``)."""
    size = 0
    for sub_op, sub in av:
        if sub_op is sre.LITERAL:
            size += 1
        elif sub_op is sre.RANGE:
            size += sub[1] - sub[0] + 1
        else:  # NEGATE, CATEGORY, ...
            return False
    return 0 < size <= _MAX_SET


@lru_cache(maxsize=1)
def _every_character() -> str:
    """Every code point but the surrogates, in one string (built once)."""
    codes = array("I", range(0xD800))
    codes.extend(range(0xE000, sys.maxunicode + 1))
    return codes.tobytes().decode("utf-32-le" if sys.byteorder == "little" else "utf-32-be")


_VARIANTS: dict[str, frozenset[str]] = {}
"""Each character -> every character ``re`` matches with it when case is ignored."""


def _warm(chars: set[str]) -> None:
    """Find the case variants of ``chars`` in one pass over every character (a class of them
    with case ignored), each then checked as ``re`` matches the character alone."""
    missing = sorted(c for c in chars if c not in _VARIANTS)
    if not missing:
        return
    found = set(re.findall("(?i)[" + "".join(map(re.escape, missing)) + "]", _every_character()))
    for char in missing:
        alone = re.compile("(?i)" + re.escape(char))
        _VARIANTS[char] = frozenset(x for x in found if alone.fullmatch(x)) | {char}


def _chars(char: str, ignore: bool) -> frozenset[str]:
    """The characters ``re`` matches with ``char`` (case ignored or not)."""
    if not ignore:
        return frozenset(char)
    _warm({char})
    return _VARIANTS[char]


_FOLDING = threading.Lock()


@lru_cache(maxsize=1)
def _folder() -> sqlite3.Connection:
    db = sqlite3.connect(":memory:", check_same_thread=False)
    db.execute("CREATE VIRTUAL TABLE f USING fts5(d, tokenize='unicode61 remove_diacritics 2')")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(f, 'instance')")
    return db


@lru_cache(maxsize=8192)
def _fold(char: str) -> str | None:
    """``char`` as the index's tokenizer folds it inside a word: one character, ``""`` for a
    separator, None for anything else (a token character folded away or into several)."""
    db = _folder()
    with _FOLDING:
        db.execute("DELETE FROM f")
        db.execute("INSERT INTO f(d) VALUES (?)", ("q" + char + "z",))
        terms = [t for (t,) in db.execute("SELECT term FROM v ORDER BY offset")]
    if terms == ["q", "z"]:
        return _SEP
    if len(terms) == 1 and len(terms[0]) == 3 and terms[0][0] == "q" and terms[0][2] == "z":
        return terms[0][1]
    return None


def _position(chars: frozenset[str]) -> str | None:
    """A required position folded: its one word character, ``""`` (a separator) or None."""
    folded = {_fold(ch) for ch in chars}
    return folded.pop() if len(folded) == 1 else None


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def fts_prefilter(runs: list[list[frozenset[str]]], vocabulary: VocabLookup) -> str | None:
    """An FTS5 query every row the pattern matches satisfies (None: no usable term;
    :data:`NO_ROW`: a needed part of a term is in no term of the index)."""
    groups: list[str] = []
    for run in runs:
        folded = [_position(chars) for chars in run]
        i = 0
        while i < len(folded):
            if not folded[i]:  # a separator or unknown
                i += 1
                continue
            j = i
            while j < len(folded) and folded[j]:
                j += 1
            word = "".join(folded[i:j])  # type: ignore[arg-type]
            left = i > 0 and folded[i - 1] == _SEP
            right = j < len(folded) and folded[j] == _SEP
            if left and right:
                groups.append(_quote(word))
            elif left and len(word) >= 2:
                groups.append(_quote(word) + "*")
            elif len(word) >= _MIN_LOOKUP:
                terms = vocabulary(word, suffix=right)
                if terms is not None and terms:
                    groups.append("(" + " OR ".join(_quote(t) for t in terms) + ")")
                elif terms is not None:
                    return NO_ROW
            i = j
    return " AND ".join(groups) if groups else None


NO_ROW = "no row"
"""What :func:`fts_prefilter` returns when no row can match."""


class VocabLookup:
    """The index's terms that end with, or contain, a folded word (None: too many)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.ready = False
        self.found: dict[tuple[str, bool], list[str] | None] = {}

    def __call__(self, word: str, suffix: bool) -> list[str] | None:
        """The terms ending with ``word`` (``suffix``) or containing it; None: too many."""
        key = (word, suffix)
        if key not in self.found:
            self.found[key] = self._lookup(word, suffix)
        return self.found[key]

    def _lookup(self, word: str, suffix: bool) -> list[str] | None:
        if not self.ready:
            self.db.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.qa_vocab USING fts5vocab(main, qf, 'row')"
            )
            self.ready = True
        escaped = word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        like = "%" + escaped + ("" if suffix else "%")
        rows = self.db.execute(
            "SELECT term FROM temp.qa_vocab WHERE term LIKE ? ESCAPE '\\' LIMIT ?",
            (like, _MAX_VOCAB + 1),
        ).fetchall()
        terms = [t for (t,) in rows if (t.endswith(word) if suffix else word in t)]
        return None if len(rows) > _MAX_VOCAB else terms


@dataclass(frozen=True)
class Scan:
    """The positions of a page's matching rows and how many rows match (``exact``: counted to
    the end; else a lower bound)."""

    chosen: list[int]
    total: int
    exact: bool


def scan(
    matches: Iterator[tuple[int]],
    start: int,
    size: int,
    budget: float | None = COUNT_BUDGET,
    db: sqlite3.Connection | None = None,
) -> Scan:
    """The page from ``start`` of ``matches`` (the positions of the matching rows in the table's
    order, as a cursor of ``db`` yields them) and their count: counting past the page stops
    after ``budget`` seconds (within SQLite too, by its progress handler)."""
    chosen: list[int] = []
    total = 0
    want = start + size + 1
    begun = time.perf_counter()

    def spent() -> bool:
        return budget is not None and total >= want and time.perf_counter() - begun > budget

    if db is not None:
        db.set_progress_handler(spent, 20_000)
    try:
        for (pos,) in matches:
            total += 1
            if start < total <= start + size:
                chosen.append(pos)
            if total % 256 == 0 and spent():
                return Scan(chosen, total, False)
    except sqlite3.OperationalError:
        if not spent():
            raise
        return Scan(chosen, total, False)
    finally:
        if db is not None:
            db.set_progress_handler(None, 0)
    return Scan(chosen, total, True)
