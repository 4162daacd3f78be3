"""Shared fixtures: no test reaches a real judge, and every cache lives in a temporary folder."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from openai_stub import StubServer, oracle

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
