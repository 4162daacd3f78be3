"""``--verbalize llm --batch``: the rewording's judge calls through the Batch API of the scripted
server (``openai_batch_stub``) in rounds (every rewrite, every round trip, the retries' rewrites,
their round trips), the same reference file as the synchronous path with the same replies,
nothing submitted again on a rerun, ``--no-wait``, ``--dry-run --batch`` and the options that do
not go together."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_generate_wording import SHAPES, _config, _run, _script, _truths

from conftest import DEMO
from openai_batch_stub import BatchStubServer
from openai_stub import StubServer
from qa_eval.cli import main
from qa_eval.config import load_config
from qa_eval.generate.files import GraphSource, generate_reference_file
from qa_eval.generate.verbalize import WordingBatch

pytest.importorskip("pyoxigraph")
pytest.importorskip("openai")


def _batched(tmp_path: Path, url: str, out: Path, cache: Path, **options: object) -> object:
    """The same generation as ``_run``, its judge calls through batches (polled quickly)."""
    batch = WordingBatch(load_config(_config(tmp_path, url)), str(cache), poll=0.01, **options)  # type: ignore[arg-type]
    return generate_reference_file(
        GraphSource(store=DEMO),
        out,
        12,
        seed=3,
        shapes=SHAPES.split(","),
        styles=["conversational"],
        batch=batch,
    )


def test_batch_rounds_give_the_synchronous_file(tmp_path: Path) -> None:
    truths = _truths(tmp_path)
    with StubServer(_script(truths, wrong="Is")) as server:
        sync = tmp_path / "sync.yaml"
        assert _run(tmp_path, server.url, sync, "--styles", "conversational") == 0
    with BatchStubServer(_script(truths, wrong="Is")) as server:
        out = tmp_path / "batch.yaml"
        generation = _batched(tmp_path, server.url, out, tmp_path / "batch-cache.sqlite")
        assert server.chat_requests == []  # every call went through a batch
        sizes = [len(server.batch_lines[b]) for b in sorted(server.batch_lines)]
        # 12 rewrites, 12 round trips, then the 3 failed booleans' second rewrite and round trip
        assert sizes == [12, 12, 3, 3]
        assert generation.batch.rounds == 4 and generation.batch.failed == 0  # type: ignore[attr-defined]
        wording = generation.report.wording  # type: ignore[attr-defined]
        assert wording["verdicts"] == {"passed": 9, "failed: template kept": 3}
        assert wording["judge_calls"] == 0  # the final pass read the batches' replies
        again = tmp_path / "again.yaml"
        _batched(tmp_path, server.url, again, tmp_path / "batch-cache.sqlite")
        assert len(server.batch_lines) == 4 and server.chat_requests == []  # all cached
    assert out.read_bytes() == sync.read_bytes()
    assert again.read_bytes() == sync.read_bytes()


def test_cached_replies_are_not_submitted(tmp_path: Path) -> None:
    """A cache that holds the synchronous run's replies leaves nothing to batch."""
    truths = _truths(tmp_path)
    cache = tmp_path / "cache.sqlite"
    with BatchStubServer(_script(truths, wrong="Is")) as server:
        sync = tmp_path / "sync.yaml"
        assert _run(tmp_path, server.url, sync, "--styles", "conversational") == 0
        calls = len(server.chat_requests)
        out = tmp_path / "batch.yaml"
        generation = _batched(tmp_path, server.url, out, cache)
        assert server.batch_lines == {} and len(server.chat_requests) == calls
    assert generation.batch.rounds == 0  # type: ignore[attr-defined]
    assert out.read_bytes() == sync.read_bytes()


def test_no_wait_writes_nothing_until_collected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    truths = _truths(tmp_path)
    out = tmp_path / "r.yaml"
    with BatchStubServer(_script(truths, wrong="Is")) as server:
        server.hold.set()  # the batch stays in progress
        args = ["--styles", "conversational", "--batch", "--no-wait"]
        assert _run(tmp_path, server.url, out, *args) == 0
        assert "run the same command again" in capsys.readouterr().out
        assert not out.exists() and len(server.batch_lines) == 1
        assert server.chat_requests == []


def test_dry_run_batch_estimates_at_batch_rates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with BatchStubServer(_script({}, wrong="")) as server:
        out = tmp_path / "r.yaml"
        assert _run(tmp_path, server.url, out, "--dry-run", "--batch") == 0
        assert server.chat_requests == [] and server.batch_lines == {}
    printed = capsys.readouterr().out
    assert "batch rates" in printed and "generate_round_trip" in printed
    assert not out.exists()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--batch", "--no-cache"], "needs the cache"),
        (["--batch", "--max-cost", "1"], "cannot be combined"),
        (["--no-wait"], "goes with --batch"),
    ],
)
def test_batch_options_that_do_not_go_together(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    out = tmp_path / "r.yaml"
    assert _run(tmp_path, "http://127.0.0.1:9", out, *extra) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()
    code = main(["generate", "--store", str(DEMO), "-n", "2", "-o", str(out), "--batch"])
    assert code == 2 and "--verbalize llm" in capsys.readouterr().err
