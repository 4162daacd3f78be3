"""Every import path the README and docs/ name resolves: ``from qa_eval.x import a, b`` imports,
and each dotted ``qa_eval.x.y`` names a module or an attribute of one. The paths documented
before the modules moved into packages import too, as the same module objects."""

from __future__ import annotations

import contextlib
import importlib
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

import qa_eval
from qa_eval.extras import MissingExtra

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FROM_IMPORT = re.compile(r"from (qa_eval(?:\.\w+)*) import ([\w, ]+)")
DOTTED = re.compile(r"\bqa_eval(?:\.[A-Za-z_]\w*)+")
# Names the docs use for things that are not import paths: a metric's documented key prefix, and
# OpenTelemetry attribute names and values (the trace attribute a question id may be recorded
# under, docs/traces.md; what export-scores writes, docs/export-scores.md).
NOT_PATHS = {
    "qa_eval.metrics.answer.conciseness",
    "qa_eval.metric_error",
    "qa_eval.question_id",
    "qa_eval.trial",
}


def _resolve(dotted: str) -> object:
    """The module or attribute a dotted path names (AssertionError when it names nothing)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            assert hasattr(value, name), f"{dotted}: {'.'.join(parts[:cut])} has no {name}"
            value = getattr(value, name)
        return value
    raise AssertionError(f"{dotted}: no module")


def _documented() -> tuple[set[tuple[str, str]], set[str]]:
    imports: set[tuple[str, str]] = set()
    dotted: set[str] = set()
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for module, names in FROM_IMPORT.findall(text):
            for name in names.split(","):
                if name.strip():
                    imports.add((module, name.strip()))
        dotted.update(m.rstrip(".") for m in DOTTED.findall(text))
    return imports, dotted - NOT_PATHS


def test_the_docs_name_import_paths() -> None:
    imports, dotted = _documented()
    assert ("qa_eval", "run_evaluation") in imports
    assert len(dotted) > 20


@pytest.mark.parametrize("module,name", sorted(_documented()[0]))
def test_a_documented_from_import_works(module: str, name: str) -> None:
    with _extra_installed():
        assert hasattr(importlib.import_module(module), name), f"from {module} import {name}"


@pytest.mark.parametrize("dotted", sorted(_documented()[1]))
def test_a_documented_dotted_path_resolves(dotted: str) -> None:
    with _extra_installed():
        _resolve(dotted)


@contextlib.contextmanager
def _extra_installed() -> Iterator[None]:
    """A module whose import needs an extra that is not installed (``qa_eval.ray`` without
    Ray) is skipped, saying which; CI installs every extra the docs name (the 'test' extra)."""
    try:
        yield
    except MissingExtra as missing:
        pytest.skip(str(missing))


@pytest.mark.parametrize(
    "old,new,name",
    [
        ("qa_eval.batch", "qa_eval.run.prefill", "prefill"),
        ("qa_eval.cache", "qa_eval.judge.cache", "CacheError"),
        ("qa_eval.console", "qa_eval.cli.console", "ConsoleObserver"),
        ("qa_eval.evaluate", "qa_eval.run.files", "Observer"),
        ("qa_eval.filekind", "qa_eval.io.kinds", "detect"),
        ("qa_eval.flat", "qa_eval.io.flat", "read_flat"),
        ("qa_eval.stream", "qa_eval.run.stream", "JsonLinesResponses"),
    ],
)
def test_a_path_from_before_the_packages_imports_the_module_it_moved_to(
    old: str, new: str, name: str
) -> None:
    module = importlib.import_module(old)
    assert isinstance(module, ModuleType)
    assert module is importlib.import_module(new)
    assert module.__name__ == new and module.__spec__ is not None
    assert module.__spec__.name == new  # the module keeps its own spec
    assert sys.modules[old] is module
    exec(f"from {old} import {name}", {})  # the form the docs showed


METRIC_MODULES = sorted(
    (old, new) for old, new in qa_eval._MOVED.items() if old.startswith("qa_eval.metrics.")
)


def test_every_metric_module_moved_into_a_family_keeps_its_old_path() -> None:
    """Each module the flat ``metrics/`` held has a row; none is left at its old place."""
    moved = {old.rpartition(".")[2] for old, _ in METRIC_MODULES}
    assert len(moved) == 32
    package = ROOT / "src" / "qa_eval" / "metrics"
    assert not [name for name in moved if (package / f"{name}.py").exists()]
    flat = {path.stem for path in package.glob("*.py")}
    assert flat == {"__init__", "custom", "definitions", "output"}


@pytest.mark.parametrize("old,new", METRIC_MODULES)
def test_a_metric_module_path_from_before_the_families_imports_the_same_module(
    old: str, new: str
) -> None:
    module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert module.__spec__ is not None and module.__spec__.name == new
    assert sys.modules[old] is module
    namespace: dict[str, object] = {}
    exec(f"from qa_eval.metrics import {old.rpartition('.')[2]} as found", namespace)
    assert namespace["found"] is module  # the ``from qa_eval.metrics import x`` form


def test_an_unknown_old_path_is_still_an_import_error() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("qa_eval.runner")
