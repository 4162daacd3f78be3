"""``evaluate``'s ``--workers`` default: one per usable core for a large JSON Lines run read as a
stream (two workers measured 2.05x one at 1M questions), 1 for everything else."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from qa_eval.cli.evaluation import system_pairs
from qa_eval.cli.parser import build_parser
from qa_eval.cli.spread import AUTO_WORKERS_BYTES, default_workers

CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def _workers(*argv: str) -> int:
    args = build_parser().parse_args(["evaluate", *argv])
    systems = system_pairs(args)
    return default_workers(args, systems[0][1] if len(systems) == 1 else None)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    large = tmp_path / "large.jsonl"
    with large.open("wb") as file:  # sparse: the size is what decides
        file.truncate(AUTO_WORKERS_BYTES)
    small = tmp_path / "small.jsonl"
    small.write_text('{"template_id": "t", "questions": []}\n')
    responses = tmp_path / "responses.jsonl"
    responses.write_text('{"question_id": "q", "actual_answer": "a"}\n')
    names = {"large": large, "small": small, "responses": responses}
    return {k: str(v) for k, v in names.items()} | {"out": str(tmp_path / "r.jsonl")}


def test_a_large_streamed_run_gets_a_worker_per_core(files: dict[str, str]) -> None:
    assert _workers(files["large"], files["responses"], "-o", files["out"]) == CORES


def test_given_workers_are_kept(files: dict[str, str]) -> None:
    assert _workers(files["large"], files["responses"], "-o", files["out"], "--workers", "1") == 1
    assert _workers(files["small"], files["responses"], "--workers", "3") == 3


@pytest.mark.parametrize(
    "change",
    ["small reference", "json output", "no output", "batch", "two systems", "gz responses"],
)
def test_everything_else_runs_in_one_process(
    files: dict[str, str], tmp_path: Path, change: str
) -> None:
    reference, responses, out = files["large"], files["responses"], files["out"]
    extra: list[str] = []
    if change == "small reference":
        reference = files["small"]
    elif change == "json output":
        out = str(tmp_path / "r.json")
    elif change == "batch":
        extra = ["--batch"]
    elif change == "gz responses":
        responses = str(tmp_path / "responses.jsonl.gz")
        Path(responses).write_bytes(b"")
    argv = [reference, responses, *extra]
    if change == "two systems":
        argv = [reference, "--system", f"a={responses}", "--system", f"b={responses}"]
    if change != "no output":
        argv += ["-o", out]
    assert _workers(*argv) == 1
