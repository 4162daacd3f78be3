"""The provider's side of ``--batch`` (the rounds that use it are ``run.prefill``): the JSONL
input files (at most 50,000 requests and about 190 MB a batch), their upload and the batch's
creation, tagged with a submission id recorded first in the cache database (tables ``batches`` and
``batch_requests``, :class:`BatchStore`), the provider's list searched for a batch whose creation
was not recorded, polling, the download of the output and error files into the cache database,
the deletion of the files at the provider, and the per-cache lock (:class:`BatchLock`) two
``--batch`` runs on one cache share.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import QaEvalError
from ..redact import public_url, redact
from .cache.store import LAZY_CREATE, ReplyCache
from .clients import sdk_client
from .prices import usd
from .replies import read_completion
from .settings import JudgeSettings

__all__ = [
    "POLL_FIRST",
    "BatchError",
    "BatchLock",
    "BatchReport",
    "BatchStore",
    "Batcher",
    "Report",
]

MAX_REQUESTS = 50_000
"""Requests per batch (OpenAI's limit)."""
MAX_BYTES = 190 * 2**20
"""Bytes of a batch's input file (OpenAI allows 200 MB)."""
POLL_FIRST = 1.0
POLL_MAX = 60.0
TERMINAL = ("completed", "expired", "failed", "cancelled")
_SUBMITTING = "submitting:"
_LIST_LIMIT = 1000
"""Batches looked through for one whose creation was not recorded (a run killed meanwhile)."""

Report = Callable[[str], None]
LOCK_POLL = 0.05
"""Seconds between tries of a held batch lock."""


class BatchLock:
    """The exclusive batch lock of one cache: a SQLite write transaction on
    ``<cache>.batch-lock`` (portable, and released when its process ends however it ends)."""

    def __init__(self, cache_path: Any, say: Report) -> None:
        self.path = f"{cache_path}.batch-lock"
        self.say = say
        self.told = False
        self._connection: sqlite3.Connection | None = None

    async def __aenter__(self) -> BatchLock:
        try:
            connection = sqlite3.connect(self.path, timeout=0, isolation_level=None)
        except sqlite3.Error as e:
            raise BatchError(f"cache lock {self.path}: cannot be opened: {e}") from None
        while True:
            try:
                connection.execute("BEGIN IMMEDIATE")
                break
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) and "busy" not in str(e):
                    connection.close()
                    raise BatchError(f"cache lock {self.path}: {e}") from None
                if not self.told:
                    self.told = True
                    self.say("batch: another --batch run is using this cache; waiting for it")
                await asyncio.sleep(LOCK_POLL)
        self._connection = connection
        return self

    async def __aexit__(self, *exc: object) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            try:
                connection.execute("ROLLBACK")
            finally:
                connection.close()


class BatchError(QaEvalError):
    """A batch cannot be submitted or collected (one line; the CLI exits with 2)."""


@dataclass
class BatchReport:
    """What ``--batch`` did in this invocation."""

    rounds: int = 0
    submitted: list[str] = field(default_factory=list)
    """Batches created in this invocation."""
    collected: list[str] = field(default_factory=list)
    """Batches whose results this invocation downloaded."""
    requests: int = 0
    """Requests submitted in this invocation."""
    succeeded: int = 0
    failed: int = 0
    """Requests of the collected batches that failed or expired (asked synchronously)."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = 0.0
    """The collected replies at batch rates (None when the model has no price)."""
    standard_cost: float | None = 0.0
    """The same tokens at standard rates."""
    waiting: list[str] = field(default_factory=list)
    """Batches still in flight (``no_wait``): a later run collects them."""
    left: int = 0
    """Requests still to be asked when the rounds ran out (asked synchronously)."""

    def as_dict(self) -> dict[str, Any]:
        """Plain data for the run signature."""
        return {
            "rounds": self.rounds,
            "submitted": list(self.submitted),
            "collected": list(self.collected),
            "requests": self.requests,
            "succeeded": self.succeeded,
            "failed": self.failed,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost": self.cost,
            "standard_cost": self.standard_cost,
            "waiting": list(self.waiting),
            "left": self.left,
        }

    def line(self) -> str:
        """One line for the terminal."""
        cost = (
            f"${self.cost:.4f} at batch rates (${self.standard_cost:.4f} at standard rates)"
            if self.cost is not None and self.standard_cost is not None
            else "cost unknown (no price)"
        )
        return (
            f"batch: {self.requests} request(s) submitted in {len(self.submitted)} batch(es), "
            f"{len(self.collected)} batch(es) collected: {self.succeeded} answered, "
            f"{self.failed} failed or expired (asked synchronously); {self.prompt_tokens} prompt "
            f"+ {self.completion_tokens} completion tokens; {cost}"
        )


class BatchStore:
    """The batch tables of the cache database."""

    def __init__(self, cache: ReplyCache) -> None:
        self.cache = cache

    def create(self) -> None:
        if not self.cache.write_now(
            [(LAZY_CREATE["batches"], ()), (LAZY_CREATE["batch_requests"], ())]
        ):
            raise BatchError(f"cache {self.cache.path}: the batch tables cannot be written")

    def write(self, statements: list[tuple[str, tuple[Any, ...]]]) -> None:
        if not self.cache.write_now(statements):
            raise BatchError(
                f"cache {self.cache.path}: cannot record the batch state (read-only, locked or "
                "failed); nothing more is submitted"
            )

    def request(self, key: str) -> tuple[Any, ...] | None:
        rows = self.cache.query(
            "SELECT status, content, prompt_tokens, completion_tokens, batch_id "
            "FROM batch_requests WHERE key = ?",
            (key,),
        )
        return rows[0] if rows else None

    def keys(self, batch_id: str) -> list[str]:
        return [
            str(r[0])
            for r in self.cache.query(
                "SELECT key FROM batch_requests WHERE batch_id = ?", (batch_id,)
            )
        ]

    def batch(self, batch_id: str) -> tuple[Any, ...] | None:
        rows = self.cache.query(
            "SELECT id, submission, endpoint, status, requests, collected FROM batches "
            "WHERE id = ?",
            (batch_id,),
        )
        return rows[0] if rows else None


class Batcher:
    """Submits, polls and collects the batches of one ``--batch`` invocation."""

    def __init__(
        self,
        config: JudgeSettings,
        store: BatchStore,
        report: Report,
        poll: float,
        price: Any,
        lock: BatchLock | None = None,
    ) -> None:
        gen = config.generation
        assert gen is not None
        self.gen = gen
        self.azure = gen.provider == "azure"
        self.endpoint = "/chat/completions" if self.azure else "/v1/chat/completions"
        self.client = sdk_client(gen, timeout=max(config.timeout, 600.0), max_retries=4)
        self.store = store
        self.say = report
        self.poll = poll
        self.price = price
        self.outcome = BatchReport()
        self.shown: dict[str, str] = {}
        self.lock = lock or BatchLock(store.cache.path, report)

    # --- submitting -------------------------------------------------------------------

    def _chunks(self, planned: dict[str, dict[str, Any]]) -> list[list[tuple[str, bytes]]]:
        chunks: list[list[tuple[str, bytes]]] = [[]]
        size = 0
        for key, body in planned.items():
            payload = dict(body)
            payload.update(payload.pop("extra_body", None) or {})
            line = (
                json.dumps(
                    {"custom_id": key, "method": "POST", "url": self.endpoint, "body": payload},
                    ensure_ascii=False,
                ).encode()
                + b"\n"
            )
            if chunks[-1] and (len(chunks[-1]) >= MAX_REQUESTS or size + len(line) > MAX_BYTES):
                chunks.append([])
                size = 0
            chunks[-1].append((key, line))
            size += len(line)
        return [c for c in chunks if c]

    async def submit(self, planned: dict[str, dict[str, Any]]) -> list[str]:
        """Submit the planned requests; the ids of the batches made."""
        made = []
        for chunk in self._chunks(planned):
            made.append(await self._submit_one(chunk))
        return made

    async def _submit_one(self, chunk: list[tuple[str, bytes]]) -> str:
        submission = uuid.uuid4().hex
        placeholder = _SUBMITTING + submission
        now = time.time()
        # Recorded first: a run killed after the upload finds the batch by this id.
        self.store.write(
            [
                (
                    "INSERT OR REPLACE INTO batches VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0)",
                    (
                        placeholder,
                        submission,
                        self.endpoint,
                        self.gen.model,
                        public_url(self.gen.base_url),
                        "submitting",
                        len(chunk),
                        now,
                    ),
                ),
                *(
                    (
                        "INSERT OR REPLACE INTO batch_requests VALUES "
                        "(?, ?, 'pending', NULL, NULL, NULL, NULL, ?)",
                        (key, placeholder, len(line)),
                    )
                    for key, line in chunk
                ),
            ]
        )
        data = b"".join(line for _, line in chunk)
        try:
            uploaded = await self.client.files.create(
                file=(f"qa-eval-{submission}.jsonl", data, "application/jsonl"), purpose="batch"
            )
            created = await self.client.batches.create(
                input_file_id=uploaded.id,
                endpoint=self.endpoint,  # type: ignore[arg-type]  # Azure's has no /v1
                completion_window="24h",
                metadata={"qa_eval_submission": submission},
            )
        except Exception as e:
            self._forget(placeholder)
            raise BatchError(f"submitting a batch failed: {_why(e)}") from None
        self._adopt(placeholder, created.id, created.status)
        self.outcome.submitted.append(created.id)
        self.outcome.requests += len(chunk)
        self.say(f"batch: submitted {created.id} ({len(chunk)} requests)")
        return str(created.id)

    def _adopt(self, placeholder: str, batch_id: str, status: str) -> None:
        self.store.write(
            [
                (
                    "UPDATE batches SET id = ?, status = ? WHERE id = ?",
                    (batch_id, status, placeholder),
                ),
                (
                    "UPDATE batch_requests SET batch_id = ? WHERE batch_id = ?",
                    (batch_id, placeholder),
                ),
            ]
        )

    def _forget(self, placeholder: str) -> None:
        self.store.write(
            [
                ("DELETE FROM batch_requests WHERE batch_id = ?", (placeholder,)),
                ("DELETE FROM batches WHERE id = ?", (placeholder,)),
            ]
        )

    async def resolve(self, ids: Iterable[str]) -> list[str]:
        """Batch ids for ``ids``: a submission whose creation was not recorded is found in the
        provider's list by its tag, or forgotten (its requests are planned again)."""
        resolved = [i for i in ids if not i.startswith(_SUBMITTING)]
        lost = {i[len(_SUBMITTING) :]: i for i in ids if i.startswith(_SUBMITTING)}
        if not lost:
            return resolved
        seen = 0
        try:
            async for batch in self.client.batches.list(limit=100):
                seen += 1
                tag = (batch.metadata or {}).get("qa_eval_submission")
                if tag in lost:
                    self._adopt(lost.pop(tag), batch.id, batch.status)
                    resolved.append(batch.id)
                    self.say(f"batch: found {batch.id}, submitted by an earlier run")
                if not lost or seen >= _LIST_LIMIT:
                    break
        except Exception as e:
            raise BatchError(f"listing the batches failed: {_why(e)}") from None
        for placeholder in lost.values():  # never created: its requests go in a new batch
            self._forget(placeholder)
        return resolved

    # --- polling and collecting -------------------------------------------------------

    async def wait(self, ids: Sequence[str], once: bool) -> list[str]:
        """Poll the batches until each has ended and is collected (``once``: look once); the
        ids still in flight."""
        pending = list(dict.fromkeys(ids))
        delay = self.poll
        start = time.monotonic()
        while True:
            still = []
            for batch_id in pending:
                if not await self._check(batch_id, time.monotonic() - start):
                    still.append(batch_id)
            pending = still
            if not pending or once:
                return pending
            await asyncio.sleep(delay)
            delay = min(delay * 1.5, POLL_MAX)

    async def _check(self, batch_id: str, elapsed: float) -> bool:
        """True once the batch has ended and its results are stored."""
        known = self.store.batch(batch_id)
        if known is not None and known[5]:
            return True
        try:
            batch = await self.client.batches.retrieve(batch_id)
        except Exception as e:
            raise BatchError(f"batch {batch_id}: cannot be retrieved: {_why(e)}") from None
        counts = batch.request_counts
        done = f"{counts.completed}/{counts.total} done, {counts.failed} failed" if counts else ""
        text = f"batch {batch_id}: {batch.status}" + (f", {done}" if done else "")
        if self.shown.get(batch_id) != text:
            self.shown[batch_id] = text
            self.say(f"{text} ({elapsed:.0f} s)")
        if batch.status not in TERMINAL:
            self.store.write(
                [("UPDATE batches SET status = ? WHERE id = ?", (batch.status, batch_id))]
            )
            return False
        async with self.lock:  # another run on this cache may be collecting it too
            known = self.store.batch(batch_id)
            if known is not None and known[5]:
                return True
            await self._collect(batch)
        await self._delete_files(batch)
        return True

    async def _delete_files(self, batch: Any) -> None:
        """Delete the batch's input, output and error files at the provider (its results are in
        the cache database now); a failure is reported and left."""
        files = (batch.input_file_id, batch.output_file_id, batch.error_file_id)
        client = self.client.with_options(max_retries=1)  # housekeeping: one retry is enough
        for file_id in dict.fromkeys(f for f in files if f):
            try:
                await client.files.delete(file_id)
            except Exception as e:
                self.say(f"batch {batch.id}: file {file_id} was not deleted: {_why(e)}")

    async def _download(self, file_id: str | None) -> list[dict[str, Any]]:
        if not file_id:
            return []
        try:
            response = await self.client.files.content(file_id)
        except Exception as e:
            raise BatchError(f"file {file_id}: cannot be downloaded: {_why(e)}") from None
        lines = []
        for raw in response.content.splitlines():
            try:
                item = json.loads(raw)
            except ValueError:
                continue  # a line cut short: its request is counted as failed below
            if isinstance(item, dict):
                lines.append(item)
        return lines

    async def _collect(self, batch: Any) -> None:
        keys = set(self.store.keys(batch.id))
        outputs = await self._download(batch.output_file_id)
        errors = await self._download(batch.error_file_id)
        results: dict[str, tuple[str, str | None, int, int, str | None]] = {}
        for item in [*outputs, *errors]:
            key = item.get("custom_id")
            if key not in keys or (key in results and results[key][0] == "done"):
                continue
            results[str(key)] = _outcome(item)
        statements: list[tuple[str, tuple[Any, ...]]] = []
        for key in keys:
            status, content, p, c, problem = results.get(
                key, ("failed", None, 0, 0, f"not answered by batch {batch.id} ({batch.status})")
            )
            if status == "done":
                self.outcome.succeeded += 1
                self.outcome.prompt_tokens += p
                self.outcome.completion_tokens += c
            else:
                self.outcome.failed += 1
            statements.append(
                (
                    "UPDATE batch_requests SET status = ?, content = ?, prompt_tokens = ?, "
                    "completion_tokens = ?, error = ? WHERE key = ? AND batch_id = ?",
                    (status, content, p, c, problem, key, batch.id),
                )
            )
        statements.append(
            ("UPDATE batches SET status = ?, collected = 1 WHERE id = ?", (batch.status, batch.id))
        )
        self.store.write(statements)
        self.outcome.collected.append(batch.id)
        failed = sum(1 for k in keys if results.get(k, ("failed",))[0] != "done")
        self.say(
            f"batch {batch.id}: {batch.status}; {len(keys) - failed} replies stored"
            + (f", {failed} failed or expired (asked synchronously)" if failed else "")
        )

    def finish(self) -> BatchReport:
        outcome = self.outcome
        p, c = outcome.prompt_tokens, outcome.completion_tokens
        outcome.cost = usd(self.price, p, c, batch=True)
        outcome.standard_cost = usd(self.price, p, c)
        return outcome


def _outcome(item: dict[str, Any]) -> tuple[str, str | None, int, int, str | None]:
    """(status, content, prompt tokens, completion tokens, error) of one output line."""
    response = item.get("response") if isinstance(item.get("response"), dict) else None
    error = item.get("error")
    status_code = response.get("status_code") if response else None
    body = response.get("body") if response else None
    if status_code == 200 and isinstance(body, dict) and not error:
        from openai.types.chat import ChatCompletion

        try:
            reply = read_completion(ChatCompletion.model_validate(body))
            content, p, c = reply.content, reply.prompt_tokens, reply.completion_tokens
        except Exception as e:
            return "failed", None, 0, 0, redact(f"unreadable reply: {type(e).__name__}")
        return "done", content, p, c, None
    if isinstance(error, dict):
        message = f"{error.get('code') or 'error'}: {error.get('message') or ''}"
    elif isinstance(body, dict) and isinstance(body.get("error"), dict):
        message = f"{status_code}: {body['error'].get('message') or ''}"
    else:
        message = f"status {status_code}"
    return "failed", None, 0, 0, redact(message)[:300]


def _why(e: BaseException) -> str:
    return redact(f"{type(e).__name__}: {e}")[:300]
