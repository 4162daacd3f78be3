"""ragas' deterministic collections classes in ``qa_eval.metrics.collections``: hand-computed
values, the reason and typed details of every class, thresholds, and batches that keep the other
rows when one is bad. No judge and no ragas needed (the parity with ragas' own classes is in
``tests/integration/test_ragas_deterministic_parity.py``)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("pydantic")

from qa_eval.errors import QaEvalError
from qa_eval.messages import AIMessage, HumanMessage, ToolCall, ToolMessage
from qa_eval.metrics import collections as face
from qa_eval.metrics.collections import (
    BleuScore,
    CHRFScore,
    DistanceMeasure,
    ExactMatch,
    MetricResult,
    NonLLMStringSimilarity,
    QuotedSpansAlignment,
    RougeScore,
    StringPresence,
    ToolCallAccuracy,
    ToolCallF1,
)
from qa_eval.metrics.collections.deterministic import (
    BleuDetails,
    OverlapDetails,
    QuoteDetails,
    TableDetails,
    ToolCallDetails,
)
from qa_eval.metrics.textual import strings as text

CLASSES = [
    "BleuScore",
    "CHRFScore",
    "DataCompyScore",
    "DistanceMeasure",
    "ExactMatch",
    "NonLLMStringSimilarity",
    "QuotedSpansAlignment",
    "RougeScore",
    "StringPresence",
    "ToolCallAccuracy",
    "ToolCallF1",
]


def test_every_class_is_in_the_face() -> None:
    for name in CLASSES:
        assert name in face.__all__ and getattr(face, name) is not None
    assert DistanceMeasure is text.DistanceMeasure


@pytest.mark.parametrize(
    ("metric", "reference", "response", "value"),
    [
        (ExactMatch(), "Paris", "Paris", 1.0),
        (ExactMatch(), "Paris", "paris", 0.0),
        (StringPresence(), "cat", "the cat sat", 1.0),
        (StringPresence(), "dog", "the cat sat", 0.0),
        # Levenshtein: kitten -> sitting is 3 edits over 7 characters
        (NonLLMStringSimilarity(), "kitten", "sitting", 1 - 3 / 7),
        # Hamming: one of three positions differs
        (NonLLMStringSimilarity(distance_measure=DistanceMeasure.HAMMING), "abc", "abd", 2 / 3),
        # Jaro: 2 matches of 3, no transpositions: (2/3 + 2/3 + 2/2) / 3
        (NonLLMStringSimilarity(distance_measure=DistanceMeasure.JARO), "abc", "abd", 7 / 9),
        # an identical text of four words or more: every n-gram precision 1, no brevity penalty
        (BleuScore(), "the cat sat on the mat", "the cat sat on the mat", 1.0),
        (BleuScore(), "the cat sat on the mat", "dogs run", 0.0),
        (CHRFScore(), "the cat sat on the mat", "the cat sat on the mat", 1.0),
        (CHRFScore(), "the cat", "   ", 0.0),
        # ROUGE-1: 2 shared unigrams, 2 in the response, 3 in the reference
        (RougeScore(rouge_type="rouge1", mode="precision"), "the cat sat", "the cat", 1.0),
        (RougeScore(rouge_type="rouge1", mode="recall"), "the cat sat", "the cat", 2 / 3),
        (RougeScore(), "the cat sat", "the cat", 0.8),
    ],
)
def test_text_metrics_give_hand_computed_values(
    metric: Any, reference: str, response: str, value: float
) -> None:
    result = metric.score(reference=reference, response=response)
    assert result.value == pytest.approx(value, abs=1e-12)
    assert result.reason and result.error is None
    assert result.cost == 0.0 and result.usage.calls == 0 and result.name == metric.name


def test_bleu_details_name_the_sentence_that_counted() -> None:
    result = BleuScore().score(reference="a b c d. e f g h", response="a b c d. x y z w")
    assert result.value == pytest.approx(1.0)  # ragas scores the first response sentence only
    assert result.details == BleuDetails(
        scored_sentence="a b c d",
        reference_sentences=2,
        response_sentences=2,
        precisions=(100.0, 100.0, 100.0, 100.0),
        brevity_penalty=1.0,
    )
    assert "the first of 2 response sentence(s)" in result.reason


def test_bleu_and_chrf_pass_their_kwargs_to_sacrebleu() -> None:
    lower = BleuScore(kwargs={"lowercase": True})
    assert lower.score(
        reference="The Cat Sat On", response="the cat sat on"
    ).value == pytest.approx(1)
    assert BleuScore().score(reference="The Cat Sat On", response="the cat sat on").value < 1.0
    chars = CHRFScore(kwargs={"char_order": 2, "word_order": 0})
    assert chars.score(reference="ab", response="ab").value == 1.0


def test_rouge_details_keep_all_three_fields() -> None:
    result = RougeScore(rouge_type="rouge1", mode="recall").score(
        reference="the cat sat", response="the cat"
    )
    assert result.details == OverlapDetails(precision=1.0, recall=2 / 3, fmeasure=0.8)
    assert result.reason == "rouge1 recall 0.6667"


def test_quoted_spans_alignment_counts_quotes_found_in_the_contexts() -> None:
    metric = QuotedSpansAlignment()
    result = metric.score(
        response='He said "the cat sat down" and “a dog ran away”.',
        retrieved_contexts=["The cat  sat DOWN on the mat."],
    )
    assert result.value == 0.5
    assert result.reason == "Matched 1/2 quoted spans"
    assert result.details == QuoteDetails(
        spans=("the cat sat down", "a dog ran away"), matched=("the cat sat down",)
    )
    exact = QuotedSpansAlignment(casefold=False, min_span_words=2)
    assert exact.score(response='"sat DOWN"', retrieved_contexts=["sat down"]).value == 0.0
    none = metric.score(response="nothing quoted", retrieved_contexts=[])
    assert none.value == 1.0 and none.reason == "No quoted spans found in response"


def _conversation(*calls: ToolCall) -> list[Any]:
    return [
        HumanMessage(content="book a flight"),
        AIMessage(content="", tool_calls=list(calls)),
        ToolMessage(content="done"),
        AIMessage(content="booked"),
    ]


def test_tool_call_accuracy_in_order_and_in_any_order() -> None:
    f = ToolCall(name="f", args={"a": 1})
    g = ToolCall(name="g", args={"b": "x"})
    swapped = _conversation(g, f)
    strict = ToolCallAccuracy().score(user_input=swapped, reference_tool_calls=[f, g])
    assert strict.value == 0.0 and "differ" in strict.reason
    assert strict.details == ToolCallDetails(aligned=False, argument_scores=(0.0, 0.0), compared=2)
    loose = ToolCallAccuracy(strict_order=False).score(
        user_input=swapped, reference_tool_calls=[f, g]
    )
    assert loose.value == 1.0 and loose.details.aligned is True  # type: ignore[attr-defined]
    # one of two arguments right: 1/2
    half = ToolCallAccuracy().score(
        user_input=_conversation(ToolCall(name="f", args={"a": 1, "b": 3})),
        reference_tool_calls=[ToolCall(name="f", args={"a": 1, "b": 2})],
    )
    assert half.value == 0.5
    assert half.details.argument_scores == (0.5,)  # type: ignore[attr-defined]


def test_tool_call_metrics_take_plain_dicts() -> None:
    conversation = [
        {"type": "human", "content": "q"},
        {"type": "ai", "content": "", "tool_calls": [{"name": "f", "args": {"a": 1}}]},
    ]
    reference = [{"name": "f", "args": {"a": 1}}]
    assert ToolCallAccuracy().score(user_input=conversation, reference_tool_calls=reference) == 1.0
    assert ToolCallF1().score(user_input=conversation, reference_tool_calls=reference) == 1.0


def test_tool_call_f1_compares_sets_of_calls() -> None:
    # predicted {f(a=1), g(b=2)}, expected {f(a=1), h()}: P = R = 1/2, F1 = 1/2
    result = ToolCallF1().score(
        user_input=_conversation(
            ToolCall(name="f", args={"a": 1}), ToolCall(name="g", args={"b": 2})
        ),
        reference_tool_calls=[ToolCall(name="f", args={"a": 1}), ToolCall(name="h", args={})],
    )
    assert result.value == 0.5
    assert result.details == ToolCallDetails(true_positives=1, false_positives=1, false_negatives=1)
    assert result.reason == "1 matched, 1 unexpected, 1 missing (distinct calls)"


def test_no_tool_calls_on_either_side_is_full_accuracy() -> None:
    result = ToolCallAccuracy().score(user_input=[], reference_tool_calls=[])
    assert result.value == 1.0 and result.reason


def test_threshold_gives_success() -> None:
    metric = NonLLMStringSimilarity(threshold=0.5)
    passed = metric.score(reference="kitten", response="sitting")
    failed = metric.score(reference="kitten", response="xyz")
    assert passed.success is True and failed.success is False
    assert passed.to_dict()["threshold"] == 0.5 and failed.to_dict()["success"] is False
    assert ExactMatch().score(reference="a", response="a").success is None


def test_a_batch_keeps_the_other_rows_when_one_is_bad() -> None:
    rows: list[dict[str, Any]] = [
        {"reference": "the cat", "response": "the cat"},
        {"reference": "the cat", "response": None},  # not a string: refused, as ragas does
        {"reference": "the cat"},  # a keyword missing
        {"reference": "the cat", "response": "a cat"},
    ]
    results = StringPresence().batch_score(rows)
    assert [r.value for r in results] == [1.0, None, None, 0.0]
    assert results[1].error == "StringPresence: response must be str, got None"
    assert "response" in (results[2].error or "")
    assert all(r.reason for r in results)
    with pytest.raises(ValueError, match="response must be str, got None"):
        StringPresence().batch_score(rows, return_exceptions=False)
    with pytest.raises(TypeError):
        StringPresence().batch_score([rows[0], rows[2]], return_exceptions=False)


def test_a_bad_conversation_is_refused_in_one_row() -> None:
    rows = [
        {"user_input": _conversation(ToolCall(name="f", args={})), "reference_tool_calls": []},
        {"user_input": "not a list", "reference_tool_calls": []},
    ]
    results = ToolCallF1().batch_score(rows)
    assert results[0].value == 0.0
    assert (
        results[1].error
        == "ToolCallF1: user_input must be a list of messages, got str 'not a list'"
    )


def test_one_object_scores_many_samples_at_once() -> None:
    metric = RougeScore()

    async def many() -> list[MetricResult]:
        pairs = [("a b c", "a b c"), ("a b c", "x y z")] * 10
        return await asyncio.gather(*(metric.ascore(reference=r, response=s) for r, s in pairs))

    values = [r.value for r in asyncio.run(many())]
    assert values == [1.0, 0.0] * 10


def test_score_works_inside_a_running_loop() -> None:
    async def inside() -> MetricResult:
        return ExactMatch().score(reference="x", response="x")

    assert asyncio.run(inside()).value == 1.0


def test_datacompy_scores_rows_and_columns_and_turns_an_unreadable_table_into_an_error() -> None:
    pytest.importorskip("datacompy", reason="DataCompyScore needs the 'datacompy' extra")
    from qa_eval.metrics.collections import DataCompyScore

    reference = "id,x\n1,a\n2,b"
    response = "id,x\n1,a\n2,c"
    # rows: 1 of 2 paired rows equal on both sides, P = R = F1 = 1/2
    rows = DataCompyScore().score(reference=reference, response=response)
    assert rows.value == 0.5
    assert rows.details == TableDetails(matched=1, precision=0.5, recall=0.5)
    # columns: "id" equal throughout, "x" not: 1 of 2 columns
    columns = DataCompyScore(mode="columns", metric="recall")
    assert columns.score(reference=reference, response=response).value == 0.5
    unreadable = DataCompyScore(threshold=0.5).score(reference="", response=response)
    assert unreadable.value is None and unreadable.error and unreadable.success is False
    assert unreadable.reason and unreadable.reason.startswith("not scored: CSV parsing error")


def test_datacompy_refuses_a_bad_mode_when_built() -> None:
    pytest.importorskip("datacompy", reason="DataCompyScore needs the 'datacompy' extra")
    from qa_eval.metrics.collections import DataCompyScore

    with pytest.raises(ValueError, match="mode"):
        DataCompyScore(mode="cells")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="metric"):
        DataCompyScore(metric="accuracy")  # type: ignore[arg-type]


def test_datacompy_without_its_extra_is_refused_when_built() -> None:
    from qa_eval.extras import available

    if available("datacompy") and available("pandas"):
        pytest.skip("datacompy is installed here")
    from qa_eval.metrics.collections import DataCompyScore

    with pytest.raises(QaEvalError, match="datacompy"):
        DataCompyScore()
