"""Parity with ragas 0.4.3: each deterministic function against its ragas class, on random inputs.

Runs where ragas is importable (skipped elsewhere, saying so): hypothesis draws bounded inputs
with a fixed seed (``derandomize``), hand edge cases follow, and every value is compared with
``==`` (NaN with NaN), since both sides make the same library calls in the same arithmetic order.
Where ragas gives a reason, the reason is compared too.
"""

from __future__ import annotations

import asyncio
import math
import warnings
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ragas_collections = pytest.importorskip(
    "ragas.metrics.collections", reason="the parity tests need ragas 0.4.3 installed"
)
ragas_messages = pytest.importorskip("ragas.messages")

from qa_eval.metrics.agents import toolcalls  # noqa: E402
from qa_eval.metrics.textual import strings as text  # noqa: E402
from qa_eval.metrics.textual import tables  # noqa: E402

SETTINGS = settings(
    max_examples=60,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

WORDS = ["the", "cat", "sat", "on", "mat", "Cats", "running", "Paris", "is", "a", "b", "c"]


def ragas(metric: Any, **inputs: Any) -> Any:
    """ragas' result for ``inputs`` (its warnings silenced)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return asyncio.run(metric.ascore(**inputs))


def same(ours: float, theirs: float) -> bool:
    """Equal to the last bit, NaN equal to NaN."""
    return ours == theirs or (math.isnan(ours) and math.isnan(theirs))


# Sentences of a few words, joined with ". " (BLEU's cut), "." or spaces.
sentences = st.lists(
    st.lists(st.sampled_from(WORDS), min_size=0, max_size=8).map(" ".join), max_size=4
).flatmap(lambda parts: st.sampled_from([". ", " ", ".", ", "]).map(lambda sep: sep.join(parts)))
small_text = st.text(alphabet="abcAB .\n\t'\"é", max_size=12)


@SETTINGS
@given(reference=sentences, response=sentences)
def test_bleu_equals_ragas(reference: str, response: str) -> None:
    pytest.importorskip("sacrebleu")
    assert (
        text.bleu_score(reference, response).value
        == ragas(ragas_collections.BleuScore(), reference=reference, response=response).value
    )


@SETTINGS
@given(
    reference=sentences,
    response=sentences,
    options=st.sampled_from(
        [
            {"smooth_method": "floor"},
            {"smooth_method": "add-k", "smooth_value": 1},
            {"lowercase": True, "use_effective_order": True},
            {"tokenize": "char"},
        ]
    ),
)
def test_bleu_with_options_equals_ragas(
    reference: str, response: str, options: dict[str, Any]
) -> None:
    pytest.importorskip("sacrebleu")
    metric = ragas_collections.BleuScore(kwargs=options)
    expected = ragas(metric, reference=reference, response=response).value
    assert text.bleu_score(reference, response, **options).value == expected


@SETTINGS
@given(reference=st.one_of(sentences, small_text), response=st.one_of(sentences, small_text))
def test_chrf_equals_ragas(reference: str, response: str) -> None:
    pytest.importorskip("sacrebleu")
    theirs = ragas(ragas_collections.CHRFScore(), reference=reference, response=response)
    ours = text.chrf_score(reference, response)
    assert ours.value == theirs.value
    if theirs.reason is not None:
        assert ours.reason == theirs.reason


@SETTINGS
@given(
    reference=st.one_of(sentences, small_text),
    response=st.one_of(sentences, small_text),
    rouge_type=st.sampled_from(["rouge1", "rougeL", "rouge2"]),
    mode=st.sampled_from(["fmeasure", "precision", "recall"]),
)
def test_rouge_equals_ragas(reference: str, response: str, rouge_type: str, mode: str) -> None:
    pytest.importorskip("rouge_score")
    metric = ragas_collections.RougeScore(rouge_type=rouge_type, mode=mode)  # type: ignore[arg-type]
    expected = ragas(metric, reference=reference, response=response).value
    ours = text.rouge_score(reference, response, rouge_type, mode)  # type: ignore[arg-type]
    assert ours.value == expected


@SETTINGS
@given(
    reference=st.one_of(sentences, small_text),
    response=st.one_of(sentences, small_text),
)
def test_exact_match_and_string_presence_equal_ragas(reference: str, response: str) -> None:
    for ours, metric in [
        (text.exact_match, ragas_collections.ExactMatch()),
        (text.string_presence, ragas_collections.StringPresence()),
    ]:
        expected = ragas(metric, reference=reference, response=response).value
        assert ours(reference, response).value == expected


@SETTINGS
@given(
    reference=small_text,
    response=small_text,
    measure=st.sampled_from(list(ragas_collections.DistanceMeasure)),
)
def test_string_similarity_equals_ragas(reference: str, response: str, measure: Any) -> None:
    pytest.importorskip("rapidfuzz")
    metric = ragas_collections.NonLLMStringSimilarity(distance_measure=measure)
    expected = ragas(metric, reference=reference, response=response).value
    ours = text.non_llm_string_similarity(reference, response, text.DistanceMeasure(measure.value))
    assert ours.value == expected


QUOTE_MARKS = ['"', "“", "”", "'", "‘", "’", "`", "´", "„"]
quoted_words = st.lists(
    st.one_of(st.sampled_from(WORDS), st.sampled_from(QUOTE_MARKS), st.just("  ")),
    max_size=16,
).map(" ".join)


@SETTINGS
@given(
    response=quoted_words,
    contexts=st.lists(st.one_of(sentences, quoted_words), max_size=3),
    casefold=st.booleans(),
    min_span_words=st.integers(min_value=0, max_value=4),
)
def test_quoted_spans_equal_ragas(
    response: str, contexts: list[str], casefold: bool, min_span_words: int
) -> None:
    metric = ragas_collections.QuotedSpansAlignment(
        casefold=casefold, min_span_words=min_span_words
    )
    theirs = ragas(metric, response=response, retrieved_contexts=contexts)
    ours = text.quoted_spans_alignment(response, contexts, casefold, min_span_words)
    assert (ours.value, ours.reason) == (theirs.value, theirs.reason)


@pytest.mark.parametrize(
    ("response", "contexts"),
    [(None, ["x"]), ('"a b c"', "a b c"), ("", []), ('"a  B c"', ["A b   c"])],
)
def test_quoted_spans_edge_cases_equal_ragas(response: Any, contexts: Any) -> None:
    theirs = ragas(
        ragas_collections.QuotedSpansAlignment(), response=response, retrieved_contexts=contexts
    )
    ours = text.quoted_spans_alignment(response, contexts)
    assert (ours.value, ours.reason) == (theirs.value, theirs.reason)


arg_values = st.one_of(
    st.integers(0, 2),
    st.sampled_from(["0", "1", "x", 1.0, True, None]),
    st.lists(st.integers(0, 1), max_size=2),
    st.dictionaries(st.sampled_from(["k", "j"]), st.integers(0, 1), max_size=2),
)
tool_call_dicts = st.fixed_dictionaries(
    {
        "name": st.sampled_from(["f", "g", "h"]),
        "args": st.dictionaries(st.sampled_from(["a", "b", "c"]), arg_values, max_size=3),
    }
)
conversations = st.lists(
    st.one_of(
        st.lists(tool_call_dicts, max_size=3).map(lambda calls: ("ai", calls)),
        st.just(("human", None)),
        st.just(("ai", None)),
        st.just(("tool", None)),
    ),
    max_size=4,
)


def ragas_conversation(turns: list[tuple[str, Any]]) -> list[Any]:
    """The conversation as ragas' message objects."""
    messages: list[Any] = []
    for kind, calls in turns:
        if kind == "human":
            messages.append(ragas_messages.HumanMessage(content="q"))
        elif kind == "tool":
            messages.append(ragas_messages.ToolMessage(content="r"))
        else:
            tool_calls = None if calls is None else [ragas_messages.ToolCall(**c) for c in calls]
            messages.append(ragas_messages.AIMessage(content="", tool_calls=tool_calls))
    return messages


def plain_conversation(turns: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    """The same conversation as plain dicts."""
    return [{"type": kind, "content": "", "tool_calls": calls} for kind, calls in turns]


@SETTINGS
@given(
    turns=conversations,
    reference=st.lists(tool_call_dicts, max_size=3),
    strict_order=st.booleans(),
)
def test_tool_call_accuracy_equals_ragas(
    turns: list[tuple[str, Any]], reference: list[dict[str, Any]], strict_order: bool
) -> None:
    ragas_reference = [ragas_messages.ToolCall(**c) for c in reference]
    metric = ragas_collections.ToolCallAccuracy(strict_order=strict_order)
    expected = ragas(
        metric, user_input=ragas_conversation(turns), reference_tool_calls=ragas_reference
    ).value
    objects = toolcalls.tool_call_accuracy(ragas_conversation(turns), ragas_reference, strict_order)
    plain = toolcalls.tool_call_accuracy(plain_conversation(turns), reference, strict_order)
    assert objects.value == plain.value == expected


@SETTINGS
@given(
    turns=conversations,
    reference=st.lists(tool_call_dicts, max_size=3),
    same_names=st.booleans(),
)
def test_tool_call_accuracy_on_aligned_names_equals_ragas(
    turns: list[tuple[str, Any]], reference: list[dict[str, Any]], same_names: bool
) -> None:
    # Random names rarely align; here the reference takes the predictions' names (shuffled
    # when not strict) so the argument arithmetic is exercised.
    predicted = [c for kind, calls in turns if kind == "ai" and calls for c in calls]
    reference = [
        {"name": p["name"], "args": r["args"]}
        for p, r in zip(predicted, reference + [{"args": {}}] * len(predicted))
    ]
    strict = same_names
    if not strict:
        reference = list(reversed(reference))
    ragas_reference = [ragas_messages.ToolCall(**c) for c in reference]
    metric = ragas_collections.ToolCallAccuracy(strict_order=strict)
    expected = ragas(
        metric, user_input=ragas_conversation(turns), reference_tool_calls=ragas_reference
    ).value
    ours = toolcalls.tool_call_accuracy(plain_conversation(turns), reference, strict)
    assert ours.value == expected


@SETTINGS
@given(turns=conversations, reference=st.lists(tool_call_dicts, max_size=3))
def test_tool_call_f1_equals_ragas(
    turns: list[tuple[str, Any]], reference: list[dict[str, Any]]
) -> None:
    ragas_reference = [ragas_messages.ToolCall(**c) for c in reference]
    expected = ragas(
        ragas_collections.ToolCallF1(),
        user_input=ragas_conversation(turns),
        reference_tool_calls=ragas_reference,
    ).value
    ours = toolcalls.tool_call_f1(plain_conversation(turns), reference)
    assert ours.value == expected


def _csv(columns: list[str], rows: list[list[Any]]) -> str:
    return "\n".join([",".join(columns), *(",".join(str(v) for v in row) for row in rows)])


cells = st.one_of(st.integers(0, 2), st.sampled_from(["x", "X", "", "1.0", " x"]))


@st.composite
def csv_tables(draw: st.DrawFn) -> str:
    """A small CSV: some of three columns (case varying), up to four rows, or a broken text."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from(["", "a,b\n1,2,3,4\n", '"unclosed']))
    names = draw(st.lists(st.sampled_from(["id", "x", "Y"]), min_size=1, max_size=3, unique=True))
    rows = draw(st.lists(st.lists(cells, min_size=len(names), max_size=len(names)), max_size=4))
    return _csv(names, rows)


@SETTINGS
@given(
    reference=csv_tables(),
    response=csv_tables(),
    mode=st.sampled_from(["rows", "columns"]),
    metric=st.sampled_from(["precision", "recall", "f1"]),
)
def test_datacompy_equals_ragas(reference: str, response: str, mode: str, metric: str) -> None:
    pytest.importorskip("datacompy")
    scorer = ragas_collections.DataCompyScore(mode=mode, metric=metric)  # type: ignore[arg-type]
    try:
        theirs = ragas(scorer, reference=reference, response=response)
    except ValueError as error:
        # datacompy refuses some tables that pandas read (a row longer than the header makes a
        # multi-level index): ragas raises, and so does the function, with the same error.
        with pytest.raises(type(error), match=str(error)):
            tables.datacompy_score(reference, response, mode, metric)  # type: ignore[arg-type]
        return
    ours = tables.datacompy_score(reference, response, mode, metric)  # type: ignore[arg-type]
    assert same(ours.value, theirs.value)
    assert ours.reason == theirs.reason
