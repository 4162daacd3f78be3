"""What qa-eval's writers can write, and how they write JSON: the limits every reader checks a
document against (nesting at most :data:`MAX_DEPTH` levels, integers within 64 bits, text without
lone surrogates), so that whatever is read can be written back (results copy the inputs), and
:func:`dump_json`, the JSON of every writer.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import orjson

from ..errors import InputError, QaEvalError, short_repr

__all__ = [
    "INT_MAX",
    "INT_MIN",
    "JSON_OPTIONS",
    "MAX_DEPTH",
    "check_writable",
    "dump_json",
    "one_line",
]

MAX_DEPTH = 200
"""Deepest nesting of lists and mappings a document (or a JSON Lines record) may have: results
copy the inputs, and orjson writes at most 254 levels."""
JSON_OPTIONS = orjson.OPT_NON_STR_KEYS
INT_MIN, INT_MAX = -(2**63), 2**64 - 1  # the integers orjson writes


def one_line(message: str) -> str:
    """A message on one line: every run of whitespace (line breaks too) made one space."""
    return " ".join(message.split())


_nest = threading.local()


def check_writable(data: Any, source: str, record: str | None = None) -> bytes:
    """orjson's JSON of ``data`` nested in ``254 - MAX_DEPTH`` lists (so it fails beyond
    ``MAX_DEPTH`` levels); ``InputError`` naming the first value the writers cannot write."""
    try:
        outer, inner = _nest.chain
    except AttributeError:
        inner = [None]
        outer = inner
        for _ in range(253 - MAX_DEPTH):
            outer = [outer]
        _nest.chain = outer, inner
    inner[0] = data
    try:
        return orjson.dumps(outer, option=JSON_OPTIONS, default=str)
    except orjson.JSONEncodeError:
        field, problem = _unwritable(data)
        raise InputError(problem, source=source, record=record, field=field or None) from None
    finally:
        inner[0] = None


def _path(parts: list[Any]) -> str:
    text = ""
    if len(parts) > 8:  # a deep place: its start and how deep it is
        return f"{_path(parts[:4])}… ({len(parts)} levels down)"
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        elif isinstance(part, str) and part.isidentifier():
            text += f".{part}" if text else part
        else:
            text += f"[{short_repr(part, 40)}]"
    return text


def _unwritable(data: Any) -> tuple[str, str]:
    """(field path, problem) of the first value the writers cannot write."""
    keys = (str, int, float, bool, type(None))
    todo: list[tuple[Any, list[Any]]] = [(data, [])]
    while todo:
        value, parts = todo.pop()
        if isinstance(value, (dict, list)):
            if len(parts) >= MAX_DEPTH:
                return _path(parts), f"nested more than {MAX_DEPTH} levels deep"
            items = value.items() if isinstance(value, dict) else enumerate(value)
            children = []
            for key, item in items:
                if isinstance(key, str) and not _utf8(key):
                    return _path(parts), "a key with a lone surrogate (an unpaired escape)"
                if isinstance(value, dict) and not isinstance(key, keys):
                    try:
                        orjson.dumps({key: None}, option=JSON_OPTIONS)
                    except orjson.JSONEncodeError:
                        return _path(parts), f"a key of type {type(key).__name__} is not allowed"
                children.append((item, [*parts, key]))
            todo.extend(reversed(children))
        elif isinstance(value, str) and not _utf8(value):
            return _path(parts), "text with a lone surrogate (an unpaired \\ud800-\\udfff escape)"
        elif isinstance(value, int) and not INT_MIN <= value <= INT_MAX:
            return _path(parts), (
                f"integer beyond 64 bits ({short_repr(value, 40)}): write it as a string"
            )
    return "", "cannot be written as JSON"


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def dump_json(data: Any, indent: bool = False) -> bytes:
    """JSON bytes of data as every writer stores it (results, the partial stream, aggregates):
    orjson, non-string keys and other values as text; what orjson refuses (integers beyond 64
    bits, nesting deeper than 254 levels, keys of other types, lone surrogates) is written by
    the standard library instead, as it is. ``QaEvalError`` when neither can write it."""
    try:
        return orjson.dumps(
            data, option=JSON_OPTIONS | orjson.OPT_INDENT_2 if indent else JSON_OPTIONS, default=str
        )
    except orjson.JSONEncodeError:
        pass
    try:
        text = json.dumps(_text_keys(data), default=str, indent=2 if indent else None)
    except (ValueError, RecursionError) as e:
        raise QaEvalError(f"cannot be written as JSON: {one_line(str(e))}") from None
    return text.encode("ascii")


def _text_keys(value: Any) -> Any:
    """``value`` with every mapping key the standard library cannot write turned into text."""
    if isinstance(value, dict):
        return {
            key if isinstance(key, (str, int, float, bool, type(None))) else str(key): _text_keys(
                item
            )
            for key, item in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [_text_keys(item) for item in value]
    return value
