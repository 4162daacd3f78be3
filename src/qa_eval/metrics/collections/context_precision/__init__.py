"""ragas 0.4.3's ``ragas.metrics.collections.context_precision`` under qa-eval (docs/ragas.md,
*Module paths*). It names ``ContextPrecision``, ``ContextPrecisionWithReference``,
``ContextPrecisionWithoutReference``, ``ContextUtilization``.
"""

from typing import TYPE_CHECKING

from ....extras import ragas_face

if TYPE_CHECKING:
    from qa_eval.metrics.collections.rag import (
        ContextPrecision,
        ContextPrecisionWithoutReference,
        ContextPrecisionWithReference,
        ContextUtilization,
    )

_NAMES: dict[str, tuple[str, str]] = {
    "ContextPrecision": ("qa_eval.metrics.collections.rag", "ContextPrecision"),
    "ContextPrecisionWithReference": (
        "qa_eval.metrics.collections.rag",
        "ContextPrecisionWithReference",
    ),
    "ContextPrecisionWithoutReference": (
        "qa_eval.metrics.collections.rag",
        "ContextPrecisionWithoutReference",
    ),
    "ContextUtilization": ("qa_eval.metrics.collections.rag", "ContextUtilization"),
}
_MISSING: dict[str, str] = {}
__all__: list[str] = [
    "ContextPrecision",
    "ContextPrecisionWithReference",
    "ContextPrecisionWithoutReference",
    "ContextUtilization",
]
__getattr__, __dir__ = ragas_face(__name__, _NAMES, _MISSING)
