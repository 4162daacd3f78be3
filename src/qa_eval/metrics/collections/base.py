"""The base of the per-sample metrics: one async code path (``ascore``), its synchronous face
(``score``, which also works inside a running event loop), bounded batches and a dry-run plan.

A metric object holds its settings only (the judge, the embeddings, its parameters): everything
one sample needs (the calls made, their tokens and cost) lives in a :class:`Session` made for that
call, so one object can score many samples at once.

- ``score`` / ``batch_score`` run the coroutine with ``asyncio.run``; inside a running loop
  (Jupyter, FastAPI) they run it on a worker thread with a loop of its own (no ``nest_asyncio``).
- ``abatch_score(rows, concurrency=None, on_result=None, progress=None, return_exceptions=True)``
  scores rows at most ``concurrency`` at a time (default: the judge's ``concurrency``; the judge's
  own bound on calls in flight holds too), returns results in input order, and turns a row that
  fails into a result with ``error`` set, keeping the others; ``return_exceptions=False`` raises
  the first failure, as ragas' ``abatch_score`` does.
- ``plan(rows)``: the calls, tokens and estimated cost the rows would take, without a call (the
  ``--dry-run`` estimate; replies already cached are counted apart).
- :class:`DeterministicMetric` wraps a pure function of the inputs (no judge) in the same API.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import sys
from collections.abc import Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ...errors import JudgeError, SetupError
from ...judge.embeddings import Embedder
from ...judge.usage import Verdict
from ...llms.factory import QaEvalLLM
from .checks import check_inputs
from .result import Details, MetricResult, ResultUsage

__all__ = ["BaseMetric", "CallPlan", "DeterministicMetric", "Scored", "Session", "run_sync"]

R = TypeVar("R")


def run_sync(make: Callable[[], Coroutine[Any, Any, R]]) -> R:
    """Run a coroutine to its end from synchronous code: ``asyncio.run``, or, inside a running
    event loop, ``asyncio.run`` on a worker thread (the caller waits for it)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="qa-eval") as pool:
        return pool.submit(lambda: asyncio.run(make())).result()


@dataclass(frozen=True)
class Scored:
    """What a metric computed for one sample, before its usage is added."""

    value: float | None
    reason: str
    details: Details = field(default_factory=Details)


@dataclass(frozen=True)
class CallPlan:
    """What scoring some rows would take (a dry run's estimate; see ``judge.usage.Plan``)."""

    rows: int
    calls: int
    cached: int
    """Replies the cache already holds (not calls)."""
    prompt_tokens: int
    completion_tokens: int
    cost: float | None
    """Estimated USD; ``None`` when the model's price is unknown."""


class _Recording:
    """A judge as one sample sees it: every ask passes through and its verdict is kept."""

    def __init__(self, judge: Any) -> None:
        self.judge = judge
        self.verdicts: list[Verdict[Any]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.judge, name)

    async def ask(self, metric: str, messages: list[dict[str, str]], schema: Any) -> Any:
        """The judge's verdict, noted."""
        verdict = await self.judge.ask(metric, messages, schema)
        self.verdicts.append(verdict)
        return verdict


class _Spending(Embedder):
    """Embeddings as one sample sees them: inside the judge's bound, their costs noted."""

    def __init__(self, inner: Embedder, judge: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.judge = judge
        self.costs: list[float | None] = []

    async def embed(self, texts: Any) -> tuple[list[list[float]], float | None]:
        """The inner embedder's vectors, its cost noted."""
        if self.judge is not None:
            async with self.judge.slot():
                vectors, cost = await self.inner.embed(texts)
        else:
            vectors, cost = await self.inner.embed(texts)
        self.costs.append(cost)
        return vectors, cost


class Session:
    """One sample's view of a metric's judge and embeddings, and what it spent."""

    def __init__(self, judge: Any = None, embeddings: Embedder | None = None) -> None:
        self.judge: Any = _Recording(judge) if judge is not None else None
        self.embedder: Any = _Spending(embeddings, judge) if embeddings is not None else None

    def result(self, scored: Scored, name: str, threshold: float | None) -> MetricResult:
        """The sample's result: ``scored`` with the calls made for it, their cost (only what was
        spent now: a reply from the cache costs nothing) and whether all came from the cache."""
        verdicts = self.judge.verdicts if self.judge is not None else []
        fresh = [v for v in verdicts if not v.cached]
        costs = [v.cost for v in fresh] + (self.embedder.costs if self.embedder else [])
        cost = None if any(c is None for c in costs) else float(sum(c or 0.0 for c in costs))
        usage = ResultUsage(
            calls=len(fresh),
            prompt_tokens=sum(v.prompt_tokens for v in fresh),
            completion_tokens=sum(v.completion_tokens for v in fresh),
            cached_tokens=sum(v.cached_tokens for v in fresh),
        )
        cached = bool(verdicts) and not fresh
        return MetricResult(
            scored.value,
            scored.reason,
            details=scored.details,
            cost=cost,
            usage=usage,
            cached=cached,
            threshold=threshold,
            name=name,
        )


def require_llm(metric: str, llm: Any) -> QaEvalLLM:
    """``llm`` when it is a judge from ``qa_eval.llms.llm_factory``; else one line, now."""
    if not isinstance(llm, QaEvalLLM):
        raise SetupError(
            f"{metric}: llm must come from qa_eval.llms.llm_factory(model, client=...), "
            f"not {type(llm).__name__}"
        )
    return llm


def require_embeddings(metric: str, embeddings: Any) -> Embedder:
    """``embeddings`` when it is an embedder (``qa_eval.embeddings.embedding_factory``)."""
    if not isinstance(embeddings, Embedder):
        raise SetupError(
            f"{metric}: embeddings must come from qa_eval.embeddings.embedding_factory(...), "
            f"not {type(embeddings).__name__}"
        )
    return embeddings


Progress = Callable[[int, int], Any]


def progress_of(progress: bool | Progress | None, name: str) -> Progress | None:
    """The progress callback asked for: ``True`` writes ``name: done/total`` to stderr."""
    if progress is True:

        def show(done: int, total: int) -> None:
            end = "\n" if done == total else ""
            print(f"\r{name}: {done}/{total}", end=end, file=sys.stderr, flush=True)

        return show
    return progress or None


class BaseMetric:
    """A per-sample metric (see the module docstring); subclasses define ``ascore`` with their
    keyword inputs, gather them into a row and score it with :meth:`ascore_row`, which calls
    their ``_compute_row``."""

    name: str
    llm: QaEvalLLM | None = None
    embeddings: Embedder | None = None

    def __init__(
        self,
        name: str,
        *,
        threshold: float | None = None,
        allowed_values: tuple[float, float] = (0.0, 1.0),
    ) -> None:
        self.name = name
        self.threshold = threshold
        self.allowed_values = allowed_values

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"

    async def ascore(self, *args: Any, **inputs: Any) -> MetricResult:
        """The metric's result on one sample (subclasses name their inputs as ragas does)."""
        raise NotImplementedError

    def _threshold(self) -> float | None:
        return self.threshold

    async def ascore_row(self, row: Mapping[str, Any], judge: Any = None) -> MetricResult:
        """One row's result (its inputs by ``ascore``'s keyword names), the calls made through
        ``judge`` when given (a run's shared judge: one budget, shared in-flight asks), else
        through this metric's own. Each input's type is checked first (``checks``)."""
        check_inputs(type(self).__name__, type(self).ascore, row)
        if judge is None and self.llm is not None:
            judge = self.llm.judge()
        session = Session(judge if self.llm is not None else None, self.embeddings)
        scored = await self._compute_row(session, dict(row))
        return session.result(scored, self.name, self._threshold())

    def score(self, **inputs: Any) -> MetricResult:
        """:meth:`ascore` from synchronous code (inside a running loop too)."""
        return run_sync(lambda: self.ascore(**inputs))

    async def abatch_score(
        self,
        rows: Iterable[Mapping[str, Any]],
        concurrency: int | None = None,
        on_result: Callable[[int, MetricResult], Any] | None = None,
        progress: bool | Progress | None = None,
        return_exceptions: bool = True,
    ) -> list[MetricResult]:
        """One result per row, in input order (see the module docstring)."""
        todo = [dict(row) for row in rows]
        limit = concurrency or (self.llm.config.concurrency if self.llm is not None else 8)
        gate = asyncio.Semaphore(max(1, limit))
        results: list[MetricResult | None] = [None] * len(todo)
        show = progress_of(progress, self.name)
        done = 0

        async def one(index: int, row: dict[str, Any]) -> None:
            nonlocal done
            async with gate:
                try:
                    result = await self.ascore(**row)
                except Exception as e:
                    if not return_exceptions:
                        raise
                    result = MetricResult.failed(e, self.name, self._threshold())
            results[index] = result
            done += 1
            if on_result is not None:
                on_result(index, result)
            if show is not None:
                show(done, len(todo))

        tasks = [asyncio.ensure_future(one(i, row)) for i, row in enumerate(todo)]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
        return [r for r in results if r is not None]

    def batch_score(
        self,
        rows: Iterable[Mapping[str, Any]],
        concurrency: int | None = None,
        on_result: Callable[[int, MetricResult], Any] | None = None,
        progress: bool | Progress | None = None,
        return_exceptions: bool = True,
    ) -> list[MetricResult]:
        """:meth:`abatch_score` from synchronous code (inside a running loop too)."""
        rows = list(rows)
        return run_sync(
            lambda: self.abatch_score(rows, concurrency, on_result, progress, return_exceptions)
        )

    def plan(self, rows: Iterable[Mapping[str, Any]]) -> CallPlan:
        """The calls, tokens and estimated cost of scoring ``rows``, without a call."""
        todo = [dict(row) for row in rows]
        return run_sync(lambda: self._aplan(todo))

    async def _aplan(self, rows: list[dict[str, Any]]) -> CallPlan:
        if self.llm is None:  # no judge: nothing to plan (embeddings are not counted)
            return CallPlan(len(rows), 0, 0, 0, 0, 0.0)
        planner = self.llm.planner()
        try:
            for row in rows:
                # a planned call, or a row that cannot be scored: nothing more to count
                with contextlib.suppress(JudgeError, ValueError, TypeError, KeyError):
                    await self._plan_row(planner, row)
        finally:
            if planner.cache is not None:
                planner.cache.close()
        plan = planner.plan
        prompt = sum(plan.prompt_tokens.values())
        completion = sum(plan.completion_tokens.values())
        return CallPlan(
            len(rows),
            sum(plan.calls.values()),
            sum(plan.cached.values()),
            prompt,
            completion,
            planner.cost_of(prompt, completion),
        )

    async def _plan_row(self, planner: Any, row: dict[str, Any]) -> None:
        """Run one row's computation against a dry-run judge (subclasses with their own inputs
        override :meth:`_compute_row`)."""
        session = Session(planner, None)
        await self._compute_row(session, row)

    async def _compute_row(self, session: Session, row: dict[str, Any]) -> Scored:
        raise NotImplementedError


class DeterministicMetric(BaseMetric):
    """A metric computed by a pure function of its inputs (no judge, no embeddings): the hook
    for wrapping ``metrics.textual.strings`` / ``metrics.agents.toolcalls`` functions in this API.

    ``function(**inputs)`` returns a number, or ``(value, reason)``; the reason defaults to the
    value in words."""

    def __init__(
        self,
        name: str,
        function: Callable[..., float | tuple[float, str]],
        *,
        threshold: float | None = None,
        allowed_values: tuple[float, float] = (0.0, 1.0),
    ) -> None:
        super().__init__(name, threshold=threshold, allowed_values=allowed_values)
        self.function = function

    async def ascore(self, *args: Any, **inputs: Any) -> MetricResult:
        """The function's value on these inputs (by keyword)."""
        return await self.ascore_row(inputs)

    async def _compute_row(self, session: Session, row: dict[str, Any]) -> Scored:
        out = self.function(**row)
        value, reason = out if isinstance(out, tuple) else (out, f"{self.name} = {out:.4g}")
        return Scored(float(value), reason)
