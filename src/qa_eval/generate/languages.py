"""The wording of template questions and answers per language: English, German, French and
Spanish. Each language has a template per shape and the words the shapes fill in (a
comparison's direction, an aggregate's function, yes/no, the tie note, the control's answer).
The class and property words come from the graph's labels in the language (``schema``), so with
``--lang de`` a question is German throughout when the graph labels its classes and properties
in German. The other languages avoid English's plural (``Einträge vom Typ {c}``: no grammar is
guessed) and articles before the graph's words."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["LANGUAGES", "Phrases", "phrases"]


@dataclass(frozen=True)
class Phrases:
    """One language's templates (per template name) and words (per slot, per English value)."""

    templates: dict[str, str]
    words: dict[str, dict[str, str]] = field(default_factory=dict)
    yes: str = "yes"
    no: str = "no"
    tied: str = "tied"
    no_answer: str = "The graph has no answer to this question."
    scope: str = " with {q} {o}"
    plural: bool = False
    """Whether ``{cs}`` is the class word in the plural (English) or the templates use the
    singular ``{c}`` only."""

    def word(self, slot: str, value: str) -> str:
        """The language's word for a slot's English value (the value itself if none)."""
        return self.words.get(slot, {}).get(value, value)


ENGLISH = Phrases(
    templates={
        "lookup": "What is the {p} of {e}?",
        "list": "What are all the {p} values of {e}?",
        "list_reverse": "What are all the {cs} whose {p} is {o}?",
        "reverse_lookup": "Which {cs} have {p} {o}?",
        "two_hop": "What is the {p2} of the {p1} of {e}?",
        "three_hop": "What is the {p3} of the {p2} of the {p1} of {e}?",
        "count": "How many {cs} have {p} {o}?",
        "aggregate": "What is the {f} {p} of the {cs}{scope}?",
        "superlative": "Which {c}{scope} has the {most} {p}?",
        "comparison": "Which has the {more} {p}: {a} or {b}?",
        "boolean": "Is the {p} of {e} {o}?",
        "filter": "Which {cs} have a {p} {op} {t}?",
        "filter_between": "Which {cs} have a {p} between {t} and {t2}?",
        "intersection": "Which {cs} have {p1} {o1} and {p2} {o2}?",
        "unanswerable": "What is the {p} of {e}?",
    },
    plural=True,
)

GERMAN = Phrases(
    templates={
        "lookup": "Welchen Wert hat {p} für {e}?",
        "list": "Welche Werte hat {p} für {e}?",
        "list_reverse": "Welches sind alle Einträge vom Typ {c}, bei denen {p} gleich {o} ist?",
        "reverse_lookup": "Bei welchen Einträgen vom Typ {c} ist {p} gleich {o}?",
        "two_hop": "Welchen Wert hat {p2} für den Wert von {p1} bei {e}?",
        "three_hop": "Welchen Wert hat {p3} für den Wert von {p2} für den Wert von {p1} bei {e}?",
        "count": "Bei wie vielen Einträgen vom Typ {c} ist {p} gleich {o}?",
        "aggregate": "Was ist {f} von {p} über alle Einträge vom Typ {c}{scope}?",
        "superlative": "Welcher Eintrag vom Typ {c}{scope} hat {most} Wert von {p}?",
        "comparison": "Was hat {more} Wert von {p}: {a} oder {b}?",
        "boolean": "Ist bei {e} {p} gleich {o}?",
        "filter": "Bei welchen Einträgen vom Typ {c} ist {p} {op} {t}?",
        "filter_between": "Bei welchen Einträgen vom Typ {c} liegt {p} zwischen {t} und {t2}?",
        "intersection": "Bei welchen Einträgen vom Typ {c} ist {p1} gleich {o1} und {p2} gleich "
        "{o2}?",
        "unanswerable": "Welchen Wert hat {p} für {e}?",
    },
    words={
        "f": {
            "average": "der Durchschnitt",
            "lowest": "das Minimum",
            "highest": "das Maximum",
            "total": "die Summe",
        },
        "most": {
            "highest": "den höchsten",
            "lowest": "den niedrigsten",
            "latest": "den spätesten",
            "earliest": "den frühesten",
        },
        "more": {
            "higher": "den höheren",
            "lower": "den niedrigeren",
            "later": "den späteren",
            "earlier": "den früheren",
        },
        "op": {
            "above": "größer als",
            "below": "kleiner als",
            "after": "später als",
            "before": "früher als",
        },
    },
    yes="ja",
    no="nein",
    tied="gleichauf",
    no_answer="Der Graph enthält keine Antwort auf diese Frage.",
    scope=" mit {q} gleich {o}",
)

FRENCH = Phrases(
    templates={
        "lookup": "Quelle est la valeur de {p} pour {e} ?",
        "list": "Quelles sont toutes les valeurs de {p} pour {e} ?",
        "list_reverse": "Quels sont tous les éléments de type {c} dont {p} est égal à {o} ?",
        "reverse_lookup": "Quels éléments de type {c} ont {p} égal à {o} ?",
        "two_hop": "Quelle est la valeur de {p2} de la valeur de {p1} pour {e} ?",
        "three_hop": "Quelle est la valeur de {p3} de la valeur de {p2} de la valeur de {p1} "
        "pour {e} ?",
        "count": "Combien d'éléments de type {c} ont {p} égal à {o} ?",
        "aggregate": "Que vaut {f} de {p} parmi les éléments de type {c}{scope} ?",
        "superlative": "Quel élément de type {c}{scope} a {most} valeur de {p} ?",
        "comparison": "Lequel a {more} valeur de {p} : {a} ou {b} ?",
        "boolean": "Pour {e}, {p} est-il égal à {o} ?",
        "filter": "Quels éléments de type {c} ont {p} {op} {t} ?",
        "filter_between": "Quels éléments de type {c} ont {p} entre {t} et {t2} ?",
        "intersection": "Quels éléments de type {c} ont {p1} égal à {o1} et {p2} égal à {o2} ?",
        "unanswerable": "Quelle est la valeur de {p} pour {e} ?",
    },
    words={
        "f": {
            "average": "la moyenne",
            "lowest": "le minimum",
            "highest": "le maximum",
            "total": "la somme",
        },
        "most": {
            "highest": "la plus haute",
            "lowest": "la plus basse",
            "latest": "la plus récente",
            "earliest": "la plus ancienne",
        },
        "more": {
            "higher": "la plus haute",
            "lower": "la plus basse",
            "later": "la plus récente",
            "earlier": "la plus ancienne",
        },
        "op": {
            "above": "supérieur à",
            "below": "inférieur à",
            "after": "postérieur à",
            "before": "antérieur à",
        },
    },
    yes="oui",
    no="non",
    tied="ex æquo",
    no_answer="Le graphe ne contient pas de réponse à cette question.",
    scope=" avec {q} égal à {o}",
)

SPANISH = Phrases(
    templates={
        "lookup": "¿Cuál es el valor de {p} para {e}?",
        "list": "¿Cuáles son todos los valores de {p} para {e}?",
        "list_reverse": "¿Cuáles son todos los elementos de tipo {c} con {p} igual a {o}?",
        "reverse_lookup": "¿Qué elementos de tipo {c} tienen {p} igual a {o}?",
        "two_hop": "¿Cuál es el valor de {p2} del valor de {p1} para {e}?",
        "three_hop": "¿Cuál es el valor de {p3} del valor de {p2} del valor de {p1} para {e}?",
        "count": "¿Cuántos elementos de tipo {c} tienen {p} igual a {o}?",
        "aggregate": "¿Cuál es {f} de {p} entre los elementos de tipo {c}{scope}?",
        "superlative": "¿Qué elemento de tipo {c}{scope} tiene el valor {most} de {p}?",
        "comparison": "¿Cuál tiene el valor {more} de {p}: {a} o {b}?",
        "boolean": "¿Es {p} de {e} igual a {o}?",
        "filter": "¿Qué elementos de tipo {c} tienen {p} {op} {t}?",
        "filter_between": "¿Qué elementos de tipo {c} tienen {p} entre {t} y {t2}?",
        "intersection": "¿Qué elementos de tipo {c} tienen {p1} igual a {o1} y {p2} igual a {o2}?",
        "unanswerable": "¿Cuál es el valor de {p} para {e}?",
    },
    words={
        "f": {
            "average": "el promedio",
            "lowest": "el mínimo",
            "highest": "el máximo",
            "total": "la suma",
        },
        "most": {
            "highest": "más alto",
            "lowest": "más bajo",
            "latest": "más reciente",
            "earliest": "más antiguo",
        },
        "more": {
            "higher": "más alto",
            "lower": "más bajo",
            "later": "más reciente",
            "earlier": "más antiguo",
        },
        "op": {
            "above": "mayor que",
            "below": "menor que",
            "after": "posterior a",
            "before": "anterior a",
        },
    },
    yes="sí",
    no="no",
    tied="empate",
    no_answer="El grafo no tiene respuesta a esta pregunta.",
    scope=" con {q} igual a {o}",
)

LANGUAGES = {"en": ENGLISH, "de": GERMAN, "fr": FRENCH, "es": SPANISH}
"""Primary language subtag -> its phrases."""


def phrases(language: str) -> Phrases | None:
    """The phrases of a BCP 47 language (by its primary subtag: ``de-AT`` is ``de``), or None
    when qa-eval has no templates in it."""
    return LANGUAGES.get(language.lower().split("-")[0])
