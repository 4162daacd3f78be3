"""The query shapes: for each, the slots it draws from (which classes and properties of the
schema it fits) and how one question is built. ``SHAPES`` lists them in the order of
``--shapes``; ``measures`` holds the numeric ones (aggregate, superlative, comparison, filter).

Entities named in the subject position are called by their class word and label ("substation
OSLO"), so a label unique within the class is enough; entities named as a value are called by
their label alone when no other entity has it, else by class word and label.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .candidates import Candidate, Draw, Slot
from .entities import Named
from .schema import PropertyUse, Schema, lang_filter
from .source import writable

__all__ = [
    "ENTITY_SHAPES",
    "literal_term",
    "mention",
    "no_label",
    "subject",
    "term",
]

NO_LABEL = "entity without a label in the language"
AMBIGUOUS = "entity label shared with another entity of its class"


def term(value: dict[str, Any]) -> str:
    """A SPARQL JSON term as SPARQL text (IRIs in ``<>``)."""
    if value["type"] == "uri":
        return f"<{value['value']}>"
    return literal_term(value)


def literal_term(value: dict[str, Any]) -> str:
    """A literal SPARQL JSON term as SPARQL text."""
    text = str(value["value"]).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    if value.get("xml:lang"):
        return f'"{text}"@{value["xml:lang"]}'
    if value.get("datatype"):
        return f'"{text}"^^<{value["datatype"]}>'
    return f'"{text}"'


def mention(named: Named, schema: Schema, always_class: bool = False) -> str:
    """How a question names an entity: ``class-word label`` unless the label alone is
    unique (and the class is not asked for)."""
    if always_class or named.qualified != "unique":
        return (
            f"{schema.classes[named.cls].word} {named.label}"
            if named.cls in schema.classes
            else named.label
        )
    return named.label


def no_label(draw: Draw, iri: str, cls: str) -> str:
    """Why an entity cannot be named."""
    return NO_LABEL if draw.entities.label(iri) is None else AMBIGUOUS


def subject(draw: Draw, slot: Slot, pattern: str, key: tuple[str, ...] = ()) -> Named | str:
    """The next subject entity of the slot's class, named; or why it cannot be."""
    iri = draw.next_entity(slot, slot.cls, pattern, key)
    named = draw.named(iri, slot.cls)
    return named if named is not None else no_label(draw, iri, slot.cls)


def _value_filter(use: PropertyUse, var: str, schema: Schema) -> list[str]:
    """A language filter on text values (so no answer mixes languages)."""
    return [f"FILTER({lang_filter(var, schema.language)})"] if use.kind in ("text", "mixed") else []


def _slots_value(schema: Schema) -> list[Slot]:
    return [
        Slot(u.subject_class, (u,))
        for u in schema.uses
        if u.kind in ("iri", "numeric", "date", "text")
    ]


def _lookup(draw: Draw, slot: Slot, many: bool) -> Candidate | str:
    (use,) = slot.uses
    pattern = (
        f"?s <{use.property}> ?a , ?b . FILTER(?a != ?b)" if many else f"?s <{use.property}> ?o ."
    )
    named = subject(draw, slot, pattern, ("many" if many else "one", use.property))
    if isinstance(named, str):
        return named
    s = draw.schema
    return Candidate(
        shape="list" if many else "lookup",
        signature=(slot.cls, use.property),
        select="SELECT DISTINCT ?value",
        body=[f"<{named.iri}> <{use.property}> ?value .", *_value_filter(use, "?value", s)],
        template="list" if many else "lookup",
        slots={"p": use.word, "e": mention(named, s, True)},
        named=[named],
        columns=["value"],
        answer="labels",
        rows=(2, None) if many else (1, 1),
    )


def lookup(draw: Draw, slot: Slot) -> Candidate | str:
    """What is the P of C E? (one value)"""
    return _lookup(draw, slot, False)


def list_values(draw: Draw, slot: Slot) -> Candidate | str:
    """What are all the P values of C E? (every value of a multi-valued property); reverse:
    What are all the Cs whose P is O? (the subjects that share one object: 2 to max_answers)"""
    if slot.extra != ("reverse",):
        return _lookup(draw, slot, True)
    (use,) = slot.uses
    limit = draw.max_answers
    shared = (
        f"{{ SELECT ?s WHERE {{ ?y a <{slot.cls}> . ?y <{use.property}> ?s . }} GROUP BY ?s "
        f"HAVING (COUNT(DISTINCT ?y) >= 2 && COUNT(DISTINCT ?y) <= {limit}) }}"
    )
    target = use.object_class or ""
    key = ("list reverse", slot.cls, use.property)
    iri = draw.next_entity(slot, target, shared, key, whole=True)
    named = draw.named(iri, target)
    if named is None:
        return no_label(draw, iri, target)
    s = draw.schema
    return Candidate(
        shape="list",
        signature=(target, slot.cls, use.property),  # list__Substation__Line__toSubstation
        select="SELECT DISTINCT ?entity",
        body=[f"?entity a <{slot.cls}> .", f"?entity <{use.property}> <{named.iri}> ."],
        template="list_reverse",
        slots={"cs": s.classes[slot.cls].word, "p": use.word, "o": mention(named, s)},
        named=[named],
        columns=["entity"],
        answer="labels",
        rows=(2, None),
        params={"direction": "reverse"},
    )


def _slots_list(schema: Schema) -> list[Slot]:
    """Multi-valued properties (every value of one subject), and IRI-valued ones whose objects
    a class can name (every subject of one object: the lines that connect to a substation)."""
    forward = [s for s in _slots_value(schema) if s.uses[0].multi_valued]
    return forward + [Slot(s.cls, s.uses, ("reverse",)) for s in _slots_link(schema)]


def _slots_link(schema: Schema) -> list[Slot]:
    """IRI-valued properties whose objects have a class (so they can be named)."""
    return [
        Slot(u.subject_class, (u,))
        for u in schema.uses
        if u.kind == "iri" and u.object_class in schema.classes
    ]


def _object(draw: Draw, slot: Slot, key: str) -> Named | str:
    """The next object entity of the slot's property, used by an instance of its class."""
    (use,) = slot.uses
    target = use.object_class or ""
    iri = draw.next_entity(
        slot, target, f"?y a <{slot.cls}> . ?y <{use.property}> ?s .", (key, slot.cls, use.property)
    )
    named = draw.named(iri, target)
    return named if named is not None else no_label(draw, iri, target)


def _by_object(draw: Draw, slot: Slot, counted: bool) -> Candidate | str:
    """The instances of the slot's class whose property has one object: listed or counted."""
    (use,) = slot.uses
    shape = "count" if counted else "reverse_lookup"
    named = _object(draw, slot, shape)
    if isinstance(named, str):
        return named
    s = draw.schema
    return Candidate(
        shape=shape,
        signature=(slot.cls, use.property),
        select="SELECT (COUNT(DISTINCT ?entity) AS ?count)"
        if counted
        else "SELECT DISTINCT ?entity",
        body=[f"?entity a <{slot.cls}> .", f"?entity <{use.property}> <{named.iri}> ."],
        template=shape,
        slots={"cs": s.classes[slot.cls].word, "p": use.word, "o": mention(named, s)},
        named=[named],
        columns=["count" if counted else "entity"],
        answer="count" if counted else "labels",
        rows=(1, 1) if counted else None,
    )


def reverse_lookup(draw: Draw, slot: Slot) -> Candidate | str:
    """Which Cs have P O?"""
    return _by_object(draw, slot, counted=False)


def count(draw: Draw, slot: Slot) -> Candidate | str:
    """How many Cs have P O?"""
    return _by_object(draw, slot, counted=True)


def _chains(schema: Schema, hops: int) -> list[Slot]:
    """Paths of ``hops`` properties: IRI-valued ones to a class, then any answerable one."""
    paths: list[tuple[PropertyUse, ...]] = [
        (u,) for u in schema.uses if u.kind == "iri" and u.object_class in schema.classes
    ]
    for _ in range(hops - 2):
        paths = [
            (*p, u)
            for p in paths
            for u in schema.uses_of(p[-1].object_class or "")
            if u.kind == "iri" and u.object_class in schema.classes
        ]
    return [
        Slot(p[0].subject_class, (*p, u))
        for p in paths
        for u in schema.uses_of(p[-1].object_class or "")
        if u.kind in ("iri", "numeric", "date", "text") and u.property != p[-1].property
    ]


def hops(draw: Draw, slot: Slot) -> Candidate | str:
    """What is the P2 of the P1 of C E? (two or three hops)"""
    uses = slot.uses
    ends = ["?s", *(f"?m{i}" for i in range(1, len(uses))), "?v"]
    chain = " . ".join(f"{ends[i]} <{u.property}> {ends[i + 1]}" for i, u in enumerate(uses))
    named = subject(draw, slot, chain + " .", tuple(u.property for u in uses))
    if isinstance(named, str):
        return named
    s = draw.schema
    body = []
    for i, u in enumerate(uses):
        left = f"<{named.iri}>" if i == 0 else f"?hop{i}"
        right = "?value" if i == len(uses) - 1 else f"?hop{i + 1}"
        body.append(f"{left} <{u.property}> {right} .")
    body += _value_filter(uses[-1], "?value", s)
    back = [f"?hop{i} != <{named.iri}>" for i in range(2, len(uses))]
    if uses[-1].kind == "iri":
        back.append(f"?value != <{named.iri}>")
    if back:
        body.append(f"FILTER({' && '.join(back)})")
    shape = "two_hop" if len(uses) == 2 else "three_hop"
    return Candidate(
        shape=shape,
        signature=(slot.cls, *(u.property for u in uses)),
        select="SELECT DISTINCT ?value",
        body=body,
        template=shape,
        slots={
            "e": mention(named, s, True),
            **{f"p{i + 1}": u.word for i, u in enumerate(uses)},
        },
        named=[named],
        columns=["value"],
        answer="labels",
    )


def boolean(draw: Draw, slot: Slot) -> Candidate | str:
    """Is the P of C E O? (half true; a false one verified absent)"""
    (use,) = slot.uses
    named = subject(draw, slot, f"?s <{use.property}> ?o .", ("boolean", use.property))
    if isinstance(named, str):
        return named
    s = draw.schema
    held = draw.entities.values_of(named.iri, use.property, " ".join(_value_filter(use, "?o", s)))
    held = [v for v in held if writable(v)]
    if not held:
        return "no value in the language"
    truth = draw.balance_boolean()
    if truth:
        value = draw.choice(sorted(held, key=term))
    else:
        others = draw.entities.sample_values(
            slot.cls, use.property, " ".join(_value_filter(use, "?o", s))
        )
        shown_held = {term(v) for v in held}
        absent = [v for v in others if writable(v) and term(v) not in shown_held]
        if not absent:
            return "no other value to ask a false question with"
        absent = [draw.choice(absent)]
        value = absent[0]
    named_list = [named]
    if value["type"] == "uri":
        target = use.object_class or ""
        other = draw.named(value["value"], target)
        if other is None:
            return no_label(draw, value["value"], target)
        shown = mention(other, s)
        named_list.append(other)
    else:
        shown = str(value["value"])
    return Candidate(
        shape="boolean",
        signature=(slot.cls, use.property),
        select="ASK",
        body=[f"<{named.iri}> <{use.property}> {term(value)} ."],
        template="boolean",
        slots={"p": use.word, "e": mention(named, s, True), "o": shown},
        named=named_list,
        columns=[],
        answer="boolean",
        expected=truth,
    )


def _slots_pairs(schema: Schema) -> list[Slot]:
    out = []
    for cls in schema.classes:
        uses = [u for u in schema.uses_of(cls) if u.kind in ("iri", "numeric", "date", "text")]
        out += [Slot(cls, (a, b)) for a in uses for b in uses if a.property < b.property]
    return out


def intersection(draw: Draw, slot: Slot) -> Candidate | str:
    """Which Cs have P1 O1 and P2 O2?"""
    a, b = slot.uses
    s = draw.schema
    iri = draw.next_entity(
        slot,
        slot.cls,
        f"?s <{a.property}> ?x . ?s <{b.property}> ?y .",
        ("and", a.property, b.property),
    )
    named: list[Named] = []
    shown: list[str] = []
    body = [f"?entity a <{slot.cls}> ."]
    for use in (a, b):
        held = draw.entities.values_of(iri, use.property, " ".join(_value_filter(use, "?o", s)))
        held = sorted((v for v in held if writable(v)), key=term)
        if not held:
            return "no value in the language"
        value = held[0]
        if value["type"] == "uri":
            other = draw.named(value["value"], use.object_class or "")
            if other is None:
                return no_label(draw, value["value"], use.object_class or "")
            named.append(other)
            shown.append(mention(other, s))
        else:
            shown.append(str(value["value"]))
        body.append(f"?entity <{use.property}> {term(value)} .")
    return Candidate(
        shape="intersection",
        signature=(slot.cls, a.property, b.property),
        select="SELECT DISTINCT ?entity",
        body=body,
        template="intersection",
        slots={
            "cs": s.classes[slot.cls].word,
            "p1": a.word,
            "o1": shown[0],
            "p2": b.word,
            "o2": shown[1],
        },
        named=named,
        columns=["entity"],
        answer="labels",
    )


def _slots_missing(schema: Schema) -> list[Slot]:
    """Class and property pairs where some instances lack the property, or where the property
    is used by other classes but not this one."""
    out = []
    used = {(u.subject_class, u.property) for u in schema.uses}
    for u in schema.uses:
        if u.subjects < schema.classes[u.subject_class].instances:
            out.append(Slot(u.subject_class, (u,), ("lacks",)))
    for cls in schema.classes:
        for u in {x.property: x for x in schema.uses}.values():
            if (cls, u.property) not in used:
                out.append(Slot(cls, (u,), ("never",)))
    return out


def unanswerable(draw: Draw, slot: Slot) -> Candidate | str:
    """What is the P of C E? where the graph holds no P for E (a control: verified empty)."""
    (use,) = slot.uses
    pattern = f"FILTER NOT EXISTS {{ ?s <{use.property}> ?o }}"
    named = subject(draw, slot, pattern, ("none", use.property))
    if isinstance(named, str):
        return named
    s = draw.schema
    return Candidate(
        shape="unanswerable",
        signature=(slot.cls, use.property),
        select="SELECT DISTINCT ?value",
        body=[f"<{named.iri}> <{use.property}> ?value ."],
        template="unanswerable",
        slots={"p": use.word, "e": mention(named, s, True)},
        named=[named],
        columns=["value"],
        answer="none",
        rows=(0, 0),
        params={"missing": slot.extra[0]},
    )


ENTITY_SHAPES: dict[
    str, tuple[Callable[[Schema], list[Slot]], Callable[[Draw, Slot], Candidate | str]]
] = {
    "lookup": (_slots_value, lookup),
    "reverse_lookup": (_slots_link, reverse_lookup),
    "two_hop": (lambda schema: _chains(schema, 2), hops),
    "three_hop": (lambda schema: _chains(schema, 3), hops),
    "count": (_slots_link, count),
    "boolean": (_slots_value, boolean),
    "intersection": (_slots_pairs, intersection),
    "list": (_slots_list, list_values),
    "unanswerable": (_slots_missing, unanswerable),
}
"""Shape name -> (its slots in a schema, the builder of one candidate)."""
