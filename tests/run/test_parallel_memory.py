"""What the run's process and its workers hold with ``--workers``: the checked ranges joined as
they come (the same index and fingerprint as every part joined at once), a question answered in
two ranges refused as one process refuses it, what workers send back read on the run's own
thread (a thread's malloc arena keeps what was freed in it), and a worker's index let go once it
evaluates."""

from __future__ import annotations

import asyncio
import random
import threading
import warnings
from array import array
from pathlib import Path
from typing import Any, ClassVar

import orjson
import pytest

from qa_eval.run import parallel
from qa_eval.run.places import DigestRuns
from qa_eval.run.reflines import Checked, IdIndex
from qa_eval.run.signature import digests_fingerprint, question_digest
from qa_eval.run.workers import BatchWork, WorkerPool


def _part(rng: random.Random, start: int, count: int) -> Checked:
    part = Checked("ref")
    for n in range(start, start + count):
        part.hashes.append(rng.getrandbits(64))
        part.digests += question_digest(f"t{n % 3}", {"id": n})
        part.templates[f"t{n % 3}"] = None
        part.count += 1
    if count:
        part.tags.add(f"tag{start % 2}")
    return part


def test_ranges_joined_as_they_come_give_the_index_of_all_parts() -> None:
    rng = random.Random(7)
    parts, start = [], 0
    for count in (3, 0, 1, 5, 0, 2):
        parts.append(_part(rng, start, count))
        start += count
    every = bytearray().join(p.digests for p in parts)
    copies = [Checked("ref", count=p.count, hashes=array("Q", p.hashes)) for p in parts]
    joined = Checked("ref", runs=DigestRuns())
    for part in parts:
        parallel._join(joined, part)
    assert joined.count == start
    assert list(joined.templates) == ["t0", "t1", "t2"]
    assert joined.tags == {"tag0", "tag1"}
    assert joined.fingerprint() == digests_fingerprint(every)
    whole, one = IdIndex.of(copies), IdIndex.of([joined])
    for name in ("hashes", "order"):
        assert getattr(whole, name).tolist() == getattr(one, name).tolist(), name


def test_ranges_joined_as_they_come_spill_their_digests_past_a_run(monkeypatch: Any) -> None:
    """Past a run of digests the joined part writes them to its temporary file (the run's
    process does not hold 32 bytes a question), and the fingerprint is the same."""
    from qa_eval.run import places

    monkeypatch.setattr(places, "DIGEST_RUN", 32 * 4)
    rng = random.Random(11)
    parts, start = [], 0
    for count in (3, 6, 1, 9, 2):
        parts.append(_part(rng, start, count))
        start += count
    every = bytearray().join(p.digests for p in parts)
    joined = Checked("ref", runs=DigestRuns())
    for part in parts:
        parallel._join(joined, part)
    assert joined.runs is not None and len(joined.runs.spans) == 2
    assert len(joined.digests) < 32 * 4
    assert joined.fingerprint() == digests_fingerprint(every)


def _files(tmp_path: Path, rows: list[dict[str, Any]]) -> tuple[Path, Path]:
    reference = tmp_path / "reference.jsonl"
    lines = [{"template_id": f"t{i % 4}", "id": f"q{i}", "question_text": "?"} for i in range(40)]
    reference.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in lines))
    responses = tmp_path / "responses.jsonl"
    responses.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return reference, responses


def _outcome(reference: Path, responses: Path, folder: Path, workers: int) -> Any:
    """The run's results, aggregates and warnings, or its error's text."""
    from test_spread import _files as files_of
    from test_spread import _run as run_files

    from qa_eval.errors import InputError

    name = f"w{workers}"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            run_files(reference, responses, folder, name, workers=workers)
        except InputError as e:
            return str(e)
    done = files_of(folder, name)
    done["signature"].pop("spread", None)
    return done, sorted(str(w.message) for w in caught)


@pytest.mark.parametrize("answered_twice", [False, True])
def test_responses_joined_as_they_come_give_one_process_outcome(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answered_twice: bool
) -> None:
    """Many small responses ranges, unknown ids among them; a question answered in the first
    range and again in the last: the error (and no warning counted twice) of one process."""
    monkeypatch.setattr(parallel, "CHUNK", 200)
    monkeypatch.setattr(parallel, "RESPONSES_CHUNK", 150)
    rows: list[dict[str, Any]] = [
        {"question_id": f"q{i}", "actual_answer": "a"} for i in range(0, 40, 2)
    ]
    rows[3:3] = [{"question_id": f"nope{i}", "actual_answer": "x"} for i in range(7)]
    if answered_twice:
        rows.append({"question_id": "q0", "actual_answer": "again"})
    reference, responses = _files(tmp_path, rows)
    one = _outcome(reference, responses, tmp_path, 1)
    two = _outcome(reference, responses, tmp_path, 2)
    assert one == two
    if answered_twice:
        assert isinstance(two, str) and "duplicate" in two
    else:
        assert any("7 responses" in w for w in two[1]), two[1]


class _Noted:
    """A result that notes the thread it is unpickled on."""

    threads: ClassVar[list[int]] = []

    def __reduce__(self) -> Any:
        return (_noted, ())


def _noted() -> _Noted:
    _Noted.threads.append(threading.get_ident())
    return _Noted()


class _Task:
    def run(self, work: BatchWork) -> _Noted:
        return _Noted()


def test_what_workers_send_back_is_read_on_the_runs_thread() -> None:
    async def run() -> list[Any]:
        pool = WorkerPool(2, BatchWork())
        try:
            return [r async for r in pool.evaluated(_Task() for _ in range(5))]
        finally:
            pool.close()

    _Noted.threads.clear()
    results = asyncio.run(run())
    assert len(results) == 5 and all(isinstance(r, _Noted) for r in results)
    # (pickled in the workers too; those notes are not this process's)
    assert _Noted.threads == [threading.get_ident()] * 5


def test_a_worker_lets_go_of_the_index_once_it_evaluates(tmp_path: Path) -> None:
    index = IdIndex.of([_part(random.Random(1), 0, 3)])
    folder = tmp_path / "index"
    folder.mkdir()
    index.save(folder)
    responses = tmp_path / "responses.jsonl"
    responses.write_bytes(b'{"question_id": "x"}\n')
    parallel.CheckResponses(str(responses), 0, 21, str(folder), "r").run(BatchWork())
    assert str(folder) in parallel._LOADED
    reference = tmp_path / "reference.jsonl"
    reference.write_bytes(b"")
    empty = array("q").tobytes()
    task = parallel.EvaluateRange(str(reference), 0, 0, 1, 0, 0, str(responses), empty, empty)
    task.run(BatchWork())
    assert not parallel._LOADED
