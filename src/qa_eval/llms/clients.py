"""A caller's own OpenAI SDK client, as the judge and the embeddings of the per-sample API call it.

- ``AsyncOpenAI`` / ``AsyncAzureOpenAI`` (or any object whose ``chat.completions.create`` is a
  coroutine function) is used as it is, but with its own retries off (``max_retries=0``): the
  judge retries, and the two would multiply. Each event loop that uses it (``score()`` runs a loop
  per call) gets a copy with an HTTP connection pool of its own, since an ``httpx`` pool cannot be
  shared between loops (a client built with a custom ``http_client`` keeps it: sharing it across
  loops is then the caller's choice).
- ``OpenAI`` / ``AzureOpenAI`` (synchronous) is called in a worker thread (``asyncio.to_thread``),
  so its calls never block the event loop.
- Anything else is refused with one line (:class:`UnusableClient`) when the handle is made, i.e.
  when ``llm_factory`` or ``embedding_factory`` is called, never at the first call.

What the judge keeps of a client for its cache key and signature is its provider (``azure`` for
Azure clients) and its base URL without credentials; its API key is never read.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import weakref
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from ..errors import SetupError
from ..redact import public_url

__all__ = ["ClientHandle", "UnusableClient"]


class UnusableClient(SetupError):
    """A client the per-sample API cannot call (a ``ValueError`` too, as ragas raises)."""


class _Threaded:
    """A synchronous ``create`` method, awaited in a worker thread."""

    def __init__(self, method: Callable[..., Any]) -> None:
        self._method = method

    async def create(self, **kwargs: Any) -> Any:
        """The synchronous call, off the event loop."""
        return await asyncio.to_thread(self._method, **kwargs)


def _threaded(client: Any) -> Any:
    """An async view of a synchronous SDK client: its chat completions and embeddings."""
    return SimpleNamespace(
        chat=SimpleNamespace(completions=_Threaded(client.chat.completions.create)),
        embeddings=_Threaded(client.embeddings.create),
    )


def _kind(client: Any) -> str:
    """``async`` or ``sync``; :class:`UnusableClient` for anything else."""
    try:
        import openai
    except ImportError:  # without the SDK only a duck-typed async client can be used
        openai = None  # type: ignore[assignment]
    if openai is not None and isinstance(client, openai.AsyncOpenAI):
        return "async"
    if openai is not None and isinstance(client, openai.OpenAI):
        return "sync"
    create = getattr(getattr(getattr(client, "chat", None), "completions", None), "create", None)
    if create is not None and inspect.iscoroutinefunction(create):
        return "async"
    raise UnusableClient(
        f"cannot use a client of type {type(client).__name__}: give an openai AsyncOpenAI, "
        "AsyncAzureOpenAI, OpenAI or AzureOpenAI client (for any OpenAI-compatible server, "
        "through its base_url), or no client to use qa-eval's own judge"
    )


def _default_pool(client: Any) -> bool:
    """Whether an async SDK client uses the SDK's default HTTP client (then each loop gets a
    pool of its own); a custom one (a proxy, a transport) is the caller's to share."""
    try:
        import openai
    except ImportError:
        return False
    pool = getattr(client, "_client", None)
    return isinstance(client, openai.AsyncOpenAI) and isinstance(
        pool, openai.DefaultAsyncHttpxClient
    )


def _is_sdk(client: Any) -> bool:
    try:
        import openai
    except ImportError:
        return False
    return isinstance(client, (openai.AsyncOpenAI, openai.OpenAI))


class ClientHandle:
    """A caller's client checked once, and the view of it each event loop calls."""

    def __init__(self, client: Any) -> None:
        self.kind = _kind(client)
        self.provider = "azure" if "Azure" in type(client).__name__ else "openai"
        base = getattr(client, "base_url", None)
        self.base_url: str | None = public_url(str(base).rstrip("/")) if base is not None else None
        self._client = client
        self._lock = threading.Lock()
        self._views: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
        self._first: Any = None

    def view(self) -> Any:
        """The client as the running event loop calls it (see the module docstring)."""
        if self.kind == "sync":
            with self._lock:
                if self._first is None:
                    self._first = _threaded(self._quiet(self._client))
                return self._first
        loop = asyncio.get_running_loop()
        with self._lock:
            view = self._views.get(loop)
            if view is None:
                view = self._quiet(self._client, own_pool=_default_pool(self._client))
                self._views[loop] = view
            return view

    @staticmethod
    def _quiet(client: Any, own_pool: bool = False) -> Any:
        """The client with its own retries off (and its own connection pool when asked)."""
        if not _is_sdk(client):
            return client
        if own_pool:
            import openai

            pool = openai.DefaultAsyncHttpxClient(timeout=client.timeout)
            return client.with_options(max_retries=0, http_client=pool)
        return client.with_options(max_retries=0)
