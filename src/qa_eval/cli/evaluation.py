"""``qa-eval evaluate`` and ``qa-eval evaluate-flat``: the options become a plan
(:func:`qa_eval.run.plan.plan_evaluation`, the runs' options in one
:class:`~qa_eval.run.options.RunOptions`), the plan runs (:func:`qa_eval.run.files.run_plan`)
with a :class:`qa_eval.cli.console.ConsoleObserver` printing it, then the CI gates
(:mod:`qa_eval.cli.gates`) decide the exit code."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from ..errors import QaEvalError
from ..io.files import check_output_path
from ..run.options import cli_option
from ..run.plan import plan_evaluation, system_output_path
from . import gates as quality
from .common import check_report_paths, gate_outcome
from .junit import junit_xml
from .spread import default_workers
from .summary import markdown_evaluate

__all__ = ["evaluate", "system_pairs"]


def system_pairs(args: argparse.Namespace) -> list[tuple[str | None, str]]:
    """(system name, responses file) pairs: the one RESPONSES, or each ``--system NAME=FILE``."""
    systems = getattr(args, "system", None) or []
    if isinstance(getattr(args, "responses", None), list):  # RESPONSES... (several: traces)
        given = args.responses
        args.responses = None if not given else given[0] if len(given) == 1 else given
    if not systems:
        if getattr(args, "responses", None) is None and getattr(args, "input", None) is None:
            raise QaEvalError("give RESPONSES, or --system NAME=FILE for each system")
        return [(None, args.responses)]  # several trace files: checked by the plan
    if getattr(args, "responses", None) is not None:
        raise QaEvalError("give either RESPONSES or --system NAME=FILE, not both")
    pairs: list[tuple[str | None, str]] = []
    for item in systems:
        name, sep, path = item.partition("=")
        if not sep or not name.strip() or not path:
            raise QaEvalError(f"--system takes NAME=FILE, not {item!r}")
        if any(name == seen for seen, _ in pairs):
            raise QaEvalError(f"--system {name!r} is given twice")
        pairs.append((name.strip(), path))
    return pairs


def _column_mapping(pairs: Sequence[str]) -> dict[str, str]:
    mapping = {}
    for pair in pairs:
        field, sep, column = pair.partition("=")
        if not sep or not field or not column:
            raise QaEvalError(f"--column takes FIELD=COLUMN, not {pair!r}")
        mapping[field.strip()] = column.strip()
    return mapping


def evaluate(args: argparse.Namespace) -> int:
    """Run ``evaluate`` / ``evaluate-flat`` from parsed arguments; returns the exit code."""
    from ..run.files import run_plan
    from .console import ConsoleObserver, default_judge_note

    systems = system_pairs(args)
    for system, _ in systems:
        for path in (args.output, args.aggregates):
            if path:
                check_output_path(system_output_path(path, system))  # type: ignore[arg-type]
    check_report_paths(args)
    bars = quality.parse_bars(args.fail_under or ())
    thresholds = quality.parse_pass_thresholds(getattr(args, "pass_threshold", None) or ())
    regressions = quality.parse_regressions(getattr(args, "fail_on_regression", None) or ())
    if regressions and len(systems) < 2:
        raise QaEvalError(
            "--fail-on-regression on evaluate compares each --system with the first: give two "
            "systems or more (or compare two results files with 'qa-eval compare')"
        )
    flat = getattr(args, "input", None)
    named = [(n, p) for n, p in systems if n is not None]
    plan = plan_evaluation(
        None if flat is not None else args.reference,
        None if flat is not None or named else args.responses,
        systems=named or None,
        flat=flat,
        columns=_column_mapping(getattr(args, "column", None) or ()) if flat else None,
        output=args.output,
        aggregates=args.aggregates,
        config=args.config,
        by=args.by or (),
        concurrency=args.concurrency,
        repeats=args.repeats,
        cache=False if args.no_cache else (args.cache or True),
        max_cost=args.max_cost,
        disable=args.disable or (),
        enable=args.enable or (),
        no_judge=args.no_judge,
        dry_run=args.dry_run,
        batch=args.batch,
        no_wait=args.no_wait,
        check_config=lambda config: _check_gate_metrics(config, bars, regressions, thresholds),
        spell=cli_option,
        keys=args.keys,
        pass_thresholds=thresholds,
        workers=default_workers(args, systems[0][1] if len(systems) == 1 else None),
        shard=getattr(args, "shard", None),
    )
    if plan.default_judge:
        print(default_judge_note(plan.estimate()), file=sys.stderr, flush=True)
    machine = args.format == "json"
    observer = ConsoleObserver(quiet=args.quiet, machine=machine)
    try:
        run = run_plan(
            plan,
            observer,
            compare=machine or not args.quiet or bool(regressions),
            exclude_errors=getattr(args, "exclude_errors", False),
        )
    finally:
        observer.close()
    if run.waiting:
        return 0
    if machine and run.systems:
        report = run.summary()
        sys.stdout.write(orjson.dumps(report, default=str, option=orjson.OPT_INDENT_2).decode())
        sys.stdout.write("\n")
    elif len(run.systems) > 1 and not args.quiet:
        from ..compare.table import format_table

        first = run.systems[0]
        for other, comparison in zip(run.systems[1:], run.comparisons):
            print(f"\n== {first.name} vs {other.name}")
            print(
                format_table(
                    comparison,
                    per_template=bool(getattr(args, "per_template", False)),
                    explain=bool(getattr(args, "explain", False)),
                )
            )
    if not run.systems:  # a dry run: nothing was evaluated, so there is nothing to gate
        return 0
    done = [(s.name, s.results, s.aggregates) for s in run.systems]
    return _evaluation_gates(args, done, run.comparisons, bars, regressions)


def _check_gate_metrics(
    config: Any,
    bars: Sequence[Any],
    regressions: Sequence[Any],
    thresholds: Mapping[str, float],
) -> None:
    """Before the run: a gate or pass threshold on a metric qa-eval does not compute is a usage
    error that names the nearest known metrics."""
    known = quality.known_metrics(config)
    quality.check_names("--fail-under", (m for m, _ in bars), known, "metric")
    quality.check_names("--fail-on-regression", (m for m, _ in regressions), known, "metric")
    quality.check_names("--pass-threshold", thresholds, known, "metric")


def _evaluation_gates(
    args: argparse.Namespace,
    done: Sequence[tuple[str | None, Sequence[dict[str, Any]], dict[str, Any]]],
    comparisons: Sequence[dict[str, Any]],
    bars: Sequence[tuple[str, float]],
    regressions: Sequence[tuple[str, float]],
) -> int:
    """Check the gates of an evaluation, write the JUnit and Markdown files, return the exit
    code (3 when a gate failed). The results were written before."""
    gates: list[quality.Gate] = []
    for name, results, aggregates in done:
        gates += quality.fail_under_gates(aggregates, results, bars, name)
        if args.strict:
            gates.append(quality.strict_gate(quality.problems_of(results), name))
    for other, comparison in zip(done[1:], comparisons):
        gates += quality.regression_gates(comparison, regressions, f"{done[0][0]} vs {other[0]}")
    if args.junit:
        runs = [(name, results) for name, results, _ in done]
        Path(args.junit).write_bytes(junit_xml(gates, runs, name="qa-eval evaluate"))
    if args.summary_md:
        summary = markdown_evaluate(list(done), gates)
        Path(args.summary_md).write_text(summary, encoding="utf-8")
    return gate_outcome(gates, quiet=args.quiet)
