"""A content-addressed SQLite store of judge replies (and of embedding vectors).

The key is the SHA-256 of the canonical request (provider, endpoint, model, parameters, full
messages, reply schema): a rerun with the same inputs finds every reply and makes no call. Each
reply is committed as soon as it arrives (WAL journal), so a run killed with SIGKILL and started
again repeats no call that had finished. API keys are never part of a request here, so they are
never stored.

How the file is opened and checked, and what happens when it is damaged, read-only or locked, is
``sqlite.CacheFile`` (the base of :class:`ReplyCache`); this module is what is stored in it.
"""

from __future__ import annotations

import hashlib
import math
import os
import sqlite3
import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from .sqlite import LAZY_CREATE, CacheFile

__all__ = ["CachedReply", "ReplyCache", "default_cache_path", "open_cache", "request_key"]

_MAX_TOKENS = 2**53
_USAGE_TABLE = (
    "CREATE TABLE IF NOT EXISTS reply_usage (key TEXT PRIMARY KEY, cached_tokens INTEGER NOT NULL)"
)
"""Made with the first reply stored; not one of ``_TABLES``, so caches without it are opened
(and left) as they are, and older qa-eval versions, which ignore other tables, read this one."""


def default_cache_path() -> Path:
    """``$QA_EVAL_CACHE_DIR`` or the user cache directory (``$XDG_CACHE_HOME/qa-eval``)."""
    base = os.environ.get("QA_EVAL_CACHE_DIR")
    if base:
        return Path(base) / "judge.sqlite3"
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "qa-eval" / "judge.sqlite3"


def request_key(request: dict[str, Any]) -> str:
    """SHA-256 of the request serialised with sorted keys."""
    return hashlib.sha256(orjson.dumps(request, option=orjson.OPT_SORT_KEYS)).hexdigest()


@dataclass(frozen=True)
class CachedReply:
    """A stored reply: the model's text and the tokens it took when it was made (of them, the
    ones a batch served, which are priced at batch rates)."""

    content: str
    prompt_tokens: int
    completion_tokens: int
    batch_prompt_tokens: int = 0
    batch_completion_tokens: int = 0
    cached_tokens: int = 0
    """Prompt tokens the provider served from its prompt cache (table ``reply_usage``, made at
    the first reply stored: a cache without it is read as 0, older readers ignore it)."""


def _tokens(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < _MAX_TOKENS


class ReplyCache(CacheFile):
    """The reply store; one per run: judge replies, embedding vectors and the tokens a batch
    served, in a :class:`CacheFile`."""

    @staticmethod
    def _row(row: Any) -> CachedReply | None:
        if row is None:
            return None
        content, prompt_tokens, completion_tokens, bp, bc, cached_tokens = row
        if not isinstance(content, str) or not _tokens(prompt_tokens):
            return None  # a row this cache did not write: a miss
        if not _tokens(completion_tokens):
            return None
        if not _tokens(cached_tokens) or cached_tokens > prompt_tokens:
            cached_tokens = 0
        if not (_tokens(bp) and _tokens(bc) and bp <= prompt_tokens and bc <= completion_tokens):
            bp = bc = 0  # no batch row (NULL), or one that does not fit: standard rates
        return CachedReply(
            content,
            prompt_tokens,
            completion_tokens,
            batch_prompt_tokens=bp,
            batch_completion_tokens=bc,
            cached_tokens=cached_tokens,
        )

    def _select(self, key: str) -> Callable[[sqlite3.Connection], Any]:
        def op(db: sqlite3.Connection) -> Any:
            row = None
            joined = False
            if self._batch_tokens:
                try:
                    row = db.execute(
                        "SELECT r.content, r.prompt_tokens, r.completion_tokens, b.prompt_tokens, "
                        "b.completion_tokens FROM replies r LEFT JOIN reply_batch_tokens b "
                        "ON b.key = r.key WHERE r.key = ?",
                        (key,),
                    ).fetchone()
                    joined = True
                except sqlite3.OperationalError as e:
                    if "no such table" not in str(e) or "batch" not in str(e):
                        raise
                    self._batch_tokens = False  # not made after all: read without it
            if not joined:
                row = db.execute(
                    "SELECT content, prompt_tokens, completion_tokens FROM replies WHERE key = ?",
                    (key,),
                ).fetchone()
                if row is not None:
                    row = (*row, None, None)
            if row is None:
                return None
            try:
                usage = db.execute(
                    "SELECT cached_tokens FROM reply_usage WHERE key = ?", (key,)
                ).fetchone()
            except sqlite3.OperationalError as e:
                if "no such" not in str(e):  # no such table, or column (another tool's table)
                    raise
                usage = None
            return (*row, usage[0] if usage else 0)

        return op

    def get(self, key: str) -> CachedReply | None:
        """The stored reply for a request key, if any (waits briefly if the file is locked)."""
        return self._row(self._sync_read(self._select(key), None))

    async def aget(self, key: str) -> CachedReply | None:
        """:meth:`get` for the event loop: a locked file is waited for with ``asyncio.sleep``."""
        return self._row(await self._aread(self._select(key), None))

    @staticmethod
    def _select_vectors(keys: list[str]) -> Callable[[sqlite3.Connection], Any]:
        def op(db: sqlite3.Connection) -> dict[str, tuple[list[float], float | None]]:
            found: dict[str, tuple[list[float], float | None]] = {}
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = db.execute(
                    f"SELECT key, vector, cost FROM vectors WHERE key IN ({marks})", chunk
                )
                for key, blob, cost in rows:
                    if not isinstance(blob, bytes) or len(blob) % 8 or not blob:
                        continue  # not a vector this cache wrote: a miss
                    if cost is not None and not (
                        isinstance(cost, (int, float)) and math.isfinite(cost)
                    ):
                        continue
                    vector = array("d", blob).tolist()
                    if all(math.isfinite(v) for v in vector):
                        found[key] = (vector, cost)
            return found

        return op

    def get_vectors(self, keys: list[str]) -> dict[str, tuple[list[float], float | None]]:
        """Stored embeddings (vector, the cost of making it) of the keys that have one."""
        return self._sync_read(self._select_vectors(keys), {})

    async def aget_vectors(self, keys: list[str]) -> dict[str, tuple[list[float], float | None]]:
        """:meth:`get_vectors` for the event loop."""
        return await self._aread(self._select_vectors(keys), {})

    def put(self, key: str, model: str, reply: CachedReply) -> None:
        """Store a reply now (committed before this returns, unless the file is locked: then
        it is stored with the next write or at :meth:`close`). Never raises."""
        stale: list[tuple[str, tuple[Any, ...]]] = []
        if self._batch_tokens:  # a reply made anew: no batch served the one it replaces
            stale = [("DELETE FROM reply_batch_tokens WHERE key = ?", (key,))]
        self._write(
            [
                *stale,
                (
                    "INSERT OR REPLACE INTO replies VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        key,
                        model,
                        reply.content,
                        reply.prompt_tokens,
                        reply.completion_tokens,
                        time.time(),
                    ),
                ),
                (_USAGE_TABLE, ()),
                ("INSERT OR REPLACE INTO reply_usage VALUES (?, ?)", (key, reply.cached_tokens)),
            ]
        )

    def put_batch_tokens(self, key: str, prompt_tokens: int, completion_tokens: int) -> None:
        """Record that a batch served these tokens of the reply stored under ``key`` (so a
        later read prices them at batch rates). Never raises."""
        self._write(
            [
                (LAZY_CREATE["reply_batch_tokens"], ()),
                (
                    "INSERT OR REPLACE INTO reply_batch_tokens VALUES (?, ?, ?)",
                    (key, prompt_tokens, completion_tokens),
                ),
            ]
        )
        if not (self.off or self.read_only or self._pending):
            self._batch_tokens = True

    def put_vectors(self, items: list[tuple[str, list[float], float | None]]) -> None:
        """Store embeddings (key, vector, cost) in one transaction. Never raises."""
        self._write(
            [
                (
                    "INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
                    (key, array("d", vector).tobytes(), cost),
                )
                for key, vector, cost in items
            ]
        )

    def __len__(self) -> int:
        count = self._sync_read(
            lambda db: db.execute("SELECT COUNT(*) FROM replies").fetchone(), None
        )
        return int(count[0]) if count else 0


def open_cache(cache: str | os.PathLike[str] | bool | None) -> ReplyCache | None:
    """The store a ``cache`` option names: True/None the default file, a path that file,
    False none. ``CacheError`` when the file cannot be a cache; warnings when it is used in
    part or not at all."""
    if cache is True or cache is None:
        return ReplyCache(default_cache_path())
    return ReplyCache(cache) if cache else None
