"""Shards of a run: ``--shard i/N`` evaluates the questions whose id hashes to shard ``i`` of
``N`` (:func:`shard_of`: BLAKE2b of the id, so a reference edit moves only the questions it
adds or removes), and writes, beside its results, what ``qa-eval merge`` needs to put the shards
back together: ``RESULTS.shard.json`` (:class:`ShardFile`) with the shard's place, the position
of each result in the whole run and the shard's partial aggregates.

A position is the key of a result's place in a run over every question: the question's place in
the reference times 2**20, plus the result's place among the trials of its question
(:func:`position_key`), so the results of any shards, merged by position, come in the order of
one run.
"""

from __future__ import annotations

import json
import os
import zlib
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..digest import blake2b
from ..errors import InputError, QaEvalError
from ..vocabulary.frozen import Mutable, mutable

if TYPE_CHECKING:
    from ..aggregate.compute import AggregateSpec
    from ..aggregate.partial import PartialAggregates

__all__ = [
    "TRIALS_BITS",
    "ShardFile",
    "id_key",
    "key_hash",
    "parse_shard",
    "position_key",
    "shard_of",
    "shard_path",
    "shard_places",
]

TRIALS_BITS = 20
"""A question's results (trials) have places below 2**20 in a position key."""
FORMAT = "qa-eval shard 1"


def parse_shard(text: str | tuple[int, int]) -> tuple[int, int]:
    """``"i/N"`` as ``(i, N)`` with 1 <= i <= N; ``QaEvalError`` otherwise."""
    if isinstance(text, tuple):
        index, count = text
    else:
        index_text, slash, count_text = str(text).partition("/")
        try:
            index, count = int(index_text), int(count_text)
        except ValueError:
            index = count = 0
        if not slash:
            index = count = 0
    if not (isinstance(index, int) and isinstance(count, int) and 1 <= index <= count):
        raise QaEvalError(f"a shard is i/N with 1 <= i <= N (e.g. 2/8), not {text!r}")
    return index, count


def id_key(question_id: Any) -> bytes:
    """A question id as bytes, equal for equal ids only (a string and an integer id of the same
    digits differ): what its hash is taken of, and how a compact index of ids compares them."""
    text = f"s:{question_id}" if isinstance(question_id, str) else f"i:{question_id}"
    return text.encode("utf-8", "surrogatepass")


def key_hash(key: bytes) -> int:
    """The 64-bit BLAKE2b hash of an :func:`id_key`."""
    return int.from_bytes(blake2b(key, digest_size=8).digest(), "big")


def shard_of(question_id: Any, count: int) -> int:
    """The shard (1 to ``count``) of a question id: its BLAKE2b hash modulo ``count`` (a string
    and an integer id of the same digits are different ids)."""
    return key_hash(id_key(question_id)) % count + 1


def shard_places(questions: Sequence[Any], shard: tuple[int, int] | None) -> list[int] | None:
    """The places of the questions (with a ``question_id``) of shard ``(i, N)``; None (every
    question) without a shard."""
    if shard is None:
        return None
    index, count = shard
    return [at for at, q in enumerate(questions) if shard_of(q.question_id, count) == index]


def position_key(question: int, trial: int) -> int:
    """The position of the ``trial``-th result (from 0) of the question at ``question``."""
    if trial >= 1 << TRIALS_BITS:
        raise QaEvalError(f"a question has more than {1 << TRIALS_BITS} results")
    return (question << TRIALS_BITS) | trial


def shard_path(results: str | os.PathLike[str]) -> Path:
    """Where a shard's results ``NAME.jsonl`` have their shard file: ``NAME.shard.json`` (as the
    signature is ``NAME.signature.yaml``)."""
    path = Path(results)
    return path.with_name(f"{path.stem}.shard.json")


def _spec_data(spec: AggregateSpec) -> dict[str, Any]:
    return {
        "metrics": list(spec.metrics),
        "numeric_only": sorted(spec.numeric_only),
        "tags": list(spec.tags),
        "thresholds": dict(spec.thresholds),
        "failures": {error: list(names) for error, names in spec.failures.items()},
        "extra_metrics": list(spec.extra_metrics),
        "custom": dict(spec.custom),
        "keys": spec.keys,
    }


def _spec(data: dict[str, Any]) -> AggregateSpec:
    from ..aggregate.compute import AggregateSpec  # here: a run reads no shard file

    return AggregateSpec(
        tuple(data["metrics"]),
        frozenset(data["numeric_only"]),
        tuple(data["tags"]),
        {str(k): float(v) for k, v in data["thresholds"].items()},
        {str(k): tuple(v) for k, v in data["failures"].items()},
        tuple(data["extra_metrics"]),
        {str(k): str(v) for k, v in data["custom"].items()},
        str(data["keys"]),
    )


def _pack_positions(positions: array[int]) -> str:
    import numpy as np

    values = np.frombuffer(positions, dtype=np.int64) if len(positions) else np.zeros(0, np.int64)
    deltas = np.diff(values, prepend=np.int64(0)).astype("<i8")
    import base64  # here: a run in one piece writes no shard file

    return base64.b64encode(zlib.compress(deltas.tobytes(), 6)).decode()


def _unpack_positions(text: str) -> array[int]:
    import base64

    import numpy as np

    raw = zlib.decompress(base64.b64decode(text, validate=True))
    values = np.cumsum(np.frombuffer(raw, dtype="<i8")).astype(np.int64)
    out = array("q")
    out.frombytes(values.tobytes())
    return out


@mutable
class ShardFile(Mutable):
    """What a shard's run writes beside its results (``RESULTS.shard.json``): its place
    (``index`` of ``count``), the position of each of its results in the whole run, and its
    partial aggregates (with the spec they were aggregated by)."""

    index: int
    count: int
    positions: array[int]
    aggregates: PartialAggregates

    def __init__(
        self, index: int, count: int, positions: array[int], aggregates: PartialAggregates
    ) -> None:
        # The fields in order, as @dataclass would write it (see qa_eval.vocabulary.frozen).
        self.index = index
        self.count = count
        self.positions = positions
        self.aggregates = aggregates

    def write(self, results: str | os.PathLike[str]) -> Path:
        """Write it beside the results file; returns its path."""
        from ..aggregate.portable import to_data

        data = {
            "format": FORMAT,
            "shard": [self.index, self.count],
            "positions": _pack_positions(self.positions),
            "spec": _spec_data(self.aggregates.spec),
            "aggregates": to_data(self.aggregates),
        }
        path = shard_path(results)
        path.write_text(json.dumps(data, allow_nan=True, separators=(",", ":")), "utf-8")
        return path

    @classmethod
    def read(cls, results: str | os.PathLike[str]) -> ShardFile:
        """The shard file of a results file; ``InputError`` naming it when it is missing or
        not one."""
        from ..aggregate.portable import from_data

        path = shard_path(results)
        try:
            data = json.loads(path.read_text("utf-8"))
        except FileNotFoundError:
            raise InputError(
                f"no {path.name} beside it: not the results of a run with --shard",
                source=str(results),
            ) from None
        except (OSError, ValueError) as e:
            raise InputError(f"cannot read {path.name}: {e}", source=str(results)) from None
        try:
            if data.get("format") != FORMAT:
                raise ValueError(f"not {FORMAT!r}")
            index, count = data["shard"]
            positions = _unpack_positions(data["positions"])
            aggregates = from_data(data["aggregates"], _spec(data["spec"]))
        except (KeyError, TypeError, AttributeError, ValueError, zlib.error) as e:
            raise InputError(
                f"{path.name} is not a shard file ({e})", source=str(results)
            ) from None
        return cls(int(index), int(count), positions, aggregates)
