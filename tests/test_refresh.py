"""Refreshing reference SPARQL outputs (qa_eval.refresh) and the power-grid demo dataset."""

from __future__ import annotations

import copy
import json
import socket
import threading
import time
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pyoxigraph = pytest.importorskip("pyoxigraph")

from qa_eval import InputError, run_evaluation  # noqa: E402
from qa_eval.io import read_data  # noqa: E402
from qa_eval.refresh import (  # noqa: E402
    endpoint_runner,
    load_store,
    refresh_reference,
    refresh_reference_file,
    sparql_json_text,
    store_runner,
)

DEMO = Path(__file__).resolve().parent.parent / "examples" / "powergrid"
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
    def __init__(self, store: Any, delay: float = 0.0) -> None:
        self.store = store
        self.delay = delay
        self.requests: list[dict[str, str]] = []


def _handler(endpoint: _Endpoint) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            form = urllib.parse.parse_qs(self.rfile.read(length).decode("utf-8"))
            endpoint.requests.append(
                {
                    "accept": self.headers.get("Accept", ""),
                    "content_type": self.headers.get("Content-Type", ""),
                    "path": self.path,
                }
            )
            if endpoint.delay:
                time.sleep(endpoint.delay)
            try:
                results = endpoint.store.query(form["query"][0])
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
