"""The entities a question names: seeded samples of a class's instances (ordered by a hash of
the seed and the IRI, computed by the graph, so the sample is the same whatever order the store
or endpoint returns rows in), their labels in the language (falling back to labels without a
tag) and whether a label is unambiguous (no other entity has it; or none of the same class, when
the question names the class). Labels are compared as a person reads them: case and whitespace
folded (Unicode lowercase, runs of whitespace as one space, trimmed), and composed and decomposed
accents alike (NFC and NFD), so "Oslo", "OSLO" and "Oslo " are one label."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .schema import Schema, lang_filter, values
from .source import Graph, valid_language_tag

__all__ = ["Entities", "Named", "fold_label"]

SAMPLE = 1000
"""Instances of a class in its seeded sample: every shape draws from these."""


@dataclass(frozen=True)
class Named:
    """An entity a question names: its IRI, its label, the class the question calls it by and
    how its label was made unambiguous (``unique`` or ``class``)."""

    iri: str
    label: str
    cls: str
    qualified: str


def _literal(text: str, tag: str | None = None) -> str:
    escaped = (
        text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    )
    return f'"{escaped}"@{tag}' if tag else f'"{escaped}"'


class Entities:
    """Sampling, labels and label checks over one graph, cached."""

    def __init__(self, graph: Graph, schema: Schema, seed: int) -> None:
        self.graph = graph
        self.schema = schema
        self.seed = seed
        self._labels: dict[str, tuple[str, str] | None] = {}
        self._samples: dict[tuple[str, ...], list[str]] = {}
        self._unique: dict[tuple[str, str, str], str | None] = {}
        self._values: dict[tuple[str, ...], list[dict[str, Any]]] = {}
        self._folded: dict[str, set[str]] | None = None

    def sample(
        self, cls: str, pattern: str = "", key: tuple[str, ...] = (), whole: bool = False
    ) -> list[str]:
        """Instances of ``cls`` matching the extra ``pattern`` on ``?s``, in the seed's order:
        the class's seeded sample (``SAMPLE`` instances, ordered by the graph once per class)
        filtered by the pattern, so a slot costs index lookups, not a sort of its class.
        ``whole``: the pattern is run once over the graph (an aggregate the graph would compute
        again for every chunk of the sample) and its ``?s`` kept where the sample has them."""
        cache_key = (cls, pattern, *key)
        found = self._samples.get(cache_key)
        if found is None:
            base = self._class_sample(cls)
            if not pattern:
                found = base
            elif whole:
                rows = self.graph.run(f"SELECT DISTINCT ?s WHERE {{ {pattern} }}")
                every = {row["s"]["value"] for row in rows["results"]["bindings"]}
                found = [iri for iri in base if iri in every]
            else:
                matching: set[str] = set()
                for start in range(0, len(base), 250):
                    chunk = base[start : start + 250]
                    rows = self.graph.run(
                        f"SELECT DISTINCT ?s WHERE {{ {values('?s', chunk)} {pattern} }}"
                    )["results"]["bindings"]
                    matching.update(row["s"]["value"] for row in rows)
                found = [iri for iri in base if iri in matching]
            self._samples[cache_key] = found
        return found

    def _class_sample(self, cls: str) -> list[str]:
        key = (cls,)
        found = self._samples.get(key)
        if found is None:
            query = (
                f"SELECT DISTINCT ?s WHERE {{ ?s a <{cls}> FILTER(isIRI(?s)) }} "
                f'ORDER BY MD5(CONCAT("{self.seed}:", STR(?s))) LIMIT {SAMPLE}'
            )
            found = [row["s"]["value"] for row in self.graph.run(query)["results"]["bindings"]]
            self._samples[key] = found
        return found

    def sample_values(self, cls: str, prop: str, extra: str = "") -> list[dict[str, Any]]:
        """The values of a property among the first 50 instances of the class's sample (the
        other values a false yes/no question may name), in a stable order."""
        key = ("values", cls, prop, extra)
        if key not in self._values:
            base = self._class_sample(cls)[:50]
            rows = self.graph.run(
                f"SELECT DISTINCT ?o WHERE {{ {values('?s', base)} ?s <{prop}> ?o {extra} }}"
            )["results"]["bindings"]
            self._values[key] = sorted(
                (row["o"] for row in rows), key=lambda t: repr(sorted(t.items()))
            )
        return self._values[key]

    def values_of(self, subject: str, prop: str, extra: str = "") -> list[dict[str, Any]]:
        """The values of a property of a subject, as SPARQL JSON terms."""
        rows = self.graph.run(f"SELECT DISTINCT ?o WHERE {{ <{subject}> <{prop}> ?o {extra} }}")
        return [row["o"] for row in rows["results"]["bindings"]]

    def labels(self, iris: Iterable[str]) -> dict[str, str | None]:
        """Each IRI's label in the language (None when it has none)."""
        wanted = [i for i in dict.fromkeys(iris) if i not in self._labels]
        for start in range(0, len(wanted), 100):
            chunk = wanted[start : start + 100]
            best: dict[str, tuple[tuple[int, int, str], str]] = {}
            rows = self.graph.run(
                f"SELECT ?x ?lp ?l WHERE {{ {values('?x', chunk)} "
                f"{values('?lp', self.schema.label_properties)} ?x ?lp ?l "
                f"FILTER(isLiteral(?l) && {lang_filter('?l', self.schema.language)}) }}"
            )["results"]["bindings"]
            order = self.schema.label_properties
            for row in rows:
                text = row["l"]["value"].strip()
                if not text:
                    continue
                tag = row["l"].get("xml:lang", "")
                exact = 0 if tag.lower() == self.schema.language.lower() else 1 if tag else 2
                rank = (exact, order.index(row["lp"]["value"]), text)
                x = row["x"]["value"]
                if x not in best or rank < best[x][0]:
                    best[x] = (rank, tag)
            for iri in chunk:
                self._labels[iri] = (best[iri][0][2], best[iri][1]) if iri in best else None
        return {i: (self._labels[i] or (None, ""))[0] for i in iris}

    def label(self, iri: str) -> str | None:
        """One IRI's label in the language, or None."""
        return self.labels([iri])[iri]

    def unambiguous(self, iri: str, cls: str) -> Named | None:
        """The entity as a question may name it (by its class word and label), or None when it
        has no label in the language or another entity of the class has the same label."""
        label = self.label(iri)
        if label is None:
            return None
        tag = (self._labels[iri] or ("", ""))[1]
        key = (iri, cls, label)
        if key not in self._unique:
            forms = set()
            for text in {label, *(unicodedata.normalize(f, label) for f in ("NFC", "NFD"))}:
                forms |= {_literal(text), _literal(text, self.schema.language)}
                if tag and valid_language_tag(tag):
                    forms.add(_literal(text, tag))
            base = (
                f"{values('?lp', self.schema.label_properties)} "
                f"VALUES ?l {{ {' '.join(sorted(forms))} }} "
                "?x ?lp ?l ."
            )
            others = (self._holders(base) | self.folded(label)) - {iri}
            if not others:
                self._unique[key] = "unique"
            else:
                same_class = self._holders(base + f" ?x a <{cls}> .")
                if not same_class - {iri}:
                    same_class = self._of_class(others, cls)
                self._unique[key] = "class" if not same_class - {iri} else None
        qualified = self._unique[key]
        return None if qualified is None else Named(iri, label, cls, qualified)

    def folded(self, label: str) -> set[str]:
        """The entities whose label in the language is ``label`` once case and whitespace are
        folded (:func:`fold_label`). One aggregate query finds the folded labels the graph
        holds more than once (small: the graph's collisions, not its labels); only a label
        among those costs a pass over the labels to find its holders."""
        if self._folded is None:
            query = (
                f"SELECT ?k WHERE {{ {self._label_pattern()} }} GROUP BY ?k HAVING (COUNT(*) > 1)"
            )
            rows = self.graph.run(query)["results"]["bindings"]
            self._folded = {fold_label(row["k"]["value"]): set() for row in rows}
        key = fold_label(label)
        holders = self._folded.get(key)
        if holders is None:
            return set()
        if not holders:
            rows = self.graph.run(
                f"SELECT DISTINCT ?x ?k WHERE {{ {self._label_pattern()} "
                f"FILTER(?k IN ({_literal(key)}, {_literal(' '.join(label.lower().split()))})) }}"
            )["results"]["bindings"]
            holders.update(
                row["x"]["value"] for row in rows if fold_label(row["k"]["value"]) == key
            )
        return holders

    def _label_pattern(self) -> str:
        """Labels in the language, ``?x ?lp ?l``, with ``?k`` the label folded by the graph
        (trimmed, whitespace runs as one space, lowercase)."""
        key = r'LCASE(REPLACE(REPLACE(STR(?l), "^\\s+|\\s+$", ""), "\\s+", " "))'
        return (
            f"{values('?lp', self.schema.label_properties)} ?x ?lp ?l "
            f"FILTER(isLiteral(?l) && {lang_filter('?l', self.schema.language)}) "
            f"BIND({key} AS ?k)"
        )

    def _of_class(self, iris: Iterable[str], cls: str) -> set[str]:
        rows = self.graph.run(f"SELECT DISTINCT ?x WHERE {{ {values('?x', iris)} ?x a <{cls}> }}")
        return {row["x"]["value"] for row in rows["results"]["bindings"]}

    def _holders(self, pattern: str) -> set[str]:
        rows = self.graph.run(f"SELECT DISTINCT ?x WHERE {{ {pattern} }} LIMIT 3")
        return {row["x"]["value"] for row in rows["results"]["bindings"]}


def fold_label(text: str) -> str:
    """A label as a person compares it: NFC, Unicode lowercase, whitespace runs as one space,
    trimmed (the graph's side of the comparison folds the same way, but for NFC)."""
    return " ".join(unicodedata.normalize("NFC", text).lower().split())
