"""What is measured: the metric families, each a set of pure functions with a thin async entry
point that ``run.score`` schedules from the registry (``qa_eval.vocabulary``).

One package per family: ``answer`` (the answer against the question and the reference answer),
``retrieval`` (the retrieved contexts and their ranking), ``agents`` (tool calls, trajectories,
conversations, repeated trials), ``ragas`` (ragas' LLM metrics and the registry's entry points of
ragas' metrics), ``textual`` (texts compared without a judge); ``output`` is the record they all
return, ``custom`` / ``definitions`` the config's custom metrics, ``collections`` ragas' API over
these engines.

The registry's names (``METRICS``, ``direction``, ``error_keys``, ...) live in
``qa_eval.vocabulary``, the layer every other layer reads; this face still offers them under
their old path for users' code, each imported when first used.
"""

from ..extras import lazy_face
from ..vocabulary import NAMES as VOCABULARY

_NAMES = {name: f"qa_eval.vocabulary.{module}" for name, module in VOCABULARY.items()}
"""Each name of the face -> the module of ``qa_eval.vocabulary`` that defines it."""

__all__ = list(_NAMES)

__getattr__, __dir__ = lazy_face(__name__, _NAMES)
