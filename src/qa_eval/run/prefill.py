"""Judge calls through a provider's Batch API at half the price (``qa-eval evaluate --batch``).

OpenAI's and Azure OpenAI's Batch APIs take a JSONL file of chat completion requests, answer them
within 24 hours and bill them at half the standard rates. :func:`aprefill` fills the reply cache
that way; the run then completes from the cache exactly as a synchronous run would with the same
replies (the same prompts, re-asks, validation and keys), so only the price and the waiting differ.

Rounds, until no request is left (at most :data:`MAX_ROUNDS`):

1. **Plan.** The whole evaluation runs with a judge whose calls are not made: a request whose
   reply is cached is used; one a batch already answered is served from the batch's output (and,
   once it validates, stored in the cache as a normal reply, with its tokens marked as batch
   tokens); any other request's exact body (messages, response format, ``max_tokens``, ...) is
   recorded under its cache key (:class:`Outbox`) and its metric stops there. A metric whose
   second call depends on the first (faithfulness: statements, then verdicts) or a reply that must
   be re-asked gets its next request in the next round.
2. **Submit** the recorded requests: the JSONL input file is uploaded (``files.create(purpose=
   "batch")``) and a batch created (``batches.create(endpoint="/v1/chat/completions",
   completion_window="24h")``; Azure: ``/chat/completions``), at most 50,000 requests and about
   190 MB a batch. Before the upload, qa-eval records a submission id and the requests in the
   cache database (tables ``batches`` and ``batch_requests``, made at the first ``--batch`` run),
   and it tags the batch with that id (``metadata.qa_eval_submission``): a run killed between the
   upload and the record finds its batch again in the provider's list instead of submitting twice.
3. **Poll** each batch (every 1 s at first, then less often, at most every 60 s) with a progress
   line; when it has ended (``completed``, ``expired``, ``failed``, ``cancelled``) download its
   output and error files and store each request's reply or failure.

Resuming: a run that finds its requests in a batch still in flight waits for that batch (or, with
``no_wait``, looks once and returns) instead of submitting them again. A request that failed or
expired in a batch is not billed by the provider: it is asked synchronously when the run completes
(``Outbox`` in its final mode), at standard rates, so nothing is lost and nothing is paid twice.

Two ``--batch`` runs on one cache at the same time: planning and submitting (steps 1-2 of a
round) and collecting a batch (step 3) hold an exclusive lock, a SQLite write lock on the file
``<cache>.batch-lock`` beside the cache database (released by the operating system when its
holder dies, even killed). The second run plans after the first has recorded its requests, finds
them in a batch in flight and waits for that batch instead of submitting them again; a batch is
collected once. Runs on different cache files do not see each other's batches.

Clean-up: once a batch's output and errors are stored in the cache database, its input, output
and error files are deleted at the provider (they would otherwise stay in the account's file
storage); a file that cannot be deleted is reported in one line and left, nothing fails.

Costs: tokens a batch served are priced at the model's batch rates (``batch_input`` /
``batch_output`` of genai-prices or ``llm.prices``, else half the standard rates), in the
metrics' ``*_cost`` keys and in :class:`BatchReport`, also when they are read back from the cache.

This module plans the rounds and completes the run; the provider's side (the JSONL files, the
Batch API calls, the batch tables of the cache database and the lock) is ``judge.batch``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

from ..config import EvalConfig
from ..errors import Deferred
from ..judge.batch import POLL_FIRST, Batcher, BatchError, BatchReport, BatchStore, Report
from ..judge.cache.store import open_cache
from ..judge.calls import Judge
from ..judge.prices import price_of

__all__ = ["MAX_ROUNDS", "Outbox", "abatch_rounds", "aprefill", "final_judge", "prefill"]


MAX_ROUNDS = 8
"""Rounds of plan → submit → collect; what is left after them is asked synchronously."""
OFFLINE = ("semantic_similarity", "bertscore")
"""Metrics without a judge, left out of the planning passes."""


class Outbox:
    """What the judge of a ``--batch`` run does instead of a call (``Judge.batch``).

    Planning (``planning=True``): a request a batch answered is served from its output; one in a
    batch still in flight, or one a batch failed, stops its metric (:class:`judge.Deferred`),
    noting the batch to wait for or the request to ask synchronously later; any other request is
    recorded (key → body) for the next batch and stops its metric too. Final
    (``planning=False``): a batch's output is served, every other request is called as usual."""

    def __init__(self, store: BatchStore, planning: bool) -> None:
        self.store = store
        self.planning = planning
        self.planned: dict[str, dict[str, Any]] = {}
        self.waiting: set[str] = set()
        self.synchronous: set[str] = set()

    def serve(self, key: str, body: dict[str, Any]) -> tuple[str, int, int] | None:
        """The batch's reply to the request ``key`` (content, prompt and completion tokens), or
        None to call it now; raises ``Deferred`` while planning."""
        row = self.store.request(key)
        if row is not None:
            status, content, prompt_tokens, completion_tokens, batch_id = row
            if status == "done" and isinstance(content, str):
                return content, int(prompt_tokens or 0), int(completion_tokens or 0)
            if status == "pending":
                self.waiting.add(str(batch_id))
            else:
                self.synchronous.add(key)
        elif self.planning:
            self.planned[key] = body
        if self.planning:
            raise Deferred()
        return None


def final_judge(config: EvalConfig, cache: str | bool | None) -> Judge:
    """The judge that completes a ``--batch`` run: batch replies are served from the cache
    database, anything else is asked synchronously."""
    store = open_cache(cache)
    if store is None:
        raise BatchError("--batch needs the cache (it holds the batches): drop --no-cache")
    judge = Judge(config, cache=store)
    judge.batch = Outbox(BatchStore(store), planning=False)
    return judge


async def aprefill(
    runs: Sequence[tuple[Any, Any]],
    *,
    config: EvalConfig,
    cache: str | bool | None = True,
    enable: Iterable[str] = (),
    disable: Iterable[str] = (),
    no_wait: bool = False,
    poll: float = POLL_FIRST,
    report: Report | None = None,
    reference_source: str = "reference",
) -> BatchReport:
    """Fill the reply cache through batches for the evaluation of every ``(reference,
    responses)`` in ``runs`` (see the module docstring); afterwards ``run_evaluation`` with the
    same config, cache and switches finds every reply (unless the report says ``waiting``)."""
    from .evaluation import arun_evaluation

    skipped = [*disable, *OFFLINE]
    fingerprints: dict[int, str] = {}

    async def plan(planner: Judge) -> None:
        for reference, responses in runs:
            known = fingerprints.get(id(reference))
            planned = await arun_evaluation(
                reference,
                responses,
                config=config,
                judge=planner,
                enable=list(enable),
                disable=skipped,
                reference_source=reference_source,
                fingerprint=known,
            )
            if known is None:  # one reference object is hashed once, not per system
                signature = planned.signature or {}
                fingerprints[id(reference)] = signature["reference"]["fingerprint"]

    return await abatch_rounds(
        plan, config=config, cache=cache, no_wait=no_wait, poll=poll, report=report
    )


async def abatch_rounds(
    plan: Callable[[Judge], Awaitable[Any]],
    *,
    config: EvalConfig,
    cache: str | bool | None = True,
    no_wait: bool = False,
    poll: float = POLL_FIRST,
    report: Report | None = None,
) -> BatchReport:
    """The rounds of plan → submit → collect for any work that asks a judge: ``plan(judge)``
    runs the work with a planning judge (its requests not cached or answered by a batch are
    recorded and stop there); afterwards the same work with :func:`final_judge` finds every
    reply (unless the report says ``waiting``). ``aprefill`` is this for an evaluation."""
    gen = config.generation
    if gen is None:
        raise BatchError("--batch needs a judge: pass --config or set OPENAI_API_KEY")
    if gen.provider not in ("openai", "azure"):
        raise BatchError(
            f"--batch works with provider openai or azure (their Batch API), not {gen.provider!r}"
        )
    say: Report = report or (lambda line: None)
    store = open_cache(cache)
    if store is None:
        raise BatchError("--batch needs the cache (it holds the batches): drop --no-cache")
    try:
        if store.off or store.read_only:
            raise BatchError(f"cache {store.path}: --batch needs a cache it can write")
        tables = BatchStore(store)
        tables.create()
        batcher = Batcher(config, tables, say, poll, price_of(gen.model, config.prices))
        for _ in range(2 * MAX_ROUNDS):
            # Planned and submitted under the lock: a concurrent run on this cache plans after
            # these requests are recorded, and waits for their batch.
            async with batcher.lock:
                outbox = Outbox(tables, planning=True)
                planner = Judge(config, cache=store)
                planner.batch = outbox
                await plan(planner)
                waiting = await batcher.resolve(sorted(outbox.waiting))
                if not outbox.planned and not waiting and not outbox.waiting:
                    break
                new: list[str] = []
                if outbox.planned:
                    if batcher.outcome.rounds >= MAX_ROUNDS:
                        batcher.outcome.left = len(outbox.planned)
                        say(
                            f"batch: {len(outbox.planned)} request(s) left after {MAX_ROUNDS} "
                            "rounds: they are asked synchronously"
                        )
                        break
                    batcher.outcome.rounds += 1
                    say(f"batch: round {batcher.outcome.rounds}: {len(outbox.planned)} request(s)")
                    new = await batcher.submit(outbox.planned)
            in_flight = await batcher.wait([*waiting, *new], once=no_wait)
            if in_flight:
                batcher.outcome.waiting = in_flight
                break
        return batcher.finish()
    finally:
        store.close()


def prefill(runs: Sequence[tuple[Any, Any]], **options: Any) -> BatchReport:
    """Synchronous :func:`aprefill` (same options)."""
    return asyncio.run(aprefill(runs, **options))
