"""The query runners of a refresh (``refresh.reference``): a SPARQL query run against an RDF file
loaded into an embedded pyoxigraph store (:func:`store_runner`) or a SPARQL 1.1 protocol endpoint
over HTTP (:func:`endpoint_runner`: headers, basic auth, ``default-graph-uri``, no redirects), each
returning the SPARQL JSON result of one query or raising :class:`SparqlRunError`. Header values and
passwords never appear in a message: they are replaced by ``***`` even where a server echoes them.
"""

from __future__ import annotations

import base64
import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from ..extras import require
from ..steps.kinds import SPARQL_JSON
from ..steps.sparql.terms import parse_sparql_json

if TYPE_CHECKING:
    import pyoxigraph

__all__ = [
    "DEFAULT_TIMEOUT",
    "ENV_PASSWORD",
    "ENV_USER",
    "QueryRunner",
    "SparqlRunError",
    "endpoint_runner",
    "load_store",
    "parse_header",
    "store_runner",
]


XSD = "http://www.w3.org/2001/XMLSchema#"
XSD_STRING = XSD + "string"
RDF_LANG_STRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"
DEFAULT_TIMEOUT = 30.0
"""Seconds to wait for an HTTP SPARQL endpoint to answer one query."""


ENV_USER = "QA_EVAL_SPARQL_USER"
ENV_PASSWORD = "QA_EVAL_SPARQL_PASSWORD"
"""Environment variables with the user name and password of an endpoint's HTTP basic auth."""


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


def _pyoxigraph() -> Any:
    return require("pyoxigraph", "refreshing from an RDF file")


def load_store(graph_path: str | os.PathLike[str], *, lenient: bool = False) -> pyoxigraph.Store:
    """Load an RDF file (``.gz`` compressed too) into a new in-memory pyoxigraph store, format
    from the extension; ``lenient`` lets IRIs and language tags that break the syntax rules
    through (a truncated or unparsable file is refused either way)."""
    ox = _pyoxigraph()
    path = Path(graph_path)
    compressed = path.suffix.lower() == ".gz"
    suffix = Path(path.stem).suffix if compressed else path.suffix
    format_name = _RDF_FORMATS.get(suffix.lower())
    if format_name is None:
        known = ", ".join(sorted(_RDF_FORMATS))
        raise InputError(
            f"unknown RDF format {suffix or '(no extension)'!r}: use one of {known} "
            "(optionally .gz)",
            source=str(path),
        )
    if not path.is_file():
        raise InputError("no such file" if not path.exists() else "not a file", source=str(path))
    store = ox.Store()
    rdf_format = getattr(ox.RdfFormat, format_name)
    try:
        if compressed:
            import gzip

            with gzip.open(path, "rb") as data:
                store.load(data, format=rdf_format, lenient=lenient)
        else:
            store.load(path=str(path), format=rdf_format, lenient=lenient)
    except SyntaxError as e:
        raise InputError(f"RDF does not parse: {e.msg or e}", source=str(path)) from None
    except (OSError, ValueError, EOFError) as e:
        raise InputError(f"cannot load RDF: {e}", source=str(path)) from None
    return store


def _term_json(term: Any, ox: Any) -> dict[str, Any]:
    """SPARQL JSON of one pyoxigraph term (``ox``: the pyoxigraph module, passed in: looking
    it up per term took a sixth of a generation's time)."""
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
                "subject": _term_json(term.subject, ox),
                "predicate": _term_json(term.predicate, ox),
                "object": _term_json(term.object, ox),
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
                    name: _term_json(value, ox)
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
    url, url_auth, url_secrets = _url_credentials(url, parts)
    basic, credentials = _credentials(extra, auth, url_auth, env)
    request_headers, auth_secrets = _request_headers(extra, basic)
    redact = _redactor([*(value for _, value in extra), *url_secrets, *auth_secrets])
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
        body = _post(opener, request, url, timeout, credentials, fail)
        try:
            return parse_sparql_json(json.loads(body.decode("utf-8-sig")))
        except (UnicodeDecodeError, ValueError) as e:  # JSONDecodeError, SparqlResultError
            raise fail(f"SPARQL endpoint {url} did not return SPARQL JSON results ({e})") from None

    return run


def _url_credentials(
    url: str, parts: urllib.parse.SplitResult
) -> tuple[str, tuple[str, str] | None, list[str]]:
    """(the URL without ``user:password@``, that user and password, the forms of them a
    message must not show)."""
    if parts.username is None and parts.password is None:
        return url, None, []
    url_auth = (
        urllib.parse.unquote(parts.username or ""),
        urllib.parse.unquote(parts.password or ""),
    )
    return _without_userinfo(url), url_auth, [parts.username or "", parts.password or "", *url_auth]


def _credentials(
    extra: list[tuple[str, str]],
    auth: tuple[str, str] | None,
    url_auth: tuple[str, str] | None,
    env: Mapping[str, str],
) -> tuple[tuple[str, str] | None, str]:
    """(the user and password of HTTP basic auth, or ``None``; the credentials sent, as a 401
    message names them), first of: an ``Authorization`` header, ``auth``, the URL's user, the
    environment."""
    if any(name.lower() == "authorization" for name, _ in extra):
        return None, "the Authorization header given"
    if auth is not None or url_auth is not None:
        basic = auth or url_auth or ("", "")
        return basic, "basic auth (auth argument)" if auth else "basic auth (user in the URL)"
    if env.get(ENV_USER) is not None or env.get(ENV_PASSWORD) is not None:
        env_user, env_password = env.get(ENV_USER), env.get(ENV_PASSWORD)
        if env_user is None or env_password is None:
            missing = ENV_USER if env_user is None else ENV_PASSWORD
            raise InputError(
                f"{missing} is not set: basic auth needs both {ENV_USER} and {ENV_PASSWORD}"
            )
        return (env_user, env_password), f"basic auth ({ENV_USER}, {ENV_PASSWORD})"
    return None, "none"


def _request_headers(
    extra: list[tuple[str, str]], basic: tuple[str, str] | None
) -> tuple[dict[str, str], list[str]]:
    """(the headers of every request, the secrets basic auth adds to them): the given headers
    replace qa-eval's of the same name, whatever its case."""
    request_headers = {
        "Accept": SPARQL_JSON,
        "Content-Type": "application/x-www-form-urlencoded; charset=utf-8",
    }
    secrets: list[str] = []
    if basic is not None:
        user, password = basic
        token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
        request_headers["Authorization"] = f"Basic {token}"
        secrets = [password, token]
    for name, value in extra:
        for known in list(request_headers):
            if known.lower() == name.lower():
                del request_headers[known]
        request_headers[name] = value
    return request_headers, secrets


def _post(
    opener: urllib.request.OpenerDirector,
    request: urllib.request.Request,
    url: str,
    timeout: float,
    credentials: str,
    fail: Callable[[str], SparqlRunError],
) -> bytes:
    """The body of the endpoint's answer to a request; every failure (HTTP error, redirect,
    timeout, connection) raised as ``fail`` of its one-line message naming ``url``."""
    try:
        with opener.open(request, timeout=timeout) as response:
            body: bytes = response.read()
            return body
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


def _without_userinfo(url: str) -> str:
    """The URL without ``user:password@``."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return "(an invalid URL)"
    if "@" not in parts.netloc:
        return url
    return urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
