"""ragas 0.4.3's ``ragas.metrics.collections.multi_modal_faithfulness.util`` under qa-eval
(docs/ragas.md, *Module paths*). Not here: ``ALLOWED_URL_SCHEMES``, ``COMMON_IMAGE_EXTENSIONS``,
``DATA_URI_REGEX``, ``MAX_DOWNLOAD_SIZE_BYTES``, ``MULTIMODAL_FAITHFULNESS_INSTRUCTION``,
``MultiModalFaithfulnessInput``, ``MultiModalFaithfulnessOutput``, ``REQUESTS_TIMEOUT_SECONDS``,
``build_multimodal_message_content``, ``is_image_path_or_url``, ``process_image_to_base64`` (qa-
eval writes its own prompts and reply schemas (qa_eval/prompts/)).
"""

from ....extras import ragas_face

_NAMES: dict[str, tuple[str, str]] = {}
_WHY = "qa-eval's metrics use their own prompts, reply schemas and helpers, not ragas'"
_MISSING: dict[str, str] = dict.fromkeys(
    [
        "ALLOWED_URL_SCHEMES",
        "COMMON_IMAGE_EXTENSIONS",
        "DATA_URI_REGEX",
        "MAX_DOWNLOAD_SIZE_BYTES",
        "MULTIMODAL_FAITHFULNESS_INSTRUCTION",
        "MultiModalFaithfulnessInput",
        "MultiModalFaithfulnessOutput",
        "REQUESTS_TIMEOUT_SECONDS",
        "build_multimodal_message_content",
        "is_image_path_or_url",
        "process_image_to_base64",
    ],
    _WHY,
)
__all__: list[str] = []
__getattr__, __dir__ = ragas_face(__name__, _NAMES, _MISSING)
