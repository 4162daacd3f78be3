"""The graph a reference set is generated from: an RDF file loaded into an embedded pyoxigraph
store (leniently by default: IRIs and language tags that break the RDF syntax rules are let
through and counted; ``strict_rdf`` refuses them) or a SPARQL 1.1 endpoint, both behind the
query runners of ``refresh``. Every query of a generation goes through :attr:`Graph.run`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..refresh.runners import (
    DEFAULT_TIMEOUT,
    QueryRunner,
    SparqlRunError,
    endpoint_runner,
    load_store,
    store_runner,
)

__all__ = [
    "COUNT_TIMEOUT",
    "Graph",
    "GraphError",
    "count_triples",
    "open_graph",
    "triples_text",
    "valid_language_tag",
    "writable",
]

COUNT_TIMEOUT = 10.0
"""Seconds an endpoint gets to count its triples (at most ``--timeout``); a big endpoint that
takes longer, or refuses ``COUNT``, leaves the count unknown instead of failing."""


class GraphError(InputError):
    """The graph cannot be read or queried (one line naming the file or endpoint)."""


# BCP 47 (RFC 5646) well-formed tags, without the grandfathered irregular ones.
_BCP47 = re.compile(
    r"^(?:[a-z]{2,3}(?:-[a-z]{3}){0,3}|[a-z]{4}|[a-z]{5,8})"
    r"(?:-[a-z]{4})?(?:-(?:[a-z]{2}|[0-9]{3}))?"
    r"(?:-(?:[a-z0-9]{5,8}|[0-9][a-z0-9]{3}))*"
    r"(?:-[0-9a-wyz](?:-[a-z0-9]{2,8})+)*(?:-x(?:-[a-z0-9]{1,8})+)?$"
    r"|^x(?:-[a-z0-9]{1,8})+$",
    re.IGNORECASE,
)
# Characters RFC 3987 does not allow anywhere in an IRI.
_IRI_FORBIDDEN = '[ <>"{}|^`\\\\]'  # the regex [ <>"{}|^`\\]
_PREFIX_LINE = re.compile(
    r"(?:@prefix|PREFIX)\s+([A-Za-z][\w.-]*)?:\s*<([^>\s]*)>", re.IGNORECASE | re.MULTILINE
)


def valid_language_tag(tag: str) -> bool:
    """Whether a language tag is well-formed BCP 47."""
    return bool(_BCP47.match(tag))


_IRI_BAD = re.compile(_IRI_FORBIDDEN)


def writable(term: Mapping[str, Any]) -> bool:
    """Whether a SPARQL JSON term can be written into a query: not an IRI with a character
    IRIs may not hold, not a literal with a malformed language tag (loading let them
    through), not a blank node."""
    if term["type"] == "uri":
        return not _IRI_BAD.search(term["value"])
    if term["type"] == "literal":
        tag = term.get("xml:lang")
        return not tag or valid_language_tag(tag)
    return False


@dataclass
class Graph:
    """A graph to generate from: its runner, its name in messages, what loading let through
    and the prefixes its file declared."""

    run_query: QueryRunner
    name: str
    let_through: dict[str, int] = field(default_factory=dict)
    prefixes: dict[str, str] = field(default_factory=dict)
    triples: int | None = None
    queries: int = 0

    def run(self, query: str) -> dict[str, Any]:
        """The SPARQL JSON result of a query; a failure is a ``GraphError`` naming the graph."""
        self.queries += 1
        try:
            return self.run_query(query)
        except SparqlRunError as e:
            raise GraphError(str(e), source=self.name) from None


def _file_prefixes(path: Path) -> dict[str, str]:
    """The prefixes a Turtle, TriG or N3 file declares in its first megabyte."""
    if path.suffix.lower() == ".gz":
        import gzip

        try:
            with gzip.open(path, "rt", encoding="utf-8", errors="replace") as f:
                head = f.read(1 << 20)
        except (OSError, EOFError):
            return {}
    else:
        with path.open("r", encoding="utf-8", errors="replace") as f:
            head = f.read(1 << 20)
    return {m.group(1) or "": m.group(2) for m in _PREFIX_LINE.finditer(head)}


def _count(graph: Graph, query: str) -> int:
    rows = graph.run(query)["results"]["bindings"]
    return int(rows[0]["n"]["value"]) if rows and "n" in rows[0] else 0


def count_let_through(graph: Graph) -> dict[str, int]:
    """Triples whose terms break the syntax rules, by kind (``language tag``, ``IRI``)."""
    tags = graph.run(
        "SELECT ?lang (COUNT(*) AS ?n) WHERE { ?s ?p ?o "
        'FILTER(isLiteral(?o) && LANG(?o) != "") } GROUP BY (LANG(?o) AS ?lang)'
    )["results"]["bindings"]
    bad_tags = sum(
        int(row["n"]["value"]) for row in tags if not valid_language_tag(row["lang"]["value"])
    )
    pattern = "'" + _IRI_FORBIDDEN.replace("\\", "\\\\") + "'"  # a SPARQL string
    bad_iris = _count(
        graph,
        "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o FILTER("
        f"REGEX(STR(?s), {pattern}) || REGEX(STR(?p), {pattern}) || "
        f"(isIRI(?o) && REGEX(STR(?o), {pattern}))) }}",
    )
    found = {"language tag": bad_tags, "IRI": bad_iris}
    return {kind: n for kind, n in found.items() if n}


def open_graph(
    *,
    store: str | os.PathLike[str] | None = None,
    endpoint: str | None = None,
    strict_rdf: bool = False,
    default_graph_uris: Sequence[str] = (),
    headers: Mapping[str, str] | Iterable[str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> Graph:
    """Open an RDF file (``.gz`` too) or an endpoint; a file is loaded leniently unless
    ``strict_rdf``, and what was let through is counted."""
    if (store is None) == (endpoint is None):
        raise InputError("give exactly one of store (an RDF file) or endpoint (a URL)")
    if endpoint is not None:
        runner = endpoint_runner(
            endpoint, timeout, headers=headers, default_graph_uris=default_graph_uris
        )
        graph = Graph(runner, _endpoint_name(endpoint))
        counter = endpoint_runner(
            endpoint,
            min(timeout, COUNT_TIMEOUT),
            headers=headers,
            default_graph_uris=default_graph_uris,
        )
        graph.triples = count_triples(Graph(counter, graph.name), graph)
        return graph
    path = Path(store)  # type: ignore[arg-type]
    loaded = load_store(path, lenient=not strict_rdf)
    graph = Graph(store_runner(loaded, default_graph_uris), str(path))
    graph.prefixes = _file_prefixes(path)
    graph.triples = _count(graph, "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")
    if graph.triples == 0:
        raise GraphError("the graph holds no triples", source=str(path))
    if not strict_rdf:
        graph.let_through = count_let_through(graph)
    return graph


def count_triples(counter: Graph, graph: Graph) -> int | None:
    """The triples of ``graph`` counted through ``counter`` (its runner with a short timeout);
    None when the count fails or times out (the report says "triples unknown")."""
    graph.queries += 1
    try:
        return _count(counter, "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")
    except GraphError:
        return None


def triples_text(count: int | None) -> str:
    """The graph's size for people: its triples, or why they are unknown."""
    return (
        "triples unknown (the count failed or timed out)" if count is None else f"{count} triples"
    )


def _endpoint_name(url: str) -> str:
    import urllib.parse

    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
