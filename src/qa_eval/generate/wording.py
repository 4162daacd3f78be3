"""Wording: the per-shape question templates (English, filled with the graph's words), the
query text (full IRIs written with the graph's prefixes), and the reference answer written from
the query's result (labels, never IRIs or blank nodes; numbers as the graph holds them; lists
joined; a count as a number; yes/no)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .candidates import Candidate
from .languages import ENGLISH, phrases
from .schema import Schema, compact

__all__ = [
    "NO_ANSWER",
    "TEMPLATES",
    "AnswerProblem",
    "answer_text",
    "plural",
    "question_text",
    "render_query",
]

TEMPLATES = ENGLISH.templates
"""The English question template of each shape; ``{cs}`` is the class word in the plural (the
other languages are in ``languages``)."""

NO_ANSWER = ENGLISH.no_answer


class AnswerProblem(Exception):
    """The result cannot be written as an answer (a blank node, an entity without a label)."""


def plural(word: str) -> str:
    """The English plural of the last word of a phrase (``power transformer`` ->
    ``power transformers``, ``entry`` -> ``entries``)."""
    head, _, last = word.rpartition(" ")
    if not last or not last[-1].isalpha() or last.isupper():
        return word
    if re.search(r"[^aeiou]y$", last):
        last = last[:-1] + "ies"
    elif re.search(r"(s|x|z|ch|sh)$", last):
        last += "es"
    else:
        last += "s"
    return f"{head} {last}" if head else last


def question_text(candidate: Candidate, language: str = "en") -> str:
    """The template question of a candidate in a language (``languages``; English when qa-eval
    has no templates in it)."""
    words = phrases(language) or ENGLISH
    slots = {name: words.word(name, value) for name, value in candidate.slots.items()}
    if "cs" in slots:
        slots.setdefault("c", slots["cs"])
        if words.plural:
            slots["cs"] = plural(slots["cs"])
    scope = (slots.pop("sq", None), slots.pop("so", None))
    slots["scope"] = words.scope.format(q=scope[0], o=scope[1]) if scope[0] is not None else ""
    text = words.templates[candidate.template].format(**slots)
    return text[0].upper() + text[1:]


_IRI = re.compile(r"<([^<>\"{}|^`\\\s]*)>")


def render_query(candidate: Candidate, schema: Schema) -> str:
    """The query as text: PREFIX lines for the prefixes used, one pattern a line."""
    used: set[str] = set()

    def short(match: re.Match[str]) -> str:
        text, prefix = compact(match.group(1), schema.prefixes)
        if prefix is not None:
            used.add(prefix)
        return text

    lines = [_IRI.sub(short, line) for line in candidate.body]
    head = "ASK" if candidate.select == "ASK" else f"{candidate.select} WHERE"
    prefixes = [f"PREFIX {p}: <{schema.prefixes[p]}>" for p in sorted(used)]
    body = "\n".join(f"  {line}" for line in lines)
    tail = f"\n{candidate.tail}" if candidate.tail else ""
    return "\n".join([*prefixes, f"{head} {{", body, "}"]) + tail


def _number_or_text(term: Mapping[str, Any]) -> str:
    return str(term["value"])


def answer_text(
    candidate: Candidate,
    result: Mapping[str, Any],
    labels: Mapping[str, str | None],
    language: str = "en",
) -> str:
    """The reference answer written from the query's result (yes/no, the tie note and the
    control's answer in the language)."""
    words = phrases(language) or ENGLISH
    if candidate.answer == "boolean":
        return words.yes if result.get("boolean") else words.no
    if candidate.answer == "none":
        return words.no_answer
    rows = result["results"]["bindings"]
    column = candidate.columns[0]
    if candidate.answer in ("count", "value"):
        term = rows[0].get(column) if rows else None
        if term is None:
            raise AnswerProblem("no value")
        return _number_or_text(term)
    names = sorted({_shown(row.get(column), labels) for row in rows})
    joined = ", ".join(names)
    if candidate.answer == "superlative":
        value = _number_or_text(rows[0]["value"])
        return f"{joined} ({words.tied + ', ' if len(names) > 1 else ''}{value})"
    return joined


def _shown(term: Mapping[str, Any] | None, labels: Mapping[str, str | None]) -> str:
    if term is None:
        raise AnswerProblem("a row without the answer column")
    if term["type"] == "bnode":
        raise AnswerProblem("blank node in the answer")
    if term["type"] == "uri":
        label = labels.get(term["value"])
        if label is None:
            raise AnswerProblem("answer entity without a label in the language")
        return label
    return str(term["value"])


def answer_iris(candidate: Candidate, result: Mapping[str, Any]) -> list[str]:
    """The IRIs in the answer column of a result (their labels are the answer)."""
    if "results" not in result or not candidate.columns:
        return []
    column = candidate.columns[0]
    return [
        row[column]["value"]
        for row in result["results"]["bindings"]
        if row.get(column, {}).get("type") == "uri"
    ]
