"""What was retrieved: precision / recall / F1 of a ``retrieval`` step's answer and contexts
(``step_context``), context precision and recall of flat inputs (``flat_context``), faithfulness of
the answer to the contexts (``faithfulness``), the weighted RAGAS composite (``composite``) and the
ranking metrics of retrieved ids (``ranking``)."""

from typing import TYPE_CHECKING

from ...extras import lazy_face

if TYPE_CHECKING:
    from .composite import ragas_score
    from .flat_context import context_precision, context_recall_metric
    from .ranking import compute_ranking_metric
    from .step_context import retrieval_metrics

_NAMES = {
    "compute_ranking_metric": "ranking",
    "context_precision": "flat_context",
    "context_recall_metric": "flat_context",
    "ragas_score": "composite",
    "retrieval_metrics": "step_context",
}
__all__ = [
    "compute_ranking_metric",
    "context_precision",
    "context_recall_metric",
    "ragas_score",
    "retrieval_metrics",
]
__getattr__, __dir__ = lazy_face(__name__, _NAMES)
