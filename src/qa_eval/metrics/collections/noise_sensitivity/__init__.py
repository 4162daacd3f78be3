"""ragas 0.4.3's ``ragas.metrics.collections.noise_sensitivity`` under qa-eval (docs/ragas.md,
*Module paths*). It names ``NoiseSensitivity``.
"""

from typing import TYPE_CHECKING

from ....extras import ragas_face

if TYPE_CHECKING:
    from qa_eval.metrics.collections.contexts import NoiseSensitivity

_NAMES: dict[str, tuple[str, str]] = {
    "NoiseSensitivity": ("qa_eval.metrics.collections.contexts", "NoiseSensitivity")
}
_MISSING: dict[str, str] = {}
__all__: list[str] = ["NoiseSensitivity"]
__getattr__, __dir__ = ragas_face(__name__, _NAMES, _MISSING)
