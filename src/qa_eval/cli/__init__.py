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
import os
import signal
import sys
import threading
import traceback
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ..errors import QaEvalError
from ..redact import redact
from .common import PROG
from .parser import EVALUATE, build_parser, tsv_parser

__all__ = [
    "PROG",
    "Progress",
    "answer_correctness_main",
    "build_parser",
    "format_table",
    "interrupted_message",
    "label_lines",
    "main",
    "plan_table",
    "run_command",
    "summary_table",
    "usage_line",
]


def interrupted_message(args: argparse.Namespace | None) -> str:
    """The line printed on Ctrl-C or SIGTERM: where the finished results are (the partial file
    of ``-o``) and whether a rerun reuses the judge cache."""
    from ..run.plan import system_output_path
    from .evaluation import evaluate, system_pairs

    if args is None or getattr(args, "handler", None) not in (EVALUATE, evaluate):
        return "interrupted"

    if getattr(args, "dry_run", False):
        return "interrupted (dry run: nothing was written)"
    parts = ["interrupted"]
    output = getattr(args, "output", None)
    if output:
        try:
            systems = [name for name, _ in system_pairs(args)]
        except QaEvalError:
            systems = [None]
        found = []
        for system in systems:
            partial = Path(f"{system_output_path(output, system)}.partial.jsonl")
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
        from ..judge.cache.store import default_cache_path

        cache = getattr(args, "cache", None) or default_cache_path()
        parts.append(
            f"a rerun reuses the judge replies stored in the cache {cache}, so the finished "
            "judge calls are not made (or paid) again"
        )
    return "; ".join(parts)


_CONSOLE = ("Progress", "format_table", "label_lines", "plan_table", "summary_table", "usage_line")


def __getattr__(name: str) -> Any:
    """The terminal renderers, from :mod:`qa_eval.cli.console` (imported when first used: rich is
    not loaded by commands that print no table)."""
    if name in _CONSOLE:
        from . import console

        return getattr(console, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    previous: Any = None
    main_thread = threading.current_thread() is threading.main_thread()
    if main_thread:
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    default_show = warnings.showwarning

    def show(message: Any, category: Any, *rest: Any, **more: Any) -> None:
        from ..errors import UnknownResponsesWarning
        from ..judge.cache.sqlite import CacheWarning

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
                from .commands import answer_correctness

                return answer_correctness(tsv_parser(prog).parse_args(argv))
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


def answer_correctness_main(argv: Sequence[str] | None = None) -> int:
    """The ``answer-correctness`` command (graphrag-eval's name for it)."""
    return run_command(argv, prog="answer-correctness", only="answer-correctness")
