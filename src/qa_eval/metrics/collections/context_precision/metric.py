"""ragas 0.4.3's ``ragas.metrics.collections.context_precision.metric`` under qa-eval: the
names of its package, ``qa_eval.metrics.collections.context_precision``
(docs/ragas.md, *Module paths*).
"""

from ....extras import ragas_twin

__getattr__, __dir__ = ragas_twin(__name__)
