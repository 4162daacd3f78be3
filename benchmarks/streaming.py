"""How closely ``RESULTS.partial.jsonl`` follows the judge's work when a run is killed.

    python benchmarks/streaming.py                          # this checkout's qa-eval
    python benchmarks/streaming.py --src before=/other/src  # also another source tree

Each run is the ``qa-eval evaluate`` command in its own process (PYTHONPATH set to the source
tree), with answer correctness and answer relevance (two judge calls per question) against the
scripted server ``tests/openai_stub.py`` (a separate process, a fixed delay per call), killed with
SIGKILL after ``--kill-after`` seconds. Then: the questions in the partial file, and the judge
calls that had finished (the rows of the reply cache, which commits every reply as it arrives),
as questions' worth (calls / 2). A run that streams well writes about as many questions as its
finished calls are worth. Every number is measured when it runs; see benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson
import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from judge import Server, config, dataset  # noqa: E402
from qa_eval.cli import format_table  # noqa: E402


def killed_run(src: Path, url: str, n: int, concurrency: int, kill_after: float) -> list[str]:
    """One run of the command killed after ``kill_after`` seconds: the table row."""
    reference, responses = dataset(n)
    for response in responses:  # every prompt different: exactly two calls per question
        response["actual_answer"] += f" ({response['question_id']})"
    with tempfile.TemporaryDirectory(prefix="qa-eval-stream-") as tmp:
        folder = Path(tmp)
        (folder / "reference.json").write_bytes(orjson.dumps(reference))
        (folder / "responses.jsonl").write_bytes(
            b"".join(orjson.dumps(r) + b"\n" for r in responses)
        )
        (folder / "judge.yaml").write_text(yaml.safe_dump(config(url, concurrency)))
        cache = folder / "cache.sqlite3"
        command = [
            sys.executable,
            "-m",
            "qa_eval",
            "evaluate",
            str(folder / "reference.json"),
            str(folder / "responses.jsonl"),
            "-c",
            str(folder / "judge.yaml"),
            "-o",
            str(folder / "results.json"),
            "--cache",
            str(cache),
            "-q",
        ]
        env = {**os.environ, "PYTHONPATH": str(src)}
        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
        start = time.perf_counter()
        try:
            process.wait(timeout=kill_after)
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGKILL)
            process.wait()
        wall = time.perf_counter() - start
        partial = folder / "results.json.partial.jsonl"
        written = len(partial.read_bytes().splitlines()) if partial.exists() else 0
        calls = 0
        if cache.exists():
            with sqlite3.connect(cache) as db:
                calls = db.execute("SELECT COUNT(*) FROM replies").fetchone()[0]
        finished = process.returncode == 0
    worth = calls / 2
    return [
        str(src),
        f"{wall:.1f} s" + (" (finished)" if finished else " (killed)"),
        f"{calls:,}",
        f"{worth:,.0f}",
        f"{written:,}",
        f"{written / worth:.2f}" if worth else "-",
    ]


def main() -> None:
    """Run the killed evaluations and print the table."""
    parser = argparse.ArgumentParser(description="qa-eval partial-results streaming benchmark")
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.2, help="server delay per call (s)")
    parser.add_argument("--concurrency", type=int, default=16, help="llm.concurrency")
    parser.add_argument("--kill-after", type=float, default=6.0, help="seconds (SIGKILL)")
    parser.add_argument(
        "--src",
        action="append",
        metavar="PATH",
        help="a qa-eval source tree (the folder holding qa_eval) to run (repeatable; default: "
        "this checkout's src)",
    )
    args = parser.parse_args()
    sources = [Path(s).resolve() for s in args.src or [str(HERE.parent / "src")]]
    print(
        f"{args.questions:,} questions, answer correctness + relevance (2 calls each), latency "
        f"{args.latency:g} s, concurrency {args.concurrency}, SIGKILL after {args.kill_after:g} s\n"
    )
    rows = []
    for src in sources:
        with Server(args.latency, 0.0) as server:
            rows.append(
                killed_run(src, server.url, args.questions, args.concurrency, args.kill_after)
            )
    print(
        format_table(
            [
                "source",
                "wall",
                "judge calls finished",
                "questions' worth",
                "questions in partial file",
                "written / worth",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    main()
