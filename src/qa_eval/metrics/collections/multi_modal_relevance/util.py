"""ragas 0.4.3's ``ragas.metrics.collections.multi_modal_relevance.util`` under qa-eval
(docs/ragas.md, *Module paths*). Not here: ``MULTIMODAL_RELEVANCE_INSTRUCTION``,
``MultiModalRelevanceInput``, ``MultiModalRelevanceOutput``,
``build_multimodal_relevance_message_content``, ``is_image_path_or_url``,
``process_image_to_base64`` (qa-eval's metrics use their own prompts, reply schemas and helpers).
"""

from ....extras import ragas_face

_NAMES: dict[str, tuple[str, str]] = {}
_WHY = "qa-eval's metrics use their own prompts, reply schemas and helpers, not ragas'"
_MISSING: dict[str, str] = dict.fromkeys(
    [
        "MULTIMODAL_RELEVANCE_INSTRUCTION",
        "MultiModalRelevanceInput",
        "MultiModalRelevanceOutput",
        "build_multimodal_relevance_message_content",
        "is_image_path_or_url",
        "process_image_to_base64",
    ],
    _WHY,
)
__all__: list[str] = []
__getattr__, __dir__ = ragas_face(__name__, _NAMES, _MISSING)
