"""ragas' deterministic metrics: hand-computed tables, run without ragas.

The string and tool-call metrics need no library; BLEU, chrF, ROUGE, the rapidfuzz distances and
DataCompy skip, saying which package is missing, where the ``ragas-metrics`` extra is absent.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from qa_eval.metrics.agents.toolcalls import predicted_tool_calls, tool_call_accuracy, tool_call_f1
from qa_eval.metrics.textual.strings import (
    DistanceMeasure,
    bleu_score,
    chrf_score,
    exact_match,
    non_llm_string_similarity,
    quoted_spans_alignment,
    rouge_score,
    string_presence,
)
from qa_eval.metrics.textual.tables import datacompy_score


def needs(module: str) -> None:
    """Skip the test, naming the package, when ``module`` is not installed."""
    pytest.importorskip(module, reason=f"{module} comes with qa-eval[ragas-metrics]")


@pytest.mark.parametrize(
    ("reference", "response", "expected"),
    [("Hello World", "Hello World", 1.0), ("Hello World", "hello world", 0.0), ("", "", 1.0)],
)
def test_exact_match(reference: str, response: str, expected: float) -> None:
    assert exact_match(reference, response).value == expected


@pytest.mark.parametrize(
    ("reference", "response", "expected"),
    [
        ("Paris", "The capital of France is Paris.", 1.0),
        ("paris", "The capital of France is Paris.", 0.0),  # case matters
        ("", "anything", 1.0),  # the empty string is in every string
        ("x", "", 0.0),
    ],
)
def test_string_presence(reference: str, response: str, expected: float) -> None:
    assert string_presence(reference, response).value == expected


def test_string_metrics_refuse_what_is_not_text() -> None:
    with pytest.raises(TypeError, match="reference string"):
        string_presence(None, "x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="response string"):
        non_llm_string_similarity("x", 3)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("measure", "reference", "response", "expected"),
    [
        # kitten -> sitting: 3 edits, divided by the longer length 7.
        (DistanceMeasure.LEVENSHTEIN, "kitten", "sitting", 1 - 3 / 7),
        (DistanceMeasure.LEVENSHTEIN, "", "", 1.0),
        (DistanceMeasure.LEVENSHTEIN, "abc", "", 0.0),
        # Hamming pads the shorter text: "ab" vs "abc" differs in one of 3 places.
        (DistanceMeasure.HAMMING, "abc", "ab", 1 - 1 / 3),
        (DistanceMeasure.HAMMING, "abc", "abd", 1 - 1 / 3),
        # MARTHA / MARHTA: 6 matches, 1 transposition: (6/6 + 6/6 + 5/6) / 3 = 17/18.
        (DistanceMeasure.JARO, "MARTHA", "MARHTA", 17 / 18),
        # Winkler: common prefix 3, p = 0.1: 17/18 + 3 * 0.1 * (1 - 17/18).
        (DistanceMeasure.JARO_WINKLER, "MARTHA", "MARHTA", 17 / 18 + 0.3 * (1 / 18)),
        ("jaro", "abc", "xyz", 0.0),  # the enum's value is accepted too
    ],
)
def test_non_llm_string_similarity(
    measure: DistanceMeasure, reference: str, response: str, expected: float
) -> None:
    needs("rapidfuzz")
    value = non_llm_string_similarity(reference, response, measure).value
    assert value == pytest.approx(expected, abs=1e-12)


QUOTES = 'He said "the results are significant" and “it is fine”.'


@pytest.mark.parametrize(
    ("response", "contexts", "kwargs", "value", "reason"),
    [
        # Two quotes of 4 and 3 words; only the first is in the (re-spaced) context.
        (QUOTES, ["The results   are SIGNIFICANT here."], {}, 0.5, "Matched 1/2 quoted spans"),
        # Contexts are joined with a space, so a quote may straddle two of them.
        (QUOTES, ["the results are", "significant; it is fine"], {}, 1.0, "Matched 2/2"),
        # Without casefold nothing is normalised: case and spacing must match as written.
        (QUOTES, ["The results are significant"], {"casefold": False}, 0.0, "Matched 0/2"),
        (QUOTES, ["the results are significant"], {"casefold": False}, 0.5, "Matched 1/2"),
        # Quotes under min_span_words words are not quotes.
        ('a "b c" d', ["x"], {}, 1.0, "No quoted spans found in response"),
        ('a "b c" d', ["x"], {"min_span_words": 2}, 0.0, "Matched 0/1"),
        # An apostrophe opens a quote: "'s what '" (2 words) is taken and dropped, and the
        # quote after it is never seen (ragas' pattern, kept for parity).
        ("It's what 'they all said' today", ["they all said"], {}, 1.0, "No quoted spans"),
        ("no quotes", [], {}, 1.0, "No quoted spans"),
        (42, ["x"], {}, 0.0, "response must be a string"),
        ('"a b c"', "a b c", {}, 0.0, "must be a list"),
    ],
)
def test_quoted_spans_alignment(
    response: str, contexts: list[str], kwargs: dict[str, object], value: float, reason: str
) -> None:
    result = quoted_spans_alignment(response, contexts, **kwargs)  # type: ignore[arg-type]
    assert result.value == value
    assert reason in result.reason


def test_quoted_spans_details_name_the_quotes() -> None:
    details = quoted_spans_alignment(QUOTES, ["it is fine"]).details
    assert details == {
        "spans": ["the results are significant", "it is fine"],
        "matched": ["it is fine"],
    }


def call(name: str, **args: object) -> dict[str, object]:
    return {"name": name, "args": args}


def ai(*calls: object) -> dict[str, object]:
    return {"type": "ai", "content": "", "tool_calls": list(calls)}


HUMAN = {"type": "human", "content": "weather?"}


@pytest.mark.parametrize(
    ("predicted", "reference", "strict", "expected"),
    [
        ([], [], True, 1.0),
        ([call("a")], [], True, 0.0),
        ([], [call("a")], True, 0.0),
        # Same names in order: (1 + 0) / 2 for the arguments.
        ([call("a", x=1), call("b", y=2)], [call("a", x=1), call("b", y=3)], True, 0.5),
        # Swapped order: 0 when strict, both match when not.
        ([call("b", y=2), call("a", x=1)], [call("a", x=1), call("b", y=2)], True, 0.0),
        ([call("b", y=2), call("a", x=1)], [call("a", x=1), call("b", y=2)], False, 1.0),
        # Arguments compare by str: "1" matches 1; one of two reference arguments given.
        ([call("a", x="1")], [call("a", x=1, y=2)], True, 0.5),
        ([call("a")], [call("a")], True, 1.0),  # no arguments on either side
        ([call("a", x=1)], [call("a")], True, 0.0),  # arguments where none are expected
        # Different lengths never align, so the coverage penalty never shows.
        ([call("a", x=1)], [call("a", x=1), call("b")], False, 0.0),
        # Not strict, same name twice: sorted by arguments, then paired.
        ([call("a", x=2), call("a", x=1)], [call("a", x=1), call("a", x=3)], False, 0.5),
    ],
)
def test_tool_call_accuracy(
    predicted: list[dict[str, object]],
    reference: list[dict[str, object]],
    strict: bool,
    expected: float,
) -> None:
    user_input = [HUMAN, ai(*predicted)]
    assert tool_call_accuracy(user_input, reference, strict_order=strict).value == expected


def test_tool_calls_are_read_from_objects_and_ai_messages_only() -> None:
    obj = SimpleNamespace(name="a", args={"x": 1})
    messages = [
        SimpleNamespace(type="ai", tool_calls=[obj]),
        SimpleNamespace(type="tool", tool_calls=[call("b")]),  # not the agent's
        {"type": "ai", "tool_calls": None},
        ai(call("c")),
    ]
    assert [
        c["name"] if isinstance(c, dict) else c.name for c in predicted_tool_calls(messages)
    ] == [
        "a",
        "c",
    ]
    assert tool_call_accuracy(messages, [call("a", x=1), call("c")]).value == 1.0


def test_tool_call_metrics_refuse_what_is_not_a_list() -> None:
    with pytest.raises(ValueError, match="user_input must be a list"):
        tool_call_accuracy((HUMAN,), [])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="reference_tool_calls must be a list"):
        tool_call_f1([HUMAN], None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("predicted", "reference", "expected"),
    [
        # 1 hit, 1 extra: P = 1/2, R = 1, F1 = 2/3 rounded to 4 places.
        ([call("w", loc="Paris"), call("uv", loc="Paris")], [call("w", loc="Paris")], 0.6667),
        ([], [], 0.0),  # nothing expected, nothing made: 0, not 1 (ragas)
        ([call("a")], [], 0.0),
        # Sets: a call made twice counts once.
        ([call("a", x=1), call("a", x=1)], [call("a", x=1)], 1.0),
        # Python equality: 1, 1.0 and True are one value; a list equals a tuple.
        ([call("a", x=1, y=[1, 2])], [call("a", x=True, y=(1.0, 2))], 1.0),
        # Nested dicts compare regardless of key order.
        ([call("a", q={"k": 1, "j": 2})], [call("a", q={"j": 2, "k": 1})], 1.0),
        ([call("a", x="1")], [call("a", x=1)], 0.0),  # no str() here, unlike accuracy
        # 2 of 3 expected found, 1 extra: P = R = 2/3.
        ([call("a"), call("b"), call("z")], [call("a"), call("b"), call("c")], 0.6667),
    ],
)
def test_tool_call_f1(
    predicted: list[dict[str, object]], reference: list[dict[str, object]], expected: float
) -> None:
    assert tool_call_f1([HUMAN, ai(*predicted)], reference).value == expected


@pytest.mark.parametrize(
    ("reference", "response", "expected"),
    [
        ("the cat sat on the mat", "the cat sat on the mat", 1.0),
        # Only the first response sentence is scored (against every reference sentence): the
        # second sentence of the response changes nothing (ragas' shape of the call).
        ("the cat sat on the mat", "the cat sat on the mat. and then it left home", 1.0),
        # Fewer than 4 tokens: no 4-gram, so BLEU is 0 without smoothing.
        ("a b c", "a b c", 0.0),
        ("", "", 0.0),
    ],
)
def test_bleu_score(reference: str, response: str, expected: float) -> None:
    needs("sacrebleu")
    # sacrebleu takes exp of the mean log precision: a perfect match is 1 to within a few ulps.
    assert bleu_score(reference, response).value == pytest.approx(expected, abs=1e-12)


def test_bleu_score_passes_sacrebleu_options() -> None:
    needs("sacrebleu")
    # Smoothed with 'add-k' the 4-gram precision of a 3-token sentence is no longer 0.
    assert bleu_score("a b c", "a b c", smooth_method="add-k").value > 0


@pytest.mark.parametrize(
    ("reference", "response", "expected", "reason"),
    [
        ("The capital of France is Paris.", "The capital of France is Paris.", 1.0, "chrF"),
        ("  ", "text", 0.0, "Empty input"),
        ("text", "", 0.0, "Empty input"),
        (None, "text", 0.0, "Invalid input"),
    ],
)
def test_chrf_score(reference: str, response: str, expected: float, reason: str) -> None:
    if reference is not None and reference.strip() and response.strip():
        needs("sacrebleu")
    result = chrf_score(reference, response)
    assert result.value == expected
    assert result.reason.startswith(reason)


@pytest.mark.parametrize(
    ("reference", "response", "rouge_type", "mode", "expected"),
    [
        ("the cat", "the dog", "rouge1", "fmeasure", 0.5),
        # LCS of "a b c d" and "a c d e" is "a c d": 3 of 4 tokens either way.
        ("a b c d", "a c d e", "rougeL", "precision", 0.75),
        ("a b c d", "a c d", "rougeL", "recall", 0.75),
        ("a b c d", "a c d", "rougeL", "precision", 1.0),
        ("cats running", "cat runs", "rouge1", "fmeasure", 1.0),  # Porter stemming
        ("", "anything", "rougeL", "fmeasure", 0.0),
    ],
)
def test_rouge_score(
    reference: str, response: str, rouge_type: str, mode: str, expected: float
) -> None:
    needs("rouge_score")
    value = rouge_score(reference, response, rouge_type, mode).value  # type: ignore[arg-type]
    assert value == expected


PEOPLE = "id,name\n1,Alice\n2,Bob"
MORE_PEOPLE = "id,name\n1,Alice\n2,Bob\n3,Charlie"


@pytest.mark.parametrize(
    ("reference", "response", "mode", "metric", "expected"),
    [
        # 2 rows matched: recall 2/2, precision 2/3, F1 = 2 * (2/3) / (5/3) = 0.8.
        (PEOPLE, MORE_PEOPLE, "rows", "recall", 1.0),
        (PEOPLE, MORE_PEOPLE, "rows", "precision", 2 / 3),
        (PEOPLE, MORE_PEOPLE, "rows", "f1", 2 * (1.0 * (2 / 3)) / (1.0 + 2 / 3)),
        # Both columns agree on the paired rows.
        (PEOPLE, MORE_PEOPLE, "columns", "f1", 1.0),
        # Column names are compared lower-cased; one value differs in "name".
        ("ID,Name\n1,Alice\n2,Bob", "id,name\n1,Alice\n2,Rob", "columns", "precision", 0.5),
        ("id,name\n1,Alice\n2,Bob", "id,name\n1,Alice\n2,Rob", "rows", "recall", 0.5),
        # A header and no rows: nothing to divide by, so 0.
        ("id,name", "id,name", "rows", "f1", 0.0),
    ],
)
def test_datacompy_score(
    reference: str, response: str, mode: str, metric: str, expected: float
) -> None:
    needs("datacompy")
    needs("pandas")
    value = datacompy_score(reference, response, mode, metric).value  # type: ignore[arg-type]
    assert value == expected


def test_datacompy_score_an_unreadable_csv_is_nan_with_the_error() -> None:
    needs("datacompy")
    needs("pandas")
    result = datacompy_score("", PEOPLE)
    assert math.isnan(result.value)
    assert result.reason.startswith("CSV parsing error: ")
    assert result.details["error"]


def test_datacompy_score_refuses_unknown_modes() -> None:
    with pytest.raises(ValueError, match="mode must be"):
        datacompy_score(PEOPLE, PEOPLE, mode="cells")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="reference must be a CSV string"):
        datacompy_score(None, PEOPLE)  # type: ignore[arg-type]
