"""ragas 0.4.3's ``ragas.metrics.collections.answer_accuracy.util`` under qa-eval (docs/ragas.md,
*Module paths*). Not here: ``AnswerAccuracyInput``, ``AnswerAccuracyJudge1Prompt``,
``AnswerAccuracyJudge2Prompt``, ``AnswerAccuracyOutput`` (qa-eval writes its own prompts and reply
schemas (qa_eval/prompts/)).
"""

from ....extras import ragas_face

_NAMES: dict[str, tuple[str, str]] = {}
_WHY = "qa-eval's metrics use their own prompts, reply schemas and helpers, not ragas'"
_MISSING: dict[str, str] = dict.fromkeys(
    [
        "AnswerAccuracyInput",
        "AnswerAccuracyJudge1Prompt",
        "AnswerAccuracyJudge2Prompt",
        "AnswerAccuracyOutput",
    ],
    _WHY,
)
__all__: list[str] = []
__getattr__, __dir__ = ragas_face(__name__, _NAMES, _MISSING)
