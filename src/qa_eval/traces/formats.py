"""The trace formats by name, each a module of this package loaded when first used, and which
format a file's first record is in (:func:`detect_format`).

A format whose module is not installed on this branch (or whose optional package is missing for
a binary reader) is simply not detected; naming it with ``--format`` is a one-line error.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from ..errors import InputError

__all__ = ["DETECTION_ORDER", "FORMATS", "detect_format", "load"]

FORMATS: dict[str, str] = {
    "openai-chat": "chat",
    "openai-responses": "responses",
    "anthropic": "anthropic",
    "otlp-json": "otlp",
    "otlp-proto": "otlp",
    "langfuse": "langfuse",
    "langsmith": "langsmith",
    "ragas": "ragas",
}
"""Format name (``--format``) -> module of ``qa_eval.traces``."""

DETECTION_ORDER = (
    "otlp-json",
    "langfuse",
    "langsmith",
    "ragas",
    "openai-responses",
    "anthropic",
    "openai-chat",
)
"""The text formats tried on a first record, the most specific marks first (a plain list of
chat messages last: Anthropic and Responses traces may look like one)."""

_LOADED: dict[str, ModuleType | None] = {}


def load(name: str, required: bool = True) -> ModuleType | None:
    """The module reading format ``name``; None (or, when ``required``, an ``InputError``) when
    the format is unknown or its module is not available."""
    module_name = FORMATS.get(name)
    if module_name is None:
        if required:
            known = ", ".join(sorted(FORMATS))
            raise InputError(f"unknown trace format {name!r} (known: {known})")
        return None
    if module_name not in _LOADED:
        try:
            _LOADED[module_name] = importlib.import_module(f"{__package__}.{module_name}")
        except ImportError:
            _LOADED[module_name] = None
    module = _LOADED[module_name]
    if module is None and required:
        raise InputError(f"the trace format {name!r} is not available in this installation")
    return module


def detect_format(record: Any) -> str | None:
    """The name of the text format whose ``detect`` accepts ``record`` (a file's first JSON
    record), or None."""
    for name in DETECTION_ORDER:
        module = load(name, required=False)
        if module is None:
            continue
        try:
            if module.detect(record):
                return name
        except Exception:  # a detector never decides a file's fate by crashing
            continue
    return None
