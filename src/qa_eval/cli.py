"""The ``qa-eval`` command: parses arguments, calls the public API, formats the output.

Exit codes (the same table is in README.md and docs/ci.md):

====  ==========================================================================================
code  meaning
====  ==========================================================================================
0     success (every quality gate passed, or none was set)
1     unexpected failure: one line on stderr (``QA_EVAL_DEBUG=1`` shows the traceback)
2     bad input or usage: one line on stderr naming the file, record and field, or the option
3     a quality gate failed (``--fail-under``, ``--fail-on-regression``, ``--strict``); the
      results, aggregates, comparison, JUnit and Markdown files were written first
130   interrupted (Ctrl-C)
141   stdout was closed early (``qa-eval ... | head``)
====  ==========================================================================================
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import os
import signal
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn, TextIO

import orjson

from . import __version__, filekind
from . import gates as quality
from .aggregate import CATEGORIES, DEFAULT_TAGS, METRICS, SCORES, STEP_METRICS, compute_aggregates
from .config import GROUPS, SWITCHES
from .errors import InputError, QaEvalError
from .io import (
    JSONL_SUFFIXES,
    check_output_path,
    check_results,
    dump_json,
    read_data,
    read_reference,
    read_responses,
    signature_path,
    write_data,
)
from .redact import redact
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


def plan_table(judge: Any, width: int | None = None, batch: bool = False) -> str:
    """What a dry run would do, per metric: calls, cache hits, estimated tokens and cost (at
    batch rates with ``batch``); fits ``width``."""
    from functools import partial

    from .pricing import usd

    usd = partial(usd, batch=batch)  # type: ignore[assignment]

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
            "cost (est., batch rates)" if batch else "cost (est.)",
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
    _check_report_paths(args)
    bars = quality.parse_bars(args.fail_under or ())
    regressions = quality.parse_regressions(getattr(args, "fail_on_regression", None) or ())
    if regressions and len(systems) < 2:
        raise QaEvalError(
            "--fail-on-regression on evaluate compares each --system with the first: give two "
            "systems or more (or compare two results files with 'qa-eval compare')"
        )
    if args.concurrency is not None and args.concurrency < 1:
        raise QaEvalError("--concurrency must be at least 1")
    if args.max_cost is not None and not (math.isfinite(args.max_cost) and args.max_cost > 0):
        raise QaEvalError("--max-cost must be a positive, finite number of US dollars")
    from .config import MAX_REPEATS

    if args.no_wait and not args.batch:
        raise QaEvalError("--no-wait goes with --batch")
    if args.batch and args.no_cache:
        raise QaEvalError("--batch needs the cache (it records the batches): drop --no-cache")
    if args.batch and args.max_cost is not None:
        raise QaEvalError(
            "--batch and --max-cost cannot be combined: a batch is priced when it ends (use "
            "--dry-run --batch to see the estimated cost at batch rates)"
        )
    if args.repeats is not None and not 1 <= args.repeats <= MAX_REPEATS:
        raise QaEvalError(f"--repeats must be between 1 and {MAX_REPEATS}")
    config = load_config(args.config).with_options(
        concurrency=args.concurrency, repeats=args.repeats
    )
    if args.no_judge:
        if args.dry_run:
            raise QaEvalError("--dry-run plans the judge's calls: it cannot go with --no-judge")
        config = dataclasses.replace(config, generation=None)
    _check_gate_metrics(config, bars, regressions)
    disable = list(args.disable or ())
    enable = list(args.enable or ())
    if getattr(args, "input", None) is not None:
        from .flat import read_flat

        reference, responses = read_flat(args.input, _column_mapping(args.column or ()))
        args.reference = args.input
        runs: list[tuple[str | None, str, Any]] = [(None, args.input, responses)]
    else:
        reference = _read_input(args.reference, read_reference, "REFERENCE")
        stream = len(systems) == 1 and _streamed(args.output)
        runs = [
            (n, path, _read_input(path, lambda p: _responses_input(p, stream), "RESPONSES"))
            for n, path in systems
        ]
    _check_by_reference(reference, args.by or (), args.reference)
    _announce_default_judge(args, config, reference, runs, disable, enable)
    batched = None
    if args.batch and not args.dry_run:
        batched = _prefill(args, config, reference, runs, disable, enable)
        if batched.waiting:
            return 0
    done: list[tuple[str | None, str, Sequence[dict[str, Any]], dict[str, Any]]] = []
    for name, path, responses in runs:
        if name is not None and not args.quiet and args.format != "json":
            print(f"\n== system {name} ({path})")
        outcome = _evaluate_system(
            args, config, reference, responses, path, name, disable, enable, batched
        )
        if outcome is None:  # a dry run
            continue
        done.append((name, path, *outcome))
    shown = args.format == "json" or not args.quiet
    comparisons = [_comparison(args, done[0], o) for o in done[1:]] if shown or regressions else []
    if args.format == "json" and done:
        if len(done) == 1 and done[0][0] is None:
            report: Any = done[0][3]
        else:
            report = {"systems": {n: agg for n, _, _, agg in done}}
            if len(done) > 1:
                report["comparisons"] = comparisons
        sys.stdout.write(orjson.dumps(report, default=str, option=orjson.OPT_INDENT_2).decode())
        sys.stdout.write("\n")
    elif len(done) > 1 and not args.quiet:
        from .compare import format_table

        for other, comparison in zip(done[1:], comparisons):
            print(f"\n== {done[0][0]} vs {other[0]}")
            print(format_table(comparison))
    if not done:  # a dry run: nothing was evaluated, so there is nothing to gate
        return 0
    return _evaluation_gates(args, done, comparisons, bars, regressions)


ANNOUNCE_SAMPLE = 200
"""The questions whose judge calls are planned (a dry run) to estimate a whole run's."""


def _announce_default_judge(
    args: argparse.Namespace,
    config: Any,
    reference: Any,
    runs: Sequence[tuple[str | None, str, Any]],
    disable: list[str],
    enable: list[str],
) -> None:
    """Before the first call of a judge no config asked for (``OPENAI_API_KEY`` set, no
    ``--config``): which judge, why, and the calls and cost to expect, from a dry run of the
    first ``ANNOUNCE_SAMPLE`` questions scaled to all; on stderr, also with ``-q``."""
    if config.source != "environment" or config.generation is None or args.dry_run:
        return
    from .cache import open_cache
    from .errors import UnknownResponsesWarning
    from .judge import Judge
    from .pricing import usd

    sample: list[Any] = []
    total = taken = 0
    for template in reference:
        questions = template.get("questions") if isinstance(template, dict) else None
        if not isinstance(questions, list):
            continue
        count = len(questions)
        total += count
        if count and taken < ANNOUNCE_SAMPLE:
            sample.append({**template, "questions": questions[: ANNOUNCE_SAMPLE - taken]})
            taken += len(sample[-1]["questions"])
    calls = 0
    cost: float | None = 0.0
    for _, _, responses in runs:
        store = open_cache(False if args.no_cache else (args.cache or True))
        judge = Judge(config, cache=store, dry_run=True)
        try:
            with warnings.catch_warnings():  # the sample leaves most responses without question
                warnings.simplefilter("ignore", UnknownResponsesWarning)
                run_evaluation(
                    sample,
                    responses,
                    config=config,
                    judge=judge,
                    cache=False,
                    disable=disable,
                    enable=enable,
                    reference_source=args.reference,
                )
        finally:
            if store is not None:
                store.close()
        plan = judge.plan
        calls += sum(plan.calls.values())
        prompt, completion = sum(plan.prompt_tokens.values()), sum(plan.completion_tokens.values())
        spent = usd(judge.price, prompt, completion)
        cost = None if cost is None or spent is None else cost + spent
    scale = total / taken if taken else 0.0
    price = "cost unknown (no price known)"
    if cost is not None:
        price = f"about ${cost * scale:.{2 if cost * scale >= 0.01 else 4}f}"
    gen = config.generation
    estimate = ""
    if taken < total:
        estimate = f"; estimated from the first {taken} of {total} questions"
    print(
        f"note: no --config and OPENAI_API_KEY is set, so the LLM metrics use qa-eval's default "
        f"judge, {gen.provider} {gen.model}: about {round(calls * scale)} judge calls, {price} "
        f"(cached replies not counted{estimate}); --no-judge switches the LLM metrics off, "
        "--dry-run shows the plan",
        file=sys.stderr,
        flush=True,
    )


def _prefill(
    args: argparse.Namespace,
    config: Any,
    reference: Any,
    runs: Sequence[tuple[str | None, str, Any]],
    disable: list[str],
    enable: list[str],
) -> Any:
    """``--batch``: fill the cache through the provider's Batch API (qa_eval.batch); with
    ``--no-wait`` the batches may still be in flight when this returns (then it says so)."""
    from .batch import prefill

    quiet = args.quiet or args.format == "json"

    def say(line: str) -> None:
        if not quiet:
            print(line, file=sys.stderr, flush=True)

    cache: Any = args.cache or True
    report = prefill(
        [(reference, responses) for _, _, responses in runs],
        config=config,
        cache=cache,
        enable=enable,
        disable=disable,
        no_wait=args.no_wait,
        report=say,
        reference_source=args.reference,
    )
    if report.waiting:
        print(
            f"batch: {len(report.waiting)} batch(es) in flight ({', '.join(report.waiting)}); "
            "nothing was written yet: run the same command again to collect them and finish "
            "(with --no-wait it looks once and exits again while they run)",
            file=sys.stderr if args.format == "json" else sys.stdout,
        )
    elif not quiet:
        print(report.line(), file=sys.stderr)
    return report


def _comparison(args: argparse.Namespace, a: tuple[Any, ...], b: tuple[Any, ...]) -> dict[str, Any]:
    from .compare import compare_runs

    exclude = getattr(args, "exclude_errors", False)
    try:
        return compare_runs(
            a[2], b[2], labels=(a[0], b[0]), errors="exclude" if exclude else "fail"
        )
    except ValueError as e:
        raise QaEvalError(f"comparing {a[0]} with {b[0]}: {e}") from None


def _evaluate_system(
    args: argparse.Namespace,
    config: Any,
    reference: Any,
    responses: Any,
    responses_source: str,
    system: str | None,
    disable: list[str],
    enable: list[str],
    batched: Any = None,
) -> tuple[Sequence[dict[str, Any]], dict[str, Any]] | None:
    output = _for_system(args.output, system)
    aggregates_path = _for_system(args.aggregates, system)
    cache: Any = False if args.no_cache else (args.cache or True)
    judge = None
    if args.dry_run:
        if config.generation is None:
            raise QaEvalError("--dry-run needs a judge: pass --config or set OPENAI_API_KEY")
        from .cache import open_cache
        from .judge import Judge

        judge = Judge(config, cache=open_cache(cache), dry_run=True)
    elif batched is not None:
        from .batch import final_judge

        judge = final_judge(config, cache)  # the batches' replies; anything else synchronously
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
                reference, responses, options, partial, _tags(args), config
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
            partial.close()  # run_command's interrupt line says where its results are
        if judge is not None and judge.cache is not None:
            judge.cache.close()
        raise
    progress.close()
    if partial is not None:
        partial.close()
    if judge is not None and judge.cache is not None:
        judge.cache.close()
    elapsed = time.monotonic() - started
    if args.dry_run and judge is not None:
        print(plan_table(judge, _stdout_width(), batch=getattr(args, "batch", False)))
        print("\ndry run: no judge call was made and nothing was written")
        return None
    signature: dict[str, Any] = getattr(results, "signature", {})
    if args.no_judge and signature.get("llm_metrics"):
        signature["llm_metrics"] = "LLM metrics not computed: switched off by --no-judge"
    if batched is not None:
        signature["batch"] = batched.as_dict()
        if judge is not None and judge.cache is not None:
            signature["options"]["cache"] = str(judge.cache.path)
    if aggregates is None:
        _copy_tags(results, reference, args.by or ())
        # the config's custom metric outputs are aggregated too
        aggregates = compute_aggregates(results, config, by=_tags(args))
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
        mismatches = _mismatch_summary(notable)
        if mismatches:
            print(mismatches)
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



def _evaluate_streamed(
    reference: Any,
    responses: Any,
    options: dict[str, Any],
    partial: _PartialFile,
    tags: list[str],
    config: Any = None,
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
        aggregates = compute_aggregates(results(), config, by=tags)
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
    mismatches = _mismatches(result)
    if mismatches:
        keys = keys or {"question_id": result.get("question_id")}
        keys["mismatches"] = mismatches
    return keys


def _mismatches(result: dict[str, Any]) -> list[str]:
    """The ``mismatch`` texts of a result's reference steps (or of a slim result's list)."""
    if "mismatches" in result:
        return list(result["mismatches"])
    return [
        step["mismatch"]
        for group in result.get("reference_steps") or ()
        if isinstance(group, list)
        for step in group
        if isinstance(step, dict) and isinstance(step.get("mismatch"), str)
    ]


def _mismatch_summary(results: Sequence[dict[str, Any]]) -> str | None:
    """``mismatches (reference steps): 2 not evaluated, 1 rows missing, ...``, or None."""
    from collections import Counter

    from .steps.explain import mismatch_kinds

    counts: Counter[str] = Counter()
    for result in results:
        for text in _mismatches(result):
            counts.update(mismatch_kinds(text))
    if not counts:
        return None
    kinds = ", ".join(f"{n} {kind}" for kind, n in counts.most_common())
    return f"mismatches (reference steps; see 'mismatch' in the results): {kinds}"


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


def _metrics(args: argparse.Namespace) -> int:
    """``qa-eval metrics``: the metric registry, as text blocks or JSON."""
    from .metrics import RANKING, describe_metrics, key_info, parse_at_k

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
            f"needs {' + '.join(needs)}" if needs else "no judge",
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


def _refresh(args: argparse.Namespace) -> int:
    from .refresh import RefreshRefused, RefreshResult, refresh_reference_file

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


def _schema(args: argparse.Namespace) -> int:
    from .schemas import schema_text

    sys.stdout.write(schema_text(args.name))
    return 0


def _compare(args: argparse.Namespace) -> int:
    from .compare import MAX_RESAMPLES, compare_runs, format_table

    if not 1 <= args.resamples <= MAX_RESAMPLES:
        raise QaEvalError(f"--resamples must be between 1 and {MAX_RESAMPLES:,}")
    if args.include_errors:
        raise QaEvalError(
            "--include-errors was removed: errors now count as failed answers by default; "
            "--exclude-errors leaves out the questions that are an error in either run"
        )
    _check_report_paths(args)
    regressions = quality.parse_regressions(args.fail_on_regression or ())
    paths = (args.results_a, args.results_b)
    runs = [_read_results(path, "compare") for path in paths]
    notes = _check_same_reference(paths, [_read_signature(p) for p in paths], args)
    default_a, default_b = (Path(p).stem for p in (args.results_a, args.results_b))
    labels = (args.label_a or default_a, args.label_b or default_b)
    try:
        comparison = compare_runs(
            runs[0],
            runs[1],
            metrics=_compared_metrics(args.metric, runs, regressions),
            resamples=args.resamples,
            seed=args.seed,
            labels=labels,
            errors="exclude" if args.exclude_errors else "fail",
        )
    except ValueError as e:
        raise QaEvalError(str(e)) from None
    if args.output:
        write_data(args.output, comparison)
    if args.format == "json":
        sys.stdout.write(orjson.dumps(comparison, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        print(format_table(comparison))
    gates = quality.regression_gates(comparison, regressions)
    if args.junit:
        Path(args.junit).write_bytes(quality.junit_xml(gates, name="qa-eval compare"))
    if args.summary_md:
        summary = quality.markdown_compare(comparison, gates, notes)
        Path(args.summary_md).write_text(summary, encoding="utf-8")
    _print_notes(notes)
    return _gate_outcome(gates, quiet=False)


def _report(args: argparse.Namespace) -> int:
    from .compare import compare_runs
    from .report import Run, build_report, run_labels

    target = Path(args.output)
    if not target.parent.is_dir():
        raise QaEvalError(f"{args.output}: the folder does not exist")
    if args.max_questions < 0:
        raise QaEvalError(f"--max-questions must be 0 (all) or more, got {args.max_questions}")
    runs = [
        Run(label, _read_results(p, "report"), _read_signature(p))
        for p, label in zip(args.results, run_labels(args.results))
    ]
    comparison: Any = False
    notes: list[str] = []
    if len(runs) >= 2 and not args.no_compare:
        first, second = runs[:2]
        notes = _check_same_reference(
            args.results[:2], [first.signature, second.signature], args
        )
        try:
            compared = compare_runs(
                first.results,
                second.results,
                labels=(first.label, second.label),
                errors="exclude" if args.exclude_errors else "fail",
            )
        except ValueError as e:  # e.g. a question id twice in one run
            raise QaEvalError(f"comparing {first.label} with {second.label}: {e}") from None
        comparison = compared
    page = build_report(runs, comparison, args.title, max_questions=args.max_questions or None)
    target.write_text(page, encoding="utf-8")
    size = target.stat().st_size / 1e6
    print(f"wrote {target} ({size:.1f} MB, {len(runs)} run(s)); open it in a browser")
    _print_notes(notes)
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
    results = _read_results(args.results, "aggregate")
    _check_by_results(results, args.by or (), args.results)
    try:
        aggregates = compute_aggregates(results, args.config, by=_tags(args))
    except TypeError as e:
        raise QaEvalError(f"{args.results}: {e}") from None
    if args.output:
        write_data(args.output, aggregates)
    else:
        import yaml

        print(yaml.safe_dump(aggregates, sort_keys=False, allow_unicode=True), end="")
    return 0


# ---------------------------------------------------------------- wrong inputs, gates, CI files

_EVALUATE_INPUTS: dict[str, tuple[tuple[str, ...], str, bool]] = {
    "REFERENCE": (
        (filekind.REFERENCE,),
        "`qa-eval evaluate` expects a reference dataset (a list of templates with questions) "
        "as REFERENCE",
        False,
    ),
    "RESPONSES": (
        (filekind.RESPONSES,),
        "`qa-eval evaluate` expects responses (records with question_id and actual_answer, "
        "actual_steps or error) as RESPONSES",
        True,
    ),
}


def _read_input(path: str, reader: Any, role: str) -> Any:
    """Read REFERENCE or RESPONSES of ``evaluate``, refusing another kind of qa-eval file."""
    data = reader(path)
    accept, expected, weak_ok = _EVALUATE_INPUTS[role]
    filekind.require(data, str(path), accept, expected, weak_results_ok=weak_ok)
    return data


def _read_results(path: str, command: str) -> list[Any]:
    """Read a results file for ``command``, refusing a reference dataset, responses,
    aggregates and the like (they would be "aggregated" into made-up numbers)."""
    data = read_data(path)
    expected = f"`qa-eval {command}` expects results written by `qa-eval evaluate -o`"
    filekind.require(data, str(path), (filekind.RESULTS,), expected)
    return check_results(data, str(path))


def _read_signature(results_path: str) -> dict[str, Any] | None:
    """The run signature beside a results file (``RESULTS.signature.yaml``), if there is one."""
    sig_file = signature_path(results_path)
    if not sig_file.is_file():
        return None
    signature = read_data(sig_file)
    if signature is None:
        return None
    return dict(signature) if isinstance(signature, dict) else {"signature": signature}


def _fingerprint(signature: Any) -> str | None:
    reference = signature.get("reference") if isinstance(signature, dict) else None
    value = reference.get("fingerprint") if isinstance(reference, dict) else None
    return value if isinstance(value, str) else None


def _check_same_reference(
    paths: Sequence[str], signatures: Sequence[Any], args: argparse.Namespace
) -> list[str]:
    """Refuse two runs evaluated against different reference datasets (their questions would be
    paired by accidental id matches) unless ``--allow-different-references``; returns the notes
    to print once the command succeeded (a run without a fingerprint cannot be checked)."""
    fingerprints = [_fingerprint(s) for s in signatures]
    notes = []
    missing = [p for p, f in zip(paths, fingerprints) if f is None]
    if missing:
        notes.append(
            f"{', '.join(missing)}: no reference fingerprint (no RESULTS.signature.yaml, or one "
            "written before qa-eval recorded it), so it is not checked that the runs used the "
            "same reference dataset"
        )
    elif fingerprints[0] != fingerprints[1]:
        a, b = fingerprints
        message = (
            f"{paths[0]} and {paths[1]} were evaluated against different reference datasets "
            f"(fingerprints {str(a)[:19]}... and {str(b)[:19]}...): their questions would be "
            "paired by matching ids only"
        )
        if not getattr(args, "allow_different_references", False):
            raise QaEvalError(f"{message}; pass --allow-different-references to compare anyway")
        notes.append(f"{message} (--allow-different-references)")
    return notes


def _print_notes(notes: Sequence[str]) -> None:
    for note in notes:
        print(f"note: {note}", file=sys.stderr)


def _compared_metrics(
    chosen: Sequence[str] | None, runs: Sequence[Sequence[Any]], regressions: Sequence[Any]
) -> list[str] | None:
    """The metrics to compare: ``--metric``s plus the gated ones; a gated metric neither run
    has is a usage error listing the metrics they have."""
    if not regressions:
        return list(chosen) if chosen else None
    from .compare import default_metrics

    available = default_metrics(*([r for r in run if isinstance(r, dict)] for run in runs))
    for metric, _ in regressions:
        if metric not in available:
            raise QaEvalError(
                f"--fail-on-regression {metric}: no such metric in these runs (metrics: "
                f"{', '.join(available) or 'none'})"
            )
    if not chosen:
        return None
    return [*chosen, *(m for m, _ in regressions if m not in chosen)]


def _known_metrics(config: Any) -> list[str]:
    steps = [m for names in STEP_METRICS.values() for m in names]
    custom = [o for m in config.custom_metrics for o in (m.get("outputs") or {})]
    return list(dict.fromkeys([*METRICS, *steps, *custom]))


def _check_gate_metrics(config: Any, bars: Sequence[Any], regressions: Sequence[Any]) -> None:
    """Before the run: a gate on a metric qa-eval does not compute is a usage error."""
    known = _known_metrics(config)
    for option, specs in (("--fail-under", bars), ("--fail-on-regression", regressions)):
        for metric, _ in specs:
            if metric not in known:
                raise QaEvalError(
                    f"{option} {metric}: unknown metric (metrics: {', '.join(known)})"
                )


def _check_report_paths(args: argparse.Namespace) -> None:
    """Fail before a long run on a JUnit or Markdown path that cannot be written."""
    for path in (getattr(args, "junit", None), getattr(args, "summary_md", None)):
        if path is None:
            continue
        file = Path(path)
        if file.is_dir():
            raise InputError("is a directory, not a file", source=path)
        if not file.parent.is_dir():
            raise InputError("the folder does not exist", source=path)


_RESULT_TAGS = ("template_id", "question_id", "question_text", "status", "error", *CATEGORIES)
"""Keys results have that do not come from the question: always fine for ``--by``."""


def _reference_questions(reference: Any) -> list[dict[str, Any]]:
    questions: list[dict[str, Any]] = []
    for template in reference if isinstance(reference, list) else ():
        items = template.get("questions") if isinstance(template, dict) else None
        questions += [q for q in items or () if isinstance(q, dict)]
    return questions


def _is_tag(value: Any) -> bool:
    return value is not None and not isinstance(value, (dict, list))


def _check_by_reference(reference: Any, keys: Sequence[str], source: str) -> None:
    """An explicit ``--by KEY`` that no reference question has is a usage error."""
    questions = _reference_questions(reference)
    for key in dict.fromkeys(keys):
        if key in _RESULT_TAGS or any(_is_tag(q.get(key)) for q in questions):
            continue
        have = sorted(
            {k for q in questions for k, v in q.items() if _is_tag(v)}
            - {"id", "question_text", "reference_answer"}
        )
        raise InputError(
            f"--by {key}: no question has this key (question keys: "
            f"{', '.join([*have, 'template_id', 'status'])})",
            source=source,
        )


def _copy_tags(results: Sequence[dict[str, Any]], reference: Any, keys: Sequence[str]) -> None:
    """Copy the question keys named by ``--by`` into the results that lack them, so they can be
    aggregated (a result copies only ``question_type`` from its question)."""
    wanted = [k for k in dict.fromkeys(keys) if k not in _RESULT_TAGS]
    if not wanted or all(all(k in r for k in wanted) for r in results):
        return
    by_id = {q.get("id"): q for q in _reference_questions(reference)}
    for result in results:
        question = by_id.get(result.get("question_id"))
        for key in wanted:
            if question is not None and key not in result and key in question:
                result[key] = question[key]


def _check_by_results(results: Sequence[Any], keys: Sequence[str], source: str) -> None:
    """An explicit ``--by KEY`` that no result has a value for is a usage error."""
    records = [r for r in results if isinstance(r, dict)]
    if not records:
        return
    for key in dict.fromkeys(keys):
        if not any(_is_tag(r.get(key)) for r in records):
            raise InputError(f"--by {key}: no result has a value for this key", source=source)


def _evaluation_gates(
    args: argparse.Namespace,
    done: Sequence[tuple[str | None, str, Sequence[dict[str, Any]], dict[str, Any]]],
    comparisons: Sequence[dict[str, Any]],
    bars: Sequence[tuple[str, float]],
    regressions: Sequence[tuple[str, float]],
) -> int:
    """Check the gates of an evaluation, write the JUnit and Markdown files, return the exit
    code (3 when a gate failed). The results were written before."""
    gates: list[quality.Gate] = []
    for name, _, results, aggregates in done:
        gates += quality.fail_under_gates(aggregates, results, bars, name)
        if args.strict:
            gates.append(quality.strict_gate(quality.problems_of(results), name))
    for other, comparison in zip(done[1:], comparisons):
        gates += quality.regression_gates(comparison, regressions, f"{done[0][0]} vs {other[0]}")
    if args.junit:
        runs = [(name, results) for name, _, results, _ in done]
        Path(args.junit).write_bytes(quality.junit_xml(gates, runs, name="qa-eval evaluate"))
    if args.summary_md:
        summary = quality.markdown_evaluate([(n, r, a) for n, _, r, a in done], gates)
        Path(args.summary_md).write_text(summary, encoding="utf-8")
    return _gate_outcome(gates, quiet=args.quiet)


def _gate_outcome(gates: Sequence[quality.Gate], quiet: bool) -> int:
    """Print each gate (failed ones even when quiet) on stderr; 3 when one failed, else 0."""
    for gate in gates:
        if not gate.passed or not quiet:
            print(gate.line(), file=sys.stderr)
    failed = sum(not gate.passed for gate in gates)
    if failed:
        print(f"{PROG}: {failed} of {len(gates)} quality gate(s) failed", file=sys.stderr)
        return 3
    return 0


def _report_options(group: Any) -> None:
    group.add_argument(
        "--junit",
        metavar="FILE",
        help="write a JUnit XML file: a test case per gate (and per question for evaluate)",
    )
    group.add_argument(
        "--summary-md",
        metavar="FILE",
        help='write a Markdown summary for a CI job page (e.g. "$GITHUB_STEP_SUMMARY")',
    )


_REGRESSION_HELP = (
    "exit 3 when B is significantly worse than A on METRIC (adjusted p) by more than MARGIN "
    "(default 0); repeatable, several metrics at once"
)


def _gate_options(command: argparse.ArgumentParser, regression: bool) -> None:
    group = command.add_argument_group("CI gates (exit 3 when one fails; see docs/ci.md)")
    group.add_argument(
        "--fail-under",
        nargs="+",
        action="extend",
        metavar="METRIC=VALUE",
        help="exit 3 when the micro mean of METRIC is below VALUE (scores on 0-1); with "
        "--system, for each system",
    )
    if regression:
        group.add_argument(
            "--fail-on-regression",
            nargs="+",
            action="extend",
            metavar="METRIC[:MARGIN]",
            help=_REGRESSION_HELP.replace("B is", "a --system is").replace(" A ", " the first "),
        )
    group.add_argument(
        "--strict",
        action="store_true",
        help="exit 3 when a metric value could not be computed (judge failure, budget, parse "
        "error), a step could not be compared or a question had no response",
    )
    _report_options(group)


def _compare_gate_options(compare: argparse.ArgumentParser) -> None:
    compare.add_argument(
        "--allow-different-references",
        action="store_true",
        help="compare runs whose signatures show different reference datasets",
    )
    group = compare.add_argument_group("CI gates (exit 3 when one fails; see docs/ci.md)")
    group.add_argument(
        "--fail-on-regression",
        nargs="+",
        action="extend",
        metavar="METRIC[:MARGIN]",
        help=_REGRESSION_HELP,
    )
    _report_options(group)


_BY_HELP = "also aggregate per value of this result key (repeatable; default: question_type)"
_EXCLUDE_ERRORS_HELP = (
    "compare only the questions neither run got an error on (default: an error is a failed "
    "answer, 0 on quality metrics)"
)


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
        "--no-judge",
        action="store_true",
        help="no LLM metrics: call no judge, even with OPENAI_API_KEY set or a config's llm",
    )
    judge.add_argument(
        "--max-cost", type=float, metavar="USD", help="start no judge call once this much was spent"
    )
    judge.add_argument(
        "--repeats",
        type=int,
        metavar="N",
        help="ask every LLM metric N times per question: mean, sd and flips show the judge's "
        "own noise (default 1, or llm.repeats)",
    )
    judge.add_argument(
        "--batch",
        action="store_true",
        help="send the judge calls through the provider's Batch API (OpenAI, Azure OpenAI) at "
        "half the price, then finish from the cache; a rerun picks up batches in flight",
    )
    judge.add_argument(
        "--no-wait",
        action="store_true",
        help="with --batch: submit (or check) the batches and exit; a later run collects them",
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
    _gate_options(evaluate, regression=True)
    evaluate.add_argument("--exclude-errors", action="store_true", help=_EXCLUDE_ERRORS_HELP)
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
    _gate_options(flat, regression=False)
    flat.set_defaults(handler=_evaluate, reference=None, responses=None)

    aggregate = commands.add_parser(
        "aggregate",
        help="aggregate per-question results",
        description="Compute per-template, micro and macro aggregates of evaluation results.",
    )
    aggregate.add_argument("results", help="results written by 'qa-eval evaluate -o'")
    aggregate.add_argument("-o", "--output", help="write aggregates here instead of stdout")
    aggregate.add_argument(
        "--config", help="the run's config: its custom metrics' numeric outputs are aggregated too"
    )
    aggregate.add_argument("--by", action="append", metavar="KEY", help=_BY_HELP)
    aggregate.set_defaults(handler=_aggregate)

    refresh = commands.add_parser(
        "refresh-references",
        help="re-run the reference SPARQL queries and update their outputs",
        description="Re-run the SPARQL queries of a reference dataset against an RDF file "
        "(embedded store) or a SPARQL endpoint, update the outputs that changed and print what "
        "changed. Only the changed outputs are rewritten (comments and layout stay); a file "
        "with no change is not written. The file is updated in place unless -o or --dry-run "
        "is given. A refresh that would empty outputs that had rows, or change more than "
        "--max-changes outputs, stops with exit code 2 unless --force.",
    )
    refresh.add_argument("reference", help="reference dataset (.yaml or .json)")
    source = refresh.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--store", metavar="GRAPH_FILE", help="RDF file (.ttl, .nt, .nq, .trig, .rdf, .jsonld)"
    )
    source.add_argument("--endpoint", metavar="URL", help="SPARQL 1.1 endpoint (http or https)")
    refresh.add_argument("-o", "--output", help="write the refreshed dataset here instead")
    refresh.add_argument(
        "--dry-run",
        action="store_true",
        help="print the changes with the first rows added and removed, write nothing",
    )
    refresh.add_argument(
        "--force",
        action="store_true",
        help="write even when outputs that had rows become empty or more than --max-changes "
        "outputs change",
    )
    refresh.add_argument(
        "--max-changes",
        metavar="N|PCT",
        default="50%",
        help="without --force, change at most N outputs or PCT%% of the steps run (default 50%%)",
    )
    refresh.add_argument(
        "--header",
        action="append",
        metavar="'NAME: VALUE'",
        help="HTTP header sent to --endpoint (repeatable), e.g. 'Authorization: Bearer ...'; "
        "basic auth also comes from QA_EVAL_SPARQL_USER and QA_EVAL_SPARQL_PASSWORD",
    )
    refresh.add_argument(
        "--default-graph-uri",
        action="append",
        metavar="URI",
        help="the graph the queries read by default (repeatable: their merge); sent to "
        "--endpoint as default-graph-uri, or picks named graphs of --store",
    )
    refresh.add_argument(
        "--timeout", type=float, default=30.0, help="seconds per endpoint query (default 30)"
    )
    refresh.add_argument("--format", choices=("text", "json"), default="text")
    refresh.set_defaults(handler=_refresh)

    schema = commands.add_parser(
        "schema",
        help="print the JSON Schema of the reference, responses or results format",
        description="Print the JSON Schema (draft 2020-12) of a qa-eval file format, e.g. to "
        "validate what an agent emits (see docs/integrations.md).",
    )
    schema.add_argument("name", choices=("reference", "responses", "results"))
    schema.set_defaults(handler=_schema)

    metrics = commands.add_parser(
        "metrics",
        help="list every metric: its keys, direction, whether it needs a judge, its doc page",
    )
    metrics.add_argument(
        "name", nargs="?", help="only this metric (a family, a key's family or e.g. ndcg@10)"
    )
    metrics.add_argument("--format", choices=("text", "json"), default="text")
    metrics.set_defaults(handler=_metrics)

    compare = commands.add_parser(
        "compare",
        help="compare two runs: deltas, paired permutation test (Holm-adjusted), wins/losses",
        description="Compare the results of system B with those of system A on the questions "
        "both answered, per metric and per template (see docs/compare.md).",
    )
    compare.add_argument("results_a", help="results of system A (qa-eval evaluate -o)")
    compare.add_argument("results_b", help="results of system B")
    compare.add_argument("--label-a", help="name of system A (default: the file name)")
    compare.add_argument("--label-b", help="name of system B (default: the file name)")
    compare.add_argument("--metric", action="append", help="compare only this metric (repeatable)")
    compare.add_argument(
        "--resamples",
        type=int,
        default=10_000,
        help="random sign flips per row of more than 16 questions (default 10000, at most 1e6)",
    )
    compare.add_argument("--seed", type=int, default=0, help="seed of the sign flips (default 0)")
    compare.add_argument("--exclude-errors", action="store_true", help=_EXCLUDE_ERRORS_HELP)
    compare.add_argument("--include-errors", action="store_true", help=argparse.SUPPRESS)
    compare.add_argument("-o", "--output", help="also write the comparison (.yaml, .json)")
    compare.add_argument("--format", choices=("text", "json"), default="text")
    _compare_gate_options(compare)
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
    report.add_argument(
        "--allow-different-references",
        action="store_true",
        help="compare the first two runs even when their signatures show different reference "
        "datasets",
    )
    report.add_argument("--exclude-errors", action="store_true", help=_EXCLUDE_ERRORS_HELP)
    report.add_argument(
        "--max-questions",
        type=int,
        default=2000,
        metavar="N",
        help="list at most N questions in the drill-down, worst first (default 2000; 0: all)",
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


def interrupted_message(args: argparse.Namespace | None) -> str:
    """The line printed on Ctrl-C or SIGTERM: where the finished results are (the partial file
    of ``-o``) and whether a rerun reuses the judge cache."""
    if args is None or getattr(args, "handler", None) is not _evaluate:
        return "interrupted"
    if getattr(args, "dry_run", False):
        return "interrupted (dry run: nothing was written)"
    parts = ["interrupted"]
    output = getattr(args, "output", None)
    if output:
        try:
            systems = [name for name, _ in _systems(args)]
        except QaEvalError:
            systems = [None]
        found = []
        for system in systems:
            partial = Path(f"{_for_system(output, system)}.partial.jsonl")
            with contextlib.suppress(OSError):
                with partial.open("rb") as f:
                    count = sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
                found.append(f"{partial} ({count} question(s))")
        if found:
            parts.append(f"the finished results are in {', '.join(found)}")
        else:
            parts.append("no result was finished yet")
    else:
        parts.append("no -o was given, so no per-question results were written")
    if getattr(args, "batch", False) and not getattr(args, "no_cache", False):
        parts.append(
            "batches already submitted are recorded in the cache: a rerun collects them instead "
            "of submitting them again"
        )
    if getattr(args, "no_cache", False):
        parts.append("no cache was used (--no-cache): a rerun makes every judge call again")
    else:
        from .cache import default_cache_path

        cache = getattr(args, "cache", None) or default_cache_path()
        parts.append(
            f"a rerun reuses the judge replies stored in the cache {cache}, so the finished "
            "judge calls are not made (or paid) again"
        )
    return "; ".join(parts)


def _on_sigterm(signum: int, frame: Any) -> None:
    """SIGTERM does what Ctrl-C does: inside asyncio.run, its SIGINT handler cancels the run
    (which ends in KeyboardInterrupt); elsewhere, KeyboardInterrupt at once."""
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler) and handler is not _on_sigterm:
        handler(signal.SIGINT, frame)
    else:
        raise KeyboardInterrupt


@contextlib.contextmanager
def _signals_and_warnings(prog: str) -> Iterator[None]:
    """SIGTERM handled like SIGINT (main thread only), and qa-eval's warnings as one line each."""
    from .cache import CacheWarning
    from .errors import UnknownResponsesWarning

    previous: Any = None
    main_thread = threading.current_thread() is threading.main_thread()
    if main_thread:
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    default_show = warnings.showwarning

    def show(message: Any, category: Any, *rest: Any, **more: Any) -> None:
        if isinstance(category, type) and issubclass(
            category, (CacheWarning, UnknownResponsesWarning)
        ):
            print(f"{prog}: warning: {redact(str(message))}", file=sys.stderr)
        else:
            default_show(message, category, *rest, **more)

    try:
        with warnings.catch_warnings():
            warnings.showwarning = show
            yield
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)


def run_command(argv: Sequence[str] | None, prog: str = PROG, only: str | None = None) -> int:
    """Parse and run a command line; errors become one line on stderr and an exit code.

    Ctrl-C and SIGTERM exit with 130 and say where the finished results are. Whatever is printed
    is redacted of API keys."""
    args: argparse.Namespace | None = None
    with _signals_and_warnings(prog):
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
            print(f"{prog}: error: {redact(str(e))}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print(f"{prog}: {interrupted_message(args)}", file=sys.stderr)
            return 130
        except BrokenPipeError:  # the reader went away (``| head``): stop quietly, as cat does
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 141
        except Exception as e:  # an unexpected failure: one line, the traceback on request
            if os.environ.get("QA_EVAL_DEBUG"):
                print(redact(traceback.format_exc()), end="", file=sys.stderr)
            print(
                f"{prog}: unexpected error: {type(e).__name__}: {redact(str(e))} "
                "(set QA_EVAL_DEBUG=1 for a traceback)",
                file=sys.stderr,
            )
            return 1


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    return run_command(argv)


if __name__ == "__main__":
    sys.exit(main())
