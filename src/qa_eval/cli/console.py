"""Terminal output with rich: tables that fit the terminal, and what ``qa-eval evaluate`` prints.

- :class:`Progress` (in :mod:`qa_eval.cli.display`): the run's progress display, redrawn in place.
- :func:`render_table`: a plain-text table (no colours) that fits a width: columns whose cells are
  all empty and rows with no value are left out; when the columns do not fit side by side, they
  go into several blocks one under the other, each repeating the first column (cells fold only
  when one column alone is wider than the terminal). Without a width, the table keeps its natural
  width (output to a file or a pipe).
- what ``qa-eval evaluate`` prints, from what :func:`qa_eval.run.files.run_plan` returns: the
  summary table (:func:`summary_table`), the judge's usage, the dry run's plan
  (:func:`plan_table`), the warnings, and :class:`ConsoleObserver`, which prints them as a run
  goes (with a :class:`Progress` per system).
"""

from __future__ import annotations

import io
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..aggregate import CATEGORIES, SCORES
from ..io.numbers import format_number, scale_of
from ..metrics.agents.trials import table_rows
from ..run.files import Observer, SystemRun
from ..run.notable import Notable
from ..vocabulary.lookup import family_headlines
from .display import Progress, terminal_width

if TYPE_CHECKING:
    from ..run.estimate import JudgeCallPlan, JudgeEstimate
    from ..run.plan import SystemPlan

__all__ = [
    "ConsoleObserver",
    "default_judge_note",
    "format_table",
    "label_lines",
    "mismatch_summary",
    "plan_table",
    "render_table",
    "summary_table",
    "trials_table",
    "usage_line",
    "warning_lines",
]

_RULE = "    \n    \n -  \n    \n    \n    \n    \n    \n"
"""The tables' box (rich's, made where a table is drawn: rich loads once a table is drawn, not
when a run starts): a header underlined with dashes, columns two spaces apart, nothing else."""
_GAP = 3
"""Columns are 3 characters apart (a space of padding on each side and the rule's gap)."""


def _text(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 100 else f"{value:.1f}"
    return str(value)


def render_table(
    headers: Sequence[str], rows: Sequence[Sequence[Any]], width: int | None = None
) -> str:
    """A plain-text table of ``rows`` under ``headers``, numbers right-aligned, None shown as
    ``-``; fits ``width`` columns when given (see the module docstring)."""
    from rich import box
    from rich.cells import cell_len
    from rich.console import Console
    from rich.table import Table

    keep = [0] + [
        c for c in range(1, len(headers)) if not rows or any(r[c] is not None for r in rows)
    ]
    kept_rows = [r for r in rows if len(keep) == 1 or any(r[c] is not None for c in keep[1:])]
    cells = [[_text(r[c]) for c in keep] for r in kept_rows]
    names = [headers[c] for c in keep]
    widest = [max((cell_len(row[i]) for row in cells), default=0) for i in range(len(names))]
    natural = [max(widest[i], cell_len(names[i])) for i in range(len(names))]
    # The header may wrap at its spaces; a value never folds unless one column alone is too wide.
    compact = [
        max(widest[i], *(cell_len(word) for word in names[i].split() or [""]))
        for i in range(len(names))
    ]
    blocks = [list(range(1, len(names)))]
    sizes = list(natural)
    if width is not None and natural[0] + sum(w + _GAP for w in natural[1:]) > width:
        sizes = list(compact)
        sizes[0] = min(natural[0], max(compact[0], 8), max(8, width // 3))
        blocks = []
        current: list[int] = []
        used = sizes[0]
        for i in range(1, len(names)):
            if current and used + _GAP + compact[i] > width:
                blocks.append(current)
                current, used = [], sizes[0]
            current.append(i)
            used += _GAP + compact[i]
        blocks.append(current)
        for block in blocks:  # room left in a block: headers on fewer lines
            spare = width - sizes[0] - sum(sizes[i] + _GAP for i in block)
            for i in block:
                grow = min(spare, natural[i] - sizes[i])
                if grow > 0:
                    sizes[i] += grow
                    spare -= grow
    out = io.StringIO()
    console = Console(
        file=out,
        width=width or 100_000,  # without a width, the natural width: nothing is folded
        color_system=None,
        force_terminal=False,
        legacy_windows=False,
        emoji=False,
        highlight=False,
        markup=False,
    )
    for number, block in enumerate(blocks):
        table = Table(
            box=box.Box(_RULE, ascii=True),
            show_edge=False,
            pad_edge=False,
            padding=(0, 1),
            header_style="",
        )
        table.add_column(names[0], overflow="fold", width=sizes[0])
        for i in block:
            table.add_column(names[i], justify="right", overflow="fold", width=sizes[i])
        for row in cells:
            table.add_row(*(row[i] for i in (0, *block)))
        if number:
            console.print()
        console.print(table)
    return "\n".join(line.rstrip() for line in out.getvalue().rstrip("\n").split("\n"))


def format_table(
    headers: Sequence[str], rows: Sequence[Sequence[Any]], width: int | None = None
) -> str:
    """A plain text table with right-aligned numbers (None shown as ``-``); columns and rows
    with no value are left out. With ``width``, it fits that many columns (blocks of columns,
    folded cells); without, it keeps its natural width."""
    return render_table(headers, rows, width)


def stdout_width() -> int | None:
    """The width of the terminal standard output goes to; None when it is not a terminal."""
    return terminal_width(sys.stdout)


_PERCENT = ("ragas_score", "factual_accuracy")
"""Shown as percentages, as the GraphRAG metrics document writes them (stored on 0-1)."""


def _header(metric: str) -> str:
    return f"{metric} % (mean)" if metric in _PERCENT else f"{metric} (mean)"


def _mean(stats: dict[str, Any], metric: str) -> str | None:
    block = stats.get(metric, {})
    mean = block.get("mean")
    if not block.get("n", 1) or mean is None:
        return None
    return format_number(mean, "percent" if metric in _PERCENT else scale_of(metric))


def label_lines(aggregates: dict[str, Any]) -> list[str]:
    """One line per counted label (grades, answer classes) over all questions."""
    lines = []
    for key in CATEGORIES:
        block = aggregates["micro"].get(key)
        if block:
            counts = ", ".join(f"{label} {n}" for label, n in block["counts"].items())
            lines.append(f"{key}: {counts} (of {block['n']})")
    return lines


def summary_metrics(micro: Mapping[str, Any]) -> list[str]:
    """The metrics of the summary, in order: the headline scores the run computed, then the
    headline of every other family it computed (a family without headline scores shows its
    0-1 scores, an F1 standing for its recall and precision), then tokens and time."""
    shown = [m for m in SCORES if m not in ("answer_recall", "answer_precision") and m in micro]
    families = [m for m in family_headlines() if m not in shown and m in micro]
    return [*shown, *families, *(m for m in ("total_tokens", "elapsed_sec") if m in micro)]


def summary_table(aggregates: dict[str, Any], width: int | None = None) -> str:
    """The terminal summary: one row per template, then micro and macro; fits ``width``. With
    repeated trials, ``questions`` counts the questions and ``results`` their trials."""
    micro = aggregates["micro"]
    metrics = summary_metrics(micro)
    trials = isinstance(micro.get("trials"), Mapping)
    counts = ["questions", "results"] if trials else ["questions"]
    headers = ["template", *counts, "errors", *(_header(m) for m in metrics)]

    def row(name: str, stats: dict[str, Any]) -> list[Any]:
        count = stats["number_of_success_samples"] + stats["number_of_error_samples"]
        numbers: list[Any] = [count]
        if trials:
            block = stats.get("trials")
            numbers = [block.get("questions") if isinstance(block, Mapping) else None, count]
        errors = stats["number_of_error_samples"]
        return [name, *numbers, errors, *(_mean(stats, m) for m in metrics)]

    rows = [row(str(tid), stats) for tid, stats in aggregates["per_template"].items()]
    rows.append(row("all questions (micro)", micro))
    macro = aggregates["macro"]
    rows.append(
        [
            "templates (macro)",
            len(aggregates["per_template"]),
            *([None] if trials else []),
            None,
            *(_mean(macro, m) for m in metrics),
        ]
    )
    return format_table(headers, rows, width)


def trials_table(aggregates: dict[str, Any], width: int | None = None) -> str | None:
    """Repeated trials: per template and overall, each metric's pass@1, and pass@k and pass^k
    at k = the fewest trials of a question in the group (every question counted); None
    without trials."""
    headers = ["template", "metric", "trials", "k", "pass@1", "pass@k", "pass^k"]
    rows = [
        [name, metric, spread, k, *(format_number(v, "0-1") for v in values)]
        for name, metric, spread, k, *values in table_rows(aggregates)
    ]
    if not rows:
        return None
    text = format_table(headers, rows, width)
    agreement = aggregates["micro"].get("trials", {}).get("trajectory_consistency")
    if agreement:
        text += f"\ntrajectory_consistency: {agreement['mean']:.3f} (of {agreement['n']} questions)"
    return text


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


def usage_summary(signature: dict[str, Any]) -> str | None:
    """The judge's usage line of a run, from its signature (None without a judge)."""
    usage, judge = signature.get("usage"), signature.get("judge")
    if not usage or not judge:
        return None
    return f"{_usage_text(judge['model'], usage['total'])} (this run)"


def plan_table(plan: JudgeCallPlan | Any, width: int | None = None, batch: bool = False) -> str:
    """What a dry run would do, per metric: calls, cache hits, estimated tokens and cost (at
    batch rates with ``batch``); fits ``width``. ``plan``: a
    :class:`~qa_eval.run.estimate.JudgeCallPlan` or a dry-run judge."""
    from ..run.estimate import JudgeCallPlan

    if not isinstance(plan, JudgeCallPlan):
        plan = JudgeCallPlan.of(plan, batch=batch)
    batch = plan.batch

    def dollars(cost: float | None) -> str:
        return format_number(cost, "usd") if cost is not None else "unknown"

    def tokens(count: float) -> str:
        return format_number(count, "tokens")

    rows: list[list[Any]] = [
        [
            m,
            format_number(plan.calls.get(m, 0), "count"),
            format_number(plan.cached.get(m, 0), "count"),
            tokens(plan.prompt_tokens.get(m, 0)),
            tokens(plan.completion_tokens.get(m, 0)),
            dollars(plan.cost(m)),
        ]
        for m in plan.metrics
    ]
    rows.append(
        [
            "total",
            format_number(plan.total_calls, "count"),
            format_number(sum(plan.cached.values()), "count"),
            tokens(sum(plan.prompt_tokens.values())),
            tokens(sum(plan.completion_tokens.values())),
            dollars(plan.cost()),
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


def default_judge_note(estimate: JudgeEstimate) -> str:
    """The note before a run with the judge no config asked for: which judge, and the calls and
    cost to expect."""
    cost = estimate.cost
    price = "cost unknown (no price known)"
    if cost is not None:
        price = f"about ${cost:.{2 if cost >= 0.01 else 4}f}"
    sampled = ""
    if estimate.sampled < estimate.questions:
        sampled = f"; estimated from the first {estimate.sampled} of {estimate.questions} questions"
    return (
        f"note: no --config and OPENAI_API_KEY is set, so the LLM metrics use qa-eval's default "
        f"judge, {estimate.provider} {estimate.model}: about {estimate.calls} judge calls, "
        f"{price} (cached replies not counted{sampled}); --no-judge switches the LLM metrics "
        "off, --dry-run shows the plan"
    )


def mismatch_summary(results: Sequence[dict[str, Any]] | Notable) -> str | None:
    """``mismatches (reference steps): 2 not evaluated, 1 rows missing, ...``, or None (of the
    results, or of their tallies)."""
    counts = _tallied(results).mismatches
    if not counts:
        return None
    kinds = ", ".join(f"{n} {kind}" for kind, n in counts.most_common())
    return f"mismatches (reference steps; see 'mismatch' in the results): {kinds}"


def _tallied(results: Sequence[dict[str, Any]] | Notable) -> Notable:
    return results if isinstance(results, Notable) else Notable.of(results)


def warning_lines(results: Sequence[dict[str, Any]] | Notable) -> list[str]:
    """The notes and warnings on a run's results (its LLM metrics note, questions with no
    response, steps that could not be compared, metric values not computed), from the results
    or their tallies."""
    tally = _tallied(results)
    lines = []
    signature = tally.signature
    note = signature.get("llm_metrics")
    if note:
        lines.append(f"note: {note}")
    for metric, why in (signature.get("metrics_left_out") or {}).items():
        lines.append(f"note: {metric} not computed: {why}")
    if tally.missing:
        lines.append(f"warning: {tally.missing} question(s) had no response and count as errors")
    if tally.first_step_problem is not None:
        question_id, first = tally.first_step_problem
        lines.append(
            f"warning: {tally.step_problems} question(s) have steps that could not be compared "
            f"(see 'step_errors' in the results); first: question {question_id!r}: {first}"
        )
    failed = tally.metric_errors
    if failed:
        first_key, (_, first_message) = next(iter(failed.items()))
        lines.append(
            f"warning: {sum(count for count, _ in failed.values())} metric value(s) not computed "
            f"(see the '*_error' keys); e.g. {first_key}: {first_message}"
        )
    return lines


class ConsoleObserver(Observer):
    """Prints a run of :func:`qa_eval.run.files.run_plan` as ``qa-eval evaluate`` does: a
    progress display per system on stderr, then its summary (or the dry run's plan) on stdout
    and its warnings on stderr. ``quiet``: no progress and no summary (warnings stay);
    ``machine``: stdout is kept for JSON (quiet, and batch lines go to stderr)."""

    def __init__(self, quiet: bool = False, machine: bool = False) -> None:
        self.quiet = quiet or machine
        self.machine = machine
        self.progress_display: Progress | None = None
        self.noted: set[str] = set()
        self.started = False
        """Whether a system's header was printed (the next one gets a blank line before it)."""
        """The notes printed so far: a note every system shares is printed once."""

    def batch_line(self, line: str) -> None:
        """A line on the Batch API step, on stderr (not when quiet)."""
        if not self.quiet:
            print(line, file=sys.stderr, flush=True)

    def batches(self, report: Any) -> None:
        """Batches in flight: say that a rerun collects them; else the step's summary line."""
        if report.waiting:
            print(
                f"batch: {len(report.waiting)} batch(es) in flight ({', '.join(report.waiting)}); "
                "nothing was written yet: run the same command again to collect them and finish "
                "(with --no-wait it looks once and exits again while they run)",
                file=sys.stderr if self.machine else sys.stdout,
            )
        elif not self.quiet:
            print(report.line(), file=sys.stderr)

    def system_started(self, system: SystemPlan) -> None:
        """The system's header (several systems), and its progress display."""
        if system.name is not None and not self.quiet:
            if self.started:
                print()
            print(f"== system {system.name} ({system.source})")
            self.started = True
        self.progress_display = Progress(
            sys.stderr, "questions", enabled=False if self.quiet else None
        )

    def progress(self, status: Any) -> None:
        """Redraw the progress display."""
        if self.progress_display is not None:
            self.progress_display.update(status)

    def note(self, text: str) -> None:
        """A note on stderr."""
        print(f"note: {text}", file=sys.stderr)

    def close(self) -> None:
        """Stop the progress display (at the end of a system, or when the run fails)."""
        if self.progress_display is not None:
            self.progress_display.close()
            self.progress_display = None

    def system_finished(self, run: SystemRun) -> None:
        """The dry run's plan, or the summary and the warnings."""
        self.close()
        if run.judge_calls is not None:
            print(plan_table(run.judge_calls, stdout_width()))
            print("\ndry run: no judge call was made and nothing was written")
            return
        if not self.quiet:
            print(summary_table(run.aggregates, stdout_width()))
            for line in label_lines(run.aggregates):
                print(line)
            trials = trials_table(run.aggregates, stdout_width())
            if trials is not None:
                print(f"\nrepeated trials: pass@k and pass^k\n{trials}")
            block = run.aggregates.get("micro", {}).get("trials")
            counted = f"{len(run.results)} questions"
            if isinstance(block, dict):  # repeated trials: one result per trial
                counted = f"{len(run.results)} results (trials of {block['questions']} questions)"
            print(f"\n{counted} evaluated in {run.elapsed:.2f}s", end="")
            print(f"; wrote {', '.join(run.written)}" if run.written else "")
            usage = usage_summary(run.signature)
            if usage:
                print(usage)
            found = mismatch_summary(run.notable)
            if found:
                print(found)
        for line in warning_lines(run.notable):
            if line.startswith("note: "):
                if line in self.noted:
                    continue
                self.noted.add(line)
            print(line, file=sys.stderr)
