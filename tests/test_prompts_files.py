"""The prompt files are read alike from a folder on disk (the fast path a run's signature takes)
and from any other ``importlib.resources`` container, such as a zip file; the table of their
hashes a run's signature records (``qa_eval.prompt_hashes``) is theirs."""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest

from qa_eval import prompts


def _clear() -> None:
    prompts._TEXTS.clear()
    for cached in (prompts.prompt_names, prompts._folder):
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


def test_the_hash_table_is_the_files(fresh_caches: None) -> None:
    """``qa_eval.prompt_hashes`` holds every prompt file's hash, and only theirs: a prompt added,
    removed or changed without writing the table again fails here (the signature of a run that
    does not read a prompt records the table's hash)."""
    from qa_eval.prompt_hashes import HASHES

    hash_of = prompts.prompt_hash
    files = {name: hash_of(prompts.prompt_text(name)) for name in prompts.prompt_names()}
    table = "\n".join(f'    "{name}": "{value}",' for name, value in files.items())
    assert files == HASHES, f"write this table into src/qa_eval/prompt_hashes.py:\n{table}"
    assert list(HASHES) == sorted(HASHES)


def test_the_signature_hashes_the_prompts_a_process_read(
    monkeypatch: pytest.MonkeyPatch, fresh_caches: None
) -> None:
    """A prompt this process read is hashed from its text, whatever the table says; the others
    come from the table, in the table's order."""
    from qa_eval import prompt_hashes as hashes

    stale = {**hashes.HASHES, "answer_correctness": "0" * 16, "geval": "1" * 16}
    monkeypatch.setattr(hashes, "HASHES", stale)
    assert prompts.prompt_hashes() == stale
    text = prompts.prompt_text("answer_correctness")
    prompts.prompt_text("generate/rewrite")  # (not a prompt of the signature's)
    found = prompts.prompt_hashes()
    assert found == {**stale, "answer_correctness": prompts.prompt_hash(text)}
    assert list(found) == list(stale)
