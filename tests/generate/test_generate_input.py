"""Bad input is one line naming the cause, exit code 2, nothing written; the graph from a SPARQL
endpoint (a small local server) gives the same file as the graph from the file; the review CSV
and ``--apply-review``; ``--strict``."""

from __future__ import annotations

import csv
import io
import json
import threading
import time
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from conftest import DEMO, HARD
from qa_eval.cli import main
from qa_eval.generate.review import REVIEW_COLUMNS
from qa_eval.io.files import read_data

pyoxigraph = pytest.importorskip("pyoxigraph")


def _fails(args: list[str], capsys: pytest.CaptureFixture[str], *words: str) -> str:
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    for word in words:
        assert word in err, err
    return err


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('@prefix ex: <http://e/> .\nex:a ex:p "x', ["RDF does not parse"]),
        ("@prefix ex: <http://e/> .\nex:a a ex:T ; ex:p 1 .\n", ["no labels"]),
        ("", ["no triples"]),
    ],
)
def test_a_graph_that_cannot_be_used_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, words: list[str]
) -> None:
    graph = tmp_path / "g.ttl"
    graph.write_text(text, encoding="utf-8")
    out = tmp_path / "out.yaml"
    _fails(["generate", "--store", str(graph), "-n", "5", "-o", str(out)], capsys, *words)
    assert not out.exists()
    assert list(tmp_path.iterdir()) == [graph]


def test_bad_options_are_refused(
    hard: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.yaml"
    base = ["generate", "--store", str(hard), "-n", "5", "-o", str(out)]
    _fails([*base, "--shapes", "lookup,riddle"], capsys, "unknown shape 'riddle'")
    _fails([*base, "--mix", "lookup=x"], capsys, "--mix")
    tagged = tmp_path / "tagged.ttl"
    tagged.write_text(
        "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
        '<http://e/a> a <http://e/T> ; rdfs:label "A"@de, "A"@en .\n',
        encoding="utf-8",
    )
    _fails(
        ["generate", "--store", str(tagged), "-n", "5", "-o", str(out), "--lang", "fr"],
        capsys,
        "no labels in that language",
        "it has: de, en",
    )
    _fails([*base, "--lang", "not a tag"], capsys, "BCP 47")
    _fails(
        ["generate", "--store", str(tmp_path / "none.ttl"), "-n", "5", "-o", str(out)],
        capsys,
        "no such file",
    )
    _fails([*base[:-2], "-o", str(tmp_path / "out.txt")], capsys, "unknown output format")
    config = tmp_path / "c.yaml"
    config.write_text("include: {properties: [ex:height]}\n", encoding="utf-8")
    _fails([*base, "-c", str(config)], capsys, "property ex:height is not used")
    config.write_text("include: {classes: [ex:Dragon]}\n", encoding="utf-8")
    _fails([*base, "-c", str(config)], capsys, "class ex:Dragon is not used", "no instances")
    config.write_text("colour: blue\n", encoding="utf-8")
    _fails([*base, "-c", str(config)], capsys, "unknown key 'colour'")
    assert not out.exists()


def test_strict_exits_3_when_the_graph_gives_fewer(
    hard: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.yaml"
    code = main(["generate", "--store", str(hard), "-n", "500", "-o", str(out), "--strict"])
    assert code == 3
    captured = capsys.readouterr()
    assert "ran out" in captured.out
    assert "--strict" in captured.err
    made = sum(len(t["questions"]) for t in read_data(out))
    assert 0 < made < 500
    assert f"{made} of 500 questions" in captured.out


# --- the endpoint ----------------------------------------------------------------------------


class _Sparql(BaseHTTPRequestHandler):
    store: Any = None
    mode = "ok"

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        form = urllib.parse.parse_qs(self.rfile.read(length).decode("utf-8"))
        if self.mode == "refuse":
            return self._send(503, b"Service Unavailable", "text/plain")
        if self.mode == "html":
            return self._send(200, b"<html>maintenance</html>", "text/html")
        if self.mode == "slow" or (self.mode == "slow count" and "COUNT(*)" in form["query"][0]):
            time.sleep(1.0)
        result = self.store.query(form["query"][0])
        self._send(
            200,
            result.serialize(format=pyoxigraph.QueryResultsFormat.JSON),
            "application/sparql-results+json",
        )

    def _send(self, status: int, body: bytes, kind: str) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[tuple[str, type[_Sparql]]]:
    store = pyoxigraph.Store()
    store.load(path=str(DEMO), format=pyoxigraph.RdfFormat.TURTLE)
    handler = type("Handler", (_Sparql,), {"store": store, "mode": "ok"})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/sparql", handler
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_an_endpoint_gives_the_same_file_as_the_store(
    server: tuple[str, type[_Sparql]], tmp_path: Path
) -> None:
    url, _ = server
    config = tmp_path / "c.yaml"  # an endpoint declares no prefixes: the config gives the file's
    config.write_text(
        "prefixes: {g: 'https://example.org/grid#', r: 'https://example.org/grid/resource/'}\n",
        encoding="utf-8",
    )
    args = ["-n", "20", "-o", str(tmp_path / "e.yaml"), "--seed", "2", "-c", str(config)]
    assert main(["generate", "--endpoint", url, *args]) == 0
    assert (
        main(
            [
                "generate",
                "--store",
                str(DEMO),
                "-n",
                "20",
                "-o",
                str(tmp_path / "s.yaml"),
                "--seed",
                "2",
            ]
        )
        == 0
    )
    assert (tmp_path / "e.yaml").read_bytes() == (tmp_path / "s.yaml").read_bytes()


def test_an_endpoint_counts_its_triples_or_says_unknown(
    server: tuple[str, type[_Sparql]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, handler = server
    assert main(["generate", "--endpoint", url, "--describe", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["triples"] == 241  # as the file's store counts
    monkeypatch.setattr("qa_eval.generate.source.COUNT_TIMEOUT", 0.2)
    handler.mode = "slow count"  # a big endpoint: COUNT(*) takes longer than it may
    out = tmp_path / "e.yaml"
    assert main(["generate", "--endpoint", url, "-n", "3", "-o", str(out)]) == 0
    assert "triples unknown (the count failed or timed out)" in capsys.readouterr().out
    assert out.exists()
    assert main(["generate", "--endpoint", url, "--describe", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["triples"] is None


@pytest.mark.parametrize(
    ("mode", "extra", "words"),
    [
        ("refuse", [], ["HTTP 503"]),
        ("html", [], ["did not return SPARQL JSON"]),
        ("slow", ["--timeout", "0.2"], ["did not answer within 0.2 s"]),
    ],
)
def test_an_endpoint_that_fails_is_one_line(
    server: tuple[str, type[_Sparql]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    mode: str,
    extra: list[str],
    words: list[str],
) -> None:
    url, handler = server
    handler.mode = mode
    out = tmp_path / "e.yaml"
    _fails(["generate", "--endpoint", url, "-n", "5", "-o", str(out), *extra], capsys, *words)
    assert not out.exists()


# --- review ----------------------------------------------------------------------------------


def test_review_csv_and_apply_review(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reference, review = tmp_path / "r.yaml", tmp_path / "review.csv"
    args = [
        "generate",
        "--store",
        str(DEMO),
        "-n",
        "8",
        "-o",
        str(reference),
        "--review",
        str(review),
    ]
    assert main(args) == 0
    rows = list(csv.DictReader(io.StringIO(review.read_text(encoding="utf-8"))))
    assert tuple(rows[0]) == REVIEW_COLUMNS
    questions = [q for t in read_data(reference) for q in t["questions"]]
    assert [r["id"] for r in rows] == [q["id"] for q in questions]
    assert all(r["decision"] == "" and r["edit"] == "" for r in rows)
    assert rows[0]["query"].startswith("PREFIX")
    rows[0]["decision"], rows[0]["edit"] = "accept", "Edited question?"
    rows[1]["decision"] = "accept"
    rows[2]["decision"] = "reject"
    with review.open("w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, REVIEW_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    out = tmp_path / "kept.yaml"
    code = main(
        [
            "generate",
            "--store",
            str(DEMO),
            "--apply-review",
            str(review),
            str(reference),
            "-o",
            str(out),
        ]
    )
    assert code == 0
    assert "kept 2 questions (1 edited), rejected 1, undecided 5" in capsys.readouterr().out
    kept = [q for t in read_data(out) for q in t["questions"]]
    assert [q["id"] for q in kept] == [rows[0]["id"], rows[1]["id"]] or {q["id"] for q in kept} == {
        rows[0]["id"],
        rows[1]["id"],
    }
    edited = next(q for q in kept if q["id"] == rows[0]["id"])
    assert edited["question_text"] == "Edited question?"
    assert edited["generated"]["wording"] == "edited by a reviewer"


def test_apply_review_leaves_out_a_query_whose_result_changed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    graph = tmp_path / "g.ttl"
    graph.write_text(HARD, encoding="utf-8")
    reference, review = tmp_path / "r.yaml", tmp_path / "review.csv"
    assert (
        main(
            [
                "generate",
                "--store",
                str(graph),
                "-n",
                "10",
                "-o",
                str(reference),
                "--review",
                str(review),
                "--shapes",
                "count,aggregate",
            ]
        )
        == 0
    )
    text = review.read_bytes().replace(b",,\r\n", b",accept,\r\n")
    review.write_bytes(text)
    graph.write_text(
        HARD.replace("ex:population 3645000", "ex:population 3645001").replace(
            "ex:twin c:paris, c:madrid", "ex:twin c:paris, c:madrid, c:rome"
        ),
        encoding="utf-8",
    )
    out = tmp_path / "kept.yaml"
    assert (
        main(
            [
                "generate",
                "--store",
                str(graph),
                "--apply-review",
                str(review),
                str(reference),
                "-o",
                str(out),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "left out (result changed)" in printed
    kept = [q for t in read_data(out) for q in t["questions"]]
    total = sum(len(t["questions"]) for t in read_data(reference))
    assert 0 < len(kept) < total


def test_a_review_of_another_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reference, review = tmp_path / "r.yaml", tmp_path / "review.csv"
    assert main(["generate", "--store", str(DEMO), "-n", "3", "-o", str(reference)]) == 0
    review.write_text(
        "id,question,answer,query,decision,edit\nnope,q,a,SELECT,accept,\n", encoding="utf-8"
    )
    out = tmp_path / "kept.yaml"
    apply = ["generate", "--store", str(DEMO), "--apply-review", str(review), str(reference)]
    _fails(
        [*apply, "-o", str(out)],
        capsys,
        "'nope'",
    )
    review.write_text(
        "id,question,answer,query,decision,edit\nx,q,a,SELECT,maybe,\n", encoding="utf-8"
    )
    _fails(
        [*apply, "-o", str(out)],
        capsys,
        "decision",
        "row 2",
    )
    assert not out.exists()
