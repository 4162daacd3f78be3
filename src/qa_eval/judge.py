"""The judge: render → cache → bounded, retried call to an OpenAI-compatible endpoint → parse →
validate → cost.

- One semaphore bounds the calls in flight for the whole run (``llm.concurrency``).
- 429 waits as long as ``Retry-After`` (or ``retry-after-ms``) says (at most 120 s; a value that is
  not a number of seconds or an HTTP date backs off instead); 5xx, timeouts, connection errors
  and replies that cannot be read (a body that is not JSON, cut short or reset, or JSON that is
  not a chat completion) back off exponentially with full jitter; ``llm.max_attempts`` tries in
  all, then that metric's ``*_error``.
- Structured output is asked for with ``json_schema``; an endpoint that rejects it (a 400/422, or a
  5xx whose message names the schema or ``response_format``, as llama.cpp's server answers) is
  asked again with ``json_object``, then with plain text, and the first mode that works is kept for
  the rest of the run. Replies are parsed tolerantly (code fences, text around the object).
- A reply that fails validation is re-asked once with the validation error; a second failure is a
  :class:`JudgeError`, which the metric records as its ``*_error`` for that question. A re-ask
  that brings back no JSON at all is a fault, like a 500, and is asked again (``max_attempts``).
- Identical requests in flight at the same time share one call.
- Reply values are checked before a reply is used or cached: integers within 64 bits, finite
  numbers, nesting at most 64 deep (lone surrogates become U+FFFD), so every value can be written
  to JSON; a reply that breaks this is re-asked like one that breaks its schema. A stored reply is
  checked the same way when it is read: one that fails is a miss (asked again), never a crash.
- Replies are stored in the cache as they arrive; cached replies cost nothing in this run, but
  keep the tokens they took, so a metric's ``*_cost`` is the same on a rerun.
- Error messages are redacted of API keys at the source (``redact.py``); the base URL goes into
  cache keys and signatures without credentials.
"""

from __future__ import annotations

import asyncio
import contextvars
import email.utils
import functools
import json
import math
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from .cache import CachedReply, ReplyCache, request_key
from .config import SDK_PROVIDERS, EmbeddingConfig, EvalConfig, GenerationConfig
from .errors import QaEvalError
from .pricing import price_of, usd
from .redact import public_url, redact
from .variance import REPEAT

__all__ = [
    "BudgetExceeded",
    "Deferred",
    "DryRunSkip",
    "Judge",
    "JudgeError",
    "JudgeUnavailable",
    "Usage",
    "Verdict",
    "extract_json",
    "parse_reply",
    "total_cost",
    "writable",
]

T = TypeVar("T", bound=BaseModel)
MODES = ("json_schema", "json_object", "text")
_SCHEMA_WORDS = ("schema", "response_format", "grammar", "json_object")
_RETRY_AFTER_CAP = 120.0
_BACKOFF_CAP = 30.0
MAX_DEPTH = 64
"""How deep a reply's JSON may nest (orjson writes at most 255 levels, results add a few)."""
_INT64 = (-(2**63), 2**63 - 1)
_MAX_TOKENS = 10**9
"""More tokens than this in one reply's usage is not a count: the reply is a fault."""
_JSON_STARTS = 32
"""How many ``{`` a reply's text is searched from for a JSON object."""
_SURROGATE = re.compile(r"[\ud800-\udfff]")
DRY_RUN_COMPLETION_TOKENS = 150
"""Completion tokens a dry run assumes for a call when ``max_tokens`` is not set."""
_BATCHED: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar(
    "qa_eval_batched", default=None
)
"""Prompt and completion tokens of the current ask that were served by a batch (``batch.py``)."""


class JudgeError(Exception):
    """The judge could not give a usable reply for one metric of one question (the message is
    redacted of API keys: it goes into results)."""

    def __init__(self, message: str = "") -> None:
        super().__init__(redact(message))


class BudgetExceeded(JudgeError):
    """``--max-cost`` was reached before this call started."""

    def __init__(self) -> None:
        super().__init__("budget exceeded")


class DryRunSkip(JudgeError):
    """A dry run counts the call instead of making it."""

    def __init__(self) -> None:
        super().__init__("not computed (dry run)")


class Deferred(DryRunSkip):
    """A batch planning pass records the request for a batch instead of making it
    (``batch.py``); like a dry run's skip, it is not a failure of the judge."""


class JudgeUnavailable(QaEvalError):
    """The endpoint refuses every call (bad key, unknown model, wrong URL): the run stops."""

    def __init__(self, message: str = "") -> None:
        super().__init__(redact(message))


class _ReplyFault(Exception):
    """A reply that arrived but cannot be read as a chat completion: retried like a 500."""


@dataclass
class Usage:
    """Calls, tokens and cost, for one metric or a whole run."""

    calls: int = 0
    cached: int = 0
    retries: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    cost_known: bool = True

    def as_dict(self) -> dict[str, Any]:
        """Plain data for results and signatures."""
        return {
            "calls": self.calls,
            "cached": self.cached,
            "retries": self.retries,
            "failures": self.failures,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost": self.cost if self.cost_known else None,
        }


@dataclass(frozen=True)
class Verdict(Generic[T]):
    """A validated judge reply with what it took."""

    value: T
    prompt_tokens: int
    completion_tokens: int
    cost: float | None
    cached: bool


def total_cost(*costs: float | None) -> float | None:
    """The sum of a metric's call costs; ``None`` when any one of them is unknown."""
    return None if any(c is None for c in costs) else sum(costs)  # type: ignore[arg-type]


@dataclass
class _Plan:
    """What a dry run would do: calls, estimated tokens and cost per metric."""

    calls: dict[str, int] = field(default_factory=dict)
    cached: dict[str, int] = field(default_factory=dict)
    prompt_tokens: dict[str, int] = field(default_factory=dict)
    completion_tokens: dict[str, int] = field(default_factory=dict)


def extract_json(text: str) -> Any:
    """The JSON object in a reply: the whole text, inside a code fence, or the first ``{...}``
    that parses; raises ``ValueError`` when there is none (also for JSON nested too deep to
    parse)."""
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.split("\n", 1)[1] if "\n" in stripped else ""
        stripped = stripped.rsplit("```", 1)[0].strip()
    try:
        return json.loads(stripped)
    except ValueError:
        pass
    except RecursionError:
        raise ValueError("the reply's JSON is nested too deep") from None
    decoder = json.JSONDecoder()
    start = stripped.find("{")
    tries = 0
    while start != -1 and tries < _JSON_STARTS:
        tries += 1
        try:
            value, _ = decoder.raw_decode(stripped, start)
            return value
        except ValueError:
            start = stripped.find("{", start + 1)
        except RecursionError:
            raise ValueError("the reply's JSON is nested too deep") from None
    raise ValueError("the reply holds no JSON object")


def writable(value: Any, where: str = "reply", depth: int = 0) -> Any:
    """``value`` (parsed JSON) as the result writers can store it: ``ValueError`` naming the
    place for an integer beyond 64 bits, a number that is not finite (NaN, Infinity) or nesting
    deeper than :data:`MAX_DEPTH`; lone surrogates in strings become U+FFFD."""
    if depth > MAX_DEPTH:
        raise ValueError(f"{where}: nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value) if _SURROGATE.search(value) else value
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        if not _INT64[0] <= value <= _INT64[1]:
            raise ValueError(f"{where}: an integer beyond 64 bits ({len(str(abs(value)))} digits)")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{where}: {value} is not a finite number")
        return value
    if isinstance(value, dict):
        return {
            writable(k, where, depth + 1): writable(v, f"{where}.{_label(k)}", depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [writable(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value)]
    raise ValueError(f"{where}: a {type(value).__name__} is not JSON")


def _label(key: Any) -> str:
    text = str(key)
    return text if len(text) <= 40 else text[:40] + "..."


def parse_reply(content: str, schema: type[T]) -> T:
    """A reply's text as ``schema``: its JSON object, checked to be writable, then validated;
    ``ValueError`` (or pydantic's ``ValidationError``, also a ``ValueError``) if it is not."""
    return schema.model_validate(writable(extract_json(content)))


def _seconds(text: Any, unit: float = 1.0) -> float | None:
    """A non-negative number (of ``unit`` seconds) in a header value, as seconds capped at
    120; None if it is not one."""
    try:
        value = float(str(text).strip())
    except (TypeError, ValueError):
        return None
    if math.isnan(value) or value < 0:
        return None
    return min(value * unit, _RETRY_AFTER_CAP)


def _retry_after(headers: Any) -> float | None:
    """How long a 429 asks to wait (``retry-after-ms``, ``Retry-After`` in seconds or as an HTTP
    date), at most 120 s; None (back off instead) when it says nothing usable."""
    if headers is None:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms:
            wait = _seconds(ms, unit=0.001)
            if wait is not None:
                return wait
        value = headers.get("retry-after")
        if not value:
            return None
        wait = _seconds(value)
        if wait is not None:
            return wait
        parsed = email.utils.parsedate_tz(str(value))
        if parsed is None:
            return None
        if parsed[9] is None:  # an HTTP date is in GMT
            parsed = (*parsed[:9], 0)
        delay = email.utils.mktime_tz(parsed) - time.time()
    except (TypeError, ValueError, IndexError, OverflowError, OSError, AttributeError):
        return None  # a malformed header: back off instead
    if not math.isfinite(delay):
        return None
    return min(max(delay, 0.0), _RETRY_AFTER_CAP)


@functools.lru_cache(maxsize=256)
def json_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """A reply model's JSON schema, built once per model (pydantic takes ~1 ms a time)."""
    return schema.model_json_schema()


def _response_format(mode: str, schema: type[BaseModel]) -> dict[str, Any] | None:
    if mode == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": schema.__name__, "schema": json_schema(schema)},
        }
    if mode == "json_object":
        return {"type": "json_object"}
    return None


def _make_client(gen: GenerationConfig, timeout: float) -> Any:
    """The client for a generation config: the official SDK for OpenAI and Azure (no retries of
    its own: the judge retries), litellm for any other provider."""
    if gen.provider not in SDK_PROVIDERS:
        return _LiteLLMClient(gen)
    return sdk_client(gen, timeout, max_retries=0)


def sdk_client(config: GenerationConfig | EmbeddingConfig, timeout: float, max_retries: int) -> Any:
    """The official SDK's async client for an OpenAI or Azure config (imported here: the SDK
    takes a second to load)."""
    if config.provider == "azure":
        from openai import AsyncAzureOpenAI

        return AsyncAzureOpenAI(
            api_key=config.api_key,
            azure_endpoint=config.base_url,  # type: ignore[arg-type]  # the config requires it
            api_version=config.api_version,
            timeout=timeout,
            max_retries=max_retries,
        )
    from openai import AsyncOpenAI

    return AsyncOpenAI(
        api_key=config.api_key or "not-needed",
        base_url=config.base_url,
        timeout=timeout,
        max_retries=max_retries,
    )


class _LiteLLMClient:
    """Adapter with the SDK's ``chat.completions.create`` shape over ``litellm.acompletion``
    (optional extra; its exceptions derive from the openai SDK's)."""

    def __init__(self, gen: GenerationConfig) -> None:
        try:
            import litellm
        except ImportError:
            raise JudgeUnavailable(
                f"provider {gen.provider!r} goes through litellm, which is not installed: "
                "pip install 'qa-eval[litellm]' (or use provider openai with the base_url of an "
                "OpenAI-compatible server)"
            ) from None
        self.chat = self
        self.completions = self
        self._litellm = litellm
        self._gen = gen

    async def create(self, **kwargs: Any) -> Any:
        """``litellm.acompletion`` with the model as ``provider/model``."""
        kwargs["model"] = f"{self._gen.provider}/{self._gen.model}"
        kwargs.update(kwargs.pop("extra_body", None) or {})
        if self._gen.base_url:
            kwargs["api_base"] = self._gen.base_url
        if self._gen.api_key:
            kwargs["api_key"] = self._gen.api_key
        return await self._litellm.acompletion(drop_params=True, **kwargs)


class Judge:
    """Asks one judge model for validated JSON replies; shared by every metric of a run."""

    def __init__(
        self,
        config: EvalConfig,
        *,
        cache: ReplyCache | None = None,
        max_cost: float | None = None,
        dry_run: bool = False,
        client: Any = None,
        sleep: Callable[[float], Any] = asyncio.sleep,
    ) -> None:
        if config.generation is None:
            raise JudgeUnavailable("no judge is configured")
        self.config = config
        self.gen = config.generation
        self.cache = cache
        self.max_cost = max_cost
        self.dry_run = dry_run
        self.price = price_of(self.gen.model, config.prices)
        if max_cost is not None and self.price is None:
            raise JudgeUnavailable(
                f"--max-cost needs the price of {self.gen.model!r}: add it under llm.prices"
            )
        self._client = client
        self._sleep = sleep
        self._semaphore: asyncio.Semaphore | None = None
        self.mode = MODES[0]
        self.usage: dict[str, Usage] = {}
        self.total = Usage(cost_known=self.price is not None)
        self.plan = _Plan()
        self.in_flight = 0
        self.peak_in_flight = 0
        self._fatal: JudgeUnavailable | None = None
        self._in_flight_asks: dict[str, asyncio.Future[Verdict[Any]]] = {}
        self.batch: Any = None
        """A ``batch.Outbox`` while a ``--batch`` run plans or completes: it serves replies
        that came from a batch, and records (or leaves to a synchronous call) the others."""
        if dry_run and cache is not None:
            cache.stop_writing()  # a dry run writes nothing, not even embeddings

    def slot(self) -> asyncio.Semaphore:
        """The run's concurrency bound, for other calls to the same service (embeddings)."""
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.config.concurrency)
        return self._semaphore

    @property
    def client(self) -> Any:
        """The SDK client, made on first use."""
        if self._client is None:
            self._client = _make_client(self.gen, self.config.timeout)
        return self._client

    def _count(self, usage: Usage, counter: str) -> None:
        """Add one to a counter (cached, retries, failures) of a metric's usage and the total."""
        for u in (usage, self.total):
            setattr(u, counter, getattr(u, counter) + 1)

    def _usage(self, metric: str) -> Usage:
        if metric not in self.usage:
            self.usage[metric] = Usage(cost_known=self.price is not None)
        return self.usage[metric]

    def request(self, messages: list[dict[str, str]], schema: type[BaseModel]) -> dict[str, Any]:
        """The canonical request a cache key is made from (no API key, no response mode; the
        repeat index when above 0)."""
        repeat = REPEAT.get()
        return {
            "provider": self.gen.provider,
            "base_url": public_url(self.gen.base_url),
            "model": self.gen.model,
            "temperature": self.gen.temperature,
            "max_tokens": self.gen.max_tokens,
            **({"extra": dict(self.gen.extra)} if self.gen.extra else {}),
            "messages": messages,
            "schema": json_schema(schema),
            **({"repeat": repeat} if repeat else {}),
        }

    def body(
        self, messages: list[dict[str, str]], schema: type[BaseModel], mode: str | None = None
    ) -> dict[str, Any]:
        """The keyword arguments of the chat completion call for ``messages`` in ``mode``
        (default: the run's current mode); a batch sends the same body."""
        kwargs: dict[str, Any] = {
            "model": self.gen.model,
            "messages": messages,
            "temperature": self.gen.temperature,
        }
        if self.gen.max_tokens:
            kwargs["max_tokens"] = self.gen.max_tokens
        if self.gen.extra:  # seed, top_p, ...: into the request body as they are
            kwargs["extra_body"] = dict(self.gen.extra)
        response_format = _response_format(mode or self.mode, schema)
        if response_format is not None:
            kwargs["response_format"] = response_format
        return kwargs

    async def ask(self, metric: str, messages: list[dict[str, str]], schema: type[T]) -> Verdict[T]:
        """A validated reply of ``schema`` to ``messages``, from the cache or the judge.

        Identical requests in flight at the same time share one call."""
        if self._fatal is not None:
            raise self._fatal
        key = request_key(self.request(messages, schema))
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
                    cost = self.reply_cost(hit)
                    return Verdict(value, hit.prompt_tokens, hit.completion_tokens, cost, True)
        if self.dry_run:
            self._plan(metric, messages, schema)
            raise DryRunSkip()
        shared = self._in_flight_asks.get(key)
        if shared is not None:
            verdict = await asyncio.shield(shared)
            self._count(usage, "cached")
            return Verdict(
                verdict.value, verdict.prompt_tokens, verdict.completion_tokens, verdict.cost, True
            )
        future: asyncio.Future[Verdict[Any]] = asyncio.get_running_loop().create_future()
        self._in_flight_asks[key] = future
        try:
            verdict = await self._ask_judge_batched(metric, key, messages, schema)
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

    def reply_cost(self, reply: CachedReply) -> float | None:
        """What a stored reply cost: its batch-served tokens at batch rates, the rest at
        standard rates; ``None`` when the price is unknown."""
        bp, bc = reply.batch_prompt_tokens, reply.batch_completion_tokens
        standard = usd(self.price, reply.prompt_tokens - bp, reply.completion_tokens - bc)
        if standard is None or not (bp or bc):
            return standard
        return standard + (usd(self.price, bp, bc, batch=True) or 0.0)

    async def _ask_judge_batched(
        self, metric: str, key: str, messages: list[dict[str, str]], schema: type[T]
    ) -> Verdict[T]:
        """:meth:`_ask_judge`, noting which of its tokens a batch served: they are stored with
        the reply and priced at batch rates."""
        if self.batch is None:
            return await self._ask_judge(metric, key, messages, schema)
        batched = [0, 0]
        token = _BATCHED.set(batched)
        try:
            verdict = await self._ask_judge(metric, key, messages, schema)
        finally:
            _BATCHED.reset(token)
        if not any(batched):
            return verdict
        reply = CachedReply("", verdict.prompt_tokens, verdict.completion_tokens, *batched)
        if self.cache is not None:
            self.cache.put_batch_tokens(key, *batched)
        return Verdict(
            verdict.value,
            verdict.prompt_tokens,
            verdict.completion_tokens,
            self.reply_cost(reply),
            False,
        )

    async def _ask_judge(
        self, metric: str, key: str, messages: list[dict[str, str]], schema: type[T]
    ) -> Verdict[T]:
        usage = self._usage(metric)
        content, prompt_tokens, completion_tokens = await self._call(metric, messages, schema)
        try:
            value = parse_reply(content, schema)
        except (ValueError, ValidationError) as first:
            value = None
            problem = _short(first)
            retry = [
                *messages,
                {"role": "assistant", "content": content},
                {
                    "role": "user",
                    "content": f"That reply could not be used: {problem}. Reply again with only "
                    "the JSON object, with every field the schema requires.",
                },
            ]
            # The re-ask is asked again while it brings back no JSON at all (a garbled reply is
            # a fault, like a 500); JSON that breaks the schema twice is the metric's error.
            attempts = 1
            while True:
                content, more_prompt, more_completion = await self._call(metric, retry, schema)
                prompt_tokens += more_prompt
                completion_tokens += more_completion
                attempts += 1
                try:
                    data = extract_json(content)
                except ValueError as second:
                    if attempts < self.config.max_attempts:
                        self._count(usage, "retries")
                        continue
                    failure: Exception = second
                    break
                try:
                    value = schema.model_validate(writable(data))
                    break
                except (ValueError, ValidationError) as second:
                    failure = second
                    break
            if value is None:
                self._count(usage, "failures")
                raise JudgeError(f"invalid judge reply, twice: {_short(failure)}") from None
        if self.cache is not None:
            self.cache.put(
                key, self.gen.model, CachedReply(content, prompt_tokens, completion_tokens)
            )
        assert value is not None  # the re-ask above either validated a reply or raised
        cost = usd(self.price, prompt_tokens, completion_tokens)
        return Verdict(value, prompt_tokens, completion_tokens, cost, False)

    def _plan(self, metric: str, messages: list[dict[str, str]], schema: type[BaseModel]) -> None:
        text = sum(len(m["content"]) for m in messages) + len(json.dumps(json_schema(schema)))
        plan = self.plan
        plan.calls[metric] = plan.calls.get(metric, 0) + 1
        plan.prompt_tokens[metric] = plan.prompt_tokens.get(metric, 0) + text // 4 + 8
        plan.completion_tokens[metric] = plan.completion_tokens.get(metric, 0) + (
            self.gen.max_tokens or DRY_RUN_COMPLETION_TOKENS
        )

    def _backoff(self, attempt: int) -> float:
        return random.uniform(0, min(_BACKOFF_CAP, self.config.retry_base * 2**attempt))

    async def _call(
        self, metric: str, messages: list[dict[str, str]], schema: type[BaseModel]
    ) -> tuple[str, int, int]:
        """One successful completion (with retries); its text and tokens, counted and priced."""
        import openai

        if self.batch is not None:  # a --batch run: a batch's reply, or one recorded for a batch
            served = self.batch.serve(
                request_key(self.request(messages, schema)), self.body(messages, schema)
            )
            if served is not None:
                content, prompt_tokens, completion_tokens = served
                return self._account(metric, content, prompt_tokens, completion_tokens, batch=True)
        semaphore = self.slot()
        usage = self._usage(metric)
        attempt = 0
        while True:
            delay: float | None = None
            async with semaphore:
                # Checked, and the mode read, once this call has its slot: asks that waited for
                # one must see a 401, a spent budget or a downgrade that happened meanwhile.
                if self._fatal is not None:
                    raise self._fatal
                if self.max_cost is not None and self.total.cost >= self.max_cost:
                    raise BudgetExceeded()
                mode = self.mode
                kwargs = self.body(messages, schema, mode)
                self.in_flight += 1
                self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
                try:
                    reply = await self.client.chat.completions.create(
                        **kwargs, timeout=self.config.timeout
                    )
                    content, prompt_tokens, completion_tokens = _completion(reply)
                except openai.RateLimitError as e:
                    delay = _retry_after(getattr(e.response, "headers", None))
                    if delay is None:
                        delay = self._backoff(attempt)
                    failure = f"429 rate limited: {_message(e)}"
                except openai.APIStatusError as e:
                    status = e.status_code
                    text = _message(e).lower()
                    about_format = any(w in text for w in _SCHEMA_WORDS)
                    if mode != "text" and (
                        status in (400, 422) or (status >= 500 and about_format)
                    ):
                        self._downgrade(mode)
                        continue
                    if status in (401, 403, 404):
                        self._fatal = JudgeUnavailable(
                            f"the judge endpoint refused the call ({status}): {_message(e)}"
                        )
                        raise self._fatal from None
                    if status < 500 and status not in (408, 409):
                        self._count(usage, "failures")
                        raise JudgeError(f"judge call failed ({status}): {_message(e)}") from None
                    failure = f"{status} from the judge: {_message(e)}"
                except (openai.APITimeoutError, openai.APIConnectionError) as e:
                    failure = f"{type(e).__name__}: {e}{_cause(e)}"
                except _ReplyFault as e:
                    failure = f"unusable reply: {e}"
                except (openai.APIError, ValueError, RecursionError, OSError, EOFError) as e:
                    # A body that is not JSON (a proxy's HTML page, a cut or garbled body):
                    # the SDK raises the parser's error; a fault like a 500.
                    failure = f"unreadable reply: {type(e).__name__}: {_clip(str(e))}"
                except Exception as e:  # any other client failure (litellm's, say): a fault too
                    failure = f"the call failed: {type(e).__name__}: {_clip(str(e))}"
                else:
                    return self._account(metric, content, prompt_tokens, completion_tokens)
                finally:
                    self.in_flight -= 1
            attempt += 1
            self._count(usage, "retries")
            if attempt >= self.config.max_attempts:
                self._count(usage, "failures")
                raise JudgeError(f"gave up after {attempt} attempts; last: {failure}")
            await self._sleep(delay if delay is not None else self._backoff(attempt))

    def _downgrade(self, mode: str) -> None:
        """Ask with the next response mode from now on (only ever downwards)."""
        following = MODES[min(MODES.index(mode) + 1, len(MODES) - 1)]
        if MODES.index(following) > MODES.index(self.mode):
            self.mode = following

    def _account(
        self,
        metric: str,
        content: str,
        prompt_tokens: int,
        completion_tokens: int,
        batch: bool = False,
    ) -> tuple[str, int, int]:
        cost = usd(self.price, prompt_tokens, completion_tokens, batch=batch) or 0.0
        batched = _BATCHED.get() if batch else None
        if batched is not None:
            batched[0] += prompt_tokens
            batched[1] += completion_tokens
        for u in (self._usage(metric), self.total):
            u.calls += 1
            u.prompt_tokens += prompt_tokens
            u.completion_tokens += completion_tokens
            u.cost += cost
        return content, prompt_tokens, completion_tokens

    def signature(self) -> dict[str, Any]:
        """The judge's part of a run signature."""
        return {
            "model": self.gen.model,
            "provider": self.gen.provider,
            "temperature": self.gen.temperature,
            "max_tokens": self.gen.max_tokens,
            "base_url": public_url(self.gen.base_url),
            "response_mode": self.mode,
            **({"extra": dict(self.gen.extra)} if self.gen.extra else {}),
        }


def _completion(reply: Any) -> tuple[str, int, int]:
    """The text and token counts of a chat completion; ``_ReplyFault`` when the reply is not
    one (an HTML page the SDK returned as text, JSON of another shape, absurd usage)."""
    choices = getattr(reply, "choices", None)
    if not isinstance(choices, list) or not choices:
        kind = type(reply).__name__ if not isinstance(reply, str) else "text, not JSON"
        raise _ReplyFault(f"not a chat completion (no choices; the body was {kind})")
    message = getattr(choices[0], "message", None)
    if message is None:
        raise _ReplyFault("not a chat completion (its choice has no message)")
    content = getattr(message, "content", None)
    if content is None:
        content = ""
    if isinstance(content, list):  # content parts, as some servers send them: their text
        texts = [
            p.get("text") if isinstance(p, dict) else getattr(p, "text", None) for p in content
        ]
        if all(isinstance(t, str) for t in texts):
            content = "".join(texts)  # type: ignore[arg-type]
    if not isinstance(content, str):
        raise _ReplyFault(f"the message content is a {type(content).__name__}, not text")
    if _SURROGATE.search(content):  # not storable as UTF-8 (the cache, the results)
        content = _SURROGATE.sub("\ufffd", content)
    usage = getattr(reply, "usage", None)
    return content, _token_count(usage, "prompt_tokens"), _token_count(usage, "completion_tokens")


def _token_count(usage: Any, name: str) -> int:
    value = getattr(usage, name, None) if usage is not None else None
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _ReplyFault(f"usage.{name} is not a number")
    if not (math.isfinite(value) and 0 <= value <= _MAX_TOKENS):
        raise _ReplyFault(f"usage.{name} is not a token count")
    return int(value)


def _cause(e: BaseException) -> str:
    cause = e.__cause__ or e.__context__
    if cause is None:
        return ""
    return f" ({type(cause).__name__}: {_clip(str(cause), 200)})"


def _clip(text: str, limit: int = 300) -> str:
    text = redact(text)
    return text if len(text) <= limit else text[:limit] + "..."


def _message(e: Exception) -> str:
    body = getattr(e, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return _clip(str(inner["message"]))
        if isinstance(inner, str):
            return _clip(inner)
    return _clip(str(getattr(e, "message", e)))


def _short(e: Exception) -> str:
    if isinstance(e, ValidationError):
        first = e.errors()[0]
        where = ".".join(_label(p) for p in first.get("loc", ())) or "reply"
        return _clip(f"{where}: {first.get('msg')} ({e.error_count()} problem(s))")
    return _clip(str(e))
