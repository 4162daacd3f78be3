"""Text helpers of the drill-down: clipping long values, SPARQL prefixes, query layout."""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["clip", "format_query", "prefixes"]

_PREFIX_ANYWHERE = re.compile(r"(?i)PREFIX\s+([A-Za-z][\w.-]*)?:\s*<([^<>\s]*)>")
_CLAUSES = re.compile(
    r"(?i)\b(PREFIX|BASE|SELECT|CONSTRUCT|DESCRIBE|ASK|FROM|WHERE|GROUP\s+BY|HAVING|ORDER\s+BY"
    r"|LIMIT|OFFSET|VALUES)\b"
)
_GROUP_WORDS = re.compile(r"(?i)(FILTER|OPTIONAL|MINUS|BIND|SERVICE|GRAPH|VALUES|UNION)\b")
_INDENT = "  "


def clip(value: Any, limit: int) -> str:
    """Text of any value (JSON for data), cut at ``limit`` characters with a count of the rest."""
    if value is None:
        return ""
    if not isinstance(value, str):
        try:
            value = json.dumps(value, ensure_ascii=False, indent=1, default=str)
        except (TypeError, ValueError):
            value = str(value)
    if len(value) <= limit:
        return value
    return f"{value[:limit]}… ({len(value) - limit:,} more characters)"


def prefixes(*queries: str) -> list[tuple[str, str]]:
    """The ``PREFIX p: <ns>`` declarations of SPARQL queries as (namespace, prefix), longest
    namespace first."""
    found: dict[str, str] = {}
    for query in queries:
        for name, namespace in _PREFIX_ANYWHERE.findall(query or ""):
            if namespace and namespace not in found:
                found[namespace] = name or ""
    return sorted(found.items(), key=lambda item: -len(item[0]))


def _iri_end(query: str, start: int) -> int:
    """The index after an IRI ``<...>`` starting at ``start``, or -1 when ``<`` is an operator."""
    end = start + 1
    while end < len(query):
        char = query[end]
        if char == ">":
            return end + 1 if end > start + 1 else -1
        if char.isspace() or char in '<"{}|^`\\':
            return -1
        end += 1
    return -1


def format_query(query: str) -> str:
    """A SPARQL query written on one line, laid out for reading: clauses on their own lines,
    one triple pattern a line, braces indented. Strings and IRIs are kept as they are; a query
    that already has line breaks is returned unchanged."""
    if "\n" in query.strip() or len(query) < 60:
        return query
    return _QueryLayout(query).run()


def _string_end(query: str, start: int) -> int:
    """The index after a string literal (``"``, ``'`` or tripled) starting at ``start``."""
    char = query[start]
    quote = query[start : start + 3] if query[start : start + 3] in ('"""', "'''") else char
    end = start + len(quote)
    while end < len(query) and not query.startswith(quote, end):
        end += 2 if query[end] == "\\" else 1
    return min(len(query), end + len(quote))


class _QueryLayout:
    """One pass over a one-line query, token by token, writing it with line breaks."""

    def __init__(self, query: str) -> None:
        self.query = query
        self.out: list[str] = []
        self.depth = 0
        """Braces open."""
        self.newline = False
        """Whether a line was just broken (so a space or a group keyword starts nothing)."""

    def run(self) -> str:
        """The query laid out."""
        i = 0
        while i < len(self.query):
            i = self._step(i)
        return "".join(self.out).strip()

    def _line_break(self, level: int) -> None:
        """End the line (dropping trailing spaces) and indent the next to ``level``."""
        while self.out and self.out[-1] == " ":
            self.out.pop()
        self.out.append("\n" + _INDENT * max(level, 0))

    def _verbatim(self, start: int, end: int) -> int:
        """Write ``query[start:end]`` as it is (a string, an IRI, a comment); returns ``end``."""
        self.out.append(self.query[start:end])
        self.newline = False
        return end

    def _step(self, i: int) -> int:
        """Write what starts at ``i``; returns where the next token starts."""
        query, char = self.query, self.query[i]
        if char in "\"'":
            return self._verbatim(i, _string_end(query, i))
        if char == "<" and (end := _iri_end(query, i)) != -1:
            return self._verbatim(i, end)
        if char.isspace():
            if not self.newline and self.out and not self.out[-1].endswith(" "):
                self.out.append(" ")
            return i + 1
        if char == "#" and (i == 0 or query[i - 1].isspace()):  # a comment runs to the end
            return self._verbatim(i, len(query))
        clause = (
            _CLAUSES.match(query, i)
            if self.depth == 0 and (i == 0 or not query[i - 1].isalnum())
            else None
        )
        if clause and self.out and clause.group(1).upper() != "WHERE":
            self._line_break(self.depth)
        return self._token(i, clause)

    def _token(self, i: int, clause: re.Match[str] | None) -> int:
        """Write a brace, a separator, a group keyword, a clause keyword or one character."""
        query, char = self.query, self.query[i]
        if char == "{":
            self.depth += 1
            self.out.append("{")
            self._line_break(self.depth)
            self.newline = True
        elif char == "}":
            self.depth -= 1
            self._line_break(self.depth)
            self.out.append("}")
            self.newline = False
        elif char in ".;" and (
            i + 1 == len(query) or query[i + 1].isspace() or query[i + 1] == "}"
        ):
            self.out.append(char)
            if self.depth > 0 and not query[i + 1 :].lstrip().startswith("}"):
                self._line_break(self.depth + (1 if char == ";" else 0))
                self.newline = True
        elif (
            self.depth > 0
            and not self.newline
            and not query[i - 1].isalnum()
            and (word := _GROUP_WORDS.match(query, i))
        ):
            self._line_break(self.depth)
            self.out.append(word.group(0))
            return i + len(word.group(0))
        elif clause:
            self.out.append(clause.group(0))
            self.newline = False
            return i + len(clause.group(0))
        else:
            self.out.append(char)
            self.newline = False
        return i + 1
