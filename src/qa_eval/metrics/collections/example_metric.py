"""ragas 0.4.3's ``ragas.metrics.collections.example_metric`` under qa-eval (docs/ragas.md, *Module
paths*). Not here: ``ExampleMetric`` (qa-eval does not implement this metric).
"""

from ...extras import ragas_face

_NAMES: dict[str, tuple[str, str]] = {}
_WHY = "qa-eval does not implement this metric"
_MISSING: dict[str, str] = dict.fromkeys(["ExampleMetric"], _WHY)
__all__: list[str] = []
__getattr__, __dir__ = ragas_face(__name__, _NAMES, _MISSING)
