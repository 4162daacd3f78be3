"""What a shape proposes: a :class:`Candidate` question (its query, the entities it names, the
wording slots and the answer it expects), and the :class:`Draw` a shape draws entities from (a
seeded random source, per-slot cursors over the seeded entity samples, the usage counts the
diversity control reads)."""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .entities import Entities, Named
from .schema import ClassInfo, PropertyUse, Schema
from .source import writable

__all__ = ["Candidate", "Draw", "Exhausted", "Slot"]


class Exhausted(Exception):
    """A slot has no entity left to draw: the shape gives it up."""


@dataclass
class Candidate:
    """One question a shape proposes, before it is executed and checked.

    ``body`` holds the query's patterns with full IRIs (``wording.render`` writes them with
    prefixes). ``rows`` is the number of result rows the shape asks for: ``(1, 1)`` a single
    answer, ``(2, None)`` a list, ``(0, 0)`` a control; ``None`` up to ``max_answers``."""

    shape: str
    signature: tuple[str, ...]
    select: str
    body: list[str]
    template: str
    slots: dict[str, str]
    named: list[Named]
    columns: list[str]
    answer: str
    rows: tuple[int, int | None] | None = None
    tail: str = ""
    expected: bool | None = None
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def control(self) -> bool:
        """Whether this is an unanswerable control (verified empty)."""
        return self.rows == (0, 0)


@dataclass
class Slot:
    """A place a shape draws questions from: a class and the properties of its signature."""

    cls: str
    uses: tuple[PropertyUse, ...]
    extra: tuple[Any, ...] = ()
    dead: bool = False
    cursor: int = 0
    left: list[Any] = field(default_factory=list)


class Draw:
    """The seeded choices of one generation."""

    def __init__(
        self, schema: Schema, entities: Entities, seed: int, max_uses: int, max_answers: int
    ) -> None:
        self.schema = schema
        self.max_answers = max_answers
        self.entities = entities
        self.rng = random.Random(seed)
        self.max_uses = max_uses
        self.uses: Counter[str] = Counter()
        self.truths: Counter[bool] = Counter()
        self.skipped = 0
        """Entities passed over because they were named in ``max_uses`` questions already."""

    def pick_slot(self, slots: Sequence[Slot]) -> Slot | None:
        """A live slot: its class chosen in proportion to the square root of its instance
        count, then one of that class's slots uniformly."""
        live = [s for s in slots if not s.dead]
        if not live:
            return None
        classes = sorted({s.cls for s in live})
        weights = [math.sqrt(self.schema.classes[c].instances) for c in classes]
        cls = self.rng.choices(classes, weights)[0]
        return self.rng.choice([s for s in live if s.cls == cls])

    def next_entity(
        self, slot: Slot, cls: str, pattern: str, key: tuple[str, ...] = (), whole: bool = False
    ) -> str:
        """The next instance of ``cls`` matching ``pattern`` (on ``?s``) in the slot's seeded
        order whose uses are under the limit; ``Exhausted`` when none is left (``whole``: see
        ``Entities.sample``)."""
        sample = self.entities.sample(cls, pattern, key, whole)
        while slot.cursor < len(sample):
            iri = sample[slot.cursor]
            slot.cursor += 1
            if not writable({"type": "uri", "value": iri}):
                continue
            if self.uses[iri] < self.max_uses:
                return iri
            self.skipped += 1
        raise Exhausted

    def named(self, iri: str, cls: str) -> Named | None:
        """The entity named by its label, or None (no label in the language, ambiguous)."""
        return self.entities.unambiguous(iri, cls)

    def cls(self, iri: str) -> ClassInfo:
        """A class of the schema."""
        return self.schema.classes[iri]

    def choice(self, items: Sequence[Any]) -> Any:
        """One of ``items``, seeded."""
        return self.rng.choice(list(items))

    def coin(self) -> bool:
        """A seeded fair coin."""
        return self.rng.random() < 0.5

    def balance_boolean(self) -> bool:
        """Whether the next yes/no question is a true one: the side with fewer accepted
        questions, a seeded coin on a tie (about half true, half false)."""
        if self.truths[True] != self.truths[False]:
            return self.truths[True] < self.truths[False]
        return self.coin()


Builder = Callable[[Draw, Slot], "Candidate | str"]
