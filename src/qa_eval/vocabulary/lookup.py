"""What the metric registry answers: a key's family and declaration, its direction, its error
keys, the aggregated, headline, step and label keys, the reserved names, the ``name@k`` syntax of
ranking metrics and the plain data of ``qa-eval metrics``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .model import Direction, Key, Metric
from .registry import METRICS, RANKING

_AT_K = r"^([A-Za-z_]+)(?:@(\d+))?$"  # compiled when first matched (re caches it)


def parse_at_k(name: str) -> tuple[str, int | None]:
    """Split ``recall@5`` into ``("recall", 5)`` and ``map`` into ``("map", None)`` (the base
    lower-cased); ``ValueError`` for any other shape or k < 1. The one parser of ``name@k``."""
    match = re.match(_AT_K, name.strip()) if isinstance(name, str) else None
    if not match:
        raise ValueError(f"not a metric name of the form name or name@k: {name!r}")
    k = int(match.group(2)) if match.group(2) is not None else None
    if k is not None and k <= 0:
        raise ValueError(f"{name!r}: k must be a positive integer")
    return match.group(1).lower(), k


def _keys(registry: Mapping[str, Metric]) -> dict[str, Key]:
    return {key.name: key for metric in registry.values() for key in metric.keys}


def key_info(name: str, registry: Mapping[str, Metric] | None = None) -> tuple[Metric, Key] | None:
    """The family and the declaration of a result key, or ``None`` for a key no family writes."""
    for metric in (registry if registry is not None else METRICS).values():
        for key in metric.keys:
            if key.name == name:
                return metric, key
    return None


_LOWER_SUFFIXES = ("cost", "tokens", "_sec", "_seconds", "_ms", "elapsed", "latency")


def direction(name: str, registry: Mapping[str, Metric] | None = None) -> Direction:
    """Which values of a result key are better: ``higher``, ``lower`` or ``none`` (a count or a
    label: a change is neither better nor worse).

    A registered key has its declared direction; a ranking metric (``ndcg@10``) is higher; any
    other key (a custom metric's output) is ``lower`` when its name ends like a cost, token count
    or time (``cost``, ``tokens``, ``_sec``, ``_seconds``, ``_ms``, ``elapsed``, ``latency``),
    ``none`` when it ends in ``_count``, else ``higher``."""
    found = key_info(name, registry)
    if found is not None:
        return found[1].direction
    lowered = name.lower()
    try:
        base, _ = parse_at_k(name)
    except ValueError:
        base = ""
    if "@" in name and base in RANKING:
        return "higher"
    if lowered.endswith(_LOWER_SUFFIXES):
        return "lower"
    if lowered.endswith("_count"):
        return "none"
    return "higher"


def error_keys(name: str, registry: Mapping[str, Metric] | None = None) -> tuple[str, ...]:
    """The error keys that mean a registered key's value failed (its ``errors``, else
    ``<key>_error`` or ``<family>_error`` when the family declares it); none for a cost, an
    unregistered key or a family without an error key."""
    found = key_info(name, registry)
    if found is None:
        return ()
    metric, key = found
    if key.errors:
        return key.errors
    if key.scale == "usd":
        return ()  # a cost is not a value that could not be computed
    declared = {k.name for k in metric.keys}
    for candidate in (f"{name}_error", f"{metric.name}_error"):
        if candidate in declared:
            return (candidate,)
    return ()


def always_present_keys() -> tuple[str, ...]:
    """The result keys every question's result carries (``Key.always``), in order."""
    return tuple(key.name for metric in METRICS.values() for key in metric.keys if key.always)


def aggregated_keys(registry: Mapping[str, Metric] | None = None) -> tuple[str, ...]:
    """The result keys ``compute_aggregates`` summarises (not the step keys), in order."""
    return tuple(
        key.name
        for metric in (registry if registry is not None else METRICS).values()
        if metric.step is None
        for key in metric.keys
        if key.aggregate
    )


def step_keys(registry: Mapping[str, Metric] | None = None) -> dict[str, tuple[str, ...]]:
    """The numeric keys written into actual steps, by step name (aggregated by name)."""
    out: dict[str, tuple[str, ...]] = {}
    for metric in (registry if registry is not None else METRICS).values():
        if metric.step is not None:
            names = tuple(
                k.name for k in metric.keys if k.scale == "0-1" and k.direction == "higher"
            )
            out[metric.step] = (*out.get(metric.step, ()), *names)
    return out


def headline_keys(registry: Mapping[str, Metric] | None = None) -> tuple[str, ...]:
    """The headline scores (0-1, higher is better), in the order of the summary and report."""
    keys = [k for k in _keys(registry if registry is not None else METRICS).values() if k.headline]
    return tuple(k.name for k in sorted(keys, key=lambda k: k.headline))


def family_headlines(registry: Mapping[str, Metric] | None = None) -> tuple[str, ...]:
    """The scores standing for each family without headline scores, in the registry's order:
    its aggregated 0-1 scores, higher is better (``X_f1`` standing for ``X_recall`` and
    ``X_precision``); the summary shows them for the families a run computed."""
    out: list[str] = []
    for metric in (registry if registry is not None else METRICS).values():
        if metric.step is not None or any(k.headline for k in metric.keys):
            continue
        names = [
            k.name
            for k in metric.keys
            if k.aggregate and k.scale == "0-1" and k.direction == "higher"
        ]
        out += [n for n in names if not _under_f1(n, names)]
    return tuple(out)


def _under_f1(name: str, names: list[str]) -> bool:
    """Whether ``name`` is an ``X_recall`` or ``X_precision`` whose ``X_f1`` is in ``names``."""
    for part in ("_recall", "_precision"):
        if name.endswith(part) and name[: -len(part)] + "_f1" in names:
            return True
    return False


def categories(registry: Mapping[str, Metric] | None = None) -> dict[str, tuple[str, ...]]:
    """The label keys the aggregates count, with the labels listed first."""
    return {
        k.name: k.labels
        for k in _keys(registry if registry is not None else METRICS).values()
        if k.labels
    }


RECORD_FIELDS = frozenset(
    {
        "template_id",
        "question_id",
        "question_text",
        "reference_answer",
        "reference_steps",
        "reference_trajectory",
        "status",
        "error",
        "actual_answer",
        "actual_steps",
        "reason",
        "reference_contexts",
        "reference_tool_calls",
        "rubrics",
    }
)
"""Keys of a result that are not metrics (graphrag-eval's record fields, and the question fields
ragas' metrics read: ``run.question.RAGAS_REFERENCE_KEYS``)."""


def reserved(key: str, registry: Mapping[str, Metric] | None = None) -> bool:
    """Whether a custom metric output named ``key`` would overwrite a key qa-eval writes: a
    record field, a registered key, a family's name or ``<family>_...`` (its reason, cost,
    error, ...), ``retrieval_answer_*`` and ``retrieval_context_*`` included (written into the
    steps, aggregated by name)."""
    registry = registry if registry is not None else METRICS
    if key in RECORD_FIELDS or key_info(key, registry) is not None:
        return True
    return any(key == m.name or key.startswith(m.name + "_") for m in registry.values() if m.prefix)


def describe_metrics(registry: Mapping[str, Metric] | None = None) -> list[dict[str, Any]]:
    """Plain data for ``qa-eval metrics``: every family with its keys, direction, scale, needs,
    default, groups, options and doc page, then the ranking metrics."""
    out: list[dict[str, Any]] = []
    for metric in (registry if registry is not None else METRICS).values():
        out.append(
            {
                "name": metric.name,
                "summary": metric.summary,
                "switch": metric.switch,
                "default": "on" if metric.default else "off",
                "groups": list(metric.groups),
                "needs": [n for n in metric.needs if not (metric.judge_only_for and n == "judge")],
                "judge": metric.judged and not metric.judge_only_for,
                "judge_only_for": metric.judge_only_for or None,
                "embedder": "embedder" in metric.needs,
                "keys": [
                    {
                        "name": k.name,
                        "direction": k.direction,
                        "scale": k.scale,
                        "aggregated": k.aggregate or (metric.step is not None and k.scale == "0-1"),
                        **({"labels": list(k.labels)} if k.labels else {}),
                    }
                    for k in metric.keys
                ],
                "step": metric.step,
                "options": [{"name": o.name, "doc": o.doc} for o in metric.options],
                "doc": metric.doc,
            }
        )
    for name, summary in RANKING.items():
        out.append(
            {
                "name": f"{name}@k",
                "summary": f"{summary}; an API function of retrieval ids, "
                f'compute_ranking_metric("{name}@10", relevant, retrieved)',
                "switch": False,
                "default": "off",
                "groups": ["ranking"],
                "needs": [],
                "judge": False,
                "judge_only_for": None,
                "embedder": False,
                "keys": [{"name": f"{name}@k", "direction": "higher", "scale": "0-1"}],
                "step": None,
                "options": [],
                "doc": "docs/metrics/ranking.md",
            }
        )
    return out


def switches(registry: Mapping[str, Metric] | None = None) -> tuple[str, ...]:
    """The config switches (``--enable`` / ``--disable`` choices), in order."""
    registry = registry if registry is not None else METRICS
    return tuple(m.name for m in registry.values() if m.switch)


def groups(registry: Mapping[str, Metric] | None = None) -> dict[str, tuple[str, ...]]:
    """The names ``--enable`` expands (``graphrag``) to the switches of the group."""
    out: dict[str, tuple[str, ...]] = {}
    for metric in (registry if registry is not None else METRICS).values():
        for group in metric.groups:
            out[group] = (*out.get(group, ()), metric.name)
    return out
