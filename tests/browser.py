"""A headless Chromium for the browser tests, driven by Playwright for Python.

Playwright's own browser download is not used: the tests start the Chromium that
``.ci/install-browser`` installs (or ``QA_EVAL_CHROMIUM``) once per test session, and each test
module connects Playwright to it over the DevTools protocol (the ``browser`` fixture of
``tests/conftest.py``) and disconnects at its end: Playwright's synchronous API keeps an asyncio
loop marked running while it is connected, so a connection held for the whole session would make
every later ``asyncio.run`` of the suite fail. Each test opens its own page. A :class:`Tab`
records what must never happen on our pages: a console error, an uncaught exception, a dialog,
and every request the page makes.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

__all__ = ["CHROMIUM_ARGS", "Tab", "find_chromium", "start_chromium", "stop_chromium"]

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--disable-gpu",
]
_NAMES = (
    "chromium-headless-shell",
    "chromium",
    "chromium-browser",
    "headless_shell",
    "google-chrome",
)


def find_chromium() -> str | None:
    """The Chromium binary: ``QA_EVAL_CHROMIUM``, else the first known name on PATH."""
    chosen = os.environ.get("QA_EVAL_CHROMIUM")
    if chosen:
        return chosen
    for name in _NAMES:
        found = shutil.which(name)
        if found:
            return found
    for path in ("/usr/lib/chromium/chromium", "/usr/lib/chromium/headless_shell"):
        if os.path.exists(path):
            return path
    return None


def start_chromium(binary: str, folder: Path, timeout: float = 60) -> tuple[Any, str]:
    """Start a headless Chromium with its DevTools endpoint on 127.0.0.1: (the process, the
    endpoint's ``ws://`` URL)."""
    log = folder / "chromium.log"
    with log.open("wb") as err:
        process = subprocess.Popen(
            [binary, "--headless", "--remote-debugging-address=127.0.0.1",
             "--remote-debugging-port=0", f"--user-data-dir={folder / 'profile'}",
             *CHROMIUM_ARGS, "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,  # its own process group: stop_chromium ends all of it
        )  # fmt: skip
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = re.search(r"DevTools listening on (ws://\S+)", log.read_text(errors="replace"))
        if found:
            return process, found.group(1)
        if process.poll() is not None:
            break
        time.sleep(0.05)
    stop_chromium(process)
    raise RuntimeError(f"Chromium did not start: {log.read_text(errors='replace')[-500:]}")


def stop_chromium(process: Any, timeout: float = 10) -> None:
    """End the browser and every process it started. Debian's ``chromium`` and
    ``chromium-headless-shell`` are shell scripts that run the real binary as a child, so ending
    only the started process left the browser running after the session: the whole process
    group is ended."""
    import signal

    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            continue
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:  # the group's other members end after its leader
            try:
                os.killpg(process.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)


class Tab:
    """A page of the browser that records problems and requests."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.problems: list[str] = []
        self.requests: list[str] = []
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.problems.append(f"page error: {error}"))
        page.on("request", lambda request: self.requests.append(request.url))
        page.on("dialog", self._dialog)

    def _console(self, message: Any) -> None:
        if message.type in ("error", "assert"):
            self.problems.append(f"console {message.type}: {message.text}")

    def _dialog(self, dialog: Any) -> None:
        self.problems.append(f"a dialog opened: {dialog.message}")
        dialog.dismiss()

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page."""
        return self.page.evaluate(expression)

    def poll(self, expression: str, timeout: float = 10.0) -> bool:
        """Whether ``expression`` becomes true within ``timeout`` seconds."""
        end = time.monotonic() + timeout
        while not self.page.evaluate(expression):  # (wait_for_function evals: CSP forbids)
            if time.monotonic() > end:
                return False
            self.page.wait_for_timeout(50)
        return True
