"""Start the viewer: open the indexes, bind the socket, print the URL, serve until Ctrl-C."""

from __future__ import annotations

import getpass
import os
import secrets
import socket
import sys
import webbrowser
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError

__all__ = [
    "LOCAL_HOSTS",
    "default_labels",
    "fingerprint_of",
    "make_server",
    "serve",
    "settings_for",
]

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def default_labels(first_results: str | os.PathLike[str]) -> Path:
    """Where labels go unless told: ``NAME.labels.csv`` beside the first results file."""
    path = Path(first_results)
    stem = path.name.removesuffix(".gz")
    return path.with_name(f"{Path(stem).stem}.labels.csv")


def settings_for(
    paths: Sequence[str | os.PathLike[str]],
    *,
    labels: str | os.PathLike[str] | None = None,
    annotator: str | None = None,
    review: str | os.PathLike[str] | None = None,
    reference: str | os.PathLike[str] | None = None,
    token: str | None = None,
    rebuild: bool = False,
) -> Any:
    """The viewer's settings: the runs' indexes (built when needed), the labels file, the
    annotator (default: the login name), the review file, the reference dataset's fingerprint
    (the runs' signatures are checked against it) and a fresh random token."""
    from .pages import Settings
    from .review import read_review
    from .runs import load_runs

    if not paths:
        raise InputError("name one results file or more")
    labels_path = Path(labels) if labels is not None else default_labels(paths[0])
    if labels_path.suffix.lower() not in (".csv", ".jsonl"):
        raise InputError("the labels file must be .csv or .jsonl", source=str(labels_path))
    review_path = Path(review) if review is not None else None
    if review_path is not None:
        read_review(review_path)  # refuse a bad file before serving
    who = annotator if annotator is not None else _login()
    if not who.strip():
        raise InputError("--annotator must not be empty")
    return Settings(
        runs=load_runs(paths, rebuild=rebuild),
        reference=None if reference is None else (str(reference), fingerprint_of(reference)),
        token=token or secrets.token_urlsafe(24),
        labels=labels_path,
        annotator=who.strip(),
        review=review_path,
    )


def fingerprint_of(reference: str | os.PathLike[str]) -> str:
    """The fingerprint a run's signature records for the reference dataset in this file."""
    from ..io.files import read_reference
    from ..run.prepare.reference import prepare_reference
    from ..run.signature import reference_fingerprint

    return reference_fingerprint(prepare_reference(read_reference(reference), str(reference)))


def _login() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "annotator"


def make_server(settings: Any, host: str = "127.0.0.1", port: int = 0) -> tuple[Any, Any, str]:
    """(a uvicorn server of the app, its bound socket, the URL with the token)."""
    from .app import check_extra, create_app

    check_extra()
    import uvicorn

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise InputError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    sock.listen(128)  # connections wait in the backlog until the server accepts them
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    config = uvicorn.Config(
        create_app(settings), log_level="warning", access_log=False, lifespan="off"
    )
    return uvicorn.Server(config), sock, f"http://{shown}:{bound}/?token={settings.token}"


def serve(
    settings: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    open_browser: bool = False,
    say: Callable[[str], None] = print,
) -> None:
    """Serve the viewer until Ctrl-C (or SIGTERM): print its URL first (with ``port=0`` the
    system picks a free port)."""
    if host not in LOCAL_HOSTS:
        print(
            f"warning: serving on {host}: anyone who can reach this address and has the URL "
            "(its token) can read these results and write labels",
            file=sys.stderr,
        )
    server, sock, url = make_server(settings, host, port)
    say(f"qa-eval view: {len(settings.runs)} run(s); labels go to {settings.labels}")
    say(f"open {url}")
    say("press Ctrl-C to stop")
    if open_browser:
        webbrowser.open(url)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
