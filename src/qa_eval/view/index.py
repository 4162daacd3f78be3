"""The viewer's index of one results file: an SQLite database with an FTS5 table.

Built once per results file and kept beside it (``NAME.ext.qa-view.sqlite``), or in the cache
folder (``$XDG_CACHE_HOME/qa-eval/view``) when that folder is read-only. It records the file's
size, modification time and SHA-256: when size or time differ the content is hashed again, and
only a different hash rebuilds the index (a touched file is not re-read). A build writes a
temporary file and renames it, so a killed build leaves no half index.

One row per result (``pos``: its place in the file) with its question id, template, trial,
question text, whether it is an error, its numeric values (one column per metric, added as the
metrics appear) and tags (other text keys, a column each for the first ``MAX_TAG_KEYS``, the
others as rows of a side table ``tagx``, filtered through its index alike); its failed
metrics (``<metric>_error``) in a side table; the choices of the filters and the runs page's
means counted once; the text searched (question, answers, reasons, ``mismatch`` texts and
errors) in an FTS5 table; and where the result is: its byte span in a plain JSON Lines file
(read again for the question page), else its JSON. Why SQLite and not DuckDB: docs/view.md.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import os
import sqlite3
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from ..aggregate import is_error
from ..errors import InputError
from ..io.files import check_results, parse_json, read_data

__all__ = [
    "INDEX_VERSION",
    "LOCK",
    "MAX_TAG_KEYS",
    "Index",
    "all_results",
    "cache_folder",
    "index_path",
    "load_result",
    "open_index",
    "records_of",
    "search_text",
]

INDEX_VERSION = "3"
"""Changed when the index's tables change: an index of another version is rebuilt."""

LOCK = threading.RLock()
"""Held around every use of an index's connection (the app answers from a thread pool)."""
_BATCH = 5000
_STRUCTURE = frozenset(
    {"template_id", "question_id", "question_text", "reference_answer", "actual_answer",
     "status", "error", "reference_steps", "actual_steps", "trial", "trace", "signature"}
)  # fmt: skip
_MAX_TAG = 200
MAX_TAG_KEYS = 64
"""Text keys (tags, class labels) given a column of their own; more go to a side table."""


def cache_folder() -> Path:
    """Where indexes of files in read-only folders go (``$XDG_CACHE_HOME/qa-eval/view``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "qa-eval" / "view"


def index_path(results: Path) -> Path:
    """The index of a results file: beside it, or in the cache folder when that is read-only."""
    beside = results.with_name(results.name + ".qa-view.sqlite")
    if os.access(results.parent, os.W_OK):
        return beside
    digest = hashlib.sha256(str(results.resolve()).encode()).hexdigest()[:16]
    return cache_folder() / f"{results.name}-{digest}.qa-view.sqlite"


def _open_text(path: Path) -> bytes:
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror or e}", source=str(path)) from None
    if path.suffix.lower() == ".gz":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as e:
            raise InputError(f"not a gzip file: {e}", source=str(path)) from None
    return raw


def _is_jsonl(path: Path) -> bool:
    name = path.name.lower().removesuffix(".gz")
    return name.endswith((".jsonl", ".ndjson"))


def records_of(path: Path) -> Iterator[tuple[Mapping[str, Any], tuple[int, int] | None]]:
    """The results of a file (YAML, JSON, JSON Lines, each maybe ``.gz``), each with its byte
    span in the file when it is plain JSON Lines (read a line at a time), else None."""
    if _is_jsonl(path) and path.suffix.lower() != ".gz":
        try:
            handle = path.open("rb")
        except OSError as e:
            raise InputError(f"cannot read: {e.strerror or e}", source=str(path)) from None
        with handle:
            offset = 0
            for number, line in enumerate(handle, start=1):
                span = (offset, len(line))
                offset += len(line)
                if line.strip():
                    yield _line_record(line, path, number), span
        return
    raw = _open_text(path)
    if _is_jsonl(path):
        for number, line in enumerate(raw.split(b"\n"), start=1):
            if line.strip():
                yield _line_record(line, path, number), None
        return
    if path.suffix.lower() == ".gz":
        scratch = _decompressed(raw, path.with_name(path.name[:-3]).suffix)
        try:
            data = read_data(scratch)
        finally:
            scratch.unlink()
    else:
        data = read_data(path)
    for record in check_results(data, str(path)):
        yield record, None


def _line_record(line: bytes, path: Path, number: int) -> Mapping[str, Any]:
    try:
        text = line.decode("utf-8-sig" if number == 1 else "utf-8")
    except UnicodeDecodeError as e:
        raise InputError(
            f"not UTF-8 text ({e.reason})", source=str(path), record=f"line {number}"
        ) from None
    record = parse_json(text, str(path), f"line {number}")
    check_results([record], f"{path}, line {number}")
    return record  # type: ignore[no-any-return]


def _decompressed(raw: bytes, suffix: str) -> Path:
    import tempfile

    handle, name = tempfile.mkstemp(suffix=suffix or ".yaml")
    with os.fdopen(handle, "wb") as out:
        out.write(raw)
    return Path(name)


def _stamp(path: Path) -> tuple[int, int]:
    info = path.stat()
    return info.st_size, info.st_mtime_ns


def _content_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _texts(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, Mapping):
        for item in value.values():
            _texts(item, out)
    elif isinstance(value, list):
        for item in value:
            _texts(item, out)


def search_text(result: Mapping[str, Any]) -> str:
    """What a search reads: question, answers, reasons, ``mismatch`` texts and errors."""
    parts: list[str] = []
    for key in ("question_text", "reference_answer", "actual_answer", "error"):
        _texts(result.get(key), parts)
    for key, value in result.items():
        if key.endswith(("_reason", "_error")) or key == "trajectory_reason":
            _texts(value, parts)
    for key in ("actual_steps", "reference_steps"):
        steps = result.get(key)
        for step in steps if isinstance(steps, list) else ():
            for one in step if isinstance(step, list) else (step,):  # reference: groups
                if isinstance(one, Mapping):
                    _texts(one.get("mismatch"), parts)
                    _texts(one.get("error"), parts)
    return "\n".join(parts)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        number = float(value)
        return number if number == number and abs(number) != float("inf") else None
    return None


@dataclass(eq=False)
class Index:
    """An open index of one results file (read-only queries; see :mod:`.query`)."""

    path: Path
    source: Path
    db: sqlite3.Connection
    metrics: dict[str, str]
    """metric name -> its column."""
    tags: dict[str, str]
    """text keys (tags such as ``question_type``, classes such as ``answer_class``) -> column."""
    extra_tags: dict[str, int]
    """text keys past the first ``MAX_TAG_KEYS`` -> their number in the side table ``tagx``."""
    classes: dict[str, list[str]]
    """each text key -> the values seen."""
    facets: dict[str, list[tuple[str, str, int]]]
    """the filters' choices: ``template``, ``trial``, ``failed``, ``tag`` -> (key, value, n)."""
    count: int

    def tag_value(self, key: str) -> str | None:
        """An SQL expression of a row's value of the text key (None: no such key)."""
        if key in self.tags:
            return self.tags[key]
        number = self.extra_tags.get(key)
        if number is None:
            return None
        return f"(SELECT value FROM tagx WHERE tagx.kid = {number} AND tagx.pos = q.pos)"

    def tag_filter(self, key: str) -> str | None:
        """An SQL condition (one parameter: the value) of the rows with that value of the text
        key (None: no such key)."""
        if key in self.tags:
            return f"{self.tags[key]} = ?"
        number = self.extra_tags.get(key)
        if number is None:
            return None
        return f"pos IN (SELECT pos FROM tagx WHERE kid = {number} AND value = ?)"


class _Builder:
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.metrics: dict[str, str] = {}
        self.tags: dict[str, str] = {}
        self.extra: dict[str, int] = {}
        self.rows: list[tuple[tuple[Any, ...], dict[str, float], dict[str, str]]] = []
        self.failed: list[tuple[int, str]] = []
        self.extra_rows: list[tuple[int, str, int]] = []

    def column(self, name: str, tag: bool) -> None:
        """Add the column of a metric (a number) or a tag (a text)."""
        table = self.tags if tag else self.metrics
        col = f"{'t' if tag else 'm'}{len(table)}"
        self.db.execute(f"ALTER TABLE q ADD COLUMN {col} {'TEXT' if tag else 'REAL'}")
        self.db.execute("INSERT INTO metrics VALUES (?, ?, ?)", (name, col, int(tag)))
        table[name] = col

    def add(self, pos: int, result: Mapping[str, Any], span: tuple[int, int] | None) -> None:
        trial = result.get("trial")
        question = result.get("question_text")
        numbers: dict[str, float] = {}
        tags: dict[str, str] = {}
        for key, value in result.items():
            if key in _STRUCTURE:
                continue
            number = _number(value)
            if number is not None:
                numbers[key] = number
            elif key.endswith("_error") and value not in (None, ""):
                self.failed.append((pos, key[: -len("_error")]))
            elif isinstance(value, str) and not key.endswith("_reason") and len(value) <= _MAX_TAG:
                tags[key] = value
        base = (
            pos,
            str(result.get("question_id")),
            "" if result.get("template_id") is None else str(result.get("template_id")),
            trial if isinstance(trial, int) and not isinstance(trial, bool) else None,
            question if isinstance(question, str) else "",
            int(is_error(result)),
            int("trace" in result),
            search_text(result),
            None if span is None else span[0],
            None if span is None else span[1],
            None if span is not None else orjson.dumps(result, option=orjson.OPT_NON_STR_KEYS),
        )
        self.rows.append((base, numbers, tags))
        if len(self.rows) >= _BATCH:
            self.flush()

    def flush(self) -> None:
        for _, numbers, tags in self.rows:
            for name in numbers:
                if name not in self.metrics:
                    self.column(name, tag=False)
            for name in tags:
                if name in self.tags or name in self.extra:
                    continue
                if len(self.tags) < MAX_TAG_KEYS:
                    self.column(name, tag=True)
                else:
                    self.extra[name] = len(self.extra)
                    self.db.execute(
                        "INSERT INTO metrics VALUES (?, ?, 2)",
                        (
                            name,
                            "",
                        ),
                    )
        names, keys = list(self.metrics), list(self.tags)
        columns = ", ".join(
            ["pos, qid, tpl, trial, question, err, traced, doc, start, length, raw"]
            + [self.metrics[n] for n in names]
            + [self.tags[k] for k in keys]
        )
        marks = ", ".join("?" * (11 + len(names) + len(keys)))
        self.db.executemany(
            f"INSERT INTO q({columns}) VALUES ({marks})",
            [
                base + tuple(numbers.get(n) for n in names) + tuple(tags.get(k) for k in keys)
                for base, numbers, tags in self.rows
            ],
        )
        self.db.executemany("INSERT INTO failed VALUES (?, ?)", self.failed)
        self.db.executemany(
            "INSERT INTO tagx VALUES (?, ?, ?)",
            [
                (self.extra[key], value, base[0])
                for base, _, tags in self.rows
                for key, value in tags.items()
                if key in self.extra
            ],
        )
        self.rows, self.failed = [], []

    def finish(self) -> None:
        self.flush()
        db = self.db
        db.execute("INSERT INTO qf(rowid, doc) SELECT pos, doc FROM q")
        for statement in (
            "CREATE INDEX q_tpl ON q(tpl)",
            "CREATE INDEX q_qid ON q(qid)",
            "CREATE INDEX q_err ON q(err)",
            "CREATE INDEX q_trial ON q(trial)",
            "CREATE INDEX failed_metric ON failed(metric, pos)",
            "CREATE INDEX tagx_value ON tagx(kid, value, pos)",
            "CREATE INDEX tagx_pos ON tagx(kid, pos)",
            *(f"CREATE INDEX q_{col} ON q({col})" for col in self.metrics.values()),
            *(f"CREATE INDEX q_{col} ON q({col})" for col in self.tags.values()),
        ):
            db.execute(statement)
        for key, col in self.tags.items():  # the filters' choices, counted once
            db.execute(
                f"INSERT INTO facets SELECT 'tag', ?, {col}, count(*) FROM q "
                f"WHERE {col} IS NOT NULL GROUP BY {col}",
                (key,),
            )
        for key, number in self.extra.items():
            db.execute(
                "INSERT INTO facets SELECT 'tag', ?, value, count(*) FROM tagx WHERE kid = ? "
                "GROUP BY value",
                (key, number),
            )
        db.execute("INSERT INTO facets SELECT 'template', '', tpl, count(*) FROM q GROUP BY tpl")
        db.execute(
            "INSERT INTO facets SELECT 'trial', '', trial, count(*) FROM q "
            "WHERE trial IS NOT NULL GROUP BY trial"
        )
        db.execute(
            "INSERT INTO facets SELECT 'failed', '', metric, count(*) FROM failed GROUP BY metric"
        )
        for name, col in self.metrics.items():  # the runs page's figures, computed once
            db.execute(
                f"INSERT INTO summary SELECT ?, avg({col}), count({col}), total({col}), "
                f"(SELECT avg(m) FROM (SELECT avg({col}) AS m FROM q GROUP BY tpl "
                f"HAVING count({col}) > 0)) FROM q",
                (name,),
            )
        db.execute(
            "INSERT INTO summary SELECT '', NULL, count(*), total(err), total(traced) FROM q"
        )


_SCHEMA = (
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT)",
    "CREATE TABLE metrics(name TEXT, col TEXT, tag INTEGER)",
    "CREATE TABLE q(pos INTEGER PRIMARY KEY, qid TEXT, tpl TEXT, trial INTEGER, question TEXT,"
    " err INTEGER, traced INTEGER, doc TEXT, start INTEGER, length INTEGER, raw BLOB)",
    "CREATE TABLE failed(pos INTEGER, metric TEXT)",
    "CREATE TABLE tagx(kid INTEGER, value TEXT, pos INTEGER)",
    "CREATE TABLE facets(kind TEXT, key TEXT, value TEXT, n INTEGER)",
    "CREATE TABLE summary(name TEXT, mean REAL, n INTEGER, total REAL, macro REAL)",
    "CREATE VIRTUAL TABLE qf USING fts5(doc, content='q', content_rowid='pos',"
    " tokenize='unicode61 remove_diacritics 2')",
)


def build(source: Path, target: Path, stamp: Mapping[str, str]) -> None:
    """Index ``source`` into ``target`` (written aside, then renamed into place)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        scratch.unlink()
    db = sqlite3.connect(scratch)
    try:
        db.execute("PRAGMA journal_mode=OFF")
        db.execute("PRAGMA synchronous=OFF")
        for statement in _SCHEMA:
            db.execute(statement)
        builder = _Builder(db)
        for pos, (record, span) in enumerate(records_of(source)):
            builder.add(pos, record, span)
        builder.finish()
        db.executemany("INSERT INTO meta VALUES (?, ?)", sorted(stamp.items()))
        db.commit()
    except BaseException:
        db.close()
        scratch.unlink(missing_ok=True)
        raise
    db.close()
    os.replace(scratch, target)


def _meta(path: Path) -> dict[str, str]:
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return dict(db.execute("SELECT key, value FROM meta").fetchall())
        finally:
            db.close()
    except sqlite3.Error:
        return {}


def _current(source: Path, target: Path) -> bool:
    """Whether the index at ``target`` is of ``source``'s present content (a touched file with
    the same content keeps its index: the stamp is updated)."""
    meta = _meta(target) if target.exists() else {}
    if meta.get("version") != INDEX_VERSION:
        return False
    size, mtime = _stamp(source)
    if meta.get("size") == str(size) and meta.get("mtime_ns") == str(mtime):
        return True
    if meta.get("sha256") != _content_hash(source):
        return False
    with contextlib.closing(sqlite3.connect(target)) as db:
        db.executemany(
            "UPDATE meta SET value = ? WHERE key = ?",
            [(str(size), "size"), (str(mtime), "mtime_ns")],
        )
        db.commit()
    return True


def open_index(source: str | os.PathLike[str], *, rebuild: bool = False) -> Index:
    """The index of a results file, built first when missing or out of date."""
    path = Path(source)
    if not path.is_file():
        raise InputError("no such file", source=str(path))
    target = index_path(path)
    if rebuild or not _current(path, target):
        size, mtime = _stamp(path)
        stamp = {
            "version": INDEX_VERSION,
            "size": str(size),
            "mtime_ns": str(mtime),
            "sha256": _content_hash(path),
            "source": str(path.resolve()),
        }
        build(path, target, stamp)
    db = sqlite3.connect(f"file:{target}?mode=ro", uri=True, check_same_thread=False)
    metrics: dict[str, str] = {}
    tags: dict[str, str] = {}
    extra: dict[str, int] = {}
    for name, col, tag in db.execute("SELECT name, col, tag FROM metrics ORDER BY rowid"):
        if tag == 2:
            extra[name] = len(extra)
        else:
            (tags if tag else metrics)[name] = col
    facets: dict[str, list[tuple[str, str, int]]] = {}
    for kind, key, value, n in db.execute(
        "SELECT kind, key, value, n FROM facets ORDER BY kind, key, value"
    ):
        facets.setdefault(kind, []).append((key, str(value), n))
    classes: dict[str, list[str]] = {}
    for key, value, _ in facets.get("tag", []):
        classes.setdefault(key, []).append(value)
    count = db.execute("SELECT count(*) FROM q").fetchone()[0]
    return Index(target, path, db, metrics, tags, extra, classes, facets, count)


def load_result(index: Index, pos: int) -> dict[str, Any] | None:
    """The whole result at ``pos`` (None when there is none): read from the results file at
    its indexed place (plain JSON Lines), or from the index."""
    with LOCK:
        row = index.db.execute("SELECT start, length, raw FROM q WHERE pos = ?", (pos,)).fetchone()
    if row is None:
        return None
    start, length, raw = row
    if raw is None:
        with index.source.open("rb") as f:
            f.seek(start)
            raw = f.read(length)
    return orjson.loads(raw)  # type: ignore[no-any-return]


def all_results(index: Index) -> Iterator[dict[str, Any]]:
    """Every result of the file, in order."""
    with LOCK:
        positions = index.db.execute("SELECT pos FROM q ORDER BY pos").fetchall()
    for (pos,) in positions:
        result = load_result(index, pos)
        if result is not None:
            yield result
