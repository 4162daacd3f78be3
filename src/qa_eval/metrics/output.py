"""The typed result of one metric on one question, and the one serializer to graphrag-eval's keys.

A metric's computation returns a frozen :class:`Output`: its values (the result keys it writes,
by their graphrag-eval names), the costs of what it called (judge replies, embeddings), the
tokens its judge calls took, and, when it could not be computed, its error and - for a judge call
that was not made (``--max-cost`` reached, a dry run, a batch planning pass) - a typed
:class:`SkipReason`. :func:`measure` is the one place where a ``JudgeError`` (or a ``ValueError``
of the metric's inputs) becomes an error record; :meth:`Output.result_keys` the one place that
writes a record as result keys:

    <values...>, <metric>_cost (the sum of its costs; null when one is unknown), <metric>_error
    (and the metric's alias error keys, e.g. ``answer_eval_error``)

:func:`llm_cost` sums the records' costs into the question's ``llm_cost``.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..errors import BudgetExceeded, Deferred, DryRunSkip, JudgeError

__all__ = [
    "CallUsage",
    "Output",
    "SkipReason",
    "failed",
    "llm_cost",
    "measure",
    "outputs_of",
    "serialize",
    "skip_reason",
]


class SkipReason(enum.Enum):
    """Why a metric's judge call was not made (the metric is not a failure of the judge)."""

    BUDGET = "budget"
    """``--max-cost`` was reached before the call (``judge.BudgetExceeded``)."""
    DRY_RUN = "dry_run"
    """A dry run counted the call instead of making it (``judge.DryRunSkip``)."""
    DEFERRED = "deferred"
    """A batch planning pass recorded the request for a batch (``judge.Deferred``)."""


def skip_reason(error: BaseException) -> SkipReason | None:
    """The skip reason an exception stands for, by its class (``None``: a real failure)."""
    if isinstance(error, Deferred):
        return SkipReason.DEFERRED
    if isinstance(error, DryRunSkip):
        return SkipReason.DRY_RUN
    if isinstance(error, BudgetExceeded):
        return SkipReason.BUDGET
    return None


@dataclass(frozen=True)
class CallUsage:
    """The judge calls of one metric on one question and their tokens."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @classmethod
    def of(cls, *verdicts: Any) -> CallUsage:
        """The usage of some judge verdicts (``judge.Verdict``)."""
        return cls(
            len(verdicts),
            sum(v.prompt_tokens for v in verdicts),
            sum(v.completion_tokens for v in verdicts),
        )

    def __add__(self, other: CallUsage) -> CallUsage:
        return CallUsage(
            self.calls + other.calls,
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
        )


_EMPTY: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True)
class Output:
    """One metric's result on one question (see the module docstring)."""

    metric: str
    """The name its cost and error keys are made of (``<metric>_cost``, ``<metric>_error``)."""
    values: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    """The result keys it writes besides its cost and error, in order (read-only)."""
    costs: tuple[float | None, ...] = ()
    """What each of its calls cost (None: unknown); no cost key is written when empty."""
    usage: CallUsage = field(default_factory=CallUsage)
    error: str | None = None
    skip: SkipReason | None = None
    """Set when ``error`` says a call was not made (budget, dry run, batch planning)."""
    aliases: tuple[str, ...] = ()
    """Other keys its error is also written under (graphrag-eval's ``answer_eval_error``)."""
    counted: bool = True
    """Whether its cost is part of ``llm_cost`` (not for a cost that repeats others', as
    ``retrieval_*_f1_cost`` does)."""

    def __post_init__(self) -> None:
        if not isinstance(self.values, MappingProxyType):
            object.__setattr__(self, "values", MappingProxyType(dict(self.values)))

    @classmethod
    def judged(
        cls, metric: str, values: Mapping[str, Any], *verdicts: Any, costs: Sequence[Any] = ()
    ) -> Output:
        """A record of values obtained with some judge verdicts (their costs and tokens) and
        other ``costs`` (e.g. an embedding's)."""
        return cls(
            metric,
            values,
            costs=(*(v.cost for v in verdicts), *costs),
            usage=CallUsage.of(*verdicts),
        )

    @classmethod
    def from_keys(cls, metric: str, keys: Mapping[str, Any]) -> Output:
        """A record read back from result keys (``<metric>_cost`` and ``<metric>_error`` taken
        out of the values): for a metric function that still returns keys."""
        values = {k: v for k, v in keys.items() if k not in (f"{metric}_cost", f"{metric}_error")}
        cost_key = f"{metric}_cost"
        error = keys.get(f"{metric}_error")
        return cls(
            metric,
            values,
            costs=(keys[cost_key],) if cost_key in keys else (),
            error=None if error is None else str(error),
        )

    @property
    def cost(self) -> float | None:
        """The sum of its costs; None when one is unknown (0 without any)."""
        if any(c is None for c in self.costs):
            return None
        return sum(self.costs)  # type: ignore[arg-type]

    def result_keys(self) -> dict[str, Any]:
        """Its result keys, as graphrag-eval names them: values, ``<metric>_cost`` (when it
        has costs), ``<metric>_error`` and its aliases (when it failed)."""
        out = dict(self.values)
        if self.costs:
            out[f"{self.metric}_cost"] = self.cost
        if self.error is not None:
            out[f"{self.metric}_error"] = self.error
            for alias in self.aliases:
                out[alias] = self.error
        return out


def serialize(outputs: Iterable[Output]) -> dict[str, Any]:
    """The result keys of several records, in order."""
    out: dict[str, Any] = {}
    for output in outputs:
        out.update(output.result_keys())
    return out


def failed(
    metric: str,
    error: BaseException | str,
    *,
    aliases: tuple[str, ...] = (),
    values: Mapping[str, Any] | None = None,
) -> Output:
    """The record of a metric that could not be computed (``values``: what it writes anyway,
    e.g. a custom metric's outputs as null)."""
    return Output(
        metric,
        values if values is not None else _EMPTY,
        error=str(error),
        skip=skip_reason(error) if isinstance(error, BaseException) else None,
        aliases=aliases,
    )


MetricResult = Output | Sequence[Output] | Mapping[str, Any] | tuple[Mapping[str, Any], Any]
"""What a metric's ``score`` entry point may return: a record, several, or (for entry points
written before records) its keys, or its keys and its cost."""


def outputs_of(metric: str, result: MetricResult) -> tuple[Output, ...]:
    """The records of what a ``score`` entry point returned."""
    if isinstance(result, Output):
        return (result,)
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], Mapping):
        keys, cost = result
        record = Output.from_keys(metric, keys)
        if cost is None or (isinstance(cost, (int, float)) and not isinstance(cost, bool)):
            record = Output(
                metric, record.values, costs=(cost,), error=record.error, usage=record.usage
            )
        return (record,)
    if isinstance(result, Mapping):
        return (Output.from_keys(metric, result),)
    if isinstance(result, Sequence) and all(isinstance(o, Output) for o in result):
        return tuple(result)  # type: ignore[arg-type]
    raise TypeError(
        f"the score entry point of {metric} returned {type(result).__name__}, not an Output"
    )


async def measure(
    metric: str,
    job: Awaitable[MetricResult],
    *,
    aliases: tuple[str, ...] = (),
    values: Mapping[str, Any] | None = None,
) -> tuple[Output, ...]:
    """Await a metric's computation: the one place where a ``JudgeError`` (a reply that could not
    be used, a skipped call) or a ``ValueError`` (inputs the metric cannot score) becomes the
    metric's error record, with its skip reason."""
    try:
        result = await job
    except (JudgeError, ValueError) as e:
        return (failed(metric, e, aliases=aliases, values=values),)
    outputs = outputs_of(metric, result)
    if aliases:
        outputs = tuple(
            Output(o.metric, o.values, o.costs, o.usage, o.error, o.skip, aliases, o.counted)
            if o.metric == metric and o.error is not None and not o.aliases
            else o
            for o in outputs
        )
    return outputs


def llm_cost(outputs: Iterable[Output], unpriced: bool = False) -> tuple[bool, float | None]:
    """(whether any record has a cost, the question's ``llm_cost``): the sum of the counted
    records' costs; null when one is unknown or the judge has no price (``unpriced``: the
    offline metrics' known zeros do not make an unpriced judge's cost known)."""
    costs = [o.cost for o in outputs if o.costs and o.counted]
    if not costs:
        return False, None
    known = [c for c in costs if c is not None]
    if unpriced or len(known) < len(costs):
        return True, None
    return True, math.fsum(known)
