"""A JSON Lines results file aggregated as a stream (``qa-eval aggregate RESULTS.jsonl``):
:func:`aggregate_results_file` reads one line at a time into partial aggregates (its values in
arrays, see ``aggregate.partial``), so a file of a million results is never held whole; the
aggregates, and every error, are those of reading the file whole and calling
``compute_aggregates``."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from ..aggregate.compute import AggregateSpec
from ..aggregate.partial import PartialAggregates
from ..errors import InputError
from ..io import kinds
from .options import Spell, python_name
from .tags import is_tag

__all__ = ["CHUNK", "aggregate_results_file"]

CHUNK = 4096
"""Results added to the partial aggregates at a time."""


def aggregate_results_file(
    path: str | os.PathLike[str],
    spec: AggregateSpec,
    by: Sequence[str] = (),
    command: str = "aggregate",
    spell: Spell = python_name,
) -> dict[str, Any]:
    """The aggregates of a JSON Lines results file (``spec``: ``AggregateSpec.of`` the
    command's options); ``by``: keys asked for explicitly, each of which some result must have a
    value of. ``InputError`` for a file that is not results, a result of the wrong shape (the
    first one) or such a key, in that order, as when the file is read whole."""
    source = str(path)
    partial = PartialAggregates(spec)
    wanted = {key: False for key in dict.fromkeys(by)}
    chunk: list[dict[str, Any]] = []

    def each(result: dict[str, Any]) -> None:
        chunk.append(result)
        for key, found in wanted.items():
            if not found and is_tag(result.get(key)):
                wanted[key] = True
        if len(chunk) >= CHUNK:
            partial.add(chunk)
            chunk.clear()

    found = kinds.read_results_lines(path, command, each)
    partial.add(chunk)
    if found.kind != kinds.EMPTY:
        for key, seen in wanted.items():
            if not seen:
                raise InputError(
                    f"{spell('by')} {key}: no result has a value for this key", source=source
                )
    return partial.finish()
