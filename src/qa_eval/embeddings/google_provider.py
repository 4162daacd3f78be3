"""ragas 0.4.3's ``ragas.embeddings.google_provider`` under qa-eval (docs/ragas.md, *Module
paths*). Not here: ``GoogleEmbeddings`` (qa-eval's embeddings come from embedding_factory(provider,
model=..., client=...)).
"""

from ..extras import ragas_face

_NAMES: dict[str, tuple[str, str]] = {}
_WHY = "qa-eval's embeddings come from embedding_factory(provider, model=..., client=...)"
_MISSING: dict[str, str] = dict.fromkeys(["GoogleEmbeddings"], _WHY)
__all__: list[str] = []
__getattr__, __dir__ = ragas_face(__name__, _NAMES, _MISSING)
