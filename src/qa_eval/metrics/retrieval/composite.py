"""RAGAS composite score: a weighted mean of the four RAGAS metrics.

Source: ``../shared/spec/graphrag-metrics.md``, section 5 ("RAGAS Composite Score"):

    ragas_score = sum_k w_k * s_k / sum_k w_k        over the components k that are present

with k in faithfulness (F), context_precision (CP), context_recall (CR), answer_relevance (AR) and
default weights w_F = 0.3, w_CP = 0.2, w_CR = 0.2, w_AR = 0.3. A component that is missing, None or
NaN is left out and the weights of the others are renormalised to sum to 1; with no component left
the score is None (the spec returns NaN there; qa-eval never stores NaN).

Scale: the spec writes its scores as percentages (0-100). qa-eval stores every score on 0-1, so
:func:`ragas_score` takes its components on 0-1 and returns the score on 0-1; :func:`as_percent`
turns it into the spec's percentage. The formula is a weighted mean, so both scales give the same
number up to the factor 100. The spec's worked example for ``local_search``
(F = 100, CP = NaN, CR = 100, AR = 83.27) is, on qa-eval's scale,

    (0.3 * 1.0 + 0.2 * 1.0 + 0.3 * 0.8327) / (0.3 + 0.2 + 0.3) = 0.93726...  ->  93.73 %
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from numbers import Real
from types import MappingProxyType
from typing import Any

from ..output import Output

__all__ = [
    "COMPONENTS",
    "DEFAULT_WEIGHTS",
    "CompositeResult",
    "as_percent",
    "ragas_score",
    "score",
]

COMPONENTS = ("faithfulness", "context_precision", "context_recall", "answer_relevance")

DEFAULT_WEIGHTS: Mapping[str, float] = MappingProxyType(
    {
        "faithfulness": 0.3,
        "context_precision": 0.2,
        "context_recall": 0.2,
        "answer_relevance": 0.3,
    }
)

_SLACK = 1e-9
"""Rounding slack allowed above 1 (a cosine of identical vectors can come out as 1 + 2e-16)."""


@dataclass(frozen=True)
class CompositeResult:
    """A composite score with the components it used and the weights it applied.

    ``score`` is on 0-1 (None when no component was available); ``used`` lists the components
    that went into it, in :data:`COMPONENTS` order; ``weights`` maps each used component to its
    renormalised weight (they sum to 1; empty when ``score`` is None)."""

    score: float | None
    used: tuple[str, ...]
    weights: Mapping[str, float]


def _check_names(names: Mapping[str, object]) -> None:
    unknown = sorted(set(names) - set(COMPONENTS))
    if unknown:
        known = ", ".join(COMPONENTS)
        raise ValueError(f"unknown ragas_score component(s) {', '.join(unknown)}; known: {known}")


def _check_weights(weights: Mapping[str, float]) -> None:
    _check_names(weights)
    for name, weight in weights.items():
        if isinstance(weight, bool) or not isinstance(weight, Real):
            raise ValueError(f"the weight of {name} is not a number: {weight!r}")
        if not math.isfinite(weight) or weight < 0:
            raise ValueError(f"the weight of {name} must be a finite number >= 0, got {weight}")
    if not any(w > 0 for w in weights.values()):
        raise ValueError("at least one ragas_score weight must be positive")


def _present(name: str, value: float | None) -> bool:
    """Whether a component counts; raises on values that are not scores on 0-1."""
    if value is None:
        return False
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"{name} is not a number: {value!r}")
    if math.isnan(value):
        return False
    if math.isinf(value) or value > 1 + _SLACK or value < -1 - _SLACK:
        hint = " (components are on 0-1, not percentages)" if value > 1 else ""
        raise ValueError(f"{name} = {value} is out of range{hint}")
    return True


def ragas_score(
    components: Mapping[str, float | None], weights: Mapping[str, float] | None = None
) -> CompositeResult:
    """The weighted mean of the components that are present; see the module docstring.

    ``components`` maps component names (:data:`COMPONENTS`) to scores on 0-1; a name that is
    absent, None or NaN is left out. Answer relevance is a mean cosine and may be slightly below
    0, so values down to -1 are taken as they are; a value above 1 (a percentage passed by mistake)
    raises ``ValueError``. ``weights`` (default :data:`DEFAULT_WEIGHTS`) must name known components
    with finite, non-negative weights, at least one positive; a component it leaves out weighs 0.
    Returns the score on 0-1 (None when no component with a positive weight is present)."""
    weights = DEFAULT_WEIGHTS if weights is None else weights
    _check_weights(weights)
    _check_names(components)
    used = tuple(
        name
        for name in COMPONENTS
        if _present(name, components.get(name)) and weights.get(name, 0.0) > 0
    )
    if not used:
        return CompositeResult(None, (), MappingProxyType({}))
    total = math.fsum(weights[name] for name in used)
    applied = {name: weights[name] / total for name in used}
    score = math.fsum(applied[name] * components[name] for name in used)  # type: ignore[operator]
    return CompositeResult(score, used, MappingProxyType(applied))


def as_percent(value: float | None, ndigits: int | None = 2) -> float | None:
    """A 0-1 score as the spec's percentage, rounded to ``ndigits`` (None: not rounded)."""
    if value is None:
        return None
    percent = value * 100.0
    return percent if ndigits is None else round(percent, ndigits)


async def score(judge: Any, inputs: Mapping[str, Any], options: Mapping[str, Any]) -> Output:
    """The registry's entry point, run after the question's other metrics: the composite of
    the components among their values (``inputs["scores"]``), with ``options["weights"]``;
    ``ValueError`` for a component or weight that is not a score."""
    scores = inputs["scores"]
    composite = ragas_score({name: scores.get(name) for name in COMPONENTS}, options.get("weights"))
    if composite.score is None:
        return Output("ragas_score", {"ragas_score_reason": "none of its components was computed"})
    return Output(
        "ragas_score",
        {"ragas_score": composite.score, "ragas_score_components": list(composite.used)},
    )
