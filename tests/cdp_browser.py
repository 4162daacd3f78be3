"""A headless Chromium driven over the Chrome DevTools Protocol, for the report's browser test
and benchmarks/report.py. Needs ``websocket-client``; ``QA_EVAL_CHROMIUM`` chooses the binary."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import websocket

BROWSERS = (
    "chromium-headless-shell",
    "chromium",
    "chromium-browser",
    "headless_shell",
    "google-chrome",
    "google-chrome-stable",
)
TIMEOUT = 60.0


def find_chromium() -> str | None:
    chosen = os.environ.get("QA_EVAL_CHROMIUM")
    if chosen:
        return shutil.which(chosen) or (chosen if Path(chosen).is_file() else None)
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    return None


class Browser:
    """A headless Chromium and a minimal CDP client on one page (a flattened session)."""

    def __init__(self, binary: str, profile: Path) -> None:
        self.log = (profile.parent / "chromium.log").open("wb")
        self.process = subprocess.Popen(
            [
                binary,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--remote-debugging-port=0",
                f"--user-data-dir={profile}",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--window-size=1400,1000",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        lines: list[str] = []
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"chromium exited with code {self.process.returncode}")
            if port_file.is_file():
                lines = port_file.read_text().split()
                if len(lines) >= 2:
                    break
            time.sleep(0.05)
        else:
            self.close()
            raise RuntimeError("chromium wrote no DevToolsActivePort in 30 s")
        self.ws = websocket.create_connection(
            f"ws://127.0.0.1:{lines[0]}{lines[1]}", timeout=TIMEOUT, suppress_origin=True
        )
        self.next_id = 0
        self.events: list[dict[str, Any]] = []
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]

    def _receive(self) -> dict[str, Any]:
        message = json.loads(self.ws.recv())
        if "method" in message:
            self.events.append(message)
            if message["method"] == "Page.javascriptDialogOpening":
                # Never leave a dialog open: it would block the page. The test fails on the event.
                self.ws.send(
                    json.dumps(
                        {
                            "id": -1,
                            "sessionId": message.get("sessionId"),
                            "method": "Page.handleJavaScriptDialog",
                            "params": {"accept": False},
                        }
                    )
                )
        return message

    def call(self, method: str, params: dict[str, Any] | None = None, page: bool = False) -> Any:
        self.next_id += 1
        request: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if page:
            request["sessionId"] = self.session
        self.ws.send(json.dumps(request))
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            message = self._receive()
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
        raise TimeoutError(method)

    def page(self, method: str, params: dict[str, Any] | None = None) -> Any:
        return self.call(method, params, page=True)

    def wait_for(self, event: str, timeout: float = TIMEOUT) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        seen = len(self.events)
        while time.monotonic() < deadline:
            for message in self.events[seen:]:
                if message["method"] == event:
                    return message
            seen = len(self.events)
            self._receive()
        raise TimeoutError(event)

    def evaluate(self, expression: str) -> Any:
        reply = self.page(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in reply:
            raise RuntimeError(f"{expression}: {reply['exceptionDetails']}")
        return reply["result"].get("value")

    def poll(self, expression: str, timeout: float = TIMEOUT) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value or time.monotonic() > deadline:
                return value
            time.sleep(0.1)

    def close(self) -> None:
        ws = getattr(self, "ws", None)
        if ws is not None:
            with contextlib.suppress(Exception):
                self.call("Browser.close")
            ws.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        self.log.close()
