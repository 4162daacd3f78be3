"""Parsing step outputs (JSON) once, and the simple comparators: JSON, text, IRI discovery.

JSON outputs (``output_media_type: application/json``) are equal when they are the same JSON value:
objects with the same keys and equal values, arrays element by element, numbers by value
(``1`` equals ``1.0``), and ``true`` never equal to ``1``. Outputs without a JSON media type are
compared as text, exactly. ``iri_discovery`` (graphrag-eval 6.6.1) matches when the reference IRI
is bound (as an IRI) anywhere in the actual step's SPARQL JSON result; for an output that is not
JSON, when the IRI appears in it as a whole token.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

__all__ = ["OutputParseError", "iri_found", "json_equal", "loads"]


class OutputParseError(ValueError):
    """A step output that should be JSON but is not."""


def loads(text: Any) -> Any:
    """Parse JSON text quickly; accepts NaN/Infinity as Python's json module writes them."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as fast_error:
        if not isinstance(text, (str, bytes)):
            raise OutputParseError(f"expected JSON text, got {type(text).__name__}") from None
        try:
            return json.loads(text)
        except (ValueError, RecursionError):
            raise OutputParseError(f"not valid JSON ({fast_error})") from None


def json_equal(a: Any, b: Any) -> bool:
    """Whether two parsed JSON values are equal, keeping booleans apart from numbers."""
    if a != b:  # Python's equality is looser (True == 1), so unequal here is unequal in JSON
        return False
    try:  # the same canonical text: equal (the common case, all in C)
        if orjson.dumps(a, option=orjson.OPT_SORT_KEYS) == orjson.dumps(
            b, option=orjson.OPT_SORT_KEYS
        ):
            return True
    except (TypeError, orjson.JSONEncodeError):
        pass
    return _strict_equal(a, b)  # 1 against 1.0, or a boolean against a number


def _strict_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict):
        return (
            isinstance(b, dict)
            and a.keys() == b.keys()
            and all(_strict_equal(value, b[key]) for key, value in a.items())
        )
    if isinstance(a, list):
        return (
            isinstance(b, list) and len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
        )
    return bool(a == b)


def _uri_bound(result: Any, iri: str) -> bool:
    if not isinstance(result, dict):
        return False
    bindings = (result.get("results") or {}).get("bindings")
    if not isinstance(bindings, list):
        return False
    for binding in bindings:
        if not isinstance(binding, dict):
            continue
        for term in binding.values():
            if isinstance(term, dict) and term.get("type") == "uri" and term.get("value") == iri:
                return True
    return False


def iri_found(iri: str, parsed_output: Any, raw_output: Any) -> bool:
    """Whether ``iri`` is among the IRIs an actual step returned."""
    if parsed_output is not None:
        return _uri_bound(parsed_output, iri)
    if not isinstance(raw_output, str) or not iri:
        return False
    pattern = r"(?<![^\s<\"'(,\[])" + re.escape(iri) + r"(?![^\s>\"'),\]])"
    return re.search(pattern, raw_output) is not None
