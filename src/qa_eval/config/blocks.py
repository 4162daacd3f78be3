"""The metric blocks of a config (``faithfulness: {enabled, ...}``): each switch, and the options a
metric takes, read by the checks the registry names (``CHECKS``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..metrics.definitions import check_prompt
from ..metrics.retrieval.composite import COMPONENTS
from ..vocabulary import registry as _registry
from .reader import Reader


def _switch(top: Reader, key: str, extra: tuple[str, ...] = ()) -> tuple[bool | None, Reader]:
    if isinstance(top.data.get(key), bool):  # the short form ``faithfulness: true``
        return top.data[key], Reader(None, top.source, key)
    block = top.sub(key)
    block.check_keys(("enabled", *extra))
    return _flag(block, "enabled"), block


def _read_prompt(block: Reader, source: str) -> str | None:
    prompt = block.str_("prompt")
    if prompt is not None and "\n" not in prompt and Path(prompt).suffix in (".md", ".txt"):
        path = (Path(source).parent if source not in ("config", "environment") else Path()) / prompt
        try:
            prompt = path.read_text(encoding="utf-8")
        except OSError as e:
            raise block.fail("prompt", f"cannot read {path}: {e.strerror}") from None
    if prompt is not None:
        try:
            check_prompt(prompt)
        except ValueError as e:
            raise block.fail("prompt", str(e)) from None
    return prompt


def _weights(block: Reader, key: str) -> dict[str, float] | None:
    if block.data.get(key) is None:
        return None
    sub = block.sub(key)
    sub.check_keys(COMPONENTS)
    weights = {name: sub.number(name, 0.0) or 0.0 for name in sub.data}
    if not any(weights.values()):
        raise block.fail(key, "at least one weight must be > 0")
    return weights


def _weight_list(block: Reader, key: str, value: Any, names: tuple[str, ...]) -> tuple[float, ...]:
    """``value`` as one weight per name: numbers >= 0, not all 0 (else the field's error)."""
    if (
        not isinstance(value, list)
        or len(value) != len(names)
        or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
        or any(v < 0 for v in value)
        or not any(v > 0 for v in value)
    ):
        raise block.fail(key, f"must be {len(names)} numbers >= 0 ({', '.join(names)}), not all 0")
    return tuple(float(v) for v in value)


def _criteria_weights(block: Reader, key: str) -> tuple[float, float, float] | None:
    value = block.data.get(key)
    if value is None:
        return None
    names = ("correctness", "completeness", "consistency")
    if isinstance(value, Mapping):
        sub = block.sub(key)
        sub.check_keys(names)
        value = [sub.number(c, 0.0) for c in names]
    return _weight_list(block, key, value, names)  # type: ignore[return-value]


def _cutoffs(block: Reader, key: str) -> dict[str, float] | None:
    if block.data.get(key) is None:
        return None
    sub = block.sub(key)
    cutoffs = {str(grade): sub.number(str(grade), 0.0) or 0.0 for grade in sub.data}
    if not cutoffs or any(v > 100 for v in cutoffs.values()):
        raise block.fail(key, "must map each grade to a cutoff on 0-100")
    return cutoffs


def _phrases(block: Reader, key: str) -> tuple[str, ...] | None:
    value = block.data.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(p, str) and p.strip() for p in value):
        raise block.fail(key, "must be a list of non-empty strings")
    return tuple(value)


def _layer(block: Reader, key: str) -> int | None:
    return block.integer(key, None)


def _flag(block: Reader, key: str) -> bool | None:
    value = block.data.get(key)
    if value is not None and not isinstance(value, bool):
        raise block.fail(key, "must be true or false")
    return value


def _prompt(block: Reader, key: str) -> str | None:
    return _read_prompt(block, block.source) if key == "prompt" else block.str_(key)


def _choice(*allowed: str) -> Any:
    """A reader of a string option that must be one of ``allowed``."""

    def read(block: Reader, key: str) -> str | None:
        value = block.str_(key)
        if value is not None and value not in allowed:
            raise block.fail(key, f"must be one of {', '.join(allowed)}, not {value!r}")
        return value

    return read


def _beta(block: Reader, key: str) -> float | None:
    value = block.number(key, None)
    if value == 0:
        raise block.fail(key, "must be a number > 0")
    return value


def _unit_interval(block: Reader, key: str) -> float | None:
    value = block.number(key, None)
    if value is not None and value > 1:
        raise block.fail(key, f"must be a number between 0 and 1, not {value!r}")
    return value


def _two_weights(block: Reader, key: str) -> tuple[float, float] | None:
    value = block.data.get(key)
    if value is None:
        return None
    return _weight_list(block, key, value, ("factuality", "similarity"))  # type: ignore[return-value]


def _rubrics(block: Reader, key: str) -> dict[str, str] | None:
    value = block.data.get(key)
    if value is None:
        return None
    if (
        not isinstance(value, Mapping)
        or not value
        or not all(
            isinstance(k, str) and isinstance(v, str) and v.strip() for k, v in value.items()
        )
    ):
        raise block.fail(
            key, "must map each score<N>_description to its criterion (non-empty strings)"
        )
    return dict(value)


CHECKS: dict[str, Any] = {
    "flag": _flag,
    "str": Reader.str_,
    "layer": _layer,
    "integer": _layer,
    "prompt": _prompt,
    "ragas_weights": _weights,
    "criteria_weights": _criteria_weights,
    "cutoffs": _cutoffs,
    "phrases": _phrases,
    "beta": _beta,
    "unit_interval": _unit_interval,
    "two_weights": _two_weights,
    "rubrics": _rubrics,
    "precision_recall_f1": _choice("precision", "recall", "f1"),
    "low_high": _choice("low", "high"),
    "relevant_irrelevant": _choice("relevant", "irrelevant"),
    "rows_columns": _choice("rows", "columns"),
}
"""The option readers a registry ``Option.check`` names: ``(block, key) -> value or None``."""


def _options() -> dict[str, dict[str, Any]]:
    """The settings each metric block takes besides ``enabled``, with their checks (from the
    registry)."""
    return {
        metric.name: {option.name: CHECKS[option.check] for option in metric.options}
        for metric in _registry.METRICS.values()
        if metric.options
    }


def metric_blocks(
    top: Reader, blocks: tuple[str, ...]
) -> tuple[dict[str, bool], str | None, dict[str, dict[str, Any]]]:
    """(the switches set, the ``answer_correctness`` prompt, the options set per metric) of a
    config's metric blocks."""
    switches: dict[str, bool] = {}
    prompt = None
    options: dict[str, dict[str, Any]] = {}
    all_options = _options()
    for key in blocks:
        checks = all_options.get(key, {})
        value, block = _switch(top, key, tuple(checks))
        if value is not None:
            switches[key] = value
        read = {name: check(block, name) for name, check in checks.items()}
        if key == "answer_correctness":  # kept apart: its text is not a signature option
            prompt = read.pop("prompt", None)
        chosen = {name: v for name, v in read.items() if v is not None}
        if chosen:
            options[key] = chosen
    return switches, prompt, options
