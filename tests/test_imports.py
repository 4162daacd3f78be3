"""The import graph of the package, read statically (every import, function-level ones too): the
endpoint settings and the config loader never reach the judge, no module of ``steps`` imports
``records``, and none of the modules split out of the judge, the config, the cache, compare,
refresh, io and the SPARQL comparison is in an import circle."""

from __future__ import annotations

import ast
from pathlib import Path

import qa_eval

ROOT = Path(qa_eval.__file__).resolve().parent


def _modules() -> dict[str, Path]:
    found = {}
    for path in ROOT.rglob("*.py"):
        parts = ["qa_eval", *path.relative_to(ROOT).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - (node.level - 1)]
                    base = ".".join([*parts, base] if base else parts)
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    targets.append(full if full in modules else base)
            deps.update(t for t in targets if t in modules and t != name)
        graph[name] = deps
    return graph


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for dep in graph[todo.pop()]:
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return seen


SPLIT = (
    "qa_eval.cache",
    "qa_eval.cache_file",
    "qa_eval.clients",
    "qa_eval.compare",
    "qa_eval.compare_table",
    "qa_eval.config",
    "qa_eval.embeddings",
    "qa_eval.errors",
    "qa_eval.faults",
    "qa_eval.io",
    "qa_eval.judge",
    "qa_eval.metrics.definitions",
    "qa_eval.records",
    "qa_eval.refresh",
    "qa_eval.refresh_changes",
    "qa_eval.refresh_runners",
    "qa_eval.refresh_writer",
    "qa_eval.replies",
    "qa_eval.settings",
    "qa_eval.signflip",
    "qa_eval.steps.kinds",
    "qa_eval.steps.sparql",
    "qa_eval.steps.sparql_explain",
    "qa_eval.steps.sparql_match",
    "qa_eval.steps.sparql_terms",
    "qa_eval.usage",
    "qa_eval.writers",
)


def test_the_split_modules_exist_and_none_is_in_an_import_circle() -> None:
    graph = _graph()
    for name in SPLIT:
        assert name in graph, name
        assert name not in _reachable(graph, name), f"{name} imports itself through others"


def test_settings_and_config_never_reach_the_judge() -> None:
    graph = _graph()
    for start in ("qa_eval.settings", "qa_eval.config", "qa_eval.clients", "qa_eval.embeddings"):
        assert "qa_eval.judge" not in _reachable(graph, start), start
    assert _reachable(graph, "qa_eval.settings") <= {"qa_eval.redact"}  # a leaf


def test_no_step_module_imports_records() -> None:
    graph = _graph()
    steps = [name for name in graph if name.startswith("qa_eval.steps")]
    assert "qa_eval.steps.kinds" in steps
    for name in steps:
        assert "qa_eval.records" not in graph[name], name
