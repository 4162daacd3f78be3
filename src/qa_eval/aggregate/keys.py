"""The keys aggregated, from the metric registry (``vocabulary.registry``): the result metrics,
the step metrics by step name and the errors that fail them, the headline scores, the labels
counted, the tags grouped by."""

from __future__ import annotations

from ..vocabulary import lookup as _registry

METRICS: tuple[str, ...] = _registry.aggregated_keys()
"""The result keys summarised (from the metric registry, ``vocabulary.registry``)."""
STEP_METRICS: dict[str, tuple[str, ...]] = _registry.step_keys()
"""The numeric keys written into actual steps, by step name, aggregated by name."""
SCORES: tuple[str, ...] = _registry.headline_keys()
"""The headline scores (0-1, higher is better), in the order of the summary and the report."""
ALWAYS_PRESENT = _registry.always_present_keys()
CATEGORIES: dict[str, tuple[str, ...]] = _registry.categories()
"""Labels counted per group, with the labels listed first (others follow as they appear)."""
STEP_ERRORS: dict[str, dict[str, tuple[str, ...]]] = {
    step: {
        error: tuple(m for m in names if error in _registry.error_keys(m))
        for error in dict.fromkeys(e for m in names for e in _registry.error_keys(m))
    }
    for step, names in STEP_METRICS.items()
}
"""Per step name: each error key written into such steps -> the step metrics it fails."""
DEFAULT_TAGS = ("question_type",)
