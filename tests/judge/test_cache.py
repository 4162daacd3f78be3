"""The reply cache as a hostile or unlucky user meets it: a directory, a file that is not a
cache, a foreign or newer schema, a damaged, truncated, read-only or locked database, a dry run,
and a run stopped with SIGINT or SIGTERM. Judge calls go to the scripted server over real HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from fakes import items_dataset
from openai_stub import Reply, StubServer, completion, oracle, oracle_content
from qa_eval import run_evaluation
from qa_eval.cli import main
from qa_eval.config import parse_config
from qa_eval.errors import QaEvalError
from qa_eval.judge.cache.sqlite import CacheError, CacheWarning
from qa_eval.judge.cache.store import CachedReply, ReplyCache, request_key
from qa_eval.judge.calls import Judge

SRC = Path(__file__).resolve().parents[2] / "src"


class Score(BaseModel):
    """A small reply schema."""

    score: int
    reason: str = ""


GOOD = json.dumps({"score": 7, "reason": "fine"})
QUESTION = [{"role": "user", "content": "Rate the answer from 0 to 10."}]


def inputs(tmp_path: Path, n: int) -> tuple[Path, Path]:
    reference, responses = items_dataset(n)
    ref = tmp_path / "reference.json"
    ref.write_text(json.dumps(reference))
    resp = tmp_path / "responses.jsonl"
    resp.write_text("".join(json.dumps(r) + "\n" for r in responses))
    return ref, resp


def config_file(tmp_path: Path, url: str) -> Path:
    path = tmp_path / "judge.yaml"
    path.write_text(
        "llm:\n"
        f"  generation: {{provider: openai, base_url: '{url}', api_key: x}}\n"
        f"  embedding: {{provider: openai, model: text-embedding-3-small, base_url: '{url}',"
        " api_key: x}\n"
        "  retry_base: 0.001\n"
    )
    return path


def evaluate(tmp_path: Path, url: str, cache: Path, n: int = 2, *extra: str) -> int:
    ref, resp = inputs(tmp_path, n)
    args = ["evaluate", str(ref), str(resp), "-c", str(config_file(tmp_path, url)), "-q"]
    return main([*args, "--cache", str(cache), *extra])


def snapshot(path: Path) -> Any:
    """What a path holds: a file's bytes, or a folder's listing."""
    if path.is_dir():
        return sorted(p.name for p in path.iterdir())
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fill(path: Path, n: int = 2) -> None:
    """A real cache with some replies."""
    cache = ReplyCache(path)
    for i in range(n):
        cache.put(f"{i:064x}", "m", CachedReply(GOOD, 10, 5))
    cache.close()


@contextlib.contextmanager
def read_only(path: Path) -> Iterator[None]:
    """Make a file or folder read-only for this process, even as root (chattr +i)."""
    if os.geteuid() != 0:
        mode = path.stat().st_mode
        path.chmod(0o555 if path.is_dir() else 0o444)
        try:
            yield
        finally:
            path.chmod(mode)
        return
    if shutil.which("chattr") is None:
        pytest.skip("running as root without chattr: cannot make a file read-only")
    made = subprocess.run(["chattr", "+i", str(path)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"chattr +i is not allowed here: {made.stderr.decode().strip()}")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def _directory(tmp: Path) -> Path:
    (tmp / "cache-dir").mkdir()
    return tmp / "cache-dir"


def _text_file(tmp: Path) -> Path:
    path = tmp / "notes.txt"
    path.write_text("my notes, not a cache\n")
    return path


def _short_file(tmp: Path) -> Path:
    path = tmp / "short.sqlite3"
    path.write_bytes(b"SQLite f")  # a truncated header
    return path


def _foreign_tables(tmp: Path) -> Path:
    path = tmp / "app.sqlite3"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE users (id INTEGER, name TEXT)")
    db.commit()
    db.close()
    return path


def _foreign_columns(tmp: Path) -> Path:
    path = tmp / "other.sqlite3"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE replies (id INTEGER, text TEXT)")
    db.commit()
    db.close()
    return path


def _newer_schema(tmp: Path) -> Path:
    path = tmp / "newer.sqlite3"
    fill(path)
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version = 99")
    db.commit()
    db.close()
    return path


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (_directory, "is a directory"),
        (_text_file, "not an SQLite database"),
        (_short_file, "not an SQLite database"),
        (_foreign_tables, "it has the tables users"),
        (_foreign_columns, "table replies has the columns id, text"),
        (_newer_schema, "made by a newer qa-eval"),
    ],
)
def test_a_file_that_cannot_be_a_cache_is_one_line_exit_2_before_any_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: Callable[[Path], Path], problem: str
) -> None:
    cache = make(tmp_path)
    before = snapshot(cache)
    with StubServer(oracle()) as server:
        code = evaluate(tmp_path, server.url, cache)
        assert server.requests == []  # nothing paid
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1, err
    assert err.startswith(f"qa-eval: error: cache {cache}: ")
    assert problem in err
    assert snapshot(cache) == before  # never changed


def test_the_api_raises_a_qa_eval_error_for_them(tmp_path: Path) -> None:
    with pytest.raises(CacheError, match="is a directory") as caught:
        ReplyCache(_directory(tmp_path))
    assert isinstance(caught.value, QaEvalError)
    with pytest.raises(CacheError, match="not a folder"):
        ReplyCache(_text_file(tmp_path) / "judge.sqlite3")


@pytest.mark.parametrize(
    "damage",
    ["truncate-half", "truncate-100", "garbage-page"],
)
def test_a_damaged_cache_is_moved_aside_and_started_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    cache = tmp_path / "judge.sqlite3"
    with StubServer(oracle()) as server:
        assert evaluate(tmp_path, server.url, cache, 6) == 0
        calls = len(server.chat_requests)
        size = cache.stat().st_size
        with cache.open("r+b") as f:
            if damage == "truncate-half":
                f.truncate(size // 2)
            elif damage == "truncate-100":
                f.truncate(100)
            else:
                f.seek(4096)
                f.write(os.urandom(4096))
        damaged = snapshot(cache)
        capsys.readouterr()
        assert evaluate(tmp_path, server.url, cache, 6) == 0
        err = capsys.readouterr().err
        assert len(server.chat_requests) == 2 * calls  # asked again, the run went on
        assert err.startswith(f"qa-eval: warning: cache {cache}: was damaged")
        assert "this run starts a new cache" in err
        (aside,) = tmp_path.glob("judge.sqlite3.damaged-*[0-9]")
        assert aside.name in err
        assert snapshot(aside) == damaged  # kept as it was, for whoever wants to look
        # The new cache works: a third run makes no call and warns about nothing.
        assert evaluate(tmp_path, server.url, cache, 6) == 0
        assert len(server.chat_requests) == 2 * calls
    assert capsys.readouterr().err == ""


def test_an_empty_file_is_a_new_cache(tmp_path: Path) -> None:
    cache = tmp_path / "judge.sqlite3"
    cache.write_bytes(b"")
    with StubServer(oracle()) as server:
        assert evaluate(tmp_path, server.url, cache) == 0
        assert evaluate(tmp_path, server.url, cache) == 0
        assert len(server.chat_requests) == 4


def test_a_read_only_cache_is_read_but_not_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "judge.sqlite3"
    with StubServer(oracle()) as server:
        assert evaluate(tmp_path, server.url, cache, 2) == 0
        assert len(server.chat_requests) == 4
        before = snapshot(cache)
        with read_only(cache):
            capsys.readouterr()
            assert evaluate(tmp_path, server.url, cache, 3, "-o", str(tmp_path / "r.json")) == 0
            err = capsys.readouterr().err
            assert len(server.chat_requests) == 4 + 2  # only the new question was asked
            assert snapshot(cache) == before
        assert err == (
            f"qa-eval: warning: cache {cache}: is read-only: stored replies are used, new ones "
            "are not stored\n"
        )
    results = json.loads((tmp_path / "r.json").read_text())
    assert all("answer_recall" in r and "answer_relevance" in r for r in results)


def test_a_cache_in_a_read_only_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    with StubServer(oracle()) as server:
        # An existing cache there is read (its WAL index cannot be made: opened immutable).
        assert evaluate(tmp_path, server.url, folder / "judge.sqlite3") == 0
        with read_only(folder):
            capsys.readouterr()
            assert evaluate(tmp_path, server.url, folder / "judge.sqlite3") == 0
            assert "is read-only" in capsys.readouterr().err
            assert len(server.chat_requests) == 4  # all from the cache
            # A new one cannot be made there: a warning, and a run without a cache.
            assert evaluate(tmp_path, server.url, folder / "new.sqlite3") == 0
            err = capsys.readouterr().err
            assert len(server.chat_requests) == 8
        assert not (folder / "new.sqlite3").exists()
    assert err.startswith(f"qa-eval: warning: cache {folder / 'new.sqlite3'}: cannot be created")
    assert err.endswith("this run uses no cache (every judge call is made)\n")


def test_a_locked_cache_never_blocks_the_event_loop(tmp_path: Path) -> None:
    path = tmp_path / "judge.sqlite3"
    with StubServer(lambda req, n: completion(GOOD)) as server:
        config = parse_config(
            {"llm": {"generation": {"base_url": server.url, "api_key": "x"}, "retry_base": 0.001}}
        )
        key = request_key(Judge(config).request(QUESTION, Score))
        stored = ReplyCache(path)
        stored.put(key, "m", CachedReply(GOOD, 10, 5))
        stored.close()
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("PRAGMA locking_mode=EXCLUSIVE")
        holder.execute("BEGIN EXCLUSIVE")  # no other connection can even read now
        with pytest.warns(CacheWarning, match="is locked by another process"):
            cache = ReplyCache(path)
        judge = Judge(config, cache=cache)

        async def scenario() -> tuple[bool, Any]:
            task = asyncio.ensure_future(judge.ask("score", QUESTION, Score))
            for _ in range(5):
                await asyncio.sleep(0.01)  # this coroutine runs while the ask waits
            waiting = not task.done()
            holder.execute("COMMIT")
            holder.close()  # the lock is gone
            return waiting, await task

        waiting, verdict = asyncio.run(scenario())
        assert waiting  # the ask waited for the lock without holding the loop
        assert verdict.cached and verdict.value.score == 7  # ... then read the stored reply
        assert server.chat_requests == []
        cache.close()


def test_a_locked_cache_keeps_new_replies_until_it_is_free(tmp_path: Path) -> None:
    path = tmp_path / "judge.sqlite3"
    fill(path)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # a writer elsewhere; readers still read (WAL)
    holder.execute("INSERT INTO vectors VALUES ('other', x'00', NULL)")
    with StubServer(lambda req, n: completion(GOOD)) as server:
        config = parse_config({"llm": {"generation": {"base_url": server.url, "api_key": "x"}}})
        with pytest.warns(CacheWarning, match="is locked by another process"):
            cache = ReplyCache(path)
        judge = Judge(config, cache=cache)
        verdict = asyncio.run(judge.ask("score", QUESTION, Score))
        assert verdict.value.score == 7 and not verdict.cached
        assert cache.pending == 1  # kept in memory: the ask did not wait for the lock
        holder.execute("COMMIT")
        holder.close()
        cache.close()  # stored now
    again = ReplyCache(path)
    assert again.get(request_key(judge.request(QUESTION, Score))) is not None
    assert len(again) == 3
    again.close()


def test_a_cache_locked_for_the_whole_run_loses_nothing_but_its_new_replies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "judge.sqlite3"
    fill(cache)
    holder = sqlite3.connect(cache, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO vectors VALUES ('other', x'00', NULL)")
    try:
        with StubServer(oracle()) as server:
            out = tmp_path / "r.json"
            assert evaluate(tmp_path, server.url, cache, 2, "-o", str(out)) == 0
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"qa-eval: warning: cache {cache}: is locked by another process")
    assert err[-1].startswith(f"qa-eval: warning: cache {cache}: stayed locked: ")
    assert err[-1].endswith("new replies were not stored")
    results = json.loads(out.read_text())
    assert all("answer_recall" in r and "answer_relevance" in r for r in results)


def test_a_failing_cache_while_the_run_goes_on_is_a_miss(tmp_path: Path) -> None:
    path = tmp_path / "judge.sqlite3"
    fill(path)
    cache = ReplyCache(path)
    assert cache.get(f"{0:064x}") is not None
    with path.open("r+b") as f:  # damaged under the open connection
        f.truncate(1024)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert cache.get(f"{1:064x}") is None
        cache.put("new", "m", CachedReply(GOOD, 1, 1))
        assert cache.get_vectors(["x"]) == {}
    assert [str(w.message) for w in seen] == [
        f"cache {path}: failed (database disk image is malformed): this run uses no cache "
        "(every judge call is made)"
    ]
    cache.close()


def test_dry_run_creates_no_cache_and_changes_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    new = tmp_path / "new-folder" / "judge.sqlite3"
    existing = tmp_path / "judge.sqlite3"
    with StubServer(oracle()) as server:
        assert evaluate(tmp_path, server.url, new, 2, "--dry-run") == 0
        assert "nothing was written" in capsys.readouterr().out
        assert not new.exists() and not new.parent.exists()
        assert evaluate(tmp_path, server.url, existing, 2) == 0
        requests = len(server.requests)
        before = snapshot(existing)
        # Three questions: two cached (whose relevance would need embeddings), one not.
        assert evaluate(tmp_path, server.url, existing, 3, "--dry-run") == 0
        assert len(server.requests) == requests  # no judge call, no embedding call
    assert snapshot(existing) == before
    assert sorted(p.name for p in tmp_path.glob("judge.sqlite3*")) == ["judge.sqlite3"]


CHILD_ENV = {**os.environ, "PYTHONPATH": str(SRC)}


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stopped_run_says_where_its_results_are_and_a_rerun_reuses_the_cache(
    tmp_path: Path, sig: signal.Signals
) -> None:
    n = 30
    ref, resp = inputs(tmp_path, n)
    cache = tmp_path / "judge.sqlite3"
    out = tmp_path / "results.json"
    partial = Path(f"{out}.partial.jsonl")
    state = {"delay": 0.05}

    def script(request: dict[str, Any], number: int) -> Reply:
        reply = completion(oracle_content(request), 50, 10)
        reply.delay = state["delay"]
        return reply

    with StubServer(script) as server:
        command = [
            sys.executable,
            "-m",
            "qa_eval",
            "evaluate",
            str(ref),
            str(resp),
            "-c",
            str(config_file(tmp_path, server.url)),
            "--cache",
            str(cache),
            "--concurrency",
            "2",
            "-o",
            str(out),
            "-q",
        ]
        child = subprocess.Popen(
            command, env=CHILD_ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        try:
            deadline = time.monotonic() + 60
            while not partial.exists() or partial.read_bytes().count(b"\n") < 3:
                assert child.poll() is None, child.communicate()
                assert time.monotonic() < deadline, "no result was finished"
                time.sleep(0.01)
            child.send_signal(sig)
            _, err = child.communicate(timeout=60)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        assert child.returncode == 130
        lines = err.decode().splitlines()
        assert len(lines) == 1, lines
        (line,) = lines
        finished = [json.loads(row) for row in partial.read_text().splitlines()]
        assert 3 <= len(finished) < n
        assert line.startswith("qa-eval: interrupted; the finished results are in ")
        assert f"{partial} ({len(finished)} question(s))" in line
        assert f"a rerun reuses the judge replies stored in the cache {cache}" in line
        assert not out.exists()
        # The rerun pays only for what had not finished.
        stored = sqlite3.connect(cache).execute("SELECT COUNT(*) FROM replies").fetchone()[0]
        assert stored >= 2 * len(finished)
        state["delay"] = 0.0
        before = len(server.chat_requests)
        results = run_evaluation(
            json.loads(ref.read_text()),
            [json.loads(x) for x in resp.read_text().splitlines()],
            config=str(config_file(tmp_path, server.url)),
            cache=cache,
        )
        assert len(server.chat_requests) - before == 2 * n - stored
    assert results.signature["usage"]["total"]["cached"] == stored
    for row in finished:
        (same,) = [r for r in results if r["question_id"] == row["question_id"]]
        assert same == row


def test_interrupted_without_output_or_cache_says_so(tmp_path: Path) -> None:
    import argparse

    from qa_eval.cli import interrupted_message
    from qa_eval.cli.evaluation import evaluate as _evaluate

    args = argparse.Namespace(
        handler=_evaluate, dry_run=False, output=None, no_cache=True, cache=None, system=None
    )
    message = interrupted_message(args)
    assert message == (
        "interrupted; no -o was given, so no per-question results were written; no cache was "
        "used (--no-cache): a rerun makes every judge call again"
    )
    assert interrupted_message(None) == "interrupted"


def test_two_runs_can_share_a_cache_that_neither_has_made_yet(tmp_path: Path) -> None:
    path = tmp_path / "new" / "judge.sqlite3"
    first, second = ReplyCache(path), ReplyCache(path)
    assert not path.exists()
    first.put("a" * 64, "m", CachedReply(GOOD, 1, 1))
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # the first run's next write, say
    with pytest.warns(CacheWarning, match="is locked by another process"):
        second.put("b" * 64, "m", CachedReply(GOOD, 2, 2))  # checked, then waits its turn
    assert second.pending == 1
    holder.execute("COMMIT")
    holder.close()
    second.put("c" * 64, "m", CachedReply(GOOD, 3, 3))
    assert second.pending == 0
    first.close()
    second.close()
    again = ReplyCache(path)
    assert len(again) == 3
    assert again.get("b" * 64) == CachedReply(GOOD, 2, 2)
    again.close()
