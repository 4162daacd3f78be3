"""Texts compared without a judge: ragas' string metrics (``strings``: BLEU, chrF, ROUGE,
exact match, string presence, edit-distance similarity), CSV tables cell by cell (``tables``,
DataCompy) and BERTScore computed offline (``bertscore``)."""

from typing import TYPE_CHECKING

from ...extras import lazy_face

if TYPE_CHECKING:
    from .bertscore import BertScorer
    from .strings import bleu_score, chrf_score, exact_match, rouge_score, string_presence
    from .tables import datacompy_score

_NAMES = {
    "BertScorer": "bertscore",
    "bleu_score": "strings",
    "chrf_score": "strings",
    "datacompy_score": "tables",
    "exact_match": "strings",
    "rouge_score": "strings",
    "string_presence": "strings",
}
__all__ = [
    "BertScorer",
    "bleu_score",
    "chrf_score",
    "datacompy_score",
    "exact_match",
    "rouge_score",
    "string_presence",
]
__getattr__, __dir__ = lazy_face(__name__, _NAMES)
