"""What every comparison of argument values shares: the error a bad reference raises, the judge's
answers to ``$llm`` comparisons, a value shown in a mismatch text, keyed (``canonical``,
``freeze``), parsed (``parse_args``) and compared strictly (``equal``: ``1 == 1.0``, ``true != 1``),
and the base of the compiled nodes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ....errors import QaEvalError


class TrajectoryError(QaEvalError, ValueError):
    """A ``reference_trajectory`` that cannot be used, named by its field path."""


class _Missing:
    def __repr__(self) -> str:
        return "missing"


MISSING: Any = _Missing()
"""An actual argument that is not there."""


@dataclass
class LlmAnswers:
    """The judge's answers to ``$llm`` comparisons, by (statement, canonical actual value);
    ``pending`` collects the comparisons not answered yet (and where they are)."""

    answers: dict[tuple[str, str], bool] = field(default_factory=dict)
    pending: dict[tuple[str, str], str] = field(default_factory=dict)


NO_LLM = LlmAnswers()


def show(value: Any, limit: int = 60) -> str:
    """A value in a mismatch text: JSON, cut at ``limit`` characters; ``missing`` when absent."""
    if value is MISSING:
        return "missing"
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _norm(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {str(k): _norm(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_norm(v) for v in value]
    return value


def canonical(value: Any) -> str:
    """A text equal for equal argument values (key order ignored, ``1`` as ``1.0``)."""
    return json.dumps(_norm(value), sort_keys=True, ensure_ascii=False, default=str)


_SCALARS = (str, int, float, type(None))


def freeze(value: Any) -> Any:
    """A hashable key equal for equal argument values (key order ignored, ``1`` as ``1.0``,
    ``true`` apart from ``1``)."""
    kind = type(value)
    if kind is dict:
        return (
            "d",
            frozenset((k, v if type(v) in _SCALARS else freeze(v)) for k, v in value.items()),
        )
    if kind is list or kind is tuple:
        return ("l", tuple(freeze(v) for v in value))
    if kind is bool:
        return ("b", value)
    try:
        hash(value)
    except TypeError:
        return ("r", repr(value))
    return value


def parse_args(args: Any) -> Any:
    """An actual call's arguments: a mapping, a JSON-object string parsed, None as ``{}``; any
    other text stays text (raw arguments)."""
    if args is None:
        return {}
    if isinstance(args, str):
        try:
            parsed = json.loads(args)
        except ValueError:
            return args
        return parsed if isinstance(parsed, dict) else args
    return args


def equal(a: Any, b: Any) -> bool:
    """Strict equality of argument values: ``1 == 1.0`` but ``true != 1``; mappings and lists
    item by item."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


class Node:
    """One compiled reference value."""

    def ok(self, actual: Any, llm: LlmAnswers) -> bool:
        """Whether ``actual`` matches (the fast path of :meth:`check`)."""
        return not self.check(actual, "", llm)

    def check(self, actual: Any, path: str, llm: LlmAnswers) -> list[str]:
        """The mismatches of ``actual`` at ``path`` (none: it matches)."""
        raise NotImplementedError

    def words(self) -> str:
        """How the reference value is shown in a mismatch."""
        raise NotImplementedError
