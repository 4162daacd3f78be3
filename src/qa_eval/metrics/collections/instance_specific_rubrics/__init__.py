"""ragas 0.4.3's ``ragas.metrics.collections.instance_specific_rubrics`` under qa-eval
(docs/ragas.md, *Module paths*). It names ``InstanceSpecificRubrics``.
"""

from typing import TYPE_CHECKING

from ....extras import ragas_face

if TYPE_CHECKING:
    from qa_eval.metrics.collections.agents import InstanceSpecificRubrics

_NAMES: dict[str, tuple[str, str]] = {
    "InstanceSpecificRubrics": ("qa_eval.metrics.collections.agents", "InstanceSpecificRubrics")
}
_MISSING: dict[str, str] = {}
__all__: list[str] = ["InstanceSpecificRubrics"]
__getattr__, __dir__ = ragas_face(__name__, _NAMES, _MISSING)
