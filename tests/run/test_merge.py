"""Shards and their merge: which shard a question is in, and every refusal of ``qa-eval merge``
(one line naming the files, exit code 2, nothing written)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from qa_eval.aggregate.compute import AggregateSpec
from qa_eval.aggregate.portable import from_data
from qa_eval.cli import main
from qa_eval.errors import QaEvalError
from qa_eval.run.files import evaluate_files
from qa_eval.run.options import RunOptions
from qa_eval.run.shards import parse_shard, shard_of


def _data(folder: Path, n: int = 40, offset: int = 0) -> tuple[Path, Path]:
    reference = [
        {
            "template_id": f"t{t}",
            "questions": [
                {
                    "id": f"q{t}-{q}",
                    "question_text": "Which?",
                    "question_type": ("a", "b")[q % 2],
                    "reference_steps": [
                        [{"name": "search", "args": {"q": f"{t}-{q + offset}"}, "output": "x"}]
                    ],
                }
                for q in range(10)
            ],
        }
        for t in range(n // 10)
    ]
    responses = [
        {
            "question_id": q["id"],
            "actual_answer": "x",
            "actual_steps": [{"name": "search", "args": {"q": q["id"][1:]}, "output": "x"}],
            "input_tokens": len(q["id"]),
        }
        for t in reference
        for q in t["questions"]
    ]
    ref, resp = folder / f"reference{offset}.json", folder / "responses.jsonl"
    ref.write_bytes(orjson.dumps(reference))
    resp.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in responses))
    return ref, resp


def _shards(folder: Path, count: int, **options: Any) -> list[str]:
    ref, resp = options.pop("files", None) or _data(folder)
    name = options.pop("name", "shard")
    paths = []
    for index in range(1, count + 1):
        out = folder / f"{name}{index}.jsonl"
        shard = options.pop("shard", None) or f"{index}/{count}"
        evaluate_files(ref, resp, output=out, no_judge=True, cache=False, shard=shard, **options)
        paths.append(str(out))
    return paths


def _merge(capsys: pytest.CaptureFixture[str], folder: Path, *shards: str) -> tuple[int, str]:
    code = main(["merge", *shards, "-o", str(folder / "merged.jsonl")])
    return code, capsys.readouterr().err


def test_a_question_is_in_one_shard_by_its_id() -> None:
    assert parse_shard("2/5") == (2, 5)
    for bad in ("0/2", "3/2", "x", "1", "1/0", "-1/2"):
        with pytest.raises(QaEvalError, match="i/N"):
            parse_shard(bad)
    ids = [f"q{i}" for i in range(2000)]
    counts = [sum(shard_of(q, 4) == s for q in ids) for s in (1, 2, 3, 4)]
    assert sum(counts) == 2000 and min(counts) > 400  # about a quarter each
    assert shard_of("7", 4) != shard_of(7, 4) or shard_of("8", 4) != shard_of(8, 4)
    # pinned: a shard must not move between versions (shards of two versions would not merge)
    assert [shard_of(f"q{i}", 3) for i in range(8)] == [2, 2, 2, 1, 1, 2, 3, 2]
    with pytest.raises(QaEvalError, match="workers"):
        RunOptions(workers=0)


def test_merge_refuses_shards_that_are_not_one_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = _shards(tmp_path, 2)
    (three,) = _shards(tmp_path, 1, shard="1/3", name="three")
    other_ref = _data(tmp_path, offset=1)
    (other,) = _shards(tmp_path, 1, files=other_ref, shard="2/2", name="other")
    (config,) = _shards(tmp_path, 1, shard="2/2", name="config", disable=["trajectory"])
    refusals = {
        (a,): "shard 2/2 is missing",
        (a, a, b): "are both shard 1/2",
        (a, three): "different numbers of shards",
        (a, other): "shards of different references",
        (a, config): "different metric sets",
    }
    for shards, message in refusals.items():
        code, err = _merge(capsys, tmp_path, *shards)
        assert code == 2 and message in err and err.count("\n") == 1, (shards, err)
        assert not (tmp_path / "merged.jsonl").exists()
    # a question in two shards: shard 1's file given as shard 2
    twin = tmp_path / "twin.jsonl"
    shutil.copy(a, twin)
    shutil.copy(tmp_path / "shard1.signature.yaml", tmp_path / "twin.signature.yaml")
    data = json.loads((tmp_path / "shard1.shard.json").read_text())
    data["shard"] = [2, 2]
    (tmp_path / "twin.shard.json").write_text(json.dumps(data))
    code, err = _merge(capsys, tmp_path, a, str(twin))
    assert code == 2 and "both have the question" in err
    # a results file changed since its shard file
    Path(b).write_bytes(Path(b).read_bytes() + Path(b).read_bytes().splitlines(True)[0])
    code, err = _merge(capsys, tmp_path, a, b)
    assert code == 2 and "the file was changed" in err
    assert not (tmp_path / "merged.jsonl").exists()
    # not a shard's results at all
    code, err = _merge(capsys, tmp_path, a, str(tmp_path / "reference0.json"))
    assert code == 2 and "reference0.json" in err


def test_a_shard_writes_json_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ref, resp = _data(tmp_path)
    code = main(
        ["evaluate", str(ref), str(resp), "--shard", "1/2", "-o", str(tmp_path / "r.json"), "-q"]
    )
    assert code == 2 and "--shard" in capsys.readouterr().err
    code = main(
        ["evaluate", str(ref), str(resp), "--shard", "3/2", "-o", str(tmp_path / "r.jsonl")]
    )
    assert code == 2 and "i/N" in capsys.readouterr().err
    assert not list(tmp_path.glob("r.*"))


def test_a_shard_file_that_is_not_one_is_refused() -> None:
    spec = AggregateSpec.of()
    for bad in ({}, {"format": "x"}, {"format": "qa-eval partial aggregates 1", "results": "1"}):
        with pytest.raises(ValueError, match="not partial aggregates"):
            from_data(bad, spec)


def test_aggregate_reads_json_lines_as_a_stream(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``qa-eval aggregate RESULTS.jsonl`` aggregates line by line: the same aggregates as the
    file read whole, and the same refusals (another kind of file, a bad result, a --by key no
    result has), in that order."""
    from qa_eval import compute_aggregates
    from qa_eval.io.files import read_results

    ref, resp = _data(tmp_path)
    out = tmp_path / "results.jsonl"
    evaluate_files(ref, resp, output=out, no_judge=True, cache=False)
    assert main(["aggregate", str(out), "-o", str(tmp_path / "a.json")]) == 0
    expected = compute_aggregates(read_results(out))
    assert (tmp_path / "a.json").read_bytes() == orjson.dumps(
        expected, option=orjson.OPT_INDENT_2
    ) + b"\n"
    lines = out.read_bytes().splitlines(keepends=True)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"".join(lines[:3]) + b'{"question_id": [1], "answer_f1": 1}\n')
    assert main(["aggregate", str(bad)]) == 2
    assert "line 4" in capsys.readouterr().err
    assert main(["aggregate", str(resp)]) == 2
    assert "looks like responses" in capsys.readouterr().err
    assert main(["aggregate", str(out), "--by", "nothing"]) == 2
    assert "--by nothing: no result has a value" in capsys.readouterr().err
