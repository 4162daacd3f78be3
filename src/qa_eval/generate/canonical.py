"""Canonical SPARQL text, so that two questions never share a query (quality control "no
duplicates"): prefixes expanded, ``a`` written as ``rdf:type``, keywords in capitals, the
``;``/``,`` shorthand expanded, the triple patterns of each group sorted, variables renamed by
first use, whitespace normalised. Two queries with the same canonical text ask the same thing.
"""

from __future__ import annotations

import re

__all__ = ["canonical_query"]

_RDF_TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
_TOKEN = re.compile(
    r"""
    (?P<ws>\s+|\#[^\n]*)
    |(?P<iri><[^<>"{}|^`\\\s]*>)
    |(?P<string>(?:"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
        (?:@[A-Za-z0-9-]+|\^\^(?:<[^<>"\s]*>|(?:[A-Za-z][\w.-]*)?:[\w\-]*))?)
    |(?P<var>[?$][A-Za-z0-9_\u00b7\u00c0-\uffff]+)
    |(?P<pname>(?:[A-Za-z][\w.-]*)?:(?:[\w\-.%:]*[\w\-%:])?)
    |(?P<number>[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?))
    |(?P<word>[A-Za-z_][A-Za-z0-9_]*)
    |(?P<op>\|\||&&|!=|<=|>=|\^\^|[{}().;,*=<>!+/|^\[\]-])
    """,
    re.VERBOSE,
)


def _tokens(query: str) -> list[tuple[str, str]]:
    out = []
    position = 0
    while position < len(query):
        match = _TOKEN.match(query, position)
        if match is None:
            out.append(("other", query[position]))
            position += 1
            continue
        position = match.end()
        kind = match.lastgroup or "other"
        if kind != "ws":
            out.append((kind, match.group()))
    return out


def _expanded(tokens: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Drop the PREFIX (and BASE) declarations and expand prefixed names."""
    prefixes: dict[str, str] = {}
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(tokens):
        kind, text = tokens[i]
        if kind == "word" and text.upper() == "PREFIX" and i + 2 < len(tokens):
            prefixes[tokens[i + 1][1][:-1]] = tokens[i + 2][1][1:-1]
            i += 3
            continue
        if kind == "pname":
            prefix, _, local = text.partition(":")
            if prefix in prefixes:
                out.append(("iri", f"<{prefixes[prefix]}{local}>"))
                i += 1
                continue
        if kind == "string" and "^^" in text and not text.endswith(">"):
            value, _, datatype = text.rpartition("^^")
            prefix, _, local = datatype.partition(":")
            if prefix in prefixes:
                text = f"{value}^^<{prefixes[prefix]}{local}>"
        if kind == "word":
            text = _RDF_TYPE if text == "a" else text.upper()
            kind = "iri" if text == _RDF_TYPE else kind
        out.append((kind, text))
        i += 1
    return out


_CLAUSES = ("FILTER", "VALUES", "BIND", "OPTIONAL", "MINUS")


def _split_block(tokens: list[str]) -> list[list[str]]:
    """The items of one group: triple patterns (``;`` and ``,`` expanded), nested groups and
    other clauses, each a token list."""
    items: list[list[str]] = []
    current: list[str] = []
    depth = 0
    for token in tokens:
        if token in ("{", "("):
            depth += 1
        elif token in ("}", ")"):
            depth -= 1
        if depth == 0 and token in _CLAUSES and current:
            items.append(current)
            current = []
        if depth == 0 and token == ".":
            if current:
                items.append(current)
            current = []
            continue
        current.append(token)
        if depth == 0 and token == "}" and current and current[0] in ("{", "OPTIONAL", "MINUS"):
            items.append(current)
            current = []
    if current:
        items.append(current)
    out: list[list[str]] = []
    for item in items:
        out.extend(_triples(item))
    return out


def _triples(item: list[str]) -> list[list[str]]:
    """A triple-pattern item with ``;`` and ``,`` written as separate triples."""
    if not item or item[0] in ("{", "FILTER", "VALUES", "BIND", "OPTIONAL", "MINUS", "SERVICE"):
        return [_canonical_item(item)]
    if any(t in ("(", "[") for t in item):
        return [item]
    out = []
    subject, predicate = item[0], None
    rest = item[1:]
    expecting = "p"
    for token in rest:
        if token == ";":
            expecting = "p"
        elif token == ",":
            expecting = "o"
        elif expecting == "p":
            predicate, expecting = token, "o"
        else:
            out.append([subject, predicate or "", token])
    return out or [item]


def _canonical_item(item: list[str]) -> list[str]:
    """Nested groups canonicalised (their items sorted)."""
    if "{" not in item:
        return item
    start = item.index("{")
    end = len(item) - 1 - item[::-1].index("}")
    inner = item[start + 1 : end]
    if inner and inner[0] == "SELECT":
        where = inner.index("{") if "{" in inner else len(inner)
        close = len(inner) - 1 - inner[::-1].index("}") if "}" in inner else len(inner)
        body = _sorted_items(inner[where + 1 : close]) if where < close else []
        inner = inner[: where + 1] + body + inner[close:]
    else:
        inner = _sorted_items(inner)
    return item[: start + 1] + inner + item[end:]


def _sorted_items(tokens: list[str]) -> list[str]:
    items = _split_block(tokens)
    masked = sorted(items, key=lambda it: [("?" if t.startswith("?") else t) for t in it])
    out: list[str] = []
    for item in masked:
        out.extend(item)
        out.append(".")
    return out


def canonical_query(query: str) -> str:
    """The canonical text of a SPARQL query (see the module docstring)."""
    tokens = [text for _, text in _expanded(_tokens(query))]
    if "{" in tokens:
        start = tokens.index("{")
        end = len(tokens) - 1 - tokens[::-1].index("}")
        tail = tokens[end + 1 :]
        tokens = tokens[: start + 1] + _sorted_items(tokens[start + 1 : end]) + ["}"] + tail
    names: dict[str, str] = {}
    renamed = []
    for token in tokens:
        if token[0] in "?$" and len(token) > 1:
            token = names.setdefault(token[1:], f"?v{len(names)}")
        renamed.append(token)
    return " ".join(renamed)
