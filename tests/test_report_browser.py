"""The HTML report in a real headless Chromium, driven over the Chrome DevTools Protocol.

Checks that the page loads with no console error and no network request other than the report
file itself, that every chart is drawn, that hostile text stays text (no dialog opens) and that
the question table filters and sorts. Skipped when no Chromium is installed (``.ci/install-browser``
installs one) or when ``websocket-client`` is missing.

Set ``QA_EVAL_REPORT_SCREENSHOT=/path/report.png`` to keep a screenshot of the page, and
``QA_EVAL_CHROMIUM`` to choose the browser binary.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from qa_eval.report import Run, build_report
from test_report import COMPARISON, SIGNATURE, XSS, sample_results

websocket = pytest.importorskip(
    "websocket", reason="websocket-client is not installed (pip install websocket-client)"
)


BROWSERS = (
    "chromium-headless-shell",
    "chromium",
    "chromium-browser",
    "headless_shell",
    "google-chrome",
    "google-chrome-stable",
)
HOSTILE_TEMPLATE = "<img src=x onerror=alert(3)>"
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


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Browser, str, float]]:
    binary = find_chromium()
    if binary is None:
        pytest.skip("no Chromium binary found (run .ci/install-browser, or set QA_EVAL_CHROMIUM)")
    folder = tmp_path_factory.mktemp("browser")
    results = sample_results()
    results[0]["template_id"] = HOSTILE_TEMPLATE
    page_file = folder / "report.html"
    page_file.write_text(
        build_report(
            [
                Run("baseline", results, SIGNATURE),
                Run("candidate", sample_results(shift=0.2), None),
            ],
            COMPARISON,
        ),
        encoding="utf-8",
    )
    browser = Browser(binary, folder / "profile")
    try:
        for domain in ("Page", "Runtime", "Network", "Log"):
            browser.page(f"{domain}.enable")
        url = page_file.as_uri()
        started = time.monotonic()
        browser.page("Page.navigate", {"url": url})
        browser.wait_for("Page.loadEventFired")
        drawn = browser.poll(  # the page draws the charts one after another, after loading
            "(() => { const charts = Array.from(document.querySelectorAll('[data-chart]'));"
            " if (document.body.dataset.chartsDrawn !== String(charts.length)) return false;"
            " return charts.length > 0 && charts.every(el => el.classList.contains("
            "'js-plotly-plot') && el.querySelector('svg.main-svg')); })()"
        )
        assert drawn, "not every chart was drawn"
        render_seconds = time.monotonic() - started
        screenshot = os.environ.get("QA_EVAL_REPORT_SCREENSHOT")
        if screenshot:
            shot = browser.page(
                "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": False}
            )
            Path(screenshot).write_bytes(base64.b64decode(shot["data"]))
        yield browser, url, render_seconds
    finally:
        browser.close()


def test_no_console_error_and_no_dialog(loaded: tuple[Browser, str, float]) -> None:
    browser, _, _ = loaded
    problems = []
    for event in browser.events:
        method, params = event["method"], event.get("params", {})
        if method == "Runtime.exceptionThrown":
            problems.append(params["exceptionDetails"])
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            problems.append(params.get("args"))
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            problems.append(params["entry"])
        elif method == "Page.javascriptDialogOpening":
            problems.append(f"a dialog opened: {params.get('message')}")
    assert problems == []


def test_no_network_request(loaded: tuple[Browser, str, float]) -> None:
    browser, url, _ = loaded
    requests = [
        e["params"]["request"]["url"]
        for e in browser.events
        if e["method"] == "Network.requestWillBeSent"
    ]
    assert requests == [url]


def test_every_chart_is_drawn(loaded: tuple[Browser, str, float]) -> None:
    browser, _, render_seconds = loaded
    charts = browser.evaluate(
        "Array.from(document.querySelectorAll('[data-chart]')).map(el => ["
        "el.classList.contains('js-plotly-plot'), el.querySelectorAll('svg.main-svg').length, "
        "el.querySelectorAll('g.trace, g.point').length])"
    )
    figures = browser.evaluate(
        "Object.keys(JSON.parse(document.getElementById('qa-report-data').textContent).figures)"
        ".length"
    )
    assert len(charts) == figures > 20
    assert all(plotly and svgs >= 1 and traces >= 1 for plotly, svgs, traces in charts), charts
    assert render_seconds < 30


def test_hostile_text_is_shown_as_text(loaded: tuple[Browser, str, float]) -> None:
    browser, _, _ = loaded
    answers = browser.evaluate(
        "Array.from(document.querySelectorAll('#q-table td .text')).map(e => e.textContent)"
    )
    assert XSS in answers
    assert browser.evaluate("document.scripts.length") == 3
    assert browser.evaluate("document.images.length") == 0
    # plotly shows the hostile template id as text in the axis labels, with no link or image
    ticks = browser.evaluate(
        "Array.from(document.querySelectorAll('.xtick text')).map(e => e.textContent)"
    )
    assert HOSTILE_TEMPLATE in ticks
    assert browser.evaluate("document.querySelectorAll('.main-svg a, .main-svg image').length") == 0


def test_filter_and_sort(loaded: tuple[Browser, str, float]) -> None:
    browser, _, _ = loaded
    visible = (
        "Array.from(document.querySelectorAll('#q-table > tbody > tr.q-row'))"
        ".filter(r => !r.hidden)"
    )
    assert browser.evaluate(f"{visible}.length") == 12
    browser.evaluate(
        "(() => { const f = document.getElementById('q-filter'); f.value = 'question 3 about';"
        " f.dispatchEvent(new Event('input')); })()"
    )
    # question 3 of each run
    assert browser.evaluate(f"{visible}.map(r => r.dataset.run)") == ["baseline", "candidate"]
    browser.evaluate(
        "(() => { const f = document.getElementById('q-filter'); f.value = '';"
        " f.dispatchEvent(new Event('input'));"
        " const t = document.getElementById('q-template'); t.value = 'voltage';"
        " t.dispatchEvent(new Event('change')); })()"
    )
    assert set(browser.evaluate(f"{visible}.map(r => r.dataset.template)")) == {"voltage"}
    assert browser.evaluate("document.getElementById('q-count').textContent") == (
        "4 of 12 questions"
    )
    # sort by the steps_score column, ascending then descending
    column = browser.evaluate(
        "Array.from(document.querySelectorAll('#q-table thead th'))"
        ".findIndex(th => th.textContent.trim() === 'steps_score')"
    )
    assert column > 0
    values = (
        f"Array.from(document.querySelectorAll('#q-table > tbody > tr.q-row'))"
        f".map(r => Number(r.cells[{column}].dataset.sort))"
    )
    header = f"document.querySelectorAll('#q-table thead th')[{column}]"
    browser.evaluate(f"{header}.click()")
    ascending = browser.evaluate(values)
    assert ascending == sorted(ascending)
    browser.evaluate(f"{header}.click()")
    descending = browser.evaluate(values)
    assert descending == sorted(descending, reverse=True)


def test_details_open_and_close(loaded: tuple[Browser, str, float]) -> None:
    browser, _, _ = loaded
    first = "document.querySelector('#q-table > tbody > tr.q-row:not([hidden])')"
    detail = f"{first}.nextElementSibling"
    assert browser.evaluate(f"{detail}.hidden") is True
    browser.evaluate(f"{first}.querySelector('button.toggle').click()")
    assert browser.evaluate(f"{detail}.hidden") is False
    text = browser.evaluate(f"{detail}.textContent")
    assert "Reference steps" in text and "Judge reasons" in text
    browser.evaluate(f"{first}.querySelector('button.toggle').click()")
    assert browser.evaluate(f"{detail}.hidden") is True
