"""ragas 0.4.3's ``ragas.metrics.collections.topic_adherence.util`` under qa-eval (docs/ragas.md,
*Module paths*). Not here: ``TopicClassificationInput``, ``TopicClassificationOutput``,
``TopicClassificationPrompt``, ``TopicExtractionInput``, ``TopicExtractionOutput``,
``TopicExtractionPrompt``, ``TopicRefusedInput``, ``TopicRefusedOutput``, ``TopicRefusedPrompt``
(qa-eval's metrics use their own prompts, reply schemas and helpers).
"""

from ....extras import ragas_face

_NAMES: dict[str, tuple[str, str]] = {}
_WHY = "qa-eval's metrics use their own prompts, reply schemas and helpers, not ragas'"
_MISSING: dict[str, str] = dict.fromkeys(
    [
        "TopicClassificationInput",
        "TopicClassificationOutput",
        "TopicClassificationPrompt",
        "TopicExtractionInput",
        "TopicExtractionOutput",
        "TopicExtractionPrompt",
        "TopicRefusedInput",
        "TopicRefusedOutput",
        "TopicRefusedPrompt",
    ],
    _WHY,
)
__all__: list[str] = []
__getattr__, __dir__ = ragas_face(__name__, _NAMES, _MISSING)
