"""docs/scale.md's commands run as written: its ``--workers`` line and its shard-and-merge recipe
(four shards, then ``qa-eval merge``) on the power-grid demo give the results and aggregates that
one run in one process writes, byte for byte."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import shutil
from pathlib import Path

import pytest

from qa_eval.cli import main

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "scale.md"
DEMO = ROOT / "examples" / "powergrid"


def _commands() -> list[str]:
    """The ``qa-eval`` lines of the page's bash blocks, in order."""
    blocks = re.findall(r"```bash\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    return [line for block in blocks for line in block.splitlines() if line.startswith("qa-eval ")]


def _run(line: str) -> None:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(shlex.split(line)[1:])
    assert code == 0, f"{line}: {err.getvalue()}"


def test_the_page_s_commands_give_one_run_s_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    commands = _commands()
    workers = [c for c in commands if "--workers" in c]
    shards = [c for c in commands if "--shard $i/4" in c]
    merges = [c for c in commands if c.startswith("qa-eval merge")]
    assert len(workers) == len(shards) == len(merges) == 1
    # the page's input names, given the demo's files
    shutil.copy(DEMO / "reference.yaml", tmp_path / "reference.json")
    (tmp_path / "reference.json").write_text(
        __import__("json").dumps(__import__("yaml").safe_load(
            (DEMO / "reference.yaml").read_text(encoding="utf-8")
        )),
        encoding="utf-8",
    )  # fmt: skip
    shutil.copy(DEMO / "responses-good.jsonl", tmp_path / "responses.jsonl")
    monkeypatch.chdir(tmp_path)
    _run("qa-eval evaluate reference.json responses.jsonl -o one.jsonl --aggregates one-agg.json")

    _run(workers[0])
    for i in range(1, 5):
        _run(shards[0].replace("$i", str(i)))
    _run(merges[0].replace("shard-*.jsonl", " ".join(f"shard-{i}.jsonl" for i in range(1, 5))))

    one = (tmp_path / "one.jsonl").read_bytes()
    assert one and (tmp_path / "results.jsonl").read_bytes() == one
    whole = _aggregates(tmp_path / "one-agg.json")
    assert "spread" not in whole["signature"]
    for name, spread in (("aggregates.json", {"shards": 4}), ("agg.json", {"workers": 2})):
        spread_run = _aggregates(tmp_path / name)
        # the signature differs only where it records how the run was spread
        assert spread_run["signature"].pop("spread") == spread
        assert spread_run == whole, name


def _aggregates(path: Path) -> dict:
    """An aggregates file as data."""
    import json

    data: dict = json.loads(path.read_text(encoding="utf-8"))
    return data
