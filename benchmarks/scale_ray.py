"""The row "Ray local against one run" of the scale benchmark: ``qa_eval.ray.evaluate_dataset``
on a local Ray (``ray.init(num_cpus=2)``) against one process, on ``benchmarks/scale.py``'s data.

    python benchmarks/scale_ray.py                 # 20,000 questions
    python benchmarks/scale_ray.py --sizes 100000

One process: ``run_evaluation`` on the reference and the parsed responses, then
``compute_aggregates``. Ray: ``ray.data.read_text(RESPONSES.jsonl)`` through ``evaluate_dataset``
(its results Dataset sorted and materialized, the aggregates computed), Ray's start timed apart.
"Equal" compares every result's JSON bytes, the aggregates' bytes and the signature. Every number
is measured when it runs (the machine's other load included: say what it was).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from qa_eval import compute_aggregates, run_evaluation  # noqa: E402
from qa_eval.cli import format_table  # noqa: E402
from qa_eval.io.files import read_reference, read_responses  # noqa: E402
from qa_eval.io.limits import dump_json  # noqa: E402


def _scale() -> Any:
    spec = importlib.util.spec_from_file_location("qa_eval_benchmark_scale", HERE / "scale.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def row(n: int, folder: Path, batch_size: int) -> list[Any]:
    """One size: the times of one process and of Ray, and whether the outputs are equal."""
    import ray

    from qa_eval.ray import evaluate_dataset, iter_results

    reference_path, responses_path = _scale().generate(folder, n)
    reference, responses = read_reference(reference_path), read_responses(responses_path)
    start = time.perf_counter()
    single = run_evaluation(reference, responses)
    aggregates = compute_aggregates(single)
    one = time.perf_counter() - start

    start = time.perf_counter()
    run = evaluate_dataset(
        ray.data.read_text(str(responses_path)), reference, batch_size=batch_size
    )
    on_ray = time.perf_counter() - start
    equal = (
        [dump_json(r) for r in iter_results(run.results)] == [dump_json(r) for r in single]
        and dump_json(run.aggregates) == dump_json(aggregates)
        and run.signature == single.signature
    )
    return [
        f"{n:,}",
        f"{one:.1f}",
        f"{on_ray:.1f}",
        f"{on_ray / one:.1f}x",
        "yes" if equal else "NO",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000])
    parser.add_argument("--batch-size", type=int, default=1000)
    args = parser.parse_args()
    import ray

    start = time.perf_counter()
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        object_store_memory=200 * 1024 * 1024,
        log_to_driver=False,
    )
    ray.data.DataContext.get_current().enable_progress_bars = False
    started = time.perf_counter() - start
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            rows.append(row(n, Path(tmp), args.batch_size))
    ray.shutdown()
    header = ["questions", "one run s", "Ray local s", "Ray / one", "equal"]
    print(f"Ray local against one run (2 CPUs; Ray's start apart: {started:.1f} s)")
    print(format_table(header, rows))


if __name__ == "__main__":
    main()
