"""ragas 0.4.3's ``ragas.metrics.collections.topic_adherence`` under qa-eval (docs/ragas.md,
*Module paths*). It names ``TopicAdherence``.
"""

from typing import TYPE_CHECKING

from ....extras import ragas_face

if TYPE_CHECKING:
    from qa_eval.metrics.collections.agents import TopicAdherence

_NAMES: dict[str, tuple[str, str]] = {
    "TopicAdherence": ("qa_eval.metrics.collections.agents", "TopicAdherence")
}
_MISSING: dict[str, str] = {}
__all__: list[str] = ["TopicAdherence"]
__getattr__, __dir__ = ragas_face(__name__, _NAMES, _MISSING)
