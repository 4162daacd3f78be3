"""The numeric shapes: ``aggregate`` (min, max, average, sum of a numeric property, over a class
or the part of it with one property value), ``superlative`` (the entities with the highest or
lowest value; ties: all of them), ``comparison`` (which of two entities has the higher or
earlier value; ties are not asked) and ``filter`` (entities above or below a threshold taken
from the graph's own values, numeric and date ranges)."""

from __future__ import annotations

from collections.abc import Callable

from .candidates import Candidate, Draw, Slot
from .schema import Schema
from .shapes import literal_term, mention, no_label, subject

__all__ = ["MEASURE_SHAPES"]

_FUNCTIONS = {"AVG": "average", "MIN": "lowest", "MAX": "highest", "SUM": "total"}


def _slots_numeric(schema: Schema, kinds: tuple[str, ...] = ("numeric",)) -> list[Slot]:
    return [Slot(u.subject_class, (u,)) for u in schema.uses if u.kind in kinds and u.subjects > 1]


def _slots_scoped(schema: Schema, kinds: tuple[str, ...], functions: tuple[str, ...]) -> list[Slot]:
    """A numeric property and, optionally, an IRI-valued one that picks part of the class;
    an unscoped slot asks each of ``functions`` once."""
    out = []
    for u in schema.uses:
        if u.kind not in kinds or u.subjects < 2:  # over one entity there is nothing to compare
            continue
        out.append(Slot(u.subject_class, (u,), (), left=list(functions)))
        for q in schema.uses_of(u.subject_class):
            if q.kind == "iri" and q.object_class in schema.classes:
                out.append(Slot(u.subject_class, (u, q)))
    return out


def _scope(draw: Draw, slot: Slot, key: str) -> tuple[list[str], dict[str, str], list, str] | str:
    """The patterns, wording slots and named entity of a slot's scope (``with Q O``)."""
    s = draw.schema
    if len(slot.uses) == 1:
        return [], {}, [], ""
    use, q = slot.uses
    target = q.object_class or ""
    iri = draw.next_entity(
        slot,
        target,
        f"?y a <{slot.cls}> . ?y <{q.property}> ?s . ?y <{use.property}> ?w .",
        (key, use.property, q.property),
    )
    named = draw.named(iri, target)
    if named is None:
        return no_label(draw, iri, target)
    scope = {"sq": q.word, "so": mention(named, s)}  # " with Q O", worded per language
    return [f"<{q.property}> <{named.iri}>"], scope, [named], q.property


def _function(draw: Draw, slot: Slot, functions: list[str]) -> str | None:
    """The function a question asks: over a whole class each one once (None when all were
    asked: the slot is done), over part of it any."""
    if len(slot.uses) > 1:
        return str(draw.choice(functions))
    if not slot.left:
        slot.dead = True
        return None
    return str(slot.left.pop(draw.rng.randrange(len(slot.left))))


def aggregate(draw: Draw, slot: Slot) -> Candidate | str:
    """What is the average/lowest/highest/total P of the Cs [with Q O]?"""
    use = slot.uses[0]
    function = _function(draw, slot, sorted(_FUNCTIONS))
    if function is None:
        return "every function of this class and property asked"
    scoped = _scope(draw, slot, "aggregate")
    if isinstance(scoped, str):
        return scoped
    patterns, words, named, q = scoped
    name = function.lower()
    s = draw.schema
    return Candidate(
        shape="aggregate",
        signature=(slot.cls, use.property, *([q] if q else [])),
        select=f"SELECT ({function}(?v) AS ?{name})",
        body=[
            f"?entity a <{slot.cls}> .",
            f"?entity <{use.property}> ?v .",
            *(f"?entity {p} ." for p in patterns),
        ],
        template="aggregate",
        slots={"f": _FUNCTIONS[function], "p": use.word, "cs": s.classes[slot.cls].word, **words},
        named=named,
        columns=[name],
        answer="value",
        rows=(1, 1),
        params={"function": function.lower()},
    )


def superlative(draw: Draw, slot: Slot) -> Candidate | str:
    """Which C [with Q O] has the highest/lowest P? (ties: all of them)"""
    use = slot.uses[0]
    chosen = _function(draw, slot, ["MAX", "MIN"])
    if chosen is None:
        return "both directions of this class and property asked"
    highest = chosen == "MAX"
    scoped = _scope(draw, slot, "superlative")
    if isinstance(scoped, str):
        return scoped
    patterns, words, named, q = scoped
    function = "MAX" if highest else "MIN"
    date = use.kind == "date"
    word = ("latest" if highest else "earliest") if date else ("highest" if highest else "lowest")
    extra = [f"?entity {p} ." for p in patterns]
    inner = " ".join(
        [
            f"?other a <{slot.cls}> .",
            f"?other <{use.property}> ?w .",
            *(f"?other {p} ." for p in patterns),
        ]
    )
    s = draw.schema
    return Candidate(
        shape="superlative",
        signature=(slot.cls, use.property, *([q] if q else [])),
        select="SELECT DISTINCT ?entity ?value",
        body=[
            f"?entity a <{slot.cls}> .",
            f"?entity <{use.property}> ?value .",
            *extra,
            f"{{ SELECT ({function}(?w) AS ?value) WHERE {{ {inner} }} }}",
        ],
        template="superlative",
        slots={"c": s.classes[slot.cls].word, "p": use.word, "most": word, **words},
        named=named,
        columns=["entity"],
        answer="superlative",
        params={"direction": "highest" if highest else "lowest"},
    )


def comparison(draw: Draw, slot: Slot) -> Candidate | str:
    """Which has the higher/lower (earlier/later) P: C A or C B?"""
    (use,) = slot.uses
    first = subject(draw, slot, f"?s <{use.property}> ?v .", ("compare", use.property))
    if isinstance(first, str):
        return first
    second = subject(draw, slot, f"?s <{use.property}> ?v .", ("compare", use.property))
    if isinstance(second, str):
        return second
    a, b = sorted([first, second], key=lambda n: n.iri)
    highest = draw.coin()
    date = use.kind == "date"
    word = ("later" if highest else "earlier") if date else ("higher" if highest else "lower")
    function = "MAX" if highest else "MIN"
    both = f"VALUES ?entity {{ <{a.iri}> <{b.iri}> }}"
    s = draw.schema
    return Candidate(
        shape="comparison",
        signature=(slot.cls, use.property),
        select="SELECT DISTINCT ?entity",
        body=[
            both,
            f"?entity <{use.property}> ?value .",
            f"{{ SELECT ({function}(?w) AS ?value) WHERE {{ "
            f"VALUES ?other {{ <{a.iri}> <{b.iri}> }} ?other <{use.property}> ?w . }} }}",
        ],
        template="comparison",
        slots={
            "p": use.word,
            "more": word,
            "a": mention(first, s, True),
            "b": mention(second, s, True),
        },
        named=[first, second],
        columns=["entity"],
        answer="labels",
        rows=(1, 1),
        params={"direction": word},
    )


def filter_range(draw: Draw, slot: Slot) -> Candidate | str:
    """Which Cs have a P above/below (after/before) T, or between T1 and T2? The thresholds are
    the graph's own values: past the tails, and windows at inner quantiles."""
    (use,) = slot.uses
    if not slot.left:  # the tails first; the windows only when the tails are used up
        if slot.cursor >= 2:
            slot.dead = True
            return "every threshold of this class and property asked"
        slot.cursor += 1
        slot.left = _thresholds(draw, slot) if slot.cursor == 1 else _windows(draw, slot)
        if not slot.left:
            return "no threshold leaves between 1 and max_answers entities"
    direction, low, high = slot.left.pop(draw.rng.randrange(len(slot.left)))
    date = use.kind == "date"
    s = draw.schema
    if direction == "between":
        condition = f"?value >= {literal_term(low)} && ?value <= {literal_term(high)}"
        words = {"t": str(low["value"]), "t2": str(high["value"])}
        params = {"from": str(low["value"]), "to": str(high["value"]), "direction": "between"}
    else:
        above = direction == "above"
        word = ("after" if above else "before") if date else direction
        condition = f"?value {'>' if above else '<'} {literal_term(low)}"
        words = {"op": word, "t": str(low["value"])}
        params = {"threshold": str(low["value"]), "direction": word}
    return Candidate(
        shape="filter",
        signature=(slot.cls, use.property),
        select="SELECT DISTINCT ?entity",
        body=[
            f"?entity a <{slot.cls}> .",
            f"?entity <{use.property}> ?value .",
            f"FILTER({condition})",
        ],
        template="filter_between" if direction == "between" else "filter",
        slots={"cs": s.classes[slot.cls].word, "p": use.word, **words},
        named=[],
        columns=["entity"],
        answer="labels",
        params=params,
    )


Threshold = tuple[str, dict, dict]
"""(``above``, ``below`` or ``between``; the threshold or the window's low end; its high end)."""
QUANTILES = (1 / 3, 2 / 3)
"""Where in a property's sorted values the windows of ``between`` questions are taken (each
costs the graph a pass over the property's values)."""
WINDOWS_PER_QUANTILE = 6


def _values_by_count(draw: Draw, slot: Slot, tail: str) -> list[tuple[dict, int]]:
    """(value, entities with it) in the value order, from ``tail`` (ORDER BY, OFFSET, LIMIT)."""
    (use,) = slot.uses
    rows = draw.entities.graph.run(
        f"SELECT ?v (COUNT(DISTINCT ?s) AS ?n) WHERE {{ ?s a <{slot.cls}> . "
        f"?s <{use.property}> ?v . FILTER(isLiteral(?v)) }} GROUP BY ?v {tail}"
    )["results"]["bindings"]
    return [(row["v"], int(row["n"]["value"])) for row in rows]


def _thresholds(draw: Draw, slot: Slot) -> list[Threshold]:
    """The graph's values past which 1 to max_answers entities lie (the tails)."""
    limit = draw.max_answers
    out: list[Threshold] = []
    for above in (True, False):
        seen = 0
        order = "DESC(?v)" if above else "?v"
        for value, n in _values_by_count(draw, slot, f"ORDER BY {order} LIMIT {limit + 1}"):
            if 1 <= seen <= limit:
                out.append(("above" if above else "below", value, value))
            seen += n
    return out


def _windows(draw: Draw, slot: Slot) -> list[Threshold]:
    """Windows of two or more consecutive values that 1 to max_answers entities have, taken at
    the property's inner quantiles (so a big class still gets range questions that are not
    about its extremes); a value more entities have than max_answers is in no window."""
    (use,) = slot.uses
    limit = draw.max_answers
    rows = draw.entities.graph.run(
        f"SELECT (COUNT(DISTINCT ?v) AS ?n) WHERE {{ ?s a <{slot.cls}> . "
        f"?s <{use.property}> ?v . FILTER(isLiteral(?v)) }}"
    )["results"]["bindings"]
    distinct = int(rows[0]["n"]["value"]) if rows else 0
    out: list[Threshold] = []
    seen: set[str] = set()
    for offset in sorted({int(distinct * q) for q in QUANTILES}):
        block = _values_by_count(draw, slot, f"ORDER BY ?v OFFSET {offset} LIMIT {8 * limit}")
        made = start = 0
        while start < len(block) and made < WINDOWS_PER_QUANTILE:
            end, total = start, 0
            while end < len(block) and total + block[end][1] <= limit:
                total += block[end][1]
                end += 1
            if end - start >= 2:
                low, high = block[start][0], block[end - 1][0]
                key = repr((sorted(low.items()), sorted(high.items())))
                if key not in seen:
                    seen.add(key)
                    out.append(("between", low, high))
                    made += 1
            start = max(end, start + 1)
    return out


MEASURE_SHAPES: dict[
    str, tuple[Callable[[Schema], list[Slot]], Callable[[Draw, Slot], Candidate | str]]
] = {
    "aggregate": (lambda s: _slots_scoped(s, ("numeric",), tuple(sorted(_FUNCTIONS))), aggregate),
    "superlative": (lambda s: _slots_scoped(s, ("numeric", "date"), ("MAX", "MIN")), superlative),
    "comparison": (lambda s: _slots_numeric(s, ("numeric", "date")), comparison),
    "filter": (lambda s: _slots_numeric(s, ("numeric", "date")), filter_range),
}
"""Shape name -> (its slots in a schema, the builder of one candidate)."""
