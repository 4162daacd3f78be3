"""A run spread out: ``evaluate --workers N`` and ``--shard i/N`` (:func:`spread_options`), and
``qa-eval merge SHARD_RESULTS... -o RESULTS [--aggregates A]`` (:func:`add_parser`), which puts
the shards of a run back together as one run's results and aggregates
(``run.merge.merge_shards``)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["add_parser", "merge", "spread_options"]


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
        default=1,
        metavar="N",
        help="score the deterministic part in N processes (default 1); the same bytes",
    )
    group.add_argument(
        "--shard",
        metavar="I/N",
        help="evaluate only shard I of N (by a hash of the question id) into a .jsonl -o, "
        "for 'qa-eval merge'",
    )


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
