"""ragas 0.4.3's deterministic collections metrics (no judge, no embeddings) as metric objects over
qa-eval's pure engines, so they give ragas' numbers bit for bit and share the per-sample API
(``ascore``, ``score``, bounded batches that keep the other rows, ``threshold`` / ``success``).

The formulas, and the libraries that compute them, are stated in the engines' docstrings:

- :class:`BleuScore` - ``metrics.textual.strings.bleu_score``: sacrebleu's ``corpus_bleu`` of the
  texts cut at ``". "``, / 100 (ragas ``BleuScore``; ``kwargs`` go to sacrebleu).
- :class:`CHRFScore` - ``metrics.textual.strings.chrf_score``: sacrebleu's ``corpus_chrf`` / 100, 0
  for a blank text (ragas ``CHRFScore``).
- :class:`RougeScore` - ``metrics.textual.strings.rouge_score``: rouge-score's ``rouge_type``
  (stemmed), its ``mode`` field (ragas ``RougeScore``).
- :class:`ExactMatch` / :class:`StringPresence` - ``reference == response`` / ``reference in
  response`` as 1 or 0 (ragas ``ExactMatch``, ``StringPresence``).
- :class:`NonLLMStringSimilarity` - ``1 - normalized_distance`` of rapidfuzz's distance chosen by
  :class:`~qa_eval.metrics.textual.strings.DistanceMeasure` (ragas ``NonLLMStringSimilarity``).
- :class:`QuotedSpansAlignment` - ``metrics.textual.strings.quoted_spans_alignment``: quoted spans
  of the response found verbatim in the contexts / quoted spans (ragas ``QuotedSpansAlignment``).
- :class:`ToolCallAccuracy` / :class:`ToolCallF1` - ``metrics.agents.toolcalls``: argument match of
  aligned tool calls, in order or not (``strict_order``), and the F1 of the sets of calls (ragas
  ``ToolCallAccuracy``, ``ToolCallF1``). ``user_input`` is a list of ``qa_eval.messages`` or
  ``ragas.messages`` objects or of plain dicts (``{"type": "ai", "tool_calls": [...]}``);
  ``reference_tool_calls`` a list of ``ToolCall`` objects or ``{"name", "args"}`` dicts.
- :class:`DataCompyScore` - ``metrics.textual.tables.datacompy_score``: precision, recall or F1 of
  the matching rows or columns of two CSV tables (ragas ``DataCompyScore``). A table pandas cannot
  read gives ragas a NaN value; here the result has no value and the parse error as its ``error``.

Constructor arguments and ``ascore`` keywords are ragas'; each result has a ``reason`` and typed
``details`` (the subclasses of :class:`~qa_eval.metrics.collections.result.Details` below).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ...extras import require
from ..agents import toolcalls
from ..textual import strings as text
from ..textual import tables
from ..textual.strings import DistanceMeasure
from .base import DeterministicMetric, Scored, Session
from .result import Details, MetricResult

__all__ = [
    "BleuDetails",
    "BleuScore",
    "CHRFScore",
    "DataCompyScore",
    "DistanceMeasure",
    "ExactMatch",
    "NonLLMStringSimilarity",
    "OverlapDetails",
    "QuoteDetails",
    "QuotedSpansAlignment",
    "RougeScore",
    "StringPresence",
    "TableDetails",
    "ToolCallAccuracy",
    "ToolCallDetails",
    "ToolCallF1",
]


@dataclass(frozen=True)
class BleuDetails(Details):
    """What BLEU was computed from: the response sentence that counted (ragas pairs only the
    first one with the reference sentences), the sentence counts and sacrebleu's statistics."""

    scored_sentence: str | None = None
    reference_sentences: int | None = None
    response_sentences: int | None = None
    precisions: tuple[float, ...] = ()
    """sacrebleu's n-gram precisions (percent), n = 1 to 4."""
    brevity_penalty: float | None = None


@dataclass(frozen=True)
class OverlapDetails(Details):
    """The three fields of a ROUGE score, whichever ``mode`` was picked."""

    precision: float | None = None
    recall: float | None = None
    fmeasure: float | None = None


@dataclass(frozen=True)
class QuoteDetails(Details):
    """The quoted spans of the response and those found in the contexts."""

    spans: tuple[str, ...] = ()
    matched: tuple[str, ...] = ()


@dataclass(frozen=True)
class ToolCallDetails(Details):
    """How tool calls compared: the name alignment and argument match per reference call
    (accuracy), or the distinct calls matched, unexpected and missing (F1)."""

    aligned: bool | None = None
    argument_scores: tuple[float, ...] = ()
    compared: int | None = None
    true_positives: int | None = None
    false_positives: int | None = None
    false_negatives: int | None = None


@dataclass(frozen=True)
class TableDetails(Details):
    """The rows or columns that matched, and both ratios (``metric`` picks one or their F1)."""

    matched: int | None = None
    precision: float | None = None
    recall: float | None = None


class _Unreadable(Exception):
    """An input the engine could not read (DataCompy's NaN): the result's ``error``."""


class _EngineMetric(DeterministicMetric):
    """A ragas class over an engine of ``metrics.textual.strings`` / ``toolcalls`` / ``tables``:
    subclasses give ``ascore`` ragas' keywords, :meth:`_engine` the call and :meth:`_details` the
    fields."""

    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(name, self._value_and_reason, **kwargs)

    def _engine(self, row: Mapping[str, Any]) -> text.Scored:
        raise NotImplementedError

    def _details(self, found: Mapping[str, Any]) -> Details:
        return Details()

    def _value_and_reason(self, **row: Any) -> tuple[float, str]:
        out = self._engine(row)
        return out.value, out.reason

    async def _compute_row(self, session: Session, row: dict[str, Any]) -> Scored:
        out = self._engine(row)
        if isinstance(out.value, float) and math.isnan(out.value):
            raise _Unreadable(out.reason)
        return Scored(float(out.value), out.reason, self._details(out.details))

    async def _result(self, **row: Any) -> MetricResult:
        try:
            return await self.ascore_row(row)
        except _Unreadable as unreadable:
            reason = str(unreadable)
            return MetricResult(
                None,
                f"not scored: {reason}",
                error=reason,
                threshold=self._threshold(),
                name=self.name,
            )


class _TwoTexts(_EngineMetric):
    """A metric of a ``reference`` and a ``response`` text."""

    async def ascore(self, reference: str, response: str) -> MetricResult:
        """The metric of ``response`` against ``reference``."""
        return await self._result(reference=reference, response=response)


class BleuScore(_TwoTexts):
    """BLEU of the response against the reference, 0 to 1 (sacrebleu, as ragas calls it)."""

    def __init__(
        self, name: str = "bleu_score", kwargs: dict[str, Any] | None = None, **base_kwargs: Any
    ) -> None:
        self.kwargs = dict(kwargs or {})
        super().__init__(name, **base_kwargs)

    def _engine(self, row: Mapping[str, Any]) -> text.Scored:
        return text.bleu_score(row["reference"], row["response"], **self.kwargs)

    def _details(self, found: Mapping[str, Any]) -> Details:
        return BleuDetails(
            scored_sentence=found["scored_sentence"],
            reference_sentences=found["reference_sentences"],
            response_sentences=found["response_sentences"],
            precisions=tuple(found["precisions"]),
            brevity_penalty=found["brevity_penalty"],
        )


class CHRFScore(_TwoTexts):
    """chrF of the response against the reference, 0 to 1 (sacrebleu, as ragas calls it)."""

    def __init__(
        self, name: str = "chrf_score", kwargs: dict[str, Any] | None = None, **base_kwargs: Any
    ) -> None:
        self.kwargs = dict(kwargs or {})
        super().__init__(name, **base_kwargs)

    def _engine(self, row: Mapping[str, Any]) -> text.Scored:
        return text.chrf_score(row["reference"], row["response"], **self.kwargs)


class RougeScore(_TwoTexts):
    """ROUGE-1 or ROUGE-L of the response against the reference (rouge-score, stemmed)."""

    def __init__(
        self,
        name: str = "rouge_score",
        rouge_type: Literal["rouge1", "rougeL"] = "rougeL",
        mode: Literal["fmeasure", "precision", "recall"] = "fmeasure",
        **kwargs: Any,
    ) -> None:
        self.rouge_type = rouge_type
        self.mode = mode
        super().__init__(name, **kwargs)

    def _engine(self, row: Mapping[str, Any]) -> text.Scored:
        return text.rouge_score(row["reference"], row["response"], self.rouge_type, self.mode)

    def _details(self, found: Mapping[str, Any]) -> Details:
        return OverlapDetails(
            precision=found["precision"], recall=found["recall"], fmeasure=found["fmeasure"]
        )


class ExactMatch(_TwoTexts):
    """1 when the response equals the reference, else 0."""

    def __init__(self, name: str = "exact_match", **base_kwargs: Any) -> None:
        super().__init__(name, **base_kwargs)

    def _engine(self, row: Mapping[str, Any]) -> text.Scored:
        return text.exact_match(row["reference"], row["response"])


class StringPresence(_TwoTexts):
    """1 when the reference occurs in the response, else 0."""

    def __init__(self, name: str = "string_present", **base_kwargs: Any) -> None:
        super().__init__(name, **base_kwargs)

    def _engine(self, row: Mapping[str, Any]) -> text.Scored:
        return text.string_presence(row["reference"], row["response"])


class NonLLMStringSimilarity(_TwoTexts):
    """1 minus a normalised string distance of the response and the reference (rapidfuzz)."""

    distance_measure: DistanceMeasure

    def __init__(
        self,
        name: str = "non_llm_string_similarity",
        distance_measure: DistanceMeasure = DistanceMeasure.LEVENSHTEIN,
        **base_kwargs: Any,
    ) -> None:
        # ragas' own enum, or its value, names the same measure
        self.distance_measure = DistanceMeasure(
            getattr(distance_measure, "value", distance_measure)
        )
        require("rapidfuzz.distance", type(self).__name__)  # refused now, as ragas does
        super().__init__(name, **base_kwargs)

    def _engine(self, row: Mapping[str, Any]) -> text.Scored:
        return text.non_llm_string_similarity(
            row["reference"], row["response"], self.distance_measure
        )


class QuotedSpansAlignment(_EngineMetric):
    """Share of the response's quoted spans found verbatim in the retrieved contexts."""

    def __init__(
        self,
        name: str = "quoted_spans_alignment",
        casefold: bool = True,
        min_span_words: int = 3,
        **base_kwargs: Any,
    ) -> None:
        self.casefold = casefold
        self.min_span_words = min_span_words
        super().__init__(name, **base_kwargs)

    async def ascore(self, response: str, retrieved_contexts: list[str]) -> MetricResult:
        """The share of ``response``'s quotes that ``retrieved_contexts`` hold."""
        return await self._result(response=response, retrieved_contexts=retrieved_contexts)

    def _engine(self, row: Mapping[str, Any]) -> text.Scored:
        return text.quoted_spans_alignment(
            row["response"], row["retrieved_contexts"], self.casefold, self.min_span_words
        )

    def _details(self, found: Mapping[str, Any]) -> Details:
        return QuoteDetails(
            spans=tuple(found.get("spans", ())), matched=tuple(found.get("matched", ()))
        )


class _ToolCalls(_EngineMetric):
    """A metric of a conversation's tool calls against the reference calls."""

    async def ascore(self, user_input: list[Any], reference_tool_calls: list[Any]) -> MetricResult:
        """The metric of the agent's tool calls in ``user_input``."""
        return await self._result(user_input=user_input, reference_tool_calls=reference_tool_calls)

    def _details(self, found: Mapping[str, Any]) -> Details:
        scores = found.get("argument_scores")
        return ToolCallDetails(
            aligned=found.get("aligned"),
            argument_scores=tuple(scores) if scores is not None else (),
            compared=found.get("compared"),
            true_positives=found.get("true_positives"),
            false_positives=found.get("false_positives"),
            false_negatives=found.get("false_negatives"),
        )


class ToolCallAccuracy(_ToolCalls):
    """Argument match of the agent's tool calls with the reference calls, names aligned in
    order (``strict_order``) or as a multiset."""

    def __init__(
        self, strict_order: bool = True, name: str = "tool_call_accuracy", **kwargs: Any
    ) -> None:
        self.strict_order = strict_order
        super().__init__(name, **kwargs)

    def _engine(self, row: Mapping[str, Any]) -> text.Scored:
        found = toolcalls.tool_call_accuracy(
            row["user_input"], row["reference_tool_calls"], self.strict_order
        )
        _warn_as_ragas(row["user_input"], row["reference_tool_calls"])
        return found


def _warn_as_ragas(user_input: Any, reference_tool_calls: Any) -> None:
    """ragas 0.4.3's ``UserWarning``s of ``ToolCallAccuracy``, with its texts: no predicted
    calls, no reference calls, or lists of different lengths (only the first pairs compared)."""
    predicted = len(toolcalls.predicted_tool_calls(user_input))
    reference = len(reference_tool_calls)
    if not predicted and not reference:
        return
    if not predicted:
        warnings.warn("No tool calls found in the user input", UserWarning, stacklevel=5)
    elif not reference:
        warnings.warn(
            "Reference tool calls are empty but predictions exist", UserWarning, stacklevel=5
        )
    elif predicted != reference:
        warnings.warn(
            f"Length mismatch: predicted tool calls ({predicted}) vs reference tool calls "
            f"({reference}). Only the first {min(predicted, reference)} tool calls will be "
            "compared.",
            UserWarning,
            stacklevel=5,
        )


class ToolCallF1(_ToolCalls):
    """F1 of the sets of predicted and reference tool calls (name and arguments)."""

    def __init__(self, name: str = "tool_call_f1", **kwargs: Any) -> None:
        super().__init__(name, **kwargs)

    def _engine(self, row: Mapping[str, Any]) -> text.Scored:
        return toolcalls.tool_call_f1(row["user_input"], row["reference_tool_calls"])


class DataCompyScore(_TwoTexts):
    """Precision, recall or F1 of the matching rows or columns of two CSV tables."""

    def __init__(
        self,
        mode: Literal["rows", "columns"] = "rows",
        metric: Literal["precision", "recall", "f1"] = "f1",
        name: str = "data_compare_score",
        **kwargs: Any,
    ) -> None:
        if mode not in ("rows", "columns"):
            raise ValueError("mode must be either 'rows' or 'columns'")
        if metric not in ("precision", "recall", "f1"):
            raise ValueError("metric must be either 'precision', 'recall', or 'f1'")
        require("pandas", type(self).__name__)  # refused now, as ragas does
        require("datacompy", type(self).__name__)
        self.mode = mode
        self.metric = metric
        super().__init__(name, **kwargs)

    def _engine(self, row: Mapping[str, Any]) -> text.Scored:
        return tables.datacompy_score(row["reference"], row["response"], self.mode, self.metric)

    def _details(self, found: Mapping[str, Any]) -> Details:
        return TableDetails(
            matched=found["matched"], precision=found["precision"], recall=found["recall"]
        )
