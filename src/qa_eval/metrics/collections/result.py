"""What a per-sample metric returns: :class:`MetricResult`, ragas 0.4.3's result surface (``value``,
``reason``, ``float(result)``, comparisons and arithmetic with numbers, ``to_dict()``) with what
ragas leaves out: typed :class:`Details`, the ``cost`` in USD (``None`` when a price is unknown),
the :class:`ResultUsage` of the calls made for it, whether every reply came from the cache, the
``error`` of a row that could not be scored (in a batch), and deepeval's ``threshold`` /
``success`` when a threshold is given. Plain, immutable data; no I/O.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["ChunkVerdict", "Details", "MetricResult", "ResultUsage", "StatementVerdict"]


@dataclass(frozen=True)
class StatementVerdict:
    """One statement (of the response, or of the reference) and whether it is supported."""

    statement: str
    supported: bool
    reason: str = ""


@dataclass(frozen=True)
class ChunkVerdict:
    """One retrieved chunk (1-based rank) and whether it is useful."""

    chunk: int
    useful: bool
    reason: str = ""


@dataclass(frozen=True)
class Details:
    """What a score was computed from (the fields a metric has; the others stay empty)."""

    statements: tuple[StatementVerdict, ...] = ()
    chunks: tuple[ChunkVerdict, ...] = ()
    questions: tuple[str, ...] = ()
    """The questions generated from the response (answer relevancy)."""
    claims: int | None = None
    """How many statements were judged."""
    supported_claims: int | None = None
    """How many of them are supported (attributed, for context recall)."""
    similarity: float | None = None
    """The raw cosine similarity (semantic similarity)."""
    basis: str | None = None
    """What chunks were judged useful for (context precision: reference, answer)."""

    def to_dict(self) -> dict[str, Any]:
        """Plain data, without the fields left empty."""
        return {k: v for k, v in asdict(self).items() if v not in ((), None, [])}


@dataclass(frozen=True)
class ResultUsage:
    """The judge calls made for one result (replies from the cache are not calls)."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    """Prompt tokens the provider served from its own prompt cache."""


def _plain(other: Any) -> Any:
    return other.value if isinstance(other, MetricResult) else other


@dataclass(frozen=True, eq=False)
class MetricResult:
    """One metric's result on one sample (see the module docstring)."""

    value: Any
    reason: str | None = None
    details: Details = field(default_factory=Details)
    cost: float | None = 0.0
    usage: ResultUsage = field(default_factory=ResultUsage)
    cached: bool = False
    error: str | None = None
    threshold: float | None = None
    name: str | None = None

    @property
    def success(self) -> bool | None:
        """``value >= threshold`` when a threshold is given (``False`` without a value)."""
        if self.threshold is None:
            return None
        number = self.value
        if not isinstance(number, (int, float)) or math.isnan(number):
            return False
        return bool(number >= self.threshold)

    @classmethod
    def failed(
        cls, error: BaseException, name: str | None = None, threshold: float | None = None
    ) -> MetricResult:
        """The result of a sample that could not be scored: no value, its error."""
        text = f"{type(error).__name__}: {error}" if not str(error) else str(error)
        return cls(None, f"not scored: {text}", error=text, threshold=threshold, name=name)

    def __repr__(self) -> str:
        parts = [f"value={self.value!r}"]
        if self.reason:
            parts.append(f"reason={self.reason!r}")
        if self.error:
            parts.append(f"error={self.error!r}")
        return f"MetricResult({', '.join(parts)})"

    __str__ = __repr__

    def __float__(self) -> float:
        if isinstance(self.value, (int, float)):
            return float(self.value)
        raise TypeError(f"cannot convert {type(self.value).__name__} to float")

    def __int__(self) -> int:
        if isinstance(self.value, (int, float)):
            return int(self.value)
        raise TypeError(f"cannot convert {type(self.value).__name__} to int")

    def __eq__(self, other: object) -> bool:
        return bool(self.value == _plain(other))

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]  # compares as its value, as ragas' does

    def __lt__(self, other: Any) -> bool:
        return bool(self.value < _plain(other))

    def __le__(self, other: Any) -> bool:
        return bool(self.value <= _plain(other))

    def __gt__(self, other: Any) -> bool:
        return bool(self.value > _plain(other))

    def __ge__(self, other: Any) -> bool:
        return bool(self.value >= _plain(other))

    def __add__(self, other: Any) -> Any:
        return self.value + _plain(other)

    def __radd__(self, other: Any) -> Any:
        return _plain(other) + self.value

    def __sub__(self, other: Any) -> Any:
        return self.value - _plain(other)

    def __rsub__(self, other: Any) -> Any:
        return _plain(other) - self.value

    def __mul__(self, other: Any) -> Any:
        return self.value * _plain(other)

    def __rmul__(self, other: Any) -> Any:
        return _plain(other) * self.value

    def __truediv__(self, other: Any) -> Any:
        return self.value / _plain(other)

    def __rtruediv__(self, other: Any) -> Any:
        return _plain(other) / self.value

    def to_dict(self) -> dict[str, Any]:
        """ragas' ``{"result", "reason"}`` and what qa-eval adds (cost, usage, cached, error,
        details; threshold and success when a threshold is given)."""
        out: dict[str, Any] = {
            "result": self.value,
            "reason": self.reason,
            "cost": self.cost,
            "usage": asdict(self.usage),
            "cached": self.cached,
            "error": self.error,
            "details": self.details.to_dict(),
        }
        if self.threshold is not None:
            out["threshold"] = self.threshold
            out["success"] = self.success
        return out
