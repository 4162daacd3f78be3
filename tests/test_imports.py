"""The architecture, asserted on the import graph read statically (every import, function-level
and ``TYPE_CHECKING`` ones too).

Packages by layer (``docs/architecture.md`` draws it): a module imports modules of its own layer
or of lower ones, never of a higher one; there is no import circle; and no module imports another
module's ``_private`` name (a part shared inside a package gets a plain name).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import qa_eval

ROOT = Path(qa_eval.__file__).resolve().parent

# The layers, lowest first. A module belongs to the longest prefix listed.
LAYERS: dict[str, int] = {
    "qa_eval._version": 0,
    "qa_eval.errors": 0,
    "qa_eval.redact": 0,
    "qa_eval.digest": 0,
    "qa_eval.extras": 0,
    "qa_eval.prompts": 0,
    "qa_eval.prompt_hashes": 0,
    "qa_eval.schemas": 0,
    "qa_eval.vocabulary": 0,
    "qa_eval.io": 1,
    "qa_eval.traces": 1,
    "qa_eval.judge": 2,
    "qa_eval.metrics": 3,
    "qa_eval.steps": 3,
    "qa_eval.config": 4,
    "qa_eval.aggregate": 4,
    "qa_eval.frames": 4,
    "qa_eval.compare": 4,
    "qa_eval.agreement": 4,
    "qa_eval.run": 5,
    "qa_eval.refresh": 5,
    "qa_eval.generate": 5,
    "qa_eval.report": 6,
    "qa_eval.view": 6,
    "qa_eval.testing": 6,
    "qa_eval.ray": 6,
    "qa_eval.llms": 6,
    "qa_eval.embeddings": 6,
    "qa_eval.messages": 6,
    "qa_eval.metrics.collections": 6,
    "qa_eval.cli": 7,
    "qa_eval.__main__": 8,
    "qa_eval": 8,
}


def layer_of(module: str) -> int:
    """The layer of a module: its longest prefix in ``LAYERS`` (``x.`` matches submodules only)."""
    best = ""
    for prefix in LAYERS:
        exact = prefix.endswith(".") and module.startswith(prefix)
        under = not prefix.endswith(".") and (module == prefix or module.startswith(prefix + "."))
        if (exact or under) and len(prefix) > len(best):
            best = prefix
    if not best:
        raise AssertionError(f"{module} is in no layer of LAYERS: add it")
    return LAYERS[best]


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the package under ``root``, by its dotted name."""
    found = {}
    for path in root.rglob("*.py"):
        parts = ["qa_eval", *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def imports(root: Path = ROOT) -> dict[str, set[tuple[str, str | None]]]:
    """For each module, the package modules it imports, each with the name imported from it
    (``None`` for a whole module)."""
    found = modules(root)
    graph: dict[str, set[tuple[str, str | None]]] = {}
    for name, path in found.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        deps: set[tuple[str, str | None]] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                deps.update((a.name, None) for a in node.names if a.name in found)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - (node.level - 1)]
                    base = ".".join([*parts, base] if base else parts)
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    if full in found:
                        deps.add((full, None))
                    elif base in found:
                        deps.add((base, alias.name))
        graph[name] = {(dep, what) for dep, what in deps if dep != name}
    return graph


def upward(graph: dict[str, set[tuple[str, str | None]]]) -> list[str]:
    """Every import of a module of a higher layer, as ``importer (L) -> imported (L)``."""
    return sorted(
        f"{name} (L{layer_of(name)}) -> {dep} (L{layer_of(dep)})"
        for name, deps in graph.items()
        for dep, _ in deps
        if layer_of(dep) > layer_of(name)
    )


def circles(graph: dict[str, set[tuple[str, str | None]]]) -> list[list[str]]:
    """The import circles (strongly connected components of more than one module)."""
    edges = {name: {dep for dep, _ in deps} for name, deps in graph.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for dep in edges[node]:
            if dep not in index:
                visit(dep)
                low[node] = min(low[node], low[dep])
            elif dep in on_stack:
                low[node] = min(low[node], index[dep])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for name in sorted(edges):
        if name not in index:
            visit(name)
    return found


def private_imports(graph: dict[str, set[tuple[str, str | None]]]) -> list[str]:
    """Every ``_private`` name one module imports from another."""
    return sorted(
        f"{name} imports {dep}.{what}"
        for name, deps in graph.items()
        for dep, what in deps
        if what is not None and what.startswith("_") and not what.startswith("__")
    )


def test_every_module_has_a_layer() -> None:
    for name in modules():
        layer_of(name)


def test_no_module_imports_a_higher_layer() -> None:
    assert upward(imports()) == []


def test_there_is_no_import_circle() -> None:
    assert circles(imports()) == []


def test_no_private_name_crosses_a_module() -> None:
    assert private_imports(imports()) == []


def test_the_top_of_the_package_is_small() -> None:
    top = sorted(p.name for p in ROOT.glob("*.py"))
    assert len(top) <= 10, top
    stems = [name.removesuffix(".py") for name in top] + [
        p.name for p in ROOT.iterdir() if (p / "__init__.py").exists()
    ]
    for a in stems:
        for b in stems:
            assert a == b or not b.startswith(a + "_"), f"{b} is {a} plus a suffix"


def test_the_rule_catches_an_upward_import(tmp_path: Path) -> None:
    """The checks above can fail: a copy of the package with one upward import added is caught."""
    import shutil

    copy = tmp_path / "qa_eval"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns("__pycache__", "data", "templates"))
    errors = copy / "errors.py"
    errors.write_text(errors.read_text(encoding="utf-8") + "\nfrom .cli import main\n")
    found = upward(imports(copy))
    assert found == ["qa_eval.errors (L0) -> qa_eval.cli (L7)"]


@pytest.mark.parametrize(
    "start",
    [
        "qa_eval.judge.settings",
        "qa_eval.config",
        "qa_eval.judge.clients",
        "qa_eval.judge.embeddings",
    ],
)
def test_settings_and_config_never_reach_the_judges_calls(start: str) -> None:
    edges = {name: {dep for dep, _ in deps} for name, deps in imports().items()}
    seen, todo = set(), [start]
    while todo:
        for dep in edges[todo.pop()]:
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    assert "qa_eval.judge.calls" not in seen


# Modules that are data tables and may pass the module-size rule (each is a literal table, not
# code that holds two ideas). Listed by dotted name; each must exist.
DATA_TABLES: frozenset[str] = frozenset({"qa_eval.vocabulary.registry"})

MAX_LINES = 600
"""No module is longer than this, other than the data tables above (docs/architecture.md)."""


def folders(root: Path = ROOT) -> list[Path]:
    """The package and every folder of it that holds Python modules."""
    return sorted({path.parent for path in root.rglob("*.py") if "__pycache__" not in path.parts})


def suffixed_twins(root: Path = ROOT) -> list[str]:
    """Every ``x_suffix`` module or package that stands beside an ``x`` in the same folder."""
    found = []
    for folder in folders(root):
        stems = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
        stems |= {p.name for p in folder.iterdir() if (p / "__init__.py").exists()}
        for a in stems:
            found += [
                f"{folder.relative_to(root.parent)}: {b} beside {a}"
                for b in stems
                if b != a and b.startswith(a + "_") and a.strip("_")
            ]
    return sorted(found)


def long_modules(root: Path = ROOT) -> list[str]:
    """Every module over ``MAX_LINES`` lines that is not a listed data table."""
    return sorted(
        f"{name}: {n} lines"
        for name, path in modules(root).items()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
        and name not in DATA_TABLES
    )


VOCABULARY = "qa_eval.vocabulary"


def vocabulary_names(root: Path = ROOT) -> set[str]:
    """The names the vocabulary's modules define at their top level."""
    names: set[str] = set()
    for name, path in modules(root).items():
        if name == VOCABULARY or not name.startswith(VOCABULARY + "."):
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names.update(t.id for t in targets if isinstance(t, ast.Name))
    return {n for n in names if not n.startswith("_")}


def registry_reads_elsewhere(root: Path = ROOT) -> list[str]:
    """Every import of the registry from anywhere but its home: a vocabulary name imported from
    the old home (the ``qa_eval.metrics`` face) or from a module that itself imports it from the
    vocabulary (a re-export), or the ``qa_eval.metrics`` face imported whole to read the registry
    through it. (Other modules may define names of their own that the vocabulary also uses, such
    as ``aggregate.METRICS``, the aggregated keys.)"""
    graph = imports(root)
    vocabulary = vocabulary_names(root)
    out = []
    for name, deps in graph.items():
        for dep, what in deps:
            if dep.startswith(VOCABULARY) or name.startswith(VOCABULARY):
                continue
            passed_on = any(d.startswith(VOCABULARY) and w == what for d, w in graph.get(dep, ()))
            if what is None and dep == "qa_eval.metrics":
                out.append(f"{name} imports the qa_eval.metrics face")
            elif what in vocabulary and (dep == "qa_eval.metrics" or passed_on):
                out.append(f"{name} imports {what} from {dep}")
    return sorted(out)


def test_no_folder_has_a_module_beside_its_suffixed_twin() -> None:
    assert suffixed_twins() == []


def test_no_module_is_longer_than_the_rule_but_data_tables() -> None:
    assert long_modules() == []
    assert set(modules()) >= DATA_TABLES, sorted(DATA_TABLES - set(modules()))


def test_the_registry_is_read_from_its_home_only() -> None:
    assert vocabulary_names() >= {"METRICS", "RANKING", "direction", "key_info", "Metric"}
    assert registry_reads_elsewhere() == []


def test_the_layout_rules_can_fail(tmp_path: Path) -> None:
    """The three layout checks above catch what they are for, on a copy of the package."""
    import shutil

    copy = tmp_path / "qa_eval"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns("__pycache__", "data", "templates"))
    (copy / "io" / "files_more.py").write_text('"""A suffixed twin."""\n')
    (copy / "io" / "long.py").write_text("x = 1\n" * (MAX_LINES + 1))
    numbers = copy / "io" / "numbers.py"
    numbers.write_text(numbers.read_text(encoding="utf-8") + "\nfrom ..metrics import METRICS\n")
    files = copy / "io" / "files.py"
    files.write_text(files.read_text(encoding="utf-8") + "\nfrom .numbers import RANKING\n")
    added = {
        "twins": set(suffixed_twins(copy)) - set(suffixed_twins()),
        "long": set(long_modules(copy)) - set(long_modules()),
        "registry": set(registry_reads_elsewhere(copy)) - set(registry_reads_elsewhere()),
    }
    assert added == {
        "twins": {"qa_eval/io: files_more beside files"},
        "long": {f"qa_eval.io.long: {MAX_LINES + 1} lines"},
        "registry": {
            "qa_eval.io.numbers imports METRICS from qa_eval.metrics",
            "qa_eval.io.files imports RANKING from qa_eval.io.numbers",
        },
    }
