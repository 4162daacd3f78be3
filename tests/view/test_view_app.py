"""The viewer's server: the token on every request, writes with the token in a header, only
its own assets, bad requests as one line; the command: port 0, the URL printed, Ctrl-C stops
it, another host is warned about, a missing extra is named."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "report"))
pytest.importorskip("starlette")

import httpx
from serving import Served
from test_report import sample_results

from qa_eval.view.server import settings_for

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    a = tmp_path / "a.jsonl"
    a.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in sample_results()))
    b = tmp_path / "b.jsonl"
    b.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in sample_results(0.2)))
    return a, b


@pytest.fixture
def client(files: tuple[Path, Path], tmp_path: Path) -> Iterator[httpx.Client]:
    settings = settings_for(list(files), labels=tmp_path / "l.csv", annotator="ana", token="s3cret")
    served = Served(settings)
    try:
        with httpx.Client(base_url=served.base) as client:
            yield client
    finally:
        served.stop()


def test_every_request_needs_the_token(client: httpx.Client) -> None:
    for url in ("/", "/run/0", "/run/0/q/1", "/compare", "/label", "/static/view.js"):
        response = client.get(url)
        assert response.status_code == 403, url
        assert "q1" not in response.text
    assert client.get("/?token=wrong").status_code == 403
    first = client.get("/?token=s3cret")
    assert first.status_code == 200
    assert (
        "HttpOnly" in first.headers["set-cookie"]
        and "SameSite=strict" in first.headers["set-cookie"]
    )
    assert client.get("/run/0").status_code == 200  # the cookie now
    assert "script-src 'self'" in first.headers["content-security-policy"]


def test_writes_need_the_token_in_a_header(client: httpx.Client, tmp_path: Path) -> None:
    client.get("/?token=s3cret")
    label = {"question_id": "q1", "metric": "faithfulness", "label": True}
    assert client.post("/api/labels", json=label).status_code == 403  # the cookie is not enough
    assert not (tmp_path / "l.csv").exists()
    wrong = client.post("/api/labels", json=label, headers={"X-QA-Token": "nope"})
    assert wrong.status_code == 403
    ok = client.post("/api/labels", json=label, headers={"X-QA-Token": "s3cret"})
    assert ok.status_code == 200
    assert (tmp_path / "l.csv").read_text().splitlines()[1] == "q1,,faithfulness,true,ana,,"
    bad = client.post(
        "/api/labels", json={"metric": "m", "label": 1}, headers={"X-QA-Token": "s3cret"}
    )
    assert bad.status_code == 400 and "question_id" in bad.json()["error"]
    no_review = client.post("/api/review", json={"id": "g1"}, headers={"X-QA-Token": "s3cret"})
    assert no_review.status_code == 400


def test_a_label_is_changed_and_cleared_from_the_labelling_page(
    client: httpx.Client, tmp_path: Path
) -> None:
    from qa_eval.agreement import read_labels

    client.get("/?token=s3cret")
    write = {"X-QA-Token": "s3cret"}
    first = {"question_id": "q1", "template_id": "voltage", "metric": "faithfulness"}
    assert client.post("/api/labels", json={**first, "label": True}, headers=write).is_success
    again = client.post("/api/labels", json={**first, "label": False}, headers=write)
    assert again.status_code == 400 and "already labelled" in again.json()["error"]
    page = client.get("/label?metric=faithfulness&queue=doubtful&pos=1")
    assert page.status_code == 200
    assert 'data-question="q1"' in page.text and 'data-replace="1"' in page.text
    assert "your label: <b>true</b>" in page.text
    assert "/label?run=0&amp;metric=faithfulness" in page.text  # back to the queue
    assert 'id="recent-labels"' in page.text and "pos=1" in page.text
    changed = {**first, "label": False, "note": "wrong", "replace": True}
    assert client.post("/api/labels", json=changed, headers=write).is_success
    labels = read_labels(tmp_path / "l.csv")
    assert [(r.question_id, r.value) for r in labels.rows] == [("q1", False)]
    assert "your label: <b>false</b> (wrong)" in client.get("/label?metric=faithfulness&pos=1").text
    assert client.post("/api/labels", json={**first, "clear": True}, headers=write).is_success
    page = client.get("/label?metric=faithfulness&pos=1")
    assert 'data-replace="1"' not in page.text and "your label" not in page.text
    assert not (tmp_path / "l.csv").read_text().splitlines()[-1].endswith(",wrong,true")
    assert client.get("/label?metric=faithfulness&pos=99").status_code == 400


def test_only_its_own_assets_and_no_path_is_opened(client: httpx.Client) -> None:
    client.get("/?token=s3cret")
    assert client.get("/static/view.css").status_code == 200
    css = client.get("/static/report.css")
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
    for url in ("/static/..%2f..%2fpyproject.toml", "/static/index.py", "/etc/passwd",
                "/static/%2e%2e/app.py", "/run/0/../../a.jsonl"):  # fmt: skip
        assert client.get(url).status_code == 404, url


def test_bad_requests_are_one_line(client: httpx.Client) -> None:
    client.get("/?token=s3cret")
    for url, words in (("/run/7", "no run 7"), ("/run/0?size=3", "size"),
                       ("/run/0/q/99", "no result 100"), ("/run/0?sort=nope", "no metric"),
                       ("/run/0?q=(&regex=1", "regular expression"),
                       ("/compare?a=0&b=0", "two different runs")):  # fmt: skip
        response = client.get(url)
        assert response.status_code == 400, url
        assert words in response.text, (url, response.text)
        assert "Traceback" not in response.text


def _start(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "qa_eval", "view", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={
            **os.environ,
            "PYTHONPATH": os.environ.get("PYTHONPATH", str(ROOT / "src")),
            **(env or {}),
        },
    )


def test_the_command_prints_its_url_and_stops_on_ctrl_c(files: tuple[Path, Path]) -> None:
    import httpx

    process = _start(str(files[0]), str(files[1]), "--port", "0", "--annotator", "ana")
    try:
        url = ""
        for line in process.stdout:  # type: ignore[union-attr]
            if line.startswith("open "):
                url = line.split()[1]
                break
        assert url.startswith("http://127.0.0.1:") and "?token=" in url
        port = int(url.split(":")[2].split("/")[0])
        assert port > 0
        assert httpx.get(url).status_code == 200
        assert httpx.get(url.split("?")[0]).status_code == 403
    finally:
        process.send_signal(signal.SIGINT)
        code = process.wait(20)
    assert code == 0, process.stderr.read()  # type: ignore[union-attr]
    assert "Traceback" not in process.stderr.read()  # type: ignore[union-attr]


def test_another_host_is_warned_about(files: tuple[Path, Path]) -> None:
    process = _start(str(files[0]), "--host", "0.0.0.0", "--port", "0")
    try:
        line = process.stderr.readline()  # type: ignore[union-attr]
        assert line.startswith("warning: serving on 0.0.0.0")
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(20)


def test_without_the_extra_it_names_it(
    monkeypatch: pytest.MonkeyPatch, files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    from qa_eval import extras
    from qa_eval.cli import main

    real = extras.available
    monkeypatch.setattr(extras, "available", lambda m: m != "starlette" and real(m))
    assert main(["view", str(files[0])]) == 2
    err = capsys.readouterr().err
    assert "pip install 'qa-eval[view]'" in err and "starlette" in err


def test_the_queues(files: tuple[Path, Path], tmp_path: Path) -> None:
    from qa_eval.view.queue import next_item, queue_order

    records = sample_results()
    records[2]["faithfulness_sd"] = 0.4  # the judge's repeats disagreed most here
    path = tmp_path / "sd.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    settings = settings_for([path, files[1]], labels=tmp_path / "l.csv", annotator="ana")
    runs = [r.index for r in settings.runs]
    # faithfulness: q0 .35, q1 .47, q2 .59 (sd .4), q3 .71, q5 .95 (q4 is an error)
    assert queue_order(runs, 0, "faithfulness", "doubtful") == [2, 1, 0, 3, 5]
    sample = queue_order(runs, 0, "faithfulness", "sample", seed=7)
    assert sorted(sample) == [0, 1, 2, 3, 5]
    assert sample == queue_order(runs, 0, "faithfulness", "sample", seed=7)
    # the second run is 0.2 higher everywhere but where it is capped at 1
    assert queue_order(runs, 0, "faithfulness", "disagree")[-1] == 5
    item = next_item(runs, 0, "faithfulness", "doubtful", {("q2", "documents", "faithfulness")})
    assert item is not None and (item.pos, item.done, item.total) == (1, 1, 5)
    classes = queue_order(runs, 0, "answer_class", "sample")
    assert sorted(classes) == [0, 1, 2, 3, 4, 5]
    # doubtful orders by the metric's pass threshold: 0.7 puts q3 (.71) right after q2
    assert queue_order(runs, 0, "faithfulness", "doubtful", threshold=0.7) == [2, 3, 1, 5, 0]


def test_pass_threshold_is_the_runs_own() -> None:
    from qa_eval.view.queue import pass_threshold

    signature = {"options": {"pass_thresholds": {"answer_f1": 0.7}}}
    assert pass_threshold("answer_f1", signature)[0] == 0.7
    assert pass_threshold("trajectory_match", signature)[0] == 1.0
    assert pass_threshold("faithfulness", signature)[0] == 0.5
    assert pass_threshold("faithfulness", None)[0] == 0.5


def test_runs_disagree_on_classes(tmp_path: Path) -> None:
    from qa_eval.view.queue import queue_order

    records = sample_results()
    paths = []
    for number, changed in enumerate(([], ["q3"], ["q3", "q1"])):
        for record in records:
            record["answer_class"] = "OTHER" if record["question_id"] in changed else "SAME"
        path = tmp_path / f"run{number}.jsonl"
        path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
        paths.append(path)
    settings = settings_for(paths, labels=tmp_path / "l.csv", annotator="ana")
    runs = [r.index for r in settings.runs]
    # run 0 against the two others: q3 differs from both, q1 from one, the rest from none
    assert queue_order(runs, 0, "answer_class", "disagree") == [3, 1, 0, 2, 4, 5]
    assert queue_order(runs, 2, "answer_class", "disagree")[:2] == [1, 3]


def test_class_labels_by_number_keys(client: httpx.Client, tmp_path: Path) -> None:
    client.get("/?token=s3cret")
    page = client.get("/label?metric=answer_class")
    assert page.status_code == 200
    assert 'data-mode="class"' in page.text
    for number, name in enumerate(["CORRECT", "DON&#39;T KNOW", "WRONG"], start=1):
        assert f'data-label="{name}" data-key="{number}"' in page.text
    saved = client.post(
        "/api/labels",
        json={
            "question_id": "q1",
            "template_id": "voltage",
            "metric": "answer_class",
            "label": "WRONG",
        },
        headers={"X-QA-Token": "s3cret"},
    )
    assert saved.status_code == 200
    from qa_eval.agreement import read_labels

    labels = read_labels(tmp_path / "l.csv")
    assert labels.kinds == {"answer_class": "class"}
    assert 'data-mode="number"' in client.get("/label?metric=answer_f1&mode=number").text


def test_reference_checks_each_runs_signature(tmp_path: Path) -> None:
    from qa_eval.cli import main

    data = ROOT / "tests" / "data" / "graphrag-eval"
    for number in (1, 2):
        code = main(
            ["evaluate", str(data / f"reference_{number}.yaml"),
             str(data / f"actual_responses_{number}.jsonl"), "-o",
             str(tmp_path / f"run{number}.jsonl"), "-q"]
        )  # fmt: skip
        assert code == 0
    settings = settings_for(
        [tmp_path / "run1.jsonl", tmp_path / "run2.jsonl"],
        labels=tmp_path / "l.csv",
        reference=data / "reference_1.yaml",
        token="t",
    )
    served = Served(settings)
    try:
        with httpx.Client(base_url=served.base) as client:
            page = client.get("/?token=t").text
            assert "evaluated on" in page and "(same fingerprint)" in page
            assert "NOT evaluated on" in page  # run 2 used reference_2.yaml
            compare = client.get("/compare").text
            assert "were evaluated against different reference datasets" in compare
    finally:
        served.stop()
