"""How a failed judge call is read: how long a 429 asks to wait, whether an error is the
endpoint refusing the response format (not the request), whether the model takes
``max_completion_tokens``, whether a connection was never made, and the short, redacted texts of
errors that go into results and messages (``calls`` decides what to do with each).
"""

from __future__ import annotations

import email.utils
import math
import sys
import time
from typing import Any

from pydantic import ValidationError

from ..redact import redact
from .light import errors as light_errors
from .replies import label

__all__ = [
    "about_format",
    "api_error",
    "cause_of",
    "clip",
    "could_not_connect",
    "message_of",
    "problem_of",
    "refuses_max_tokens",
    "retry_after",
]

_SCHEMA_WORDS = ("schema", "response_format", "grammar", "json_object")


_CONTEXT_WORDS = (
    "context length",
    "context size",
    "context_length",
    "context window",
    "maximum context",
    "exceed_context",
    "too many tokens",
    "reduce the length",
)
"""An error that names the context (``context_length_exceeded``) is not about the format."""


_RETRY_AFTER_CAP = 120.0


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


def retry_after(headers: Any) -> float | None:
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


def api_error(error: BaseException, name: str) -> bool:
    """Whether ``error`` is the SDK error class ``name`` (``RateLimitError``, ``APIStatusError``,
    ``APITimeoutError``, ``APIConnectionError``, ``APIError``): the light client's
    (``light.errors``), or the openai SDK's when it is loaded (an error of the SDK's implies it
    is; the SDK is not imported to tell)."""
    if isinstance(error, getattr(light_errors, name)):
        return True
    sdk = sys.modules.get("openai")
    kind = getattr(sdk, name, None) if sdk is not None else None
    return isinstance(kind, type) and isinstance(error, kind)


def about_format(status: int, message: str, error: Exception) -> bool:
    """Whether an error status is the endpoint refusing the response format (a 400/422, or a
    5xx as llama.cpp's server answers a schema it cannot turn into a grammar), not the request
    otherwise (a context too long, a bad parameter)."""
    if status not in (400, 422) and status < 500:
        return False
    text = message.lower()
    body = getattr(error, "body", None)
    code = str(getattr(error, "code", "") or "")
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            code += f" {inner.get('code') or ''} {inner.get('type') or ''}"
    if any(w in f"{text} {code.lower()}" for w in _CONTEXT_WORDS):
        return False
    return any(w in text for w in _SCHEMA_WORDS)


def refuses_max_tokens(status: int, message: str) -> bool:
    """Whether a 400 says the model takes ``max_completion_tokens`` instead of ``max_tokens``."""
    text = message.lower()
    return (
        status == 400
        and "max_tokens" in text
        and ("max_completion_tokens" in text or "not supported" in text or "unsupported" in text)
    )


def could_not_connect(error: BaseException) -> bool:
    """Whether a connection error failed to connect at all (refused, no route, unknown host),
    rather than breaking a connection that was made."""
    # Matched by class name, not class: openai 1.x and 2.x raise httpx.ConnectError underneath,
    # openai 3.x httpx2.ConnectError, and only one of the two transports is installed.
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError) or type(current).__name__ == "ConnectError":
            return True
        current = current.__cause__ or current.__context__
    return False


def cause_of(e: BaseException) -> str:
    cause = e.__cause__ or e.__context__
    if cause is None:
        return ""
    return f" ({type(cause).__name__}: {clip(str(cause), 200)})"


def clip(text: str, limit: int = 300) -> str:
    text = redact(text)
    return text if len(text) <= limit else text[:limit] + "..."


def message_of(e: Exception) -> str:
    body = getattr(e, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return clip(str(inner["message"]))
        if isinstance(inner, str):
            return clip(inner)
    return clip(str(getattr(e, "message", e)))


def problem_of(e: Exception) -> str:
    if isinstance(e, ValidationError):
        first = e.errors()[0]
        where = ".".join(label(p) for p in first.get("loc", ())) or "reply"
        return clip(f"{where}: {first.get('msg')} ({e.error_count()} problem(s))")
    return clip(str(e))
