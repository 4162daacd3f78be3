"""ragas 0.4.3's LLM metrics that only the ragas API and the ``ragas`` group offer: each module
one metric's prompts and formula, ``judged`` the value and reason both faces build from the
verdicts, ``entries`` the registry's entry points of ragas' metrics."""

from typing import TYPE_CHECKING

from ...extras import lazy_face

if TYPE_CHECKING:
    from .judged import tally
    from .noise_sensitivity import noise_sensitivity_score
    from .rubrics import rubric_levels

_NAMES = {
    "noise_sensitivity_score": "noise_sensitivity",
    "rubric_levels": "rubrics",
    "tally": "judged",
}
__all__ = ["noise_sensitivity_score", "rubric_levels", "tally"]
__getattr__, __dir__ = lazy_face(__name__, _NAMES)
