"""SHA-256 and BLAKE2b without OpenSSL's start-up.

``import hashlib`` loads OpenSSL and tries every algorithm it offers, a few milliseconds that a
fresh process's first ``run_evaluation`` spent for one SHA-256 of its reference (issue 36). The
interpreter's own implementations (``hashlib``'s fallback, and its BLAKE2b) give the same
digests; ``hashlib`` is used when they are missing.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

__all__ = ["blake2b", "bulk_sha256", "sha256"]

sha256: Callable[..., Any]
"""``hashlib.sha256``'s digests (``sha256(data).hexdigest()``)."""
blake2b: Callable[..., Any]
"""``hashlib.blake2b`` (the same object: hashlib takes it from ``_blake2`` too)."""

try:  # Python 3.12 on: _sha2; 3.11: _sha256 (asked by name: a module not found is a search)
    if sys.version_info >= (3, 12):
        from _sha2 import sha256  # type: ignore[import-not-found,no-redef,unused-ignore]
    else:
        from _sha256 import sha256  # type: ignore[import-not-found,no-redef,unused-ignore]
except ImportError:
    from hashlib import sha256  # type: ignore[no-redef,unused-ignore]


def __getattr__(name: str) -> Any:
    """``blake2b``, imported when first used (the shards' hash: a run without shards loads no
    ``_blake2``)."""
    if name != "blake2b":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        from _blake2 import blake2b
    except ImportError:
        from hashlib import blake2b
    globals()["blake2b"] = blake2b
    return blake2b


def bulk_sha256() -> Callable[..., Any]:
    """``hashlib.sha256`` (OpenSSL's), for hashing megabytes: with the processor's SHA
    instructions it is about four times as fast as the interpreter's own, whose speed its
    ~3 ms start-up repays past about half a megabyte (a reference of ~500 questions)."""
    from hashlib import sha256 as openssl_sha256

    return openssl_sha256
