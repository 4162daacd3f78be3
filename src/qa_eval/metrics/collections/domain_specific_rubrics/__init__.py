"""ragas 0.4.3's ``ragas.metrics.collections.domain_specific_rubrics`` under qa-eval
(docs/ragas.md, *Module paths*). It names ``DomainSpecificRubrics``, ``RubricsScoreWithReference``,
``RubricsScoreWithoutReference``.
"""

from typing import TYPE_CHECKING

from ....extras import ragas_face

if TYPE_CHECKING:
    from qa_eval.metrics.collections.agents import (
        DomainSpecificRubrics,
        RubricsScoreWithoutReference,
        RubricsScoreWithReference,
    )

_NAMES: dict[str, tuple[str, str]] = {
    "DomainSpecificRubrics": ("qa_eval.metrics.collections.agents", "DomainSpecificRubrics"),
    "RubricsScoreWithReference": (
        "qa_eval.metrics.collections.agents",
        "RubricsScoreWithReference",
    ),
    "RubricsScoreWithoutReference": (
        "qa_eval.metrics.collections.agents",
        "RubricsScoreWithoutReference",
    ),
}
_MISSING: dict[str, str] = {}
__all__: list[str] = [
    "DomainSpecificRubrics",
    "RubricsScoreWithReference",
    "RubricsScoreWithoutReference",
]
__getattr__, __dir__ = ragas_face(__name__, _NAMES, _MISSING)
