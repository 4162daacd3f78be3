"""A metric's few-shot examples in a config (``examples``, ``examples_from``, ...)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..prompts import Example
from .reader import Reader

EXAMPLE_KEYS = (
    "examples",
    "examples_from",
    "examples_count",
    "examples_pick",
    "examples_seed",
    "examples_metric",
)
"""The keys of a metric's few-shot examples (``answer_correctness`` and custom metrics)."""
EXAMPLE_METRICS = ("answer_correctness",)
"""The metric blocks whose prompt takes examples (besides every custom metric)."""


def all_examples(data: Any, source: str) -> tuple[Any, dict[str, tuple[Example, ...]]]:
    """The config without its ``examples*`` keys, and the examples they name, by metric."""
    if not isinstance(data, Mapping):
        return data, {}
    found: dict[str, tuple[Example, ...]] = {}
    data = dict(data)
    for key in EXAMPLE_METRICS:
        block = data.get(key)
        if isinstance(block, Mapping) and any(k in block for k in EXAMPLE_KEYS):
            read = _examples(Reader(block, source, key), source)
            if read:
                found[key] = read
            data[key] = {k: v for k, v in block.items() if k not in EXAMPLE_KEYS}
    custom = data.get("custom_evaluations")
    if isinstance(custom, list):
        entries = []
        for i, entry in enumerate(custom):
            if isinstance(entry, Mapping) and any(k in entry for k in EXAMPLE_KEYS):
                read = _examples(Reader(entry, source, f"custom_evaluations[{i}]"), source)
                if read:
                    found[str(entry.get("name"))] = read
                entry = {k: v for k, v in entry.items() if k not in EXAMPLE_KEYS}
            entries.append(entry)
        data["custom_evaluations"] = entries
    return data, found


def _examples(block: Reader, source: str) -> tuple[Example, ...]:
    """The examples one block names: ``examples`` (a labels file), ``examples_from`` (a results
    file, or [reference, responses]), ``examples_count`` (4), ``examples_pick`` (balanced),
    ``examples_seed`` (0), ``examples_metric`` (the only metric labelled)."""
    from ..agreement.examples import PICKS, load_examples

    labels = block.str_("examples")
    if labels is None:
        raise block.fail("examples", "a labels file is required with the other examples_ keys")
    sources = block.data.get("examples_from")
    if isinstance(sources, str):
        sources = [sources]
    if (
        not isinstance(sources, list)
        or not 1 <= len(sources) <= 2
        or not all(isinstance(s, str) and s for s in sources)
    ):
        raise block.fail(
            "examples_from",
            "required: a results file, or [reference file, responses file] (the labelled texts)",
        )
    pick = block.str_("examples_pick", "balanced") or "balanced"
    if pick not in PICKS:
        raise block.fail("examples_pick", f"must be one of {', '.join(PICKS)}, not {pick!r}")
    count = block.integer("examples_count", 4)
    seed = block.integer("examples_seed", 0, minimum=0) if "examples_seed" in block.data else 0
    base = Path(source).parent if source not in ("config", "environment") else Path()
    try:
        return load_examples(
            labels,
            sources,
            metric=block.str_("examples_metric"),
            count=count or 4,
            pick=pick,
            seed=seed or 0,
            base=base,
        )
    except OSError as e:
        raise block.fail("examples", f"cannot read {e.filename}: {e.strerror}") from None
