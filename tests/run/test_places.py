"""The compact record of a streamed run (``run.places``, ``run.reflines.IdIndex``): responses'
places kept in sorted runs on disk, digests sorted a run at a time, ids as hashes. With runs of
a few rows (every path spilled), responses in reference order, in reversed blocks, shuffled,
missing, repeated, unknown and in trials give the bytes and the refusals of the reference read
whole; so do ids whose hashes clash."""

from __future__ import annotations

import gzip
import random
import subprocess
import sys
import warnings
from collections import defaultdict
from hashlib import blake2b
from pathlib import Path
from typing import Any

import orjson
import pytest
from test_spread import _files as files_of
from test_spread import _run as run_files

import qa_eval.run.places as places_module
import qa_eval.run.reflines as reflines
from qa_eval.errors import InputError
from qa_eval.run.places import ResponsePlaces
from qa_eval.run.signature import digests_fingerprint, question_digest


def _lines(records: list[Any]) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


@pytest.fixture
def small_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs of 4 responses and of 3 digests: the temporary files are used at once."""
    monkeypatch.setattr(places_module, "RUN", 4)
    monkeypatch.setattr(places_module, "_HELD", 8)
    monkeypatch.setattr(places_module, "DIGEST_RUN", 3 * 32)


@pytest.mark.usefixtures("small_runs")
def test_places_come_back_by_place_in_file_order() -> None:
    rng = random.Random(7)
    for count in (0, 1, 5, 40):
        rows = [(rng.randrange(count), i * 10, i + 1) for i in range(3 * count)] if count else []
        places = ResponsePlaces(count)
        for row in rows:
            places.add(*row)
        places.finish()
        expected: dict[int, list[tuple[int, int]]] = defaultdict(list)
        for place, offset, number in rows:
            expected[place].append((offset, number))
        assert [places.take(p) for p in range(count)] == [expected[p] for p in range(count)]
        assert places.extra() == len(rows) - len({row[0] for row in rows})
        chosen = sorted(rng.sample(range(count), count // 2))
        assert places.extra(chosen) == sum(max(0, len(expected[p]) - 1) for p in chosen)
        again = ResponsePlaces(count)
        for row in rows:
            again.add(*row)
        again.finish()
        assert [again.take(p) for p in chosen] == [expected[p] for p in chosen]  # skips others
        places.close()
        again.close()


@pytest.mark.usefixtures("small_runs")
def test_digests_sorted_in_runs_give_the_fingerprint() -> None:
    digests = [question_digest("t", {"id": i}) for i in range(11)]
    runs = places_module.DigestRuns()
    buffer = bytearray()
    for digest in digests:
        buffer += digest
        buffer = runs.keep(buffer)
    assert len(runs.spans) == 3
    checked = reflines.Checked("x", digests=buffer, runs=runs)
    assert checked.fingerprint() == digests_fingerprint(b"".join(digests))


def _reference(count: int) -> list[dict[str, Any]]:
    questions = [
        {"id": f"q{i}" if i % 3 else i, "question_text": f"q {i}?", "reference_answer": f"a{i}"}
        for i in range(count)
    ]
    return [
        {"template_id": f"t{i // 4}", "questions": questions[i : i + 4]} for i in range(0, count, 4)
    ]


def _answers(reference: list[dict[str, Any]]) -> list[dict[str, Any]]:
    ids = [q["id"] for t in reference for q in t["questions"]]
    return [{"question_id": qid, "actual_answer": f"a{qid}" if k % 4 else "x"} for k, qid in
            enumerate(ids)]  # fmt: skip


def _orders(answers: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Responses in reference order, reversed in blocks, shuffled, some missing and unknown, in
    trials."""
    shuffled = answers[:]
    random.Random(3).shuffle(shuffled)
    blocks = [r for k in range(0, len(answers), 7) for r in reversed(answers[k : k + 7])]
    trials = [{**r, "trial": t} for t in (1, 2) for r in answers[::2]]
    unknown = {"question_id": "nowhere", "actual_answer": "x"}
    return {
        "in-order": answers,
        "blocks": blocks,
        "shuffled": shuffled,
        "missing-unknown": [*shuffled[4:], unknown, *shuffled[:1]],
        "trials": trials,
    }


def _compare_forms(
    tmp_path: Path, reference: list[dict[str, Any]], shards: bool = True
) -> tuple[Path, Path]:
    """Each order of responses run over the reference whole and in JSON Lines (and a shard of
    each): the same bytes. Returns the two reference files."""
    whole, lines = tmp_path / "ref.json", tmp_path / "ref.jsonl"
    whole.write_bytes(orjson.dumps(reference))
    lines.write_bytes(_lines(reference))
    for name, rows in _orders(_answers(reference)).items():
        responses = tmp_path / f"{name}.jsonl"
        responses.write_bytes(_lines(rows))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (the unknown response's warning)
            run_files(whole, responses, tmp_path, f"{name}-whole")
            run_files(lines, responses, tmp_path, f"{name}-lines")
            if shards:
                run_files(lines, responses, tmp_path, f"{name}-shard", shard=(2, 3))
                run_files(whole, responses, tmp_path, f"{name}-whole-shard", shard=(2, 3))
        assert files_of(tmp_path, f"{name}-lines") == files_of(tmp_path, f"{name}-whole"), name
        if shards:
            shard, whole_shard = (
                files_of(tmp_path, f"{name}-{s}") for s in ("shard", "whole-shard")
            )
            assert shard == whole_shard, name
    return whole, lines


@pytest.mark.usefixtures("small_runs")
def test_spilled_runs_give_the_bytes_of_the_whole(tmp_path: Path) -> None:
    _compare_forms(tmp_path, _reference(37))


def _weak(key: bytes) -> int:
    """A hash with 4 values: ids clash all the time."""
    return int.from_bytes(blake2b(key, digest_size=8).digest(), "big") % 4


@pytest.mark.usefixtures("small_runs")
def test_ids_whose_hashes_clash_are_joined_by_their_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reflines, "key_hash", _weak)
    reference = _reference(21)
    whole, lines = _compare_forms(tmp_path, reference, shards=False)  # (shards hash apart)
    reference[2]["questions"][1]["id"] = "q1"  # one id twice: named as the whole names it
    lines.write_bytes(_lines(reference))
    whole.write_bytes(orjson.dumps(reference))
    errors = []
    for path in (lines, whole):
        with pytest.raises(InputError) as error:
            run_files(path, tmp_path / "in-order.jsonl", tmp_path, "dup")
        errors.append(getattr(error.value, "problems", None))
    assert errors[0] == [
        f"{lines}: line 3 template 't2' question 'q1': id: duplicate question id (also in line "
        "1 template 't0')"
    ]
    assert errors[1] is not None and len(errors[1]) == 1


REFUSED = [
    ([{"question_id": "q1", "actual_answer": "a"}] * 2,
     "line 2 (question_id 'q1'): question_id: duplicate response (also line 1 "),
    ([{"question_id": "q1"}, {"question_id": 9, "actual_answer": "b"}, {"question_id": "q1"}],
     "line 3 (question_id 'q1'): question_id: duplicate response (also line 1 "),
    ([{"question_id": "q2", "trial": 1}, {"question_id": "q2"}],
     "line 2 (question_id 'q2'): trial: missing here but given in another response"),
    ([{"question_id": "q2", "trial": 1}, {"question_id": "q2", "trial": 1}],
     "line 2 (question_id 'q2'): trial: duplicate trial 1 (also line 1 "),
    ([{"question_id": "q2", "status": "x"}, {"question_id": "q2"}],
     "line 1 (question_id 'q2'): status: must be 'success' or 'error', got 'x'"),
]  # fmt: skip


@pytest.mark.parametrize(("rows", "message"), REFUSED)
def test_refusals_through_the_cli_are_those_of_the_whole(
    rows: list[dict[str, Any]], message: str, tmp_path: Path
) -> None:
    reference = _reference(8)
    (tmp_path / "ref.jsonl").write_bytes(_lines(reference))
    (tmp_path / "ref.json").write_bytes(orjson.dumps(reference))
    (tmp_path / "responses.jsonl").write_bytes(_lines(rows))
    (tmp_path / "responses.jsonl.gz").write_bytes(gzip.compress(_lines(rows)))
    errors = []
    for ref, answers in [("ref.jsonl", "responses.jsonl.gz"), ("ref.jsonl", "responses.jsonl"),
                         ("ref.json", "responses.jsonl")]:  # fmt: skip
        run = subprocess.run(
            [sys.executable, "-m", "qa_eval", "evaluate", ref, answers, "-o",
             "out.jsonl", "--no-judge", "--no-cache", "-q"],
            cwd=tmp_path, capture_output=True, text=True,
        )  # fmt: skip
        assert run.returncode == 2, run.stderr
        assert "Traceback" not in run.stderr
        assert not list(tmp_path.glob("out.jsonl*"))
        errors.append(run.stderr)
    assert errors[0] == errors[1].replace("responses.jsonl", "responses.jsonl.gz")
    assert errors[1] == errors[2]
    assert f"qa-eval: error: responses.jsonl: {message}" in errors[1]


@pytest.mark.parametrize("seed", range(10))
def test_rows_added_at_once_and_taken_by_range_give_the_arrays(small_runs: None, seed: int) -> None:
    """What the workers' check gives (``add_rows``, a range of the file at a time) and the
    evaluating ranges take (``StreamedResponses.range_spots``, increasing places) are each
    question's responses in file order: the arrays by place that the run used to hold."""
    from array import array

    import numpy as np

    from qa_eval.run.stream import StreamedResponses

    rng = random.Random(seed)
    count = rng.randrange(1, 40)
    rows = [(rng.randrange(count), 100 * n, n + 1) for n in range(rng.randrange(0, 150))]
    places = ResponsePlaces(count)
    at = 0
    while at < len(rows):
        part = rows[at : at + rng.randrange(1, 9 if seed % 2 else 50)]  # (runs past a block)
        columns = np.array(part, dtype=np.int64).reshape(-1, 3)
        places.add_rows(columns[:, 0], columns[:, 1], columns[:, 2])
        at += len(part)
    places.finish()
    by_place: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for place, offset, number in rows:
        by_place[place].append((offset, number))
    offsets, numbers = array("q", [-1]) * count, array("q", [0]) * count
    more = {}
    for place, spots in by_place.items():
        offsets[place], numbers[place] = spots[0]
        if len(spots) > 1:
            more[place] = spots[1:]
    streamed = StreamedResponses(None, "r", places)  # type: ignore[arg-type]
    assert streamed.count() == count + len(rows) - len(by_place)
    first = 0
    while first < count:
        size = min(rng.randrange(1, 7), count - first)
        want = (
            offsets[first : first + size].tobytes(),
            numbers[first : first + size].tobytes(),
            {p: v for p, v in more.items() if first <= p < first + size},
        )
        assert streamed.range_spots(first, size) == want
        first += size
    places.close()
