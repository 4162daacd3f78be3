"""``qa-eval generate`` at scale: a generated power-grid graph of about 1M triples (regions,
operators, substations, transformers, lines; labels, numbers, years), loaded from N-Triples,
``--describe`` and 1,000 template-worded questions with every query executed, written to a
reference file. Prints a table: time per phase, queries run, peak memory of the process and the
store's own share (the resident memory the loaded store added). The questions are checked
first: every stored output is re-run and must be what the graph answers.

    python benchmarks/generate.py                 # ~1M triples, 1,000 questions
    python benchmarks/generate.py --triples 100000 --questions 200
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

G = "https://example.org/grid#"
R = "https://example.org/grid/resource/"
LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
XSD = "http://www.w3.org/2001/XMLSchema#"


def _rss_mb() -> float:
    """The resident set size of this process now, in MB (Linux /proc)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _waited() -> float:
    """Seconds this process's threads spent runnable but waiting for a CPU (the run queue,
    /proc/self/task/*/schedstat, Linux): the wall time other processes took from it."""
    total = 0
    for task in Path("/proc/self/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return total / 1e9


def _load() -> list[str]:
    with open("/proc/loadavg", encoding="ascii") as f:
        return f.read().split()[:3]


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def write_graph(path: Path, triples: int, seed: int = 1) -> int:
    """Write an N-Triples power grid of about ``triples`` triples; return the count."""
    rng = random.Random(seed)
    substations = max(10, triples // 20)  # ~20 triples each: ~2 transformers, 0.75 lines
    regions, operators = max(3, substations // 400), max(3, substations // 150)
    written = 0

    def t(s: str, p: str, o: str) -> str:
        nonlocal written
        written += 1
        return f"<{s}> <{p}> {o} .\n"

    def lit(v: str, dt: str | None = None) -> str:
        return f'"{v}"' + (f"^^<{XSD}{dt}>" if dt else "")

    with path.open("w", encoding="utf-8") as out:
        for i in range(regions):
            r = f"{R}region-{i}"
            out.write(t(r, TYPE, f"<{G}Region>") + t(r, LABEL, lit(f"Region {i}")))
            out.write(t(r, f"{G}code", lit(f"NO{i}")))
        for i in range(operators):
            o = f"{R}op-{i}"
            out.write(t(o, TYPE, f"<{G}Operator>") + t(o, LABEL, lit(f"Operator {i}")))
        n_tr = n_line = 0
        for i in range(substations):
            s = f"{R}sub-{i}"
            out.write(t(s, TYPE, f"<{G}Substation>") + t(s, LABEL, lit(f"SUB {i}")))
            out.write(t(s, f"{G}region", f"<{R}region-{rng.randrange(regions)}>"))
            out.write(t(s, f"{G}operator", f"<{R}op-{rng.randrange(operators)}>"))
            out.write(t(s, f"{G}voltageLevelKV", lit(rng.choice(["132", "300", "420"]), "integer")))
            for _ in range(rng.randint(1, 3)):
                tr = f"{R}tr-{n_tr}"
                n_tr += 1
                out.write(t(tr, TYPE, f"<{G}Transformer>") + t(tr, LABEL, lit(f"SUB {i} T{n_tr}")))
                out.write(t(tr, f"{G}substation", f"<{s}>"))
                mva = f"{rng.randrange(50, 1500)}.{rng.randrange(100):02d}"
                out.write(t(tr, f"{G}ratedMVA", lit(mva, "decimal")))
                out.write(t(tr, f"{G}commissioned", lit(str(rng.randrange(1950, 2024)), "gYear")))
            if i and rng.random() < 0.75:
                line = f"{R}line-{n_line}"
                n_line += 1
                other = rng.randrange(i)
                out.write(t(line, TYPE, f"<{G}Line>") + t(line, LABEL, lit(f"LN {other}-{i}")))
                out.write(t(line, f"{G}fromSubstation", f"<{R}sub-{other}>"))
                out.write(t(line, f"{G}toSubstation", f"<{s}>"))
                out.write(t(line, f"{G}lengthKm", lit(f"{rng.uniform(5, 400):.1f}", "double")))
            if written >= triples:
                break
    return written


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--triples", type=int, default=1_000_000)
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--trace-memory",
        action="store_true",
        help="also measure the peak of Python's own allocations (tracemalloc; slows Python down)",
    )
    args = parser.parse_args()
    if args.trace_memory:
        import tracemalloc

        tracemalloc.start()

    from qa_eval.generate.engine import GenerateOptions, generate
    from qa_eval.generate.records import records, write_output
    from qa_eval.generate.schema import describe_text, read_schema
    from qa_eval.generate.settings import GenerateSettings
    from qa_eval.generate.source import open_graph
    from qa_eval.refresh.reference import refresh_reference

    rows: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory() as folder:
        graph_path = Path(folder) / "grid.nt"
        written = write_graph(graph_path, args.triples)
        base = _rss_mb()
        clock = [(time.perf_counter(), time.process_time(), _waited())]

        def lap() -> str:
            clock.append((time.perf_counter(), time.process_time(), _waited()))
            (wall0, cpu0, wait0), (wall1, cpu1, wait1) = clock[-2], clock[-1]
            return (
                f"{wall1 - wall0:.1f} s wall, {cpu1 - cpu0:.1f} s CPU, "
                f"{wait1 - wait0:.1f} s waiting for a CPU"
            )

        graph = open_graph(store=graph_path)
        loaded = lap()
        store_mb = _rss_mb() - base
        schema = read_schema(graph, GenerateSettings())
        describe_text(schema)
        described = lap()
        before_queries = graph.queries
        generation = generate(graph, schema, GenerateOptions(n=args.questions, seed=args.seed))
        generated = lap()
        out = Path(folder) / "reference.json"
        data = records(generation)
        write_output(out, data)
        written_at = lap()
        total = (
            f"{clock[-1][0] - clock[0][0]:.1f} s wall, {clock[-1][1] - clock[0][1]:.1f} s CPU, "
            f"{clock[-1][2] - clock[0][2]:.1f} s waiting for a CPU"
        )
        peak = _peak_mb()
        python_peak = None
        if args.trace_memory:
            import tracemalloc

            python_peak = tracemalloc.get_traced_memory()[1] / 2**20
        check = refresh_reference(data, graph.run_query)
        if check.changes:
            print(
                f"FAILED: {len(check.changes)} stored outputs differ from the graph",
                file=sys.stderr,
            )
            return 1
        made = generation.report.made
        rows += [
            ("triples (N-Triples file)", f"{written:,}"),
            ("load + count what was let through", loaded),
            ("--describe (schema queries)", described),
            (f"generate {made:,} of {args.questions:,} questions", generated),
            ("  queries run", f"{graph.queries - before_queries:,}"),
            ("write the reference file (JSON)", written_at),
            ("total (load to file written)", total),
            ("resident memory the store added", f"{store_mb:,.0f} MB"),
            ("peak resident memory of the process", f"{peak:,.0f} MB"),
            (
                "  of which not the store (peak - before load - store)",
                f"{peak - base - store_mb:,.0f} MB",
            ),
            (
                "peak of Python's own allocations (tracemalloc)",
                f"{python_peak:,.1f} MB" if python_peak is not None else "(--trace-memory)",
            ),
            ("every stored output re-run: changed", f"{len(check.changes)} of {check.steps_run:,}"),
        ]
        shapes = {s: r.made for s, r in generation.report.shapes.items()}
        rows.append(("questions per shape", json.dumps(shapes)))
    rows.append(("load average (1, 5, 15 min) at the end", " ".join(_load())))
    width = max(len(r[0]) for r in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
