"""The argument parser of the ``qa-eval`` command (and of ``answer-correctness``)."""

from __future__ import annotations

import argparse
from typing import Any, NoReturn

from .._version import __version__
from ..config import GROUPS, SWITCHES
from ..errors import QaEvalError
from ..io.keysets import KEY_SETS
from ..schemas import SCHEMAS
from . import commands as handlers
from .common import PROG
from .evaluation import evaluate as evaluate_command
from .traces import add_import_command

__all__ = ["Parser", "UsageError", "build_parser", "tsv_parser"]


class UsageError(QaEvalError):
    """A command line argparse refuses (exit code 2)."""


class Parser(argparse.ArgumentParser):
    """An argparse parser whose errors are ``UsageError`` (one line, exit code 2)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


def _report_options(group: Any) -> None:
    """``--junit`` and ``--summary-md``: the files a CI job shows."""
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


_PASS_HELP = (
    "with repeated trials (responses with 'trial'): a trial passes METRIC at VALUE or more, and "
    "the aggregates get its pass@k and pass^k (trajectory_match passes at 1 without one); "
    "repeatable (docs/aggregates.md#repeated-trials)"
)


def _gate_options(command: argparse.ArgumentParser, regression: bool) -> None:
    """The CI gates of an evaluation: ``--fail-under``, ``--fail-on-regression``, ``--strict``."""
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
    """The CI gates of ``compare``, and the check of the two runs' references it can lift."""
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


def _table_options(command: argparse.ArgumentParser) -> None:
    """How much of a comparison the text output shows (see docs/compare.md)."""
    command.add_argument(
        "--per-template",
        action="store_true",
        help="list every per-template row of a comparison, also those too few to test",
    )
    command.add_argument(
        "--explain", action="store_true", help="explain the comparison's method under its table"
    )


_BY_HELP = "also aggregate per value of this result key (repeatable; default: question_type)"
_KEYS_HELP = (
    "graphrag-eval: write only the keys graphrag-eval 6.6.1 writes (no n, mismatch, costs, ...; "
    "see docs/compatibility.md)"
)
_EXCLUDE_ERRORS_HELP = (
    "compare only the questions neither run got an error on (default: an error is a failed "
    "answer, 0 on quality metrics)"
)


def _run_options(command: argparse.ArgumentParser) -> None:
    """The options of a run: where its files go, what is printed, and the judge."""
    _output_options(command)
    _judge_options(command.add_argument_group("LLM judge"))


def _output_options(command: argparse.ArgumentParser) -> None:
    """Where a run writes its results and aggregates, and what it prints."""
    command.add_argument("-o", "--output", help="write per-question results (.yaml, .json, .jsonl)")
    command.add_argument("--aggregates", help="write aggregates (.yaml, .json)")
    command.add_argument("--by", action="append", metavar="KEY", help=_BY_HELP)
    command.add_argument("--pass-threshold", action="append", metavar="KEY=VALUE", help=_PASS_HELP)
    command.add_argument("--keys", choices=KEY_SETS, default="qa-eval", help=_KEYS_HELP)
    command.add_argument(
        "-q", "--quiet", action="store_true", help="no progress bar and no summary table"
    )
    command.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="json: print the aggregates (and comparisons) as JSON on stdout, nothing else",
    )


def _judge_options(judge: Any) -> None:
    """The LLM judge: config, calls, cache, cost, repeats, batches and the metrics on."""
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
    evaluate.add_argument(
        "--system",
        action="append",
        metavar="NAME=FILE",
        help="evaluate several systems' responses or traces (repeatable, instead of RESPONSES): "
        "results "
        "go to RESULTS.NAME.ext, and each system is compared with the first",
    )
    _run_options(evaluate)
    _gate_options(evaluate, regression=True)
    evaluate.add_argument("--exclude-errors", action="store_true", help=_EXCLUDE_ERRORS_HELP)
    _table_options(evaluate)
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
    flat.add_argument(
        "--column",
        action="append",
        metavar="FIELD=COLUMN",
        help="read FIELD (question, answer, contexts, ground_truth, question_type, question_id, "
        "template_id) from COLUMN (repeatable)",
    )
    _run_options(flat)
    _gate_options(flat, regression=False)
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
    aggregate.add_argument("--by", action="append", metavar="KEY", help=_BY_HELP)
    aggregate.add_argument(
        "--pass-threshold", action="append", metavar="KEY=VALUE", help=_PASS_HELP
    )
    aggregate.add_argument("--keys", choices=KEY_SETS, default="qa-eval", help=_KEYS_HELP)
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
    source = refresh.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--store", metavar="GRAPH_FILE", help="RDF file (.ttl, .nt, .nq, .trig, .rdf, .jsonld)"
    )
    source.add_argument("--endpoint", metavar="URL", help="SPARQL 1.1 endpoint (http or https)")
    _refresh_write_options(refresh)
    _refresh_query_options(refresh)
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


def _refresh_query_options(refresh: argparse.ArgumentParser) -> None:
    """How a refresh queries: HTTP headers, the default graph, the timeout."""
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
    compare.add_argument("--exclude-errors", action="store_true", help=_EXCLUDE_ERRORS_HELP)
    compare.add_argument("--include-errors", action="store_true", help=argparse.SUPPRESS)
    compare.add_argument("-o", "--output", help="also write the comparison (.yaml, .json)")
    compare.add_argument("--format", choices=("text", "json"), default="text")
    _table_options(compare)
    _compare_gate_options(compare)
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
    report.add_argument("--exclude-errors", action="store_true", help=_EXCLUDE_ERRORS_HELP)
    report.add_argument(
        "--labels",
        metavar="FILE",
        help="people's labels (as 'qa-eval agreement --labels'): adds the agreement section, "
        "each run a judge",
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
    agree.add_argument(
        "--threshold",
        action="append",
        metavar="METRIC=VALUE",
        help="a continuous judge value against binary labels counts as true at >= VALUE "
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
    group = agree.add_argument_group("CI gates (exit 3 when one fails; see docs/ci.md)")
    group.add_argument(
        "--fail-under",
        nargs="+",
        action="extend",
        metavar="FIGURE=VALUE",
        help="exit 3 when a judge's accuracy, kappa, auc, spearman or kendall on a measured "
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
    export.add_argument(
        "--metric",
        action="append",
        metavar="KEY",
        help="a result key to export (repeatable; default: every 0-1 score and label present)",
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
    _refresh_command,
    _schema_command,
    _metrics_command,
    _compare_command,
    _report_command,
    _export_scores_command,
    _agreement_command,
    _answer_correctness_command,
    add_import_command,
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


def tsv_options(parser: Any) -> None:
    """The options of the TSV command (graphrag-eval's old and new names both work)."""
    parser.add_argument(
        "-i",
        "--input-tsv-file-path",
        "--in-file",
        dest="input",
        required=True,
        help="input TSV with Question, Reference answer, Actual answer",
    )
    parser.add_argument(
        "-o",
        "--output-tsv-file-path",
        "--out-file",
        dest="output",
        required=True,
        help="output TSV",
    )
    parser.add_argument(
        "-c",
        "--config-yaml-file-path",
        "--config-path",
        "--config",
        dest="config",
        help="judge config (YAML); default: OPENAI_API_KEY",
    )
    parser.add_argument("--concurrency", type=int, help="judge calls in flight (default 8)")
    parser.add_argument("--cache", help="reply cache file (default: the user cache directory)")
    parser.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
