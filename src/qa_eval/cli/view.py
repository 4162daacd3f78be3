"""``qa-eval view``: the local web app over results files (see docs/view.md)."""

from __future__ import annotations

import argparse
import contextlib
from typing import Any

__all__ = ["add_view_command", "view"]


def add_view_command(commands: Any) -> None:
    """``view``: browse, search, compare and label results in the browser."""
    command = commands.add_parser(
        "view",
        help="browse, search, compare and label results in the browser (a local web app)",
        description="Start a local web app over results files: page, filter and search the "
        "questions, open one with its steps, compare runs, label questions for "
        "'qa-eval agreement' and review generated references. Prints its URL (with a "
        "random token every request needs); Ctrl-C stops it. See docs/view.md.",
    )
    command.add_argument(
        "results", nargs="+", help="results files (YAML, JSON, JSON Lines; .gz too)"
    )
    command.add_argument(
        "--labels",
        metavar="FILE",
        help="the labels file to append to (.csv or .jsonl; created when missing; default "
        "NAME.labels.csv beside the first results file)",
    )
    command.add_argument(
        "--annotator", help="the name written with each label (default: your login name)"
    )
    command.add_argument(
        "--review",
        metavar="FILE",
        help="a review CSV of generated references (id,question,answer,query,decision,edit) "
        "to accept, reject or edit; decisions are written to it at once",
    )
    command.add_argument(
        "--reference",
        metavar="REF",
        help="the reference dataset the runs were evaluated on: each run's signature is "
        "checked against it (its fingerprint)",
    )
    command.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1; any other is warned about)",
    )
    command.add_argument(
        "--port", type=int, default=0, help="port to listen on (default 0: a free one)"
    )
    command.add_argument("--open", action="store_true", help="open the URL in a browser")
    command.add_argument(
        "--rebuild", action="store_true", help="rebuild the indexes even when up to date"
    )
    command.set_defaults(handler=view)


def view(args: argparse.Namespace) -> int:
    """Build or open the indexes, then serve until Ctrl-C."""
    from ..view.app import check_extra
    from ..view.server import serve, settings_for

    check_extra()

    settings = settings_for(
        args.results,
        labels=args.labels,
        annotator=args.annotator,
        review=args.review,
        reference=args.reference,
        rebuild=args.rebuild,
    )
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how the viewer stops
        serve(settings, host=args.host, port=args.port, open_browser=args.open)
    print("qa-eval view: stopped")
    return 0
