"""Re-run the SPARQL queries of a reference dataset and update the reference step outputs.

A reference step is refreshed when it has a SPARQL query in ``args.query`` and is a SPARQL step
(``name: sparql_query`` or ``output_media_type: application/sparql-results+json``). Its query runs
against either an RDF file loaded into an embedded pyoxigraph store (``store_runner``) or a SPARQL
1.1 protocol endpoint over HTTP (``endpoint_runner``: headers, basic auth, ``default-graph-uri``),
and the result (SELECT or ASK) becomes the step's ``output``: SPARQL 1.1 JSON results text, as in
the README's examples::

    {"head": {"vars": ["s", "name"]}, "results": {"bindings": [{"s": {"type": "uri", ...}}]}}

The text is stable: ``head.vars`` is the query's projection, each binding lists its variables in
that order and each term its keys as ``type``, ``value``, then ``xml:lang`` or ``datatype``
(``xsd:string`` is left out, as RDF 1.1 makes it the default). Rows keep the query's order when the
step has ``ordered: true``; otherwise they are sorted, so that the text does not depend on the
store's internal order. An old output written as indented JSON gets its new text indented the same
way. A step whose result is unchanged (the same columns and the same rows, as a sequence when
ordered, else as a multiset; blank node labels are ignored) keeps its old output untouched.

Writing a reference file back (``refresh_reference_file``) changes nothing but the changed
outputs: an up-to-date file is not written at all, and in a YAML file each changed ``output``
value is replaced where it stands (same quoting style, same block indentation), so comments,
indentation and every other line stay byte for byte as they were. The new text is parsed again
and must give exactly the refreshed data; where a value cannot be replaced in place (an anchor, a
tag, a flow-style step without an output) the file is rewritten by ruamel.yaml's round-trip
dumper, which keeps comments. A JSON file is rewritten with its own indentation.

A refresh that looks like a mistake is refused unless forced (``RefreshRefused``): one that
would empty an output that had rows (the wrong graph, an empty default graph), or that would
change more than ``max_changes`` outputs (by default more than half of the steps run).

``refresh_reference`` never mutates the caller's data: it returns a deep copy with the new outputs
and the list of the steps whose result changed. Problems (an unknown RDF format, a query that does
not parse, an endpoint that cannot be reached) are ``InputError`` s whose one-line message names
the file, the template and question, and the step. Header values and passwords never appear in a
message: they are replaced by ``***`` even where a server echoes them.

For RDF dataset files (N-Quads, TriG) the queries see the union of all graphs as their default
graph, as most triple stores do, unless ``default_graph_uris`` name the graphs to use.
"""

from __future__ import annotations

import base64
import copy
import dataclasses
import io
import itertools
import json
import os
import re
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from .errors import InputError, QaEvalError
from .extras import require
from .io import JSON_SUFFIXES, YAML_SUFFIXES, check_output_path, read_data, write_data
from .steps.kinds import SPARQL_JSON
from .steps.sparql import SparqlResultError, parse_sparql_json

if TYPE_CHECKING:
    import pyoxigraph

__all__ = [
    "DEFAULT_MAX_CHANGES",
    "ENV_PASSWORD",
    "ENV_USER",
    "QueryRunner",
    "RefreshRefused",
    "RefreshResult",
    "SparqlRunError",
    "StepChange",
    "change_limit",
    "endpoint_runner",
    "load_store",
    "parse_header",
    "refresh_reference",
    "refresh_reference_file",
    "safety_issues",
    "sparql_json_text",
    "store_runner",
    "updated_text",
    "write_reference",
]

XSD = "http://www.w3.org/2001/XMLSchema#"
XSD_STRING = XSD + "string"
RDF_LANG_STRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"
DEFAULT_TIMEOUT = 30.0
"""Seconds to wait for an HTTP SPARQL endpoint to answer one query."""
DEFAULT_MAX_CHANGES = "50%"
"""Without ``force``, a refresh may change at most this many outputs (here: half the steps run)."""
ENV_USER = "QA_EVAL_SPARQL_USER"
ENV_PASSWORD = "QA_EVAL_SPARQL_PASSWORD"
"""Environment variables with the user name and password of an endpoint's HTTP basic auth."""
SAMPLE_ROWS = 3
"""Rows added and removed shown per changed step."""

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

try:
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # PyYAML built without libyaml
    _Loader = yaml.SafeLoader


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
    kind: str = "changed"
    """``changed``: an output was replaced; ``filled``: the step had no output."""
    emptied: bool = False
    """The old output had rows (or was not SPARQL JSON) and the new result has none."""
    rows_added: tuple[str, ...] = ()
    """The first rows of the new result that the old one lacks, as text."""
    rows_removed: tuple[str, ...] = ()
    """The first rows of the old result that the new one lacks, as text."""
    note: str = ""
    """What else changed: the order of the rows or of the columns."""
    position: tuple[int, int] = (-1, -1)
    """Where the question is in the file: (template position, question position)."""

    @property
    def step(self) -> str:
        """Where the step is in its question: ``reference_steps[group][index]``."""
        return f"reference_steps[{self.group}][{self.index}]"

    def describe(self) -> str:
        """One line: the question, the step and what changed."""
        detail = f"{self.old} -> {self.new}"
        if self.added or self.removed:
            detail += f" (+{self.added} added, -{self.removed} removed)"
        if self.note:
            detail += f" ({self.note})"
        if self.emptied:
            detail += " [EMPTIED]"
        return f"template {self.template_id!r} question {self.question_id!r} {self.step}: {detail}"

    def details(self) -> list[str]:
        """The first rows removed (``-``) and added (``+``), one line each, indented."""
        lines = [f"    - {row}" for row in self.rows_removed]
        if self.removed > len(self.rows_removed):
            lines.append(f"    - ... {self.removed - len(self.rows_removed)} more removed")
        lines += [f"    + {row}" for row in self.rows_added]
        if self.added > len(self.rows_added):
            lines.append(f"    + ... {self.added - len(self.rows_added)} more added")
        return lines

    def as_dict(self) -> dict[str, Any]:
        """The change as plain data (the CLI's ``--format json``)."""
        return {
            "template_id": self.template_id,
            "question_id": self.question_id,
            "step": self.step,
            "kind": self.kind,
            "old": self.old,
            "new": self.new,
            "added": self.added,
            "removed": self.removed,
            "emptied": self.emptied,
            "rows_added": list(self.rows_added),
            "rows_removed": list(self.rows_removed),
            "note": self.note,
        }

    def __str__(self) -> str:
        return self.describe()


@dataclass(frozen=True)
class RefreshResult:
    """The refreshed reference data (a new object), the changed steps and the steps run."""

    data: Any
    changes: list[StepChange]
    steps_run: int
    issues: tuple[str, ...] = ()
    """Why writing needs ``force`` (``safety_issues``); empty when the refresh looks safe."""
    written: str | None = None
    """The file written, or None (nothing changed in place, a dry run, or no output asked)."""


class RefreshRefused(QaEvalError):
    """A refresh that would empty outputs or change too many was not written (pass ``force``)."""

    def __init__(self, message: str, result: RefreshResult) -> None:
        super().__init__(message)
        self.result = result


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


def _check_graph_uris(uris: Sequence[str]) -> list[str]:
    checked = []
    for uri in uris:
        if not isinstance(uri, str) or not re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*:\S+", uri):
            raise InputError(f"default graph URI {uri!r} is not an absolute IRI")
        checked.append(uri)
    return checked


def store_runner(
    store: pyoxigraph.Store | str | os.PathLike[str], default_graph_uris: Sequence[str] = ()
) -> QueryRunner:
    """A query runner over a pyoxigraph store, or over an RDF file loaded into a new one; with
    ``default_graph_uris`` the queries' default graph is the merge of those named graphs."""
    ox = _pyoxigraph()
    graphs = [ox.NamedNode(uri) for uri in _check_graph_uris(default_graph_uris)]
    if isinstance(store, (str, os.PathLike)):
        store = load_store(store)
    options: dict[str, Any] = {}
    if graphs:
        options["default_graph"] = graphs
    else:
        options["use_default_graph_as_union"] = next(iter(store.named_graphs()), None) is not None

    def run(query: str) -> dict[str, Any]:
        try:
            result = store.query(query, **options)
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


_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


def parse_header(text: str) -> tuple[str, str]:
    """``'Name: value'`` -> ``(name, value)``; the error never shows the value."""
    name, colon, value = text.partition(":")
    name, value = name.strip(), value.strip()
    if not colon or not _HEADER_NAME.fullmatch(name):
        raise InputError(
            f"a header must be 'Name: value' with a token as its name, got a header named "
            f"{name[:40]!r}"
            if colon
            else "a header must be 'Name: value' (no ':' found)"
        )
    if any(c in value for c in "\r\n\0"):
        raise InputError(f"the value of header {name!r} contains a line break")
    if name.lower() in ("content-type", "content-length", "host"):
        raise InputError(f"header {name!r} is set by qa-eval and cannot be replaced")
    return name, value


def _headers(headers: Mapping[str, str] | Iterable[str] | None) -> list[tuple[str, str]]:
    if headers is None:
        return []
    if isinstance(headers, Mapping):
        return [parse_header(f"{name}: {value}") for name, value in headers.items()]
    if isinstance(headers, str):
        return [parse_header(headers)]
    return [parse_header(text) for text in headers]


def _redactor(secrets: Iterable[str]) -> Callable[[str], str]:
    """A function that replaces every secret (and its URL-quoted form) in a text by ``***``."""
    forms: set[str] = set()
    for secret in secrets:
        if len(secret) >= 3:
            forms.update({secret, urllib.parse.quote(secret, safe=""), urllib.parse.quote(secret)})
    ordered = sorted(forms, key=len, reverse=True)

    def redact(text: str) -> str:
        for secret in ordered:
            text = text.replace(secret, "***")
        return text

    return redact


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Redirects are errors: a POST would turn into a GET without the query, and the credentials
    would go on to an address the user did not name."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: Any,
        code: int,
        msg: str,
        headers: Any,
        newurl: str,
    ) -> urllib.request.Request | None:
        raise urllib.error.HTTPError(req.full_url, code, msg, headers, fp)


def endpoint_runner(
    url: str,
    timeout: float = DEFAULT_TIMEOUT,
    *,
    headers: Mapping[str, str] | Iterable[str] | None = None,
    default_graph_uris: Sequence[str] = (),
    auth: tuple[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> QueryRunner:
    """A query runner over a SPARQL 1.1 protocol endpoint (HTTP POST, JSON results).

    ``headers`` (``{"Name": "value"}`` or ``"Name: value"`` strings) go with every request; an
    ``Authorization`` header among them wins over ``auth`` (user, password: HTTP basic), over a
    ``user:password@`` in the URL, and over ``QA_EVAL_SPARQL_USER`` / ``QA_EVAL_SPARQL_PASSWORD``
    in ``environ`` (default ``os.environ``). ``default_graph_uris`` are sent as
    ``default-graph-uri`` parameters. No message ever shows a header value or a password."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise InputError(
            "a SPARQL endpoint must be an http:// or https:// URL",
            source=_without_userinfo(url),
        )
    extra = _headers(headers)
    graphs = _check_graph_uris(default_graph_uris)
    env = os.environ if environ is None else environ
    secrets = [value for _, value in extra]
    if parts.username is not None or parts.password is not None:
        url_auth = (
            urllib.parse.unquote(parts.username or ""),
            urllib.parse.unquote(parts.password or ""),
        )
        secrets += [parts.username or "", parts.password or "", *url_auth]
        url = _without_userinfo(url)
    else:
        url_auth = None
    request_headers = {
        "Accept": SPARQL_JSON,
        "Content-Type": "application/x-www-form-urlencoded; charset=utf-8",
    }
    credentials = "none"
    if any(name.lower() == "authorization" for name, _ in extra):
        credentials = "the Authorization header given"
    elif auth is not None or url_auth is not None:
        user, password = auth or url_auth or ("", "")
        credentials = "basic auth (auth argument)" if auth else "basic auth (user in the URL)"
    elif env.get(ENV_USER) is not None or env.get(ENV_PASSWORD) is not None:
        env_user, env_password = env.get(ENV_USER), env.get(ENV_PASSWORD)
        if env_user is None or env_password is None:
            missing = ENV_USER if env_user is None else ENV_PASSWORD
            raise InputError(
                f"{missing} is not set: basic auth needs both {ENV_USER} and {ENV_PASSWORD}"
            )
        user, password = env_user, env_password
        credentials = f"basic auth ({ENV_USER}, {ENV_PASSWORD})"
    if credentials.startswith("basic auth"):
        token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
        request_headers["Authorization"] = f"Basic {token}"
        secrets += [password, token]
    for name, value in extra:
        for known in list(request_headers):
            if known.lower() == name.lower():
                del request_headers[known]
        request_headers[name] = value
    redact = _redactor(secrets)
    opener = urllib.request.build_opener(_NoRedirect())

    def fail(message: str) -> SparqlRunError:
        return SparqlRunError(redact(message))

    def run(query: str) -> dict[str, Any]:
        form = [("query", query), *(("default-graph-uri", g) for g in graphs)]
        request = urllib.request.Request(
            url,
            data=urllib.parse.urlencode(form).encode("utf-8"),
            headers=request_headers,
            method="POST",
        )
        try:
            with opener.open(request, timeout=timeout) as response:
                body = response.read()
        except urllib.error.HTTPError as e:
            if e.code in (301, 302, 303, 307, 308):
                target = _without_userinfo(e.headers.get("Location", "") if e.headers else "")
                raise fail(
                    f"SPARQL endpoint {url} redirected (HTTP {e.code}) to {target or '?'}: "
                    "give that URL to --endpoint (credentials are not sent on to a redirect)"
                ) from None
            detail = _first_line(e.read().decode("utf-8", "replace")) if e.fp else ""
            message = f"SPARQL endpoint {url} answered HTTP {e.code} {e.reason}"
            if detail:
                message += f": {detail}"
            if e.code in (401, 403):
                message += (
                    f" (credentials sent: {credentials}; use --header 'Authorization: ...' or "
                    f"set {ENV_USER} and {ENV_PASSWORD})"
                )
            raise fail(message) from None
        except TimeoutError:
            raise fail(f"SPARQL endpoint {url} did not answer within {timeout:g} s") from None
        except urllib.error.URLError as e:
            if isinstance(e.reason, TimeoutError):  # the connection itself timed out
                raise fail(f"SPARQL endpoint {url} did not answer within {timeout:g} s") from None
            reason = getattr(e.reason, "strerror", None) or e.reason
            raise fail(f"cannot reach SPARQL endpoint {url}: {reason}") from None
        except OSError as e:
            raise fail(f"cannot reach SPARQL endpoint {url}: {e}") from None
        try:
            return parse_sparql_json(json.loads(body.decode("utf-8-sig")))
        except (UnicodeDecodeError, ValueError) as e:  # JSONDecodeError, SparqlResultError
            raise fail(f"SPARQL endpoint {url} did not return SPARQL JSON results ({e})") from None

    return run


def _without_userinfo(url: str) -> str:
    """The URL without ``user:password@``."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return "(an invalid URL)"
    if "@" not in parts.netloc:
        return url
    return urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


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


_SHORT_TYPES = {XSD + name: name for name in ("integer", "decimal", "double", "float", "boolean")}


def _format_term(term: Mapping[str, Any]) -> str:
    """One term as short text: ``<iri>``, ``_:b``, ``"text"@en``, a number, ``"v"^^<type>``."""
    kind, value = term.get("type"), term.get("value")
    if kind == "uri":
        return f"<{value}>"
    if kind == "bnode":
        return f"_:{value}"
    if kind == "triple" and isinstance(value, Mapping):
        inner = " ".join(
            _format_term(value.get(k) or {}) for k in ("subject", "predicate", "object")
        )
        return f"<< {inner} >>"
    text = json.dumps(value, ensure_ascii=False)
    if term.get("xml:lang"):
        return f"{text}@{term['xml:lang']}"
    datatype = term.get("datatype")
    if datatype in _SHORT_TYPES:
        return str(value)
    return f"{text}^^<{datatype}>" if datatype else text


def _format_row(row: Mapping[str, Any], names: Sequence[str]) -> str:
    cells = [f"{name}={_format_term(row[name])}" for name in names if row.get(name) is not None]
    return ", ".join(cells) or "(a row with no values)"


def _row_samples(
    rows: list[dict[str, Any]], keys: list[tuple[Any, ...]], extra: Counter[Any], names: list[str]
) -> tuple[str, ...]:
    """The first ``SAMPLE_ROWS`` rows whose keys are in ``extra`` (a multiset), as text."""
    left = Counter(extra)
    out: list[str] = []
    for row, key in zip(rows, keys):
        if len(out) == SAMPLE_ROWS:
            break
        if left[key] > 0:
            left[key] -= 1
            out.append(_format_row(row, names))
    return tuple(out)


@dataclass(frozen=True)
class _Difference:
    changed: bool
    added: int = 0
    removed: int = 0
    rows_added: tuple[str, ...] = ()
    rows_removed: tuple[str, ...] = ()
    note: str = ""


def _difference(
    old: Mapping[str, Any] | None, new: Mapping[str, Any], ordered: bool
) -> _Difference:
    """What changed between two canonical results."""
    if old is None or ("boolean" in old) != ("boolean" in new):
        return _Difference(True)
    if "boolean" in new:
        return _Difference(old["boolean"] != new["boolean"])
    old_names, new_names = old["head"]["vars"], new["head"]["vars"]
    names = list(dict.fromkeys([*old_names, *new_names]))
    old_bindings, new_bindings = old["results"]["bindings"], new["results"]["bindings"]
    old_rows = [_row_key(r, names) for r in old_bindings]
    new_rows = [_row_key(r, names) for r in new_bindings]
    old_count, new_count = Counter(old_rows), Counter(new_rows)
    more, fewer = new_count - old_count, old_count - new_count
    same_rows = old_rows == new_rows if ordered else not more and not fewer
    if same_rows and old_names == new_names:
        return _Difference(False)
    note = ""
    if not more and not fewer and not same_rows:
        note = "the same rows in another order"
    elif old_names != new_names and sorted(old_names) == sorted(new_names):
        note = "the columns in another order"
    return _Difference(
        True,
        sum(more.values()),
        sum(fewer.values()),
        _row_samples(new_bindings, new_rows, more, new_names),
        _row_samples(old_bindings, old_rows, fewer, old_names),
        note,
    )


def _parse_old(output: Any, ordered: bool) -> dict[str, Any] | None:
    if output is None:
        return None
    try:
        data = output if isinstance(output, Mapping) else json.loads(output)
        return _canonical(parse_sparql_json(data), ordered)
    except (TypeError, ValueError, KeyError):  # not JSON, or not a SPARQL JSON result
        return None


def _json_indent(text: str) -> int | str | None:
    """The indentation of JSON text written over several lines (None: on one line)."""
    match = re.search(r"\n([ \t]+)\S", text)
    if match is None:
        return None
    indent = match.group(1)
    return "\t" if indent.startswith("\t") else len(indent)


def _output_text(new: Mapping[str, Any], old_output: Any, old: Any) -> str:
    """The new output text, indented as the old one was when it was indented JSON."""
    indent = None
    if old is not None and isinstance(old_output, str) and "\n" in old_output.strip():
        indent = _json_indent(old_output.strip())
    return json.dumps(new, ensure_ascii=False, indent=indent)


# --- Refreshing ------------------------------------------------------------------------------


def _is_sparql_step(step: Any) -> bool:
    if not isinstance(step, dict):
        return False
    args = step.get("args")
    if not isinstance(args, dict) or not isinstance(args.get("query"), str):
        return False
    return step.get("name") == "sparql_query" or step.get("output_media_type") == SPARQL_JSON


def _has_rows(old: Mapping[str, Any] | None, old_output: Any) -> bool:
    """Whether an old output had something in it: rows, or text that was not SPARQL JSON."""
    if old is None:
        if isinstance(old_output, str):
            return bool(old_output.strip())
        return old_output is not None and old_output != {} and old_output != []
    return "boolean" not in old and bool(old["results"]["bindings"])


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
                    diff = _difference(old, new, ordered)
                    if not diff.changed:
                        continue
                    if isinstance(old_output, dict):
                        step["output"] = new
                    else:
                        step["output"] = _output_text(new, old_output, old)
                    if old is not None:
                        old_summary = _summary(old)
                    elif old_output is None:
                        old_summary = "no output"
                    else:
                        old_summary = "output that is not SPARQL JSON"
                    new_empty = "boolean" not in new and not new["results"]["bindings"]
                    changes.append(
                        StepChange(
                            template_id,
                            question_id,
                            g,
                            i,
                            old_summary,
                            _summary(new),
                            diff.added,
                            diff.removed,
                            kind="filled" if old_output is None else "changed",
                            emptied=new_empty and _has_rows(old, old_output),
                            rows_added=diff.rows_added,
                            rows_removed=diff.rows_removed,
                            note=diff.note,
                            position=(t_pos, q_pos),
                        )
                    )
    return RefreshResult(data, changes, steps_run)


def change_limit(max_changes: int | str, steps_run: int) -> float:
    """The most outputs a refresh may change without force: a count (``5``, ``"5"``) or a
    percentage of the steps run (``"50%"``)."""
    problem = (
        f"max changes must be a count (e.g. 5) or a percentage of the steps run (e.g. 50%), "
        f"got {max_changes!r}"
    )
    if isinstance(max_changes, bool):
        raise InputError(problem)
    if isinstance(max_changes, int):
        if max_changes < 0:
            raise InputError(problem)
        return float(max_changes)
    text = str(max_changes).strip()
    try:
        if text.endswith("%"):
            percent = float(text[:-1])
            if not 0 <= percent <= 100:
                raise ValueError(text)
            return steps_run * percent / 100
        count = int(text)
    except ValueError:
        raise InputError(problem) from None
    if count < 0:
        raise InputError(problem)
    return float(count)


def safety_issues(
    result: RefreshResult, max_changes: int | str = DEFAULT_MAX_CHANGES
) -> tuple[str, ...]:
    """Why writing this refresh needs force: outputs that had rows would become empty, or more
    outputs would change than ``max_changes`` allows. Filled-in missing outputs do not count."""
    issues = []
    emptied = [c for c in result.changes if c.emptied]
    if emptied:
        first = emptied[0]
        issues.append(
            f"{len(emptied)} of {result.steps_run} SPARQL outputs would become empty, e.g. "
            f"template {first.template_id!r} question {first.question_id!r} {first.step} "
            f"({first.old} -> {first.new})"
        )
    replaced = sum(1 for c in result.changes if c.kind == "changed")
    if replaced > change_limit(max_changes, result.steps_run):
        issues.append(
            f"{replaced} of {result.steps_run} SPARQL outputs would change, more than "
            f"--max-changes {max_changes} allows"
        )
    return tuple(issues)


# --- Writing: only the changed outputs -------------------------------------------------------


def _changed_output(data: Any, change: StepChange) -> Any:
    t_pos, q_pos = change.position
    question = data[t_pos]["questions"][q_pos]
    return question["reference_steps"][change.group][change.index]["output"]


def _get(node: Any, key: str) -> tuple[Any, Any] | None:
    """The last (key node, value node) pair of a mapping node with this key (the loader keeps
    the last of duplicate keys); None when absent or when a merge key could supply it."""
    if not isinstance(node, yaml.MappingNode):
        return None
    found = None
    for k, v in node.value:
        if isinstance(k, yaml.ScalarNode) and k.tag == "tag:yaml.org,2002:merge":
            return None
        if isinstance(k, yaml.ScalarNode) and k.value == key:
            found = (k, v)
    return found


def _item(node: Any, position: int) -> Any:
    if isinstance(node, yaml.SequenceNode) and 0 <= position < len(node.value):
        return node.value[position]
    return None


def _step_node(root: Any, change: StepChange) -> Any:
    t_pos, q_pos = change.position
    questions = _get(_item(root, t_pos), "questions")
    question = _item(questions[1], q_pos) if questions else None
    groups = _get(question, "reference_steps")
    group = _item(groups[1], change.group) if groups else None
    step = _item(group, change.index)
    return step if isinstance(step, yaml.MappingNode) else None


def _content_end(text: str, node: Any) -> int:
    """The index just after the last non-blank character of a node's text."""
    collection = isinstance(node, (yaml.MappingNode, yaml.SequenceNode))
    if collection and not node.flow_style and node.value:
        last = node.value[-1]
        return _content_end(text, last[1] if isinstance(last, tuple) else last)
    end = node.end_mark.index
    while end > node.start_mark.index and text[end - 1] in " \t\r\n":
        end -= 1
    return end


_BREAKS = "\r\n\x85\u2028\u2029"


def _single_quotable(value: str) -> bool:
    return all(c.isprintable() or c == "\t" for c in value) and not any(
        c in _BREAKS or c == "\ufeff" for c in value
    )


def _one_line(value: Any, style: str | None = "'") -> str:
    """A YAML value on one line: flow JSON for a mapping, else a quoted scalar."""
    if not isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if style != '"' and _single_quotable(value):
        return "'" + value.replace("'", "''") + "'"
    text = json.dumps(value, ensure_ascii=False)  # a JSON string is a YAML double-quoted one
    for c in "\x85\u2028\u2029\ufeff":
        text = text.replace(c, f"\\u{ord(c):04x}")
    return text


def _wrapped(value: str, style: str, key_column: int, width: int, continuation: int) -> str | None:
    """A quoted scalar folded over several lines as PyYAML writes it, re-indented."""
    node = yaml.MappingNode(
        "tag:yaml.org,2002:map",
        [
            (
                yaml.ScalarNode("tag:yaml.org,2002:str", "output"),
                yaml.ScalarNode("tag:yaml.org,2002:str", value, style=style),
            )
        ],
    )
    dumped = yaml.serialize(
        node, Dumper=yaml.SafeDumper, width=max(20, width - key_column), allow_unicode=True
    )
    if not dumped.startswith("output: "):
        return None
    lines = dumped[len("output: ") :].rstrip("\n").split("\n")
    if any(line and not line.startswith("  ") for line in lines[1:]):
        return None
    return "\n".join([lines[0], *(" " * continuation + line[2:] for line in lines[1:])])


_BLOCK_HEADER = re.compile(r"([|>])([1-9]?)([+-]?)([1-9]?)(.*)")


def _literal_block(span: str, value: str, default_indent: int) -> str | None:
    """The new text of a ``|``/``>`` block scalar: a literal block indented as the old one."""
    header_end = span.find("\n")
    match = _BLOCK_HEADER.fullmatch(span[:header_end].rstrip("\r")) if header_end >= 0 else None
    if match is None or match.group(2) or match.group(4):  # an explicit indentation indicator
        return None
    body = span[header_end + 1 :]
    first = next((line for line in body.split("\n") if line.strip()), None)
    indent = len(first) - len(first.lstrip(" ")) if first else default_indent
    content_end = len(span.rstrip(" \t\r\n"))
    tail_start = span.find("\n", content_end)
    tail = "" if tail_start < 0 else span[tail_start - (span[tail_start - 1] == "\r") :]
    lines = [" " * indent + line if line else "" for line in value.split("\n")]
    if not lines or lines[0].startswith(" " * (indent + 1)) or not value.strip():
        return None
    return "\n".join([f"|-{match.group(5)}", *lines]) + tail


def _output_edit(text: str, step: Any, value: Any) -> tuple[int, int, str] | None:
    """(start, end, replacement) that sets a step mapping's ``output`` to ``value``."""
    pair = _get(step, "output")
    if pair is None:  # add the key after the step's last line
        if step.flow_style or not step.value:
            return None
        column = step.value[0][0].start_mark.column
        end = _content_end(text, step)
        line_end = text.find("\n", end)
        line = f"{' ' * column}output: {_one_line(value)}"
        if line_end < 0:
            return len(text), len(text), "\n" + line
        return line_end + 1, line_end + 1, line + "\n"
    key, node = pair
    start, end = node.start_mark.index, node.end_mark.index
    between = text[key.end_mark.index : start]
    if not re.fullmatch(r"[ \t]*:(?:\s|#[^\n]*)*", between):
        return None  # an alias: leave it to the round-trip dumper
    null = node.tag == "tag:yaml.org,2002:null" and text.startswith("!!null ", start)
    if text[start : start + 1] in "&!*" and not null:
        return None  # an anchor or a tag: leave it to the round-trip dumper
    if null:
        return start, end, _one_line(value)
    if isinstance(node, yaml.ScalarNode):
        if start == end:  # an empty value (null)
            return start, end, " " + _one_line(value)
        style = node.style or None
        span = text[start:end]
        if style in ("|", ">"):
            if not isinstance(value, str):
                return None
            block = _literal_block(span, value, key.start_mark.column + 2)
            return None if block is None else (start, end, block)
        if style in ("'", '"') and "\n" in span.rstrip() and isinstance(value, str):
            line_start = text.rfind("\n", 0, start) + 1
            lines = text[line_start:end].split("\n")
            width = min(len(line.rstrip("\r")) for line in lines[:-1]) - 1
            second = lines[1]
            continuation = len(second) - len(second.lstrip(" "))
            wrapped = _wrapped(value, style, key.start_mark.column, width, continuation)
            return None if wrapped is None else (start, end, wrapped)
        return start, end, _one_line(value, style)
    if node.flow_style:
        return start, end, _one_line(value)
    if isinstance(value, (dict, list)) and value:  # a block collection, at the same column
        block = yaml.dump(
            value, Dumper=yaml.SafeDumper, sort_keys=False, allow_unicode=True, width=4096
        ).rstrip("\n")
        lines = block.split("\n")
        indent = " " * node.start_mark.column
        return (
            start,
            _content_end(text, node),
            "\n".join(lines[:1] + [indent + x for x in lines[1:]]),
        )
    colon = text.index(":", key.end_mark.index)
    return colon + 1, _content_end(text, node), " " + _one_line(value)


def _splice_yaml(text: str, result: RefreshResult) -> str | None:
    """The YAML text with only the changed outputs replaced, or None where it cannot be done."""
    try:
        root = yaml.compose(text, Loader=_Loader)
    except yaml.YAMLError:
        return None
    newline = "\r\n" if "\r\n" in text else "\n"
    edits = []
    for change in result.changes:
        step = _step_node(root, change)
        value = _changed_output(result.data, change)
        edit = None if step is None else _output_edit(text, step, value)
        if edit is None:
            return None
        start, end, replacement = edit
        edits.append((start, end, replacement.replace("\r\n", "\n").replace("\n", newline)))
    edits.sort()
    for (_, end, _), (start, _, _) in itertools.pairwise(edits):
        if start < end:
            return None
    for start, end, replacement in reversed(edits):
        text = text[:start] + replacement + text[end:]
    return text


def _roundtrip_yaml(text: str, result: RefreshResult) -> str:
    """The YAML text rewritten by ruamel.yaml's round-trip dumper (keeps comments)."""
    feature = "rewriting a YAML reference whose outputs cannot be replaced in place"
    ruamel = require("ruamel.yaml", feature)
    util = require("ruamel.yaml.util", feature)
    scalars = require("ruamel.yaml.scalarstring", feature)
    _, indent, offset = util.load_yaml_guess_indent(text)
    dumper = ruamel.YAML()
    dumper.preserve_quotes = True
    dumper.width = 4096
    dumper.indent(mapping=indent or 2, sequence=indent or 2, offset=offset or 0)
    document = dumper.load(text)
    for change in result.changes:
        t_pos, q_pos = change.position
        step = document[t_pos]["questions"][q_pos]["reference_steps"][change.group][change.index]
        value = _changed_output(result.data, change)
        if isinstance(value, str) and "\n" in value:
            value = scalars.LiteralScalarString(value)
        step["output"] = value
    out = io.StringIO()
    dumper.dump(document, out)
    return str(out.getvalue())


def _json_text(text: str, data: Any) -> str:
    """JSON text of data in the style of ``text``: its indentation, separators, escapes."""
    indent = _json_indent(text)
    if indent is None:
        separators = (", ", ": ") if re.search(r'"\s*:\s', text) else (",", ":")
    else:
        separators = (",", ": ")
    ascii_only = text.isascii() and "\\u" in text
    out = json.dumps(data, ensure_ascii=ascii_only, indent=indent, separators=separators)
    return out + "\n" if text.endswith("\n") else out


def _loads(text: str, yaml_file: bool) -> Any:
    try:
        return yaml.load(text, Loader=_Loader) if yaml_file else json.loads(text)
    except (yaml.YAMLError, ValueError):
        return None


def updated_text(text: str, suffix: str, result: RefreshResult) -> str:
    """The new text of a reference file: ``text`` with only the changed outputs rewritten."""
    if not result.changes:
        return text
    if suffix.lower() not in YAML_SUFFIXES:
        return _json_text(text, result.data)
    new = _splice_yaml(text, result)
    if new is None or _loads(new, True) != result.data:
        new = _roundtrip_yaml(text, result)
        if _loads(new, True) != result.data:
            raise QaEvalError(
                "cannot write the new outputs into this YAML file without changing other values; "
                "write the refreshed dataset to a new file with -o"
            )
    return new


class _LiteralBlockDumper(yaml.SafeDumper):
    """The safe dumper, with multi-line strings (queries) written as ``|`` literal blocks."""


def _represent_str(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    style = "|" if "\n" in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_LiteralBlockDumper.add_representer(str, _represent_str)


def write_reference(path: str | os.PathLike[str], data: Any) -> None:
    """Write reference data afresh by extension; YAML keeps multi-line strings as literal blocks
    (``refresh_reference_file`` uses it only to convert between YAML and JSON)."""
    file = Path(path)
    if file.suffix.lower() not in YAML_SUFFIXES:
        write_data(file, data)
        return
    check_output_path(file)
    text = yaml.dump(
        data, Dumper=_LiteralBlockDumper, sort_keys=False, allow_unicode=True, width=100
    )
    file.write_text(text, encoding="utf-8")


def _kind(path: Path) -> str:
    suffix = path.suffix.lower()
    return "yaml" if suffix in YAML_SUFFIXES else "json" if suffix in JSON_SUFFIXES else suffix


def _write_atomically(path: Path, data: bytes) -> None:
    """Replace the file in one step (a crash leaves the old file), keeping its permissions."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        if path.exists():
            os.chmod(temporary, path.stat().st_mode & 0o7777)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (b.exists() and os.path.samefile(a, b))
    except OSError:
        return False


def refresh_reference_file(
    reference_path: str | os.PathLike[str],
    *,
    store: str | os.PathLike[str] | None = None,
    endpoint: str | None = None,
    output: str | os.PathLike[str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    headers: Mapping[str, str] | Iterable[str] | None = None,
    default_graph_uris: Sequence[str] = (),
    auth: tuple[str, str] | None = None,
    force: bool = False,
    max_changes: int | str = DEFAULT_MAX_CHANGES,
) -> RefreshResult:
    """Refresh a reference file against an RDF file or an endpoint; write it to ``output``.

    Only the changed outputs are rewritten; an unchanged file is not written (to another
    ``output`` it is copied as it is). A refresh with ``safety_issues`` raises
    ``RefreshRefused`` and writes nothing, unless ``force``."""
    if (store is None) == (endpoint is None):
        raise ValueError("give exactly one of store (an RDF file) or endpoint (a URL)")
    if store is not None and headers:
        raise InputError("headers apply to a SPARQL endpoint, not to an RDF file")
    change_limit(max_changes, 0)  # a bad value fails before any query runs
    if output is not None:
        check_output_path(output)
    source = Path(reference_path)
    data = read_data(source)
    raw = source.read_bytes()
    bom = raw.startswith(b"\xef\xbb\xbf")
    runner = (
        store_runner(store, default_graph_uris)
        if store is not None
        else endpoint_runner(
            endpoint or "",
            timeout,
            headers=headers,
            default_graph_uris=default_graph_uris,
            auth=auth,
        )
    )
    result = refresh_reference(data, runner, source=str(reference_path))
    result = dataclasses.replace(result, issues=safety_issues(result, max_changes))
    if output is None:
        return result
    if result.issues and not force:
        raise RefreshRefused(
            f"{source}: not written: {'; '.join(result.issues)}; check the graph or endpoint, "
            "review the changes with --dry-run, and pass --force to write them",
            result,
        )
    target = Path(output)
    if _kind(target) != _kind(source):
        write_reference(target, result.data)
        return dataclasses.replace(result, written=str(target))
    if not result.changes and _same_file(source, target):
        return result
    text = raw.decode("utf-8-sig")
    new = updated_text(text, source.suffix, result).encode("utf-8")
    _write_atomically(target, (b"\xef\xbb\xbf" if bom else b"") + new)
    return dataclasses.replace(result, written=str(target))
