"""Results that follow the judge's work: the bound on questions in flight, results streamed as
they finish (and in reference order where a file needs it), responses read as a stream, the
progress display and tables that fit the terminal, and partial files that survive a bad rerun."""

from __future__ import annotations

import json
import re
import threading
import time
from io import StringIO
from pathlib import Path
from typing import Any

import orjson
import pytest
from rich.console import Console

from openai_stub import Reply, StubServer, completion, oracle_content
from qa_eval import run_evaluation
from qa_eval.cli import Progress, format_table, main, plan_table, summary_table
from qa_eval.errors import InputError
from qa_eval.io.files import read_data
from qa_eval.run.evaluation import iter_evaluation
from qa_eval.run.prepare import prepare_reference, prepare_responses
from qa_eval.run.progress import RunProgress
from qa_eval.run.stream import JsonLinesResponses, ResultsFile

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _dataset(n: int, templates: int = 3) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    reference: list[dict[str, Any]] = [
        {"template_id": f"t{t}", "questions": []} for t in range(templates)
    ]
    responses = []
    for q in range(n):
        reference[q % templates]["questions"].append(
            {
                "id": f"q{q}",
                "question_text": f"What is stored under item-{q}?",
                "reference_answer": f"Item {q} holds {q * 7} units.",
                "question_type": "lookup" if q % 2 else "count",
            }
        )
        responses.append(
            {
                "question_id": f"q{q}",
                "actual_answer": f"item-{q} holds {q * 7} units.",
                "total_tokens": 10 + q,
            }
        )
    return reference, responses


def _settings(url: str, concurrency: int) -> dict[str, Any]:
    endpoint = {"provider": "openai", "base_url": url, "api_key": "x"}
    return {
        "llm": {
            "generation": {**endpoint, "model": "gpt-4o-mini"},
            "embedding": {**endpoint, "model": "text-embedding-3-small"},
            "concurrency": concurrency,
        }
    }


def _item(request: dict[str, Any]) -> int:
    text = "\n".join(str(m.get("content", "")) for m in request.get("messages", []))
    return int(re.search(r"item-(\d+)", text).group(1))  # type: ignore[union-attr]


# The bound on questions in flight, and the order results come in ---------------------------
def test_questions_in_flight_stay_within_twice_the_concurrency(tmp_path: Path) -> None:
    """Each question asks for correctness and relevance (a chat call, then embeddings that
    queue for the same slots). A question counts as started when its first call reaches the
    server and as done when ``on_result`` has it: started-but-not-done never exceeds 2 x
    concurrency. Unbounded, every question's first call arrives before the first relevance
    embeddings are served, so nearly all of them are started at once."""
    n, concurrency = 40, 2
    lock = threading.Lock()
    started: set[int] = set()
    done: set[int] = set()
    peak = [0]

    def script(request: dict[str, Any], number: int) -> Reply:
        with lock:
            started.add(_item(request))
            peak[0] = max(peak[0], len(started - done))
        reply = completion(oracle_content(request))
        reply.delay = 0.01
        return reply

    def on_result(result: dict[str, Any]) -> None:
        with lock:
            done.add(int(result["question_id"][1:]))

    reference, responses = _dataset(n)
    with StubServer(script) as server:
        results = run_evaluation(
            reference,
            responses,
            config=_settings(server.url, concurrency),
            cache=tmp_path / "cache.sqlite3",
            on_result=on_result,
        )
    assert len(started) == n and len(done) == n
    assert all("answer_f1" in r and "answer_relevance" in r for r in results)
    assert not any(k.endswith("_error") or k.endswith("_method") for r in results for k in r)
    usage = results.signature["usage"]["total"]
    assert usage["retries"] == usage["failures"] == 0 and usage["calls"] == 2 * n
    assert 1 <= peak[0] <= 2 * concurrency
    assert results.signature["usage"]["peak_concurrency"] <= concurrency


def test_results_stream_as_they_finish_and_return_in_reference_order(tmp_path: Path) -> None:
    """The first question's judge is slow: others finish (and reach ``on_result``) before it,
    yet the returned list, and the streamed iterator, keep the reference order."""
    n = 12

    def script(request: dict[str, Any], number: int) -> Reply:
        reply = completion(oracle_content(request))
        reply.delay = 0.4 if _item(request) == 0 else 0.0
        return reply

    reference, responses = _dataset(n, templates=1)
    order: list[str] = []
    with StubServer(script) as server:
        settings = _settings(server.url, 4)
        results = run_evaluation(
            reference,
            responses,
            config=settings,
            cache=tmp_path / "cache.sqlite3",
            disable=["answer_relevance"],
            on_result=lambda r: order.append(r["question_id"]),
        )
        calls = len(server.chat_requests)
        streamed = list(
            iter_evaluation(
                reference,
                responses,
                config=settings,
                cache=tmp_path / "cache.sqlite3",
                disable=["answer_relevance"],
            )
        )
        assert len(server.chat_requests) == calls  # the second run came from the cache
    expected = [f"q{i}" for i in range(n)]
    assert [r["question_id"] for r in results] == expected
    assert sorted(order) == sorted(expected) and order != expected
    assert order.index("q0") > 0
    assert [r["question_id"] for r in streamed] == expected
    assert [r["answer_f1"] for r in streamed] == [r["answer_f1"] for r in results]


def test_a_stream_holds_a_bounded_number_of_results_behind_a_slow_question(
    tmp_path: Path,
) -> None:
    """The first question's judge call takes 2 s; the others are instant. A stream gives the
    results in reference order, so everything after the first waits: the run reads no further
    question once max(256, 16 x concurrency) results wait, instead of judging all 700 and holding
    them."""
    n, concurrency = 700, 2
    first_done = threading.Event()
    before_first: list[int] = []

    def script(request: dict[str, Any], number: int) -> Reply:
        item = _item(request)
        if item == 0:
            time.sleep(2.0)
            first_done.set()
        elif not first_done.is_set():
            before_first.append(item)
        return completion(oracle_content(request))

    reference, responses = _dataset(n, templates=1)
    with StubServer(script) as server:
        stream = iter_evaluation(
            reference,
            responses,
            config=_settings(server.url, concurrency),
            cache=tmp_path / "cache.sqlite3",
            disable=["answer_relevance"],
        )
        with stream:
            results = list(stream)
    assert [r["question_id"] for r in results] == [f"q{i}" for i in range(n)]
    assert all("answer_f1" in r for r in results)
    limit, window = max(256, 16 * concurrency), 2 * concurrency
    assert window < len(before_first) <= limit + window


def test_on_progress_counts_judge_calls_and_questions(stub: StubServer, tmp_path: Path) -> None:
    reference, responses = _dataset(30)
    seen: list[RunProgress] = []
    results = run_evaluation(
        reference,
        responses,
        config=_settings(stub.url, 4),
        cache=tmp_path / "cache.sqlite3",
        disable=["answer_relevance"],
        on_progress=seen.append,
    )
    last = seen[-1]
    assert last.judge and last.questions_done == last.questions_total == 30
    calls = results.signature["usage"]["total"]["calls"]
    assert last.calls_done == last.calls_planned == calls == 30
    assert last.prompt_tokens == results.signature["usage"]["total"]["prompt_tokens"] > 0
    # One correctness call per question: planned from the first snapshot on.
    assert all(s.calls_planned == 30 for s in seen) and len(seen) >= 2
    assert [s.questions_done for s in seen] == sorted(s.questions_done for s in seen)


# The progress display and the tables -----------------------------------------------------------
def _lines(text: str) -> list[str]:
    plain = ANSI.sub("", text).replace("\r", "\n")
    return [line for line in plain.split("\n") if line.strip()]


@pytest.mark.parametrize("width", [120, 80, 60, 40, 24])
def test_progress_fits_the_terminal_width(width: int) -> None:
    out = StringIO()
    console = Console(file=out, force_terminal=True, width=width)
    progress = Progress(out, console=console)
    progress.display.delay = 0.0
    progress.update(RunProgress(10, 1000, 25, 2000, 3, 12_345, 678, 0.01234, True))
    progress.update(RunProgress(450, 1000, 910, 2000, 3, 412_345, 9_678, 0.51234, True))
    progress.close()
    lines = _lines(out.getvalue())
    assert lines and all(len(line) <= width for line in lines)
    assert any("910/2,000" in line for line in lines)
    assert any("450/1,000" in line for line in lines)
    if width >= 80:
        assert any("422k tokens, $0.5123" in line for line in lines)
        assert any("judge calls" in line and "ETA" in line for line in lines)


def test_progress_is_silent_off_a_terminal() -> None:
    out = StringIO()  # not a terminal
    progress = Progress(out)
    progress.display.delay = 0.0
    progress.update(RunProgress(5, 10, 3, 20, 0, 100, 10, 0.0, True))
    progress(10, 10)
    progress.close()
    assert out.getvalue() == ""


def test_evaluate_on_a_terminal_draws_progress_and_json_stays_clean(
    stub: StubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """With -q or --format json nothing is drawn even on a terminal, and stdout is the JSON."""
    reference, responses = _dataset(6)
    (tmp_path / "ref.json").write_bytes(orjson.dumps(reference))
    (tmp_path / "resp.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in responses))
    config = tmp_path / "judge.yaml"
    config.write_text(json.dumps(_settings(stub.url, 2)))
    made: list[Any] = []

    class Terminal(StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    real = Progress.__init__

    def spy(self: Progress, *args: Any, **kwargs: Any) -> None:
        real(self, *args, **kwargs)
        self.display.delay = 0.0
        made.append(self)

    monkeypatch.setattr(Progress, "__init__", spy)
    args = [str(tmp_path / "ref.json"), str(tmp_path / "resp.jsonl"), "-c", str(config)]
    assert main(["evaluate", *args, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["micro"]["number_of_success_samples"] == 6
    assert made[-1].display.enabled is False and "judge calls" not in terminal.getvalue()
    assert main(["evaluate", *args, "--no-cache"]) == 0
    assert made[-1].display.enabled is True
    assert "judge calls" in ANSI.sub("", terminal.getvalue())


def _aggregates() -> dict[str, Any]:
    from qa_eval import compute_aggregates

    results = [
        {
            "template_id": f"a-rather-long-template-name-{t}",
            "question_id": f"q{t}-{i}",
            "status": "error" if i == 0 and t == 1 else "success",
            "steps_score": 0.25 * i,
            "answer_f1": 0.1 * (i + t),
            "answer_relevance": 0.9 - 0.1 * i,
            "total_tokens": 100 * i + 1,
        }
        for t in range(3)
        for i in range(3)
    ]
    return compute_aggregates(results)


@pytest.mark.parametrize("width", [160, 80, 60, 40, 20])
def test_summary_table_fits_the_width_and_keeps_every_value(width: int) -> None:
    aggregates = _aggregates()
    text = summary_table(aggregates, width)
    assert all(len(line) <= width for line in text.splitlines())
    whole = summary_table(aggregates)  # no width: one block, natural width
    values = [
        cell
        for line in whole.splitlines()[2:]
        for cell in line.split()
        if re.fullmatch(r"[\d.]+", cell)
    ]
    assert values and all(v in text for v in values)
    if width >= 40:  # narrower, a long header folds too
        for header in ("steps_score", "answer_f1", "answer_relevance", "total_tokens"):
            assert header in text
    # Elapsed time: no question has it, so its column (all "-") is left out.
    assert "elapsed_sec" not in text and "elapsed_sec" not in whole


def test_format_table_leaves_out_empty_columns_and_rows() -> None:
    text = format_table(
        ["name", "a", "b", "c"], [["x", 1, None, 2.5], ["y", None, None, None], ["z", 3, None, 0.5]]
    )
    lines = text.splitlines()
    assert lines[0].split() == ["name", "a", "c"]
    assert [line.split()[0] for line in lines[2:]] == ["x", "z"]
    assert lines[2].split() == ["x", "1", "2.500"]


def test_plan_table_fits_the_width(stub: StubServer, tmp_path: Path) -> None:
    from qa_eval.config import parse_config
    from qa_eval.judge.cache.store import open_cache
    from qa_eval.judge.calls import Judge

    reference, responses = _dataset(5)
    judge = Judge(
        parse_config(_settings(stub.url, 2)),
        cache=open_cache(tmp_path / "c.sqlite3"),
        dry_run=True,
    )
    run_evaluation(reference, responses, judge=judge)
    for width in (None, 60):
        text = plan_table(judge, width)
        assert "answer_correctness" in text and "total" in text
        if width:
            assert all(len(line) <= width for line in text.splitlines())
    assert len(stub.chat_requests) == 0


# Responses read as a stream ------------------------------------------------------------------
def _write_jsonl(path: Path, records: list[Any]) -> None:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))


def test_jsonl_responses_in_any_order_give_the_same_results(tmp_path: Path) -> None:
    reference, responses = _dataset(50)
    shuffled = responses[::-1][:20] + responses[:30:2]  # reversed, some missing
    path = tmp_path / "responses.jsonl"
    _write_jsonl(path, shuffled)
    expected = run_evaluation(reference, read_data(path))
    streamed = run_evaluation(reference, JsonLinesResponses(path))
    assert list(streamed) == list(expected)
    assert list(iter_evaluation(reference, JsonLinesResponses(path))) == list(expected)
    assert sum(r["status"] == "error" for r in streamed) == 50 - len(
        {r["question_id"] for r in shuffled}
    )


def test_jsonl_responses_report_every_problem_as_the_reader_does(tmp_path: Path) -> None:
    reference, responses = _dataset(4)
    lines = [
        orjson.dumps(responses[0]),
        b"",
        orjson.dumps({"question_id": "nope", "actual_answer": "x"}),
        orjson.dumps(responses[0]),  # a duplicate
        orjson.dumps({**responses[1], "status": "maybe"}),
        orjson.dumps({**responses[2], "actual_steps": [{"status": "success"}]}),
    ]
    path = tmp_path / "responses.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    questions = prepare_reference(reference)
    with pytest.raises(InputError) as from_memory:
        prepare_responses(read_data(path), questions, str(path))
    with pytest.raises(InputError) as streamed:
        JsonLinesResponses(path).index(questions, str(path))
    assert str(streamed.value) == str(from_memory.value)
    assert streamed.value.problems == from_memory.value.problems  # type: ignore[attr-defined]
    assert "line 3" in str(streamed.value)


def test_jsonl_responses_split_lines_at_newlines_only(tmp_path: Path) -> None:
    reference, responses = _dataset(2)
    responses[0]["actual_answer"] = "one\u2028two\u0085three"
    path = tmp_path / "responses.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + b"".join(orjson.dumps(r) + b"\r\n" for r in responses))
    results = run_evaluation(reference, JsonLinesResponses(path))
    assert results[0]["actual_answer"] == "one\u2028two\u0085three"
    assert results[1]["status"] == "success"


def test_bad_json_line_is_one_error_naming_the_line(tmp_path: Path) -> None:
    reference, responses = _dataset(3)
    path = tmp_path / "responses.jsonl"
    path.write_bytes(orjson.dumps(responses[0]) + b"\n{not json\n")
    with pytest.raises(InputError, match=r"responses.jsonl.*line 2.*JSON does not parse"):
        run_evaluation(reference, JsonLinesResponses(path), responses_source=str(path))
    path.write_bytes(orjson.dumps(responses[0]) + b"\n\xff\xfe\n")
    with pytest.raises(InputError, match=r"line 2.*not UTF-8"):
        run_evaluation(reference, JsonLinesResponses(path), responses_source=str(path))


def test_a_stream_closed_early_stops_its_run() -> None:
    reference, responses = _dataset(3000)
    stream = iter_evaluation(reference, responses)
    first = next(stream)
    assert first["question_id"] == "q0"
    stream.close()
    assert stream._thread is not None and not stream._thread.is_alive()
    with pytest.raises(StopIteration):
        next(stream)


def test_a_stream_raises_the_runs_error() -> None:
    stream = iter_evaluation([{"template_id": "t", "questions": "not a list"}], [])
    with pytest.raises(InputError, match="questions"):
        next(stream)


# The CLI: streamed output, the partial file ---------------------------------------------------
def _files(tmp_path: Path, n: int = 20) -> tuple[Path, Path]:
    reference, responses = _dataset(n)
    ref, resp = tmp_path / "reference.json", tmp_path / "responses.jsonl"
    ref.write_bytes(orjson.dumps(reference))
    _write_jsonl(resp, responses[::-1])
    return ref, resp


def test_jsonl_output_is_streamed_and_equals_the_json_output(
    stub: StubServer, tmp_path: Path, capsys: Any
) -> None:
    ref, resp = _files(tmp_path)
    config = tmp_path / "judge.yaml"
    config.write_text(json.dumps(_settings(stub.url, 3)))
    common = [str(ref), str(resp), "-c", str(config), "-q"]
    assert (
        main(
            [
                "evaluate",
                *common,
                "-o",
                str(tmp_path / "r.json"),
                "--aggregates",
                str(tmp_path / "a.json"),
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "evaluate",
                *common,
                "-o",
                str(tmp_path / "r.jsonl"),
                "--aggregates",
                str(tmp_path / "b.json"),
            ]
        )
        == 0
    )
    whole = json.loads((tmp_path / "r.json").read_text())
    streamed = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    order = [q["id"] for t in json.loads(ref.read_text()) for q in t["questions"]]
    assert streamed == whole and [r["question_id"] for r in whole] == order
    first, second = (json.loads((tmp_path / f).read_text()) for f in ("a.json", "b.json"))
    for key in ("per_template", "micro", "macro", "per_tag"):
        assert first[key] == second[key]
    assert (tmp_path / "r.signature.yaml").exists()
    assert not list(tmp_path.glob("*.partial.jsonl"))


def test_results_file_reads_back_what_was_written(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    records = [{"question_id": f"q{i}", "v": i} for i in range(5)]
    _write_jsonl(path, records)
    results = ResultsFile(path, 5, {"x": 1})
    assert list(results) == records and len(results) == 5
    assert results[3] == records[3] and results[-1] == records[4] and results[1:3] == records[1:3]
    with pytest.raises(IndexError):
        results[5]


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_a_bad_input_rerun_leaves_the_earlier_partial_file(
    tmp_path: Path, capsys: Any, suffix: str
) -> None:
    ref, resp = _files(tmp_path, 4)
    output = tmp_path / f"results{suffix}"
    partial = tmp_path / f"results{suffix}.partial.jsonl"
    earlier = b'{"question_id":"q0","status":"success"}\n'
    partial.write_bytes(earlier)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"question_id": "q0"}\n{"question_id": "q1", "status": "unknown"}\n')
    assert main(["evaluate", str(ref), str(bad), "-o", str(output), "-q"]) == 2
    assert "unknown" in capsys.readouterr().err
    assert partial.read_bytes() == earlier and not output.exists()
    # A run that gets going replaces it, and says so; at the end it is gone.
    assert main(["evaluate", str(ref), str(resp), "-o", str(output), "-q"]) == 0
    assert f"replacing {partial}" in capsys.readouterr().err
    assert not partial.exists() and output.exists()


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_an_interrupted_run_says_where_its_results_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any, suffix: str
) -> None:
    from qa_eval.run.files import PartialFile

    ref, resp = _files(tmp_path, 600)
    output = tmp_path / f"results{suffix}"
    real, real_lines = PartialFile.write, PartialFile.write_lines

    def write(self: Any, result: dict[str, Any], flush: bool = True) -> None:
        real(self, result, flush)
        if self.count == 300:
            raise KeyboardInterrupt

    def write_lines(self: Any, data: bytes, count: int) -> None:  # streamed: in batches
        room = 300 - self.count
        real_lines(self, b"".join(data.splitlines(keepends=True)[:room]), min(count, room))
        if self.count == 300:
            raise KeyboardInterrupt

    monkeypatch.setattr(PartialFile, "write", write)
    monkeypatch.setattr(PartialFile, "write_lines", write_lines)
    assert main(["evaluate", str(ref), str(resp), "-o", str(output), "-q"]) == 130
    err = capsys.readouterr().err
    partial = tmp_path / f"results{suffix}.partial.jsonl"
    written = [json.loads(line) for line in partial.read_bytes().splitlines()]
    assert len(written) == 300
    assert err.count("\n") == 1  # one line: run_command's
    assert f"the finished results are in {partial} (300 question(s))" in err
    assert not output.exists()
    if suffix == ".jsonl":  # streamed: in reference order, and the run's thread is gone
        order = [q["id"] for t in json.loads(ref.read_text()) for q in t["questions"]]
        assert [r["question_id"] for r in written] == order[:300]
        assert not [t for t in threading.enumerate() if t.name == "qa-eval"]
