"""What the judge's calls cost, per metric and for the run: the judge's counters (replies from
the cache, retries, re-asks, failures), the tokens and cost of each reply at the model's price,
and the tokens a batch served (``--batch``: ``batch``), which are stored with the reply and priced
at batch rates. :class:`Accounting` is a part of ``calls.Judge`` (through
``transport.Transport``), which sets ``_usages``, ``_total`` and ``cache``, and says where the
price comes from (``price_source``).

The price is looked up when first needed (a reply to price, a cache hit, a dry run's estimate,
anything that reads ``usage`` or ``total``), not when the judge is made: the price catalogue
(``genai-prices``) takes longer to load than a first request takes to leave. The lookup sets
``cost_known`` on every usage made before it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel

from .cache.store import CachedReply, ReplyCache
from .prices import price_of, usd
from .replies import Reply
from .usage import Usage, Verdict

__all__ = ["Accounting", "SharedBudget"]

T = TypeVar("T", bound=BaseModel)


class SharedBudget(Protocol):
    """The spent total of one ``max_cost`` budget that several judges share (the judges of a Ray
    run's batches, ``qa_eval.ray``): each judge applies the one-process rule to it, reading it
    before a call starts and adding each reply's cost as it comes."""

    async def spent(self) -> float:
        """What every judge sharing the budget has spent so far, in US dollars."""
        ...

    async def spend(self, cost: float) -> None:
        """Add the cost of one reply to the shared total."""
        ...


class Accounting:
    """The judge's usage and cost bookkeeping."""

    price_source: tuple[str, Mapping[str, Mapping[str, float]]]
    """The model and the config's price overrides (see :func:`prices.price_of`)."""
    _usages: dict[str, Usage]
    _total: Usage
    cache: ReplyCache | None
    shared_budget: SharedBudget | None
    _price: Any = None
    _priced = False

    @property
    def usage(self) -> dict[str, Usage]:
        """Calls, tokens and cost per metric (the price looked up first)."""
        self.price  # noqa: B018  # sets cost_known
        return self._usages

    @property
    def total(self) -> Usage:
        """Calls, tokens and cost of the run (the price looked up first)."""
        self.price  # noqa: B018  # sets cost_known
        return self._total

    @property
    def price(self) -> dict[str, float] | None:
        """The judge model's price entry (None: unknown), looked up at the first use."""
        if not self._priced:
            self._price = price_of(*self.price_source)
            self._priced = True
            for u in (self._total, *self._usages.values()):
                u.cost_known = self._price is not None
        price: dict[str, float] | None = self._price
        return price

    @property
    def cost_known(self) -> bool:
        """Whether the price is known (True until it is looked up)."""
        return not self._priced or self._price is not None

    def _count(self, usage: Usage, counter: str) -> None:
        """Add one to a counter (cached, retries, failures) of a metric's usage and the total."""
        for u in (usage, self._total):
            setattr(u, counter, getattr(u, counter) + 1)

    def _usage(self, metric: str) -> Usage:
        if metric not in self._usages:
            self._usages[metric] = Usage(cost_known=self.cost_known)
        return self._usages[metric]

    def cost_of(
        self, prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0
    ) -> float | None:
        """What tokens cost at the judge's price (cached prompt tokens at its cached-input rate);
        ``None`` when the price is unknown."""
        return usd(self.price, prompt_tokens, completion_tokens, cached_tokens=cached_tokens)

    def reply_cost(self, reply: CachedReply) -> float | None:
        """What a stored reply cost: its batch-served tokens at batch rates, the rest at
        standard rates (cached prompt tokens at the cached-input rate); ``None`` when the price
        is unknown."""
        bp = getattr(reply, "batch_prompt_tokens", 0)
        bc = getattr(reply, "batch_completion_tokens", 0)
        cached = getattr(reply, "cached_tokens", 0)
        standard = self.cost_of(reply.prompt_tokens - bp, reply.completion_tokens - bc, cached)
        if standard is None or not (bp or bc):
            return standard
        return standard + (usd(self.price, bp, bc, batch=True) or 0.0)

    def _at_batch_rates(self, key: str, verdict: Verdict[T], batched: list[int]) -> Verdict[T]:
        """``verdict`` (stored under ``key``) with the prompt and completion tokens a batch
        served of it (``batched``) recorded in the cache and priced at batch rates."""
        if not any(batched):
            return verdict
        reply = CachedReply(
            "",
            verdict.prompt_tokens,
            verdict.completion_tokens,
            batch_prompt_tokens=batched[0],
            batch_completion_tokens=batched[1],
            cached_tokens=verdict.cached_tokens,
        )
        if self.cache is not None:
            self.cache.put_batch_tokens(key, *batched)
        return Verdict(
            verdict.value,
            verdict.prompt_tokens,
            verdict.completion_tokens,
            self.reply_cost(reply),
            False,
            verdict.cached_tokens,
        )

    async def _account(self, metric: str, reply: Reply) -> Reply:
        """Count one reply received for ``metric`` and the run (and in the shared budget's
        total, when the judge spends from one)."""
        cost = usd(
            self.price,
            reply.prompt_tokens,
            reply.completion_tokens,
            cached_tokens=reply.cached_tokens,
            batch=reply.batch,
        )
        for u in (self._usage(metric), self._total):
            u.calls += 1
            u.prompt_tokens += reply.prompt_tokens
            u.completion_tokens += reply.completion_tokens
            u.cached_prompt_tokens += reply.cached_tokens
            u.cost += cost or 0.0
        if self.shared_budget is not None:
            await self.shared_budget.spend(cost or 0.0)
        return reply
