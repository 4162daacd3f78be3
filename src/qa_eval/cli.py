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
from pathlib import Path
from typing import Any, NoReturn, TextIO

import orjson

from . import __version__
from .aggregate import CATEGORIES, DEFAULT_TAGS, SCORES, compute_aggregates
from .config import GROUPS, SWITCHES
from .errors import QaEvalError
from .io import (
    JSONL_SUFFIXES,
    check_output_path,
    dump_json,
    read_reference,
    read_responses,
    read_results,
    signature_path,
    write_data,
)
from .runner import NO_RESPONSE, run_evaluation

__all__ = ["main"]

PROG = "qa-eval"


class _UsageError(QaEvalError):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _UsageError(f"{message} (see '{self.prog} --help')")


class Progress:
    """The run's progress on a terminal, redrawn in place (rich): judge calls done of planned with
    tokens and cost so far, questions done, time elapsed and left; every line fits the terminal.
    Silent when the stream is not a terminal (or ``enabled`` is False)."""

    def __init__(
        self,
        stream: TextIO,
        label: str = "questions",
        enabled: bool | None = None,
        console: Any = None,
    ) -> None:
        from .console import ProgressDisplay

        self.display = ProgressDisplay(stream, label=label, enabled=enabled, console=console)

    def __call__(self, done: int, total: int) -> None:
        """Show ``done`` of ``total`` questions (the ``progress`` callback of a run)."""
        from .runner import RunProgress

        self.display.update(RunProgress(done, total))

    def update(self, status: Any) -> None:
        """Show a ``RunProgress`` (the ``on_progress`` callback of a run)."""
        self.display.update(status)

    def close(self) -> None:
        """Stop redrawing; the last state stays on the screen."""
        self.display.close()


def format_table(
    headers: Sequence[str], rows: Sequence[Sequence[Any]], width: int | None = None
) -> str:
    """A plain text table with right-aligned numbers (None shown as ``-``); columns and rows
    with no value are left out. With ``width``, it fits that many columns (blocks of columns,
    folded cells); without, it keeps its natural width."""
    from .console import render_table

    return render_table(headers, rows, width)


def _stdout_width() -> int | None:
    from .console import terminal_width

    return terminal_width(sys.stdout)


_SUMMARY_METRICS = (
    *(m for m in SCORES if m not in ("answer_recall", "answer_precision")),
    "total_tokens",
    "elapsed_sec",
)
_PERCENT = ("ragas_score", "factual_accuracy")
"""Shown as percentages, as the GraphRAG metrics document writes them (stored on 0-1)."""


def _header(metric: str) -> str:
    return f"{metric} % (mean)" if metric in _PERCENT else f"{metric} (mean)"


def _mean(stats: dict[str, Any], metric: str) -> Any:
    block = stats.get(metric, {})
    if not block.get("n", 1):
        return None
    mean = block.get("mean")
    return mean * 100 if metric in _PERCENT and mean is not None else mean


def label_lines(aggregates: dict[str, Any]) -> list[str]:
    """One line per counted label (grades, answer classes) over all questions."""
    lines = []
    for key in CATEGORIES:
        block = aggregates["micro"].get(key)
        if block:
            counts = ", ".join(f"{label} {n}" for label, n in block["counts"].items())
            lines.append(f"{key}: {counts} (of {block['n']})")
    return lines


def summary_table(aggregates: dict[str, Any], width: int | None = None) -> str:
    """The terminal summary: one row per template, then micro and macro; fits ``width``."""
    metrics = [m for m in _SUMMARY_METRICS if m in aggregates["micro"]]
    headers = ["template", "questions", "errors", *(_header(m) for m in metrics)]

    def row(name: str, stats: dict[str, Any]) -> list[Any]:
        count = stats["number_of_success_samples"] + stats["number_of_error_samples"]
        return [name, count, stats["number_of_error_samples"], *(_mean(stats, m) for m in metrics)]

    rows = [row(str(tid), stats) for tid, stats in aggregates["per_template"].items()]
    rows.append(row("all questions (micro)", aggregates["micro"]))
    macro = aggregates["macro"]
    rows.append(
        [
            "templates (macro)",
            len(aggregates["per_template"]),
            None,
            *(_mean(macro, m) for m in metrics),
        ]
    )
    return format_table(headers, rows, width)


def _usage_text(model: str, total: dict[str, Any]) -> str:
    cost = f"${total['cost']:.4f}" if total["cost"] is not None else "cost unknown (no price)"
    return (
        f"judge {model}: {total['calls']} calls, {total['cached']} from the cache, "
        f"{total['retries']} retried, {total['failures']} failed; {total['prompt_tokens']} prompt "
        f"+ {total['completion_tokens']} completion tokens; {cost}"
    )


def usage_line(judge: Any) -> str:
    """One line on what the judge did: calls, cache hits, retries, failures, tokens, cost."""
    return _usage_text(judge.gen.model, judge.total.as_dict())


def _usage_summary(signature: dict[str, Any]) -> str | None:
    usage, judge = signature.get("usage"), signature.get("judge")
    if not usage or not judge:
        return None
    return f"{_usage_text(judge['model'], usage['total'])} (this run)"


def plan_table(judge: Any, width: int | None = None) -> str:
    """What a dry run would do, per metric: calls, cache hits, estimated tokens and cost; fits
    ``width``."""
    from .pricing import usd

    plan = judge.plan
    metrics = sorted(set(plan.calls) | set(plan.cached))
    rows = []
    for m in metrics:
        p, c = plan.prompt_tokens.get(m, 0), plan.completion_tokens.get(m, 0)
        cost = usd(judge.price, p, c)
        rows.append(
            [
                m,
                plan.calls.get(m, 0),
                plan.cached.get(m, 0),
                p,
                c,
                f"${cost:.4f}" if cost is not None else "unknown",
            ]
        )
    p = sum(plan.prompt_tokens.values())
    c = sum(plan.completion_tokens.values())
    cost = usd(judge.price, p, c)
    rows.append(
        [
            "total",
            sum(plan.calls.values()),
            sum(plan.cached.values()),
            p,
            c,
            f"${cost:.4f}" if cost is not None else "unknown",
        ]
    )
    return format_table(
        [
            "metric",
            "calls",
            "cached",
            "prompt tokens (est.)",
            "completion tokens (est.)",
            "cost (est.)",
        ],
        rows,
        width,
    )


def _systems(args: argparse.Namespace) -> list[tuple[str | None, str]]:
    """(system name, responses file) pairs: the one RESPONSES, or each ``--system NAME=FILE``."""
    systems = getattr(args, "system", None) or []
    if not systems:
        if getattr(args, "responses", None) is None and getattr(args, "input", None) is None:
            raise QaEvalError("give RESPONSES, or --system NAME=FILE for each system")
        return [(None, args.responses)]
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


def _for_system(path: str | None, system: str | None) -> str | None:
    """``results.yaml`` -> ``results.NAME.yaml`` for one of several systems."""
    if path is None or system is None:
        return path
    p = Path(path)
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in system)
    return str(p.with_name(f"{p.stem}.{safe}{p.suffix}"))


def _evaluate(args: argparse.Namespace) -> int:
    from .config import load_config

    systems = _systems(args)
    for system, _ in systems:
        for path in (args.output, args.aggregates):
            if path:
                check_output_path(_for_system(path, system))  # type: ignore[arg-type]
    if args.concurrency is not None and args.concurrency < 1:
        raise QaEvalError("--concurrency must be at least 1")
    if args.max_cost is not None and args.max_cost <= 0:
        raise QaEvalError("--max-cost must be a positive number of US dollars")
    config = load_config(args.config).with_options(concurrency=args.concurrency)
    disable = list(args.disable or ())
    enable = list(args.enable or ())
    if getattr(args, "input", None) is not None:
        from .flat import read_flat

        reference, responses = read_flat(args.input, _column_mapping(args.column or ()))
        args.reference = args.input
        # The contexts of a flat row are a made-up retrieval step: the retrieval step metrics
        # would only repeat context precision and recall on it.
        disable += [s for s in ("retrieval_answer", "retrieval_context") if s not in enable]
        runs: list[tuple[str | None, str, Any]] = [(None, args.input, responses)]
    else:
        reference = read_reference(args.reference)
        stream = len(systems) == 1 and _streamed(args.output)
        runs = [(name, path, _responses_input(path, stream)) for name, path in systems]
    done: list[tuple[str | None, str, Sequence[dict[str, Any]], dict[str, Any]]] = []
    for name, path, responses in runs:
        if name is not None and not args.quiet and args.format != "json":
            print(f"\n== system {name} ({path})")
        outcome = _evaluate_system(args, config, reference, responses, path, name, disable, enable)
        if outcome is None:  # a dry run
            continue
        done.append((name, path, *outcome))
    if args.format == "json" and done:
        if len(done) == 1 and done[0][0] is None:
            report: Any = done[0][3]
        else:
            report = {"systems": {n: agg for n, _, _, agg in done}}
            if len(done) > 1:
                report["comparisons"] = [_comparison(done[0], other) for other in done[1:]]
        sys.stdout.write(orjson.dumps(report, default=str, option=orjson.OPT_INDENT_2).decode())
        sys.stdout.write("\n")
    elif len(done) > 1 and not args.quiet:
        from .compare import format_table

        for other in done[1:]:
            print(f"\n== {done[0][0]} vs {other[0]}")
            print(format_table(_comparison(done[0], other)))
    return 0


def _comparison(a: tuple[Any, ...], b: tuple[Any, ...]) -> dict[str, Any]:
    from .compare import compare_runs

    return compare_runs(a[2], b[2], labels=(a[0], b[0]))


def _evaluate_system(
    args: argparse.Namespace,
    config: Any,
    reference: Any,
    responses: Any,
    responses_source: str,
    system: str | None,
    disable: list[str],
    enable: list[str],
) -> tuple[Sequence[dict[str, Any]], dict[str, Any]] | None:
    from .judge import Judge

    output = _for_system(args.output, system)
    aggregates_path = _for_system(args.aggregates, system)
    cache: Any = False if args.no_cache else (args.cache or True)
    judge = None
    if args.dry_run:
        if config.generation is None:
            raise QaEvalError("--dry-run needs a judge: pass --config or set OPENAI_API_KEY")
        from .cache import open_cache

        judge = Judge(config, cache=open_cache(cache), dry_run=True)
    quiet = args.quiet or args.format == "json"
    progress = Progress(sys.stderr, "questions", enabled=False if quiet else None)
    partial = _PartialFile(output, cache is not False) if output and not args.dry_run else None
    started = time.monotonic()
    options: dict[str, Any] = {
        "config": config,
        "cache": cache,
        "max_cost": args.max_cost,
        "disable": disable,
        "enable": enable,
        "judge": judge,
        "on_progress": progress.update,
        "reference_source": args.reference,
        "responses_source": responses_source,
    }
    results: Sequence[dict[str, Any]]
    aggregates: dict[str, Any] | None = None
    try:
        if partial is not None and _streamed(output):
            results, aggregates, notable = _evaluate_streamed(
                reference, responses, options, partial, _tags(args)
            )
        else:
            results = notable = run_evaluation(
                reference,
                responses,
                on_result=partial.write if partial is not None else None,
                **options,
            )
    except BaseException:
        progress.close()
        if partial is not None:
            partial.close()
            partial.tell_where()
        raise
    progress.close()
    if partial is not None:
        partial.close()
    elapsed = time.monotonic() - started
    if judge is not None:
        if judge.cache is not None:
            judge.cache.close()
        print(plan_table(judge, _stdout_width()))
        print("\ndry run: no judge call was made and nothing was written")
        return None
    if aggregates is None:
        aggregates = compute_aggregates(results, by=_tags(args))
    signature: dict[str, Any] = getattr(results, "signature", {})
    aggregates["signature"] = signature
    if system is not None:
        aggregates["system"] = system
    if output and not _streamed(output):
        write_data(output, results)
    if output:
        write_data(signature_path(output), signature)
        if partial is not None:
            partial.path.unlink(missing_ok=True)
    if aggregates_path:
        write_data(aggregates_path, aggregates)
    if not quiet:
        print(summary_table(aggregates, _stdout_width()))
        for line in label_lines(aggregates):
            print(line)
        print(f"\n{len(results)} questions evaluated in {elapsed:.2f}s", end="")
        written = [p for p in (output, aggregates_path) if p]
        print(f"; wrote {', '.join(written)}" if written else "")
        usage = _usage_summary(signature)
        if usage:
            print(usage)
    _warnings(notable)
    return results, aggregates


def _streamed(output: str | None) -> bool:
    """Whether the results of a run go to a JSON Lines file as they finish (in reference order)
    instead of being held until the end: so memory does not grow with the questions."""
    return output is not None and Path(output).suffix.lower() in JSONL_SUFFIXES


def _responses_input(path: str, stream: bool) -> Any:
    """The responses of one system: a JSON Lines file read as a stream when the run streams
    (see ``_streamed``), else the file's data."""
    if stream and Path(path).suffix.lower() in JSONL_SUFFIXES:
        from .stream import JsonLinesResponses

        return JsonLinesResponses(path)
    return read_responses(path)


class _PartialFile:
    """``OUTPUT.partial.jsonl``: each result as it finishes, one JSON line, flushed, so a run
    that stops keeps what it finished. Opened at the first result: a run that fails before
    that (bad input, exit 2) leaves the file of an earlier run as it was."""

    def __init__(self, output: str, cached: bool) -> None:
        self.path = Path(f"{output}.partial.jsonl")
        self.cached = cached
        self.file: Any = None
        self.count = 0

    def write(self, result: dict[str, Any], flush: bool = True) -> None:
        """Append one result (flushed to the file unless ``flush`` is False)."""
        if self.file is None:
            if self.path.is_file() and self.path.stat().st_size:
                print(
                    f"note: replacing {self.path}, left by an earlier run that did not finish"
                    + (" (its judge replies are in the reply cache)" if self.cached else ""),
                    file=sys.stderr,
                )
            self.file = self.path.open("wb", buffering=1 << 20)
        self.file.write(dump_json(result) + b"\n")
        self.count += 1
        if flush:
            self.file.flush()

    def close(self) -> None:
        """Close the file (when it was opened)."""
        if self.file is not None:
            self.file.close()
            self.file = None

    def tell_where(self) -> None:
        """After a run that stopped: where its finished results are."""
        if self.count:
            print(
                f"{PROG}: {self.count} finished result(s) are in {self.path}"
                + ("; a rerun takes the judge replies from the cache" if self.cached else ""),
                file=sys.stderr,
            )


def _evaluate_streamed(
    reference: Any,
    responses: Any,
    options: dict[str, Any],
    partial: _PartialFile,
    tags: list[str],
) -> tuple[Sequence[dict[str, Any]], dict[str, Any], Sequence[dict[str, Any]]]:
    """Run with the results streamed: each goes to the partial file in reference order as soon
    as it and those before it finished, and into the aggregates; none is held. The partial file
    becomes the output at the end. Returns the results (read back from the output on demand),
    the aggregates and the few keys of the results that the warnings read."""
    from .runner import Results, iter_evaluation
    from .stream import ResultsFile

    stream = iter_evaluation(reference, responses, **options)
    notable = Results()

    def results() -> Any:
        for result in stream:
            partial.write(result, flush=not stream.ready())
            slim = _notable(result)
            if slim is not None:
                notable.append(slim)
            yield result

    with stream:
        aggregates = compute_aggregates(results(), by=tags)
    partial.close()
    output = partial.path.with_name(partial.path.name[: -len(".partial.jsonl")])
    os.replace(partial.path, output)
    signature = stream.signature or {}
    notable.signature = signature
    return ResultsFile(output, partial.count, signature), aggregates, notable


def _notable(result: dict[str, Any]) -> dict[str, Any] | None:
    """The keys of a result ``_warnings`` reads (no response, step errors, metric errors),
    or None when it has none of them."""
    keys = None
    for key in result:
        if key == "error" or key == "step_errors" or key.endswith("_error"):
            keys = keys or {"question_id": result.get("question_id")}
            keys[key] = result[key]
    steps = None
    for step in result.get("actual_steps") or ():
        if isinstance(step, dict):
            errors = {k: v for k, v in step.items() if k.endswith("_error")}
            if errors:
                steps = steps or []
                steps.append(errors)
    if steps:
        keys = keys or {"question_id": result.get("question_id")}
        keys["actual_steps"] = steps
    return keys


def _warnings(results: Sequence[dict[str, Any]]) -> None:
    note = getattr(results, "signature", {}).get("llm_metrics")
    if note:
        print(f"note: {note}", file=sys.stderr)
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
    failed = _metric_errors(results)
    if failed:
        first_key, first_message = next(iter(failed.items()))
        print(
            f"warning: {sum(len(v) for v in failed.values())} metric value(s) not computed "
            f"(see the '*_error' keys); e.g. {first_key}: {first_message[0]}",
            file=sys.stderr,
        )


def _metric_errors(results: Sequence[dict[str, Any]]) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    for result in results:
        records = [result, *(s for s in result.get("actual_steps") or [] if isinstance(s, dict))]
        for record in records:
            for key, value in record.items():
                if key.endswith("_error") and key not in ("answer_eval_error",) and value:
                    errors.setdefault(key, []).append(str(value))
    return errors


def _refresh(args: argparse.Namespace) -> int:
    from .refresh import refresh_reference_file

    if args.timeout <= 0:
        raise QaEvalError("--timeout must be a positive number of seconds")
    output = None if args.dry_run else (args.output or args.reference)
    result = refresh_reference_file(
        args.reference,
        store=args.store,
        endpoint=args.endpoint,
        output=output,
        timeout=args.timeout,
    )
    if args.format == "json":
        report = {
            "steps_run": result.steps_run,
            "changes": [
                {
                    "template_id": c.template_id,
                    "question_id": c.question_id,
                    "step": c.step,
                    "old": c.old,
                    "new": c.new,
                    "added": c.added,
                    "removed": c.removed,
                }
                for c in result.changes
            ],
            "written": None if output is None else str(output),
        }
        sys.stdout.write(orjson.dumps(report, default=str, option=orjson.OPT_INDENT_2).decode())
        sys.stdout.write("\n")
        return 0
    for change in result.changes:
        print(change)
    where = f"; wrote {output}" if output is not None and result.changes else ""
    if output is not None and not result.changes:
        where = f"; {output} is up to date"
    print(f"{result.steps_run} SPARQL steps run, {len(result.changes)} changed{where}")
    return 0


def _compare(args: argparse.Namespace) -> int:
    from .compare import compare_runs, format_table

    if args.resamples < 1:
        raise QaEvalError("--resamples must be at least 1")
    runs = [read_results(path) for path in (args.results_a, args.results_b)]
    default_a, default_b = (Path(p).stem for p in (args.results_a, args.results_b))
    labels = (args.label_a or default_a, args.label_b or default_b)
    try:
        comparison = compare_runs(
            runs[0],
            runs[1],
            metrics=args.metric or None,
            resamples=args.resamples,
            seed=args.seed,
            labels=labels,
            errors="include" if args.include_errors else "exclude",
        )
    except ValueError as e:
        raise QaEvalError(str(e)) from None
    if args.output:
        write_data(args.output, comparison)
    if args.format == "json":
        sys.stdout.write(orjson.dumps(comparison, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        print(format_table(comparison))
    return 0


def _report(args: argparse.Namespace) -> int:
    from .compare import compare_runs, report_rows
    from .report import build_report, load_run, run_labels

    target = Path(args.output)
    if not target.parent.is_dir():
        raise QaEvalError(f"{args.output}: the folder does not exist")
    runs = [load_run(p, label) for p, label in zip(args.results, run_labels(args.results))]
    comparison = None
    if len(runs) >= 2 and not args.no_compare:
        first, second = runs[:2]
        comparison = report_rows(
            compare_runs(first.results, second.results, labels=(first.label, second.label))
        )
    if args.max_questions < 0:
        raise QaEvalError("--max-questions must be 0 (every question) or more")
    limit = args.max_questions or None
    target.write_text(build_report(runs, comparison, args.title, limit), encoding="utf-8")
    size = target.stat().st_size / 1e6
    print(f"wrote {target} ({size:.1f} MB, {len(runs)} run(s)); open it in a browser")
    return 0


def _tags(args: argparse.Namespace) -> list[str]:
    return list(args.by) if args.by else list(DEFAULT_TAGS)


def _column_mapping(pairs: Sequence[str]) -> dict[str, str]:
    mapping = {}
    for pair in pairs:
        field, sep, column = pair.partition("=")
        if not sep or not field or not column:
            raise QaEvalError(f"--column takes FIELD=COLUMN, not {pair!r}")
        mapping[field.strip()] = column.strip()
    return mapping


def _aggregate(args: argparse.Namespace) -> int:
    if args.output:
        check_output_path(args.output)
    results = read_results(args.results)
    try:
        aggregates = compute_aggregates(results, by=_tags(args))
    except TypeError as e:
        raise QaEvalError(f"{args.results}: {e}") from None
    if args.output:
        write_data(args.output, aggregates)
    else:
        import yaml

        print(yaml.safe_dump(aggregates, sort_keys=False, allow_unicode=True), end="")
    return 0


_BY_HELP = "also aggregate per value of this result key (repeatable; default: question_type)"


def _run_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("-o", "--output", help="write per-question results (.yaml, .json, .jsonl)")
    command.add_argument("--aggregates", help="write aggregates (.yaml, .json)")
    command.add_argument("--by", action="append", metavar="KEY", help=_BY_HELP)
    command.add_argument(
        "-q", "--quiet", action="store_true", help="no progress bar and no summary table"
    )
    command.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="json: print the aggregates (and comparisons) as JSON on stdout, nothing else",
    )
    judge = command.add_argument_group("LLM judge")
    judge.add_argument(
        "-c",
        "--config",
        help="judge and metric config (YAML); without one, gpt-4o-mini when OPENAI_API_KEY is set",
    )
    judge.add_argument("--concurrency", type=int, help="judge calls in flight (default 8)")
    judge.add_argument("--cache", help="reply cache file (default: the user cache directory)")
    judge.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
    judge.add_argument(
        "--dry-run",
        action="store_true",
        help="print the judge calls, estimated tokens and cost; call nothing",
    )
    judge.add_argument(
        "--max-cost", type=float, metavar="USD", help="start no judge call once this much was spent"
    )
    judge.add_argument(
        "--disable",
        action="append",
        choices=SWITCHES,
        metavar="METRIC",
        help=f"switch a metric family off (repeatable): {', '.join(SWITCHES)}",
    )
    judge.add_argument(
        "--enable",
        action="append",
        choices=(*SWITCHES, *GROUPS),
        metavar="METRIC",
        help="switch a metric on (repeatable); the GraphRAG set is off by default: "
        "'graphrag' is all of it but bertscore",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``qa-eval`` command."""
    parser = _Parser(prog=PROG, description="Evaluate question-answering systems and agents.")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _commands(commands)
    return parser


def _commands(commands: Any) -> None:
    evaluate = commands.add_parser(
        "evaluate",
        help="evaluate responses against a reference dataset",
        description="Evaluate responses against a reference dataset and print a summary.",
    )
    evaluate.add_argument("reference", help="reference dataset (.yaml or .json)")
    evaluate.add_argument(
        "responses", nargs="?", help="responses (.jsonl, or a .json/.yaml list or mapping)"
    )
    evaluate.add_argument(
        "--system",
        action="append",
        metavar="NAME=FILE",
        help="evaluate several systems' responses (repeatable, instead of RESPONSES): results "
        "go to RESULTS.NAME.ext, and each system is compared with the first",
    )
    _run_options(evaluate)
    evaluate.set_defaults(handler=_evaluate)

    flat = commands.add_parser(
        "evaluate-flat",
        help="evaluate a flat per-question file (ragas style: question, answer, contexts, ...)",
        description="Evaluate a JSONL or CSV file with one row per question: question / "
        "user_input, answer / response, contexts / retrieved_contexts, ground_truth / "
        "reference, question_type (see docs/flat.md).",
    )
    flat.add_argument("input", help="rows (.jsonl or .csv)")
    flat.add_argument(
        "--column",
        action="append",
        metavar="FIELD=COLUMN",
        help="read FIELD (question, answer, contexts, ground_truth, question_type, question_id, "
        "template_id) from COLUMN (repeatable)",
    )
    _run_options(flat)
    flat.set_defaults(handler=_evaluate, reference=None, responses=None)

    aggregate = commands.add_parser(
        "aggregate",
        help="aggregate per-question results",
        description="Compute per-template, micro and macro aggregates of evaluation results.",
    )
    aggregate.add_argument("results", help="results written by 'qa-eval evaluate -o'")
    aggregate.add_argument("-o", "--output", help="write aggregates here instead of stdout")
    aggregate.add_argument("--by", action="append", metavar="KEY", help=_BY_HELP)
    aggregate.set_defaults(handler=_aggregate)

    refresh = commands.add_parser(
        "refresh-references",
        help="re-run the reference SPARQL queries and update their outputs",
        description="Re-run the SPARQL queries of a reference dataset against an RDF file "
        "(embedded store) or a SPARQL endpoint, update the outputs that changed and print what "
        "changed. The file is rewritten in place unless -o or --dry-run is given.",
    )
    refresh.add_argument("reference", help="reference dataset (.yaml or .json)")
    source = refresh.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--store", metavar="GRAPH_FILE", help="RDF file (.ttl, .nt, .nq, .trig, .rdf, .jsonld)"
    )
    source.add_argument("--endpoint", metavar="URL", help="SPARQL 1.1 endpoint (http or https)")
    refresh.add_argument("-o", "--output", help="write the refreshed dataset here instead")
    refresh.add_argument("--dry-run", action="store_true", help="print the changes, write nothing")
    refresh.add_argument(
        "--timeout", type=float, default=30.0, help="seconds per endpoint query (default 30)"
    )
    refresh.add_argument("--format", choices=("text", "json"), default="text")
    refresh.set_defaults(handler=_refresh)

    compare = commands.add_parser(
        "compare",
        help="compare two runs: deltas, paired bootstrap CI and p-value, wins/losses/ties",
        description="Compare the results of system B with those of system A on the questions "
        "both answered, per metric and per template (see docs/compare.md).",
    )
    compare.add_argument("results_a", help="results of system A (qa-eval evaluate -o)")
    compare.add_argument("results_b", help="results of system B")
    compare.add_argument("--label-a", help="name of system A (default: the file name)")
    compare.add_argument("--label-b", help="name of system B (default: the file name)")
    compare.add_argument("--metric", action="append", help="compare only this metric (repeatable)")
    compare.add_argument("--resamples", type=int, default=10_000, help="bootstrap resamples")
    compare.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    compare.add_argument(
        "--include-errors",
        action="store_true",
        help="count error responses with their own values (steps_score 0) instead of leaving "
        "those questions out",
    )
    compare.add_argument("-o", "--output", help="also write the comparison (.yaml, .json)")
    compare.add_argument("--format", choices=("text", "json"), default="text")
    compare.set_defaults(handler=_compare)

    report = commands.add_parser(
        "report",
        help="write a self-contained HTML report of one or more runs",
        description="Write one HTML file (opens offline) with the signature, totals, "
        "per-template tables and charts, score distributions, a step breakdown and a "
        "per-question drill-down of each run; with two runs or more, the first two compared.",
    )
    report.add_argument("results", nargs="+", help="results written by 'qa-eval evaluate -o'")
    report.add_argument("-o", "--output", required=True, help="the HTML file to write")
    report.add_argument("--title", default="qa-eval report", help="the page title")
    report.add_argument(
        "--no-compare", action="store_true", help="leave out the comparison of the first two runs"
    )
    from .report import DEFAULT_MAX_QUESTIONS

    report.add_argument(
        "--max-questions",
        type=int,
        default=DEFAULT_MAX_QUESTIONS,
        metavar="N",
        help=f"list at most N questions of each run in the drill-down table (default "
        f"{DEFAULT_MAX_QUESTIONS:,}; 0: every one); the other sections count every question",
    )
    report.set_defaults(handler=_report)

    from . import tsv

    correctness = commands.add_parser(
        "answer-correctness",
        help="answer correctness of a TSV file (graphrag-eval's command)",
        description="Judge the answer correctness of each row of a TSV file with the columns "
        "Question, Reference answer and Actual answer.",
    )
    tsv.add_arguments(correctness)
    correctness.set_defaults(handler=tsv.handle)


def run_command(argv: Sequence[str] | None, prog: str = PROG, only: str | None = None) -> int:
    """Parse and run a command line; errors become one line on stderr and an exit code."""
    try:
        if only == "answer-correctness":
            from . import tsv

            parser = _Parser(
                prog=prog,
                description="Judge the answer correctness of each row "
                "of a TSV file (Question, Reference answer, Actual answer).",
            )
            tsv.add_arguments(parser)
            return tsv.handle(parser.parse_args(argv))
        args = build_parser().parse_args(argv)
        return int(args.handler(args))
    except QaEvalError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (``| head``): stop quietly, as cat does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as e:  # an unexpected failure: one line, the traceback on request
        if os.environ.get("QA_EVAL_DEBUG"):
            traceback.print_exc()
        print(
            f"{prog}: unexpected error: {type(e).__name__}: {e} "
            "(set QA_EVAL_DEBUG=1 for a traceback)",
            file=sys.stderr,
        )
        return 1


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    return run_command(argv)


if __name__ == "__main__":
    sys.exit(main())
