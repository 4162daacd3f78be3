"""compute_aggregates: the original's call forms and number types."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path
from statistics import mean, median
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qa_eval import compute_aggregates
from qa_eval.aggregate import describe

CONFIG = """\
llm:
  generation: {provider: openai, model: gpt-4o-mini, api_key: x}
custom_evaluations:
  - name: retrieval
    inputs: [question, actual_answer]
    instructions: Judge it.
    outputs:
      retrieval_recall: a number from 0 to 1
      retrieval_reason: why
"""


def _result(template: str, qid: str, **extra: Any) -> dict[str, Any]:
    return {
        "template_id": template,
        "question_id": qid,
        "status": "success",
        "steps_score": 1,
        **extra,
    }


RESULTS = [
    _result("t1", "a", retrieval_recall=1, retrieval_reason="all there", input_tokens=10),
    _result("t1", "b", retrieval_recall=0.5, retrieval_reason="half", input_tokens=20),
    _result("t2", "c", retrieval_recall=0, retrieval_reason="none", input_tokens=31),
]


@pytest.mark.parametrize("form", ["str", "path", "mapping", "names"])
def test_custom_outputs_are_aggregated_from_every_config_form(tmp_path: Path, form: str) -> None:
    import yaml

    path = tmp_path / "config.yaml"
    path.write_text(CONFIG, encoding="utf-8")
    arg: Any = {
        "str": str(path),
        "path": path,
        "mapping": yaml.safe_load(CONFIG),
        "names": ["retrieval_recall", "retrieval_reason"],
    }[form]
    aggregates = compute_aggregates(RESULTS, arg)
    micro = aggregates["micro"]
    assert micro["retrieval_recall"]["mean"] == pytest.approx(0.5)
    assert micro["retrieval_recall"]["n"] == 3
    # a text output is not a statistic, as in the original
    assert "retrieval_reason" not in micro
    assert aggregates["macro"]["retrieval_recall"]["mean"] == pytest.approx((0.75 + 0) / 2)
    # keyword form of the original
    assert compute_aggregates(RESULTS, config_file_path=arg)["micro"] == micro


def test_without_config_custom_outputs_are_not_aggregated() -> None:
    assert "retrieval_recall" not in compute_aggregates(RESULTS)["micro"]


def test_number_types_follow_statistics_mean() -> None:
    micro = compute_aggregates(RESULTS)["micro"]
    tokens = [10, 20, 31]
    assert micro["input_tokens"]["sum"] == sum(tokens)
    assert type(micro["input_tokens"]["mean"]) is type(mean(tokens))  # 61/3: float
    assert micro["input_tokens"]["median"] == median(tokens)
    assert type(micro["steps_score"]["mean"]) is type(mean([1, 1, 1])) is int
    per_t1 = compute_aggregates(RESULTS)["per_template"]["t1"]["input_tokens"]
    assert per_t1["mean"] == 15 and type(per_t1["mean"]) is int  # mean([10, 20]) == 15
    macro = compute_aggregates(RESULTS)["macro"]["steps_score"]["mean"]
    assert macro == 1 and type(macro) is int


def test_a_statistic_of_no_values_is_null_but_the_original_token_metrics_stay_zero() -> None:
    """``n: 0`` (every value present but not a finite number) has no mean, median, min or max:
    they are null, not 0. The token and time metrics, which graphrag-eval always writes with
    zeros, keep their zeros (``../shared/conformance`` checks that)."""
    results = [
        {"template_id": "t", "question_id": "a", "status": "success", "faithfulness": float("nan")},
        {"template_id": "t", "question_id": "b", "status": "success", "faithfulness": "x"},
        {"template_id": "u", "question_id": "c", "status": "success", "faithfulness": 0.5},
    ]
    aggregates = compute_aggregates(results)
    t = aggregates["per_template"]["t"]
    assert t["faithfulness"] == {
        "sum": 0,
        "mean": None,
        "median": None,
        "min": None,
        "max": None,
        "n": 0,
        "skipped": 2,
    }
    assert t["input_tokens"] == {"sum": 0, "mean": 0, "median": 0, "min": 0, "max": 0, "n": 0}
    assert aggregates["macro"]["faithfulness"] == {"mean": 0.5, "n": 1}
    only_bad = compute_aggregates(results[:2])
    assert only_bad["macro"]["faithfulness"] == {"mean": None, "n": 0}
    assert only_bad["macro"]["input_tokens"] == {"mean": 0, "n": 0}


def _step(**keys: Any) -> dict[str, Any]:
    return {"name": "retrieval", "status": "success", "output": "[]", **keys}


def test_failed_counts_the_error_of_each_metric_next_to_n() -> None:
    """``failed``: the questions (or retrieval steps) whose value could not be computed, per
    metric, in every group; absent when 0, never counted in ``n``."""
    results = [
        _result("t1", "a", answer_f1=0.5, answer_recall=0.5, answer_relevance=0.9),
        _result(
            "t1",
            "b",
            answer_correctness_error="budget exceeded",
            answer_eval_error="budget exceeded",
            answer_relevance=0.7,
            answer_relevance_cost=0.1,
        ),
        _result("t2", "c", answer_correctness_error="invalid judge reply", faithfulness_error="x"),
        _result(
            "t2",
            "d",
            answer_f1=1.0,
            actual_steps=[
                _step(
                    retrieval_answer_recall_error="boom",
                    retrieval_answer_precision_error="boom",
                ),
                _step(retrieval_answer_recall=1.0, retrieval_answer_precision_error="boom"),
                _step(
                    retrieval_answer_recall=0.5,
                    retrieval_answer_precision=1.0,
                    retrieval_answer_f1=2 / 3,
                ),
            ],
        ),
        {"template_id": "t2", "question_id": "e", "status": "error", "error": "agent down"},
    ]
    aggregates = compute_aggregates(results)
    micro, t1, t2 = (
        aggregates["micro"],
        aggregates["per_template"]["t1"],
        aggregates["per_template"]["t2"],
    )
    assert micro["answer_f1"]["n"] == 2 and micro["answer_f1"]["failed"] == 2
    assert micro["answer_recall"] == {**micro["answer_recall"], "n": 1, "failed": 2}
    assert t1["answer_f1"]["failed"] == 1 and t2["answer_f1"]["failed"] == 1
    # a metric no question has a value of, but some failed: shown, with n 0
    assert micro["faithfulness"] == {
        "sum": 0, "mean": None, "median": None, "min": None, "max": None, "n": 0, "failed": 1,
    }  # fmt: skip
    assert "faithfulness" not in t1
    # no failure: no key; a cost is not a value that failed
    assert "failed" not in micro["answer_relevance"]
    assert "failed" not in micro["answer_relevance_cost"]
    assert "failed" not in micro["steps_score"]  # the error response is not a metric failure
    # step metrics: per step; f1 fails when either of its parts did (once)
    assert micro["retrieval_answer_recall"]["failed"] == 1
    assert micro["retrieval_answer_precision"]["failed"] == 2
    assert micro["retrieval_answer_f1"]["failed"] == 2
    assert micro["retrieval_answer_f1"]["n"] == 1
    # macro is untouched: a mean of the template means
    assert aggregates["macro"]["answer_f1"] == {"mean": 0.75, "n": 2}


def test_failed_counts_custom_outputs_with_their_metrics_error(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(CONFIG, encoding="utf-8")
    results = [
        *RESULTS,
        _result("t2", "d", retrieval_recall=None, retrieval_reason=None, retrieval_error="boom"),
    ]
    micro = compute_aggregates(results, path)["micro"]
    assert micro["retrieval_recall"]["n"] == 3 and micro["retrieval_recall"]["failed"] == 1
    assert "retrieval_reason" not in micro  # text outputs stay out, failed or not
    names_only = compute_aggregates(results, ["retrieval_recall"])["micro"]
    assert "failed" not in names_only["retrieval_recall"]  # no config: no metric name to read


def test_failed_is_counted_per_tag() -> None:
    results = [
        _result("t", "a", question_type="list", answer_f1=1.0),
        _result("t", "b", question_type="list", answer_correctness_error="x"),
        _result("t", "c", question_type="count", answer_f1=0.0),
    ]
    per_tag = compute_aggregates(results)["per_tag"]["question_type"]
    assert per_tag["list"]["answer_f1"]["failed"] == 1
    assert "failed" not in per_tag["count"]["answer_f1"]


def test_a_custom_output_that_failed_everywhere_is_shown(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(CONFIG, encoding="utf-8")
    failed = [
        _result("t", q, retrieval_recall=None, retrieval_reason=None, retrieval_error="down")
        for q in "ab"
    ]
    micro = compute_aggregates(failed, path)["micro"]
    assert micro["retrieval_recall"]["n"] == 0 and micro["retrieval_recall"]["failed"] == 2


# ------------------------------------------------------------------ values near the float range

HUGE_INTS = st.integers(-(2**1100), 2**1100) | st.integers(-(2**64), 2**64) | st.integers(-9, 9)
HUGE_FLOATS = st.floats(-1.7e308, 1.7e308, allow_nan=False) | st.sampled_from(
    [1.7e308, -1.7e308, 8.98846567431158e307, 0.5]
)
EXACT_INTS = st.integers(-(2**53), 2**53)


def _nearest(exact: Fraction) -> float | None:
    """The float nearest an exact value; None beyond the float range."""
    try:
        return float(exact)
    except OverflowError:
        return None


def _model(values: list[int | float]) -> dict[str, Any]:
    """The statistics by exact arithmetic, rounded to a float at each step the definition names
    (sum, mean = sum / n, median = (a + b) / 2); None where the value is beyond the float range."""
    n = len(values)
    exact = sum(map(Fraction, values), Fraction(0))
    ordered = sorted(values)
    if all(type(v) is int for v in values):
        total: Any = int(exact)
        mean: Any = total // n if total % n == 0 else _nearest(Fraction(total, n))
    else:
        total = _nearest(exact)
        mean = _nearest(Fraction(total) / n) if total is not None else _nearest(exact / n)
    if n % 2:
        median: Any = ordered[n // 2]
    else:
        low, high = ordered[n // 2 - 1], ordered[n // 2]
        both = Fraction(low) + Fraction(high)
        if type(low) is int and type(high) is int:
            median = _nearest(both / 2)
            if median is None and both.denominator == 1 and both.numerator % 2 == 0:
                median = both.numerator // 2
        else:
            added = _nearest(both)
            median = _nearest(Fraction(added) / 2) if added is not None else _nearest(both / 2)
    # min() and max() give the first of the smallest / largest in the values' order (1 or 1.0,
    # whichever came first), as graphrag-eval's max() of the values does.
    return {"sum": total, "mean": mean, "median": median, "min": min(values), "max": max(values)}


def _assert_finite(data: Any) -> None:
    """No NaN and no infinity anywhere in ``data``."""
    if isinstance(data, float):
        assert math.isfinite(data), data
    elif isinstance(data, dict):
        for value in data.values():
            _assert_finite(value)
    elif isinstance(data, list):
        for value in data:
            _assert_finite(value)


def _check_block(block: dict[str, Any], values: list[int | float]) -> None:
    model = _model(values)
    assert block["n"] == len(values)
    for statistic, expected in model.items():
        assert block[statistic] == expected, (statistic, block[statistic], expected)
        assert type(block[statistic]) is type(expected), statistic


@settings(max_examples=150, deadline=None)
@given(
    st.lists(HUGE_INTS, min_size=1, max_size=6)
    | st.lists(HUGE_FLOATS, min_size=1, max_size=6)
    | st.lists(EXACT_INTS | HUGE_FLOATS, min_size=1, max_size=6)
)
def test_values_near_the_float_range_never_overflow(values: list[int | float]) -> None:
    """Huge ints (any size) and floats up to 1.7e308: no exception, no NaN or infinity, and each
    statistic is the exact one rounded to a float, or null when that is beyond the float range."""
    _check_block(describe(values), values)
    results = [_result(f"t{i % 2}", str(i), answer_f1=v) for i, v in enumerate(values)]
    out = compute_aggregates(results)
    _assert_finite(out)
    # micro takes the values template by template (graphrag-eval concatenates its per-template
    # series), which decides which of two equal values (0 and 0.0) a median or maximum is.
    _check_block(out["micro"]["answer_f1"], values[0::2] + values[1::2])
    means = []
    for template, block in out["per_template"].items():
        _check_block(block["answer_f1"], values[int(template[1]) :: 2])
        if block["answer_f1"]["mean"] is not None:
            means.append(block["answer_f1"]["mean"])
    macro = out["macro"]["answer_f1"]
    assert macro["n"] == len(means)
    assert macro["mean"] == (_model(means)["mean"] if means else None)


@settings(max_examples=60, deadline=None)
@given(st.lists(HUGE_INTS | HUGE_FLOATS, min_size=1, max_size=6))
def test_any_mix_of_huge_values_has_finite_statistics(values: list[int | float]) -> None:
    """Ints of any size among floats near the float range: no exception, no NaN or infinity."""
    stats = describe(values)
    _assert_finite(stats)
    assert stats["min"] == min(values) and stats["max"] == max(values)


def test_a_sum_beyond_the_float_range_is_null_and_the_mean_is_exact() -> None:
    stats = describe([1.7e308, 1.7e308, -1.0e308])
    assert stats["sum"] is None  # 2.4e308: no float holds it
    assert stats["mean"] == float(sum(map(Fraction, [1.7e308, 1.7e308, -1.0e308])) / 3)
    assert describe([1e308, 1.7e308, -1e308])["sum"] == 1.7e308  # fsum overflowed on the way
    assert describe([1.7e308, 1.6e308])["median"] == float(
        (Fraction(1.7e308) + Fraction(1.6e308)) / 2
    )
    big = 10**400
    assert describe([big, big + 2])["median"] == big + 1
    assert describe([big, big + 1])["median"] is None  # big + 0.5: no float, no int
    assert describe([big, big + 1])["mean"] is None
    assert describe([big, big + 2])["mean"] == big + 1


@pytest.mark.parametrize(
    ("output", "empty"),
    [
        (' \n\t\r{"results": {"bindings": []}}', True),  # JSON whitespace before the object
        ('\x0c{"results": {"bindings": []}}', False),  # not JSON whitespace: does not parse
        ('\ufeff{"results": {"bindings": []}}', False),  # a BOM: does not parse
        ('[{"results": {"bindings": []}}]', False),  # an array is no SPARQL result
        ('"{\\"results\\": {\\"bindings\\": []}}"', False),  # a string neither
        ('{"results":{"bindings":[]}}', True),  # compact
        ('{"results": {"bindings": [' + " " * 100 + "]}}", True),  # a long run of spaces
        ('{"results": {"bindings": [\t\r\n]}}', True),
        ('{"results": {"bindings": [\u2028\xa0]}}', False),  # not JSON whitespace: no parse
        ('{"results": {"bindings": [\n  {"x": {"type": "uri", "value": "u"}}\n]}}', False),
        ('{"results": {"bindings":\n[\n]}}', True),  # a layout the text scan does not expect
        ('{"results": {"bindings": ]}}', False),
    ],
)
def test_empty_result_layouts(output: str, empty: bool) -> None:
    from qa_eval.aggregate import empty_result

    assert empty_result(output) is empty


def _empty_result_by_expression(output: str) -> bool:
    """empty_result's scan done by its regular expression alone, with no fast path."""
    import re

    from qa_eval.steps.outputs import OutputParseError, loads

    key = '"bindings"'
    start = output.find(key)
    while start != -1:
        after = re.compile(r"\s*:\s*(\[\s*\])?").match(output, start + len(key))
        if after is not None and (start == 0 or output[start - 1] != "\\"):
            if after.group(1) is None:
                return False
            break
        start = output.find(key, start + 1)
    if start == -1:
        return False
    try:
        data = loads(output)
    except OutputParseError:
        return False
    results = data.get("results") if isinstance(data, dict) else None
    return isinstance(results, dict) and results.get("bindings") == []


_PIECES = ['"bindings"', "\\", " ", " " * 70, ":", ": [", ":[", "[", "]", "{", "}", "\n", '"']


@settings(max_examples=1000, deadline=None)
@given(
    st.sampled_from(["", " ", "{", '{"results": {"bindings"', '{"results": {"bindings": [', "["]),
    st.lists(st.sampled_from(_PIECES), max_size=8),
    st.sampled_from(["", "}}", "]}}"]),
)
def test_empty_result_scan_agrees_with_the_expression(
    prefix: str, pieces: list[str], suffix: str
) -> None:
    from qa_eval.aggregate import empty_result

    output = prefix + "".join(pieces) + suffix
    assert empty_result(output) is _empty_result_by_expression(output)


@pytest.mark.parametrize("after_key", ["", " ", ":", ": ", ":[", ": [", " : [", ":\n[", "\\"])
def test_empty_result_scan_agrees_with_the_expression_on_layouts(after_key: str) -> None:
    import itertools

    from qa_eval.aggregate import empty_result

    fills = ["", " ", "\n", "\t", " " * 70, "\xa0", "x", "{", "]", '"bindings": []']
    for key in ('{"results": {"bindings"', '{"x": "\\"bindings"'):
        for first, second, end in itertools.product(fills, fills, ["", "]}}", "}}", "]"]):
            output = key + after_key + first + second + end
            assert empty_result(output) is _empty_result_by_expression(output), output


@pytest.mark.parametrize("enabled", [True, False])
def test_the_garbage_collector_is_left_as_it_was(enabled: bool) -> None:
    import gc

    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        compute_aggregates([{"template_id": "t", "answer_f1": 0.5}])
        assert gc.isenabled() is enabled
        with pytest.raises(TypeError, match=r"result \[1\] must be a mapping"):
            compute_aggregates([{"template_id": "t"}, 3])  # type: ignore[list-item]
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_results_read_as_they_come_are_aggregated_with_the_collector_on() -> None:
    """A generator of results (e.g. a judged run streamed by iter_evaluation) makes them while
    it is read: the collector stays on for it, so the cycles of its HTTP stack are freed."""
    import gc

    seen = []

    def results() -> Any:
        for value in (0.25, 0.75):
            seen.append(gc.isenabled())
            yield {"template_id": "t", "answer_f1": value}

    was = gc.isenabled()
    gc.enable()
    try:
        aggregates = compute_aggregates(results())
    finally:
        (gc.enable if was else gc.disable)()
    assert seen == [True, True]
    assert aggregates["micro"]["answer_f1"]["mean"] == 0.5


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 4), st.sampled_from([0, -0.0, 0.0, 1, 1.0, 2, 2.0, 10**20, 1e20])),
        min_size=1,
        max_size=40,
    )
)
def test_micro_and_templates_describe_the_values_in_template_order(
    rows: list[tuple[int, int | float]],
) -> None:
    # Equal values of different types (0 and -0.0, 1 and 1.0) make min, max and median depend
    # on the order they are sorted from: a template's in the results' order, micro's template by
    # template (in the order the templates first appear), as ever.
    results = [{"template_id": t, "answer_f1": v} for t, v in rows]
    aggregates = compute_aggregates(results)
    by_template: dict[int, list[int | float]] = {}
    for template, value in rows:
        by_template.setdefault(template, []).append(value)
    for template, values in by_template.items():
        assert repr(aggregates["per_template"][template]["answer_f1"]) == repr(describe(values))
    every = [value for values in by_template.values() for value in values]
    assert repr(aggregates["micro"]["answer_f1"]) == repr(describe(every))


def test_the_maximum_of_tied_values_is_the_first_as_graphrag_eval_gives_it() -> None:
    """graphrag-eval writes max() of a template's values: of 1 and 1.0 the one that came first
    (the sorted list's last, 1.0, was written before, a different YAML value)."""
    for values, first in (
        ([1, 1.0], 1),
        ([1.0, 1], 1.0),
        ([0.0, -0.0], 0.0),
        ([-0.0, 0, 0.0], -0.0),
    ):
        results = [_result("t", str(i), answer_f1=v) for i, v in enumerate(values)]
        block = compute_aggregates(results)["per_template"]["t"]["answer_f1"]
        assert repr(block["max"]) == repr(first), values
        assert repr(describe(values)["max"]) == repr(first), values
