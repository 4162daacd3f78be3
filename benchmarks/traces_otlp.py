"""Memory and speed of the OTLP/JSON trace reader on large JSON Lines files, streamed.

    python benchmarks/traces_otlp.py                  # 10, 100 MB: about a minute
    python benchmarks/traces_otlp.py --sizes 10,100,300

Writes a file of agent traces (an agent span, two chat spans with GenAI messages and a tool span
per trace, one trace per line as the collector's file exporter writes them) of about the given
size, then reads it line by line with ``qa_eval.traces.otlp.read`` and prints, per size: traces,
seconds, MB/s and the peak memory traced by ``tracemalloc`` (Python allocations) during the read.
The peak staying flat as the file grows is the bound docs/traces.md describes (otlp-json, *Memory*).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests" / "traces"))

from otlp_files import request, span  # noqa: E402

from qa_eval.traces import otlp  # noqa: E402


def one_trace(number: int) -> dict[str, Any]:
    """One agent trace with a tool call, as an export request."""
    trace = f"{number:032x}"
    call = [
        {
            "role": "assistant",
            "parts": [
                {
                    "type": "tool_call",
                    "id": f"c{number}",
                    "name": "search",
                    "arguments": {"query": "x" * 200},
                }
            ],
        }
    ]
    question = [
        {"role": "user", "parts": [{"type": "text", "content": f"question {number} " + "y" * 400}]}
    ]
    answer = [{"role": "assistant", "parts": [{"type": "text", "content": "z" * 400}]}]
    chat = {
        "gen_ai.operation.name": "chat",
        "gen_ai.usage.input_tokens": 100,
        "gen_ai.usage.output_tokens": 10,
    }
    return request(
        span(
            "a" * 16,
            None,
            "agent",
            {"gen_ai.operation.name": "invoke_agent", "question_id": str(number)},
            0,
            9,
            trace=trace,
        ),
        span(
            "b" * 16,
            "a" * 16,
            "chat",
            {
                **chat,
                "gen_ai.input.messages": json.dumps(question),
                "gen_ai.output.messages": json.dumps(call),
            },
            1,
            2,
            trace=trace,
        ),
        span(
            "c" * 16,
            "a" * 16,
            "execute_tool search",
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "search",
                "gen_ai.tool.call.id": f"c{number}",
                "gen_ai.tool.call.result": "r" * 300,
            },
            3,
            4,
            trace=trace,
        ),
        span(
            "d" * 16,
            "a" * 16,
            "chat",
            {**chat, "gen_ai.output.messages": json.dumps(answer)},
            5,
            8,
            trace=trace,
        ),
    )


def write(path: Path, megabytes: int) -> int:
    """Write about ``megabytes`` MB of traces; return how many."""
    size, number = 0, 0
    with path.open("w", encoding="utf-8") as file:
        while size < megabytes * 1_000_000:
            line = json.dumps(one_trace(number)) + "\n"
            file.write(line)
            size += len(line)
            number += 1
    return number


def lines(path: Path) -> Iterator[Any]:
    """The file's records, one line at a time."""
    with path.open(encoding="utf-8") as file:
        for line in file:
            yield json.loads(line)


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,100", help="file sizes in MB, comma-separated")
    options = parser.parse_args()
    print(f"{'MB':>6} {'traces':>9} {'seconds':>8} {'MB/s':>6} {'peak MB':>8}")
    with tempfile.TemporaryDirectory() as folder:
        for megabytes in (int(s) for s in options.sizes.split(",")):
            path = Path(folder) / f"{megabytes}.jsonl"
            count = write(path, megabytes)
            tracemalloc.start()
            began = time.perf_counter()
            read = sum(1 for trace in otlp.read(lines(path), str(path)) if trace.calls)
            seconds = time.perf_counter() - began
            peak = tracemalloc.get_traced_memory()[1] / 1e6
            tracemalloc.stop()
            assert read == count, (read, count)
            rate = megabytes / seconds
            print(f"{megabytes:>6} {count:>9} {seconds:>8.1f} {rate:>6.1f} {peak:>8.1f}")
            path.unlink()


if __name__ == "__main__":
    main()
