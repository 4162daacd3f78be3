"""``qa-eval generate``: its arguments and the command (references generated from a graph,
``--describe``, ``--apply-review``)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..errors import QaEvalError
from .common import print_notes
from .options import cache_options, endpoint_options, graph_options

__all__ = ["add_generate_command", "generate"]


def add_generate_command(commands: Any) -> None:
    """Add ``generate`` to the subcommands."""
    gen = commands.add_parser(
        "generate",
        help="generate a verified reference set from an RDF file or a SPARQL endpoint",
        description="Generate questions from the graph itself: each question's SPARQL query is "
        "executed and its result stored as the reference output, the reference answer written "
        "from it; quality controls (answerable, unambiguous labels, no duplicates, diversity) "
        "are counted in a report. See docs/generate.md.",
    )
    graph_options(gen, "RDF file (.ttl, .nt, .nq, .trig, .rdf, .jsonld; also .gz)")
    gen.add_argument("-n", type=int, help="number of questions")
    gen.add_argument("-o", "--output", help="reference file to write (.yaml, .json, .jsonl)")
    gen.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    gen.add_argument("--shapes", help="comma-separated shapes (default: all)")
    gen.add_argument("--mix", metavar="SHAPE=W,...", help="shape weights (default: equal)")
    gen.add_argument("--lang", default="en", help="label language (default en)")
    gen.add_argument("-c", "--config", help="generate config (YAML): labels, include, words...")
    gen.add_argument(
        "--strict", action="store_true", help="exit 3 when fewer than N questions pass"
    )
    gen.add_argument(
        "--strict-rdf",
        action="store_true",
        help="refuse IRIs and language tags that break the RDF syntax rules",
    )
    gen.add_argument(
        "--describe", action="store_true", help="print the graph's schema, no questions"
    )
    gen.add_argument("--format", choices=("text", "json"), default="text", help="--describe output")
    gen.add_argument("--report-json", metavar="FILE", help="write the generation report as JSON")
    gen.add_argument("--review", metavar="FILE", help="write a review CSV (one row a question)")
    gen.add_argument(
        "--apply-review",
        nargs=2,
        metavar=("REVIEW", "REFERENCE"),
        help="keep the accepted rows of REVIEW from REFERENCE, re-verified, into -o",
    )
    endpoint_options(gen)
    _verbalize_options(gen)
    gen.set_defaults(handler=generate)


def _verbalize_options(gen: argparse.ArgumentParser) -> None:
    """``--verbalize llm`` and the judge's options."""
    gen.add_argument(
        "--verbalize",
        choices=("template", "llm"),
        default="template",
        help="word questions from templates (default, offline) or rewrite them with the judge, "
        "checked by a round trip",
    )
    gen.add_argument(
        "--styles",
        help="rewrite styles for --verbalize llm: plain, conversational, terse, misspelled "
        "(comma-separated; default all, one drawn per question)",
    )
    gen.add_argument("--judge-config", metavar="FILE", help="qa-eval config with the llm: judge")
    cache_options(gen)
    gen.add_argument(
        "--dry-run",
        action="store_true",
        help="with --verbalize llm: plan the judge calls, write nothing",
    )
    gen.add_argument(
        "--max-cost", type=float, metavar="USD", help="stop calling the judge at this cost"
    )
    gen.add_argument(
        "--batch",
        action="store_true",
        help="with --verbalize llm: send the judge calls through the provider's Batch API "
        "(OpenAI, Azure OpenAI) at half the price, in rounds (rewrites, round trips, retries); "
        "a rerun picks up batches in flight",
    )
    gen.add_argument(
        "--no-wait",
        action="store_true",
        help="with --batch: submit (or check) the batches and exit; a later run collects them",
    )


def _source(args: argparse.Namespace) -> Any:
    from ..generate.files import GraphSource

    if args.timeout <= 0:
        raise QaEvalError("--timeout must be a positive number of seconds")
    if args.store is not None and args.header:
        raise QaEvalError("--header applies to --endpoint only")
    return GraphSource(
        store=args.store,
        endpoint=args.endpoint,
        strict_rdf=args.strict_rdf,
        headers=args.header or None,
        default_graph_uris=args.default_graph_uri or (),
        timeout=args.timeout,
    )


def _judge(args: argparse.Namespace) -> tuple[Any, list[str] | None, Any]:
    """The judge of ``--verbalize llm`` (None for template wording, and for ``--batch``, whose
    judges the batch step makes), its styles, and the ``--batch`` settings (or None)."""
    if args.verbalize != "llm":
        flags = ("styles", "judge_config", "dry_run", "max_cost", "concurrency", "batch", "no_wait")
        for flag in flags:
            if getattr(args, flag):
                raise QaEvalError(f"--{flag.replace('_', '-')} applies to --verbalize llm only")
        return None, None, None
    if args.no_wait and not args.batch:
        raise QaEvalError("--no-wait goes with --batch")
    if args.batch and args.no_cache:
        raise QaEvalError("--batch needs the cache (it records the batches): drop --no-cache")
    if args.batch and args.max_cost is not None:
        raise QaEvalError(
            "--batch and --max-cost cannot be combined: a batch is priced when it ends (use "
            "--dry-run --batch to see the estimated cost at batch rates)"
        )
    from ..config import load_config
    from ..extras import require
    from ..generate.verbalize import STYLES
    from ..judge.cache.store import open_cache

    styles = [s.strip() for s in args.styles.split(",") if s.strip()] if args.styles else None
    for style in styles or ():
        if style not in STYLES:
            raise QaEvalError(f"--styles: unknown style {style!r} (known: {', '.join(STYLES)})")
    if args.concurrency is not None and args.concurrency < 1:
        raise QaEvalError("--concurrency must be at least 1")
    settings = load_config(args.judge_config).with_options(concurrency=args.concurrency)
    if settings.generation is None:
        raise QaEvalError(
            "--verbalize llm needs a judge: set OPENAI_API_KEY or give --judge-config with llm:"
        )
    require("openai", "the LLM judge")
    require("pydantic", "--verbalize llm")
    from ..judge.calls import Judge

    cache_spec = False if args.no_cache else (args.cache or True)
    if args.batch and not args.dry_run:
        from ..generate.verbalize import WordingBatch

        def say(line: str) -> None:
            print(line, file=sys.stderr, flush=True)

        return None, styles, WordingBatch(settings, cache_spec, no_wait=args.no_wait, report=say)
    cache = open_cache(cache_spec)
    judge = Judge(settings, cache=cache, max_cost=args.max_cost, dry_run=args.dry_run)
    return judge, styles, None


def generate(args: argparse.Namespace) -> int:
    """Run ``qa-eval generate``."""
    from ..generate.files import apply_review_files, describe_graph, generate_reference_file
    from ..generate.languages import LANGUAGES, phrases
    from ..generate.schema import describe_json, describe_text

    source = _source(args)
    if args.describe:
        schema = describe_graph(source, args.lang, args.config)
        if args.format == "json":
            sys.stdout.write(json.dumps(describe_json(schema), indent=2, ensure_ascii=False) + "\n")
        else:
            sys.stdout.write(describe_text(schema))
        return 0
    if not args.output:
        raise QaEvalError("-o/--output is required (the reference file to write)")
    if args.apply_review:
        review, reference = args.apply_review
        result = apply_review_files(source, review, reference, args.output)
        changed = (
            f"; left out (result changed): {', '.join(result.changed)}" if result.changed else ""
        )
        print(
            f"kept {result.kept} questions ({result.edited} edited), rejected {result.rejected}, "
            f"undecided {result.undecided}{changed}; wrote {args.output}"
        )
        return 0
    if args.n is None:
        raise QaEvalError("-n is required (the number of questions)")
    shapes = [s.strip() for s in args.shapes.split(",") if s.strip()] if args.shapes else None
    judge, styles, batch = _judge(args)
    try:
        generation = generate_reference_file(
            source,
            args.output,
            args.n,
            seed=args.seed,
            shapes=shapes,
            mix=args.mix,
            language=args.lang,
            config=args.config,
            report_json=args.report_json,
            review=args.review,
            judge=judge,
            styles=styles,
            batch=batch,
        )
    finally:
        if judge is not None and judge.cache is not None:
            judge.cache.close()
    report = generation.report
    if generation.batch is not None:
        if generation.batch.waiting:
            waiting = generation.batch.waiting
            print(
                f"batch: {len(waiting)} batch(es) in flight ({', '.join(waiting)}); nothing was "
                "written yet: run the same command again to collect them and finish"
            )
            return 0
        print(generation.batch.line(), file=sys.stderr)
    if args.verbalize == "template" and phrases(args.lang) is None:
        print_notes(
            [
                f"the question templates are English (qa-eval words questions in "
                f"{', '.join(LANGUAGES)}) and the labels are in {args.lang}: use --verbalize "
                "llm, or review the question texts (--review)"
            ]
        )
    if judge is not None and args.dry_run:
        from .console import plan_table

        print(plan_table(judge, batch=args.batch))
        print("\ndry run: no judge call was made and nothing was written")
        return 0
    sys.stdout.write(report.text())
    print(f"wrote {args.output}")
    if args.strict and report.made < args.n:
        print(
            f"qa-eval: --strict: {report.made} of {args.n} questions passed the controls",
            file=sys.stderr,
        )
        return 3
    return 0
