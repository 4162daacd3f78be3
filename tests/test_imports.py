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
    "qa_eval.judge.cache.store",
    "qa_eval.judge.cache.sqlite",
    "qa_eval.judge.clients",
    "qa_eval.compare.runs",
    "qa_eval.compare.table",
    "qa_eval.config",
    "qa_eval.judge.embeddings",
    "qa_eval.errors",
    "qa_eval.judge.faults",
    "qa_eval.io.files",
    "qa_eval.judge.calls",
    "qa_eval.metrics.definitions",
    "qa_eval.run.prepare",
    "qa_eval.refresh.reference",
    "qa_eval.refresh.changes",
    "qa_eval.refresh.runners",
    "qa_eval.refresh.writer",
    "qa_eval.judge.replies",
    "qa_eval.judge.settings",
    "qa_eval.compare.signflip",
    "qa_eval.steps.kinds",
    "qa_eval.steps.sparql.compare",
    "qa_eval.steps.sparql.explain",
    "qa_eval.steps.sparql.match",
    "qa_eval.steps.sparql.terms",
    "qa_eval.judge.usage",
    "qa_eval.io.limits",
)


def test_the_split_modules_exist_and_none_is_in_an_import_circle() -> None:
    graph = _graph()
    for name in SPLIT:
        assert name in graph, name
        assert name not in _reachable(graph, name), f"{name} imports itself through others"


def test_settings_and_config_never_reach_the_judge() -> None:
    graph = _graph()
    for start in ("qa_eval.judge.settings", "qa_eval.config", "qa_eval.judge.clients", "qa_eval.judge.embeddings"):
        assert "qa_eval.judge.calls" not in _reachable(graph, start), start
    assert _reachable(graph, "qa_eval.judge.settings") <= {"qa_eval.redact"}  # a leaf


def test_no_step_module_imports_records() -> None:
    graph = _graph()
    steps = [name for name in graph if name.startswith("qa_eval.steps")]
    assert "qa_eval.steps.kinds" in steps
    for name in steps:
        assert "qa_eval.run.prepare" not in graph[name], name
