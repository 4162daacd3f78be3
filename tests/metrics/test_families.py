"""The layout of ``qa_eval.metrics``: one package per family, each with a face that says what it
holds, a handful of modules, and names that say what differs between siblings."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

METRICS = Path(importlib.import_module("qa_eval.metrics").__file__ or "").parent
FAMILIES = sorted(p for p in METRICS.iterdir() if (p / "__init__.py").exists())


def test_the_families_are_the_documented_ones() -> None:
    assert [p.name for p in FAMILIES] == [
        "agents",
        "answer",
        "collections",
        "ragas",
        "retrieval",
        "textual",
    ]
    assert sorted(p.name for p in METRICS.glob("*.py")) == [
        "__init__.py",
        "custom.py",
        "definitions.py",
        "output.py",
    ]


@pytest.mark.parametrize("folder", [METRICS, *FAMILIES], ids=lambda p: p.name)
def test_no_module_is_a_sibling_plus_a_suffix(folder: Path) -> None:
    stems = [p.stem for p in folder.glob("*.py") if p.stem != "__init__"]
    stems += [p.name for p in folder.iterdir() if (p / "__init__.py").exists()]
    clashes = [f"{b} is {a} plus a suffix" for a in stems for b in stems if b.startswith(a + "_")]
    assert clashes == []


@pytest.mark.parametrize("family", FAMILIES, ids=lambda p: p.name)
def test_a_family_has_a_face_and_a_handful_of_modules(family: Path) -> None:
    face = ast.parse((family / "__init__.py").read_text(encoding="utf-8"))
    assert ast.get_docstring(face)
    assert len([p for p in family.glob("*.py") if p.stem != "__init__"]) <= 12


@pytest.mark.parametrize("family", [p.name for p in FAMILIES if p.name != "collections"])
def test_a_family_face_offers_its_names_lazily(family: str) -> None:
    package = importlib.import_module(f"qa_eval.metrics.{family}")
    for name in package.__all__:
        value = getattr(package, name)
        assert value.__module__.startswith(f"qa_eval.metrics.{family}."), name
        # a face's name never hides one of its modules (``from package import module``)
        assert not (METRICS / family / f"{name}.py").exists(), name
