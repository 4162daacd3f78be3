"""How a judge call reaches the endpoint (the behaviour is described in ``calls``): the request a
cache key is made from and the body sent, the run's concurrency slot, and one call attempt by
attempt: a fault read (``faults``), retried after ``Retry-After`` or a backoff with full jitter,
the response mode lowered after a format error, the run stopped when the endpoint refuses it.
:class:`Transport` is a part of ``calls.Judge``, which sets the attributes it declares.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from ..errors import BudgetExceeded, JudgeError, JudgeUnavailable
from ..redact import public_url
from .cache.store import request_key
from .clients import make_client
from .faults import (
    about_format,
    api_error,
    cause_of,
    clip,
    could_not_connect,
    message_of,
    refuses_max_tokens,
    retry_after,
)
from .ledger import Accounting
from .replies import (
    MODES,
    Reply,
    ReplyFault,
    json_schema,
    lower_mode,
    next_mode,
    prompt_tokens_of,
    read_completion,
    reply_budget,
    response_format,
    split_instructions,
    with_system,
)
from .settings import GenerationConfig, JudgeSettings
from .usage import Usage

_BACKOFF_CAP = 30.0


class Transport(Accounting):
    """The judge's requests and their attempts, retries and response modes."""

    config: JudgeSettings
    gen: GenerationConfig
    mode: str
    mode_note: str | None
    modes_used: dict[str, int]
    token_limit: str
    in_flight: int
    peak_in_flight: int
    batch: Any
    _client: Any
    _sleep: Callable[[float], Any]
    _semaphore: asyncio.Semaphore | None
    _fatal: JudgeUnavailable | None
    _answered: float
    max_cost: float | None
    system_prompt: str | None

    def slot(self) -> asyncio.Semaphore:
        """The run's concurrency bound, for other calls to the same service (embeddings)."""
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.config.concurrency)
        return self._semaphore

    @property
    def client(self) -> Any:
        """The SDK client, made on first use."""
        if self._client is None:
            self._client = make_client(self.gen, self.config.timeout)
        return self._client

    def sent(self, messages: list[dict[str, str]]) -> list[dict[str, str]]:
        """The messages as they are sent: the fixed instructions split off
        (:func:`split_instructions`), the ``system_prompt`` first (:func:`with_system`)."""
        return with_system(split_instructions(messages), self.system_prompt)

    def request(
        self, messages: list[dict[str, str]], schema: type[BaseModel], repeat: int = 0
    ) -> dict[str, Any]:
        """The canonical request a cache key is made from (no API key, no response mode): the
        messages as they are sent (:func:`split_instructions`), the extra generation keys, and
        the ``repeat`` index when above 0."""
        return {
            "provider": self.gen.provider,
            "base_url": public_url(self.gen.base_url),
            "model": self.gen.model,
            "temperature": self.gen.temperature,
            "max_tokens": self.gen.max_tokens,
            **({"extra": dict(self.gen.extra)} if self.gen.extra else {}),
            "messages": self.sent(messages),
            "schema": json_schema(schema),
            **({"repeat": repeat} if repeat else {}),
        }

    def body(
        self,
        messages: list[dict[str, str]],
        schema: type[BaseModel],
        mode: str | None = None,
        max_tokens: int | None = None,
    ) -> dict[str, Any]:
        """The keyword arguments of the chat completion call for ``messages`` in ``mode``
        (default: the run's current mode); a batch sends the same body."""
        if max_tokens is None:
            max_tokens = self.gen.max_tokens or reply_budget(schema, prompt_tokens_of(messages))
        kwargs: dict[str, Any] = {
            "model": self.gen.model,
            "messages": messages,
            "temperature": self.gen.temperature,
        }
        if self.token_limit == "max_tokens":
            kwargs["max_tokens"] = max_tokens
        elif self.token_limit == "max_completion_tokens" and self.gen.max_tokens:
            kwargs["max_completion_tokens"] = self.gen.max_tokens
        if self.gen.extra:  # seed, top_p, ...: into the request body as they are
            kwargs["extra_body"] = dict(self.gen.extra)
        reply_format = response_format(mode or self.mode, schema)
        if reply_format is not None:
            kwargs["response_format"] = reply_format
        return kwargs

    def _backoff(self, attempt: int) -> float:
        return random.uniform(0, min(_BACKOFF_CAP, self.config.retry_base * 2**attempt))

    async def _call(
        self,
        metric: str,
        messages: list[dict[str, str]],
        schema: type[BaseModel],
        max_tokens: int | None = None,
        repeat: int = 0,
    ) -> Reply:
        """One successful completion (with retries); its text and tokens, counted and priced."""
        if max_tokens is None:
            max_tokens = self.gen.max_tokens or reply_budget(schema, prompt_tokens_of(messages))
        served = self._from_batch(messages, schema, max_tokens, repeat)
        if served is not None:
            return await self._account(metric, served)
        usage = self._usage(metric)
        tries = _Tries(started=time.monotonic())
        while True:
            async with self.slot():
                reply = await self._attempt(usage, messages, schema, max_tokens, tries)
                if reply is not None:
                    # Counted in the slot: a call that starts after this one ends sees its cost
                    # (a shared budget's total too, which is added remotely).
                    return await self._account(metric, reply)
            await self._after_fault(usage, tries)

    def _from_batch(
        self, messages: list[dict[str, str]], schema: type[BaseModel], max_tokens: int, repeat: int
    ) -> Reply | None:
        """In a ``--batch`` run, a batch's reply to this request, or None to call it now (the
        outbox records it for a batch while planning)."""
        if self.batch is None:
            return None
        served = self.batch.serve(
            request_key(self.request(messages, schema, repeat)),
            self.body(messages, schema, max_tokens=max_tokens),
        )
        if served is None:
            return None
        content, prompt_tokens, completion_tokens = served
        return Reply(content, prompt_tokens, completion_tokens, batch=True)

    async def _attempt(
        self,
        usage: Usage,
        messages: list[dict[str, str]],
        schema: type[BaseModel],
        max_tokens: int,
        tries: _Tries,
    ) -> Reply | None:
        """One attempt, in a slot already held: the reply, or None after a fault to retry (noted
        in ``tries``). A format error is asked again at once, lower, in the same slot."""
        while True:
            # Checked, and the mode read, once this call has its slot: asks that waited for one
            # must see a 401, a spent budget or a downgrade that happened meanwhile.
            await self._check_open()
            mode = self.mode if tries.probe is None else lower_mode(self.mode, tries.probe)
            kwargs = self.body(messages, schema, mode, max_tokens)
            try:
                reply = await self._send(kwargs)
            except Exception as e:
                if self._fault(e, mode, usage, tries):
                    return None
                continue
            if tries.probe is not None:
                self._confirm(mode, tries.probe_note)
            self.modes_used[mode] = self.modes_used.get(mode, 0) + 1
            return reply

    async def _check_open(self) -> None:
        """Raise if no call may start: the endpoint refused the run, or the budget is spent (the
        run's own total, or the total of the budget it shares with other judges)."""
        if self._fatal is not None:
            raise self._fatal
        if self.max_cost is None:
            return
        shared = self.shared_budget
        spent = self.total.cost if shared is None else await shared.spent()
        if spent >= self.max_cost:
            raise BudgetExceeded()

    async def _send(self, kwargs: dict[str, Any]) -> Reply:
        """One chat completion request, counted in flight, and its reply read."""
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            completion = await self.client.chat.completions.create(
                **kwargs, timeout=self.config.timeout
            )
            self._answered = time.monotonic()
            return read_completion(completion)
        finally:
            self.in_flight -= 1

    def _fault(self, error: Exception, mode: str, usage: Usage, tries: _Tries) -> bool:
        """Read a failed attempt: True when it is a fault to retry after a wait (noted in
        ``tries``), False to ask again at once (a lower mode, another token limit); raises when
        the call cannot succeed."""
        tries.delay = None
        tries.connect_failure = False
        if api_error(error, "RateLimitError"):
            self._answered = time.monotonic()
            tries.delay = retry_after(getattr(getattr(error, "response", None), "headers", None))
            if tries.delay is None:
                tries.delay = self._backoff(tries.attempt)
            tries.failure = f"429 rate limited: {message_of(error)}"
        elif api_error(error, "APIStatusError"):
            self._answered = time.monotonic()
            return self._status_fault(error, mode, usage, tries)
        elif api_error(error, "APITimeoutError"):  # before APIConnectionError, its base
            tries.timeouts += 1
            tries.failure = f"{type(error).__name__}: {error}{cause_of(error)}"
            if tries.timeouts > 1:
                self._count(usage, "failures")
                raise JudgeError(
                    f"no reply within {self.config.timeout:g} s, twice (llm.timeout); "
                    "a request the client gave up on may still be running on the server"
                ) from None
        elif api_error(error, "APIConnectionError"):
            tries.connect_failure = could_not_connect(error)
            tries.failure = f"{type(error).__name__}: {error}{cause_of(error)}"
        elif isinstance(error, ReplyFault):
            self._answered = time.monotonic()
            tries.failure = f"unusable reply: {error}"
        elif api_error(error, "APIError") or isinstance(
            error, (ValueError, RecursionError, OSError, EOFError)
        ):
            # A body that is not JSON (a proxy's HTML page, a cut or garbled body): the SDK
            # raises the parser's error; a fault like a 500.
            tries.failure = f"unreadable reply: {type(error).__name__}: {clip(str(error))}"
        else:  # any other client failure (litellm's, say): a fault too
            tries.failure = f"the call failed: {type(error).__name__}: {clip(str(error))}"
        return True

    def _status_fault(self, error: Any, mode: str, usage: Usage, tries: _Tries) -> bool:
        """Read an HTTP error status (see :meth:`_fault`): a format error lowers the mode, a
        refused ``max_tokens`` changes the token limit, 401/403/404 stop the run, any other 4xx
        but 408 and 409 is this call's error, the rest a fault to retry."""
        status = error.status_code
        message = message_of(error)
        if mode != "text" and about_format(status, message, error):
            if tries.probe is None:
                tries.probe_note = f"{mode} refused ({status}): {message}"
            tries.probe = next_mode(mode)
            return False
        if self.token_limit == "max_tokens" and refuses_max_tokens(status, message):
            # OpenAI's reasoning models take max_completion_tokens, which counts their reasoning
            # too: a configured limit is sent under that name, a reply-sized one not at all (it
            # would starve the reasoning).
            self.token_limit = "max_completion_tokens"
            return False
        if status in (401, 403, 404):
            self._fatal = JudgeUnavailable(
                f"the judge endpoint refused the call ({status}): {message}"
            )
            raise self._fatal from None
        if status < 500 and status not in (408, 409):
            self._count(usage, "failures")
            raise JudgeError(f"judge call failed ({status}): {message}") from None
        tries.failure = f"{status} from the judge: {message}"
        return True

    async def _after_fault(self, usage: Usage, tries: _Tries) -> None:
        """After a fault: give up when it was the last attempt, else wait before the next
        (``Retry-After``, or a backoff with full jitter)."""
        tries.refused = tries.refused and tries.connect_failure
        tries.attempt += 1
        if tries.attempt >= self.config.max_attempts:
            self._count(usage, "failures")
            raise self._given_up(tries)
        self._count(usage, "retries")
        delay = tries.delay if tries.delay is not None else self._backoff(tries.attempt)
        await self._sleep(delay)

    def _given_up(self, tries: _Tries) -> JudgeError | JudgeUnavailable:
        """The error of a call that used all its attempts: the judge unreachable (for the rest
        of the run) when none of them connected and no reply at all came since it started."""
        if tries.refused and self._answered < tries.started:
            self._fatal = JudgeUnavailable(
                f"cannot reach the judge at {public_url(self.gen.base_url) or 'its URL'}"
                f": every connection failed ({tries.attempt} attempts over "
                f"{time.monotonic() - tries.started:.0f} s; last: {tries.failure})"
            )
            return self._fatal
        return JudgeError(f"gave up after {tries.attempt} attempts; last: {tries.failure}")

    def _confirm(self, mode: str, note: str | None) -> None:
        """Ask with ``mode`` from now on: it worked for a call that a higher mode's format error
        stopped (only ever downwards)."""
        if MODES.index(mode) > MODES.index(self.mode):
            self.mode = mode
            self.mode_note = note


@dataclass
class _Tries:
    """Where one call stands across its attempts."""

    started: float
    """When the call started, on the monotonic clock."""
    attempt: int = 0
    """Attempts that ended in a fault so far."""
    timeouts: int = 0
    refused: bool = True
    """Every attempt so far failed to connect at all."""
    probe: str | None = None
    """A lower response mode this call tries after a format error."""
    probe_note: str | None = None
    """The format error that started the probe."""
    failure: str = ""
    """The last fault, in words."""
    delay: float | None = None
    """How long the last fault asks to wait (``Retry-After``), if it says."""
    connect_failure: bool = False
    """The last fault was a connection that could not be made."""
