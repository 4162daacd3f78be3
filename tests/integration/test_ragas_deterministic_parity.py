"""Parity of ``qa_eval.metrics.collections``' deterministic classes with ragas 0.4.3's, class
against class: the same constructor arguments and ``ascore`` keywords (names, order, defaults),
and, on seeded random inputs (hypothesis, ``derandomize``), the same value with ``==`` for each
pair of objects built with the same arguments; where ragas gives a reason, the same reason.

Runs where ragas is importable (skipped elsewhere, saying so), e.g. in the environment of
``tests/integration/test_ragas_parity.py``; DataCompy's part also needs datacompy.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import os
import warnings
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
theirs_face = pytest.importorskip(
    "ragas.metrics.collections", reason="the parity tests need ragas 0.4.3 installed"
)
ragas_messages = pytest.importorskip("ragas.messages")

from qa_eval import messages as our_messages  # noqa: E402
from qa_eval.metrics import collections as ours_face  # noqa: E402

SETTINGS = settings(
    max_examples=50,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

NAMES = [
    "BleuScore",
    "CHRFScore",
    "RougeScore",
    "ExactMatch",
    "StringPresence",
    "NonLLMStringSimilarity",
    "QuotedSpansAlignment",
    "ToolCallAccuracy",
    "ToolCallF1",
    "DataCompyScore",
]


def _parameters(function: Any) -> list[tuple[str, Any]]:
    """Named parameters and their defaults (``self`` and ``**kwargs`` aside)."""
    out = []
    for p in inspect.signature(function).parameters.values():
        if p.name != "self" and p.kind is not inspect.Parameter.VAR_KEYWORD:
            default = p.default
            out.append((p.name, getattr(default, "value", default)))  # enums by value
    return out


@pytest.mark.parametrize("name", NAMES)
def test_constructor_and_ascore_take_ragas_arguments(name: str) -> None:
    ours, theirs = getattr(ours_face, name), getattr(theirs_face, name)
    assert _parameters(ours.__init__) == _parameters(theirs.__init__)
    assert _parameters(ours.ascore) == _parameters(theirs.ascore)


def test_distance_measure_has_ragas_members() -> None:
    ours = {m.name: m.value for m in ours_face.DistanceMeasure}
    assert ours == {m.name: m.value for m in theirs_face.DistanceMeasure}


def run(metric: Any, **inputs: Any) -> Any:
    """The metric's result on ``inputs`` (ragas' warnings silenced)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return asyncio.run(metric.ascore(**inputs))


def warned(metric: Any, **inputs: Any) -> tuple[Any, list[tuple[type[Warning], str]]]:
    """The metric's result on ``inputs`` and the warnings it gave (category, text)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = asyncio.run(metric.ascore(**inputs))
    return result, [(w.category, str(w.message)) for w in caught if w.category is UserWarning]


def both(name: str, **arguments: Any) -> tuple[Any, Any]:
    """Our object and ragas' built with the same arguments."""
    return getattr(ours_face, name)(**arguments), getattr(theirs_face, name)(**arguments)


def assert_same(name: str, arguments: dict[str, Any], **inputs: Any) -> None:
    """Our value equals ragas' to the last bit (and the reason where ragas gives one)."""
    ours, theirs = both(name, **arguments)
    mine, expected = run(ours, **inputs), run(theirs, **inputs)
    assert mine.value == expected.value, (name, arguments, inputs)
    if expected.reason is not None:
        assert mine.reason == expected.reason
    assert mine.reason  # always filled here


WORDS = ["the", "cat", "sat", "on", "mat", "Cats", "running", "Paris", "is", "a", "b", "c"]
sentences = st.lists(
    st.lists(st.sampled_from(WORDS), min_size=0, max_size=8).map(" ".join), max_size=4
).flatmap(lambda parts: st.sampled_from([". ", " ", ".", ", "]).map(lambda sep: sep.join(parts)))
small_text = st.text(alphabet="abcAB .\n\t'\"é", max_size=12)
texts = st.one_of(sentences, small_text)


@SETTINGS
@given(
    reference=sentences,
    response=sentences,
    kwargs=st.sampled_from([None, {"smooth_method": "floor"}, {"lowercase": True}]),
)
def test_bleu_equals_ragas(reference: str, response: str, kwargs: Any) -> None:
    pytest.importorskip("sacrebleu")
    assert_same("BleuScore", {"kwargs": kwargs}, reference=reference, response=response)


@SETTINGS
@given(reference=texts, response=texts)
def test_chrf_equals_ragas(reference: str, response: str) -> None:
    pytest.importorskip("sacrebleu")
    assert_same("CHRFScore", {}, reference=reference, response=response)


@SETTINGS
@given(
    reference=texts,
    response=texts,
    rouge_type=st.sampled_from(["rouge1", "rougeL"]),
    mode=st.sampled_from(["fmeasure", "precision", "recall"]),
)
def test_rouge_equals_ragas(reference: str, response: str, rouge_type: str, mode: str) -> None:
    pytest.importorskip("rouge_score")
    arguments = {"rouge_type": rouge_type, "mode": mode}
    assert_same("RougeScore", arguments, reference=reference, response=response)


@SETTINGS
@given(reference=texts, response=texts)
def test_exact_match_and_string_presence_equal_ragas(reference: str, response: str) -> None:
    assert_same("ExactMatch", {}, reference=reference, response=response)
    assert_same("StringPresence", {}, reference=reference, response=response)


@SETTINGS
@given(
    reference=small_text,
    response=small_text,
    measure=st.sampled_from(["levenshtein", "hamming", "jaro", "jaro_winkler"]),
)
def test_string_similarity_equals_ragas(reference: str, response: str, measure: str) -> None:
    pytest.importorskip("rapidfuzz")
    ours = ours_face.NonLLMStringSimilarity(distance_measure=ours_face.DistanceMeasure(measure))
    # ragas' own enum member is accepted too
    theirs_member = theirs_face.DistanceMeasure(measure)
    also = ours_face.NonLLMStringSimilarity(distance_measure=theirs_member)
    theirs = theirs_face.NonLLMStringSimilarity(distance_measure=theirs_member)
    expected = run(theirs, reference=reference, response=response).value
    assert run(ours, reference=reference, response=response).value == expected
    assert run(also, reference=reference, response=response).value == expected


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
    arguments = {"casefold": casefold, "min_span_words": min_span_words}
    assert_same("QuotedSpansAlignment", arguments, response=response, retrieved_contexts=contexts)


arg_values = st.one_of(
    st.integers(0, 2),
    st.sampled_from(["0", "1", "x", 1.0, True, None]),
    st.lists(st.integers(0, 1), max_size=2),
)
tool_call_dicts = st.fixed_dictionaries(
    {
        "name": st.sampled_from(["f", "g"]),
        "args": st.dictionaries(st.sampled_from(["a", "b"]), arg_values, max_size=2),
    }
)
conversations = st.lists(
    st.one_of(
        st.lists(tool_call_dicts, max_size=3).map(lambda calls: ("ai", calls)),
        st.just(("human", None)),
        st.just(("tool", None)),
    ),
    max_size=4,
)


def conversation(module: Any, turns: list[tuple[str, Any]]) -> list[Any]:
    """The conversation as ``module``'s message objects (ragas' or ours)."""
    out: list[Any] = []
    for kind, calls in turns:
        if kind == "human":
            out.append(module.HumanMessage(content="q"))
        elif kind == "tool":
            out.append(module.ToolMessage(content="r"))
        else:
            tool_calls = None if calls is None else [module.ToolCall(**c) for c in calls]
            out.append(module.AIMessage(content="", tool_calls=tool_calls))
    return out


@SETTINGS
@given(
    turns=conversations,
    reference=st.lists(tool_call_dicts, max_size=3),
    strict_order=st.booleans(),
)
def test_tool_call_metrics_equal_ragas_on_every_kind_of_message(
    turns: list[tuple[str, Any]], reference: list[dict[str, Any]], strict_order: bool
) -> None:
    ragas_in = conversation(ragas_messages, turns)
    ragas_ref = [ragas_messages.ToolCall(**c) for c in reference]
    plain_in = [{"type": kind, "content": "", "tool_calls": calls} for kind, calls in turns]
    inputs = [
        (ragas_in, ragas_ref),
        (conversation(our_messages, turns), [our_messages.ToolCall(**c) for c in reference]),
        (plain_in, reference),
    ]
    for name, arguments in [
        ("ToolCallAccuracy", {"strict_order": strict_order}),
        ("ToolCallF1", {}),
    ]:
        ours, theirs = both(name, **arguments)
        found, said = warned(theirs, user_input=ragas_in, reference_tool_calls=ragas_ref)
        expected = found.value
        for user_input, reference_calls in inputs:
            got, ours_said = warned(
                ours, user_input=user_input, reference_tool_calls=reference_calls
            )
            assert got.value == expected and got.reason
            assert ours_said == said  # ragas' UserWarnings, with its texts


def _csv(columns: list[str], rows: list[list[Any]]) -> str:
    return "\n".join([",".join(columns), *(",".join(str(v) for v in row) for row in rows)])


cells = st.one_of(st.integers(0, 2), st.sampled_from(["x", "X", "", "1.0"]))


@st.composite
def csv_tables(draw: st.DrawFn) -> str:
    """A small CSV of some of three columns and up to four rows, or a text pandas cannot read."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from(["", '"unclosed']))
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
    pytest.importorskip("datacompy", reason="DataCompyScore's parity needs datacompy")
    ours, theirs = both("DataCompyScore", mode=mode, metric=metric)
    expected = run(theirs, reference=reference, response=response)
    got = run(ours, reference=reference, response=response)
    if math.isnan(expected.value):
        # ragas' NaN for a table pandas cannot read is our result's error, with its reason
        assert got.value is None and got.error and got.reason == f"not scored: {expected.reason}"
    else:
        assert got.value == expected.value and got.reason == expected.reason
