"""ragas 0.4.3's ``ragas.metrics.collections.quoted_spans`` under qa-eval (docs/ragas.md, *Module
paths*). It names ``QuotedSpansAlignment``.
"""

from typing import TYPE_CHECKING

from ....extras import ragas_face

if TYPE_CHECKING:
    from qa_eval.metrics.collections.deterministic import QuotedSpansAlignment

_NAMES: dict[str, tuple[str, str]] = {
    "QuotedSpansAlignment": ("qa_eval.metrics.collections.deterministic", "QuotedSpansAlignment")
}
_MISSING: dict[str, str] = {}
__all__: list[str] = ["QuotedSpansAlignment"]
__getattr__, __dir__ = ragas_face(__name__, _NAMES, _MISSING)
