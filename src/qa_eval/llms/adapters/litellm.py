"""ragas 0.4.3's ``ragas.llms.adapters.litellm`` under qa-eval (docs/ragas.md, *Module paths*). Not
here: ``LiteLLMAdapter`` (qa-eval calls models only through llm_factory(model, client=...)).
"""

from ...extras import ragas_face

_NAMES: dict[str, tuple[str, str]] = {}
_WHY = "qa-eval calls models only through llm_factory(model, client=...)"
_MISSING: dict[str, str] = dict.fromkeys(["LiteLLMAdapter"], _WHY)
__all__: list[str] = []
__getattr__, __dir__ = ragas_face(__name__, _NAMES, _MISSING)
