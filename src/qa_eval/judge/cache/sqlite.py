"""The SQLite file under the reply cache (``store.ReplyCache``), opened defensively.

The store is checked when it is opened, before any judge call (see docs/judge.md, "Cache"):

- a directory, a file that is not an SQLite database, or an SQLite database with other tables
  (or a newer schema) than a qa-eval cache: :class:`CacheError`, one line naming the file (the
  CLI exits with 2); such a file is never changed;
- a damaged database (``PRAGMA quick_check`` fails, or it cannot be read): moved aside to
  ``NAME.damaged-<time>`` (with its ``-wal``/``-shm`` files) and a new cache started, with a
  :class:`CacheWarning`; if it cannot be moved, the run goes on without a cache;
- a read-only file or folder: a warning, and the stored replies are used but none is added;
- a database locked by another writer: a warning, and new replies are kept in memory and stored
  as soon as the lock is free (at the latest when the run ends);
- a file that does not exist yet is created at the first reply stored (so a dry run creates
  none); if its folder cannot be written, a warning and a run without a cache.

SQLite never waits for a lock here (busy timeout 0): a read that finds the database busy is
retried with ``asyncio.sleep`` (``aget``), so a lock held elsewhere never blocks the event loop,
and a write that finds it busy is kept for later. A failure while the run goes on (a disk that
fills up, a database damaged meanwhile) is a warning and a cache miss, never a failed run.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import tempfile
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from ...errors import QaEvalError

__all__ = [
    "CLOSE_WAIT",
    "LAZY_CREATE",
    "LAZY_TABLES",
    "READ_WAIT",
    "CacheError",
    "CacheFile",
    "CacheWarning",
]

R = TypeVar("R")
SCHEMA_VERSION = 1
"""``PRAGMA user_version`` of a qa-eval cache (0: made before the version was recorded)."""
_TABLES = {
    "replies": ("key", "model", "content", "prompt_tokens", "completion_tokens", "created"),
    "vectors": ("key", "vector", "cost"),
}
_CREATE = (
    "CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, model TEXT NOT NULL, "
    "content TEXT NOT NULL, prompt_tokens INTEGER NOT NULL, "
    "completion_tokens INTEGER NOT NULL, created REAL NOT NULL)",
    "CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB NOT NULL, cost REAL)",
)
LAZY_TABLES = {
    "reply_batch_tokens": ("key", "prompt_tokens", "completion_tokens"),
    "batches": (
        "id",
        "submission",
        "endpoint",
        "model",
        "base_url",
        "status",
        "requests",
        "created",
        "collected",
    ),
    "batch_requests": (
        "key",
        "batch_id",
        "status",
        "content",
        "prompt_tokens",
        "completion_tokens",
        "error",
        "body_bytes",
    ),
}
"""Tables made only when a ``--batch`` run first needs them (``judge.batch``): the tokens of a
stored reply that a batch served (priced at batch rates), the batches submitted (``submission``
is qa-eval's id, set before the batch exists, so a run killed while submitting finds it again),
and each batched request with its outcome."""
LAZY_CREATE = {
    "reply_batch_tokens": "CREATE TABLE IF NOT EXISTS reply_batch_tokens (key TEXT PRIMARY KEY, "
    "prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL)",
    "batches": "CREATE TABLE IF NOT EXISTS batches (id TEXT PRIMARY KEY, submission TEXT NOT NULL, "
    "endpoint TEXT NOT NULL, model TEXT NOT NULL, base_url TEXT, status TEXT NOT NULL, "
    "requests INTEGER NOT NULL, created REAL NOT NULL, collected INTEGER NOT NULL)",
    "batch_requests": "CREATE TABLE IF NOT EXISTS batch_requests (key TEXT PRIMARY KEY, "
    "batch_id TEXT NOT NULL, status TEXT NOT NULL, content TEXT, prompt_tokens INTEGER, "
    "completion_tokens INTEGER, error TEXT, body_bytes INTEGER)",
}
_HEADER = b"SQLite format 3\x00"
_BUSY = frozenset({"SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_BUSY_SNAPSHOT", "SQLITE_BUSY_RECOVERY"})
_READ_ONLY = frozenset({"SQLITE_READONLY", "SQLITE_READONLY_DIRECTORY", "SQLITE_READONLY_RECOVERY"})
READ_WAIT = 2.0
"""Seconds a read waits (asynchronously) for a locked database before it counts as a miss."""
CLOSE_WAIT = 2.0
"""Seconds ``close`` waits for a locked database to store the replies still kept in memory."""
_MAX_PENDING = 100_000
_READ_ONLY_NOTE = "is read-only: stored replies are used, new ones are not stored"
_LOCKED_NOTE = (
    "is locked by another process: stored replies are read while it is free, and new replies "
    "are kept in memory until it is (at the latest when the run ends)"
)


class CacheError(QaEvalError):
    """The cache file cannot be used at all (it is not a qa-eval cache); names the file."""


class CacheWarning(UserWarning):
    """The cache is used in part (read-only, locked) or not at all (damaged, not writable)."""


class _Busy(Exception):
    """The database is locked by another connection right now."""


def _name(e: sqlite3.Error) -> str:
    return str(getattr(e, "sqlite_errorname", "") or "")


class CacheFile:
    """A qa-eval cache file, opened and checked; reads that never block the event loop and
    writes kept in memory while the file is locked. Safe to use from several threads (one
    lock)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.read_only = False
        """No reply is added (a read-only file, or a dry run: see :meth:`stop_writing`)."""
        self.off = False
        """The cache is not used at all any more (it could not be created or read)."""
        self._db: sqlite3.Connection | None = None
        self._lock = threading.RLock()
        self._pending: list[tuple[str, tuple[Any, ...]]] = []
        self._warned: set[str] = set()
        self._unchecked = False
        """Opened while locked: its tables are checked at the first access that gets in."""
        self._impatient = False
        """A read waited in vain once: later ones do not wait until one gets in."""
        self._batch_tokens = False
        """The file has the table of batch-served tokens: replies are read with them."""
        self._open()

    # --- opening and checking -------------------------------------------------------------

    def _open(self) -> None:
        try:
            self._open_path()
        except OSError as e:  # a folder on the way that cannot be entered, and the like
            self._give_up(f"cannot be opened ({e.strerror or e})")

    def _open_path(self) -> None:
        path = self.path
        if path.is_dir():
            raise CacheError(
                f"cache {path}: is a directory, not a file (give --cache a file path, or "
                "--no-cache)"
            )
        if not path.exists():
            self._check_creatable()
            return
        if not path.is_file():
            raise CacheError(f"cache {path}: is not a regular file (give --cache a file path)")
        try:
            with path.open("rb") as f:
                header = f.read(len(_HEADER))
        except OSError as e:
            self._give_up(f"cannot be read ({e.strerror})")
            return
        if header and header != _HEADER:
            raise CacheError(
                f"cache {path}: is not a qa-eval cache (not an SQLite database); delete it, or "
                "give --cache another file or --no-cache"
            )
        self._connect_checked()

    def _check_creatable(self) -> None:
        """A cache that does not exist yet is made at the first write: check now that its folder
        can be made and written, by a test file in the nearest folder that exists."""
        folder = self.path.parent
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent
        if not folder.is_dir():
            raise CacheError(f"cache {self.path}: {folder} is not a folder")
        try:
            with tempfile.NamedTemporaryFile(dir=folder, prefix=".qa-eval-cache-test-"):
                pass
        except OSError as e:
            self._give_up(f"cannot be created in {folder} ({e.strerror or e})")

    def _connect(self, uri: str | None = None) -> sqlite3.Connection:
        target: Any = uri if uri is not None else self.path
        return sqlite3.connect(
            target,
            timeout=0,  # never wait inside SQLite: busy is retried by the caller
            isolation_level=None,
            check_same_thread=False,
            uri=uri is not None,
        )

    def _connect_checked(self) -> None:
        """Open an existing file: check its pages and its tables, then a test write."""
        try:
            db = self._connect()
        except sqlite3.Error as e:
            self._open_immutable(e)
            return
        try:
            problem = self._retry_busy(lambda: self._integrity(db))
            if problem is None:
                self._retry_busy(lambda: self._check_schema(db))
        except _Busy:
            # Locked by a writer in exclusive mode: not even readable now. Checked, and read,
            # once it is free; until then reads are misses and new replies are kept.
            self._db = db
            self._unchecked = True
            self._warn("locked", _LOCKED_NOTE)
            return
        except sqlite3.Error as e:
            if _name(e) in ("SQLITE_CANTOPEN", *_READ_ONLY):
                db.close()
                self._open_immutable(e)
                return
            problem = str(e)
        except CacheError:
            db.close()
            raise
        if problem is not None:
            db.close()
            self._set_aside(problem)
            return
        self._db = db
        self._test_write()

    @staticmethod
    def _retry_busy(op: Callable[[], R], wait: float = 0.5) -> R:
        """Run ``op``, retrying for ``wait`` seconds while the database is busy; ``_Busy``
        after that (used only while the cache is opened, before the run's calls)."""
        deadline = time.monotonic() + wait
        while True:
            try:
                return op()
            except sqlite3.OperationalError as e:
                if _name(e) not in _BUSY:
                    raise
                if time.monotonic() > deadline:
                    raise _Busy() from None
                time.sleep(0.02)

    def _integrity(self, db: sqlite3.Connection) -> str | None:
        """What is wrong with a database's pages (``PRAGMA quick_check``), or None."""
        rows = db.execute("PRAGMA quick_check").fetchall()
        if rows == [("ok",)]:
            return None
        return "; ".join(str(r[0]) for r in rows[:3])

    def _check_schema(self, db: sqlite3.Connection) -> None:
        tables = {
            str(r[0])
            for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if not str(r[0]).startswith("sqlite_")
        }
        version = int(db.execute("PRAGMA user_version").fetchone()[0])
        where = f"cache {self.path}: is not a qa-eval cache"
        advice = "give --cache another file, or --no-cache"
        if version > SCHEMA_VERSION:
            raise CacheError(
                f"cache {self.path}: was made by a newer qa-eval (schema {version}); {advice}"
            )
        if tables and not tables & set(_TABLES):
            raise CacheError(f"{where} (it has the tables {', '.join(sorted(tables))}); {advice}")
        known = {**_TABLES, **LAZY_TABLES}
        for table in tables & set(known):
            columns = tuple(str(r[1]) for r in db.execute(f"PRAGMA table_info({table})"))
            if columns != known[table]:
                raise CacheError(
                    f"{where} (table {table} has the columns {', '.join(columns)}); {advice}"
                )
        self._batch_tokens = "reply_batch_tokens" in tables

    def _test_write(self) -> None:
        """Make the tables (if missing) in a write transaction: a test that writes work."""
        assert self._db is not None
        db = self._db
        try:
            self._retry_busy(lambda: self._ensure_tables(db))
        except _Busy:
            self._warn("locked", _LOCKED_NOTE)
        except sqlite3.Error as e:
            if _name(e) in _READ_ONLY or _name(e) == "SQLITE_CANTOPEN":
                self.read_only = True
                self._warn("read-only", _READ_ONLY_NOTE)
            else:
                self._fail(e)

    def _ensure_tables(self, db: sqlite3.Connection) -> None:
        """Make the tables that are missing; when none is, a test write that is rolled back (so
        the file is not changed, e.g. by a dry run)."""
        with contextlib.suppress(sqlite3.Error):
            db.execute("PRAGMA journal_mode=WAL")  # no write when it is WAL already
        db.execute("PRAGMA synchronous=NORMAL")
        existing = {
            str(r[0]) for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        db.execute("BEGIN IMMEDIATE")
        try:
            missing = [sql for name, sql in zip(_TABLES, _CREATE) if name not in existing]
            for statement in missing:
                db.execute(statement)
            if missing and not existing:
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            if missing:
                db.execute("COMMIT")
                return
            db.execute("INSERT OR REPLACE INTO vectors VALUES ('qa-eval test write', x'00', NULL)")
            db.execute("ROLLBACK")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
            raise

    def _open_immutable(self, first: sqlite3.Error) -> None:
        """A database in a folder that cannot be written (its WAL index cannot be made): read it
        as an immutable file, if that works."""
        try:
            uri = Path(os.path.abspath(self.path)).as_uri() + "?immutable=1"
            db = self._connect(uri)
            problem = self._integrity(db)
            if problem is None:
                self._check_schema(db)
        except CacheError:
            raise
        except sqlite3.Error:
            self._give_up(f"cannot be opened ({first})")
            return
        if problem is not None:
            db.close()
            self._give_up(f"is damaged ({problem}) and its folder is read-only")
            return
        self._db = db
        self.read_only = True
        self._warn("read-only", _READ_ONLY_NOTE)

    def _set_aside(self, problem: str) -> None:
        """A damaged database: move it (and its -wal/-shm files) aside, start a new one."""
        stamp = time.strftime("%Y%m%d-%H%M%S")
        aside = self.path.with_name(f"{self.path.name}.damaged-{stamp}")
        try:
            os.replace(self.path, aside)
        except OSError as e:
            self._give_up(f"is damaged ({problem}) and cannot be moved aside ({e.strerror})")
            return
        for suffix in ("-wal", "-shm"):
            side = self.path.with_name(self.path.name + suffix)
            with contextlib.suppress(OSError):
                os.replace(side, aside.with_name(aside.name + suffix))
        self._warn(
            "damaged",
            f"was damaged ({problem}): moved it to {aside.name}; this run starts a new cache",
        )
        self._check_creatable()

    def _create(self) -> bool:
        """Make the database at the first write; False (with a warning) when it cannot be."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            existed = self.path.exists()
            db = self._connect()
        except (OSError, sqlite3.Error) as e:
            self._give_up(f"cannot be created ({e})")
            return False
        self._db = db
        self._unchecked = existed  # made meanwhile by another run: check it before writing
        try:
            if self._checked(db):
                self._ensure_tables(db)
        except sqlite3.Error as e:
            if _name(e) not in _BUSY:  # busy: another run is writing; the write waits its turn
                self._give_up(f"cannot be created ({e})")
                return False
        return not self.off

    # --- warnings and failures --------------------------------------------------------------

    def _warn(self, kind: str, message: str) -> None:
        if kind in self._warned:
            return
        self._warned.add(kind)
        warnings.warn(f"cache {self.path}: {message}", CacheWarning, stacklevel=4)

    def _give_up(self, why: str) -> None:
        self.off = True
        self._pending.clear()
        self._warn("off", f"{why}: this run uses no cache (every judge call is made)")

    def _fail(self, e: sqlite3.Error) -> None:
        """An error other than a lock while the run goes on."""
        kind = _name(e)
        if kind in _READ_ONLY:
            self.read_only = True
            self._pending.clear()
            self._warn("read-only", _READ_ONLY_NOTE)
        elif kind in ("SQLITE_FULL", "SQLITE_IOERR_WRITE", "SQLITE_IOERR_FSYNC"):
            self.read_only = True
            self._pending.clear()
            self._warn("full", f"cannot store more replies ({e}): the run goes on without storing")
        else:
            self._give_up(f"failed ({e})")

    # --- reading ----------------------------------------------------------------------------

    def _checked(self, db: sqlite3.Connection) -> bool:
        """Check the tables of a cache opened while locked (``_Busy`` while it still is);
        False (and the cache off) when it is not a qa-eval cache after all."""
        if self._unchecked:
            try:
                self._check_schema(db)
            except CacheError as e:
                self._give_up(str(e).removeprefix(f"cache {self.path}: "))
                return False
            self._unchecked = False
        return True

    def _read(self, op: Callable[[sqlite3.Connection], R], empty: R) -> R:
        """Run a read; ``_Busy`` when locked; ``empty`` when the cache is off or failed."""
        with self._lock:
            if self.off or self._db is None:
                return empty
            try:
                if not self._checked(self._db):
                    return empty
                found = op(self._db)
                self._impatient = False
                return found
            except sqlite3.Error as e:
                if _name(e) in _BUSY:
                    raise _Busy() from None
                if "no such table" in str(e):
                    return empty  # a read-only file made without its tables
                self._fail(e)
                return empty

    def _gave_up_waiting(self) -> None:
        self._impatient = True
        self._warn("read-locked", "stayed locked: some stored replies were not read")

    async def _aread(self, op: Callable[[sqlite3.Connection], R], empty: R) -> R:
        delay, waited = 0.002, 0.0
        while True:
            try:
                return self._read(op, empty)
            except _Busy:
                if waited >= READ_WAIT or self._impatient:
                    self._gave_up_waiting()
                    return empty
                await asyncio.sleep(delay)
                waited += delay
                delay = min(delay * 2, 0.1)

    def _sync_read(self, op: Callable[[sqlite3.Connection], R], empty: R) -> R:
        delay, waited = 0.002, 0.0
        while True:
            try:
                return self._read(op, empty)
            except _Busy:
                if waited >= READ_WAIT or self._impatient:
                    self._gave_up_waiting()
                    return empty
                time.sleep(delay)
                waited += delay
                delay = min(delay * 2, 0.1)

    # --- writing ----------------------------------------------------------------------------

    def stop_writing(self) -> None:
        """Add nothing from now on (a dry run: the file is not even created)."""
        self.read_only = True
        self._pending.clear()

    def _write(self, items: list[tuple[str, tuple[Any, ...]]], wait: float = 0.0) -> None:
        """Store rows now, with the ones kept from before; a locked file keeps them for later.
        Never raises and never waits inside SQLite."""
        with self._lock:
            if self.off or self.read_only:
                return
            self._pending.extend(items)
            if len(self._pending) > _MAX_PENDING:
                del self._pending[: len(self._pending) - _MAX_PENDING]
            if self._db is None and not self._create():
                return
            db = self._db
            assert db is not None
            deadline = time.monotonic() + wait
            while self._pending:
                try:
                    if not self._checked(db):
                        return
                    db.execute("BEGIN IMMEDIATE")
                    try:
                        for statement, values in self._pending:
                            db.execute(statement, values)
                        db.execute("COMMIT")
                    except BaseException:
                        with contextlib.suppress(sqlite3.Error):
                            db.execute("ROLLBACK")
                        raise
                    self._pending.clear()
                except sqlite3.Error as e:
                    if _name(e) in _BUSY:
                        if time.monotonic() < deadline:
                            time.sleep(0.02)
                            continue
                        self._warn("locked", _LOCKED_NOTE)
                        return
                    if "no such table" in str(e):
                        try:
                            self._ensure_tables(db)
                            continue
                        except sqlite3.Error as again:
                            e = again
                    self._fail(e)
                    return

    def write_now(self, statements: list[tuple[str, tuple[Any, ...]]], wait: float = 5.0) -> bool:
        """Run write statements (those of the batch tables) in one transaction, waiting up to
        ``wait`` s for a lock; False when they could not be stored (a read-only, locked or
        failed cache)."""
        if self.off or self.read_only:
            return False
        self._write(statements, wait=wait)
        return not (self._pending or self.off or self.read_only)

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Rows of a read (of the batch tables); empty when the table does not exist yet."""
        return self._sync_read(lambda db: db.execute(sql, params).fetchall(), [])

    @property
    def pending(self) -> int:
        """Rows kept in memory because the file was locked (a reply's usage row not counted)."""
        return sum(1 for statement, _ in self._pending if "reply_usage" not in statement)

    def close(self) -> None:
        """Store what is still kept (waiting up to :data:`CLOSE_WAIT` s for a lock), then close
        the database."""
        with self._lock:
            if self._pending:
                self._write([], wait=CLOSE_WAIT)
            if self._pending:
                self._warn(
                    "lost",
                    f"stayed locked: {len(self._pending)} new replies were not stored",
                )
                self._pending.clear()
            if self._db is not None:
                with contextlib.suppress(sqlite3.Error):
                    self._db.close()
                self._db = None
