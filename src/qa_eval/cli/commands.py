"""The commands other than ``evaluate``: ``aggregate``, ``compare``, ``report``,
``refresh-references``, ``schema``, ``metrics`` and ``answer-correctness``. Each parses nothing
itself: it gets argparse's namespace, calls the library and prints."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import orjson

from ..aggregate import DEFAULT_TAGS, compute_aggregates
from ..errors import QaEvalError
from ..io.files import (
    JSONL_SUFFIXES,
    check_output_path,
    write_data,
)
from ..run.options import cli_option
from ..run.tags import check_by_results
from . import gates as quality
from .common import check_report_paths, gate_outcome, print_notes
from .junit import junit_xml
from .runfiles import (
    check_same_reference,
    compared_metrics,
    read_results_file,
    read_runs,
    read_signature,
)
from .summary import markdown_compare

__all__ = [
    "aggregate",
    "agreement",
    "answer_correctness",
    "compare",
    "export_scores",
    "metrics",
    "refresh",
    "report",
    "schema",
]


def metrics(args: argparse.Namespace) -> int:
    """``qa-eval metrics``: the metric registry, as text blocks or JSON."""
    from ..vocabulary.lookup import describe_metrics, key_info, parse_at_k
    from ..vocabulary.registry import RANKING

    entries = describe_metrics()
    if args.name:
        try:
            base, k = parse_at_k(args.name)
        except ValueError as e:
            raise QaEvalError(str(e)) from None
        found = key_info(args.name)
        if found is not None:
            base = found[0].name
        wanted = f"{base}@k" if k is not None or base in RANKING else base
        entries = [e for e in entries if e["name"] == wanted]
        if not entries:
            known = ", ".join(str(e["name"]) for e in describe_metrics())
            raise QaEvalError(f"unknown metric {args.name!r} (known: {known})")
    if args.format == "json":
        sys.stdout.write(orjson.dumps(entries, option=orjson.OPT_INDENT_2).decode() + "\n")
        return 0
    marks = {"higher": "higher is better", "lower": "lower is better", "none": "neither"}
    lines: list[str] = []
    for entry in entries:
        needs = [n for n in ("judge", "embedder") if entry[n]]
        head = [
            str(entry["name"]),
            f"default {entry['default']}"
            if entry["switch"]
            else ("API function" if "ranking" in entry["groups"] else "always"),
            f"needs {' + '.join(needs)}"
            if needs
            else (
                f"judge only for {entry['judge_only_for']}"
                if entry["judge_only_for"]
                else "no judge"
            ),
        ]
        if entry["groups"]:
            head.append("group " + ", ".join(map(str, entry["groups"])))
        lines.append("  ".join(head) + f"  ({entry['doc']})")
        lines.append(f"    {entry['summary']}")
        if entry["step"]:
            lines.append(f"    written into each {entry['step']} step")
        for key in entry["keys"]:
            label = f"    {key['name']:<40} {key['scale']:<7}"
            if key["scale"] != "text":
                label += f" {marks[key['direction']]}"
            lines.append(label.rstrip())
        for option in entry["options"]:
            lines.append(f"    option {option['name']}: {option['doc']}")
        lines.append("")
    sys.stdout.write("\n".join(lines))
    return 0


def refresh(args: argparse.Namespace) -> int:
    from ..refresh.changes import RefreshResult
    from ..refresh.reference import RefreshRefused, refresh_reference_file

    if args.timeout <= 0:
        raise QaEvalError("--timeout must be a positive number of seconds")
    if args.store is not None and args.header:
        raise QaEvalError("--header applies to --endpoint only")
    output = None if args.dry_run else (args.output or args.reference)

    def show(result: RefreshResult, refused: bool) -> None:
        if args.format == "json":
            report = {
                "steps_run": result.steps_run,
                "changes": [c.as_dict() for c in result.changes],
                "issues": list(result.issues),
                "refused": refused,
                "written": result.written,
            }
            sys.stdout.write(orjson.dumps(report, default=str, option=orjson.OPT_INDENT_2).decode())
            sys.stdout.write("\n")
            return
        for change in result.changes:
            print(change)
            if args.dry_run:
                for line in change.details():
                    print(line)
        if refused:
            return
        summary = f"{result.steps_run} SPARQL steps run, {len(result.changes)} changed"
        if result.written is not None:
            summary += f"; wrote {result.written}"
        elif output is not None:
            summary += f"; {output} is up to date"
        else:
            summary += "; dry run, nothing written"
        print(summary)
        if args.dry_run and result.issues:
            print(
                f"without --dry-run this refresh would stop: {'; '.join(result.issues)} "
                "(pass --force to write it anyway)"
            )

    try:
        result = refresh_reference_file(
            args.reference,
            store=args.store,
            endpoint=args.endpoint,
            output=output,
            timeout=args.timeout,
            headers=args.header or None,
            default_graph_uris=args.default_graph_uri or (),
            force=args.force,
            max_changes=args.max_changes,
        )
    except RefreshRefused as e:
        show(e.result, refused=True)
        raise
    show(result, refused=False)
    return 0


def schema(args: argparse.Namespace) -> int:
    from ..schemas import schema_text

    sys.stdout.write(schema_text(args.name))
    return 0


def compare(args: argparse.Namespace) -> int:
    from ..compare.columns import Scanned
    from ..compare.runs import compare_runs
    from ..compare.signflip import MAX_RESAMPLES
    from ..compare.streamed import compare_files
    from ..compare.table import format_table
    from ..report import run_labels

    if not 1 <= args.resamples <= MAX_RESAMPLES:
        raise QaEvalError(f"--resamples must be between 1 and {MAX_RESAMPLES:,}")
    if args.include_errors:
        raise QaEvalError(
            "--include-errors was removed: errors now count as failed answers by default; "
            "--exclude-errors leaves out the questions that are an error in either run"
        )
    check_report_paths(args)
    regressions = quality.parse_regressions(args.fail_on_regression or ())
    paths = (args.results_a, args.results_b)
    runs = read_runs(paths, "compare")
    signatures = [read_signature(p) for p in paths]
    notes = check_same_reference(paths, signatures, args)
    default_a, default_b = run_labels(paths, signatures)
    labels = (args.label_a or default_a, args.label_b or default_b)
    options: dict[str, Any] = {
        "resamples": args.resamples,
        "seed": args.seed,
        "labels": labels,
        "errors": "exclude" if args.exclude_errors else "fail",
    }
    try:
        if isinstance(runs[0], Scanned):  # JSON Lines: compared as columns, never held whole
            scans = cast("list[Scanned]", runs)
            merged = scans[0].metrics.merge(scans[1].metrics)
            chosen = compared_metrics(args.metric, merged.names, regressions)
            comparison = compare_files(scans[0], scans[1], metrics=chosen, **options)
        else:
            whole = cast("list[list[Any]]", runs)
            chosen = compared_metrics(args.metric, lambda: _metrics_of(whole), regressions)
            comparison = compare_runs(whole[0], whole[1], metrics=chosen, **options)
    except ValueError as e:
        raise QaEvalError(str(e)) from None
    if args.output:
        write_data(args.output, comparison)
    if args.format == "json":
        sys.stdout.write(orjson.dumps(comparison, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        print(format_table(comparison, per_template=args.per_template, explain=args.explain))
    gates = quality.regression_gates(comparison, regressions)
    if args.junit:
        Path(args.junit).write_bytes(junit_xml(gates, name="qa-eval compare"))
    if args.summary_md:
        summary = markdown_compare(comparison, gates, notes)
        Path(args.summary_md).write_text(summary, encoding="utf-8")
    print_notes(notes)
    return gate_outcome(gates, quiet=False)


def agreement(args: argparse.Namespace) -> int:
    """``qa-eval agreement``: judges against people's labels, as a table or JSON."""
    from ..agreement.judges import load_judges
    from ..agreement.measure import agreement as measure
    from ..agreement.table import format_report

    if args.resamples < 100:
        raise QaEvalError(f"--resamples must be at least 100, got {args.resamples}")
    if args.output:
        check_output_path(args.output)
    bars = quality.parse_bars(args.fail_under or ())
    for figure, _ in bars:
        if figure not in quality.AGREEMENT_FIGURES:
            raise QaEvalError(
                f"--fail-under {figure}: an agreement gate is one of "
                f"{', '.join(quality.AGREEMENT_FIGURES)}"
            )
    thresholds = quality.parse_label_thresholds(args.threshold or ())
    if args.label and len(args.label) != len(args.results):
        raise QaEvalError(
            f"--label was given {len(args.label)} time(s) for {len(args.results)} results file(s)"
        )
    notes: list[str] = []
    try:
        if args.cross_validate is not None:
            report = _cross_validated(args, thresholds)
        else:
            from ..agreement.labels import read_labels

            judges = load_judges(args.results, args.label)
            people = read_labels(args.labels)
            notes = _label_matches(args, people, [j.results for j in judges], thresholds)
            report = measure(
                judges,
                people,
                metric=args.metric,
                threshold=thresholds or None,
                resamples=args.resamples,
                seed=args.seed,
            )
    except ValueError as e:
        if isinstance(e, QaEvalError):
            raise
        raise QaEvalError(str(e)) from None
    data = report.to_dict()
    if args.output:
        write_data(args.output, data)
    if args.format == "json":
        sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        sys.stdout.write(format_report(data))
    print_notes(notes)
    return gate_outcome(quality.agreement_gates(data, bars), quiet=False)


def _label_matches(
    args: argparse.Namespace,
    people: Any,
    runs: Sequence[Sequence[Any]],
    thresholds: Mapping[str, float],
) -> list[str]:
    """Check the labels against the options and the results: ``--threshold`` must name a
    measured (labelled) metric; label rows that match no result are counted with the reason (no
    such question, no such key), a note, and an error when no row matches. Returns the notes."""
    labelled = list(people.metrics)
    measured = list(args.metric or labelled)  # (a --metric without labels: measure refuses it)
    what = "metric of --metric" if args.metric else "labelled metric"
    quality.check_names("--threshold", thresholds, measured, what)
    questions: dict[str, list[Mapping[str, Any]]] = {}
    keys: set[str] = set()
    for results in runs:
        for result in results:
            if isinstance(result, Mapping):
                questions.setdefault(str(result.get("question_id")), []).append(result)
                keys.update(result)
    rows = [row for row in people.rows if row.metric in measured]
    no_question = [r for r in rows if not _labelled_result(r, questions)]
    no_key = [r for r in rows if r.metric not in keys and _labelled_result(r, questions)]
    if not no_question and not no_key:
        return []
    parts = []
    if no_question:
        ids = list(dict.fromkeys(repr(r.question_id) for r in no_question))
        shown = ", ".join(ids[:3]) + (", ..." if len(ids) > 3 else "")
        parts.append(f"{len(no_question)} name a question no results file has ({shown})")
    if no_key:
        missing = ", ".join(dict.fromkeys(r.metric for r in no_key))
        parts.append(f"{len(no_key)} name a metric the results lack ({missing})")
    unmatched = len(no_question) + len(no_key)
    text = f"{unmatched} of {len(rows)} label rows match no result: {'; '.join(parts)}"
    if unmatched == len(rows):
        raise QaEvalError(f"{args.labels}: {text}")
    return [text]


def _labelled_result(row: Any, questions: Mapping[str, list[Mapping[str, Any]]]) -> bool:
    """Whether a results file has the question a label row names (its template too, if given)."""
    found = questions.get(str(row.question_id), [])
    if row.template_id is None:
        return bool(found)
    return any(str(r.get("template_id")) == str(row.template_id) for r in found)


def _cross_validated(args: argparse.Namespace, thresholds: dict[str, float]) -> Any:
    """``agreement --cross-validate K``: the judge without and with examples from the labels."""
    from ..agreement.labels import read_labels
    from ..config import load_config
    from ..run.crossval import cross_validate

    if len(args.results) != 1:
        raise QaEvalError("--cross-validate takes one results file: the one that was labelled")
    if not args.config:
        raise QaEvalError("--cross-validate runs the judge: give its config with -c")
    if args.cross_validate < 2:
        raise QaEvalError(f"--cross-validate needs at least 2 folds, got {args.cross_validate}")
    if args.examples_count < 1:
        raise QaEvalError(f"--examples-count must be at least 1, got {args.examples_count}")
    people = read_labels(args.labels)
    metrics = args.metric or people.metrics
    if len(metrics) != 1:
        raise QaEvalError(
            f"--cross-validate measures one metric: say which with --metric "
            f"(labelled: {', '.join(people.metrics)})"
        )
    return cross_validate(
        read_results_file(args.results[0], "agreement"),
        people,
        load_config(args.config),
        metrics[0],
        folds=args.cross_validate,
        count=args.examples_count,
        pick=args.examples_pick,
        seed=args.seed,
        cache=not args.no_cache,
        threshold=thresholds or None,
        resamples=args.resamples,
    )


def report(args: argparse.Namespace) -> int:
    from ..compare.columns import Scanned
    from ..compare.runs import compare_runs
    from ..compare.streamed import compare_files
    from ..compare.values import ErrorMode
    from ..report import Run, build_report, run_labels

    target = Path(args.output)
    if not target.parent.is_dir():
        raise QaEvalError(f"{args.output}: the folder does not exist")
    if args.max_questions < 0:
        raise QaEvalError(f"--max-questions must be 0 (all) or more, got {args.max_questions}")
    agreement = getattr(args, "labels", None)
    # JSON Lines runs (without --labels, which measures every result): read a line at a time
    read: list[Any] = read_runs(args.results, "report") if not agreement else []
    scans = cast("list[Scanned]", read) if read and isinstance(read[0], Scanned) else None
    if not read:
        read = [read_results_file(p, "report") for p in args.results]
    signatures = [read_signature(p) for p in args.results]
    names = run_labels(args.results, signatures)
    runs = [Run(name, results, sig) for name, results, sig in zip(names, read, signatures)]
    comparison: Any = False
    notes: list[str] = []
    if len(runs) >= 2 and not args.no_compare:
        first, second = runs[:2]
        notes = check_same_reference(args.results[:2], [first.signature, second.signature], args)
        errors: ErrorMode = "exclude" if args.exclude_errors else "fail"
        pair = (first.label, second.label)
        try:
            if scans is not None:
                comparison = compare_files(scans[0], scans[1], labels=pair, errors=errors)
            else:
                comparison = compare_runs(first.results, second.results, labels=pair, errors=errors)
        except ValueError as e:  # e.g. a question id twice in one run
            raise QaEvalError(f"comparing {first.label} with {second.label}: {e}") from None
    labels = None
    thresholds = quality.parse_label_thresholds(getattr(args, "threshold", None) or ())
    if thresholds and not agreement:
        raise QaEvalError("--threshold sets the agreement section's thresholds: give --labels")
    if agreement:
        from ..agreement.labels import read_labels

        labels = read_labels(args.labels)
        quality.check_names("--threshold", thresholds, list(labels.metrics), "labelled metric")
    from ..report import DEFAULT_MAX_TEMPLATE_ROWS

    if scans is not None:
        from ..report.model import verdict_of
        from ..report.streamed import report_of_files, write_page

        # the verdict keeps the per-template rows the page shows: the others (a million results
        # have over a hundred thousand) are freed before the runs are read again
        verdict = verdict_of(comparison, DEFAULT_MAX_TEMPLATE_ROWS) if comparison else None
        comparison = None
        pieces = report_of_files(
            scans,
            names,
            signatures,
            verdict,
            args.title,
            max_questions=args.max_questions or None,
        )
        write_page(target, pieces)  # drawn as it is written: a million results make 80 MB
    else:
        page = build_report(
            runs,
            comparison,
            args.title,
            max_questions=args.max_questions or None,
            labels=labels,
            threshold=thresholds or None,
            max_template_rows=DEFAULT_MAX_TEMPLATE_ROWS,
        )
        target.write_text(page, encoding="utf-8")
    size = target.stat().st_size / 1e6
    print(f"wrote {target} ({size:.1f} MB, {len(runs)} run(s)); open it in a browser")
    print_notes(notes)
    return 0


def export_scores(args: argparse.Namespace) -> int:
    """``qa-eval export-scores``: the scores of evaluated traces back to their traces."""
    from ..traces.export import evaluation_events, otlp_logs, send_langfuse, send_otlp

    if not (args.otlp_json or args.otlp_endpoint or args.langfuse):
        raise QaEvalError("export-scores needs --otlp-json FILE, --otlp-endpoint URL or --langfuse")
    if args.otlp_json:
        check_output_path(args.otlp_json)
    results = read_results_file(args.results, "export-scores")
    quality.check_result_keys("--metric", args.metric or (), results)
    selection = evaluation_events(results, args.metric)
    nothing = selection.nothing(len(results))
    if nothing is not None:  # never an empty file or an empty post that looks like an export
        raise QaEvalError(f"{args.results}: {nothing}")
    print_notes(selection.notes())
    events = selection.events
    if args.metric:
        present = {e.name for e in events}
        missing = [m for m in args.metric if m not in present]
        if missing and events:
            print_notes([f"no value of {', '.join(missing)} in {args.results}: not exported"])
    traces = len({e.trace_id for e in events})
    if args.otlp_json:
        payload, skipped = otlp_logs(events)
        Path(args.otlp_json).write_bytes(orjson.dumps(payload, option=orjson.OPT_INDENT_2))
        written = len(events) - skipped
        print(f"{written} evaluation event(s) of {traces} trace(s) written to {args.otlp_json}")
        _note_skipped(skipped)
    if args.otlp_endpoint:
        sent, skipped = send_otlp(events, args.otlp_endpoint)
        print(f"{sent} evaluation event(s) of {traces} trace(s) sent over OTLP/HTTP")
        _note_skipped(skipped)
    if args.langfuse:
        sent = send_langfuse(events)
        print(f"{sent} score(s) of {traces} trace(s) posted to Langfuse")
    return 0


def _note_skipped(skipped: int) -> None:
    """Say how many events had a trace id that is not an OpenTelemetry one."""
    if skipped:
        print_notes(
            [f"{skipped} event(s) left out: their trace id is not an OpenTelemetry trace id"]
        )


def aggregate(args: argparse.Namespace) -> int:
    if args.output:
        check_output_path(args.output)
    tags = list(args.by) if args.by else list(DEFAULT_TAGS)
    thresholds = quality.parse_pass_thresholds(args.pass_threshold or ())
    config = None
    if thresholds and args.config:
        from ..config import load_config

        config = load_config(args.config)
    if Path(args.results).suffix.lower() in JSONL_SUFFIXES:  # read as a stream, never whole
        from ..aggregate.compute import AggregateSpec
        from ..run.results import aggregate_results_file

        if thresholds:  # names checked before the file is read: the registry's and the config's
            known = quality.known_metrics(config)
            quality.check_names("--pass-threshold", thresholds, known, "metric")
        spec = AggregateSpec.of(args.config, tags, keys=args.keys, pass_thresholds=thresholds)
        aggregates = aggregate_results_file(args.results, spec, args.by or (), spell=cli_option)
    else:
        results = read_results_file(args.results, "aggregate")
        check_by_results(results, args.by or (), args.results, cli_option)
        try:
            if thresholds:
                known = quality.known_metrics(config, results)
                quality.check_names("--pass-threshold", thresholds, known, "metric")
            aggregates = compute_aggregates(
                results, args.config, by=tags, keys=args.keys, pass_thresholds=thresholds
            )
        except TypeError as e:
            raise QaEvalError(f"{args.results}: {e}") from None
    if args.output:
        write_data(args.output, aggregates)
    else:
        import yaml

        print(yaml.safe_dump(aggregates, sort_keys=False, allow_unicode=True), end="")
    return 0


def _metrics_of(runs: Sequence[Sequence[Any]]) -> list[str]:
    """The metrics of runs read whole (``compare.values.default_metrics``)."""
    from ..compare.values import default_metrics

    return default_metrics(*([r for r in run if isinstance(r, dict)] for run in runs))


def answer_correctness(args: Any) -> int:
    """``answer-correctness``: judge the rows of a TSV file (graphrag-eval's command)."""
    from ..config import load_config
    from ..extras import require
    from ..run.tsv import run_tsv
    from .console import usage_line
    from .display import Progress

    if args.concurrency is not None and args.concurrency < 1:
        raise QaEvalError("--concurrency must be at least 1")
    require("openai", "the answer-correctness command (an LLM judge)")
    require("pydantic", "the answer-correctness command (an LLM judge)")
    config = load_config(args.config).with_options(concurrency=args.concurrency)
    progress = Progress(sys.stderr, "judging", enabled=False if args.quiet else None)
    try:
        judge = run_tsv(
            args.input,
            args.output,
            config,
            cache=False if args.no_cache else (args.cache or True),
            progress=progress,
        )
    finally:
        progress.close()
    if not args.quiet:
        print(f"wrote {args.output}; {usage_line(judge)}")
    return 0
