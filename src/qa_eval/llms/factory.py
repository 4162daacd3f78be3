"""``llm_factory``: ragas 0.4.3's way of naming the judge of a metric, over qa-eval's judge.

``llm_factory(model, provider="openai", client=None, adapter="auto", cache=True, **kwargs)``
returns a :class:`QaEvalLLM`, which the metrics of ``qa_eval.metrics.collections`` take as their
``llm``. Every call goes through ``qa_eval.judge.Judge``, as in a full run: bounded concurrency,
retries with back-off (429 honours ``Retry-After``), structured output with fallbacks, re-asks of
unusable replies, replies sized to their schema (no fixed 1,024-token cap), tokens and cost.

- ``client``: an ``AsyncOpenAI`` / ``AsyncAzureOpenAI`` client, a synchronous ``OpenAI`` client
  (called in a worker thread), or ``None`` for qa-eval's own client from the environment
  (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``; Azure's variables for ``provider="azure"``; litellm
  for any other provider) or from ``config=`` (a qa-eval config: path, mapping or ``EvalConfig``).
  See ``llms.clients`` for what is kept of a client (never its key).
- ``cache``: on by default (the reply cache of qa-eval's runs, ``$QA_EVAL_CACHE_DIR``); ``False``
  switches it off, a path names another file. Its key holds the provider, the base URL, the model,
  the generation parameters, the messages and the reply schema. (ragas' ``cache`` is off unless a
  backend is given.)
- ``kwargs``: ``temperature`` and ``max_tokens`` (a cap of your own; without it each reply gets a
  budget sized to its schema and prompt), qa-eval's judge settings ``concurrency`` (default 8),
  ``timeout``, ``max_attempts``, ``retry_base`` and ``prices``; any other key (``top_p``,
  ``seed``, ...) is sent with every call, as ``llm.generation`` extra keys are.
- ``system_prompt`` (ragas'): sent as the system message of every call, before qa-eval's own
  fixed instructions (one system message), never as a request-body key; ``llm.system_prompt``.
- ``adapter`` is accepted for ragas' signature and not used (there is one way to call a model).

Whatever cannot work is refused here, in one line (a ``SetupError``: a ``ValueError`` too, as
ragas raises), not at the first call.
"""

from __future__ import annotations

import asyncio
import os
import threading
import weakref
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..config import EvalConfig, as_config, parse_config
from ..errors import SetupError
from .clients import ClientHandle, UnusableClient

if TYPE_CHECKING:
    from ..judge.cache.store import ReplyCache
    from ..judge.calls import Judge

__all__ = ["JUDGE_KEYS", "QaEvalLLM", "llm_factory"]

JUDGE_KEYS = ("concurrency", "timeout", "max_attempts", "retry_base", "prices")
"""``llm_factory`` keywords that set qa-eval's judge (``llm.*`` of a config), not the model call."""


class QaEvalLLM:
    """The judge of the per-sample metrics: settings, a client, a reply cache; one
    ``qa_eval.judge.Judge`` per event loop that uses it (a judge's semaphore and shared in-flight
    asks belong to one loop)."""

    def __init__(
        self,
        config: EvalConfig,
        client: ClientHandle | None = None,
        cache: bool | str | os.PathLike[str] | None = True,
        system_prompt: str | None = None,
    ) -> None:
        if config.generation is None:
            raise SetupError("no judge model is configured")
        self.config = config
        self.system_prompt = system_prompt
        """Sent as the system message of every call (ragas' ``system_prompt``), or None."""
        self.model = config.generation.model
        self.provider = config.generation.provider
        self.client = client
        self.cache_option = True if cache is None else cache
        self._store: ReplyCache | None = None
        self._opened = False
        self._lock = threading.Lock()
        self._judges: weakref.WeakKeyDictionary[Any, Judge] = weakref.WeakKeyDictionary()

    def __repr__(self) -> str:
        return f"QaEvalLLM(model={self.model!r}, provider={self.provider!r})"

    def store(self) -> ReplyCache | None:
        """The reply cache, opened on first use (``None`` when switched off)."""
        with self._lock:
            if not self._opened:
                from ..judge.cache.store import open_cache

                self._store = open_cache(self.cache_option)
                self._opened = True
            return self._store

    def judge(self) -> Judge:
        """The judge of the running event loop (made on its first ask)."""
        from ..judge.calls import Judge

        loop = asyncio.get_running_loop()
        store = self.store()
        with self._lock:
            judge = self._judges.get(loop)
            if judge is None:
                client = self.client.view() if self.client is not None else None
                judge = Judge(
                    self.config, cache=store, client=client, system_prompt=self.system_prompt
                )
                self._judges[loop] = judge
            return judge

    def planner(self) -> Judge:
        """A dry-run judge of these settings: it reads the cache (a handle of its own, written to
        never) and counts the calls it would make."""
        from ..judge.cache.store import open_cache
        from ..judge.calls import Judge

        store = open_cache(self.cache_option) if self.cache_option is not False else None
        return Judge(self.config, cache=store, dry_run=True, system_prompt=self.system_prompt)

    def signature(self) -> dict[str, Any]:
        """The model and how it is asked, without credentials."""
        assert self.config.generation is not None
        return self.config.generation.public()


def _split(kwargs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the judge settings, the generation keys) of ``llm_factory``'s keywords."""
    judge = {k: kwargs.pop(k) for k in JUDGE_KEYS if k in kwargs}
    return judge, kwargs


def llm_factory(
    model: str,
    provider: str = "openai",
    client: Any = None,
    adapter: str = "auto",
    cache: bool | str | os.PathLike[str] | None = True,
    *,
    config: Any = None,
    **kwargs: Any,
) -> QaEvalLLM:
    """The judge for ``qa_eval.metrics.collections`` (see the module docstring)."""
    if not isinstance(model, str) or not model.strip():
        raise SetupError("llm_factory needs a model name")
    handle = ClientHandle(client) if client is not None else None
    judge_keys, generation = _split(dict(kwargs))
    system_prompt = generation.pop("system_prompt", None)  # a message, not a request-body key
    if system_prompt is not None and not isinstance(system_prompt, str):
        raise SetupError(
            f"llm_factory: system_prompt must be str, got {type(system_prompt).__name__}"
        )
    if handle is not None and provider == "openai":
        provider = handle.provider
    block: dict[str, Any] = {"provider": provider, "model": model, **generation}
    if handle is not None:  # the client's URL, for the cache key and signature; never its key
        block["base_url"] = handle.base_url or "https://api.openai.com/v1"
    if config is not None:
        base = as_config(config)
        if base.generation is None:
            raise SetupError("the config given to llm_factory names no judge (llm.generation)")
        own = {"provider": provider, "base_url": block["base_url"]} if handle else {}
        gen = replace(base.generation, model=model, **own)
        settings = replace(base, generation=gen)
    else:
        _check_environment(provider, handle)
        settings = parse_config({"llm": {"generation": block, **judge_keys}}, "llm_factory")
    if handle is not None:
        assert settings.generation is not None
        settings = replace(settings, generation=replace(settings.generation, api_key=None))
    return QaEvalLLM(settings, handle, cache, system_prompt=system_prompt or None)


def _check_environment(provider: str, handle: ClientHandle | None) -> None:
    """Refuse now a judge of our own that could not be called: OpenAI without a key or a URL."""
    if handle is not None or provider != "openai":
        return
    if not (os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL")):
        raise UnusableClient(
            "llm_factory has no client and neither OPENAI_API_KEY nor OPENAI_BASE_URL is set: "
            "give client=AsyncOpenAI(...) or set them"
        )
