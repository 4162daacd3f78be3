"""``embedding_factory``: ragas 0.4.3's way of naming an embedding model, over qa-eval's embedders.

``embedding_factory(provider="openai", model=None, run_config=None, client=None,
interface="auto", base_url=None, cache=None, **kwargs)`` returns a :class:`QaEvalEmbeddings`,
which ``AnswerRelevancy`` and ``SemanticSimilarity`` take as their ``embeddings``:

- with ``client`` (``AsyncOpenAI``, ``AsyncAzureOpenAI`` or a synchronous ``OpenAI``, checked as
  ``llm_factory`` checks it): ``client.embeddings.create(model=..., input=[...])``, one request
  for the texts of a question, priced from qa-eval's price table;
- without: qa-eval's embedder of that provider, from the environment (``openai``, ``azure``,
  another provider through litellm) or ``offline`` (the bundled all-MiniLM-L6-v2, no network).

``provider`` may also be ``"openai/text-embedding-3-small"``. ``model`` defaults to
``text-embedding-3-small`` (``all-MiniLM-L6-v2`` offline). ``run_config``, ``interface`` and
``cache`` are accepted for ragas' signature; vectors are not cached by this API (a question's
texts are embedded in one request). A client that cannot be used is refused here, in one line.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Sequence
from typing import Any

from ..errors import SetupError
from ..extras import ragas_face
from ..judge.embeddings import Embedder, make_embedder
from ..judge.prices import price_of, usd
from ..judge.settings import EmbeddingConfig
from ..llms.clients import ClientHandle

__all__ = ["QaEvalEmbeddings", "embedding_factory"]

DEFAULT_MODEL = "text-embedding-3-small"


class QaEvalEmbeddings(Embedder):
    """An embedding model for the per-sample metrics: a caller's client, or qa-eval's embedder
    of a provider (one per event loop that uses it, for the SDK client it makes)."""

    def __init__(
        self, config: EmbeddingConfig, client: ClientHandle | None = None, timeout: float = 60.0
    ) -> None:
        self.config = config
        self.name = f"{config.provider}:{config.model}"
        self.model = config.model
        self.client = client
        self.timeout = timeout
        self.price = price_of(config.model)
        self._lock = threading.Lock()
        self._inner: weakref.WeakKeyDictionary[Any, Embedder] = weakref.WeakKeyDictionary()

    def __repr__(self) -> str:
        return f"QaEvalEmbeddings(provider={self.config.provider!r}, model={self.model!r})"

    async def embed(self, texts: Sequence[str]) -> tuple[list[list[float]], float | None]:
        """The vectors of ``texts`` (one request) and what they cost (``None``: price unknown)."""
        if self.client is None:
            return await self._own().embed(texts)
        reply = await self.client.view().embeddings.create(model=self.model, input=list(texts))
        tokens = getattr(getattr(reply, "usage", None), "prompt_tokens", 0) or 0
        vectors = [d.embedding for d in sorted(reply.data, key=lambda d: d.index)]
        return vectors, usd(self.price, tokens, 0)

    def _own(self) -> Embedder:
        loop = asyncio.get_running_loop()
        with self._lock:
            inner = self._inner.get(loop)
            if inner is None:
                inner = make_embedder(self.config, self.timeout)
                self._inner[loop] = inner
            return inner

    async def aembed_text(self, text: str) -> list[float]:
        """The vector of one text (ragas' name)."""
        return (await self.embed([text]))[0][0]

    async def aembed_texts(self, texts: Sequence[str]) -> list[list[float]]:
        """The vectors of several texts (ragas' name)."""
        return (await self.embed(texts))[0]

    def embed_text(self, text: str) -> list[float]:
        """:meth:`aembed_text` for synchronous code (not inside a running event loop)."""
        return asyncio.run(self.aembed_text(text))

    def embed_texts(self, texts: Sequence[str]) -> list[list[float]]:
        """:meth:`aembed_texts` for synchronous code (not inside a running event loop)."""
        return asyncio.run(self.aembed_texts(texts))


def embedding_factory(
    provider: str = "openai",
    model: str | None = None,
    run_config: Any = None,
    client: Any = None,
    interface: str = "auto",
    base_url: str | None = None,
    cache: Any = None,
    **kwargs: Any,
) -> QaEvalEmbeddings:
    """The embedding model for ``qa_eval.metrics.collections`` (see the module docstring)."""
    if "/" in provider and model is None:
        provider, model = provider.split("/", 1)
    if provider.startswith(("text-embedding", "ada")):  # ragas' legacy form: a model name
        provider, model = "openai", provider
    timeout = float(getattr(run_config, "timeout", 60.0) or 60.0)
    handle = ClientHandle(client) if client is not None else None
    if handle is not None:
        name = model or DEFAULT_MODEL
        config = EmbeddingConfig(provider=handle.provider, model=name, base_url=handle.base_url)
        return QaEvalEmbeddings(config, handle, timeout)
    if provider == "offline":
        return QaEvalEmbeddings(EmbeddingConfig(), None, timeout)
    from ..config import parse_config

    block: dict[str, Any] = {"provider": provider, "model": model or DEFAULT_MODEL, **kwargs}
    if base_url:
        block["base_url"] = base_url
    settings = parse_config({"llm": {"embedding": block}}, "embedding_factory")
    config = settings.embedding
    if config.provider == "openai" and not (config.api_key or config.base_url):
        raise SetupError(
            "embedding_factory has no client and neither OPENAI_API_KEY nor a base_url is set: "
            "give client=AsyncOpenAI(...), set them, or use provider='offline'"
        )
    return QaEvalEmbeddings(config, None, timeout)


# ragas 0.4.3's other names of ``ragas.embeddings.base``: a NotInQaEval saying what to use instead
_WHY = "qa-eval's embeddings come from embedding_factory(provider, model=..., client=...)"
_RAGAS_ONLY = dict.fromkeys(
    [
        "BaseRagasEmbedding",
        "BaseRagasEmbeddings",
        "DEFAULT_MODEL_NAME",
        "HuggingfaceEmbeddings",
        "LangchainEmbeddingsWrapper",
        "LlamaIndexEmbeddingsWrapper",
        "modern_embedding_factory",
    ],
    _WHY,
)
__getattr__, _ = ragas_face(__name__, {}, _RAGAS_ONLY)
