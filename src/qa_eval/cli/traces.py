"""``qa-eval import``: agent traces in, a responses file out, and the fidelity report printed
(what was read, what was lost); ``--strict`` fails on any loss and writes nothing."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from ..errors import QaEvalError
from ..traces.formats import FORMATS
from .handler import Handler

__all__ = ["add_import_command", "import_traces"]


def add_import_command(commands: Any) -> None:
    """``import``: traces to responses."""
    command = commands.add_parser(
        "import",
        help="import agent traces (OpenAI, Anthropic, OTLP, Langfuse, LangSmith, ragas) as "
        "responses",
        description="Read agent traces into qa-eval responses (one per trace) and print what was "
        "read and what was lost (see docs/traces.md).",
    )
    command.add_argument(
        "traces", nargs="+", metavar="TRACES", help="trace files (.json, .jsonl, .gz)"
    )
    command.add_argument(
        "-o",
        "--output",
        required=True,
        help="responses file to write (.jsonl streams; .json, .yaml)",
    )
    command.add_argument(
        "-r",
        "--reference",
        help="reference dataset: match traces to questions by their text, "
        "and count the questions with no trace",
    )
    command.add_argument(
        "--write-reference",
        metavar="REFERENCE_OUT",
        help="also write the reference side the traces carry (ragas' reference and "
        "reference_tool_calls) as a reference dataset",
    )
    command.add_argument(
        "--format",
        default="auto",
        choices=["auto", *sorted(FORMATS)],
        help="the traces' format (default: detected per file)",
    )
    command.add_argument(
        "--strict", action="store_true", help="fail (and write nothing) when anything was lost"
    )
    command.set_defaults(handler=Handler("traces", "import_traces"))


def import_traces(args: argparse.Namespace) -> int:
    """Run ``qa-eval import``."""
    from ..io.files import JSONL_SUFFIXES, check_output_path, write_data
    from ..io.limits import dump_json
    from ..traces.read import TraceReport, iter_responses

    check_output_path(args.output)
    if args.write_reference:
        check_output_path(args.write_reference)
    output = Path(args.output)
    report = TraceReport(references={} if args.write_reference else None)
    responses = iter_responses(args.traces, args.reference, args.format, report)
    if output.suffix.lower() in JSONL_SUFFIXES:
        partial = output.with_name(output.name + ".partial")
        try:
            with partial.open("wb") as file:
                for response in responses:
                    file.write(dump_json(response) + b"\n")
            reference = _check(report, args)
            os.replace(partial, output)
        finally:
            partial.unlink(missing_ok=True)
    else:
        held = list(responses)
        reference = _check(report, args)
        write_data(output, held)
    if reference is not None:
        write_data(args.write_reference, reference)
    for line in report.lines():
        print(line)
    print(f"wrote {report.fidelity.traces} responses to {output}")
    if args.write_reference:
        questions = len(report.references or {})
        print(f"wrote {questions} reference questions to {args.write_reference}")
    return 0


def _check(report: Any, args: argparse.Namespace) -> list[dict[str, Any]] | None:
    """Refuse what must not be written (no traces, a loss with ``--strict``, no reference side
    for ``--write-reference``); the reference dataset to write, if asked for."""
    from ..traces.read import reference_dataset

    if not report.fidelity.traces:
        raise QaEvalError(f"no traces in {', '.join(args.traces)}: nothing to import")
    if args.strict:
        report.check_strict()
    return reference_dataset(report) if args.write_reference else None
