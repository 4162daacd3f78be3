"""The Ray side of ``benchmarks/scale.py``'s row "Ray local against one run": one
``qa_eval.ray.evaluate_dataset`` run on a local Ray, in a process of its own, writing what
``qa-eval evaluate REFERENCE RESPONSES.jsonl -o RESULTS.jsonl --aggregates AGGREGATES.json``
writes, so that ``scale.py`` times it beside the one-process run and compares the bytes.

    python benchmarks/scale.py --sizes 100000 --ray            # the row, with the others
    python benchmarks/scale_ray.py REFERENCE.json RESPONSES.jsonl RESULTS.jsonl AGGREGATES.json

Ray starts with ``ray.init(num_cpus=CPUS)`` (no dashboard, 200 MB of object store); the responses
are read by ``ray.data.read_text`` and evaluated in batches of ``--batch-size``; each result's
JSON line is written from the results Dataset as it is (its ``result`` column), and the
aggregates (merged from the batches' partial aggregates) with the run's signature. ``--timings``
names a JSON file that receives the seconds of Ray's start, of ``evaluate_dataset`` and of
writing the results.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
if "PYTHONPATH" not in os.environ:  # scale.py sets it to the source tree it measures
    sys.path.insert(0, str(HERE.parent / "src"))

from qa_eval.io.files import write_data  # noqa: E402


def main() -> None:
    """Start Ray, evaluate, write the results, the aggregates and the timings."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reference")
    parser.add_argument("responses")
    parser.add_argument("results", help="the results, JSON Lines")
    parser.add_argument("aggregates", help="the aggregates, JSON (with the signature)")
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--timings", help="a JSON file for the timings")
    args = parser.parse_args()
    import ray

    from qa_eval.ray import evaluate_dataset

    start = time.perf_counter()
    ray.init(
        num_cpus=args.cpus,
        include_dashboard=False,
        object_store_memory=200 * 1024 * 1024,
        log_to_driver=False,
    )
    ray.data.DataContext.get_current().enable_progress_bars = False
    started = time.perf_counter()
    run = evaluate_dataset(
        ray.data.read_text(args.responses), args.reference, batch_size=args.batch_size
    )
    evaluated = time.perf_counter()
    with open(args.results, "wb") as out:
        for batch in run.results.iter_batches(batch_format="pyarrow", batch_size=4096):
            out.writelines(line + b"\n" for line in batch.column("result").to_pylist())
    write_data(args.aggregates, {**run.aggregates, "signature": run.signature})
    written = time.perf_counter()
    ray.shutdown()
    if args.timings:
        timings = {
            "start": started - start,
            "evaluate": evaluated - started,
            "write": written - evaluated,
        }
        Path(args.timings).write_text(json.dumps(timings), encoding="utf-8")


if __name__ == "__main__":
    main()
