"""ragas' ``ragas.embeddings`` for qa-eval: ``embedding_factory`` (also importable from
``qa_eval.embeddings.base``, as ragas users do) makes the embedding model ``AnswerRelevancy`` and
``SemanticSimilarity`` take. The names load when first used."""

from typing import TYPE_CHECKING

from ..extras import lazy_face

if TYPE_CHECKING:
    from .base import QaEvalEmbeddings, embedding_factory

_NAMES = {"QaEvalEmbeddings": "base", "embedding_factory": "base"}
__all__ = ["QaEvalEmbeddings", "embedding_factory"]
__getattr__, __dir__ = lazy_face(__name__, _NAMES)
