"""Refreshing reference SPARQL outputs (qa_eval.refresh) and the power-grid demo dataset."""

from __future__ import annotations

import base64
import copy
import difflib
import json
import os
import shutil
import socket
import threading
import time
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

pyoxigraph = pytest.importorskip("pyoxigraph")

from qa_eval import InputError, run_evaluation  # noqa: E402
from qa_eval.cli import main  # noqa: E402
from qa_eval.io.files import read_data  # noqa: E402
from qa_eval.refresh import writer as refresh_writer  # noqa: E402
from qa_eval.refresh.changes import sparql_json_text  # noqa: E402
from qa_eval.refresh.reference import (  # noqa: E402
    RefreshRefused,
    change_limit,
    refresh_reference,
    refresh_reference_file,
    safety_issues,
)
from qa_eval.refresh.runners import endpoint_runner, load_store, parse_header, store_runner  # noqa: E402
from qa_eval.refresh.writer import updated_text  # noqa: E402

DEMO = Path(__file__).resolve().parents[2] / "examples" / "powergrid"
GRAPH = DEMO / "graph.ttl"
REFERENCE = DEMO / "reference.yaml"

EXTRA_SUBSTATION = """
r:sub-DRAMMEN a g:Substation ; rdfs:label "DRAMMEN" ;
    g:region r:region-NO1 ; g:operator r:op-nordnett ; g:voltageLevelKV 300 .
r:tr-DRAMMEN-T1 a g:Transformer ; rdfs:label "DRAMMEN T1" ; g:substation r:sub-DRAMMEN ;
    g:ratedMVA "500.0"^^xsd:decimal ; g:commissioned "2021"^^xsd:gYear .
r:line-DRAMMEN-KVILLDAL a g:Line ; rdfs:label "LN 300 DRAMMEN-KVILLDAL" ;
    g:fromSubstation r:sub-DRAMMEN ; g:toSubstation r:sub-KVILLDAL ;
    g:voltageKV 300 ; g:lengthKm "301.5"^^xsd:double ; g:operator r:op-nordnett .
"""


def _step(data: list[Any], question_id: str, group: int = 0, index: int = 0) -> dict[str, Any]:
    for template in data:
        for question in template["questions"]:
            if question["id"] == question_id:
                step: dict[str, Any] = question["reference_steps"][group][index]
                return step
    raise KeyError(question_id)


# --- Embedded store --------------------------------------------------------------------------


def test_refresh_from_graph_file_reproduces_committed_outputs(tmp_path: Path) -> None:
    out = tmp_path / "refreshed.yaml"
    result = refresh_reference_file(REFERENCE, store=GRAPH, output=out)
    assert result.changes == []
    assert result.steps_run == 11
    assert result.data == read_data(REFERENCE)
    assert out.read_text(encoding="utf-8") == REFERENCE.read_text(encoding="utf-8")


def test_refresh_does_not_mutate_the_callers_data() -> None:
    data = read_data(REFERENCE)
    for template in data:
        for question in template["questions"]:
            for group in question["reference_steps"]:
                for step in group:
                    if step["name"] == "sparql_query":
                        step["output"] = '{"head": {"vars": []}, "results": {"bindings": []}}'
    before = copy.deepcopy(data)
    result = refresh_reference(data, store_runner(GRAPH), source=str(REFERENCE))
    assert data == before
    assert len(result.changes) == 11
    assert result.data == read_data(REFERENCE)


def test_modified_graph_reports_the_changed_questions(tmp_path: Path) -> None:
    graph = tmp_path / "grid.ttl"
    graph.write_text(GRAPH.read_text(encoding="utf-8") + EXTRA_SUBSTATION, encoding="utf-8")
    out = tmp_path / "refreshed.yaml"
    result = refresh_reference_file(REFERENCE, store=graph, output=out)
    changed = {(c.template_id, c.question_id, c.step) for c in result.changes}
    assert changed == {
        ("transformer_capacity_in_region_REGION", "capacity-no1", "reference_steps[0][0]"),
        ("longest_lines_of_operator_OPERATOR", "longest-lines-nordnett", "reference_steps[0][0]"),
    }
    by_question = {c.question_id: c for c in result.changes}
    capacity = by_question["capacity-no1"]
    assert (capacity.old, capacity.new) == ("1 row [transformers, totalMVA]",) * 2
    assert (capacity.added, capacity.removed) == (1, 1)
    assert "capacity-no1" in str(capacity) and "+1 added, -1 removed" in str(capacity)
    lines = by_question["longest-lines-nordnett"]
    assert (lines.added, lines.removed) == (1, 1)  # the new line enters the top 3, one drops out

    new_output = json.loads(_step(result.data, "capacity-no1")["output"])
    assert new_output["results"]["bindings"][0]["transformers"]["value"] == "7"
    assert new_output["results"]["bindings"][0]["totalMVA"]["value"] == "4300.75"
    top = json.loads(_step(result.data, "longest-lines-nordnett")["output"])
    assert [b["name"]["value"] for b in top["results"]["bindings"]] == [
        "LN 300 DRAMMEN-KVILLDAL",
        "LN 420 OSLO-KVILLDAL",
        "LN 300 ASKER-SKIEN",
    ]
    # Only the changed outputs differ; the refreshed file refreshes to itself.
    original = read_data(REFERENCE)
    assert _step(result.data, "capacity-no2") == _step(original, "capacity-no2")
    assert refresh_reference_file(out, store=graph).changes == []


def test_dataset_formats_query_the_union_of_graphs(tmp_path: Path) -> None:
    store = pyoxigraph.Store()
    store.load(path=str(GRAPH), to_graph=pyoxigraph.NamedNode("https://example.org/grid/g1"))
    nquads = tmp_path / "grid.nq"
    store.dump(str(nquads), pyoxigraph.RdfFormat.N_QUADS)
    assert refresh_reference_file(REFERENCE, store=nquads).changes == []


def test_unknown_graph_format_is_a_clear_error(tmp_path: Path) -> None:
    graph = tmp_path / "grid.csv"
    graph.write_text("a,b\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"grid\.csv: unknown RDF format '\.csv'"):
        refresh_reference_file(REFERENCE, store=graph)


def test_graph_that_does_not_parse_is_a_clear_error(tmp_path: Path) -> None:
    graph = tmp_path / "grid.ttl"
    graph.write_text("@prefix g: <https://example.org/grid#> .\ng:a g:b .\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"grid\.ttl: RDF does not parse"):
        load_store(graph)


def test_query_error_names_the_question(tmp_path: Path) -> None:
    data = read_data(REFERENCE)
    _step(data, "longest-lines-vestkraft")["args"]["query"] = "SELECT ?x WHERE { ?x ?y }"
    with pytest.raises(InputError) as caught:
        refresh_reference(data, store_runner(GRAPH), source="demo.yaml")
    message = str(caught.value)
    assert message.startswith(
        "demo.yaml: template 'longest_lines_of_operator_OPERATOR' "
        "question 'longest-lines-vestkraft': reference_steps[0][0].args.query: "
        "the query does not parse"
    )
    assert "\n" not in message


def test_construct_queries_are_refused() -> None:
    data = read_data(REFERENCE)
    _step(data, "capacity-no5")["args"]["query"] = "CONSTRUCT WHERE { ?s ?p ?o }"
    with pytest.raises(InputError, match=r"capacity-no5.*only SELECT and ASK"):
        refresh_reference(data, store_runner(GRAPH))


def test_serialisation_is_stable() -> None:
    result = {
        "head": {"vars": ["b", "a"]},
        "results": {
            "bindings": [
                {"a": {"value": "2", "type": "literal"}, "b": {"type": "uri", "value": "x:2"}},
                {
                    "b": {"type": "uri", "value": "x:1"},
                    "a": {
                        "type": "typed-literal",
                        "value": "1",
                        "datatype": "http://www.w3.org/2001/XMLSchema#string",
                    },
                },
            ]
        },
    }
    assert sparql_json_text(result) == (
        '{"head": {"vars": ["b", "a"]}, "results": {"bindings": ['
        '{"b": {"type": "uri", "value": "x:1"}, "a": {"type": "literal", "value": "1"}}, '
        '{"b": {"type": "uri", "value": "x:2"}, "a": {"type": "literal", "value": "2"}}]}}'
    )
    ordered = json.loads(sparql_json_text(result, ordered=True))
    assert [b["b"]["value"] for b in ordered["results"]["bindings"]] == ["x:2", "x:1"]
    assert sparql_json_text({"boolean": True}) == '{"head": {}, "boolean": true}'


# --- HTTP endpoint ---------------------------------------------------------------------------


class _Endpoint:
    """A SPARQL 1.1 protocol endpoint over a pyoxigraph store. With ``auth`` it answers 401
    (echoing the Authorization header it got, as some servers do) unless that exact header
    comes; with ``redirect`` it answers 302 to that URL."""

    def __init__(
        self,
        store: Any,
        delay: float = 0.0,
        auth: str | None = None,
        redirect: str | None = None,
    ) -> None:
        self.store = store
        self.delay = delay
        self.auth = auth
        self.redirect = redirect
        self.requests: list[dict[str, Any]] = []


def _handler(endpoint: _Endpoint) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            form = urllib.parse.parse_qs(self.rfile.read(length).decode("utf-8"))
            query_string = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
            graphs = form.get("default-graph-uri", []) + query_string.get("default-graph-uri", [])
            endpoint.requests.append(
                {
                    "accept": self.headers.get("Accept", ""),
                    "content_type": self.headers.get("Content-Type", ""),
                    "path": self.path,
                    "authorization": self.headers.get("Authorization"),
                    "headers": {k.lower(): v for k, v in self.headers.items()},
                    "default_graph_uris": graphs,
                }
            )
            if endpoint.redirect:
                self.send_response(302)
                self.send_header("Location", endpoint.redirect)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if endpoint.auth is not None and self.headers.get("Authorization") != endpoint.auth:
                got = self.headers.get("Authorization")
                self._send(401, "text/plain", f"Unauthorized: got Authorization {got}".encode())
                return
            if endpoint.delay:
                time.sleep(endpoint.delay)
            options = {"default_graph": [pyoxigraph.NamedNode(g) for g in graphs]} if graphs else {}
            try:
                results = endpoint.store.query(form["query"][0], **options)
            except SyntaxError as e:
                self._send(400, "text/plain", f"Parse error: {e}\nmore details".encode())
                return
            body = results.serialize(format=pyoxigraph.QueryResultsFormat.JSON)
            self._send(200, "application/sparql-results+json", body)

        def _send(self, status: int, content_type: str, body: bytes) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (the timeout test)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


def _serve(endpoint: _Endpoint) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(endpoint))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/sparql"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture
def endpoint() -> _Endpoint:
    return _Endpoint(load_store(GRAPH))


@pytest.fixture
def endpoint_url(endpoint: _Endpoint) -> Iterator[str]:
    yield from _serve(endpoint)


def test_endpoint_refresh_reproduces_committed_outputs(
    endpoint: _Endpoint, endpoint_url: str
) -> None:
    result = refresh_reference_file(REFERENCE, endpoint=endpoint_url)
    assert result.changes == []
    assert result.steps_run == 11
    assert result.data == read_data(REFERENCE)
    assert len(endpoint.requests) == 11
    assert endpoint.requests[0]["accept"] == "application/sparql-results+json"
    assert endpoint.requests[0]["content_type"].startswith("application/x-www-form-urlencoded")
    assert endpoint.requests[0]["path"] == "/sparql"


def test_endpoint_reports_changes(endpoint: _Endpoint, endpoint_url: str) -> None:
    endpoint.store.load(
        input=GRAPH.read_text(encoding="utf-8").split("# --- Schema")[0] + EXTRA_SUBSTATION,
        format=pyoxigraph.RdfFormat.TURTLE,
    )
    result = refresh_reference_file(REFERENCE, endpoint=endpoint_url)
    assert {c.question_id for c in result.changes} == {"capacity-no1", "longest-lines-nordnett"}


def test_endpoint_query_error_names_the_question(endpoint_url: str) -> None:
    data = read_data(REFERENCE)
    _step(data, "connected-sima-aurland")["args"]["query"] = "ASK { ?s ?p }"
    with pytest.raises(InputError) as caught:
        refresh_reference(data, endpoint_runner(endpoint_url), source="demo.yaml")
    message = str(caught.value)
    assert message.startswith(
        "demo.yaml: template 'substations_directly_connected_SUBSTATION1_SUBSTATION2' "
        "question 'connected-sima-aurland': reference_steps[0][0].args.query: "
        f"SPARQL endpoint {endpoint_url} answered HTTP 400"
    )
    assert "Parse error" in message
    assert "\n" not in message


def test_endpoint_down_is_a_clear_error() -> None:
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/sparql"
    with pytest.raises(InputError) as caught:
        refresh_reference_file(REFERENCE, endpoint=url, timeout=5)
    message = str(caught.value)
    assert f"cannot reach SPARQL endpoint {url}" in message
    assert "question 'transformers-oslo'" in message
    assert "\n" not in message


def test_endpoint_timeout_is_a_clear_error() -> None:
    slow = _Endpoint(load_store(GRAPH), delay=1.0)
    for url in _serve(slow):
        with pytest.raises(InputError, match=r"did not answer within 0\.2 s"):
            refresh_reference_file(REFERENCE, endpoint=url, timeout=0.2)


def test_endpoint_must_be_http() -> None:
    with pytest.raises(InputError, match="http:// or https://"):
        endpoint_runner("file:///etc/passwd")


def test_exactly_one_source() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        refresh_reference_file(REFERENCE)
    with pytest.raises(ValueError, match="exactly one"):
        refresh_reference_file(REFERENCE, store=GRAPH, endpoint="http://127.0.0.1:1/")


# --- The demo systems ------------------------------------------------------------------------

GOOD_SCORES = {
    "transformers-oslo": 1.0,
    "transformers-bergen": 1.0,
    "transformers-kristiansand": 1.0,  # a failed step, then a successful retry
    "connected-oslo-halden": 1.0,
    "connected-bergen-stavanger": 1.0,
    "connected-sima-aurland": 1.0,
    "longest-lines-nordnett": 1.0,
    "longest-lines-vestkraft": 1.0,
    "capacity-no1": 1.0,
    "capacity-no2": 1.0,
    "capacity-no5": 1.0,  # the sum as xsd:double equals the reference's xsd:decimal
}

FLAWED_SCORES = {
    "transformers-oslo": 0.0,  # a row missing: the last group fails, so matching stops there
    "transformers-bergen": 0.75,  # retrieval recall@2 = 0.5, SPARQL right: (0.5 + 1) / 2
    "transformers-kristiansand": 0.0,  # an error response
    "connected-oslo-halden": 0.0,  # its only SPARQL step failed (status error)
    "connected-bergen-stavanger": 1.0,
    "connected-sima-aurland": 0.0,  # one direction only: ASK false instead of true
    "longest-lines-nordnett": 0.0,  # the right lines in the wrong order (ordered: true)
    "longest-lines-vestkraft": 1.0,
    "capacity-no1": 0.0,  # the totalMVA column is missing
    "capacity-no2": 1.0,
    "capacity-no5": 0.0,  # no steps at all: a hallucinated answer
}


@pytest.mark.parametrize(
    ("responses", "expected"),
    [("responses-good.jsonl", GOOD_SCORES), ("responses-flawed.jsonl", FLAWED_SCORES)],
)
def test_demo_systems_step_scores(responses: str, expected: dict[str, float]) -> None:
    results = run_evaluation(read_data(REFERENCE), read_data(DEMO / responses))
    scores = {r["question_id"]: r["steps_score"] for r in results}
    assert scores == pytest.approx(expected)
    statuses = {r["question_id"]: r["status"] for r in results}
    errors = {q for q, status in statuses.items() if status == "error"}
    assert errors == (set() if "good" in responses else {"transformers-kristiansand"})
    assert all("step_errors" not in r for r in results)


# --- Writing the file back: nothing but the changed outputs ----------------------------------

PREFIXES = (
    "PREFIX g: <https://example.org/grid#> PREFIX r: <https://example.org/grid/resource/> "
    "PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>"
)
OSLO_QUERY = (
    f"{PREFIXES} SELECT ?transformer ?name WHERE "
    "{ ?transformer g:substation r:sub-OSLO ; rdfs:label ?name }"
)
BERGEN_QUERY = (
    f"{PREFIXES} SELECT ?transformer ?name WHERE "
    "{ ?transformer g:substation r:sub-BERGEN ; rdfs:label ?name }"
)
HALDEN_QUERY = f"{PREFIXES} ASK {{ r:line-OSLO-HALDEN g:toSubstation r:sub-HALDEN }}"


def _current(query: str, graph: Path = GRAPH) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(sparql_json_text(store_runner(graph)(query)))
    return result


def _gold_yaml(oslo_output: list[str], halden_output: list[str]) -> str:
    """A hand-written reference: comments, 4-space indentation, an indented-JSON literal block,
    a one-line quoted output and a step without an output."""
    bergen = json.dumps(_current(BERGEN_QUERY)).replace("'", "''")
    lines = [
        "# Gold reference of the grid assistant: reviewed by hand, keep the comments.",
        "-   template_id: transformers  # one template",
        "    questions:",
        "    -   id: oslo",
        "        question_text: Which transformers are at OSLO?",
        "        reference_steps:",
        "        -   -   name: sparql_query  # the query of record",
        "                args:",
        f"                    query: '{OSLO_QUERY}'",
        *oslo_output,
        "                output_media_type: application/sparql-results+json",
        "",
        "    # BERGEN is up to date",
        "    -   id: bergen",
        "        reference_steps:",
        "        -   -   name: sparql_query",
        "                args: {query: '" + BERGEN_QUERY + "'}",
        f"                output: '{bergen}'   # checked 2024-05-01",
        "    -   id: halden",
        "        reference_steps:",
        "        -   -   name: sparql_query",
        "                args:",
        f"                    query: '{HALDEN_QUERY}'",
        "                required_columns: []",
        *halden_output,
        "# end of file",
        "",
    ]
    return "\n".join(lines)


def _literal(value: dict[str, Any], indent: int = 20) -> list[str]:
    return ["                output: |-"] + [
        " " * indent + line for line in json.dumps(value, indent=4).split("\n")
    ]


def _stale_oslo() -> dict[str, Any]:
    stale = _current(OSLO_QUERY)
    stale["results"]["bindings"] = stale["results"]["bindings"][:1]  # OSLO T2 and T3 missing
    return stale


def _halden_line() -> list[str]:
    return ["                output: '" + json.dumps(_current(HALDEN_QUERY)) + "'"]


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_a_current_file_is_not_written(tmp_path: Path, newline: str) -> None:
    reference = tmp_path / "gold.yaml"
    text = _gold_yaml(_literal(_current(OSLO_QUERY)), _halden_line()).replace("\n", newline)
    reference.write_bytes(text.encode("utf-8"))
    os.utime(reference, ns=(1_000_000_000, 1_000_000_000))
    result = refresh_reference_file(reference, store=GRAPH, output=reference)
    assert (result.changes, result.steps_run, result.written) == ([], 3, None)
    assert reference.read_bytes() == text.encode("utf-8")
    assert reference.stat().st_mtime_ns == 1_000_000_000  # not even rewritten with the same bytes
    copy_to = tmp_path / "copy.yaml"  # another output: a copy, byte for byte
    assert refresh_reference_file(reference, store=GRAPH, output=copy_to).written == str(copy_to)
    assert copy_to.read_bytes() == text.encode("utf-8")


def test_only_the_changed_outputs_are_rewritten(tmp_path: Path) -> None:
    reference = tmp_path / "gold.yaml"
    reference.write_text(_gold_yaml(_literal(_stale_oslo()), []), encoding="utf-8")
    result = refresh_reference_file(reference, store=GRAPH, output=reference)
    assert [(c.question_id, c.kind) for c in result.changes] == [
        ("oslo", "changed"),
        ("halden", "filled"),
    ]
    oslo = result.changes[0]
    assert (oslo.added, oslo.removed, oslo.emptied) == (2, 0, False)
    assert result.written == str(reference)
    expected = _gold_yaml(
        _literal(_current(OSLO_QUERY)),  # indented JSON stays indented JSON, 4 spaces
        _halden_line(),
    )
    assert reference.read_text(encoding="utf-8") == expected
    assert read_data(reference) == result.data
    assert refresh_reference_file(reference, store=GRAPH, output=reference).changes == []


def _replaced_lines(old: str, new: str) -> set[int]:
    """Numbers (0-based) of the lines of ``old`` that ``new`` replaces or deletes."""
    matcher = difflib.SequenceMatcher(None, old.splitlines(), new.splitlines(), autojunk=False)
    return {
        line
        for tag, i1, i2, _, _ in matcher.get_opcodes()
        if tag != "equal"
        for line in range(i1, max(i2, i1 + 1))
    }


def _output_lines(text: str, question_ids: set[str]) -> set[int]:
    """The lines of the output values of the named questions' steps (and the line after)."""
    lines: set[int] = set()
    for template in yaml.compose(text).value:
        questions = dict((k.value, v) for k, v in template.value)["questions"]
        for question in questions.value:
            fields = dict((k.value, v) for k, v in question.value)
            if fields["id"].value not in question_ids:
                continue
            for group in fields["reference_steps"].value:
                for step in group.value:
                    value = dict((k.value, v) for k, v in step.value)["output"]
                    lines.update(range(value.start_mark.line, value.end_mark.line + 2))
    return lines


@pytest.mark.parametrize("indent", [2, 4])
def test_a_reindented_demo_changes_only_in_its_changed_outputs(tmp_path: Path, indent: int) -> None:
    reference = tmp_path / "reference.yaml"
    text = yaml.dump(read_data(REFERENCE), indent=indent, sort_keys=False, width=90)
    text = "# the power-grid gold file\n" + text.replace("\n-", "\n# --\n-")
    reference.write_text(text, encoding="utf-8")
    assert refresh_reference_file(reference, store=GRAPH, output=reference).written is None
    assert reference.read_text(encoding="utf-8") == text

    graph = tmp_path / "grid.ttl"
    graph.write_text(GRAPH.read_text(encoding="utf-8") + EXTRA_SUBSTATION, encoding="utf-8")
    result = refresh_reference_file(reference, store=graph, output=reference)
    changed = {c.question_id for c in result.changes}
    assert changed == {"capacity-no1", "longest-lines-nordnett"}
    new = reference.read_text(encoding="utf-8")
    assert read_data(reference) == result.data
    replaced = _replaced_lines(text, new)
    assert replaced and replaced <= _output_lines(text, changed)
    assert new.count("\n# --\n") == text.count("\n# --\n") == 3
    assert new.startswith("# the power-grid gold file\n")


def test_crlf_and_byte_order_mark_are_kept(tmp_path: Path) -> None:
    reference = tmp_path / "gold.yaml"
    text = _gold_yaml(_literal(_stale_oslo()), _halden_line()).replace("\n", "\r\n")
    reference.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    result = refresh_reference_file(reference, store=GRAPH, output=reference)
    assert [c.question_id for c in result.changes] == ["oslo"]
    raw = reference.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")
    assert raw.count(b"\n") == raw.count(b"\r\n")
    expected = _gold_yaml(_literal(_current(OSLO_QUERY)), _halden_line()).replace("\n", "\r\n")
    assert raw[3:].decode("utf-8") == expected


def test_json_reference_keeps_its_indentation(tmp_path: Path) -> None:
    data = read_data(REFERENCE)
    reference = tmp_path / "reference.json"
    text = json.dumps(data, indent=4, ensure_ascii=False) + "\n"
    reference.write_text(text, encoding="utf-8")
    os.utime(reference, ns=(1_000_000_000, 1_000_000_000))
    assert refresh_reference_file(reference, store=GRAPH, output=reference).written is None
    assert reference.stat().st_mtime_ns == 1_000_000_000

    graph = tmp_path / "grid.ttl"
    graph.write_text(GRAPH.read_text(encoding="utf-8") + EXTRA_SUBSTATION, encoding="utf-8")
    result = refresh_reference_file(reference, store=graph, output=reference)
    assert len(result.changes) == 2
    new = reference.read_text(encoding="utf-8")
    assert new == json.dumps(result.data, indent=4, ensure_ascii=False) + "\n"
    assert len(_replaced_lines(text, new)) == 2  # the two output lines, nothing else


def test_output_as_a_mapping_stays_a_mapping(tmp_path: Path) -> None:
    reference = tmp_path / "gold.yaml"
    stale = yaml.safe_dump(_stale_oslo(), indent=2, sort_keys=False)
    block = "\n".join("                    " + line for line in stale.splitlines())
    text = _gold_yaml(["                output:", block], _halden_line())
    reference.write_text(text, encoding="utf-8")
    assert isinstance(
        read_data(reference)[0]["questions"][0]["reference_steps"][0][0]["output"], dict
    )
    result = refresh_reference_file(reference, store=GRAPH, output=reference)
    assert [c.question_id for c in result.changes] == ["oslo"]
    data = read_data(reference)
    assert data[0]["questions"][0]["reference_steps"][0][0]["output"] == _current(OSLO_QUERY)
    assert data == result.data
    new = reference.read_text(encoding="utf-8")
    assert _replaced_lines(text, new) <= _output_lines(text, {"oslo"})


@pytest.mark.parametrize(
    "oslo_output",
    [
        # an anchor on the value: replaced in place it would change what an alias means
        ['                output: &old \'{"head": {"vars": []}, "results": {"bindings": []}}\''],
        # an explicit indentation indicator on a block scalar
        [
            "                output: |4-",
            '                        {"head": {"vars": []},',
            '                         "results": {"bindings": []}}',
        ],
    ],
)
def test_values_that_cannot_be_replaced_in_place_go_through_ruamel(
    tmp_path: Path, oslo_output: list[str]
) -> None:
    pytest.importorskip("ruamel.yaml")
    reference = tmp_path / "gold.yaml"
    text = _gold_yaml(oslo_output, _halden_line())
    reference.write_text(text, encoding="utf-8")
    result = refresh_reference_file(reference, store=GRAPH, output=reference, force=True)
    assert [c.question_id for c in result.changes] == ["oslo"]
    new = reference.read_text(encoding="utf-8")
    assert read_data(reference) == result.data
    for comment in (
        "# Gold reference",
        "# one template",
        "# the query of record",
        "# BERGEN is up to date",
        "# checked 2024-05-01",
        "# end of file",
    ):
        assert comment in new


def test_flow_style_step_without_output_is_filled(tmp_path: Path) -> None:
    pytest.importorskip("ruamel.yaml")
    reference = tmp_path / "gold.yaml"
    text = (
        "# flow style\n- template_id: t\n  questions:\n  - id: q\n    reference_steps:\n"
        f"    - [{{name: sparql_query, args: {{query: '{HALDEN_QUERY}'}}}}]  # one step\n"
    )
    reference.write_text(text, encoding="utf-8")
    result = refresh_reference_file(reference, store=GRAPH, output=reference)
    assert [c.kind for c in result.changes] == ["filled"]
    assert read_data(reference) == result.data
    assert "# flow style" in reference.read_text(encoding="utf-8")


# --- Refusing a refresh that looks wrong -----------------------------------------------------

EMPTY_GRAPH = "@prefix g: <https://example.org/grid#> .\ng:something g:else g:entirely .\n"


def test_the_wrong_graph_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    reference = tmp_path / "reference.yaml"
    shutil.copy(REFERENCE, reference)
    graph = tmp_path / "other.ttl"
    graph.write_text(EMPTY_GRAPH, encoding="utf-8")
    with pytest.raises(RefreshRefused) as caught:
        refresh_reference_file(reference, store=graph, output=reference)
    message = str(caught.value)
    assert "\n" not in message
    assert "5 of 11 SPARQL outputs would become empty" in message
    assert "10 of 11 SPARQL outputs would change, more than --max-changes 50%" in message
    assert "--force" in message
    assert reference.read_bytes() == REFERENCE.read_bytes()
    refused = caught.value.result
    assert refused.written is None and len(refused.changes) == 10
    emptied = {c.question_id for c in refused.changes if c.emptied}
    assert emptied == {
        "transformers-oslo",
        "transformers-bergen",
        "transformers-kristiansand",
        "longest-lines-nordnett",
        "longest-lines-vestkraft",
    }  # the COUNT questions get a row of zero, the ASK ones false: changed, not emptied

    forced = refresh_reference_file(reference, store=graph, output=reference, force=True)
    assert forced.written == str(reference) and forced.issues == refused.issues
    assert read_data(reference) == forced.data


def test_one_emptied_output_is_enough_to_stop(tmp_path: Path) -> None:
    reference = tmp_path / "reference.yaml"
    shutil.copy(REFERENCE, reference)
    graph = tmp_path / "grid.ttl"
    graph.write_text(
        GRAPH.read_text(encoding="utf-8").replace("g:substation r:sub-BERGEN", "g:substation r:x"),
        encoding="utf-8",
    )
    with pytest.raises(
        RefreshRefused,
        match=r"1 of 11 SPARQL outputs would become empty, e\.g\. "
        r"template 'transformers_at_substation_SUBSTATION' question "
        r"'transformers-bergen' reference_steps\[1\]\[0\] \(2 rows",
    ):
        refresh_reference_file(reference, store=graph, output=reference, max_changes=11)
    assert reference.read_bytes() == REFERENCE.read_bytes()


@pytest.mark.parametrize(
    ("max_changes", "refused"),
    [(1, True), ("1", True), (2, False), ("18%", True), ("19%", False), ("100%", False)],
)
def test_max_changes(tmp_path: Path, max_changes: int | str, refused: bool) -> None:
    reference = tmp_path / "reference.yaml"
    shutil.copy(REFERENCE, reference)
    graph = tmp_path / "grid.ttl"  # two outputs change: 2 of 11 steps is 18.2%
    graph.write_text(GRAPH.read_text(encoding="utf-8") + EXTRA_SUBSTATION, encoding="utf-8")
    if refused:
        with pytest.raises(RefreshRefused, match=rf"2 of 11 .* --max-changes {max_changes} allows"):
            refresh_reference_file(
                reference, store=graph, output=reference, max_changes=max_changes
            )
        assert reference.read_bytes() == REFERENCE.read_bytes()
    else:
        result = refresh_reference_file(
            reference, store=graph, output=reference, max_changes=max_changes
        )
        assert result.written and not result.issues


@pytest.mark.parametrize("bad", [-1, "-1", "x", "150%", "%", True, "1.5"])
def test_max_changes_must_be_a_count_or_a_percentage(bad: Any) -> None:
    with pytest.raises(InputError, match=r"a count .* or a percentage"):
        refresh_reference_file(REFERENCE, store=GRAPH, max_changes=bad)


def test_filling_missing_outputs_is_not_a_change(tmp_path: Path) -> None:
    data = read_data(REFERENCE)
    for template in data:
        for question in template["questions"]:
            for group in question["reference_steps"]:
                for step in group:
                    if step["name"] == "sparql_query":
                        del step["output"]
    reference = tmp_path / "new.json"
    reference.write_text(json.dumps(data, indent=2), encoding="utf-8")
    result = refresh_reference_file(reference, store=GRAPH, output=reference)
    assert len(result.changes) == 11 and {c.kind for c in result.changes} == {"filled"}
    assert not result.issues and read_data(reference) == read_data(REFERENCE)


def test_safety_issues_of_a_plain_refresh() -> None:
    data = read_data(REFERENCE)
    result = refresh_reference(data, store_runner(GRAPH))
    assert safety_issues(result) == ()
    assert change_limit("50%", 11) == 5.5 and change_limit(3, 11) == 3.0


# --- The command -----------------------------------------------------------------------------


def test_command_dry_run_shows_the_rows_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reference = tmp_path / "reference.yaml"
    shutil.copy(REFERENCE, reference)
    graph = tmp_path / "grid.ttl"
    graph.write_text(GRAPH.read_text(encoding="utf-8") + EXTRA_SUBSTATION, encoding="utf-8")
    args = ["refresh-references", str(reference), "--store", str(graph), "--dry-run"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert reference.read_bytes() == REFERENCE.read_bytes()
    assert (
        "template 'longest_lines_of_operator_OPERATOR' question 'longest-lines-nordnett' "
        "reference_steps[0][0]: 3 rows [line, name, lengthKm] -> 3 rows [line, name, lengthKm] "
        "(+1 added, -1 removed)\n"
        "    - line=<https://example.org/grid/resource/line-OSLO-HALDEN>, "
        'name="LN 420 OSLO-HALDEN", lengthKm=118.2\n'
        "    + line=<https://example.org/grid/resource/line-DRAMMEN-KVILLDAL>, "
        'name="LN 300 DRAMMEN-KVILLDAL", lengthKm=301.5\n'
    ) in out
    assert "    + transformers=7, totalMVA=4300.75\n" in out
    assert out.endswith("11 SPARQL steps run, 2 changed; dry run, nothing written\n")

    assert main([*args, "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["written"] is None and report["refused"] is False and report["issues"] == []
    capacity = next(c for c in report["changes"] if c["question_id"] == "capacity-no1")
    assert capacity["rows_added"] == ["transformers=7, totalMVA=4300.75"]
    assert capacity["rows_removed"] == ["transformers=6, totalMVA=3800.75"]
    assert capacity["kind"] == "changed" and capacity["emptied"] is False


def test_command_refuses_the_wrong_graph_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reference = tmp_path / "reference.yaml"
    shutil.copy(REFERENCE, reference)
    graph = tmp_path / "other.ttl"
    graph.write_text(EMPTY_GRAPH, encoding="utf-8")
    args = ["refresh-references", str(reference), "--store", str(graph)]
    assert main(args) == 2
    captured = capsys.readouterr()
    assert captured.out.count("\n") == 10  # each change, then the error
    assert "[EMPTIED]" in captured.out
    err = captured.err.strip()
    assert err.startswith(f"qa-eval: error: {reference}: not written: 5 of 11")
    assert "pass --force" in err and "\n" not in err
    assert reference.read_bytes() == REFERENCE.read_bytes()

    assert main([*args, "--dry-run"]) == 0  # shows what a run would do, and that it would stop
    out = capsys.readouterr().out
    assert "without --dry-run this refresh would stop: 5 of 11" in out
    assert main([*args, "--format", "json"]) == 2
    report = json.loads(capsys.readouterr().out)
    assert report["refused"] is True and len(report["issues"]) == 2 and report["written"] is None

    assert main([*args, "--force"]) == 0
    assert f"10 changed; wrote {reference}" in capsys.readouterr().out
    assert read_data(reference) != read_data(REFERENCE)


def test_command_options_are_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["refresh-references", str(REFERENCE), "--dry-run"]
    assert main([*base, "--store", str(GRAPH), "--max-changes", "lots"]) == 2
    assert "max changes must be a count" in capsys.readouterr().err
    assert main([*base, "--store", str(GRAPH), "--header", "Authorization: Bearer s3cret"]) == 2
    err = capsys.readouterr().err
    assert "--header applies to --endpoint only" in err and "s3cret" not in err
    assert main([*base, "--endpoint", "http://127.0.0.1:9/", "--header", "Bearer s3cret"]) == 2
    err = capsys.readouterr().err
    assert "a header must be 'Name: value'" in err and "s3cret" not in err
    assert main([*base, "--store", str(GRAPH), "--default-graph-uri", "not an iri"]) == 2
    assert "is not an absolute IRI" in capsys.readouterr().err


# --- A secured endpoint: headers, basic auth, default-graph-uri ------------------------------

GRID_GRAPH = "https://example.org/grid/graphs/current"
USER, PASSWORD = "grid-reader", "pa55-W0rd/ÆØ"
BASIC = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
TOKEN = "Bearer eyJhbGciOi.s3cret-t0ken"


def _graph_store() -> Any:
    """The demo graph in a named graph only: the store's default graph is empty, as in a
    GraphDB repository where the data sits in a named graph."""
    store = pyoxigraph.Store()
    store.load(
        path=str(GRAPH),
        format=pyoxigraph.RdfFormat.TURTLE,
        to_graph=pyoxigraph.NamedNode(GRID_GRAPH),
    )
    return store


@pytest.fixture
def secured() -> Iterator[tuple[_Endpoint, str]]:
    endpoint = _Endpoint(_graph_store(), auth=BASIC)
    for url in _serve(endpoint):
        yield endpoint, url


def _no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("QA_EVAL_SPARQL_USER", raising=False)
    monkeypatch.delenv("QA_EVAL_SPARQL_PASSWORD", raising=False)


def test_basic_auth_from_the_environment_and_default_graph(
    secured: tuple[_Endpoint, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoint, url = secured
    monkeypatch.setenv("QA_EVAL_SPARQL_USER", USER)
    monkeypatch.setenv("QA_EVAL_SPARQL_PASSWORD", PASSWORD)
    result = refresh_reference_file(REFERENCE, endpoint=url, default_graph_uris=[GRID_GRAPH])
    assert (result.changes, result.steps_run) == ([], 11)
    assert len(endpoint.requests) == 11
    assert all(r["authorization"] == BASIC for r in endpoint.requests)
    assert all(r["default_graph_uris"] == [GRID_GRAPH] for r in endpoint.requests)

    # Without default-graph-uri the queries read the empty default graph: every output would
    # empty or change, and the refresh is refused.
    result = refresh_reference_file(REFERENCE, endpoint=url)
    assert len(result.changes) == 10 and len(result.issues) == 2


def test_missing_or_wrong_credentials_are_a_clear_error_without_secrets(
    secured: tuple[_Endpoint, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, url = secured
    _no_credentials(monkeypatch)
    with pytest.raises(InputError) as caught:
        refresh_reference_file(REFERENCE, endpoint=url)
    message = str(caught.value)
    assert f"SPARQL endpoint {url} answered HTTP 401" in message
    assert "credentials sent: none" in message and "QA_EVAL_SPARQL_USER" in message
    assert "\n" not in message

    wrong = "n0t-the-pa55word"
    monkeypatch.setenv("QA_EVAL_SPARQL_USER", USER)
    monkeypatch.setenv("QA_EVAL_SPARQL_PASSWORD", wrong)
    with pytest.raises(InputError) as caught:
        refresh_reference_file(REFERENCE, endpoint=url)
    message = str(caught.value)
    token = base64.b64encode(f"{USER}:{wrong}".encode()).decode()
    assert "Unauthorized: got Authorization Basic ***" in message  # the server echoed it
    assert wrong not in message and token not in message
    assert "credentials sent: basic auth (QA_EVAL_SPARQL_USER, QA_EVAL_SPARQL_PASSWORD)" in message

    monkeypatch.delenv("QA_EVAL_SPARQL_PASSWORD")
    with pytest.raises(InputError, match="QA_EVAL_SPARQL_PASSWORD is not set"):
        refresh_reference_file(REFERENCE, endpoint=url)
    # An Authorization header given explicitly does not need (or read) the environment.
    headers = {"Authorization": BASIC}
    result = refresh_reference_file(
        REFERENCE, endpoint=url, headers=headers, default_graph_uris=[GRID_GRAPH]
    )
    assert result.changes == []


def test_command_sends_headers_and_never_prints_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _no_credentials(monkeypatch)
    endpoint = _Endpoint(_graph_store(), auth=TOKEN)
    reference = tmp_path / "reference.yaml"
    shutil.copy(REFERENCE, reference)
    for url in _serve(endpoint):
        args = ["refresh-references", str(reference), "--endpoint", url]
        graph = ["--default-graph-uri", GRID_GRAPH]
        good = ["--header", f"Authorization: {TOKEN}", "--header", "X-Request-Source: qa-eval"]
        assert main([*args, *graph, *good]) == 0
        assert f"0 changed; {reference} is up to date" in capsys.readouterr().out
        assert endpoint.requests[0]["headers"]["x-request-source"] == "qa-eval"
        assert endpoint.requests[0]["authorization"] == TOKEN
        assert endpoint.requests[0]["accept"] == "application/sparql-results+json"

        monkeypatch.setenv("QA_EVAL_SPARQL_USER", USER)  # the header given wins over these
        monkeypatch.setenv("QA_EVAL_SPARQL_PASSWORD", PASSWORD)
        assert main([*args, *graph, *good, "--dry-run"]) == 0
        assert endpoint.requests[-1]["authorization"] == TOKEN
        capsys.readouterr()

        wrong = "Bearer eyJhbGciOi.wr0ng-t0ken"
        assert main([*args, *graph, "--header", f"Authorization: {wrong}"]) == 2
        captured = capsys.readouterr()
        assert "HTTP 401" in captured.err
        assert "credentials sent: the Authorization header given" in captured.err
        assert "wr0ng-t0ken" not in captured.err + captured.out
        assert reference.read_bytes() == REFERENCE.read_bytes()

        assert main([*args, *good]) == 2  # the default graph is empty: refused
        captured = capsys.readouterr()
        assert "would become empty" in captured.err and "s3cret-t0ken" not in captured.err
        assert reference.read_bytes() == REFERENCE.read_bytes()


def test_credentials_in_the_url_are_used_and_not_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_credentials(monkeypatch)
    endpoint = _Endpoint(_graph_store(), auth=BASIC)
    for url in _serve(endpoint):
        quoted = urllib.parse.quote(PASSWORD, safe="")
        with_user = url.replace("http://", f"http://{USER}:{quoted}@")
        result = refresh_reference_file(
            REFERENCE, endpoint=with_user, default_graph_uris=[GRID_GRAPH]
        )
        assert result.changes == [] and endpoint.requests[-1]["authorization"] == BASIC
        data = read_data(REFERENCE)
        _step(data, "connected-sima-aurland")["args"]["query"] = "ASK { ?s ?p }"
        with pytest.raises(InputError) as caught:
            refresh_reference(data, endpoint_runner(with_user), source="demo.yaml")
        message = str(caught.value)
        assert f"SPARQL endpoint {url} answered HTTP 400" in message
        assert PASSWORD not in message and quoted not in message and USER not in message


def test_redirects_are_not_followed_with_the_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_credentials(monkeypatch)
    elsewhere = _Endpoint(_graph_store())
    for target in _serve(elsewhere):
        moved = _Endpoint(_graph_store(), redirect=target)
        for url in _serve(moved):
            with pytest.raises(InputError) as caught:
                refresh_reference_file(REFERENCE, endpoint=url, headers={"Authorization": TOKEN})
            message = str(caught.value)
            assert f"redirected (HTTP 302) to {target}" in message
            assert "s3cret" not in message
    assert len(moved.requests) == 1 and elsewhere.requests == []


@pytest.mark.parametrize(
    ("header", "problem"),
    [
        ("Authorization Bearer abc123", "no ':' found"),
        ("Bad Name: abc123", "with a token as its name"),
        ("Host: abc123", "set by qa-eval"),
        ("X-Key: abc\r\n123", "line break"),
    ],
)
def test_bad_headers_are_refused_without_showing_the_value(header: str, problem: str) -> None:
    with pytest.raises(InputError) as caught:
        endpoint_runner("http://127.0.0.1:9/sparql", headers=[header])
    assert problem in str(caught.value) and "abc" not in str(caught.value)
    assert parse_header("  Authorization :  Bearer x y ") == ("Authorization", "Bearer x y")


def test_default_graph_of_an_rdf_dataset_file(tmp_path: Path) -> None:
    store = _graph_store()
    draft = pyoxigraph.NamedNode("https://example.org/grid/graphs/draft")
    store.load(
        input="@prefix g: <https://example.org/grid#> . "
        "@prefix r: <https://example.org/grid/resource/> . "
        "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> . "
        "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> . r:tr-OSLO-T9 a g:Transformer ; "
        'g:substation r:sub-OSLO ; rdfs:label "OSLO T9" ; g:ratedMVA "5"^^xsd:decimal .',
        format=pyoxigraph.RdfFormat.TURTLE,
        to_graph=draft,
    )
    trig = tmp_path / "grid.trig"
    store.dump(str(trig), pyoxigraph.RdfFormat.TRIG)
    only = refresh_reference_file(REFERENCE, store=trig, default_graph_uris=[GRID_GRAPH])
    assert only.changes == []  # the draft graph is not read
    union = refresh_reference_file(REFERENCE, store=trig)  # all graphs: the draft's T9 too
    oslo = next(c for c in union.changes if c.question_id == "transformers-oslo")
    assert (oslo.added, oslo.removed) == (1, 0) and "OSLO T9" in oslo.rows_added[0]
    both = refresh_reference_file(
        REFERENCE, store=trig, default_graph_uris=[GRID_GRAPH, draft.value]
    )
    assert {c.question_id for c in both.changes} == {c.question_id for c in union.changes}


@pytest.mark.parametrize(
    ("indent", "width", "style", "flow"),
    [(2, 80, None, False), (4, 40, None, None), (3, 1000, "'", False), (2, 60, '"', None)],
)
def test_every_layout_is_updated_in_place(
    monkeypatch: pytest.MonkeyPatch, indent: int, width: int, style: str | None, flow: bool | None
) -> None:
    """Stale, missing and null outputs, in files PyYAML wrote with other indentation, widths,
    quoting and flow styles, are replaced in place, and the file reads back as the result."""
    monkeypatch.setattr(
        refresh_writer, "_roundtrip_yaml", lambda *a: pytest.fail("not replaced in place")
    )
    data = read_data(REFERENCE)
    stale = {"head": {"vars": ["x"]}, "results": {"bindings": [{"x": {"type": "literal",
             "value": "ø'\""}}]}}  # fmt: skip
    for n, question in enumerate(q for t in data for q in t["questions"]):
        step = question["reference_steps"][-1][0]
        if n % 4 == 0:
            step["output"] = json.dumps(stale, indent=2 if n % 8 else None)
        elif n % 4 == 1:
            del step["output"]
        elif n % 4 == 2:
            step["output"] = None
    text = yaml.dump(data, indent=indent, width=width, default_style=style,
                     default_flow_style=flow, allow_unicode=True, sort_keys=False)  # fmt: skip
    result = refresh_reference(yaml.safe_load(text), store_runner(GRAPH))
    assert len(result.changes) == 9
    for newline in ("\n", "\r\n"):
        new = updated_text(text.replace("\n", newline), ".yaml", result)
        assert yaml.safe_load(new) == result.data
        assert new.count("\n") == new.count(newline)
