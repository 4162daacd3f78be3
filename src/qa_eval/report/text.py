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
    out: list[str] = []
    depth = 0
    i = 0
    newline = False

    def line_break(level: int) -> None:
        while out and out[-1] == " ":
            out.pop()
        out.append("\n" + _INDENT * max(level, 0))

    while i < len(query):
        char = query[i]
        if char in "\"'":
            quote = query[i : i + 3] if query[i : i + 3] in ('"""', "'''") else char
            end = i + len(quote)
            while end < len(query) and not query.startswith(quote, end):
                end += 2 if query[end] == "\\" else 1
            end = min(len(query), end + len(quote))
            out.append(query[i:end])
            i, newline = end, False
            continue
        if char == "<":
            end = _iri_end(query, i)
            if end != -1:
                out.append(query[i:end])
                i, newline = end, False
                continue
        if char.isspace():
            if not newline and out and not out[-1].endswith(" "):
                out.append(" ")
            i += 1
            continue
        if char == "#" and (i == 0 or query[i - 1].isspace()):  # a comment runs to the end
            out.append(query[i:])
            break
        clause = (
            _CLAUSES.match(query, i)
            if depth == 0 and (i == 0 or not query[i - 1].isalnum())
            else None
        )
        if clause and out and clause.group(1).upper() != "WHERE":
            line_break(depth)
        if char == "{":
            depth += 1
            out.append("{")
            line_break(depth)
            newline = True
        elif char == "}":
            depth -= 1
            line_break(depth)
            out.append("}")
            newline = False
        elif char in ".;" and (
            i + 1 == len(query) or query[i + 1].isspace() or query[i + 1] == "}"
        ):
            out.append(char)
            if depth > 0 and not query[i + 1 :].lstrip().startswith("}"):
                line_break(depth + (1 if char == ";" else 0))
                newline = True
        elif (
            depth > 0
            and not newline
            and not query[i - 1].isalnum()
            and (word := _GROUP_WORDS.match(query, i))
        ):
            line_break(depth)
            out.append(word.group(0))
            i += len(word.group(0))
            continue
        else:
            if clause:
                out.append(clause.group(0))
                i += len(clause.group(0))
                newline = False
                continue
            out.append(char)
            newline = False
        i += 1
    return "".join(out).strip()
