"""The prompt files are read alike from a folder on disk (the fast path a run's signature takes)
and from any other ``importlib.resources`` container, such as a zip file."""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest

from qa_eval import prompts


def _clear() -> None:
    for cached in (prompts.prompt_text, prompts.prompt_names, prompts._folder):
        getattr(cached, "cache_clear", lambda: None)()  # (_folder may be patched)


@pytest.fixture
def fresh_caches() -> Iterator[None]:
    _clear()
    yield
    _clear()


def test_a_folder_on_disk_reads_as_pathlib_does(fresh_caches: None) -> None:
    folder = resources.files("qa_eval.prompts")
    assert isinstance(folder, Path)
    names = prompts.prompt_names()
    assert names == tuple(sorted(p.name[:-3] for p in folder.iterdir() if p.suffix == ".md"))
    assert "answer_correctness" in names
    for name in names:
        assert prompts.prompt_text(name) == (folder / f"{name}.md").read_text(encoding="utf-8")


def test_a_zipped_folder_reads_the_same_texts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_caches: None
) -> None:
    archive = tmp_path / "prompts.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("p/b.md", "second\r\nline\n")
        z.writestr("p/a.md", "first $x\n")
        z.writestr("p/notes.txt", "not a prompt")
    monkeypatch.setattr(prompts, "_folder", lambda: zipfile.Path(archive, "p/"))
    assert prompts.prompt_names() == ("a", "b")
    assert prompts.prompt_text("a") == "first $x\n"
    assert prompts.prompt_text("b") == "second\nline\n"  # universal newlines, as read_text
