"""The regular-expression search: narrowed by the word index, it finds exactly what Python's
``re`` finds on every row's searched text (checked against a scan of all rows, with text and
patterns chosen to trip a pre-filter: case folding beyond ASCII, accents, combining marks,
separators, anchors, lookarounds), and its count past the page is a lower bound only when said."""

from __future__ import annotations

import random
import re
from pathlib import Path

import orjson
import pytest

from qa_eval.view.index import open_index, search_text
from qa_eval.view.query import TableView, page_of
from qa_eval.view.regex import fts_prefilter, required_runs, scan

TRICKY = [
    "Timeout after 45 s",
    "TIMEOUT AFTER 4 s",
    "t\u0131meout after 47 s",  # dotless i: (?i)i matches it, SQLite does not fold it to i
    "\u212aelvin scale",  # the Kelvin sign: (?i)k matches it
    "\u017fun and moon",  # long s
    "caf\u00e9 au lait",
    "cafe\u0301 cr\u00e8me",  # a combining accent: one token for SQLite
    "fe\u0301stal",
    "snake_case_name here",
    "x-ray and xray",
    "prefixword suffix",
    "\u00b5s and \u03bcs",  # micro and mu
    "line one\nline two",
    "\u0645\u0631\u062d\u0628\u0627 world",
    "emoji \U0001f600 after",
    "stra\u00dfe STRASSE",
    "what is the capital",
]

PATTERNS = [
    r"timeout after 4\d",
    r"(?i)timeout after 4\d",
    r"(?i)kelvin",
    r"(?i)sun and",
    r"café",
    r"cafe",
    "fe\u0301sta",
    r"(?i)CAFÉ",
    r"case_name",
    r"_case",
    r"x-ray",
    r"ray and",
    r"fixword",
    r"word suf",
    r"\bsuffix\b",
    r"(?i)µs",
    r"μs",
    r"^line two",
    r"(?m)^line two",
    r"one$",
    r"(?<!pre)fixword",
    r"\d{2} s",
    r"[Tt]imeout",
    r"(?:after )+4",
    r"(?i:TIME)out",
    r"mer|moon",
    r"مرحبا",
    r"\U0001f600 after",
    r"(?i)straße",
    r"STRASSE",
    r"is the cap",
    r"zzzz",
    r"",
    r".",
    r"(?x) time  out",
]


def _results(count: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        pieces = rng.sample(TRICKY, 3)
        out.append(
            {
                "template_id": f"t{i % 3}",
                "question_id": f"q{i}",
                "question_text": pieces[0],
                "actual_answer": pieces[1],
                "faithfulness_reason": pieces[2],
                "faithfulness": rng.random(),
            }
        )
    return out


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, list[dict]]:
    records = _results(400, seed=3)
    path = Path(tmp_path_factory.mktemp("regex")) / "run.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return open_index(path), records


@pytest.mark.parametrize("pattern", PATTERNS)
def test_finds_exactly_what_a_scan_of_every_row_finds(indexed, pattern: str) -> None:
    index, records = indexed
    compiled = re.compile(pattern)
    expected = [r["question_id"] for r in records if compiled.search(search_text(r))]
    found: list[str] = []
    page = 1
    while True:
        view = TableView(q=pattern, regex=True, size=200, page=page, count=True)
        result = page_of(index, view)
        assert result.exact and result.total == len(expected)
        found += [row["question_id"] for row in result.rows]
        if page >= result.pages:
            break
        page += 1
    assert found == expected


def test_combined_with_filters_and_sorts(indexed) -> None:
    index, records = indexed
    compiled = re.compile(r"(?i)timeout after 4\d")
    want = [r for r in records if r["template_id"] == "t1" and compiled.search(search_text(r))]
    want.sort(key=lambda r: -r["faithfulness"])
    view = TableView(
        q=compiled.pattern, regex=True, template="t1", sort="faithfulness", desc=True, size=25
    )
    page = page_of(index, view)
    assert page.total == len(want)
    assert [r["question_id"] for r in page.rows] == [r["question_id"] for r in want[:25]]


def test_the_pre_filter_uses_whole_terms_prefixes_and_the_vocabulary() -> None:
    looked_up: list[tuple[str, bool]] = []

    def vocabulary(word: str, suffix: bool) -> list[str]:
        looked_up.append((word, suffix))
        return [f"x{word}"]

    query = fts_prefilter(required_runs(r"timeout after 4\d the end"), vocabulary)
    assert query == '("xtimeout") AND "after" AND "the" AND "end"*'
    assert looked_up == [("timeout", True)]
    assert fts_prefilter(required_runs(r"a|b"), vocabulary) is None  # nothing every match has
    assert fts_prefilter(required_runs(r"\d{4}"), vocabulary) is None
    # dotless i: (?i)i may match a character SQLite folds elsewhere, so the word is split there
    assert fts_prefilter(required_runs(r"(?i)kit bag"), vocabulary) == '"bag"*'


def test_counting_stops_past_the_page_and_says_so() -> None:
    import sqlite3

    matches = [(i,) for i in range(1, 10_000, 2)]
    whole = scan(iter(matches), start=0, size=10, budget=None)
    assert whole.exact and whole.total == 5000 and whole.chosen == list(range(1, 21, 2))
    early = scan(iter(matches), start=10, size=10, budget=0.0)
    assert not early.exact and 21 <= early.total < 5000
    assert early.chosen == list(range(21, 41, 2))  # the page itself is always complete
    # within SQLite: a long query is interrupted once the page is full and the budget spent
    db = sqlite3.connect(":memory:")
    many = "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n) "
    cursor = db.execute(many + "SELECT i FROM n WHERE i < 5 OR i > 1000000000000")
    stopped = scan(cursor, start=0, size=2, budget=0.05, db=db)
    assert not stopped.exact and 3 <= stopped.total <= 5 and stopped.chosen == [0, 1]
    assert db.execute("SELECT 1").fetchone() == (1,)  # the handler is gone


@pytest.mark.parametrize("few", [5, 50_000])  # many candidates: tried in the sort's order
@pytest.mark.parametrize(("sort", "desc"), [("pos", True), ("faithfulness", False)])
def test_every_way_of_gathering_the_rows_agrees(
    indexed, monkeypatch: pytest.MonkeyPatch, few: int, sort: str, desc: bool
) -> None:
    import qa_eval.view.query as query

    monkeypatch.setattr(query, "_FEW", few)
    index, records = indexed
    compiled = re.compile(r"(?i)after 4\d")
    want = [r for r in records if compiled.search(search_text(r))]
    key = (lambda r: int(r["question_id"][1:])) if sort == "pos" else (lambda r: r[sort])
    want.sort(key=key, reverse=desc)
    view = TableView(q=compiled.pattern, regex=True, sort=sort, desc=desc, size=200, count=True)
    page = page_of(index, view)
    assert page.exact and page.total == len(want) > 5
    assert [r["question_id"] for r in page.rows] == [r["question_id"] for r in want]


def test_case_variants_found_in_one_pass_are_res_own() -> None:
    from qa_eval.view import regex

    every = regex._every_character()
    sample = list("aeiksyzAKSZ059_ -éÉøÅµßﬁΣςσΩω\u212a\u212b\u017f\u0131\u0130ǅ")
    regex._VARIANTS.clear()
    regex._warm(set(sample))  # one class over every character, then each checked alone
    for char in sample:
        alone = set(re.findall("(?i)" + re.escape(char), every)) | {char}
        assert regex._VARIANTS[char] == alone, char
