"""Time and peak memory of whole runs at 100k and 1M questions, JSON Lines in and out.

    python benchmarks/scale.py                                  # this checkout, 100k and 1M
    python benchmarks/scale.py --sizes 100000 --src before=/other/src --src after=src

Each run is a ``qa-eval`` command in its own process (PYTHONPATH set to the source tree), so its
peak resident memory is its own (``ru_maxrss`` from ``wait4``; with worker processes, the
largest of theirs too, from ``RUSAGE_CHILDREN``), and its CPU time counts its workers'. The
rows, side by side in one run: ``evaluate REFERENCE.json RESPONSES.jsonl -o RESULTS.jsonl
--aggregates AGGREGATES.json -q``, the same with ``--workers 2`` (its results and aggregates
compared byte for byte with the first), the run split in ``--shards`` shards (``--shard i/N``,
one after the other) put back together by ``qa-eval merge`` (compared likewise), and
``aggregate``, ``compare`` and ``report`` on the results (up to ``--report-max`` questions), and
"Ray local against one run" (up to ``--ray-max`` questions: ``scale_ray.py``, ``evaluate_dataset``
on a local ``ray.init(num_cpus=2)`` reading the responses with ``read_text``, its results and
aggregates compared likewise).
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
import filecmp
import importlib.util
import json
import os
import re
import resource
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


def generate_jsonl(folder: Path, n: int) -> Path:
    """Write the reference of :func:`generate` as JSON Lines, one template a line (the same
    questions; the responses file is the same)."""
    path = folder / f"reference-{n}.jsonl"
    if path.exists():
        return path
    with path.open("wb") as ref:
        for start in range(0, n, PER_TEMPLATE):
            items = [question(q)[0] for q in range(start, min(start + PER_TEMPLATE, n))]
            template = {"template_id": f"template-{start // PER_TEMPLATE}", "questions": items}
            ref.write(orjson.dumps(template) + b"\n")
    return path


def measured(
    command: list[str], src: Path, limit_gb: float, program: tuple[str, ...] = ("-m", "qa_eval")
) -> dict[str, Any]:
    """Run a command (of ``qa-eval``, or of another ``program`` run by this Python); its wall
    time, CPU time (its worker processes' included), peak RSS (MB: its own, and the largest of
    its workers') and exit code. A process whose resident memory passes ``limit_gb`` is killed
    (polled every 0.1 s; an address-space rlimit would not do: orjson crashes under one)."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, *program, *command],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    over = threading.Event()
    tree = [0]  # the largest resident memory of the process and its workers together, in kB
    own = [0.0]  # the process's own CPU seconds, its workers' apart (last read)

    def watch() -> None:
        ticks = os.sysconf("SC_CLK_TCK")
        while process.returncode is None:
            resident = rss_kb(process.pid)
            if resident is None:
                return
            try:
                fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
                own[0] = (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
            except (OSError, IndexError, ValueError):
                pass
            children = Path(f"/proc/{process.pid}/task/{process.pid}/children")
            try:
                pids = [int(p) for p in children.read_text().split()]
            except OSError:
                pids = []
            tree[0] = max(tree[0], resident + sum(rss_kb(p) or 0 for p in pids))
            if resident > limit_gb * 2**20:
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
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    process.returncode = os.waitstatus_to_exitcode(status)
    text = err.decode(errors="replace").strip().splitlines()
    error = text[-1] if process.returncode and text else ""
    if over.is_set():
        error = f"killed: over {limit_gb:g} GB"
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "wall": wall,
        "cpu": cpu,
        "own_cpu": own[0] or usage.ru_utime + usage.ru_stime,
        "rss": usage.ru_maxrss / 1024,
        "tree_rss": tree[0] / 1024,
        "code": process.returncode,
        "error": error,
    }


def rss_kb(pid: int) -> int | None:
    """A process's resident memory in kB (None once it is gone)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    match = re.search(r"VmRSS:\s+(\d+) kB", text)
    return int(match.group(1)) if match else 0


def size(path: Path) -> str:
    return f"{path.stat().st_size / 1e6:,.0f} MB" if path.exists() else "-"


def same(a: Path, b: Path) -> str:
    """Whether two files hold the same bytes (an aggregates file without its signature)."""
    if not (a.exists() and b.exists()):
        return "-"
    if a.suffix == ".json":
        left, right = orjson.loads(a.read_bytes()), orjson.loads(b.read_bytes())
        left.pop("signature", None), right.pop("signature", None)
        return "same bytes" if orjson.dumps(left) == orjson.dumps(right) else "DIFFERENT"
    return "same bytes" if filecmp.cmp(a, b, shallow=False) else "DIFFERENT"


class Table:
    """The rows measured, printed as they come and as one table at the end."""

    def __init__(self, src: Path, limit: float) -> None:
        self.src, self.limit = src, limit
        self.rows: list[list[Any]] = []

    def run(
        self, label: str, n: int, what: str, command: list[str], output: Path
    ) -> dict[str, Any]:
        """Measure one command and add its row."""
        done = measured(command, self.src, self.limit)
        self.add(label, n, what, done, size(output))
        return done

    def add(self, label: str, n: int, what: str, run: dict[str, Any], output: str) -> None:
        self.rows.append(row(label, n, what, run, output))
        print(self.rows[-1], flush=True)


def evaluate(reference: Path, responses: Path, out: Path, *extra: str) -> list[str]:
    """The evaluate command writing ``out`` (JSON Lines) and its aggregates beside it."""
    aggregates = out.with_suffix(".json")
    return [
        "evaluate", str(reference), str(responses), "-o", str(out), "--aggregates",
        str(aggregates), "-q", *extra,
    ]  # fmt: skip


def workers_row(
    table: Table,
    label: str,
    n: int,
    files: tuple[Path, Path],
    one: Path,
    spread: Path,
    workers: int,
    what: str,
) -> None:
    """The row of ``evaluate --workers N`` writing ``spread``, compared with ``one`` (one
    process's results and aggregates) byte for byte."""
    command = evaluate(*files, spread, "--workers", str(workers))
    table.run(label, n, f"{what} --workers {workers}", command, spread)
    table.rows[-1][-1] += (
        f" | {same(one, spread)}, {same(one.with_suffix('.json'), spread.with_suffix('.json'))}"
    )


def sized(table: Table, label: str, n: int, files: tuple[Path, Path], tmp: Path, args: Any) -> None:
    """Every row of one source tree at one size."""
    reference, responses = files
    one = tmp / f"one-{label}-{n}.jsonl"
    table.run(label, n, "evaluate, JSONL in and out", evaluate(reference, responses, one), one)
    if args.workers > 1:
        spread = tmp / f"workers-{label}-{n}.jsonl"
        workers_row(table, label, n, files, one, spread, args.workers, "evaluate")
    if args.shards > 1:
        shards = [tmp / f"shard{i}-{label}-{n}.jsonl" for i in range(1, args.shards + 1)]
        total = {"wall": 0.0, "cpu": 0.0, "own_cpu": 0.0, "rss": 0.0, "code": 0, "error": ""}
        for i, shard in enumerate(shards, start=1):
            command = evaluate(reference, responses, shard, "--shard", f"{i}/{args.shards}")
            done = measured(command, table.src, table.limit)
            for key in ("wall", "cpu", "own_cpu"):
                total[key] += done[key]
            total["rss"] = max(total["rss"], done["rss"])
            total["code"] = total["code"] or done["code"]
            total["error"] = total["error"] or done["error"]
        table.add(label, n, f"{args.shards} x evaluate --shard i/{args.shards}", total, "")
        merged = tmp / f"merged-{label}-{n}.jsonl"
        command = [
            "merge",
            *map(str, shards),
            "-o",
            str(merged),
            "--aggregates",
            str(merged.with_suffix(".json")),
        ]
        table.run(label, n, "merge the shards", command, merged)
        table.rows[-1][-1] += (
            f" | {same(one, merged)}, {same(one.with_suffix('.json'), merged.with_suffix('.json'))}"
        )
    if n <= args.ray_max:
        ray_row(table, label, n, files, one, args)
    if n <= args.report_max and one.exists():
        readers(table, label, n, one, tmp)
    for path in tmp.glob(f"*-{label}-{n}*"):
        path.unlink(missing_ok=True)


def ray_row(
    table: Table, label: str, n: int, files: tuple[Path, Path], one: Path, args: Any
) -> None:
    """The row "Ray local against one run": ``scale_ray.py`` (``evaluate_dataset`` on a local
    Ray reading the responses with ``read_text``) in its own process, its results and aggregates
    compared byte for byte with the one-process run's (``one``)."""
    out = one.with_name(f"ray-{label}-{n}.jsonl")
    timings = one.with_name(f"ray-{label}-{n}.timings.json")
    command = [
        *map(str, (*files, out, out.with_suffix(".json"))),
        "--timings", str(timings), "--cpus", str(args.ray_cpus),
    ]  # fmt: skip
    done = measured(command, table.src, table.limit, program=(str(HERE / "scale_ray.py"),))
    parts = json.loads(timings.read_text()) if timings.exists() else {}
    what = f"Ray local, {args.ray_cpus} CPUs, read_text"
    if parts:
        what += " (start {start:.1f} s, evaluate {evaluate:.1f} s, write {write:.1f} s)".format(
            **parts
        )
    table.add(label, n, what, done, size(out))
    table.rows[-1][-1] += (
        f" | {same(one, out)}, {same(one.with_suffix('.json'), out.with_suffix('.json'))}"
    )


def streamed_rows(table: Table, label: str, n: int, data: Path, tmp: Path, args: Any) -> None:
    """The rows of a JSON Lines reference (one template a line, the same questions), read as a
    stream: one process, and ``--workers`` (their results and aggregates compared byte for byte
    with one process's)."""
    reference, responses = generate_jsonl(data, n), data / f"responses-{n}.jsonl"
    one = tmp / f"jsonl-{label}-{n}.jsonl"
    command = evaluate(reference, responses, one, "--workers", "1")  # (the default: 1 a core)
    table.run(label, n, "evaluate, JSONL reference (streamed), --workers 1", command, one)
    if args.workers > 1:
        spread = tmp / f"jsonl-workers-{label}-{n}.jsonl"
        what = "evaluate, JSONL reference,"
        workers_row(table, label, n, (reference, responses), one, spread, args.workers, what)
    for path in tmp.glob(f"jsonl-*{label}-{n}*"):
        path.unlink(missing_ok=True)


def readers(table: Table, label: str, n: int, results: Path, tmp: Path) -> None:
    """The rows of the commands that read a results file: ``aggregate``, ``compare`` (the file
    with itself) and ``report`` (of the run, then of the run with itself: two runs, with the
    comparison and its per-template rows), each on JSON Lines (read a line at a time)."""
    aggregates = tmp / f"aggregate-{label}-{n}.json"
    command = ["aggregate", str(results), "-o", str(aggregates)]
    table.run(label, n, "aggregate RESULTS.jsonl", command, aggregates)
    command = ["compare", str(results), str(results)]
    table.run(label, n, "compare RESULTS RESULTS", command, tmp / "-")
    page = tmp / f"report-{label}-{n}.html"
    table.run(label, n, "report RESULTS.jsonl", ["report", str(results), "-o", str(page)], page)
    command = ["report", str(results), str(results), "-o", str(page)]
    table.run(label, n, "report RESULTS RESULTS", command, page)


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
    parser.add_argument("--workers", type=int, default=2, help="the --workers row (1: none)")
    parser.add_argument("--shards", type=int, default=2, help="the shard + merge rows (1: none)")
    parser.add_argument(
        "--report-max",
        type=int,
        default=1_000_000,
        help="run 'aggregate', 'compare' and 'report' on sizes up to this many questions "
        "(default 1,000,000)",
    )
    parser.add_argument(
        "--ray-max",
        type=int,
        default=100_000 if importlib.util.find_spec("ray") else 0,
        help="the row 'Ray local against one run' on sizes up to this many questions (default "
        "100,000 when Ray is installed, else none; 0: none)",
    )
    parser.add_argument("--ray-cpus", type=int, default=2, help="ray.init(num_cpus=...)")
    parser.add_argument(
        "--rows",
        default="json,jsonl",
        help="which rows: json (a JSON reference: evaluate, workers, shards, aggregate, "
        "compare, report), jsonl (a JSON Lines reference read as a stream, with workers)",
    )
    args = parser.parse_args()
    rows = set(args.rows.split(","))
    sources = []
    for item in args.src or [f"this=({HERE.parent / 'src'})"]:
        label, _, path = item.rpartition("=")
        sources.append((label or path, Path(path.strip("()")).resolve()))
    sizes = [int(s) for s in args.sizes.split(",")]
    tables: list[Table] = []
    with tempfile.TemporaryDirectory(prefix="qa-eval-scale-") as tmp:
        data = Path(args.data) if args.data else Path(tmp)
        data.mkdir(parents=True, exist_ok=True)
        for n in sizes:
            files = generate(data, n)
            print(
                f"{n:,} questions: reference {size(files[0])}, responses {size(files[1])}",
                flush=True,
            )
            for label, src in sources:
                table = Table(src, args.memory_limit)
                tables.append(table)
                if "json" in rows:
                    sized(table, label, n, files, Path(tmp), args)
                if "jsonl" in rows:
                    streamed_rows(table, label, n, data, Path(tmp), args)
    print()
    header = ["source", "questions", "command", "wall", "CPU", "peak RSS", "output", "exit"]
    print(format_table(header, [r for t in tables for r in t.rows]))


def row(label: str, n: int, command: str, run: dict[str, Any], output: str) -> list[Any]:
    exit_text = str(run["code"]) + (f" ({run['error'][:60]})" if run["error"] else "")
    peak = f"{run['rss']:,.0f} MB"
    if run.get("tree_rss", 0) > run["rss"] + 1:
        peak += f" (with workers {run['tree_rss']:,.0f} MB)"
    return [
        label,
        f"{n:,}",
        command,
        f"{run['wall']:,.1f} s",
        f"{run['cpu']:,.1f} s"
        + (
            f" ({run['own_cpu']:,.1f} s its own)"
            if run["cpu"] > run.get("own_cpu", 0) + 0.5
            else ""
        ),
        peak,
        output,
        exit_text,
    ]


if __name__ == "__main__":
    main()
