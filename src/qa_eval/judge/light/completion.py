"""A chat completion's JSON read as the openai SDK reads it (openai 3.x), for what the judge reads
of it (``replies.read_completion``): the choices, the first one's message and finish reason, and
the usage.

The SDK builds its reply objects without validating them (``construct_type``): a mapping becomes
the model, anything else stays as it came, and a missing or null field is None; only a field
whose type is optional (``usage``, ``prompt_tokens_details``, ``cached_tokens``, the message's
``content``) is first validated by pydantic in lax mode, so the usage counts may come back
coerced (``"12"`` and ``12.0`` as 12) when the whole usage object validates. This module does the
same for those fields, with pydantic models that declare the SDK's usage fields and types.
"""

from __future__ import annotations

import functools
from typing import Any

__all__ = ["ChatCompletion", "read_body"]


class _View:
    """A JSON object whose fields are read as attributes: None when missing or null."""

    __slots__ = ("_data",)

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return self._data.get(name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._data!r})"


class ChatCompletion(_View):
    """The reply; named as the SDK's class, which a fault that is not one names."""

    __slots__ = ()

    @property
    def choices(self) -> Any:
        """The choices: a list of :class:`Choice` (items that are not objects as they came)."""
        value = self._data.get("choices")
        if not isinstance(value, list):
            return value
        return [Choice(item) if isinstance(item, dict) else item for item in value]

    @property
    def usage(self) -> Any:
        """The usage, validated as the SDK validates it (:func:`_usage`)."""
        return _usage(self._data.get("usage"))


class Choice(_View):
    """One choice."""

    __slots__ = ()

    @property
    def message(self) -> Any:
        """The message (an object as :class:`_View`, anything else as it came)."""
        value = self._data.get("message")
        return _View(value) if isinstance(value, dict) else value


def read_body(data: Any) -> Any:
    """The reply object of a JSON body: :class:`ChatCompletion` for an object, the value itself
    for anything else (a list, a number, null), as the SDK returns it."""
    return ChatCompletion(data) if isinstance(data, dict) else data


@functools.cache
def _models() -> tuple[Any, Any, Any]:
    """Validators of the SDK's ``Optional[CompletionUsage]``, ``Optional[PromptTokensDetails]``
    and ``Optional[int]`` (made at the first reply: pydantic builds them in milliseconds)."""
    from pydantic import BaseModel, ConfigDict, TypeAdapter

    class _Model(BaseModel):
        model_config = ConfigDict(extra="allow")

    class CompletionTokensDetails(_Model):
        accepted_prediction_tokens: int | None = None
        audio_tokens: int | None = None
        reasoning_tokens: int | None = None
        rejected_prediction_tokens: int | None = None
        text_tokens: int | None = None

    class PromptTokensDetails(_Model):
        audio_tokens: int | None = None
        cache_write_tokens: int | None = None
        cached_tokens: int | None = None
        image_tokens: int | None = None
        text_tokens: int | None = None

    class CompletionUsage(_Model):
        completion_tokens: int
        prompt_tokens: int
        total_tokens: int
        completion_tokens_details: CompletionTokensDetails | None = None
        prompt_tokens_details: PromptTokensDetails | None = None

    return (
        TypeAdapter(CompletionUsage | None),
        TypeAdapter(PromptTokensDetails | None),
        TypeAdapter(int | None),
    )


def _validated(adapter: Any, value: Any) -> tuple[bool, Any]:
    try:
        return True, adapter.validate_python(value)
    except Exception:
        return False, value


def _usage(value: Any) -> Any:
    """``usage`` as the SDK reads it: validated whole when it validates; else an object whose
    counts are as they came and whose ``prompt_tokens_details`` is read the same way."""
    if value is None:
        return None
    usage, details, count = _models()
    ok, validated = _validated(usage, value)
    if ok or not isinstance(value, dict):
        return validated
    fields = dict(value)
    inner = fields.get("prompt_tokens_details")
    if inner is not None:
        ok, checked = _validated(details, inner)
        if not ok and isinstance(inner, dict):
            checked = dict(inner)
            cached = checked.get("cached_tokens")
            if cached is not None:
                checked["cached_tokens"] = _validated(count, cached)[1]
            checked = _View(checked)
        fields["prompt_tokens_details"] = checked
    return _View(fields)
