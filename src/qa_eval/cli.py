"""The ``qa-eval`` command: parses arguments, calls the public API, formats the output.

Exit codes: 0 success, 2 bad input or usage (one line on stderr), 1 unexpected failure.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from collections.abc import Sequence
from typing import Any, NoReturn, TextIO

from . import __version__
from .aggregate import compute_aggregates
from .errors import QaEvalError
from .io import check_output_path, read_reference, read_responses, read_results, write_data
from .runner import NO_RESPONSE, run_evaluation

__all__ = ["main"]

PROG = "qa-eval"


class _UsageError(QaEvalError):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _UsageError(f"{message} (see '{self.prog} --help')")


class Progress:
    """A one-line progress bar on a terminal; silent when the stream is not a terminal."""

    def __init__(self, stream: TextIO, label: str, enabled: bool | None = None) -> None:
        self.stream = stream
        self.label = label
        self.enabled = stream.isatty() if enabled is None else enabled
        self.start = time.monotonic()
        self.last_draw = 0.0
        self.drawn = False

    def __call__(self, done: int, total: int) -> None:
        """Redraw at most ten times a second, and only once the run has lasted half a second."""
        if not self.enabled:
            return
        now = time.monotonic()
        if done < total and (now - self.last_draw < 0.1 or now - self.start < 0.5):
            return
        self.last_draw = now
        width = 30
        filled = width * done // max(total, 1)
        elapsed = now - self.start
        eta = elapsed / done * (total - done) if done else 0.0
        self.stream.write(
            f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total} "
            f"{100 * done / max(total, 1):5.1f}%  {elapsed:5.1f}s elapsed, ~{eta:4.0f}s left"
        )
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        """End the progress line."""
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()


def _format_number(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 100 else f"{value:.1f}"
    return str(value)


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain text table with right-aligned numbers."""
    cells = [[_format_number(v) if v is not None else "-" for v in row] for row in rows]
    widths = [
        max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)
    ]
    lines = [
        "  ".join(
            h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(headers, widths))
        )
    ]
    lines.append("  ".join("-" * w for w in widths))
    for row in cells:
        lines.append(
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))
            )
        )
    return "\n".join(lines)


_SUMMARY_METRICS = ("steps_score", "answer_f1", "answer_relevance", "total_tokens", "elapsed_sec")


def summary_table(aggregates: dict[str, Any]) -> str:
    """The terminal summary: one row per template, then micro and macro."""
    metrics = [m for m in _SUMMARY_METRICS if m in aggregates["micro"]]
    headers = ["template", "questions", "errors", *(f"{m} (mean)" for m in metrics)]

    def row(name: str, stats: dict[str, Any]) -> list[Any]:
        count = stats["number_of_success_samples"] + stats["number_of_error_samples"]
        return [
            name,
            count,
            stats["number_of_error_samples"],
            *(
                stats.get(m, {}).get("mean") if stats.get(m, {}).get("n", 1) else None
                for m in metrics
            ),
        ]

    rows = [row(str(tid), stats) for tid, stats in aggregates["per_template"].items()]
    rows.append(row("all questions (micro)", aggregates["micro"]))
    macro = aggregates["macro"]
    rows.append(
        [
            "templates (macro)",
            len(aggregates["per_template"]),
            None,
            *(macro.get(m, {}).get("mean") for m in metrics),
        ]
    )
    return format_table(headers, rows)


def _evaluate(args: argparse.Namespace) -> int:
    for path in (args.output, args.aggregates):
        if path:
            check_output_path(path)
    reference = read_reference(args.reference)
    responses = read_responses(args.responses)
    progress = Progress(sys.stderr, "evaluating", enabled=False if args.quiet else None)
    started = time.monotonic()
    try:
        results = run_evaluation(
            reference,
            responses,
            progress=progress,
            reference_source=args.reference,
            responses_source=args.responses,
        )
    finally:
        progress.close()
    elapsed = time.monotonic() - started
    aggregates = compute_aggregates(results)
    if args.output:
        write_data(args.output, results)
    if args.aggregates:
        write_data(args.aggregates, aggregates)
    if not args.quiet:
        print(summary_table(aggregates))
        print(f"\n{len(results)} questions evaluated in {elapsed:.2f}s", end="")
        written = [p for p in (args.output, args.aggregates) if p]
        print(f"; wrote {', '.join(written)}" if written else "")
    missing = sum(1 for r in results if r.get("error") == NO_RESPONSE)
    with_problems = [r for r in results if r.get("step_errors")]
    if missing:
        print(
            f"warning: {missing} question(s) had no response and count as errors", file=sys.stderr
        )
    if with_problems:
        first = with_problems[0]
        print(
            f"warning: {len(with_problems)} question(s) have steps that could not be compared "
            f"(see 'step_errors' in the results); first: question {first['question_id']!r}: "
            f"{first['step_errors'][0]}",
            file=sys.stderr,
        )
    return 0


def _aggregate(args: argparse.Namespace) -> int:
    if args.output:
        check_output_path(args.output)
    results = read_results(args.results)
    try:
        aggregates = compute_aggregates(results)
    except TypeError as e:
        raise QaEvalError(f"{args.results}: {e}") from None
    if args.output:
        write_data(args.output, aggregates)
    else:
        import yaml

        print(yaml.safe_dump(aggregates, sort_keys=False, allow_unicode=True), end="")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``qa-eval`` command."""
    parser = _Parser(prog=PROG, description="Evaluate question-answering systems and agents.")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    evaluate = commands.add_parser(
        "evaluate",
        help="evaluate responses against a reference dataset",
        description="Evaluate responses against a reference dataset and print a summary.",
    )
    evaluate.add_argument("reference", help="reference dataset (.yaml or .json)")
    evaluate.add_argument("responses", help="responses (.jsonl, or a .json/.yaml list or mapping)")
    evaluate.add_argument(
        "-o", "--output", help="write per-question results (.yaml, .json, .jsonl)"
    )
    evaluate.add_argument("--aggregates", help="write aggregates (.yaml, .json)")
    evaluate.add_argument(
        "-q", "--quiet", action="store_true", help="no progress bar and no summary table"
    )
    evaluate.set_defaults(handler=_evaluate)

    aggregate = commands.add_parser(
        "aggregate",
        help="aggregate per-question results",
        description="Compute per-template, micro and macro aggregates of evaluation results.",
    )
    aggregate.add_argument("results", help="results written by 'qa-eval evaluate -o'")
    aggregate.add_argument("-o", "--output", help="write aggregates here instead of stdout")
    aggregate.set_defaults(handler=_aggregate)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    try:
        args = build_parser().parse_args(argv)
        return int(args.handler(args))
    except QaEvalError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # an unexpected failure: one line, the traceback on request
        if os.environ.get("QA_EVAL_DEBUG"):
            traceback.print_exc()
        print(
            f"{PROG}: unexpected error: {type(e).__name__}: {e} "
            "(set QA_EVAL_DEBUG=1 for a traceback)",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
