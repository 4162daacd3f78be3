"""The options several commands share: a run's outputs and judge (``run_options``), the CI gates
(``gate_options``), the grouping of aggregates (``grouping_options``), the judge's calls and cache
(``cache_options``), and the TSV command's (``tsv_options``)."""

from __future__ import annotations

import argparse
from typing import Any

from ..io.keysets import KEY_SETS
from ..vocabulary.lookup import groups, switches

__all__ = [
    "BY_HELP",
    "EXCLUDE_ERRORS_HELP",
    "GATES",
    "KEYS_HELP",
    "PASS_HELP",
    "REGRESSION_HELP",
    "cache_options",
    "compare_gate_options",
    "endpoint_options",
    "gate",
    "gate_options",
    "graph_options",
    "grouping_options",
    "judge_options",
    "output_options",
    "repeatable",
    "report_options",
    "run_options",
    "table_options",
    "tsv_options",
]

SWITCHES = switches()  # the families --enable/--disable switch (config.SWITCHES)
GROUPS = groups()  # the names --enable expands (config.GROUPS)

GATES = "CI gates (exit 3 when one fails; see docs/ci.md)"
"""The title of the CI gates' group in ``--help``."""


def report_options(group: Any) -> None:
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


REGRESSION_HELP = (
    "exit 3 when B is significantly worse than A on METRIC (adjusted p) by more than MARGIN "
    "(default 0); repeatable, several metrics at once"
)


PASS_HELP = (
    "with repeated trials (responses with 'trial'): a trial passes METRIC at VALUE or more, and "
    "the aggregates get its pass@k and pass^k (trajectory_match passes at 1 without one); "
    "repeatable (docs/aggregates.md#repeated-trials)"
)


def gate_options(command: argparse.ArgumentParser, regression: bool) -> None:
    """The CI gates of an evaluation: ``--fail-under``, ``--fail-on-regression``, ``--strict``."""
    group = command.add_argument_group(GATES)
    gate(
        group,
        "--fail-under",
        "METRIC=VALUE",
        "exit 3 when the micro mean of METRIC is below VALUE (scores on 0-1); with "
        "--system, for each system",
    )
    if regression:
        gate(
            group,
            "--fail-on-regression",
            "METRIC[:MARGIN]",
            REGRESSION_HELP.replace("B is", "a --system is").replace(" A ", " the first "),
        )
    group.add_argument(
        "--strict",
        action="store_true",
        help="exit 3 when a metric value could not be computed (judge failure, budget, parse "
        "error), a step could not be compared or a question had no response",
    )
    report_options(group)


def compare_gate_options(compare: argparse.ArgumentParser) -> None:
    """The CI gates of ``compare``, and the check of the two runs' references it can lift."""
    compare.add_argument(
        "--allow-different-references",
        action="store_true",
        help="compare runs whose signatures show different reference datasets",
    )
    group = compare.add_argument_group(GATES)
    gate(group, "--fail-on-regression", "METRIC[:MARGIN]", REGRESSION_HELP)
    report_options(group)


def table_options(command: argparse.ArgumentParser) -> None:
    """How much of a comparison the text output shows (see docs/compare.md)."""
    command.add_argument(
        "--per-template",
        action="store_true",
        help="list every per-template row of a comparison, also those too few to test",
    )
    command.add_argument(
        "--explain", action="store_true", help="explain the comparison's method under its table"
    )


BY_HELP = "also aggregate per value of this result key (repeatable; default: question_type)"
KEYS_HELP = (
    "graphrag-eval: write only the keys graphrag-eval 6.6.1 writes (no n, mismatch, costs, ...; "
    "see docs/compatibility.md)"
)
EXCLUDE_ERRORS_HELP = (
    "compare only the questions neither run got an error on (default: an error is a failed "
    "answer, 0 on quality metrics)"
)


def run_options(command: argparse.ArgumentParser) -> None:
    """The options of a run: where its files go, what is printed, and the judge."""
    output_options(command)
    judge_options(command.add_argument_group("LLM judge"))


def output_options(command: argparse.ArgumentParser) -> None:
    """Where a run writes its results and aggregates, and what it prints."""
    command.add_argument("-o", "--output", help="write per-question results (.yaml, .json, .jsonl)")
    command.add_argument("--aggregates", help="write aggregates (.yaml, .json)")
    grouping_options(command)
    command.add_argument(
        "-q", "--quiet", action="store_true", help="no progress bar and no summary table"
    )
    command.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="json: print the aggregates (and comparisons) as JSON on stdout, nothing else",
    )


def judge_options(judge: Any) -> None:
    """The LLM judge: config, calls, cache, cost, repeats, batches and the metrics on."""
    judge.add_argument(
        "-c",
        "--config",
        help="judge and metric config (YAML); without one, gpt-4o-mini when OPENAI_API_KEY is set",
    )
    cache_options(judge)
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
    cache_options(parser)
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")


def grouping_options(command: argparse.ArgumentParser) -> None:
    """How aggregates are grouped and written: ``--by``, ``--pass-threshold``, ``--keys``."""
    repeatable(command, "--by", "KEY", BY_HELP)
    repeatable(command, "--pass-threshold", "KEY=VALUE", PASS_HELP)
    command.add_argument("--keys", choices=KEY_SETS, default="qa-eval", help=KEYS_HELP)


def graph_options(
    command: Any, store_help: str = "RDF file (.ttl, .nt, .nq, .trig, .rdf, .jsonld)"
) -> None:
    """Where the graph is: ``--store GRAPH_FILE`` or ``--endpoint URL``, one of them."""
    source = command.add_mutually_exclusive_group(required=True)
    source.add_argument("--store", metavar="GRAPH_FILE", help=store_help)
    source.add_argument("--endpoint", metavar="URL", help="SPARQL 1.1 endpoint (http or https)")


def endpoint_options(command: Any) -> None:
    """How the graph is queried: HTTP headers, the default graph, the timeout."""
    repeatable(
        command,
        "--header",
        "'NAME: VALUE'",
        "HTTP header sent to --endpoint (repeatable), e.g. 'Authorization: Bearer ...'; "
        "basic auth also comes from QA_EVAL_SPARQL_USER and QA_EVAL_SPARQL_PASSWORD",
    )
    repeatable(
        command,
        "--default-graph-uri",
        "URI",
        "the graph the queries read by default (repeatable: their merge); sent to "
        "--endpoint as default-graph-uri, or picks named graphs of --store",
    )
    command.add_argument(
        "--timeout", type=float, default=30.0, help="seconds per endpoint query (default 30)"
    )


def cache_options(parser: Any) -> None:
    """The judge's calls in flight and its reply cache: ``--concurrency``, ``--cache``,
    ``--no-cache``."""
    parser.add_argument("--concurrency", type=int, help="judge calls in flight (default 8)")
    parser.add_argument("--cache", help="reply cache file (default: the user cache directory)")
    parser.add_argument("--no-cache", action="store_true", help="do not read or write the cache")


def gate(group: Any, flag: str, metavar: str, help: str) -> None:
    """A CI gate's option: one or more ``metavar`` values, and more with the option again."""
    group.add_argument(flag, nargs="+", action="extend", metavar=metavar, help=help)


def repeatable(command: Any, flag: str, metavar: str, help: str) -> None:
    """An option that may be given again, each value added to a list."""
    command.add_argument(flag, action="append", metavar=metavar, help=help)
