"""A run spread out: ``evaluate --workers N`` and ``--shard i/N`` (:func:`spread_options`), and
``qa-eval merge SHARD_RESULTS... -o RESULTS [--aggregates A]`` (:func:`add_parser`), which puts
the shards of a run back together as one run's results and aggregates
(``run.merge.merge_shards``)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

__all__ = ["AUTO_WORKERS_BYTES", "add_parser", "default_workers", "merge", "spread_options"]

AUTO_WORKERS_BYTES = 64 * 1024 * 1024
"""A JSON Lines reference at least this large gets a worker per usable core by default: two
workers measured 2.05x one at 1,000,000 questions on 2 cores (benchmarks/scale.py); on small
runs starting the processes costs more than they save."""


def _workers(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"a whole number, at least 1, not {text!r}")
    return value


def spread_options(command: argparse.ArgumentParser) -> None:
    """``--workers`` and ``--shard`` of ``evaluate`` (see docs/scale.md)."""
    group = command.add_argument_group("spreading the run (docs/scale.md)")
    group.add_argument(
        "--workers",
        type=_workers,
        default=None,
        metavar="N",
        help="score the deterministic part in N processes; the same bytes (default: one per "
        "usable core when a JSON Lines reference of 64 MB or more is read as a stream into a "
        ".jsonl -o; else 1)",
    )
    group.add_argument(
        "--shard",
        metavar="I/N",
        help="evaluate only shard I of N (by a hash of the question id) into a .jsonl -o, "
        "for 'qa-eval merge'",
    )


def default_workers(args: argparse.Namespace, responses: Any) -> int:
    """``--workers`` as given, else its default: one per usable core for a run that reads a JSON
    Lines reference of at least :data:`AUTO_WORKERS_BYTES` as a stream (one system's JSON Lines
    ``responses`` file into a ``.jsonl`` output, no ``--batch``, nothing ``.gz``), else 1;
    ``responses``: the one system's responses (None with several systems)."""
    given = getattr(args, "workers", None)
    if given is not None:
        return int(given)
    reference, output = getattr(args, "reference", None), getattr(args, "output", None)
    if getattr(args, "batch", False) or getattr(args, "input", None):
        return 1
    if isinstance(responses, (list, tuple)):
        responses = responses[0] if len(responses) == 1 else None
    if not (isinstance(reference, str) and isinstance(responses, str)):
        return 1
    if not isinstance(output, str):
        return 1
    from ..run.plan import streamed
    from ..run.reflines import streams_with

    if not streamed(output) or any(p.lower().endswith(".gz") for p in (reference, responses)):
        return 1
    try:
        large = os.path.getsize(reference) >= AUTO_WORKERS_BYTES
    except OSError:
        return 1  # (the run reports the missing file)
    if not large or not streams_with(reference, responses):
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, cores or 1)


def add_parser(commands: Any) -> None:
    """Add the ``merge`` command to the parser's sub-commands."""
    parser = commands.add_parser(
        "merge",
        help="put the shards of a run (evaluate --shard i/N) back together",
        description=(
            "Merge the results of every shard of a run (evaluate --shard i/N -o "
            "SHARD.jsonl, each with its SHARD.signature.yaml and SHARD.shard.json) into the "
            "results and aggregates one run over every question writes, byte for byte. Refuses "
            "shards of different references, configs, metric sets or shard counts, a missing or "
            "repeated shard and a question in two shards."
        ),
    )
    parser.add_argument("shards", nargs="+", metavar="SHARD_RESULTS", help="each shard's results")
    parser.add_argument("-o", "--output", required=True, metavar="RESULTS", help=".jsonl results")
    parser.add_argument("--aggregates", metavar="A", help="write the aggregates here too")
    parser.set_defaults(handler=merge)


def merge(args: argparse.Namespace) -> int:
    """Merge the shards; one line on stderr says what was written."""
    from ..io.files import check_output_path
    from ..run.merge import merge_shards

    check_output_path(args.output)
    if args.aggregates:
        check_output_path(args.aggregates)
    merged = merge_shards(args.shards, args.output, args.aggregates)
    shards = merged.signature.get("spread", {}).get("shards")
    written = merged.output + (f" and {args.aggregates}" if args.aggregates else "")
    print(f"merged {shards} shards, {merged.results} results: {written}", file=sys.stderr)
    return 0
