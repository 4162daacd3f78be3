"""The argument parser of the ``qa-eval`` command (and of ``answer-correctness``)."""

from __future__ import annotations

import argparse
import difflib
import re
from typing import Any, NoReturn

from .._version import __version__
from ..errors import QaEvalError
from ..schemas import SCHEMAS
from . import spread
from .common import PROG
from .generate import add_generate_command
from .handler import Handler
from .options import (
    EXCLUDE_ERRORS_HELP,
    GATES,
    compare_gate_options,
    endpoint_options,
    gate,
    gate_options,
    graph_options,
    grouping_options,
    repeatable,
    run_options,
    table_options,
    tsv_options,
)
from .traces import add_import_command
from .view import add_view_command

__all__ = ["EVALUATE", "Parser", "UsageError", "build_parser", "tsv_parser"]


class _Commands:
    """``handlers.NAME``: the ``Handler`` of ``cli.commands.NAME``."""

    def __getattr__(self, name: str) -> Handler:
        return Handler("commands", name)


handlers = _Commands()
EVALUATE = Handler("evaluation", "evaluate")
"""``evaluate`` and ``evaluate-flat`` (the Ctrl-C message knows them by it)."""
evaluate_command = EVALUATE


class UsageError(QaEvalError):
    """A command line argparse refuses (exit code 2)."""


class Parser(argparse.ArgumentParser):
    """An argparse parser whose errors are ``UsageError`` (one line, exit code 2)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{_nearest_choice(message)} (see '{self.prog} --help')")


_INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)$")


def _nearest_choice(message: str) -> str:
    """argparse's "invalid choice" message led by the nearest choices (it lists them all)."""
    found = _INVALID_CHOICE.search(message)
    if found is None:
        return message
    choices = [c.strip().strip("'") for c in found.group(2).split(",")]
    nearest = difflib.get_close_matches(found.group(1), choices, n=3, cutoff=0.6)
    if not nearest:
        return message
    return message[: found.start()] + (
        f"invalid choice: '{found.group(1)}'; did you mean {', '.join(nearest)}? "
        f"(choose from {found.group(2)})"
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``qa-eval`` command."""
    parser = Parser(prog=PROG, description="Evaluate question-answering systems and agents.")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    _commands(commands)
    return parser


def _evaluate_command(commands: Any) -> None:
    """``evaluate``: responses against a reference dataset."""
    evaluate = commands.add_parser(
        "evaluate",
        help="evaluate responses against a reference dataset",
        description="Evaluate responses against a reference dataset and print a summary.",
    )
    evaluate.add_argument("reference", help="reference dataset (.yaml or .json)")
    evaluate.add_argument(
        "responses",
        nargs="*",
        metavar="RESPONSES",
        help="responses (.jsonl, or a .json/.yaml list or mapping), or agent trace files "
        "(converted on the fly, see docs/traces.md)",
    )
    repeatable(
        evaluate,
        "--system",
        "NAME=FILE",
        "evaluate several systems' responses or traces (repeatable, instead of RESPONSES): "
        "results "
        "go to RESULTS.NAME.ext, and each system is compared with the first",
    )
    run_options(evaluate)
    spread.spread_options(evaluate)
    gate_options(evaluate, regression=True)
    evaluate.add_argument("--exclude-errors", action="store_true", help=EXCLUDE_ERRORS_HELP)
    table_options(evaluate)
    evaluate.set_defaults(handler=evaluate_command)


def _evaluate_flat_command(commands: Any) -> None:
    """``evaluate-flat``: one row per question, ragas style."""
    flat = commands.add_parser(
        "evaluate-flat",
        help="evaluate a flat per-question file (ragas style: question, answer, contexts, ...)",
        description="Evaluate a JSONL or CSV file with one row per question: question / "
        "user_input, answer / response, contexts / retrieved_contexts, ground_truth / "
        "reference, question_type (see docs/flat.md).",
    )
    flat.add_argument("input", help="rows (.jsonl or .csv)")
    repeatable(
        flat,
        "--column",
        "FIELD=COLUMN",
        "read FIELD (question, answer, contexts, ground_truth, question_type, question_id, "
        "template_id) from COLUMN (repeatable)",
    )
    run_options(flat)
    gate_options(flat, regression=False)
    flat.set_defaults(handler=evaluate_command, reference=None, responses=None)


def _aggregate_command(commands: Any) -> None:
    """``aggregate``: aggregates of per-question results."""
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
    grouping_options(aggregate)
    aggregate.set_defaults(handler=handlers.aggregate)


def _refresh_command(commands: Any) -> None:
    """``refresh-references``: the reference outputs re-run."""
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
    graph_options(refresh)
    _refresh_write_options(refresh)
    endpoint_options(refresh)
    refresh.add_argument("--format", choices=("text", "json"), default="text")
    refresh.set_defaults(handler=handlers.refresh)


def _refresh_write_options(refresh: argparse.ArgumentParser) -> None:
    """Where a refresh writes, and the limits it stops at without ``--force``."""
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


def _schema_command(commands: Any) -> None:
    """``schema``: the JSON Schema of a file format."""
    schema = commands.add_parser(
        "schema",
        help="print the JSON Schema of the reference, responses, results or aggregates format",
        description="Print the JSON Schema (draft 2020-12) of a qa-eval file format, e.g. to "
        "validate what an agent emits (see docs/integrations.md).",
    )
    schema.add_argument("name", choices=SCHEMAS)
    schema.set_defaults(handler=handlers.schema)


def _metrics_command(commands: Any) -> None:
    """``metrics``: the metric registry."""
    metrics = commands.add_parser(
        "metrics",
        help="list every metric: its keys, direction, whether it needs a judge, its doc page",
    )
    metrics.add_argument(
        "name", nargs="?", help="only this metric (a family, a key's family or e.g. ndcg@10)"
    )
    metrics.add_argument("--format", choices=("text", "json"), default="text")
    metrics.set_defaults(handler=handlers.metrics)


def _compare_command(commands: Any) -> None:
    """``compare``: two runs, question by question."""
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
    compare.add_argument("--exclude-errors", action="store_true", help=EXCLUDE_ERRORS_HELP)
    compare.add_argument("--include-errors", action="store_true", help=argparse.SUPPRESS)
    compare.add_argument("-o", "--output", help="also write the comparison (.yaml, .json)")
    compare.add_argument("--format", choices=("text", "json"), default="text")
    table_options(compare)
    compare_gate_options(compare)
    compare.set_defaults(handler=handlers.compare)


def _report_command(commands: Any) -> None:
    """``report``: the HTML report of one or more runs."""
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
    report.add_argument("--exclude-errors", action="store_true", help=EXCLUDE_ERRORS_HELP)
    report.add_argument(
        "--labels",
        metavar="FILE",
        help="people's labels (as 'qa-eval agreement --labels'): adds the agreement section, "
        "each run a judge",
    )
    report.add_argument(
        "--threshold",
        action="append",
        metavar="METRIC=VALUE",
        help="with --labels: the judge's value at or above which a binary label counts as true "
        "(repeatable; default: chosen on the labels, as 'qa-eval agreement' does)",
    )
    report.add_argument(
        "--max-questions",
        type=int,
        default=2000,
        metavar="N",
        help="list at most N questions in the drill-down, worst first (default 2000; 0: all)",
    )
    report.set_defaults(handler=handlers.report)


def _agreement_command(commands: Any) -> None:
    """``agreement``: the judge against people's labels."""
    agree = commands.add_parser(
        "agreement",
        help="how far to trust the judge: its values against your labels, judges compared",
        description="Measure each judge (one results file per judge) against people's labels "
        "(CSV, JSONL or YAML rows of question_id, metric, label and optionally annotator): "
        "accuracy, Cohen's kappa, confusion, ROC AUC, Spearman, Kendall, MAE with 95% "
        "intervals, Krippendorff's alpha among the people, the disagreements, and the judges "
        "compared with each other (see docs/agreement.md).",
    )
    agree.add_argument("results", nargs="+", help="results written by 'qa-eval evaluate -o'")
    agree.add_argument("--labels", required=True, metavar="FILE", help="the people's labels")
    agree.add_argument(
        "--metric", action="append", help="measure only this metric (repeatable; default: all)"
    )
    repeatable(
        agree,
        "--threshold",
        "METRIC=VALUE",
        "a continuous judge value against binary labels counts as true at >= VALUE "
        "(default: the cut with the best accuracy on the labels, its optimism cross-validated; "
        "repeatable)",
    )
    agree.add_argument(
        "--label", action="append", metavar="NAME", help="the judges' names, in order"
    )
    agree.add_argument(
        "--resamples", type=int, default=2000, help="bootstrap resamples (default 2000)"
    )
    agree.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default 0)")
    agree.add_argument("-o", "--output", help="also write the report (.json, .yaml)")
    cv = agree.add_argument_group(
        "few-shot examples from the labels, cross-validated (runs the judge; see docs/agreement.md)"
    )
    cv.add_argument(
        "--cross-validate",
        type=int,
        metavar="K",
        help="judge the labelled items of the one RESULTS file again, without examples and "
        "with examples drawn only from the other K-1 folds, and compare the two",
    )
    cv.add_argument("-c", "--config", help="the judge's config (required with --cross-validate)")
    cv.add_argument(
        "--examples-count", type=int, default=4, metavar="N", help="examples per prompt (4)"
    )
    cv.add_argument(
        "--examples-pick",
        choices=("first", "balanced", "random"),
        default="balanced",
        help="which examples of the other folds (default balanced: the label values in turn)",
    )
    cv.add_argument("--no-cache", action="store_true", help="do not use the judge's reply cache")
    agree.add_argument("--format", choices=("text", "json"), default="text")
    group = agree.add_argument_group(GATES)
    gate(
        group,
        "--fail-under",
        "FIGURE=VALUE",
        "exit 3 when a judge's accuracy, kappa, auc, spearman or kendall on a measured "
        "metric is below VALUE (e.g. kappa=0.6)",
    )
    agree.set_defaults(handler=handlers.agreement)


def _answer_correctness_command(commands: Any) -> None:
    """``answer-correctness``: graphrag-eval's TSV command."""
    correctness = commands.add_parser(
        "answer-correctness",
        help="answer correctness of a TSV file (graphrag-eval's command)",
        description="Judge the answer correctness of each row of a TSV file with the columns "
        "Question, Reference answer and Actual answer.",
    )
    tsv_options(correctness)
    correctness.set_defaults(handler=handlers.answer_correctness)


def _export_scores_command(commands: Any) -> None:
    """``export-scores``: scores back to where the traces live."""
    export = commands.add_parser(
        "export-scores",
        help="write the scores of evaluated traces back: OTLP/JSON, OTLP/HTTP, Langfuse",
        description="Write each metric value of the results evaluated from imported traces as "
        "an OpenTelemetry gen_ai.evaluation.result event parented to the trace's root span "
        "(OTLP/JSON file or OTLP/HTTP), or as a Langfuse score on the trace (docs/traces.md).",
    )
    export.add_argument("results", help="results written by `qa-eval evaluate -o`")
    repeatable(
        export,
        "--metric",
        "KEY",
        "a result key to export (repeatable; default: every 0-1 score and label present)",
    )
    export.add_argument("--otlp-json", metavar="FILE", help="write OTLP/JSON logs to FILE")
    export.add_argument(
        "--otlp-endpoint",
        metavar="URL",
        help="send over OTLP/HTTP (JSON) to URL (no path: URL/v1/logs); headers from "
        "OTEL_EXPORTER_OTLP_HEADERS",
    )
    export.add_argument(
        "--langfuse",
        action="store_true",
        help="post Langfuse scores (LANGFUSE_PUBLIC_KEY, LANGFUSE_SECRET_KEY, LANGFUSE_HOST)",
    )
    export.set_defaults(handler=handlers.export_scores)


_COMMANDS = (
    _evaluate_command,
    _evaluate_flat_command,
    _aggregate_command,
    spread.add_parser,
    _refresh_command,
    add_generate_command,
    _schema_command,
    _metrics_command,
    _compare_command,
    _report_command,
    _export_scores_command,
    _agreement_command,
    _answer_correctness_command,
    add_import_command,
    add_view_command,
)


def _commands(commands: Any) -> None:
    """Every command, in the order ``--help`` lists them."""
    for add in _COMMANDS:
        add(commands)


def tsv_parser(prog: str) -> argparse.ArgumentParser:
    """The parser of the ``answer-correctness`` command (graphrag-eval's)."""
    parser = Parser(
        prog=prog,
        description="Judge the answer correctness of each row "
        "of a TSV file (Question, Reference answer, Actual answer).",
    )
    tsv_options(parser)
    return parser
