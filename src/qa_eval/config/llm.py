"""The ``llm`` section of a config: the judge's generation and embedding models, prices,
repeats."""

from __future__ import annotations

import difflib
from typing import Any

import orjson

from ..judge.settings import (
    AZURE_API_VERSION,
    DEFAULT_MODEL,
    EmbeddingConfig,
    GenerationConfig,
)
from .reader import Reader, env

_GENERATION_KEYS = (
    "provider",
    "model",
    "temperature",
    "max_tokens",
    "base_url",
    "api_base",
    "api_key",
    "api_version",
)
_EMBEDDING_KEYS = ("provider", "model", "base_url", "api_base", "api_key", "api_version")


def _extra(r: Reader, known: tuple[str, ...]) -> dict[str, Any]:
    """The keys a block has besides ``known``: passed on to the model call, as graphrag-eval
    does; their values must be plain JSON (they go into each request and its cache key)."""
    extra: dict[str, Any] = {}
    for key, value in r.data.items():
        if key in known:
            continue
        if not isinstance(key, str) or not key.isidentifier():
            raise r.fail(str(key), "must be a parameter name of letters, digits and underscores")
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.8)
        if close:  # a typo of a key qa-eval reads would otherwise be sent to the model
            raise r.fail(key, f"unknown key; did you mean {close[0]!r}?")
        try:
            orjson.dumps(value)
        except TypeError:
            raise r.fail(key, f"must be plain JSON data, not {type(value).__name__}") from None
        extra[key] = value
    return extra


def read_generation(r: Reader) -> GenerationConfig:
    """The judge's generation model from ``llm.generation`` (and the environment)."""
    provider = r.str_("provider", "openai") or "openai"
    base_url = r.str_("base_url") or r.str_("api_base")
    api_version: str | None
    if provider == "azure":
        api_key = r.str_("api_key") or env("AZURE_OPENAI_API_KEY")
        base_url = base_url or env("AZURE_OPENAI_ENDPOINT")
        api_version = r.str_("api_version") or env("OPENAI_API_VERSION") or AZURE_API_VERSION
        if not base_url:
            raise r.fail(
                "base_url", "provider azure needs the endpoint (base_url, or AZURE_OPENAI_ENDPOINT)"
            )
    else:
        api_key = r.str_("api_key") or env("OPENAI_API_KEY")
        base_url = base_url or env("OPENAI_BASE_URL")
        api_version = r.str_("api_version")
    max_tokens = r.integer("max_tokens", None)
    temperature = r.number("temperature", 0.0) or 0.0
    if temperature > 2.0:
        raise r.fail("temperature", f"must be between 0 and 2, not {temperature:g}")
    return GenerationConfig(
        provider=provider,
        model=r.str_("model", DEFAULT_MODEL) or DEFAULT_MODEL,
        temperature=temperature,
        max_tokens=max_tokens,
        base_url=base_url,
        api_key=api_key,
        api_version=api_version,
        extra=_extra(r, _GENERATION_KEYS),
    )


def read_embedding(r: Reader, generation: GenerationConfig | None) -> EmbeddingConfig:
    """The embedding model from ``llm.embedding`` (defaults from ``generation``)."""
    if not r.data:
        return EmbeddingConfig()
    provider = r.str_("provider", "openai") or "openai"
    if not provider.strip():
        raise r.fail("provider", "must not be empty")
    # openai and azure go through the official SDK, offline is the bundled model; any other
    # provider name (ollama, cohere, ...) goes through litellm, as in graphrag-eval.
    if provider == "offline":
        return EmbeddingConfig()
    same = generation if generation and generation.provider == provider else None
    api_key = r.str_("api_key") or (same.api_key if same else None)
    if not api_key:
        api_key = env("AZURE_OPENAI_API_KEY" if provider == "azure" else "OPENAI_API_KEY")
    api_version = r.str_("api_version") or (same.api_version if same else None)
    if provider == "azure" and not api_version:
        # the Azure client needs one; as for the judge, the environment's or the default
        api_version = env("OPENAI_API_VERSION") or AZURE_API_VERSION
    return EmbeddingConfig(
        provider=provider,
        model=r.str_("model", "text-embedding-3-small") or "text-embedding-3-small",
        base_url=r.str_("base_url") or r.str_("api_base") or (same.base_url if same else None),
        api_key=api_key,
        api_version=api_version,
        extra=_extra(r, _EMBEDDING_KEYS),
    )


_PRICE_KEYS = ("input", "output", "cached_input", "batch_input", "batch_output")


def read_prices(r: Reader) -> dict[str, dict[str, float]]:
    """The prices per model from ``llm.prices``: model -> price key (``input``, ...) -> rate."""
    prices: dict[str, dict[str, float]] = {}
    for model in r.data:
        entry = r.sub(str(model))
        entry.check_keys(_PRICE_KEYS)
        prices[str(model)] = {
            "input": entry.number("input", 0.0) or 0.0,
            "output": entry.number("output", 0.0) or 0.0,
        }
        for key in _PRICE_KEYS[2:]:  # optional rates: cached prompt tokens, batch API
            value = entry.number(key, None)
            if value is not None:
                prices[str(model)][key] = value
    return prices


LLM_KEYS = (
    "generation",
    "embedding",
    "concurrency",
    "timeout",
    "max_attempts",
    "retry_base",
    "prices",
    "relevance_questions",
    "repeats",
)
"""The keys of a config's ``llm`` section."""


MAX_REPEATS = 100
"""The most times a metric may be asked per question (``llm.repeats``)."""


def read_repeats(llm: Reader) -> int:
    """``llm.repeats``: how many times each judged metric is asked per question."""
    repeats = llm.integer("repeats", 1) or 1
    if repeats > MAX_REPEATS:
        raise llm.fail("repeats", f"must be at most {MAX_REPEATS}, not {repeats}")
    return repeats
