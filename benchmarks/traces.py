"""Memory and speed of ``qa-eval import`` on large trace files (JSON Lines, streamed).

    python benchmarks/traces.py               # 10 MB and 100 MB of chat traces: about a minute
    python benchmarks/traces.py --mb 10 300   # other sizes

Each size is a generated JSON Lines file of Chat Completions traces (a question, three tool calls
with JSON arguments, their replies, an answer; about 2 KB each), imported by the command in its own
process (PYTHONPATH set to this checkout). Columns: the file's size, the traces, the seconds, MB
per second, and the process's peak resident memory, beside the peak of a process that only
imports the command line (the floor). Streaming keeps the peak flat as the file grows. Each row
checks its own output first: one response per trace, each with its three steps. Every number is
measured when it runs; see benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
sys.path.insert(0, str(SRC))

from qa_eval.cli import format_table  # noqa: E402

_PEAK = (
    "import resource, sys, runpy\n"
    "sys.argv = ['qa-eval', *sys.argv[1:]]\n"
    "code = 0\n"
    "if len(sys.argv) > 1:\n"
    "    from qa_eval.cli import main\n"
    "    code = main(sys.argv[1:])\n"
    "else:\n"
    "    import qa_eval.cli  # the floor\n"
    "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def trace(n: int) -> dict[str, object]:
    """One generated chat trace (about 2 KB)."""
    messages: list[dict[str, object]] = [
        {"role": "system", "content": "You answer questions with the tools. " * 4},
        {"role": "user", "content": f"Question {n}: what is the population of city {n}?"},
    ]
    for i in range(3):
        call_id = f"call_{n}_{i}"
        arguments = json.dumps({"city": f"city {n}", "year": 2000 + i, "fields": ["a", "b"]})
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": f"tool_{i}", "arguments": arguments},
                    }
                ],
            }
        )
        messages.append(
            {"role": "tool", "tool_call_id": call_id, "content": f"result {i} " + "x" * 300}
        )
    messages.append({"role": "assistant", "content": f"City {n} has {n * 7} people."})
    return {
        "question_id": f"q{n}",
        "usage": {"prompt_tokens": 500, "completion_tokens": 50},
        "messages": messages,
    }


def generate(path: Path, megabytes: float) -> int:
    """Write about ``megabytes`` of traces; the number written."""
    limit = int(megabytes * 1_000_000)
    size = n = 0
    with path.open("w", encoding="utf-8") as file:
        while size < limit:
            line = json.dumps(trace(n)) + "\n"
            file.write(line)
            size += len(line.encode("utf-8"))
            n += 1
    return n


def peak(args: list[str]) -> tuple[float, int, str]:
    """(seconds, peak RSS in KB, stdout) of the command in its own process."""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _PEAK, *args], capture_output=True, text=True, env=env, check=False
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"qa-eval {' '.join(args)} failed: {done.stderr.strip()}")
    return elapsed, int(done.stderr.strip().splitlines()[-1]), done.stdout


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, nargs="+", default=[10, 100])
    options = parser.parse_args()
    _, floor, _ = peak([])
    rows = []
    with tempfile.TemporaryDirectory(prefix="qa-eval-traces-") as tmp:
        folder = Path(tmp)
        for megabytes in options.mb:
            traces = folder / f"traces-{megabytes:g}.jsonl"
            count = generate(traces, megabytes)
            out = folder / f"responses-{megabytes:g}.jsonl"
            seconds, rss, _ = peak(["import", str(traces), "-o", str(out)])
            with out.open(encoding="utf-8") as file:  # the row checks its own output
                written = 0
                for line in file:
                    assert len(json.loads(line)["actual_steps"]) == 3
                    written += 1
            assert written == count, (written, count)
            size = traces.stat().st_size / 1e6
            rows.append(
                [
                    f"{size:.0f} MB",
                    f"{count:,}",
                    f"{seconds:.1f}",
                    f"{size / seconds:.1f}",
                    f"{rss / 1024:.0f} MB",
                    f"{floor / 1024:.0f} MB",
                ]
            )
            traces.unlink()
            out.unlink()
    print(format_table(["file", "traces", "seconds", "MB/s", "peak RSS", "floor RSS"], rows))


if __name__ == "__main__":
    main()
