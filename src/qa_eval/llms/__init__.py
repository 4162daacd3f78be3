"""ragas' ``ragas.llms`` for qa-eval: ``llm_factory`` makes the judge the per-sample metrics of
``qa_eval.metrics.collections`` take (``llms.factory``); a caller's own SDK client is checked and
adapted in ``llms.clients``.

The names load when first used: importing this package loads neither pydantic nor the SDK.
"""

from typing import TYPE_CHECKING

from ..extras import lazy_face

if TYPE_CHECKING:
    from .clients import UnusableClient
    from .factory import QaEvalLLM, llm_factory

_NAMES = {"QaEvalLLM": "factory", "UnusableClient": "clients", "llm_factory": "factory"}
__all__ = ["QaEvalLLM", "UnusableClient", "llm_factory"]
__getattr__, __dir__ = lazy_face(__name__, _NAMES)
