"""Trajectory metrics benchmark: one command, one table.

    python benchmarks/trajectory.py            # 10,000 questions, and the curve at 5-40 calls
    python benchmarks/trajectory.py --quick    # 1,000 questions

Rows: the time to score N questions of 10 reference and 12 actual calls (``unordered`` matching,
``superset`` arguments: every call's arguments compared with every same-name actual call's)
against the time to parse the same responses' JSON with the standard library (the floor, as for
steps; target: at most 4x), then the scoring time per question at 5, 10, 20 and 40 reference
calls (actual calls 1.2x), all of one tool name (the worst case: every pair compared, one
assignment problem of n x 1.2n) and of five names. Every number is measured when it runs; each
row checks its own result first (a fast wrong answer cannot pass for a fast right one).
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from qa_eval.cli import format_table
from qa_eval.steps.trajectory.match import evaluate_trajectory
from qa_eval.steps.trajectory.reference import parse_reference
from run import timed  # the median-of-repeats timer, shared with benchmarks/run.py

TOOLS = ["search_flights", "get_weather", "book", "lookup_user", "send_email"]


def question(rng: random.Random, n: int, tools: list[str]) -> tuple[dict, dict]:
    """A reference trajectory of ``n`` calls and a response of 1.2n calls: the reference's
    calls shuffled, with extra arguments, one value wrong, and extra calls."""
    calls = []
    for i in range(n):
        args = {
            "id": i,
            "city": rng.choice(["Oslo", "Bergen", "Trondheim"]),
            "day": f"2026-12-{i % 28 + 1:02d}",
        }
        calls.append({"name": tools[i % len(tools)], "args": args})
    steps = []
    for call in calls:
        args = {**call["args"], "trace": rng.randrange(10**6), "lang": "en"}
        output = json.dumps({"rows": [{"k": rng.randrange(999), "v": "x" * 20} for _ in range(8)]})
        steps.append(
            {
                "name": call["name"],
                "args": args,
                "status": "success",
                "output": output,
                "id": f"c{len(steps)}",
            }
        )
    steps[0]["args"]["city"] = "Stavanger"  # one reference call unmatched
    while len(steps) < round(1.2 * n):
        steps.append(
            {
                "name": rng.choice(tools),
                "args": {"id": -1},
                "status": "success",
                "output": "[]",
                "id": f"c{len(steps)}",
            }
        )
    rng.shuffle(steps)
    reference = {"match": "unordered", "args": "superset", "calls": calls}
    return reference, {"question_id": "q", "actual_steps": steps}


def dataset(count: int, n: int, tools: list[str], seed: int = 0) -> tuple[list[dict], str]:
    rng = random.Random(seed)
    pairs = [question(rng, n, tools) for _ in range(count)]
    text = "\n".join(json.dumps(response) for _, response in pairs)
    return [reference for reference, _ in pairs], text


def read(references: list[Any]) -> list[Any]:
    """Every reference trajectory read and compiled, as a run does once at load."""
    return [parse_reference(r) for r in references]


def score(parsed: list[Any], references: list[Any], responses: list[dict]) -> list[dict]:
    """Every question scored."""
    return [
        evaluate_trajectory(p, r, response["actual_steps"])
        for p, r, response in zip(parsed, references, responses)
    ]


def turns(functions: list[Callable[[], Any]], repeats: int) -> list[tuple[float, Any]]:
    """Each function timed ``repeats`` times, taking turns (a moment of load on a shared machine
    weighs on all alike); the median of each and its last result."""
    times: list[list[float]] = [[] for _ in functions]
    results: list[Any] = [None] * len(functions)
    for _ in range(repeats):
        for k, function in enumerate(functions):
            gc.collect()
            start = time.perf_counter()
            results[k] = function()
            times[k].append(time.perf_counter() - start)
    return [(statistics.median(t), r) for t, r in zip(times, results)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 questions, fewer repeats")
    parser.add_argument("--questions", type=int, default=10_000)
    options = parser.parse_args()
    count = 1_000 if options.quick else options.questions
    repeats = 3 if options.quick else 5
    rows = []
    references, text = dataset(count, 10, TOOLS)
    responses = [json.loads(line) for line in text.splitlines()]
    parsed = read(references)
    (parse_time, _), (read_time, _), (score_time, results) = turns(
        [
            lambda: [json.loads(line) for line in text.splitlines()],
            lambda: read(references),
            lambda: score(parsed, references, responses),
        ],
        repeats,
    )
    recall = statistics.fmean(r["tool_recall"] for r in results)
    assert recall == 0.9 and not any(r["trajectory_match"] for r in results), recall
    size = len(text) / count / 1024
    rows.append(
        [
            f"parse {count:,} responses (json, {size:.1f} KiB each)",
            f"{parse_time:.3f} s",
            "1.00x",
            "the floor",
        ]
    )
    rows.append(
        [
            f"read {count:,} reference trajectories (at load)",
            f"{read_time:.3f} s",
            f"{read_time / parse_time:.2f}x",
            "",
        ]
    )
    ratio = score_time / parse_time
    verdict = "ok" if ratio <= 4 else "OVER"
    rows.append(
        [
            f"score {count:,} questions, 10 ref x 12 actual",
            f"{score_time:.3f} s",
            f"{ratio:.2f}x",
            f"target <= 4x: {verdict}",
        ]
    )
    both = (score_time + read_time) / parse_time
    rows.append(["read + score", f"{score_time + read_time:.3f} s", f"{both:.2f}x", ""])
    small = max(100, count // 20)
    previous = None
    for n in (5, 10, 20, 40):
        for label, tools in (("1 tool", TOOLS[:1]), ("5 tools", TOOLS)):
            refs, body = dataset(small if n < 40 else small // 2, n, tools, seed=n)
            parsed_responses = [json.loads(line) for line in body.splitlines()]
            compiled = read(refs)
            elapsed, out = timed(
                lambda c=compiled, r=refs, p=parsed_responses: score(c, r, p), repeats
            )
            assert all(r["tool_calls_missing"] == 1 for r in out)
            per = elapsed / len(refs) * 1e6
            growth = ""
            if label == "1 tool":
                growth = (
                    f"x{per / previous:.1f} for 2x calls (n^{math.log2(per / previous):.1f})"
                    if previous
                    else ""
                )
                previous = per
            rows.append(
                [
                    f"curve: {n} ref x {round(1.2 * n)} actual, {label}",
                    f"{per:,.0f} us/question",
                    "",
                    growth,
                ]
            )
    print(format_table(["row", "time", "vs parse", "note"], rows))


if __name__ == "__main__":
    main()
