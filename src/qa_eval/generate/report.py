"""The generation report: per shape how many questions were asked for and made, what the
quality controls turned away and why, and what ran out; with the graph's let-through counts and
the label qualification counts. Printed after a generation and written by ``--report-json``."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .source import triples_text

__all__ = ["GenerationReport", "ShapeReport"]


@dataclass
class ShapeReport:
    """One shape's counts."""

    wanted: int = 0
    made: int = 0
    attempts: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    ran_out: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """Plain data."""
        return {
            "wanted": self.wanted,
            "made": self.made,
            "attempts": self.attempts,
            "rejected": dict(sorted(self.rejected.items())),
            "ran_out": self.ran_out,
        }


@dataclass
class GenerationReport:
    """What one generation made and turned away."""

    requested: int
    seed: int
    shapes: dict[str, ShapeReport]
    graph: str = ""
    triples: int | None = None
    let_through: dict[str, int] = field(default_factory=dict)
    queries: int = 0
    labels: Counter[str] = field(default_factory=Counter)
    entity_limit_skips: int = 0
    wording: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    unworded: list[str] = field(default_factory=list)
    """Classes and properties left out of the questions: no label in the language (nor a word
    in the config), so their word would be an English-looking local name (not for English)."""

    @property
    def made(self) -> int:
        """Questions written."""
        return sum(s.made for s in self.shapes.values())

    def controls(self) -> dict[str, int]:
        """Rejections by reason, over every shape."""
        total: Counter[str] = Counter()
        for shape in self.shapes.values():
            total.update(shape.rejected)
        return dict(sorted(total.items()))

    def as_dict(self) -> dict[str, Any]:
        """Plain data (``--report-json``)."""
        return {
            "graph": self.graph,
            "triples": self.triples,
            "requested": self.requested,
            "made": self.made,
            "seed": self.seed,
            "let_through": dict(self.let_through),
            "queries_run": self.queries,
            "labels": dict(sorted(self.labels.items())),
            "entity_limit_skips": self.entity_limit_skips,
            "rejected": self.controls(),
            "shapes": {name: s.as_dict() for name, s in self.shapes.items()},
            "wording": self.wording,
            "unworded": list(self.unworded),
            "seconds": round(self.seconds, 3),
        }

    def text(self) -> str:
        """A table for people."""
        let = ", ".join(f"{n} {k}" for k, n in self.let_through.items()) or "nothing"
        lines = [
            f"{self.made} of {self.requested} questions from {self.graph} "
            f"({triples_text(self.triples)}; loading let through {let}); "
            f"{self.queries} queries run",
            f"{'shape':<15} {'wanted':>6} {'made':>5} {'tried':>6}  turned away / ran out",
        ]
        for name, s in self.shapes.items():
            reasons = ", ".join(f"{r} {n}" for r, n in s.rejected.most_common())
            out = f"; ran out: {s.ran_out}" if s.ran_out else ""
            lines.append(
                f"{name:<15} {s.wanted:>6} {s.made:>5} {s.attempts:>6}  {reasons or '-'}{out}"
            )
        if self.labels:
            lines.append(
                "entities named: " + ", ".join(f"{n} {k}" for k, n in sorted(self.labels.items()))
            )
        if self.entity_limit_skips:
            lines.append(f"entities passed over at max_uses_per_entity: {self.entity_limit_skips}")
        if self.unworded:
            lines.append(
                "left out, no label in the language (give them words: in the config): "
                + ", ".join(self.unworded)
            )
        if self.wording:
            lines.append("wording: " + ", ".join(f"{k} {v}" for k, v in self.wording.items()))
        return "\n".join(lines) + "\n"
