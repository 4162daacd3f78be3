"""The clients of model endpoints: the official OpenAI SDK's for ``openai`` and ``azure`` (for the
judge's calls to ``openai``, the light client that sends the SDK's requests without importing it,
``light.client``), an
adapter over litellm for any other provider (an optional extra). Shared by the judge and the
embedders; a client is made on first use, never when a config is loaded.
"""

from __future__ import annotations

from typing import Any

from ..errors import JudgeUnavailable
from .settings import SDK_PROVIDERS, EmbeddingConfig, GenerationConfig

__all__ = ["LiteLLMClient", "make_client", "sdk_client"]


def make_client(gen: GenerationConfig, timeout: float) -> Any:
    """The client for a generation config (no retries of its own: the judge retries): for OpenAI,
    the light client that sends what the official SDK sends without importing it
    (``light.client``) when it can, else the SDK; the SDK for Azure, litellm for any other
    provider."""
    if gen.provider not in SDK_PROVIDERS:
        return LiteLLMClient(gen)
    from .light.client import light_client

    light = light_client(gen, timeout)
    if light is not None:
        return light
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


class LiteLLMClient:
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
