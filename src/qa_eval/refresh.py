"""Re-run the SPARQL queries of a reference dataset and update the reference step outputs.

A reference step is refreshed when it has a SPARQL query in ``args.query`` and is a SPARQL step
(``name: sparql_query`` or ``output_media_type: application/sparql-results+json``). Its query runs
against either an RDF file loaded into an embedded pyoxigraph store (``store_runner``) or a SPARQL
1.1 protocol endpoint over HTTP (``endpoint_runner``), and the result (SELECT or ASK) becomes the
step's ``output``: SPARQL 1.1 JSON results text, as in the README's examples::

    {"head": {"vars": ["s", "name"]}, "results": {"bindings": [{"s": {"type": "uri", ...}}]}}

The text is stable: ``head.vars`` is the query's projection, each binding lists its variables in
that order and each term its keys as ``type``, ``value``, then ``xml:lang`` or ``datatype``
(``xsd:string`` is left out, as RDF 1.1 makes it the default). Rows keep the query's order when the
step has ``ordered: true``; otherwise they are sorted, so that the text does not depend on the
store's internal order. A step whose result is unchanged (the same columns and the same rows, as a
sequence when ordered, else as a multiset; blank node labels are ignored) keeps its old output text
untouched, so refreshing a current dataset rewrites nothing.

``refresh_reference`` never mutates the caller's data: it returns a deep copy with the new outputs
and the list of the steps whose result changed. Problems (an unknown RDF format, a query that does
not parse, an endpoint that cannot be reached) are ``InputError`` s whose one-line message names
the file, the template and question, and the step.

For RDF dataset files (N-Quads, TriG) the queries see the union of all graphs as their default
graph, as most triple stores do.
"""

from __future__ import annotations

import copy
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from .errors import InputError
from .extras import require
from .io import YAML_SUFFIXES, check_output_path, read_data, write_data
from .records import SPARQL_JSON
from .steps.sparql import SparqlResultError, parse_sparql_json

if TYPE_CHECKING:
    import pyoxigraph

__all__ = [
    "QueryRunner",
    "RefreshResult",
    "SparqlRunError",
    "StepChange",
    "endpoint_runner",
    "load_store",
    "refresh_reference",
    "refresh_reference_file",
    "sparql_json_text",
    "store_runner",
    "write_reference",
]

XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"
RDF_LANG_STRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"
DEFAULT_TIMEOUT = 30.0
"""Seconds to wait for an HTTP SPARQL endpoint to answer one query."""

QueryRunner = Callable[[str], dict[str, Any]]
"""Runs one SPARQL query and returns its SPARQL JSON result (a dict); raises ``SparqlRunError``."""

# File extension -> name of the pyoxigraph.RdfFormat attribute.
_RDF_FORMATS = {
    ".ttl": "TURTLE",
    ".turtle": "TURTLE",
    ".nt": "N_TRIPLES",
    ".nq": "N_QUADS",
    ".trig": "TRIG",
    ".n3": "N3",
    ".rdf": "RDF_XML",
    ".owl": "RDF_XML",
    ".xml": "RDF_XML",
    ".jsonld": "JSON_LD",
}


class SparqlRunError(Exception):
    """A query could not be run (bad query, unreachable endpoint); ``refresh_reference`` adds
    the place (file, template, question, step) and raises it as an ``InputError``."""


@dataclass(frozen=True)
class StepChange:
    """One refreshed reference step whose result differs from its old output."""

    template_id: Any
    question_id: Any
    group: int
    index: int
    old: str
    new: str
    added: int = 0
    removed: int = 0

    @property
    def step(self) -> str:
        """Where the step is in its question: ``reference_steps[group][index]``."""
        return f"reference_steps[{self.group}][{self.index}]"

    def describe(self) -> str:
        """One line: the question, the step and what changed."""
        detail = f"{self.old} -> {self.new}"
        if self.added or self.removed:
            detail += f" (+{self.added} added, -{self.removed} removed)"
        return f"template {self.template_id!r} question {self.question_id!r} {self.step}: {detail}"

    def __str__(self) -> str:
        return self.describe()


@dataclass(frozen=True)
class RefreshResult:
    """The refreshed reference data (a new object), the changed steps and the steps run."""

    data: Any
    changes: list[StepChange]
    steps_run: int


# --- Query runners ---------------------------------------------------------------------------


def _pyoxigraph() -> Any:
    return require("pyoxigraph", "refreshing from an RDF file")


def load_store(graph_path: str | os.PathLike[str]) -> pyoxigraph.Store:
    """Load an RDF file into a new in-memory pyoxigraph store (format from the extension)."""
    ox = _pyoxigraph()
    path = Path(graph_path)
    format_name = _RDF_FORMATS.get(path.suffix.lower())
    if format_name is None:
        known = ", ".join(sorted(_RDF_FORMATS))
        raise InputError(
            f"unknown RDF format {path.suffix or '(no extension)'!r}: use one of {known}",
            source=str(path),
        )
    if not path.is_file():
        raise InputError("no such file" if not path.exists() else "not a file", source=str(path))
    store = ox.Store()
    try:
        store.load(path=str(path), format=getattr(ox.RdfFormat, format_name))
    except SyntaxError as e:
        raise InputError(f"RDF does not parse: {e.msg or e}", source=str(path)) from None
    except (OSError, ValueError) as e:
        raise InputError(f"cannot load RDF: {e}", source=str(path)) from None
    return store


def _term_json(term: Any) -> dict[str, Any]:
    """SPARQL JSON of one pyoxigraph term."""
    ox = _pyoxigraph()
    if isinstance(term, ox.NamedNode):
        return {"type": "uri", "value": term.value}
    if isinstance(term, ox.BlankNode):
        return {"type": "bnode", "value": term.value}
    if isinstance(term, ox.Literal):
        out: dict[str, Any] = {"type": "literal", "value": term.value}
        if term.language:
            out["xml:lang"] = term.language
        elif term.datatype.value != XSD_STRING:
            out["datatype"] = term.datatype.value
        return out
    if isinstance(term, ox.Triple):
        return {
            "type": "triple",
            "value": {
                "subject": _term_json(term.subject),
                "predicate": _term_json(term.predicate),
                "object": _term_json(term.object),
            },
        }
    raise SparqlRunError(f"unsupported RDF term in the result: {term!r}")


def store_runner(store: pyoxigraph.Store | str | os.PathLike[str]) -> QueryRunner:
    """A query runner over a pyoxigraph store, or over an RDF file loaded into a new one."""
    ox = _pyoxigraph()
    if isinstance(store, (str, os.PathLike)):
        store = load_store(store)
    union = next(iter(store.named_graphs()), None) is not None

    def run(query: str) -> dict[str, Any]:
        try:
            result = store.query(query, use_default_graph_as_union=union)
        except SyntaxError as e:
            raise SparqlRunError(f"the query does not parse: {e.msg or e}") from None
        except (OSError, ValueError) as e:
            raise SparqlRunError(f"the query failed: {e}") from None
        if isinstance(result, ox.QueryBoolean):
            return {"head": {}, "boolean": bool(result)}
        if not isinstance(result, ox.QuerySolutions):
            raise SparqlRunError("only SELECT and ASK queries can be refreshed")
        names = [v.value for v in result.variables]
        try:
            bindings = [
                {
                    name: _term_json(value)
                    for name, value in zip(names, solution)
                    if value is not None
                }
                for solution in result
            ]
        except (OSError, ValueError) as e:  # evaluation errors surface while iterating
            raise SparqlRunError(f"the query failed: {e}") from None
        return {"head": {"vars": names}, "results": {"bindings": bindings}}

    return run


def _first_line(text: str, limit: int = 200) -> str:
    for line in text.splitlines():
        if line.strip():
            line = line.strip()
            return line if len(line) <= limit else line[: limit - 3] + "..."
    return ""


def endpoint_runner(url: str, timeout: float = DEFAULT_TIMEOUT) -> QueryRunner:
    """A query runner over a SPARQL 1.1 protocol endpoint (HTTP POST, JSON results)."""
    scheme = urllib.parse.urlsplit(url).scheme.lower()
    if scheme not in ("http", "https"):
        raise InputError("a SPARQL endpoint must be an http:// or https:// URL", source=url)

    def run(query: str) -> dict[str, Any]:
        request = urllib.request.Request(
            url,
            data=urllib.parse.urlencode({"query": query}).encode("utf-8"),
            headers={
                "Accept": SPARQL_JSON,
                "Content-Type": "application/x-www-form-urlencoded; charset=utf-8",
            },
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                body = response.read()
        except urllib.error.HTTPError as e:
            detail = _first_line(e.read().decode("utf-8", "replace"))
            message = f"SPARQL endpoint {url} answered HTTP {e.code} {e.reason}"
            raise SparqlRunError(message + (f": {detail}" if detail else "")) from None
        except TimeoutError:
            raise SparqlRunError(
                f"SPARQL endpoint {url} did not answer within {timeout:g} s"
            ) from None
        except urllib.error.URLError as e:
            if isinstance(e.reason, TimeoutError):  # the connection itself timed out
                raise SparqlRunError(
                    f"SPARQL endpoint {url} did not answer within {timeout:g} s"
                ) from None
            reason = getattr(e.reason, "strerror", None) or e.reason
            raise SparqlRunError(f"cannot reach SPARQL endpoint {url}: {reason}") from None
        except OSError as e:
            raise SparqlRunError(f"cannot reach SPARQL endpoint {url}: {e}") from None
        try:
            return parse_sparql_json(json.loads(body.decode("utf-8-sig")))
        except (UnicodeDecodeError, ValueError) as e:  # JSONDecodeError, SparqlResultError
            raise SparqlRunError(
                f"SPARQL endpoint {url} did not return SPARQL JSON results ({e})"
            ) from None

    return run


# --- Canonical SPARQL JSON -------------------------------------------------------------------


def _canonical_term(term: Mapping[str, Any]) -> dict[str, Any]:
    kind = term.get("type")
    if kind == "typed-literal":  # the SPARQL 1.0 JSON name
        kind = "literal"
    out: dict[str, Any] = {"type": kind, "value": term.get("value")}
    if kind == "literal":
        lang = term.get("xml:lang")
        datatype = term.get("datatype")
        if lang:
            out["xml:lang"] = lang
        elif datatype and datatype not in (XSD_STRING, RDF_LANG_STRING):
            out["datatype"] = datatype
    elif kind == "triple" and isinstance(out["value"], Mapping):
        out["value"] = {k: _canonical_term(v) for k, v in out["value"].items()}
    return out


def _sort_key(term: Mapping[str, Any] | None) -> tuple[str, ...]:
    if term is None:
        return ("",)
    value = term.get("value")
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return (
        str(term.get("type")),
        text,
        str(term.get("xml:lang") or ""),
        str(term.get("datatype") or ""),
    )


def _canonical(result: Mapping[str, Any], ordered: bool) -> dict[str, Any]:
    """The result with canonical terms, vars in projection order and (unless ordered) sorted
    rows."""
    if "boolean" in result:
        return {"head": {}, "boolean": bool(result["boolean"])}
    names = list(dict.fromkeys(result.get("head", {}).get("vars", [])))
    rows = []
    for binding in result["results"]["bindings"]:
        for name in binding:
            if name not in names:  # a variable missing from head.vars: keep it, at the end
                names.append(name)
        rows.append({n: _canonical_term(binding[n]) for n in names if binding.get(n) is not None})
    if not ordered:
        rows.sort(key=lambda row: [_sort_key(row.get(n)) for n in names])
    return {"head": {"vars": names}, "results": {"bindings": rows}}


def sparql_json_text(result: Mapping[str, Any], ordered: bool = False) -> str:
    """SPARQL JSON results as stable one-line text (rows sorted unless ``ordered``)."""
    return json.dumps(_canonical(result, ordered), ensure_ascii=False)


def _row_key(row: Mapping[str, Any], names: Sequence[str]) -> tuple[Any, ...]:
    key: list[tuple[str, ...]] = []
    for name in names:
        term = row.get(name)
        if term is not None and term.get("type") == "bnode":
            key.append(("bnode",))  # labels are local to one result
        else:
            key.append(_sort_key(term))
    return tuple(key)


def _summary(result: Mapping[str, Any] | None) -> str:
    if result is None:
        return "no output"
    if "boolean" in result:
        return f"ASK {str(result['boolean']).lower()}"
    count = len(result["results"]["bindings"])
    columns = ", ".join(result["head"]["vars"])
    return f"{count} row{'' if count == 1 else 's'} [{columns}]"


def _difference(
    old: Mapping[str, Any] | None, new: Mapping[str, Any], ordered: bool
) -> tuple[bool, int, int]:
    """(changed, rows added, rows removed) between two canonical results."""
    if old is None:
        return True, 0, 0
    if ("boolean" in old) != ("boolean" in new):
        return True, 0, 0
    if "boolean" in new:
        return old["boolean"] != new["boolean"], 0, 0
    old_names, new_names = old["head"]["vars"], new["head"]["vars"]
    names = list(dict.fromkeys([*old_names, *new_names]))
    old_rows = [_row_key(r, names) for r in old["results"]["bindings"]]
    new_rows = [_row_key(r, names) for r in new["results"]["bindings"]]
    old_count, new_count = Counter(old_rows), Counter(new_rows)
    added = sum((new_count - old_count).values())
    removed = sum((old_count - new_count).values())
    same_rows = old_rows == new_rows if ordered else old_count == new_count
    return not (same_rows and old_names == new_names), added, removed


def _parse_old(output: Any, ordered: bool) -> dict[str, Any] | None:
    if output is None:
        return None
    try:
        data = output if isinstance(output, Mapping) else json.loads(output)
        return _canonical(parse_sparql_json(data), ordered)
    except (TypeError, ValueError, KeyError):  # not JSON, or not a SPARQL JSON result
        return None


# --- Refreshing ------------------------------------------------------------------------------


def _is_sparql_step(step: Any) -> bool:
    if not isinstance(step, dict):
        return False
    args = step.get("args")
    if not isinstance(args, dict) or not isinstance(args.get("query"), str):
        return False
    return step.get("name") == "sparql_query" or step.get("output_media_type") == SPARQL_JSON


def refresh_reference(
    data: Any, run_query: QueryRunner, source: str = "reference"
) -> RefreshResult:
    """Re-run every SPARQL reference step with ``run_query``; return a refreshed copy."""
    if not isinstance(data, list):
        raise InputError("the top level must be a list of templates", source=source)
    data = copy.deepcopy(data)
    changes: list[StepChange] = []
    steps_run = 0
    for t_pos, template in enumerate(data):
        if not isinstance(template, dict) or not isinstance(template.get("questions"), list):
            raise InputError(
                "a template must be a mapping with a 'questions' list",
                source=source,
                record=f"template [{t_pos}]",
            )
        template_id = template.get("template_id", f"[{t_pos}]")
        for q_pos, question in enumerate(template["questions"]):
            if not isinstance(question, dict):
                continue
            question_id = question.get("id", f"[{q_pos}]")
            record = f"template {template_id!r} question {question_id!r}"
            groups = question.get("reference_steps")
            if not isinstance(groups, list):
                continue
            for g, group in enumerate(groups):
                if not isinstance(group, list):
                    continue
                for i, step in enumerate(group):
                    if not _is_sparql_step(step):
                        continue
                    where = f"reference_steps[{g}][{i}]"
                    try:
                        result = parse_sparql_json(run_query(step["args"]["query"]))
                    except SparqlRunError as e:
                        raise InputError(
                            str(e), source=source, record=record, field=f"{where}.args.query"
                        ) from None
                    except SparqlResultError as e:
                        raise InputError(
                            f"not a SPARQL JSON result: {e}",
                            source=source,
                            record=record,
                            field=f"{where}.args.query",
                        ) from None
                    steps_run += 1
                    ordered = step.get("ordered") is True
                    new = _canonical(result, ordered)
                    old_output = step.get("output")
                    old = _parse_old(old_output, ordered)
                    changed, added, removed = _difference(old, new, ordered)
                    if not changed:
                        continue
                    text = json.dumps(new, ensure_ascii=False)
                    step["output"] = new if isinstance(old_output, dict) else text
                    if old is not None:
                        old_summary = _summary(old)
                    elif old_output is None:
                        old_summary = "no output"
                    else:
                        old_summary = "output that is not SPARQL JSON"
                    changes.append(
                        StepChange(
                            template_id,
                            question_id,
                            g,
                            i,
                            old_summary,
                            _summary(new),
                            added,
                            removed,
                        )
                    )
    return RefreshResult(data, changes, steps_run)


class _LiteralBlockDumper(yaml.SafeDumper):
    """The safe dumper, with multi-line strings (queries) written as ``|`` literal blocks."""


def _represent_str(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    style = "|" if "\n" in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_LiteralBlockDumper.add_representer(str, _represent_str)


def write_reference(path: str | os.PathLike[str], data: Any) -> None:
    """Write reference data by extension; YAML keeps multi-line strings as literal blocks."""
    file = Path(path)
    if file.suffix.lower() not in YAML_SUFFIXES:
        write_data(file, data)
        return
    check_output_path(file)
    text = yaml.dump(
        data, Dumper=_LiteralBlockDumper, sort_keys=False, allow_unicode=True, width=100
    )
    file.write_text(text, encoding="utf-8")


def refresh_reference_file(
    reference_path: str | os.PathLike[str],
    *,
    store: str | os.PathLike[str] | None = None,
    endpoint: str | None = None,
    output: str | os.PathLike[str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> RefreshResult:
    """Refresh a reference file against an RDF file or an endpoint; write it to ``output``."""
    if (store is None) == (endpoint is None):
        raise ValueError("give exactly one of store (an RDF file) or endpoint (a URL)")
    if output is not None:
        check_output_path(output)
    data = read_data(reference_path)
    runner = store_runner(store) if store is not None else endpoint_runner(endpoint or "", timeout)
    result = refresh_reference(data, runner, source=str(reference_path))
    if output is not None:
        write_reference(output, result.data)
    return result
