"""The type of every argument of a per-sample metric's ``ascore``, checked at the call as ragas'
input models check theirs: one ``SetupError`` (a ``ValueError``) naming the argument, the type
expected and what was given, before anything is computed or asked (docs/ragas.md, *Input
types*).

The expected types are ``ascore``'s own annotations: ``str``, ``list[str]`` (a list or a tuple of
texts), ``dict[str, str]``, ``list[Any]``, and any of them ``| None``. A text is never taken for a
list of its characters, and ``None`` is a value only where the annotation says so.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from ...errors import SetupError, short_repr

__all__ = ["check_inputs"]

_HINTS: dict[Callable[..., Any], dict[str, Any]] = {}


def _hints(function: Callable[..., Any]) -> dict[str, Any]:
    """``function``'s parameter annotations, resolved (none when they cannot be)."""
    found = _HINTS.get(function)
    if found is None:
        try:
            found = typing.get_type_hints(function)
        except Exception:  # an annotation that names what is not importable: not checked
            found = {}
        found.pop("return", None)
        _HINTS[function] = found
    return found


def _words(expected: Any) -> str:
    """An annotation in words: ``str``, ``a list of str``, ``str or None``."""
    if expected is Any:
        return "any value"
    origin = typing.get_origin(expected)
    args = typing.get_args(expected)
    if origin in (typing.Union, types.UnionType):
        return " or ".join("None" if a is type(None) else _words(a) for a in args)
    if origin in (list, tuple) or expected in (list, tuple):
        return "a list" + (f" of {_words(args[0])}" if args and args[0] is not Any else "")
    if origin in (dict, Mapping) or expected is dict:
        if len(args) == 2:
            return f"a dict of {_words(args[0])} to {_words(args[1])}"
        return "a dict"
    return getattr(expected, "__name__", str(expected))


def _given(value: Any) -> str:
    """What was given, in words: its type, and a short form of a text or number."""
    if value is None:
        return "None"
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return f"{type(value).__name__} {short_repr(value, 40)}"
    return type(value).__name__


def _problem(expected: Any, value: Any) -> str | None:
    """Why ``value`` is not of the annotated type (None when it is)."""
    if expected is Any:
        return None
    origin = typing.get_origin(expected)
    args = typing.get_args(expected)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        problems = [_problem(a, value) for a in args if a is not type(None)]
        return None if any(p is None for p in problems) else _given(value)
    if origin in (list, tuple) or expected in (list, tuple):
        if not isinstance(value, (list, tuple)):
            return _given(value)
        item = args[0] if args else Any
        for index, element in enumerate(value):
            if _problem(item, element) is not None:
                return f"{type(value).__name__} with {_given(element)} at [{index}]"
        return None
    if origin in (dict, Mapping) or expected is dict:
        if not isinstance(value, Mapping):
            return _given(value)
        if len(args) == 2:
            for key, element in value.items():
                if _problem(args[0], key) is not None or _problem(args[1], element) is not None:
                    return f"{type(value).__name__} with {_given(key)}: {_given(element)}"
        return None
    if expected is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return None if ok else _given(value)
    if isinstance(expected, type):
        ok = isinstance(value, expected) and not (expected is int and isinstance(value, bool))
        return None if ok else _given(value)
    return None  # an annotation of another kind (a Literal, a Protocol): not checked here


def check_inputs(metric: str, function: Callable[..., Any], row: Mapping[str, Any]) -> None:
    """A ``SetupError`` naming the first input of ``row`` whose type is not the one ``function``
    (a metric's ``ascore``) annotates it with, what that type is and what was given."""
    for name, expected in _hints(function).items():
        if name not in row:
            continue
        problem = _problem(expected, row[name])
        if problem is not None:
            words = _words(expected)
            if name == "user_input" and words.startswith("a list"):
                words = "a list of messages" + words.removeprefix("a list")
            raise SetupError(f"{metric}: {name} must be {words}, got {problem}")
