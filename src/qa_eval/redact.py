"""Keeping API keys out of everything qa-eval writes or prints.

Two layers:

- :func:`public_url` strips credentials from an endpoint URL (``user:KEY@host``, the query string,
  the fragment) before the URL goes into a signature, a cache key or a message: scheme, host, port
  and path are kept.
- :func:`redact` replaces every known secret in a text by ``[redacted]``: the API keys of every
  endpoint config made in this process (registered by the config classes), the keys in the
  environment (``OPENAI_API_KEY``, ``AZURE_OPENAI_API_KEY``), credentials found in configured URLs,
  and values that look like credentials wherever they appear: ``Authorization: Bearer ...``,
  ``api-key: ...``, ``?api-key=``/``?key=``/``?token=`` query values, ``user:password@`` in URLs and
  OpenAI-style ``sk-...`` keys. The judge redacts its error messages at the source; the command
  line and the report redact what they print and write as a last line of defence.

A registered secret shorter than 8 characters is not redacted as a plain string (a placeholder key
such as ``x`` would otherwise blank out every ``x``); the patterns above still apply.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

__all__ = [
    "MIN_SECRET_LENGTH",
    "REDACTED",
    "known_secrets",
    "public_url",
    "redact",
    "redact_data",
    "register_secret",
    "register_url",
]

REDACTED = "[redacted]"
MIN_SECRET_LENGTH = 8
ENV_KEYS = ("OPENAI_API_KEY", "AZURE_OPENAI_API_KEY")
"""Environment variables whose values are keys wherever they appear."""

_lock = threading.Lock()
_secrets: set[str] = set()

_CREDENTIAL_PARAMS = frozenset(
    {
        "api-key",
        "api_key",
        "apikey",
        "key",
        "token",
        "access_token",
        "auth",
        "sig",
        "signature",
        "password",
        "secret",
        "code",
    }
)
_PATTERNS: tuple[tuple[re.Pattern[str], Any], ...] = (
    # Authorization: Bearer X / Basic X / X (also as a JSON or Python mapping entry)
    (
        re.compile(
            r"(?i)(\bauthorization[\"']?\s*[:=]\s*[\"']?)(?:(bearer|basic|token)\s+)?"
            r"(?!\[redacted\])(?!(?:bearer|basic|token)\s)[^\s\"',;}]+"
        ),
        lambda m: f"{m.group(1)}{m.group(2) + ' ' if m.group(2) else ''}{REDACTED}",
    ),
    (re.compile(r"(?i)\b(bearer)\s+(?!\[redacted\])[A-Za-z0-9._~+/=-]{6,}"), rf"\1 {REDACTED}"),
    # api-key: X, x-api-key=X, "api_key": "X"
    (
        re.compile(
            r"(?i)(\b(?:x-)?api[-_]?key[\"']?\s*[:=]\s*[\"']?)(?!\[redacted\])[^\s\"',;&}]{4,}"
        ),
        rf"\1{REDACTED}",
    ),
    # ?api-key=X&token=Y in URLs
    (
        re.compile(
            r"(?i)([?&;](?:" + "|".join(re.escape(p) for p in sorted(_CREDENTIAL_PARAMS)) + r")=)"
            r"(?!\[redacted\])[^&#\s\"'<>]+"
        ),
        rf"\1{REDACTED}",
    ),
    # scheme://user:password@host
    (
        re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)(?!\[redacted\]@)[^/\s@\"'<>]+@"),
        rf"\1{REDACTED}@",
    ),
    # OpenAI-style keys: sk-..., sk-proj-...
    (re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"), REDACTED),
)


SECRET_MARKERS = (
    "authorization",
    "bearer",
    "api-key",
    "api_key",
    "apikey",
    "sk-",
    "@",
    *(f"{name}=" for name in sorted(_CREDENTIAL_PARAMS)),
)
"""Lower-case text one of the patterns above needs: a text without any is not scanned."""
_WINDOW = 512
_LARGE = 1 << 16
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def register_secret(value: str | None) -> None:
    """Remember a secret (an API key) so that :func:`redact` removes it from any text."""
    if isinstance(value, str) and value.strip():
        with _lock:
            _secrets.add(value.strip())


def register_url(url: str | None) -> None:
    """Remember the credentials inside an endpoint URL (user info, credential query values)."""
    if not isinstance(url, str) or not url:
        return
    try:
        parts = urlsplit(url)
    except ValueError:
        return
    if parts.password:
        register_secret(parts.password)
    if parts.username and parts.password is None:
        register_secret(parts.username)  # https://KEY@host: the key is the user name
    for name, value in parse_qsl(parts.query, keep_blank_values=False):
        if name.lower() in _CREDENTIAL_PARAMS:
            register_secret(value)


def known_secrets() -> list[str]:
    """The secrets redacted as plain strings (registered and from the environment), longest
    first, each at least :data:`MIN_SECRET_LENGTH` characters."""
    with _lock:
        found = set(_secrets)
    for name in ENV_KEYS:
        value = os.environ.get(name)
        if value and value.strip():
            found.add(value.strip())
    return sorted((s for s in found if len(s) >= MIN_SECRET_LENGTH), key=len, reverse=True)


def redact(text: str) -> str:
    """``text`` with every known secret and credential-looking value replaced by
    ``[redacted]``. A long text (a report page) is scanned by the patterns only around the
    places that could match."""
    if not isinstance(text, str) or not text:
        return text
    for secret in known_secrets():
        if secret in text:
            text = text.replace(secret, REDACTED)
    lower = text.lower()
    if len(lower) != len(text):  # a few characters lower-case to two: keep positions
        lower = text.translate(_ASCII_LOWER)
    if len(text) <= _LARGE:
        return _patterns(text) if any(lit in lower for lit in SECRET_MARKERS) else text
    spans: list[tuple[int, int]] = []
    for literal in SECRET_MARKERS:
        at = lower.find(literal)
        while at != -1:
            spans.append((max(0, at - _WINDOW), at + len(literal) + _WINDOW))
            at = lower.find(literal, at + 1)
    if not spans:
        return text
    spans.sort()
    merged = [spans[0]]
    for start, end in spans[1:]:
        if start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    out, position = [], 0
    for start, end in merged:
        out.append(text[position:start])
        out.append(_patterns(text[start:end]))
        position = end
    out.append(text[position:])
    return "".join(out)


def _patterns(text: str) -> str:
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def redact_data(value: Any) -> Any:
    """A copy of plain data (mappings, lists, strings) with every string redacted; other values
    as they are. Data with nothing to redact is returned as it is (not copied)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        items = [(redact_data(k), redact_data(v)) for k, v in value.items()]
        if all(a is k and b is v for (a, b), (k, v) in zip(items, value.items())):
            return value
        return dict(items)
    if isinstance(value, (list, tuple)):
        changed = [redact_data(v) for v in value]
        if all(a is b for a, b in zip(changed, value)):
            return value
        return type(value)(changed) if isinstance(value, tuple) else changed
    return value


def public_url(url: str | None) -> str | None:
    """An endpoint URL without credentials: user info, query string and fragment are dropped
    (scheme, host, port and path kept). A URL without any of them is returned unchanged."""
    if not isinstance(url, str) or not url:
        return url
    try:
        parts = urlsplit(url)
        host = parts.hostname
        port = parts.port
    except ValueError:
        return redact(url)  # not a URL we can take apart: at least no known secret in it
    if "@" not in parts.netloc and not parts.query and not parts.fragment:
        return url
    netloc = host or ""
    if ":" in netloc:  # an IPv6 address
        netloc = f"[{netloc}]"
    if port is not None:
        netloc = f"{netloc}:{port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
