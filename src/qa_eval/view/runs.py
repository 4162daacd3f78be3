"""The runs the viewer was started on: each results file's index, label and signature, and the
figures of the runs page (computed in SQL over the index, never by loading every result)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..io.files import read_data, signature_path
from .index import LOCK, Index, open_index

__all__ = ["Run", "headline", "load_runs", "usage"]

_USAGE = ("cost", "llm_cost", "total_tokens", "input_tokens", "output_tokens", "elapsed_sec")


@dataclass(eq=False)
class Run:
    """One results file: its label, index and signature (None without a signature file)."""

    label: str
    index: Index
    signature: Mapping[str, Any] | None
    cache: dict[tuple[Any, ...], Any] = field(default_factory=dict)

    @property
    def traced(self) -> int:
        """How many results were imported from agent traces."""
        return int(self._totals()[2])

    @property
    def errors(self) -> int:
        """How many results are errors."""
        return int(self._totals()[1])

    @property
    def trials(self) -> int:
        """The most trials of one question (0: no trials)."""
        with LOCK:
            value = self.index.db.execute("SELECT max(trial) FROM q").fetchone()[0]
        return 0 if value is None else int(value) + 1

    def _totals(self) -> tuple[int, float, float]:
        with LOCK:
            row = self.index.db.execute(
                "SELECT n, total, macro FROM summary WHERE name = ''"
            ).fetchone()
        return int(row[0]), float(row[1] or 0), float(row[2] or 0)


def _signature(path: Path) -> Mapping[str, Any] | None:
    file = signature_path(path.with_name(path.name.removesuffix(".gz")))
    if not file.is_file():
        return None
    data = read_data(file)
    return data if isinstance(data, Mapping) else {"signature": data}


def load_runs(paths: Sequence[str | os.PathLike[str]], *, rebuild: bool = False) -> list[Run]:
    """Open (building when needed) the index of each results file."""
    from ..report import run_labels

    labels = run_labels([Path(p).with_name(Path(p).name.removesuffix(".gz")) for p in paths])
    return [
        Run(label, open_index(path, rebuild=rebuild), _signature(Path(path)))
        for path, label in zip(paths, labels)
    ]


def headline(run: Run) -> list[tuple[str, float | None, float | None, int]]:
    """Per metric: (name, micro mean over the questions with a value, macro mean over the
    templates' means, questions with a value), as computed when the index was built."""
    out = []
    with LOCK:
        rows = run.index.db.execute("SELECT name, mean, macro, n FROM summary WHERE name != ''")
        for name, micro, macro, n in rows.fetchall():
            if name.endswith(("_sd", "_flipped")) or name in _USAGE or name == "judge_repeats":
                continue
            out.append((name, micro, macro, int(n)))
    return out


def usage(run: Run) -> list[tuple[str, float]]:
    """The run's summed usage (cost, tokens, time) where its results carry it."""
    with LOCK:
        totals = dict(run.index.db.execute("SELECT name, total FROM summary WHERE name != ''"))
    return [(name, float(totals[name])) for name in _USAGE if name in totals]
