"""docs/generate.md's worked example runs as written: each ``$ qa-eval generate ...`` command of
the page is run on the power-grid demo, and every output line the page shows (up to its ``...``)
is what the command prints."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import shutil
from pathlib import Path

import pytest

from qa_eval.cli import main

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "generate.md"


def _examples() -> list[tuple[str, list[str]]]:
    """Each ``$ qa-eval`` command of the page's text blocks with the lines shown after it."""
    found = []
    for block in re.findall(r"```text\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S):
        lines = block.splitlines()
        if lines and lines[0].startswith("$ qa-eval "):
            shown = []
            for line in lines[1:]:
                if line.strip() == "...":
                    break
                shown.append(line)
            found.append((lines[0][2:], shown))
    return found


def test_the_page_has_a_worked_example() -> None:
    commands = [command for command, _ in _examples()]
    assert any("--describe" in c for c in commands)
    assert any(" -n " in c and "--review" in c for c in commands)


@pytest.mark.parametrize(("command", "shown"), _examples(), ids=lambda v: str(v)[:40])
def test_the_worked_example_prints_what_the_page_shows(
    command: str, shown: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("pyoxigraph")
    shutil.copytree(ROOT / "examples" / "powergrid", tmp_path / "examples" / "powergrid")
    monkeypatch.chdir(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(shlex.split(command)[1:])
    assert code == 0, err.getvalue()
    printed = (out.getvalue() + err.getvalue()).splitlines()
    assert shown and printed[: len(shown)] == shown
    if "-o" in shlex.split(command):
        assert (tmp_path / "reference.yaml").is_file() and (tmp_path / "review.csv").is_file()
