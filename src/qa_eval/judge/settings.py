"""Where the models are: the judge's and the embedding model's endpoint settings.

A leaf module (it imports only ``redact`` and ``vocabulary.frozen``): the judge, the client
factories and the embedders read these settings without importing the config loader, which reads
them from YAML and the environment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, field
from typing import Any, Protocol

from ..redact import public_url, register_secret, register_url
from ..vocabulary.frozen import FACTORY, Frozen, frozen

__all__ = [
    "AZURE_API_VERSION",
    "DEFAULT_MODEL",
    "EMBEDDING_PROVIDERS",
    "SDK_PROVIDERS",
    "EmbeddingConfig",
    "GenerationConfig",
    "JudgeSettings",
]

DEFAULT_MODEL = "gpt-4o-mini"
SDK_PROVIDERS = ("openai", "azure")
"""Called with the official SDK; any other provider goes through litellm (an optional extra)."""
AZURE_API_VERSION = "2024-10-21"
EMBEDDING_PROVIDERS = (*SDK_PROVIDERS, "offline")


class _Endpoint(Frozen):
    """A model endpoint whose settings may be shown, all but its key (and any credentials in
    its URL)."""

    api_key: str | None
    base_url: str | None

    def __post_init__(self) -> None:
        # Whatever qa-eval prints or writes later is redacted of this key (see redact.py).
        register_secret(self.api_key)
        register_url(self.base_url)

    def public(self) -> dict[str, Any]:
        """Every setting but the API key; the base URL without user info or query string."""
        data = asdict(self)  # type: ignore[call-overload]
        data.pop("api_key")
        data["base_url"] = public_url(data.get("base_url"))
        return data


@frozen
class GenerationConfig(_Endpoint):
    """Where and how the judge model is called."""

    provider: str = "openai"
    model: str = DEFAULT_MODEL
    temperature: float = 0.0
    max_tokens: int | None = None
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    api_version: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Other ``llm.generation`` keys (``seed``, ``top_p``, ...), sent with every judge call as
    graphrag-eval passes them on."""

    def __init__(
        self,
        provider: str = "openai",
        model: str = DEFAULT_MODEL,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        api_version: str | None = None,
        extra: Mapping[str, Any] = FACTORY,
    ) -> None:
        # The fields in order, as @dataclass would write them (see qa_eval.vocabulary.frozen);
        # into the instance's dictionary: it is frozen to assignment.
        fields = self.__dict__
        fields["provider"] = provider
        fields["model"] = model
        fields["temperature"] = temperature
        fields["max_tokens"] = max_tokens
        fields["base_url"] = base_url
        fields["api_key"] = api_key
        fields["api_version"] = api_version
        fields["extra"] = {} if extra is FACTORY else extra
        self.__post_init__()


@frozen
class EmbeddingConfig(_Endpoint):
    """The embedding model; ``offline`` is the bundled all-MiniLM-L6-v2 (int8 ONNX)."""

    provider: str = "offline"
    model: str = "all-MiniLM-L6-v2"
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    api_version: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Other ``llm.embedding`` keys, passed to the embedding call."""

    def __init__(
        self,
        provider: str = "offline",
        model: str = "all-MiniLM-L6-v2",
        base_url: str | None = None,
        api_key: str | None = None,
        api_version: str | None = None,
        extra: Mapping[str, Any] = FACTORY,
    ) -> None:
        # The fields in order, as @dataclass would write them (see qa_eval.vocabulary.frozen);
        # into the instance's dictionary: it is frozen to assignment.
        fields = self.__dict__
        fields["provider"] = provider
        fields["model"] = model
        fields["base_url"] = base_url
        fields["api_key"] = api_key
        fields["api_version"] = api_version
        fields["extra"] = {} if extra is FACTORY else extra
        self.__post_init__()


class JudgeSettings(Protocol):
    """What the judge reads of a run's configuration (``qa_eval.config.EvalConfig`` is one), so
    the judge needs no config loader: the model, its prices, the bound on concurrent calls, the
    timeout and the retries."""

    @property
    def generation(self) -> GenerationConfig | None:
        """The judge model's endpoint, or ``None`` when no judge is configured."""

    @property
    def prices(self) -> Mapping[str, Mapping[str, float]]:
        """Prices per model that override the maintained ones (USD per million tokens)."""

    @property
    def concurrency(self) -> int:
        """The most calls in flight at once."""

    @property
    def timeout(self) -> float:
        """Seconds one call may take."""

    @property
    def max_attempts(self) -> int:
        """Attempts of one call, the first included."""

    @property
    def retry_base(self) -> float:
        """The first back-off, in seconds, doubled per attempt."""
