"""ragas 0.4.3's ``ragas.embeddings.utils`` under qa-eval (docs/ragas.md, *Module paths*). Not
here: ``batch_texts``, ``get_optimal_batch_size``, ``run_async_in_current_loop``,
``run_sync_in_async``, ``safe_import``, ``validate_texts`` (qa-eval's embeddings come from
embedding_factory(provider, model=..., client=...)).
"""

from ..extras import ragas_face

_NAMES: dict[str, tuple[str, str]] = {}
_WHY = "qa-eval's embeddings come from embedding_factory(provider, model=..., client=...)"
_MISSING: dict[str, str] = dict.fromkeys(
    [
        "batch_texts",
        "get_optimal_batch_size",
        "run_async_in_current_loop",
        "run_sync_in_async",
        "safe_import",
        "validate_texts",
    ],
    _WHY,
)
__all__: list[str] = []
__getattr__, __dir__ = ragas_face(__name__, _NAMES, _MISSING)
