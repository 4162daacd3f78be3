"""Put the shards of a run back together: :func:`merge_shards` (``qa-eval merge``).

Each shard's results (JSON Lines, written by ``evaluate --shard i/N``) come with their signature
(``NAME.signature.yaml``) and shard file (``NAME.shard.json``: the position of each result in the
whole run and the shard's partial aggregates). The merge checks that the shards belong together
(one reference, one config, one metric set, one shard count; every shard once; no question in
two), then writes the results in the order of one run over everything, copying each line as the
shard wrote it, and the aggregates merged from the shards' parts: both byte for byte what one run
writes. The signature is one run's, with ``spread: {shards: N}`` and the judge's usage added up.
No response is read again, and no result parsed.
"""

from __future__ import annotations

import heapq
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError, QaEvalError
from ..io.files import JSONL_SUFFIXES, read_data, signature_path, write_data
from .shards import TRIALS_BITS, ShardFile

__all__ = ["MergedRun", "merge_shards"]


@dataclass
class MergedRun:
    """What :func:`merge_shards` wrote: the number of results, the signature and aggregates."""

    output: str
    results: int
    signature: dict[str, Any]
    aggregates: dict[str, Any] = field(repr=False)


@dataclass
class _Shard:
    path: str
    file: ShardFile
    signature: dict[str, Any]

    @property
    def name(self) -> str:
        return f"{self.path} (shard {self.file.index}/{self.file.count})"


def merge_shards(
    shards: Sequence[str | os.PathLike[str]],
    output: str | os.PathLike[str],
    aggregates: str | os.PathLike[str] | None = None,
) -> MergedRun:
    """Merge shard results into ``output`` (JSON Lines) and, with ``aggregates``, write the
    aggregates too; ``InputError`` (one line naming the files) when the shards do not make one
    run. Nothing is written unless every check passed."""
    out = Path(output)
    if out.suffix.lower() not in JSONL_SUFFIXES:
        raise QaEvalError(f"merge writes JSON Lines: give -o a .jsonl path, not {out}")
    if not shards:
        raise QaEvalError("give the shards' results files to merge")
    loaded = [_load(str(path)) for path in shards]
    _check(loaded)
    partial = loaded[0].file.aggregates
    for shard in loaded[1:]:
        partial.merge(shard.file.aggregates)
    summary = partial.finish()
    signature = _signature(loaded)
    count = _write_results(loaded, out)
    write_data(signature_path(out), signature)
    summary["signature"] = signature
    if aggregates is not None:
        write_data(aggregates, summary)
    return MergedRun(str(out), count, signature, summary)


def _load(path: str) -> _Shard:
    if not Path(path).is_file():
        raise InputError("no such file", source=path)
    if Path(path).suffix.lower() not in JSONL_SUFFIXES:
        raise InputError("a shard's results are JSON Lines (.jsonl)", source=path)
    shard = ShardFile.read(path)
    sig_file = signature_path(path)
    if not sig_file.is_file():
        raise InputError(f"no {sig_file.name} beside it: the shard's signature", source=path)
    signature = read_data(sig_file)
    if not isinstance(signature, dict):
        raise InputError(f"{sig_file.name} is not a run signature", source=path)
    return _Shard(path, shard, signature)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


_SPREAD_KEYS = ("spread", "usage", "skipped_metric_values")
"""Signature keys that differ between the shards of one run (how it was spread, what each
shard's judge did)."""


def _config(signature: dict[str, Any]) -> str:
    options = dict(signature.get("options") or {})
    options.pop("disabled", None)
    options.pop("enabled", None)
    kept = {k: v for k, v in signature.items() if k not in (*_SPREAD_KEYS, "reference", "options")}
    return _canonical({**kept, "options": options})


def _check(shards: list[_Shard]) -> None:
    """Refuse shards that do not make one run, with one line naming the files."""
    first = shards[0]
    for other in shards[1:]:
        if other.file.count != first.file.count:
            raise InputError(
                f"{first.name} and {other.name} split the run in different numbers of shards"
            )
        if _fingerprint(other) != _fingerprint(first):
            raise InputError(
                f"{first.path} and {other.path} are shards of different references "
                f"(fingerprints {_fingerprint(first)} and {_fingerprint(other)})"
            )
        options = first.signature.get("options") or {}, other.signature.get("options") or {}
        if (
            any(options[0].get(k) != options[1].get(k) for k in ("disabled", "enabled"))
            or first.file.aggregates.spec.metrics != other.file.aggregates.spec.metrics
        ):
            raise InputError(f"{first.path} and {other.path} were run with different metric sets")
        if (
            _config(first.signature) != _config(other.signature)
            or first.file.aggregates.spec != other.file.aggregates.spec
        ):
            raise InputError(f"{first.path} and {other.path} were run with different configs")
    by_index: dict[int, _Shard] = {}
    for shard in shards:
        seen = by_index.get(shard.file.index)
        if seen is not None:
            raise InputError(
                f"{seen.path} and {shard.path} are both shard {shard.file.index}/{shard.file.count}"
            )
        by_index[shard.file.index] = shard
    count = first.file.count
    missing = [i for i in range(1, count + 1) if i not in by_index]
    if missing:
        given = ", ".join(s.name for s in sorted(shards, key=lambda s: s.file.index))
        raise InputError(
            f"shard {missing[0]}/{count} is missing{' (and more)' if len(missing) > 1 else ''}: "
            f"given {given}"
        )
    _check_disjoint(shards)


def _fingerprint(shard: _Shard) -> Any:
    reference = shard.signature.get("reference")
    return reference.get("fingerprint") if isinstance(reference, dict) else None


def _check_disjoint(shards: list[_Shard]) -> None:
    """No question in two shards (by the positions of their results)."""
    questions = []
    owners = []
    for number, shard in enumerate(shards):
        held = np.unique(np.frombuffer(shard.file.positions, dtype=np.int64) >> TRIALS_BITS)
        questions.append(held)
        owners.append(np.full(len(held), number))
    every = np.concatenate(questions) if questions else np.zeros(0, np.int64)
    owner = np.concatenate(owners) if owners else np.zeros(0, np.int64)
    order = np.argsort(every, kind="stable")
    every, owner = every[order], owner[order]
    twice = np.flatnonzero(every[1:] == every[:-1])
    if len(twice):
        at = int(twice[0])
        a, b = shards[int(owner[at])], shards[int(owner[at + 1])]
        raise InputError(
            f"{a.path} and {b.path} both have the question at place {int(every[at]) + 1} of "
            "the reference: shards of different runs"
        )


def _lines(shard: _Shard) -> Iterator[tuple[int, int, bytes]]:
    """(position, shard number, line) of each result of a shard; ``InputError`` when the file
    has another number of results than its shard file has positions."""
    positions = shard.file.positions
    count = 0
    with open(shard.path, "rb") as file:
        for line in file:
            if not line.strip():
                continue
            if count < len(positions):
                yield (
                    positions[count],
                    shard.file.index,
                    line if line.endswith(b"\n") else line + b"\n",
                )
            count += 1
    if count != len(positions):
        raise InputError(
            f"has {count} results but its shard file {len(positions)}: the file was changed",
            source=shard.path,
        )


def _write_results(shards: list[_Shard], out: Path) -> int:
    """Write the results of every shard in the order of one run; returns how many."""
    partial = out.with_name(out.name + ".partial")
    count = 0
    try:
        with partial.open("wb", buffering=1 << 20) as file:
            for _, _, line in heapq.merge(*(_lines(s) for s in shards)):
                file.write(line)
                count += 1
        os.replace(partial, out)
    finally:
        partial.unlink(missing_ok=True)
    return count


def _signature(shards: list[_Shard]) -> dict[str, Any]:
    """One run's signature: the first shard's, with the judges' usage and skipped values added
    up and ``spread`` saying how the run was spread."""
    signature = {k: v for k, v in shards[0].signature.items() if k != "spread"}
    for key in ("usage", "skipped_metric_values"):
        parts = [s.signature.get(key) for s in shards if isinstance(s.signature.get(key), dict)]
        if parts:
            signature[key] = _added(parts)
    signature["spread"] = {"shards": shards[0].file.count}
    return signature


def _added(parts: list[Any]) -> Any:
    """Numbers added up key by key (``peak_concurrency``: the largest)."""
    first = parts[0]
    if isinstance(first, dict):
        keys = dict.fromkeys(k for p in parts if isinstance(p, dict) for k in p)
        out = {}
        for key in keys:
            values = [p[key] for p in parts if isinstance(p, dict) and key in p]
            out[key] = max(values) if key == "peak_concurrency" else _added(values)
        return out
    numbers = [p for p in parts if isinstance(p, (int, float)) and not isinstance(p, bool)]
    if len(numbers) == len(parts):
        return sum(numbers)
    return first
