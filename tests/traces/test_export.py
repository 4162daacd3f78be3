"""Scores written back to traces: OTLP/JSON files, OTLP/HTTP to a local receiver, Langfuse scores
to a local stand-in of its API; redaction of keys; results evaluated end to end from responses
that carry ``trace``."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from qa_eval.cli import main
from qa_eval.traces.export import (
    EVENT_NAME,
    ExportError,
    evaluation_events,
    langfuse_scores,
    otlp_logs,
    send_langfuse,
)

TRACE = "5b8efff798038103d269b633813fc60c"
SPAN = "eee19b7ec3c1b174"


def reference() -> list[dict[str, Any]]:
    """Two questions with one reference step each."""
    return [
        {
            "template_id": "t",
            "questions": [
                {
                    "id": f"q{i}",
                    "question_text": f"Where is item {i}?",
                    "reference_steps": [[{"name": "search", "args": {}, "output": f"o{i}"}]],
                }
                for i in range(3)
            ],
        }
    ]


def responses() -> list[dict[str, Any]]:
    """q0 and q1 imported from traces (q1 matches, q0 does not), q2 a plain response."""
    out = []
    for i in range(3):
        response: dict[str, Any] = {
            "question_id": f"q{i}",
            "actual_answer": "x",
            "actual_steps": [
                {
                    "name": "search",
                    "args": {},
                    "status": "success",
                    "output": f"o{i}" if i else "no",
                }
            ],
        }
        if i < 2:
            trace_id = TRACE[:-1] + str(i)
            response["trace"] = {"format": "otlp-json", "trace_id": trace_id, "root_span_id": SPAN}
        out.append(response)
    return out


def evaluated(tmp_path: Path) -> Path:
    """Evaluate the three responses; the results file's path."""
    ref, resp, out = tmp_path / "ref.json", tmp_path / "resp.json", tmp_path / "results.json"
    ref.write_text(json.dumps(reference()))
    resp.write_text(json.dumps(responses()))
    assert main(["evaluate", str(ref), str(resp), "-o", str(out)]) == 0
    return out


def test_results_keep_the_trace_and_every_score_becomes_an_event(tmp_path: Path) -> None:
    results = json.loads(evaluated(tmp_path).read_text())
    assert results[0]["trace"]["trace_id"] == TRACE[:-1] + "0"
    assert "trace" not in results[2]
    selection = evaluation_events(results)
    assert selection.without_trace == ["q2"]
    assert "1 result(s) carry no trace id" in selection.notes()[0]
    by_trace = {(e.trace_id, e.name): e for e in selection.events}
    assert by_trace[(TRACE[:-1] + "1", "steps_score")].value == 1.0
    assert by_trace[(TRACE[:-1] + "0", "steps_score")].value == 0.0
    assert all(e.span_id == SPAN for e in selection.events)


def test_otlp_logs_follow_the_evaluation_event_convention() -> None:
    results = [
        {
            "question_id": "q1",
            "trace": {"trace_id": TRACE, "root_span_id": SPAN},
            "faithfulness": 0.5,
            "faithfulness_reason": "1 of 2 statements supported",
            "answer_class": "correct",
            "context_recall_error": "judge failed: <b>boom</b>",
        }
    ]
    selection = evaluation_events(results, ["faithfulness", "answer_class", "context_recall"])
    payload, skipped = otlp_logs(selection.events, now_ns=1_700_000_000_000_000_000)
    assert skipped == 0
    records = payload["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
    assert [r["eventName"] for r in records] == [EVENT_NAME] * 3
    assert {r["traceId"] for r in records} == {TRACE}
    assert {r["spanId"] for r in records} == {SPAN}
    attrs = [{a["key"]: a["value"] for a in r["attributes"]} for r in records]
    assert attrs[0]["gen_ai.evaluation.name"] == {"stringValue": "faithfulness"}
    assert attrs[0]["gen_ai.evaluation.score.value"] == {"doubleValue": 0.5}
    assert attrs[0]["gen_ai.evaluation.explanation"] == {
        "stringValue": "1 of 2 statements supported"
    }
    assert attrs[1]["gen_ai.evaluation.score.label"] == {"stringValue": "correct"}
    assert "gen_ai.evaluation.score.value" not in attrs[1]
    assert attrs[2]["error.type"] == {"stringValue": "qa_eval.metric_error"}
    assert attrs[2]["gen_ai.evaluation.explanation"]["stringValue"] == "judge failed: <b>boom</b>"


def test_otlp_payload_parses_as_the_protocol_message() -> None:
    json_format = pytest.importorskip("google.protobuf.json_format")
    logs = pytest.importorskip("opentelemetry.proto.collector.logs.v1.logs_service_pb2")
    results = [{"question_id": "q", "trace": {"trace_id": TRACE, "root_span_id": SPAN}, "mrr": 1}]
    events = evaluation_events(results, ["mrr"]).events
    payload, _ = otlp_logs(events)
    # OTLP/JSON writes ids as hex where protobuf's JSON mapping has base64 (the OTLP
    # specification's one deviation): turn them back, as a receiver does, then parse.
    for record in payload["resourceLogs"][0]["scopeLogs"][0]["logRecords"]:
        for key in ("traceId", "spanId"):
            record[key] = base64.b64encode(bytes.fromhex(record[key])).decode()
    message = json_format.Parse(json.dumps(payload), logs.ExportLogsServiceRequest())
    record = message.resource_logs[0].scope_logs[0].log_records[0]
    assert record.trace_id.hex() == TRACE and record.span_id.hex() == SPAN
    assert record.event_name == EVENT_NAME


def test_ids_that_are_not_opentelemetry_ids() -> None:
    uuid = "0f8fad5b-d9cb-469f-a165-70867728950e"
    b64 = base64.b64encode(bytes.fromhex(TRACE)).decode()
    results = [
        {"question_id": "a", "trace": {"trace_id": uuid, "root_span_id": "obs-1"}, "mrr": 1},
        {"question_id": "b", "trace": {"trace_id": b64}, "mrr": 1},
        {"question_id": "c", "trace": {"trace_id": "run-42"}, "mrr": 1},
    ]
    payload, skipped = otlp_logs(evaluation_events(results, ["mrr"]).events)
    records = payload["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
    assert skipped == 1
    assert [r["traceId"] for r in records] == [uuid.replace("-", ""), TRACE]
    assert all("spanId" not in r for r in records)


class Receiver:
    """A local HTTP receiver on 127.0.0.1 (port 0) that records requests and answers with
    scripted statuses (then 200)."""

    def __init__(self, statuses: list[tuple[int, str]] | None = None) -> None:
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self.statuses = list(statuses or [])
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver.requests.append(
                    (self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                )
                status, text = receiver.statuses.pop(0) if receiver.statuses else (200, "{}")
                data = text.encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    yield server
    server.close()


def test_otlp_http_reaches_a_local_receiver(
    tmp_path: Path,
    receiver: Receiver,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    results = evaluated(tmp_path)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=topsecret-123456")
    assert main(["export-scores", str(results), "--otlp-endpoint", receiver.url]) == 0
    [(path, headers, body)] = receiver.requests
    assert path == "/v1/logs"
    assert headers["x-api-key"] == "topsecret-123456"
    assert headers["content-type"] == "application/json"
    records = json.loads(body)["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
    names = {
        a["value"]["stringValue"]
        for r in records
        for a in r["attributes"]
        if a["key"] == "gen_ai.evaluation.name"
    }
    assert "steps_score" in names
    assert {r["traceId"] for r in records} == {TRACE[:-1] + "0", TRACE[:-1] + "1"}
    captured = capsys.readouterr()
    assert "sent over OTLP/HTTP" in captured.out
    assert "carry no trace id" in captured.err
    assert "topsecret" not in captured.out + captured.err


def test_otlp_json_file(tmp_path: Path) -> None:
    results = evaluated(tmp_path)
    out = tmp_path / "scores.json"
    assert (
        main(["export-scores", str(results), "--otlp-json", str(out), "--metric", "steps_score"])
        == 0
    )
    records = json.loads(out.read_text())["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
    assert len(records) == 2


def test_a_refusing_receiver_is_one_redacted_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    results = evaluated(tmp_path)
    secret = "sk-lf-verysecretvalue0001"
    server = Receiver([(401, f"bad key {secret} for pk-lf-public0000001")])
    try:
        monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", "pk-lf-public0000001")
        monkeypatch.setenv("LANGFUSE_SECRET_KEY", secret)
        monkeypatch.setenv("LANGFUSE_HOST", server.url)
        assert main(["export-scores", str(results), "--langfuse"]) == 2
    finally:
        server.close()
    err = capsys.readouterr().err
    assert "answered 401" in err and "after 0 score(s) sent" in err
    assert secret not in err and "pk-lf-public0000001" not in err
    assert "Traceback" not in err


def test_langfuse_stand_in_gets_idempotent_scores_and_retries(tmp_path: Path) -> None:
    results = json.loads(evaluated(tmp_path).read_text())
    events = evaluation_events(results, ["steps_score"]).events
    server = Receiver([(503, "busy")])
    env = {"LANGFUSE_PUBLIC_KEY": "pk-1234567890", "LANGFUSE_SECRET_KEY": "sk-1234567890"}
    try:
        sent = send_langfuse(events, {**env, "LANGFUSE_HOST": server.url})
        again = send_langfuse(events, {**env, "LANGFUSE_HOST": server.url})
    finally:
        server.close()
    assert sent == again == 2
    # one 503 retried, then 2 + 2 accepted
    assert len(server.requests) == 5
    paths = {r[0] for r in server.requests}
    assert paths == {"/api/public/scores"}
    auth = server.requests[1][1]["authorization"]
    assert base64.b64decode(auth.split()[1]).decode() == "pk-1234567890:sk-1234567890"
    bodies = [json.loads(r[2]) for r in server.requests[1:]]
    assert bodies[:2] == bodies[2:]  # the same ids: Langfuse updates, never duplicates
    assert {b["traceId"] for b in bodies} == {TRACE[:-1] + "0", TRACE[:-1] + "1"}
    assert all(b["dataType"] == "NUMERIC" and b["name"] == "steps_score" for b in bodies)


def test_langfuse_needs_its_keys() -> None:
    with pytest.raises(ExportError, match="LANGFUSE_PUBLIC_KEY"):
        send_langfuse([], {})


def test_labels_are_categorical_and_failures_are_not_scores() -> None:
    results = [
        {
            "question_id": "q",
            "trace": {"trace_id": "t-1"},
            "answer_class": "wrong",
            "faithfulness_error": "no reply",
        }
    ]
    bodies = langfuse_scores(evaluation_events(results, ["answer_class", "faithfulness"]).events)
    assert bodies == [
        {
            "id": bodies[0]["id"],
            "traceId": "t-1",
            "name": "answer_class",
            "value": "wrong",
            "dataType": "CATEGORICAL",
        }
    ]


def test_export_needs_a_destination(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = evaluated(tmp_path)
    assert main(["export-scores", str(results)]) == 2
    assert "needs --otlp-json" in capsys.readouterr().err


def test_export_refuses_responses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "resp.json"
    path.write_text(json.dumps(responses()))
    assert main(["export-scores", str(path), "--otlp-json", str(tmp_path / "o.json")]) == 2
    assert "expects results" in capsys.readouterr().err


def test_results_without_traces_have_nothing_to_export(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Results not evaluated from traces: one line, exit 2, and no file (an empty file looked
    like an export)."""
    ref, resp, results = tmp_path / "ref.json", tmp_path / "resp.json", tmp_path / "r.json"
    ref.write_text(json.dumps(reference()))
    resp.write_text(json.dumps([{k: v for k, v in r.items() if k != "trace"} for r in responses()]))
    assert main(["evaluate", str(ref), str(resp), "-o", str(results)]) == 0
    capsys.readouterr()
    out = tmp_path / "scores.json"
    assert main(["export-scores", str(results), "--otlp-json", str(out)]) == 2
    err = capsys.readouterr().err
    assert "nothing to export: none of the 3 result(s) carries a trace id" in err
    assert not out.exists()
    traced = evaluated(tmp_path)
    assert main(["export-scores", str(traced), "--otlp-json", str(out), "--metric", "nope"]) == 2
    assert "--metric nope: unknown key" in capsys.readouterr().err and not out.exists()


def test_only_scores_on_0_1_and_labels_are_exported_by_default() -> None:
    """``tool_calls_ratio`` (scale ratio: it can exceed 1) is not a 0-1 score: not exported
    unless named; docs/export-scores.md says so."""
    result = {
        "question_id": "q1",
        "trace": {"format": "otlp-json", "trace_id": TRACE, "root_span_id": SPAN},
        "tool_f1": 0.5,
        "tool_calls_ratio": 2.0,
    }
    assert [e.name for e in evaluation_events([result]).events] == ["tool_f1"]
    named = evaluation_events([result], ["tool_calls_ratio"]).events
    assert [(e.name, e.value) for e in named] == [("tool_calls_ratio", 2.0)]
    doc = (Path(__file__).parents[2] / "docs" / "export-scores.md").read_text(encoding="utf-8")
    assert "`tool_calls_ratio`" in doc and "not exported" in doc


def test_an_unknown_metric_key_is_refused_with_the_nearest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--metric`` naming a key no family writes and no result has is refused (exit 2, the
    nearest key named, nothing written), not skipped with a note."""
    results = evaluated(tmp_path)
    out = tmp_path / "events.json"
    code = main(["export-scores", str(results), "--otlp-json", str(out), "--metric", "steps_scor"])
    assert code == 2
    assert "--metric steps_scor: unknown key; did you mean steps_score?" in capsys.readouterr().err
    assert not out.exists()
