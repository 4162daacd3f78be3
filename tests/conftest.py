"""Shared fixtures: no test reaches a real judge, and every cache lives in a temporary folder."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).parent))

from browser import find_chromium, start_chromium, stop_chromium
from openai_stub import StubServer, oracle

# Property tests judge results, not speed: a machine that stalls (CI's first call of a test once
# took 548 ms against Hypothesis' 200 ms default) must not turn a passing property into "Flaky",
# nor a slow draw of examples into a failed health check. Loaded here, before any test module
# builds its @settings, so that they all inherit it.
settings.register_profile("qa-eval", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("qa-eval")

_JUDGE_VARIABLES = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "AZURE_OPENAI_API_KEY",
    "AZURE_OPENAI_ENDPOINT",
    "OPENAI_API_VERSION",
)


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    for name in _JUDGE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("QA_EVAL_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture
def stub() -> Iterator[StubServer]:
    """A scripted OpenAI-compatible server answering like a sensible judge, no delay."""
    with StubServer(oracle()) as server:
        yield server


@pytest.fixture(scope="session")
def chromium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One headless Chromium for the session: its DevTools endpoint (or a skip saying what is
    missing)."""
    pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (pip install 'qa-eval[test]')"
    )
    binary = find_chromium()
    if binary is None:
        pytest.skip("no Chromium binary found (run .ci/install-browser, or set QA_EVAL_CHROMIUM)")
    process, endpoint = start_chromium(binary, tmp_path_factory.mktemp("chromium"))
    try:
        yield endpoint
    finally:
        stop_chromium(process)


@pytest.fixture(scope="module")
def browser(chromium: str) -> Iterator[Any]:
    """The session's Chromium, driven by Playwright for one test module (see tests/browser.py)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        connected = playwright.chromium.connect_over_cdp(chromium)
        try:
            yield connected
        finally:
            connected.close()  # disconnects; the browser keeps running for the next module
