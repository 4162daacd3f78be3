"""ragas 0.4.3's ``ragas.metrics.collections.domain_specific_rubrics.util`` under qa-eval
(docs/ragas.md, *Module paths*). It names ``DEFAULT_REFERENCE_FREE_RUBRICS``,
``DEFAULT_WITH_REFERENCE_RUBRICS``. Not here: ``RubricScoreInput``, ``RubricScoreOutput``,
``RubricScorePrompt``, ``format_rubrics`` (qa-eval writes its own prompts and reply schemas
(qa_eval/prompts/)).
"""

from typing import TYPE_CHECKING

from ....extras import ragas_face

if TYPE_CHECKING:
    from qa_eval.metrics.ragas.rubrics import (
        DEFAULT_REFERENCE_FREE_RUBRICS,
        DEFAULT_WITH_REFERENCE_RUBRICS,
    )

_NAMES: dict[str, tuple[str, str]] = {
    "DEFAULT_REFERENCE_FREE_RUBRICS": (
        "qa_eval.metrics.ragas.rubrics",
        "DEFAULT_REFERENCE_FREE_RUBRICS",
    ),
    "DEFAULT_WITH_REFERENCE_RUBRICS": (
        "qa_eval.metrics.ragas.rubrics",
        "DEFAULT_WITH_REFERENCE_RUBRICS",
    ),
}
_WHY = "qa-eval's metrics use their own prompts, reply schemas and helpers, not ragas'"
_MISSING: dict[str, str] = dict.fromkeys(
    ["RubricScoreInput", "RubricScoreOutput", "RubricScorePrompt", "format_rubrics"], _WHY
)
__all__: list[str] = ["DEFAULT_REFERENCE_FREE_RUBRICS", "DEFAULT_WITH_REFERENCE_RUBRICS"]
__getattr__, __dir__ = ragas_face(__name__, _NAMES, _MISSING)
