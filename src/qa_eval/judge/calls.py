"""The judge: render → cache → bounded, retried call to an OpenAI-compatible endpoint → parse →
validate → cost.

- One semaphore bounds the calls in flight for the whole run (``llm.concurrency``).
- Every call sends a ``max_tokens`` sized to its reply schema and its prompt
  (:func:`reply_budget`) unless ``llm.generation.max_tokens`` is set, so a weak model that keeps
  writing stops instead of running to the end of its context (and past the timeout).
- 429 waits as long as ``Retry-After`` (or ``retry-after-ms``) says (at most 120 s; a value that is
  not a number of seconds or an HTTP date backs off instead); 5xx, connection errors and replies
  that cannot be read (a body that is not JSON, cut short or reset, or JSON that is not a chat
  completion) back off exponentially with full jitter; ``llm.max_attempts`` tries in all, then
  that metric's ``*_error``. A timeout is retried once only: a request the client gave up on may
  still be running on the server (a single-slot local server finishes it before the next one).
- A judge that refuses every connection (nothing listens at the URL) stops the run with one line,
  as a 401/403/404 does, once one call has used all its attempts and no reply at all came since
  it started.
- Structured output is asked for with ``json_schema``; an endpoint that rejects it *for its format*
  (a 400/422 or 5xx whose message names the schema, ``response_format``, ``json_object`` or a
  grammar, and not the context length) is asked again with ``json_object`` carrying the schema
  (llama.cpp and llama-cpp-python enforce it), then ``json_object`` alone, then plain text. The
  lower mode is kept for the rest of the run only once it has worked for the call that was
  rejected. Any other 4xx is that metric's error. Replies are parsed tolerantly (code fences,
  text around the object).
- A reply that cannot be used is re-asked with the problem: once when it holds JSON that breaks
  its schema or was cut at ``max_tokens`` (then asked to keep its texts short), up to
  ``max_attempts`` replies when it holds no JSON at all; an exchange identical to one already
  made (a model at temperature 0 repeating itself) is never sent again. The error names the real
  number of replies.
- Prompts are sent with their fixed part first (``replies.split_instructions``), so providers'
  automatic prompt caching can reuse the instructions across questions.
- Identical requests in flight at the same time share one call.
- Reply values are checked before a reply is used or cached (``replies.writable``); a reply that
  breaks this is re-asked like one that breaks its schema, a stored one is a miss (asked again).
- Replies are stored in the cache as they arrive; cached replies cost nothing in this run, but
  keep the tokens they took (prompt tokens the provider served from its own prompt cache
  included), so a metric's ``*_cost`` is the same on a rerun.
- Error messages are redacted of API keys at the source (``redact.py``); the base URL goes into
  cache keys and signatures without credentials.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeVar, cast

from pydantic import BaseModel, ValidationError

from ..errors import DryRunSkip, JudgeError, JudgeUnavailable
from ..redact import public_url
from .cache.store import CachedReply, ReplyCache, request_key
from .faults import problem_of
from .ledger import SharedBudget
from .replies import (
    MODES,
    Reply,
    extract_json,
    json_schema,
    parse_reply,
    prompt_tokens_of,
    reply_budget,
)
from .settings import JudgeSettings
from .transport import Transport
from .usage import Plan, Usage, Verdict

if TYPE_CHECKING:
    pass

__all__ = ["NO_CONTEXT", "AskContext", "Asking", "Judge"]

T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True)
class AskContext:
    """What the caller of an ask tells the judge about it (:meth:`Judge.ask`)."""

    repeat: int = 0
    """Which repeat of a question's LLM metrics asks (``llm.repeats``, ``repeats``); above 0
    the judge puts it into the cache key (:meth:`Judge.request`), so each repeat is its own cache
    entry and a cache made without repeats stays valid for repeat 0."""
    planned: list[str] | None = None
    """Where a dry run notes the metric of each call it plans (not finds cached), if anywhere."""


NO_CONTEXT = AskContext()
"""An ask of repeat 0 whose planned calls are noted nowhere."""


class Judge(Transport):
    """Asks one judge model for validated JSON replies; shared by every metric of a run."""

    def __init__(
        self,
        config: JudgeSettings,
        *,
        cache: ReplyCache | None = None,
        max_cost: float | None = None,
        dry_run: bool = False,
        client: Any = None,
        sleep: Callable[[float], Any] = asyncio.sleep,
        system_prompt: str | None = None,
        shared_budget: SharedBudget | None = None,
    ) -> None:
        if config.generation is None:
            raise JudgeUnavailable("no judge is configured")
        self.config = config
        self.system_prompt = system_prompt
        """Sent first, as (or before) the system message of every ask (``llm_factory``'s)."""
        self.gen = config.generation
        self.cache = cache
        self.max_cost = max_cost
        self.shared_budget = shared_budget
        """The total ``max_cost`` applies to when other judges spend from the same budget (a Ray
        run's batches); None: this judge's own total."""
        self.dry_run = dry_run
        self.price_source = (self.gen.model, config.prices)
        self._usages: dict[str, Usage] = {}
        self._total = Usage()
        if max_cost is not None and self.price is None:  # a budget needs the price now
            raise JudgeUnavailable(
                f"--max-cost needs the price of {self.gen.model!r}: add it under llm.prices"
            )
        self._client = client
        self._sleep = sleep
        self._semaphore: asyncio.Semaphore | None = None
        self.mode = MODES[0]
        self.mode_note: str | None = None
        """Why the response mode was lowered (the format error, redacted), if it was."""
        self.modes_used: dict[str, int] = {}
        """Replies received per response mode."""
        self.token_limit = "max_tokens"
        """How the reply's length is limited: ``max_tokens``, or ``max_completion_tokens`` for an
        endpoint that refuses ``max_tokens`` (OpenAI's reasoning models: then only a configured
        ``max_tokens`` is sent)."""
        self.plan = Plan()
        self.in_flight = 0
        self.peak_in_flight = 0
        self._fatal: JudgeUnavailable | None = None
        self._answered = -math.inf
        """When the endpoint last answered at all (any HTTP status), on the monotonic clock."""
        self._in_flight_asks: dict[str, asyncio.Future[Verdict[Any]]] = {}
        self.batch: Any = None
        """A ``run.prefill.Outbox`` while a ``--batch`` run plans or completes: it serves replies
        that came from a batch, and records (or leaves to a synchronous call) the others."""
        if dry_run and cache is not None:
            cache.stop_writing()  # a dry run writes nothing, not even embeddings

    async def ask(
        self,
        metric: str,
        messages: list[dict[str, str]],
        schema: type[T],
        context: AskContext = NO_CONTEXT,
    ) -> Verdict[T]:
        """A validated reply of ``schema`` to ``messages``, from the cache or the judge, for an
        ask in ``context`` (its repeat, where a dry run notes its planned call).

        Identical requests in flight at the same time share one call."""
        if self._fatal is not None:
            raise self._fatal
        messages = self.sent(messages)
        key = request_key(self.request(messages, schema, context.repeat))
        usage = self._usage(metric)
        if self.cache is not None:
            hit = await self.cache.aget(key)
            if hit is not None:
                try:
                    value: T | None = parse_reply(hit.content, schema)
                except Exception:  # a stored reply that fails now is a miss, asked again
                    value = None
                if value is not None:
                    self._count(usage, "cached")
                    if self.dry_run:
                        self.plan.cached[metric] = self.plan.cached.get(metric, 0) + 1
                    hit_cached = getattr(hit, "cached_tokens", 0)
                    cost = self.reply_cost(hit)
                    return Verdict(
                        value, hit.prompt_tokens, hit.completion_tokens, cost, True, hit_cached
                    )
        if self.dry_run:
            self.plan_call(metric, messages, schema, context)
            raise DryRunSkip()
        shared = self._in_flight_asks.get(key)
        if shared is not None:
            verdict = await asyncio.shield(shared)
            self._count(usage, "cached")
            return Verdict(
                verdict.value,
                verdict.prompt_tokens,
                verdict.completion_tokens,
                verdict.cost,
                True,
                verdict.cached_tokens,
            )
        future: asyncio.Future[Verdict[Any]] = asyncio.get_running_loop().create_future()
        self._in_flight_asks[key] = future
        try:
            verdict = await self._ask_judge(metric, key, messages, schema, context.repeat)
        except BaseException as e:
            if not future.done():
                future.set_exception(e)
                future.exception()  # retrieved: no "never retrieved" warning without sharers
            raise
        else:
            future.set_result(verdict)
            return verdict
        finally:
            del self._in_flight_asks[key]

    async def _ask_judge(
        self,
        metric: str,
        key: str,
        messages: list[dict[str, str]],
        schema: type[T],
        repeat: int = 0,
    ) -> Verdict[T]:
        """A validated reply from the judge itself, re-asked while it cannot be used, stored
        under ``key`` and priced (the tokens a batch served at batch rates)."""
        usage = self._usage(metric)
        tokens = self.gen.max_tokens or reply_budget(schema, prompt_tokens_of(messages))
        asked = messages
        sent = {_exchange(asked, tokens)}
        taken = _Taken()
        replies = 0
        while True:
            reply = await self._call(metric, asked, schema, tokens, repeat)
            replies += 1
            taken.add(reply)
            try:
                value = parse_reply(reply.content, schema)
                break
            except (ValueError, ValidationError) as e:
                again, problem, has_json = _asked_again(messages, reply, e, tokens)
            # JSON that breaks the schema, or a reply cut at max_tokens, is asked again once (a
            # cut reply with the same limit: a model that ran away once runs away again, and a
            # slow local server would take twice as long); a reply with no JSON at all (prose,
            # garbage) up to max_attempts replies; an exchange already made (a model repeating
            # itself at temperature 0) never again.
            limit = 2 if has_json or reply.cut else self.config.max_attempts
            repeated = _exchange(again, tokens) in sent
            if replies >= limit or repeated:
                self._count(usage, "failures")
                why = ", the same reply again" if repeated else ""
                raise JudgeError(
                    f"invalid judge reply after {replies} attempt{'s' if replies > 1 else ''}"
                    f"{why}: {problem}"
                )
            sent.add(_exchange(again, tokens))
            self._count(usage, "reasks")
            asked = again
        return self._stored(key, value, reply.content, taken)

    def _stored(self, key: str, value: T, content: str, taken: _Taken) -> Verdict[T]:
        """The verdict of a usable reply (``content``, read as ``value``): stored under ``key``
        with the tokens of every reply it took, and priced (those a batch served at batch
        rates)."""
        if self.cache is not None:
            self.cache.put(
                key,
                self.gen.model,
                CachedReply(content, taken.prompt, taken.completion, cached_tokens=taken.cached),
            )
        cost = self.cost_of(taken.prompt, taken.completion, taken.cached)
        verdict = Verdict(value, taken.prompt, taken.completion, cost, False, taken.cached)
        return self._at_batch_rates(key, verdict, taken.batched)

    def plan_call(
        self,
        metric: str,
        messages: list[dict[str, str]],
        schema: type[BaseModel],
        context: AskContext = NO_CONTEXT,
    ) -> None:
        """Count a call a dry run would make (see :meth:`usage.Plan.count`), noted in
        ``context.planned`` too when it has that list."""
        self.plan.count(metric, self.sent(messages), json_schema(schema), self.gen.max_tokens)
        if context.planned is not None:
            context.planned.append(metric)

    def planning(self) -> tuple[Judge, list[str]]:
        """This judge as asks see it whose planned calls are noted (:class:`Asking`), and the
        list that notes the metric of each call a dry run plans (not finds cached) through it."""
        return Asking(self, NO_CONTEXT).planning()

    def signature(self) -> dict[str, Any]:
        """The judge's part of a run signature: the model and how it was asked, including the
        response mode in use at the end (``response_mode``), the replies received in each mode
        (``response_modes``) and why the mode was lowered, if it was."""
        signature = {
            "model": self.gen.model,
            "provider": self.gen.provider,
            "temperature": self.gen.temperature,
            "max_tokens": self.gen.max_tokens,
            "base_url": public_url(self.gen.base_url),
            "response_mode": self.mode,
            "response_modes": dict(self.modes_used),
            **({"extra": dict(self.gen.extra)} if self.gen.extra else {}),
        }
        if self.token_limit != "max_tokens":
            signature["token_limit"] = self.token_limit
        if self.mode_note is not None:
            signature["response_mode_reason"] = self.mode_note
        return signature


class Asking:
    """A judge (the run's, or one that wraps it) as the asks of one context see it: ``ask`` and
    ``plan_call`` pass the context on, everything else is the judge's own. The scorer gives each
    repeat of a question's metrics its own; a metric that must know what a dry run planned asks
    through :meth:`planning`'s. A context that says nothing (:data:`NO_CONTEXT`) is not passed,
    so any object with ``ask(metric, messages, schema)`` can be the judge of a run without
    repeats."""

    def __init__(self, judge: Any, context: AskContext) -> None:
        self.judge = judge
        self.context = context

    def __getattr__(self, name: str) -> Any:
        return getattr(self.judge, name)

    async def ask(self, metric: str, messages: list[dict[str, str]], schema: type[T]) -> Verdict[T]:
        """:meth:`Judge.ask` in this context."""
        if self.context == NO_CONTEXT:
            verdict: Verdict[T] = await self.judge.ask(metric, messages, schema)
        else:
            verdict = await self.judge.ask(metric, messages, schema, self.context)
        return verdict

    def plan_call(
        self, metric: str, messages: list[dict[str, str]], schema: type[BaseModel]
    ) -> None:
        """:meth:`Judge.plan_call` in this context."""
        if self.context == NO_CONTEXT:
            self.judge.plan_call(metric, messages, schema)
        else:
            self.judge.plan_call(metric, messages, schema, self.context)

    def planning(self) -> tuple[Judge, list[str]]:
        """See :meth:`Judge.planning`: this context, with a new list for the planned calls."""
        planned: list[str] = []
        asking = Asking(self.judge, replace(self.context, planned=planned))
        return cast("Judge", asking), planned


@dataclass
class _Taken:
    """The tokens of the replies one ask took (re-asks included)."""

    prompt: int = 0
    completion: int = 0
    cached: int = 0
    batched: list[int] = field(default_factory=lambda: [0, 0])
    """The prompt and completion tokens of those a batch served."""

    def add(self, reply: Reply) -> None:
        """Count one reply."""
        self.prompt += reply.prompt_tokens
        self.completion += reply.completion_tokens
        self.cached += reply.cached_tokens
        if reply.batch:
            self.batched[0] += reply.prompt_tokens
            self.batched[1] += reply.completion_tokens


def _asked_again(
    messages: list[dict[str, str]], reply: Reply, error: Exception, tokens: int
) -> tuple[list[dict[str, str]], str, bool]:
    """After ``reply`` to ``messages`` could not be used (``error``): the messages that ask
    again with the problem, the problem in words, and whether the reply held JSON at all."""
    problem = problem_of(error)
    try:
        extract_json(reply.content)
        has_json = True
    except ValueError:
        has_json = False
    if reply.cut:
        problem = f"it was cut off at the limit of {tokens} tokens ({problem})"
        note = " Keep every text in it short."
    else:
        note = ""
    again = [
        *messages,
        {"role": "assistant", "content": reply.content},
        {
            "role": "user",
            "content": f"That reply could not be used: {problem}. Reply again with only "
            f"the JSON object, with every field the schema requires.{note}",
        },
    ]
    return again, problem, has_json


def _exchange(messages: list[dict[str, str]], max_tokens: int | None) -> str:
    """What identifies one request of a call: its messages and its token limit."""
    return json.dumps([messages, max_tokens], sort_keys=True, ensure_ascii=False)
