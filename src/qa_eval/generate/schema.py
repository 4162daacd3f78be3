"""The graph's own vocabulary, read from the data with a few aggregate queries: classes with
their instance counts, properties with the classes and datatypes they are used with and how
often, which are multi-valued, the label properties per language, and the words a question uses
for each class and property (``describe`` prints it: ``qa-eval generate --describe``)."""

from __future__ import annotations

import builtins
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError
from ..steps.sparql.terms import NUMERIC_TYPES
from .settings import COMMON_PREFIXES, GenerateSettings
from .source import Graph, GraphError, triples_text, valid_language_tag

__all__ = [
    "DATE_TYPES",
    "RDF_TYPE",
    "ClassInfo",
    "PropertyUse",
    "Schema",
    "compact",
    "describe_json",
    "describe_text",
    "read_schema",
]

RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
XSD = "http://www.w3.org/2001/XMLSchema#"
DATE_TYPES = frozenset(XSD + name for name in ("date", "dateTime", "gYear", "gYearMonth"))


@dataclass(frozen=True)
class ClassInfo:
    """A class: its instances, how many of them have a label in the language, its word."""

    iri: str
    instances: int
    labelled: int
    word: str


@dataclass(frozen=True)
class PropertyUse:
    """A property as used by the instances of one class."""

    subject_class: str
    property: str
    triples: int
    subjects: int
    iris: int
    literals: int
    blank_nodes: int
    datatypes: tuple[tuple[str, int], ...]
    object_classes: tuple[tuple[str, int], ...]
    word: str

    @builtins.property
    def multi_valued(self) -> bool:
        """Whether some subject has more than one value."""
        return self.triples > self.subjects

    @builtins.property
    def kind(self) -> str:
        """``iri`` (objects are IRIs), ``numeric``, ``date``, ``text`` (plain literals) or
        ``mixed``: the shapes each kind allows differ."""
        if self.iris and not self.literals and not self.blank_nodes:
            return "iri"
        if self.literals and not self.iris and not self.blank_nodes:
            types = {t for t, _ in self.datatypes}
            if types <= NUMERIC_TYPES:
                return "numeric"
            if len(types) == 1 and types <= DATE_TYPES:
                return "date"
            if not types & (NUMERIC_TYPES | DATE_TYPES):
                return "text"
        return "mixed"

    @builtins.property
    def object_class(self) -> str | None:
        """The class most objects have (IRI-valued properties), else None."""
        return self.object_classes[0][0] if self.object_classes else None


@dataclass
class Schema:
    """What the graph holds, for the shapes and for ``--describe``."""

    graph: str
    triples: int | None
    language: str
    classes: dict[str, ClassInfo]
    uses: list[PropertyUse]
    label_properties: tuple[str, ...]
    labels: dict[str, dict[str, int]]
    prefixes: dict[str, str]
    let_through: dict[str, int] = field(default_factory=dict)
    unworded: frozenset[str] = frozenset()
    """Classes and properties whose word is their local name (no label in the language and no
    word in the config)."""

    def uses_of(self, cls: str) -> list[PropertyUse]:
        """The properties the instances of ``cls`` use."""
        return [u for u in self.uses if u.subject_class == cls]

    def short(self, iri: str) -> str:
        """The IRI as a prefixed name when a prefix fits, else ``<iri>``."""
        return compact(iri, self.prefixes)[0]


def compact(iri: str, prefixes: Mapping[str, str]) -> tuple[str, str | None]:
    """(the IRI as a prefixed name with the longest namespace that fits, else ``<iri>``; the
    prefix used, or None)."""
    best: str | None = None
    for prefix, namespace in prefixes.items():
        fits = namespace and iri.startswith(namespace) and _LOCAL.fullmatch(iri[len(namespace) :])
        if fits and (best is None or len(namespace) > len(prefixes[best])):
            best = prefix
    if best is None:
        return f"<{iri}>", None
    return f"{best}:{iri[len(prefixes[best]) :]}", best


_META = tuple(COMMON_PREFIXES[p] for p in ("rdf", "rdfs", "owl"))
"""Namespaces whose classes describe the schema, not the data (left out unless included)."""
_LOCAL = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def lang_filter(var: str, language: str) -> str:
    """A SPARQL condition: the literal ``var`` is in the language, or has no language tag."""
    return f'(LANGMATCHES(LANG({var}), "{language}") || LANG({var}) = "")'


def values(var: str, iris: Iterable[str]) -> str:
    """A ``VALUES`` block of IRIs."""
    return f"VALUES {var} {{ {' '.join(f'<{i}>' for i in iris)} }}"


def _rows(graph: Graph, query: str) -> list[dict[str, Any]]:
    return list(graph.run(query)["results"]["bindings"])


def _value(row: Mapping[str, Any], name: str) -> str:
    term = row.get(name)
    return "" if term is None else str(term["value"])


def _split_words(local: str) -> str:
    """``ratedMVA`` -> ``rated MVA``, ``voltage_level`` -> ``voltage level``."""
    text = re.sub(r"[_\-.]+", " ", local)
    text = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", text)
    text = re.sub(r"(?<=[A-Z])(?=[A-Z][a-z])", " ", text)
    words = [w if (len(w) > 1 and w.isupper()) else w.lower() for w in text.split()]
    return " ".join(words) or local


def local_name(iri: str) -> str:
    """The last part of an IRI (after ``#``, ``/`` or ``:``)."""
    return re.split(r"[#/:]", iri.rstrip("/#"))[-1] or iri


def _word_of_label(label: str, language: str) -> str:
    """A class or property label as a word in running text: in English ``Power transformer``
    -> ``power transformer`` (``NO1`` stays); other languages keep their capitals."""
    if language.lower().split("-")[0] != "en":
        return label
    first = label.split(" ", 1)[0]
    if len(first) > 1 and first[1:].islower() and first[0].isupper():
        return label[0].lower() + label[1:]
    return label


def _words(
    graph: Graph,
    iris: list[str],
    settings: GenerateSettings,
    label_iris: tuple[str, ...],
    language: str,
) -> tuple[dict[str, str], frozenset[str]]:
    """The word of each class and property: the config's, else its label in the language,
    else its local name split into words; and the IRIs whose word is their local name."""
    found: dict[str, tuple[int, str]] = {}
    if iris:
        rows = _rows(
            graph,
            f"SELECT ?x ?lp ?l WHERE {{ {values('?x', iris)} {values('?lp', label_iris)} "
            f"?x ?lp ?l FILTER(isLiteral(?l) && {lang_filter('?l', language)}) }}",
        )
        for row in rows:
            rank = label_iris.index(_value(row, "lp")) * 2 + (0 if row["l"].get("xml:lang") else 1)
            text = _value(row, "l").strip()
            key = (rank, text)
            x = _value(row, "x")
            if text and (x not in found or key < found[x]):
                found[x] = key
    words = {
        iri: _word_of_label(found[iri][1], language)
        if iri in found
        else _split_words(local_name(iri))
        for iri in iris
    }
    for name, word in settings.words.items():
        words[settings.resolve(name, graph.prefixes)] = word
        found[settings.resolve(name, graph.prefixes)] = (0, word)
    return words, frozenset(iri for iri in iris if iri not in found)


def _check_language(language: str, labels: dict[str, dict[str, int]], graph: str) -> None:
    if not valid_language_tag(language):
        raise InputError(f"--lang {language!r} is not a BCP 47 language tag")
    tags = {tag.lower() for per in labels.values() for tag in per}
    if not tags:
        raise GraphError(
            "the graph has no labels (rdfs:label, skos:prefLabel, schema:name, dct:title, "
            "foaf:name; name others under labels: in the config)",
            source=graph,
        )
    wanted = language.lower()
    if "" not in tags and not any(t == wanted or t.startswith(wanted + "-") for t in tags):
        have = ", ".join(sorted(tags)[:8])
        raise InputError(
            f"--lang {language}: the graph has no labels in that language and none without a "
            f"language tag (it has: {have})",
            source=graph,
        )


def read_schema(graph: Graph, settings: GenerateSettings, language: str = "en") -> Schema:
    """Read the schema of a graph (a handful of aggregate queries)."""
    resolve = settings.resolve
    label_iris = tuple(resolve(n, graph.prefixes) for n in settings.labels)
    labels: dict[str, dict[str, int]] = {}
    for row in _rows(
        graph,
        f"SELECT ?lp ?lang (COUNT(*) AS ?n) WHERE {{ {values('?lp', label_iris)} ?s ?lp ?l "
        "FILTER(isLiteral(?l)) } GROUP BY ?lp (LANG(?l) AS ?lang)",
    ):
        labels.setdefault(_value(row, "lp"), {})[_value(row, "lang")] = int(_value(row, "n"))
    _check_language(language, labels, graph.name)
    included = [resolve(n, graph.prefixes) for n in settings.include_classes]
    scope = values("?c", included) if included else ""  # a large graph: read only those
    classes = _classes(graph, label_iris, language, scope)
    uses = _uses(graph, label_iris, scope)
    classes, uses = _selected(classes, uses, settings, graph)
    words, unworded = _words(
        graph, sorted({*classes, *(u.property for u in uses)}), settings, label_iris, language
    )
    return Schema(
        graph=graph.name,
        triples=graph.triples,
        language=language,
        classes={c: ClassInfo(c, n, labelled, words[c]) for c, (n, labelled) in classes.items()},
        uses=[
            PropertyUse(**{**u.__dict__, "word": words[u.property]})  # type: ignore[arg-type]
            for u in uses
        ],
        label_properties=label_iris,
        labels=labels,
        prefixes={**COMMON_PREFIXES, **graph.prefixes, **settings.prefixes},
        let_through=dict(graph.let_through),
        unworded=unworded,
    )


def _classes(
    graph: Graph, label_iris: tuple[str, ...], language: str, scope: str
) -> dict[str, tuple[int, int]]:
    counts = {
        _value(r, "c"): int(_value(r, "n"))
        for r in _rows(
            graph,
            f"SELECT ?c (COUNT(DISTINCT ?s) AS ?n) WHERE {{ {scope} ?s a ?c FILTER(isIRI(?c)) }} "
            "GROUP BY ?c",
        )
    }
    labelled = {
        _value(r, "c"): int(_value(r, "n"))
        for r in _rows(
            graph,
            f"SELECT ?c (COUNT(DISTINCT ?s) AS ?n) WHERE {{ {scope} ?s a ?c . "
            f"{values('?lp', label_iris)} "
            f"?s ?lp ?l FILTER(isIRI(?c) && isLiteral(?l) && {lang_filter('?l', language)}) }} "
            "GROUP BY ?c",
        )
    }
    return {c: (n, labelled.get(c, 0)) for c, n in counts.items()}


def _uses(graph: Graph, label_iris: tuple[str, ...], scope: str) -> list[PropertyUse]:
    labels = ", ".join(f"<{i}>" for i in label_iris)
    skip = f"FILTER(isIRI(?c) && ?p != <{RDF_TYPE}> && ?p NOT IN ({labels})) {scope}"
    kinds: dict[tuple[str, str], dict[str, Any]] = {}
    for row in _rows(
        graph,
        f"SELECT ?c ?p ?k ?dt (COUNT(*) AS ?n) (COUNT(DISTINCT ?s) AS ?ns) WHERE {{ ?s a ?c . "
        f"?s ?p ?o . {skip} "
        'BIND(IF(isLiteral(?o), "literal", IF(isBlank(?o), "bnode", "iri")) AS ?k) '
        'BIND(IF(isLiteral(?o), STR(DATATYPE(?o)), "") AS ?dt) } GROUP BY ?c ?p ?k ?dt',
    ):
        entry = kinds.setdefault(
            (_value(row, "c"), _value(row, "p")),
            {"iri": 0, "literal": 0, "bnode": 0, "datatypes": {}, "classes": {}, "groups": []},
        )
        n = int(_value(row, "n"))
        entry[_value(row, "k")] += n
        entry["groups"].append(int(_value(row, "ns")))
        if _value(row, "dt"):
            entry["datatypes"][_value(row, "dt")] = n
    mixed = [key for key, e in kinds.items() if len(e["groups"]) > 1]
    for entry in kinds.values():
        entry["subjects"] = entry["groups"][0]
    if mixed:  # values of several kinds or datatypes: count the subjects over all of them
        for row in _rows(
            graph,
            f"SELECT ?c ?p (COUNT(DISTINCT ?s) AS ?n) WHERE {{ ?s a ?c . ?s ?p ?o . {skip} "
            f"VALUES (?c ?p) {{ {' '.join(f'(<{c}> <{p}>)' for c, p in mixed)} }} }} "
            "GROUP BY ?c ?p",
        ):
            kinds[(_value(row, "c"), _value(row, "p"))]["subjects"] = int(_value(row, "n"))
    for row in _rows(
        graph,
        f"SELECT ?c ?p ?oc (COUNT(*) AS ?n) WHERE {{ ?s a ?c . ?s ?p ?o . ?o a ?oc {skip} "
        "FILTER(isIRI(?o) && isIRI(?oc)) } GROUP BY ?c ?p ?oc",
    ):
        kinds[(_value(row, "c"), _value(row, "p"))]["classes"][_value(row, "oc")] = int(
            _value(row, "n")
        )

    def ranked(counts: dict[str, int]) -> tuple[tuple[str, int], ...]:
        return tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    return [
        PropertyUse(
            subject_class=c,
            property=p,
            triples=e["iri"] + e["literal"] + e["bnode"],
            subjects=e["subjects"],
            iris=e["iri"],
            literals=e["literal"],
            blank_nodes=e["bnode"],
            datatypes=ranked(e["datatypes"]),
            object_classes=ranked(e["classes"]),
            word="",
        )
        for (c, p), e in sorted(kinds.items())
    ]


def _selected(
    classes: dict[str, tuple[int, int]],
    uses: list[PropertyUse],
    settings: GenerateSettings,
    graph: Graph,
) -> tuple[dict[str, tuple[int, int]], list[PropertyUse]]:
    """The classes and properties after the config's include and exclude lists; a name the
    graph does not use is an error."""
    used_properties = {u.property for u in uses}

    def resolved(names: tuple[str, ...], known: Iterable[str], what: str) -> set[str]:
        known_set = set(known)
        out = set()
        for name in names:
            iri = settings.resolve(name, graph.prefixes)
            if iri not in known_set:
                raise InputError(
                    f"{what} {name} is not used in the graph "
                    f"({'no instances' if what == 'class' else 'no triples'})",
                    source=settings.source,
                )
            out.add(iri)
        return out

    inc_c = resolved(settings.include_classes, classes, "class")
    exc_c = resolved(settings.exclude_classes, classes, "class")
    inc_p = resolved(settings.include_properties, used_properties, "property")
    exc_p = resolved(settings.exclude_properties, used_properties, "property")
    for name in settings.words:
        iri = settings.resolve(name, graph.prefixes)
        if iri not in classes and iri not in used_properties:
            raise InputError(
                f"words: {name} is neither a class with instances nor a property used in the graph",
                source=settings.source,
            )
    kept = {
        c: v
        for c, v in classes.items()
        if (c in inc_c if inc_c else not c.startswith(_META)) and c not in exc_c
    }
    kept_uses = [
        u
        for u in uses
        if u.subject_class in kept
        and (not inc_p or u.property in inc_p)
        and u.property not in exc_p
    ]
    return kept, kept_uses


def describe_json(schema: Schema) -> dict[str, Any]:
    """The schema as plain data (``--describe --format json``)."""
    return {
        "graph": schema.graph,
        "triples": schema.triples,
        "language": schema.language,
        "let_through": schema.let_through,
        "labels": {
            schema.short(p): dict(sorted(per.items())) for p, per in sorted(schema.labels.items())
        },
        "classes": [
            {
                "class": schema.short(c.iri),
                "iri": c.iri,
                "instances": c.instances,
                "labelled": c.labelled,
                "word": c.word,
                "properties": [
                    {
                        "property": schema.short(u.property),
                        "iri": u.property,
                        "word": u.word,
                        "kind": u.kind,
                        "triples": u.triples,
                        "subjects": u.subjects,
                        "multi_valued": u.multi_valued,
                        "datatypes": {schema.short(t): n for t, n in u.datatypes},
                        "object_classes": {schema.short(t): n for t, n in u.object_classes},
                        "blank_nodes": u.blank_nodes,
                    }
                    for u in schema.uses_of(c.iri)
                ],
            }
            for c in sorted(schema.classes.values(), key=lambda c: (-c.instances, c.iri))
        ],
    }


def describe_text(schema: Schema) -> str:
    """The schema as a few lines per class (``--describe``)."""
    data = describe_json(schema)
    let = ", ".join(f"{n} {k}" for k, n in schema.let_through.items()) or "nothing"
    lines = [
        f"graph {schema.graph}: {triples_text(schema.triples)}; loading let through {let}",
        "labels: "
        + "; ".join(
            f"{p} " + ", ".join(f"{lang or '(no tag)'} {n}" for lang, n in per.items())
            for p, per in data["labels"].items()
        ),
        f"{len(data['classes'])} classes (instances, labelled in {schema.language}):",
    ]
    for c in data["classes"]:
        lines.append(
            f'  {c["class"]} "{c["word"]}": {c["instances"]} instances, {c["labelled"]} labelled'
        )
        for p in c["properties"]:
            target = ", ".join(p["object_classes"]) or ", ".join(p["datatypes"]) or p["kind"]
            multi = "multi-valued" if p["multi_valued"] else "single-valued"
            extra = f", {p['blank_nodes']} blank nodes" if p["blank_nodes"] else ""
            lines.append(
                f'    {p["property"]} "{p["word"]}" -> {target} ({p["kind"]}): '
                f"{p['triples']} triples, {p['subjects']} subjects, {multi}{extra}"
            )
    return "\n".join(lines) + "\n"
