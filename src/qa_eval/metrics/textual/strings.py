"""String metrics without a judge, computed as ragas 0.4.3's collections classes compute them.

Each function takes plain values under ragas' parameter names and returns a :class:`Scored`
(``value``, a ``reason`` that is always filled, and ``details``); ``value`` is the float the
ragas class named below returns for the same inputs, bit for bit (the parity tests compare with
``==``). Where ragas returns a reason, ``reason`` is that text.

* ``bleu_score`` - ``BleuScore``: both texts are cut at every ``". "``; sacrebleu's
  ``corpus_bleu(response_sentences, [[s] for s in reference_sentences], **kwargs).score / 100``.
  Given in that shape, sacrebleu pairs the *first* response sentence with every reference sentence
  as an alternative reference and ignores the other response sentences (ragas' behaviour, kept
  for parity; ``details["scored_sentence"]`` names the sentence that counted).
* ``chrf_score`` - ``CHRFScore``: ``corpus_chrf([response], [[reference]], **kwargs).score / 100``
  (sacrebleu's chrF: character 6-grams, beta 2); 0 when either text is not a string or is blank.
* ``rouge_score`` - ``RougeScore``: rouge-score's ``RougeScorer([rouge_type], use_stemmer=True)``,
  ``score(reference, response)``, the ``mode`` field (``fmeasure``, ``precision``, ``recall``)
  of ``rouge_type`` (``rougeL`` by default).
* ``exact_match`` - ``ExactMatch``: 1 when ``reference == response``, else 0.
* ``string_presence`` - ``StringPresence``: 1 when ``reference`` occurs in ``response``, else 0.
* ``non_llm_string_similarity`` - ``NonLLMStringSimilarity``: ``1 - normalized_distance`` of
  rapidfuzz's ``Levenshtein``, ``Hamming`` (padded to the longer text), ``Jaro`` or
  ``JaroWinkler``, chosen by :class:`DistanceMeasure`.
* ``quoted_spans_alignment`` - ``QuotedSpansAlignment``: the spans between two quote characters
  (any of ``" “ ” „ ‟ ' ‘ ’ ` ´``, shortest match, left to right) with at least
  ``min_span_words`` words are the quotes; the score is ``matched / total``, a quote matching
  when it is a substring of the contexts joined with one space (both sides lower-cased and with
  whitespace runs collapsed when ``casefold``, compared as written otherwise); 1 when the
  response quotes nothing, 0 when ``response`` is not a string or the contexts not a list.

sacrebleu, rouge-score and rapidfuzz come with the ``ragas-metrics`` extra and are imported when
a function that needs one is called.

The ``<name>_entry`` functions are the registry's entry points of the ``ragas-text`` group
(``--enable ragas-text``): each scores a question's ``actual_answer`` (as ``response``) against
its ``reference_answer`` (as ``reference``) with ragas' defaults and writes ``<name>``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from functools import lru_cache
from typing import Any, Literal

from ...extras import require
from ..output import Output

__all__ = [
    "DistanceMeasure",
    "Scored",
    "bleu_score",
    "bleu_score_entry",
    "chrf_score",
    "chrf_score_entry",
    "exact_match",
    "exact_match_entry",
    "non_llm_string_similarity",
    "non_llm_string_similarity_entry",
    "quoted_spans_alignment",
    "rouge_score",
    "rouge_score_entry",
    "string_presence",
    "string_present_entry",
]


@dataclass(frozen=True)
class Scored:
    """One deterministic score: the value ragas returns, why, and what it was computed from."""

    value: float
    reason: str
    details: Mapping[str, Any] = field(default_factory=dict)


class DistanceMeasure(Enum):
    """The string distances of ``NonLLMStringSimilarity`` (ragas' names and values)."""

    LEVENSHTEIN = "levenshtein"
    HAMMING = "hamming"
    JARO = "jaro"
    JARO_WINKLER = "jaro_winkler"


# rapidfuzz.distance's class for each measure, as ragas maps them.
_RAPIDFUZZ_NAMES = {
    DistanceMeasure.LEVENSHTEIN: "Levenshtein",
    DistanceMeasure.HAMMING: "Hamming",
    DistanceMeasure.JARO: "Jaro",
    DistanceMeasure.JARO_WINKLER: "JaroWinkler",
}


def _check_strings(metric: str, reference: object, response: object) -> None:
    """Refuse a non-string text, as ragas' class does (it asserts; this raises TypeError)."""
    if not isinstance(reference, str):
        raise TypeError(f"{metric} expects a valid reference string")
    if not isinstance(response, str):
        raise TypeError(f"{metric} expects a valid response string")


def bleu_score(reference: str, response: str, **kwargs: Any) -> Scored:
    """BLEU of ``response`` against ``reference`` as ragas' ``BleuScore`` computes it (0 to 1)."""
    _check_strings("BleuScore", reference, response)
    sacrebleu = require("sacrebleu", "BleuScore")
    reference_sentences = reference.split(". ")
    response_sentences = response.split(". ")
    result = sacrebleu.corpus_bleu(
        response_sentences, [[sentence] for sentence in reference_sentences], **kwargs
    )
    value = result.score / 100
    return Scored(
        value,
        f"BLEU {value:.4f}: the first of {len(response_sentences)} response sentence(s) against "
        f"{len(reference_sentences)} reference sentence(s) ({result})",
        {
            "scored_sentence": response_sentences[0],
            "reference_sentences": len(reference_sentences),
            "response_sentences": len(response_sentences),
            "precisions": list(result.precisions),
            "brevity_penalty": result.bp,
        },
    )


def chrf_score(reference: str, response: str, **kwargs: Any) -> Scored:
    """chrF of ``response`` against ``reference`` as ragas' ``CHRFScore`` computes it (0 to 1)."""
    if not isinstance(reference, str) or not isinstance(response, str):
        return Scored(0.0, "Invalid input: reference and response must be strings")
    if not reference.strip() or not response.strip():
        return Scored(0.0, "Empty input: reference or response is empty")
    sacrebleu = require("sacrebleu", "CHRFScore")
    result = sacrebleu.corpus_chrf([response], [[reference]], **kwargs)
    value = result.score / 100
    return Scored(value, f"chrF {value:.4f}", {"char_order": result.char_order})


@lru_cache(maxsize=8)
def _rouge_scorer(rouge_type: str) -> Any:
    """rouge-score's scorer for one ROUGE type, stemming as ragas asks (built once per type)."""
    rouge_scorer = require("rouge_score.rouge_scorer", "RougeScore")
    return rouge_scorer.RougeScorer([rouge_type], use_stemmer=True)


def rouge_score(
    reference: str,
    response: str,
    rouge_type: Literal["rouge1", "rougeL"] = "rougeL",
    mode: Literal["fmeasure", "precision", "recall"] = "fmeasure",
) -> Scored:
    """ROUGE of ``response`` against ``reference`` as ragas' ``RougeScore`` computes it."""
    scores = _rouge_scorer(rouge_type).score(reference, response)[rouge_type]
    value = float(getattr(scores, mode))
    return Scored(
        value,
        f"{rouge_type} {mode} {value:.4f}",
        {
            "precision": scores.precision,
            "recall": scores.recall,
            "fmeasure": scores.fmeasure,
        },
    )


def exact_match(reference: Any, response: Any) -> Scored:
    """1 when ``response`` equals ``reference`` (ragas' ``ExactMatch``, any values), else 0."""
    same = reference == response
    return Scored(float(same), "identical" if same else "the texts differ")


def string_presence(reference: str, response: str) -> Scored:
    """1 when ``reference`` occurs in ``response`` (ragas' ``StringPresence``), else 0."""
    _check_strings("StringPresence", reference, response)
    found = reference in response
    return Scored(
        float(found), "the reference occurs in the response" if found else "reference not found"
    )


def non_llm_string_similarity(
    reference: str,
    response: str,
    distance_measure: DistanceMeasure = DistanceMeasure.LEVENSHTEIN,
) -> Scored:
    """1 minus rapidfuzz's normalised distance (ragas' ``NonLLMStringSimilarity``)."""
    _check_strings("NonLLMStringSimilarity", reference, response)
    measure = DistanceMeasure(distance_measure)
    distance = require("rapidfuzz.distance", "NonLLMStringSimilarity")
    scorer = getattr(distance, _RAPIDFUZZ_NAMES[measure])
    value = 1 - scorer.normalized_distance(reference, response)
    return Scored(float(value), f"1 - normalised {measure.value} distance = {value:.4f}")


# A quote: the shortest text between two of these characters (straight, curly and low double
# quotes, straight and curly single quotes, backtick, acute accent), any pair of them.
_QUOTE_CHARS = "\"\u201c\u201d\u201e\u201f'\u2018\u2019`\u00b4"
_QUOTED = re.compile(f"[{re.escape(_QUOTE_CHARS)}](.*?)[{re.escape(_QUOTE_CHARS)}]")
_SPACES = re.compile(r"\s+")


def quoted_spans(response: str, min_span_words: int = 3) -> list[str]:
    """The quoted spans of ``response`` with at least ``min_span_words`` words, in order."""
    spans = []
    for found in _QUOTED.finditer(response):
        span = found.group(1).strip()
        if len(span.split()) >= min_span_words:
            spans.append(span)
    return spans


def _folded(text: str) -> str:
    """Whitespace runs as one space, trimmed, lower-cased (ragas' normalisation of quotes)."""
    return _SPACES.sub(" ", text).strip().lower()


def quoted_spans_alignment(
    response: str,
    retrieved_contexts: Sequence[str],
    casefold: bool = True,
    min_span_words: int = 3,
) -> Scored:
    """Share of the response's quotes found verbatim in the contexts (``QuotedSpansAlignment``)."""
    if not isinstance(response, str):
        return Scored(0.0, "Invalid input: response must be a string")
    if not isinstance(retrieved_contexts, list):
        return Scored(0.0, "Invalid input: retrieved_contexts must be a list of strings")
    spans = quoted_spans(response, min_span_words)
    if not spans:
        return Scored(1.0, "No quoted spans found in response", {"spans": [], "matched": []})
    joined = " ".join(retrieved_contexts)
    sources = _folded(joined) if casefold else joined
    matched = []
    for span in spans:
        needle = _folded(span) if casefold else span
        if needle and needle in sources:
            matched.append(span)
    return Scored(
        len(matched) / len(spans),
        f"Matched {len(matched)}/{len(spans)} quoted spans",
        {"spans": spans, "matched": matched},
    )


# The registry's entry points (``vocabulary.registry``, group ``ragas-text``): the answer
# against the reference answer, ragas' defaults, one key each.


def _answer_pair(inputs: Mapping[str, Any]) -> tuple[str, str]:
    """(reference, response) of a question: its reference answer and the system's answer."""
    return inputs["reference_answer"], inputs["answer"]


async def bleu_score_entry(judge: Any, inputs: Mapping[str, Any], options: Any) -> Output:
    """``bleu_score`` of a question's answer against its reference answer."""
    return Output("bleu_score", {"bleu_score": bleu_score(*_answer_pair(inputs)).value})


async def chrf_score_entry(judge: Any, inputs: Mapping[str, Any], options: Any) -> Output:
    """``chrf_score`` of a question's answer against its reference answer."""
    return Output("chrf_score", {"chrf_score": chrf_score(*_answer_pair(inputs)).value})


async def rouge_score_entry(judge: Any, inputs: Mapping[str, Any], options: Any) -> Output:
    """``rouge_score`` (ROUGE-L F1) of a question's answer against its reference answer."""
    return Output("rouge_score", {"rouge_score": rouge_score(*_answer_pair(inputs)).value})


async def exact_match_entry(judge: Any, inputs: Mapping[str, Any], options: Any) -> Output:
    """``exact_match`` of a question's answer and its reference answer."""
    return Output("exact_match", {"exact_match": exact_match(*_answer_pair(inputs)).value})


async def string_present_entry(judge: Any, inputs: Mapping[str, Any], options: Any) -> Output:
    """``string_present``: whether the reference answer occurs in a question's answer."""
    value = string_presence(*_answer_pair(inputs)).value
    return Output("string_present", {"string_present": value})


async def non_llm_string_similarity_entry(
    judge: Any, inputs: Mapping[str, Any], options: Any
) -> Output:
    """``non_llm_string_similarity`` (Levenshtein) of a question's answer and reference answer."""
    value = non_llm_string_similarity(*_answer_pair(inputs)).value
    return Output("non_llm_string_similarity", {"non_llm_string_similarity": value})
