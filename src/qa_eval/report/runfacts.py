"""What a run's signature and aggregates say beside the statistics, as the report shows it: the
judge's usage, the label flips of repeated judging and the trials' trajectory consistency."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..aggregate import is_finite_number

__all__ = ["judge_usage", "label_flips", "trial_consistency"]

_JUDGE_USAGE = (
    ("judge calls", "calls"),
    ("judge calls from the cache", "cached"),
    ("judge retries", "retries"),
    ("judge failures", "failures"),
    ("judge prompt tokens", "prompt_tokens"),
    ("judge prompt tokens cached by the provider", "cached_prompt_tokens"),
    ("judge prompt cache hit share", "cached_prompt_share"),
    ("judge completion tokens", "completion_tokens"),
    ("judge cost (USD)", "cost"),
)


def trial_consistency(aggregates: Mapping[str, Any]) -> dict[str, tuple[float, int]]:
    """Per group (the names of ``table_rows``) the trials' ``trajectory_consistency``."""
    groups = [*(aggregates.get("per_template") or {}).items()]
    groups.append(("all questions", aggregates.get("micro") or {}))
    out: dict[str, tuple[float, int]] = {}
    for name, stats in groups:
        block = stats.get("trials") if isinstance(stats, Mapping) else None
        entry = block.get("trajectory_consistency") if isinstance(block, Mapping) else None
        if isinstance(entry, Mapping) and is_finite_number(entry.get("mean")):
            out[str(name)] = (float(entry["mean"]), int(entry.get("n") or 0))
    return out


def label_flips(value: Any) -> dict[str, dict[str, Any]]:
    """The aggregates' ``label_flips``, keeping the entries of the expected shape."""
    if not isinstance(value, Mapping):
        return {}
    out: dict[str, dict[str, Any]] = {}
    for key, entry in value.items():
        if not isinstance(entry, Mapping):
            continue
        n, flipped = entry.get("n"), entry.get("flipped")
        if isinstance(n, int) and isinstance(flipped, int) and n > 0:
            out[str(key)] = {"n": n, "flipped": flipped, "share": flipped / n}
    return out


def judge_usage(signature: Mapping[str, Any] | None) -> list[tuple[str, Any]]:
    usage = signature.get("usage") if isinstance(signature, Mapping) else None
    total = usage.get("total") if isinstance(usage, Mapping) else None
    if not isinstance(total, Mapping):
        return []
    return [(name, total[key]) for name, key in _JUDGE_USAGE if total.get(key) is not None]
