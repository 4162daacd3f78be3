"""ragas 0.4.3's ``ragas.llms.base`` under qa-eval (docs/ragas.md, *Module paths*). It names
``InstructorBaseRagasLLM``, ``InstructorLLM``, ``llm_factory``. Not here: ``BaseRagasLLM``,
``InstructorModelArgs``, ``InstructorTypeVar``, ``LangchainLLMWrapper``, ``LlamaIndexLLMWrapper``,
``MULTIPLE_COMPLETION_SUPPORTED``, ``is_multiple_completion_supported`` (qa-eval calls models only
through llm_factory(model, client=...)).
"""

from typing import TYPE_CHECKING

from ..extras import ragas_face

if TYPE_CHECKING:
    from qa_eval.llms.factory import (
        QaEvalLLM as InstructorBaseRagasLLM,
    )
    from qa_eval.llms.factory import (
        QaEvalLLM as InstructorLLM,
    )
    from qa_eval.llms.factory import (
        llm_factory,
    )

_NAMES: dict[str, tuple[str, str]] = {
    "InstructorBaseRagasLLM": ("qa_eval.llms.factory", "QaEvalLLM"),
    "InstructorLLM": ("qa_eval.llms.factory", "QaEvalLLM"),
    "llm_factory": ("qa_eval.llms.factory", "llm_factory"),
}
_WHY = "qa-eval calls models only through llm_factory(model, client=...)"
_MISSING: dict[str, str] = dict.fromkeys(
    [
        "BaseRagasLLM",
        "InstructorModelArgs",
        "InstructorTypeVar",
        "LangchainLLMWrapper",
        "LlamaIndexLLMWrapper",
        "MULTIPLE_COMPLETION_SUPPORTED",
        "is_multiple_completion_supported",
    ],
    _WHY,
)
__all__: list[str] = ["InstructorBaseRagasLLM", "InstructorLLM", "llm_factory"]
__getattr__, __dir__ = ragas_face(__name__, _NAMES, _MISSING)
