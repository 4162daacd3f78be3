"""Time and peak memory of whole runs at 100k and 1M questions, JSON Lines in and out.

    python benchmarks/scale.py                                  # this checkout, 100k and 1M
    python benchmarks/scale.py --sizes 100000 --src before=/other/src --src after=src

Each run is a ``qa-eval`` command in its own process (PYTHONPATH set to the source tree), so its
peak resident memory is its own (``ru_maxrss`` from ``wait4``): ``evaluate REFERENCE.json
RESPONSES.jsonl -o RESULTS.jsonl --aggregates AGGREGATES.json -q``, and ``report RESULTS.jsonl``
(up to ``--report-max`` questions).
The data is generated here, into a temporary folder, written as it is made (this process stays
small): per question, a reference with a SPARQL step (3 rows) and a reference answer, and a
response with an answer, the same SPARQL step (one question in five with a wrong row, one in
twenty an error response) and a retrieval step; the responses file is in reference order except
that every 1,000 lines are reversed. No judge: the deterministic part of a run, which is what
grows with the number of questions. A process whose resident memory passes ``--memory-limit`` GB
is killed (reported as such) instead of taking the machine's memory. Every number is measured
when it runs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from qa_eval.cli import format_table  # noqa: E402

XSD = "http://www.w3.org/2001/XMLSchema#"
PER_TEMPLATE = 50


def sparql(rows: list[tuple[str, int]]) -> str:
    bindings = [
        {
            "s": {"type": "uri", "value": f"urn:x:{name}"},
            "n": {"type": "literal", "datatype": XSD + "integer", "value": str(value)},
        }
        for name, value in rows
    ]
    return json.dumps({"head": {"vars": ["s", "n"]}, "results": {"bindings": bindings}})


def question(q: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The reference question and the response of question number ``q``."""
    qid = f"q{q}"
    rows = [(f"{qid}-{i}", q % 97 + i) for i in range(3)]
    query = f"SELECT ?s ?n WHERE {{ ?s :feeds :{qid} ; :count ?n }}"
    reference = {
        "id": qid,
        "question_text": f"Which lines feed substation {qid}, with their counts?",
        "reference_answer": f"{qid}-0, {qid}-1 and {qid}-2",
        "question_type": ("lookup", "count", "list")[q % 3],
        "reference_steps": [
            [
                {
                    "name": "sparql_query",
                    "args": {"query": query},
                    "output": sparql(rows),
                    "output_media_type": "application/sparql-results+json",
                    "required_columns": ["s", "n"],
                }
            ]
        ],
    }
    if q % 20 == 7:
        return reference, {"question_id": qid, "status": "error", "error": "timeout"}
    actual_rows = rows if q % 5 else [*rows[:2], (f"{qid}-x", 0)]
    response = {
        "question_id": qid,
        "actual_answer": f"The lines are {qid}-0, {qid}-1 and {qid}-2.",
        "actual_steps": [
            {
                "name": "sparql_query",
                "id": "call-1",
                "status": "success",
                "args": {"query": query},
                "output": sparql(actual_rows),
            },
            {
                "name": "retrieval",
                "id": "call-2",
                "status": "success",
                "args": {"query": qid, "k": 2},
                "output": json.dumps(
                    [{"id": f"doc-{q}", "text": f"Substation {qid} is fed by three lines."}]
                ),
            },
        ],
        "input_tokens": 900 + q % 50,
        "output_tokens": 120,
        "total_tokens": 1020 + q % 50,
        "elapsed_sec": 1.5,
    }
    return reference, response


def generate(folder: Path, n: int) -> tuple[Path, Path]:
    """Write REFERENCE.json and RESPONSES.jsonl for ``n`` questions, a template at a time."""
    reference, responses = folder / f"reference-{n}.json", folder / f"responses-{n}.jsonl"
    if reference.exists() and responses.exists():
        return reference, responses
    with reference.open("wb") as ref, responses.open("wb") as out:
        ref.write(b"[")
        block: list[bytes] = []
        for start in range(0, n, PER_TEMPLATE):
            items = []
            for q in range(start, min(start + PER_TEMPLATE, n)):
                item, response = question(q)
                items.append(item)
                block.append(orjson.dumps(response))
                if len(block) == 1000:
                    out.write(b"\n".join(reversed(block)) + b"\n")
                    block = []
            template = {"template_id": f"template-{start // PER_TEMPLATE}", "questions": items}
            ref.write((b"," if start else b"") + orjson.dumps(template))
        if block:
            out.write(b"\n".join(reversed(block)) + b"\n")
        ref.write(b"]")
    return reference, responses


def measured(command: list[str], src: Path, limit_gb: float) -> dict[str, Any]:
    """Run a command; its wall time, peak RSS (MB) and exit code. A process whose resident
    memory passes ``limit_gb`` is killed (polled every 0.1 s; an address-space rlimit would
    not do: orjson crashes under one)."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "qa_eval", *command],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    over = threading.Event()

    def watch() -> None:
        status = Path(f"/proc/{process.pid}/status")
        while process.returncode is None:
            try:
                text = status.read_text()
            except OSError:
                return
            match = re.search(r"VmRSS:\s+(\d+) kB", text)
            if match and int(match.group(1)) > limit_gb * 2**20:
                over.set()
                process.kill()
                return
            time.sleep(0.1)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    assert process.stderr is not None
    err = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    text = err.decode(errors="replace").strip().splitlines()
    error = text[-1] if process.returncode and text else ""
    if over.is_set():
        error = f"killed: over {limit_gb:g} GB"
    return {"wall": wall, "rss": usage.ru_maxrss / 1024, "code": process.returncode, "error": error}


def size(path: Path) -> str:
    return f"{path.stat().st_size / 1e6:,.0f} MB" if path.exists() else "-"


def main() -> None:
    """Generate the data, run each source tree on each size, print the table."""
    parser = argparse.ArgumentParser(description="qa-eval scale benchmark")
    parser.add_argument("--sizes", default="100000,1000000", help="comma-separated questions")
    parser.add_argument(
        "--src",
        action="append",
        metavar="LABEL=PATH",
        help="a qa-eval source tree (the folder holding qa_eval) to run, with a label "
        "(repeatable; default: this checkout's src)",
    )
    parser.add_argument("--memory-limit", type=float, default=12.0, help="GB per process")
    parser.add_argument("--data", help="keep the generated data in this folder (reused)")
    parser.add_argument(
        "--report-max",
        type=int,
        default=100_000,
        help="run 'report' on sizes up to this many questions (default 100,000: the report "
        "reads every result into memory)",
    )
    args = parser.parse_args()
    sources = []
    for item in args.src or [f"this=({HERE.parent / 'src'})"]:
        label, _, path = item.rpartition("=")
        sources.append((label or path, Path(path.strip("()")).resolve()))
    sizes = [int(s) for s in args.sizes.split(",")]
    rows: list[list[Any]] = []
    with tempfile.TemporaryDirectory(prefix="qa-eval-scale-") as tmp:
        data = Path(args.data) if args.data else Path(tmp)
        data.mkdir(parents=True, exist_ok=True)
        for n in sizes:
            reference, responses = generate(data, n)
            print(
                f"{n:,} questions: reference {size(reference)}, responses {size(responses)}",
                flush=True,
            )
            for label, src in sources:
                out = Path(tmp) / f"results-{label}-{n}.jsonl"
                run = measured(
                    [
                        "evaluate",
                        str(reference),
                        str(responses),
                        "-o",
                        str(out),
                        "--aggregates",
                        str(Path(tmp) / f"aggregates-{label}-{n}.json"),
                        "-q",
                    ],
                    src,
                    args.memory_limit,
                )
                rows.append(row(label, n, "evaluate, JSONL in and out", run, size(out)))
                print(rows[-1], flush=True)
                if n <= args.report_max and out.exists():
                    page = Path(tmp) / f"report-{label}-{n}.html"
                    report = measured(["report", str(out), "-o", str(page)], src, args.memory_limit)
                    rows.append(row(label, n, "report RESULTS.jsonl", report, size(page)))
                    print(rows[-1], flush=True)
                    page.unlink(missing_ok=True)
                out.unlink(missing_ok=True)
    print()
    print(
        format_table(["source", "questions", "command", "wall", "peak RSS", "output", "exit"], rows)
    )


def row(label: str, n: int, command: str, run: dict[str, Any], output: str) -> list[Any]:
    exit_text = str(run["code"]) + (f" ({run['error'][:60]})" if run["error"] else "")
    return [
        label,
        f"{n:,}",
        command,
        f"{run['wall']:,.1f} s",
        f"{run['rss']:,.0f} MB",
        output,
        exit_text,
    ]


if __name__ == "__main__":
    main()
