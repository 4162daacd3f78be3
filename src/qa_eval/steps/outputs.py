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
from typing import Any

import orjson

__all__ = [
    "OutputParseError",
    "StepArgumentError",
    "iri_found",
    "json_difference",
    "json_equal",
    "loads",
    "shown",
    "text_difference",
]


class OutputParseError(ValueError):
    """A step output that should be JSON but is not."""


class StepArgumentError(ValueError):
    """A step argument that cannot be interpreted (e.g. a relative time with no anchor); raised
    by ``steps.timeseries``, defined here so that the comparisons can catch it without
    importing that module (a run without a time series step never does)."""


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
    results = result.get("results")
    bindings = results.get("bindings") if isinstance(results, dict) else None
    if not isinstance(bindings, list):
        return False
    for binding in bindings:
        if not isinstance(binding, dict):
            continue
        for term in binding.values():
            # The value first: it rules out almost every term with one look-up.
            if isinstance(term, dict) and term.get("value") == iri and term.get("type") == "uri":
                return True
    return False


def iri_found(iri: str, parsed_output: Any, raw_output: Any) -> bool:
    """Whether ``iri`` is among the IRIs an actual step returned."""
    if parsed_output is not None:
        return _uri_bound(parsed_output, iri)
    if not isinstance(raw_output, str) or not iri:
        return False
    return iri_token(raw_output, iri)


_BEFORE_TOKEN = frozenset("<\"'(,[")
_AFTER_TOKEN = frozenset(">\"'),]")


def iri_token(text: str, iri: str) -> bool:
    """Whether ``iri`` (not empty) stands in ``text`` as a whole token: after the start, white
    space or one of ``<"'(,[``, and before the end, white space or one of ``>"'),]``."""
    size = len(iri)
    start = text.find(iri)
    while start != -1:
        end = start + size
        if (start == 0 or text[start - 1] in _BEFORE_TOKEN or text[start - 1].isspace()) and (
            end == len(text) or text[end] in _AFTER_TOKEN or text[end].isspace()
        ):
            return True
        start = text.find(iri, start + 1)
    return False


def iri_excluded(text: str, iri: str, is_json: bool = False) -> bool:
    """Whether ``iri`` (not empty) is surely not found in the output ``text`` whatever it
    parses to, decided without parsing: a text without escapes holds a JSON string value as it
    is, between quotes, so an IRI bound in a JSON result stands there as ``"iri"``; an output
    that is not JSON finds it only as a token. ``is_json``: the text is known to be JSON."""
    if "\\" in text:
        return False  # the value may be written with escapes
    if iri not in text:
        return True
    if ('"' + iri + '"') in text:
        return False
    return is_json or not iri_token(text, iri)


_SHOWN_CHARS = 60


def shown(value: Any, limit: int = _SHOWN_CHARS) -> str:
    """A value on one short line for an explanation: text as is, other values as JSON."""
    if type(value) is str and 0 < len(value) <= limit:
        # A name or an id, already one line with single spaces: as below. Without a space
        # (the usual id), one test of the text says so.
        if " " not in value:
            if value.isprintable():
                return value
        elif value.isprintable() and value[0] != " " and value[-1] != " " and "  " not in value:
            return value
    if type(value) is int:  # (as orjson writes it, or repr beyond 64 bits: the digits)
        text = str(value)
        return text if len(text) <= limit else text[: limit - 1] + "…"
    if isinstance(value, str):
        text = value
    else:
        try:
            text = orjson.dumps(value).decode()
        except (TypeError, orjson.JSONEncodeError):
            text = repr(value)
    text = " ".join(text.split()) if text.strip() else repr(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


_SCALARS = frozenset((str, int, bool, type(None)))
"""JSON values that Python's equality compares as JSON does when their types are the same."""


def json_difference(reference: Any, actual: Any, path: str = "$") -> str | None:
    """The first place two parsed JSON values differ, for a user; ``None`` when equal."""
    if json_equal(reference, actual):
        return None
    if isinstance(reference, dict) and isinstance(actual, dict):
        if reference.keys() != actual.keys():  # (the same keys: neither loop finds one)
            for key in reference:
                if key not in actual:
                    return f"{path}: key {shown(key)} missing"
            for key in actual:
                if key not in reference:
                    return f"{path}: extra key {shown(key)}"
        for key, value in reference.items():
            other = actual[key]
            if type(value) is type(other) and type(value) in _SCALARS:
                if value == other:
                    continue  # (equal in JSON: the usual key of a differing object)
                # (unequal in JSON, of one kind: the text the recursion gives, at once)
                return f"{path}.{key}: reference {shown(value)}, actual {shown(other)}"
            found = json_difference(value, other, f"{path}.{key}")
            if found is not None:
                return found
    if isinstance(reference, list) and isinstance(actual, list):
        for i, (ref_item, act_item) in enumerate(zip(reference, actual)):
            if type(ref_item) is type(act_item) and type(ref_item) in _SCALARS:
                if ref_item == act_item:
                    continue
                return f"{path}[{i}]: reference {shown(ref_item)}, actual {shown(act_item)}"
            found = json_difference(ref_item, act_item, f"{path}[{i}]")
            if found is not None:
                return found
        return f"{path}: {len(actual)} items, expected {len(reference)}"
    if type(reference) is not type(actual) and _json_kind(reference) != _json_kind(actual):
        return f"{path}: {_json_kind(actual)}, expected {_json_kind(reference)}"
    return f"{path}: reference {shown(reference)}, actual {shown(actual)}"


def text_difference(reference: str, actual: Any) -> str:
    """The first line where an actual output differs from the reference text, for a user."""
    if not isinstance(actual, str):
        return f"the output is {_json_kind(actual)}, expected text"
    ref_lines, act_lines = reference.splitlines(), actual.splitlines()
    if ref_lines and act_lines and ref_lines[0] != act_lines[0]:  # (the usual case, at once)
        return f"line 1: reference {shown(ref_lines[0])}, actual {shown(act_lines[0])}"
    for number, (ref_line, act_line) in enumerate(zip(ref_lines, act_lines), start=1):
        if ref_line != act_line:
            return f"line {number}: reference {shown(ref_line)}, actual {shown(act_line)}"
    if len(ref_lines) != len(act_lines):
        return f"the output has {len(act_lines)} lines, the reference {len(ref_lines)}"
    return "the outputs differ in line endings or white space at the end"
