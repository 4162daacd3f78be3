"""The comparison as text: the verdict first, the overall table, the per-template rows that can be
tested, a short note (the full one with explain), and numbers printed by the metric's scale."""

from __future__ import annotations

from typing import Any

import pytest

from qa_eval import compute_aggregates
from qa_eval.cli.console import summary_table
from qa_eval.compare.runs import compare_runs
from qa_eval.compare.table import format_table, verdict_lines
from qa_eval.io.numbers import format_number, scale_of


def result(qid: str, template: str, status: str = "success", **metrics: Any) -> dict[str, Any]:
    return {"template_id": template, "question_id": qid, "status": status, **metrics}


def overall(comparison: dict[str, Any], metric: str) -> dict[str, Any]:
    (entry,) = [m for m in comparison["metrics"] if m["metric"] == metric]
    return entry["overall"]


# ------------------------------------------------------------------------- number formats


@pytest.mark.parametrize(
    ("value", "scale", "signed", "text"),
    [
        (0.340909, "0-1", False, "0.341"),
        (-0.659091, "0-1", True, "-0.659"),
        (0.2, "0-1", True, "+0.200"),
        (-0.0, "0-1", False, "0.000"),
        (3711.5, "tokens", False, "3712"),
        (48.8, "tokens", False, "49"),
        (72.5, "tokens", False, "73"),  # a half rounds away from zero, not to even
        (-554.5, "tokens", True, "-555"),
        (3.481818, "seconds", False, "3.48"),
        (2.675, "seconds", False, "2.68"),
        (11, "count", False, "11"),
        (4.0, "count", False, "4"),
        (2.5, "count", True, "+2.5"),
        (0.0123, "usd", False, "$0.0123"),
        (1.5, "usd", False, "$1.5000"),
        (0.000152, "usd", False, "$0.000152"),
        (-0.00003, "usd", True, "-$0.0000300"),
        (0.0001, "usd", True, "+$0.000100"),
        (0.93734, "percent", False, "93.7"),
        (0.5, None, False, "0.500"),
        (12345.6, None, False, "12346"),
        (None, "0-1", False, "-"),
        (float("nan"), "0-1", False, "nan"),
    ],
)
def test_format_number_by_scale(value: Any, scale: str | None, signed: bool, text: str) -> None:
    assert format_number(value, scale, signed=signed) == text


@pytest.mark.parametrize(
    ("metric", "scale"),
    [
        ("steps_score", "0-1"),
        ("retrieval_answer_recall", "0-1"),
        ("total_tokens", "tokens"),
        ("elapsed_sec", "seconds"),
        ("llm_cost", "usd"),
        ("answer_reference_claims_count", "count"),
        ("ndcg@10", "0-1"),
        ("my_judge_cost", "usd"),
        ("prompt_tokens", "tokens"),
        ("latency", "seconds"),
        ("hops_count", "count"),
        ("conciseness", None),
    ],
)
def test_scale_of_registered_and_custom_keys(metric: str, scale: str | None) -> None:
    assert scale_of(metric) == scale


def test_summary_table_prints_each_metric_by_its_scale() -> None:
    results = [
        result("q0", "t", steps_score=1.0, total_tokens=3700, elapsed_sec=3.25),
        result("q1", "t", steps_score=0.5, total_tokens=3723, elapsed_sec=3.7),
    ]
    lines = summary_table(compute_aggregates(results)).splitlines()
    micro = next(line for line in lines if line.startswith("all questions (micro)"))
    # steps_score 0.75, total_tokens 3711.5, elapsed_sec 3.475
    assert micro.split()[3:] == ["2", "0", "0.750", "3712", "3.48"]


# ------------------------------------------------------------------------------ the verdict


def clear_runs(errors: int = 2) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """40 questions in two templates: B answers 0.3 better, takes 0.5 s longer on each, and got
    an error on the first ``errors`` questions."""
    a, b = [], []
    for i in range(40):
        template = "t1" if i < 20 else "t2"
        f1, sec = 0.4 + 0.01 * (i % 10), 1.0 + 0.1 * (i % 5)
        a.append(result(f"q{i}", template, answer_f1=f1, elapsed_sec=sec))
        if i < errors:
            b.append(result(f"q{i}", template, status="error", elapsed_sec=sec + 0.5))
        else:
            b.append(result(f"q{i}", template, answer_f1=f1 + 0.3, elapsed_sec=sec + 0.5))
    return a, b


def test_verdict_names_what_is_significantly_better_and_worse() -> None:
    a, b = clear_runs()
    comparison = compare_runs(a, b, labels=("base", "cand"))
    f1, sec = overall(comparison, "answer_f1"), overall(comparison, "elapsed_sec")
    assert f1["better"] == "b" and sec["better"] == "a"  # slower is worse
    first, second = verdict_lines(comparison)
    assert first == (
        f"cand (B) against base (A): worse on elapsed_sec {sec['delta']:+.2f} (p adj <0.001); "
        f"better on answer_f1 {f1['delta']:+.3f} (p adj <0.001)"
    )
    marked = sum(
        1
        for entry in comparison["metrics"]
        for row in entry["per_template"]
        if row["p_adjusted"] is not None and row["p_adjusted"] < 0.05
    )
    assert marked == 4
    assert second == "40 paired questions; errors: A 0, B 2; per template: 4 of 4 rows significant"
    # the verdict leads the table and the note under it stays short
    lines = format_table(comparison, width=100).splitlines()
    assert lines[0].startswith("cand (B) against base (A): worse on elapsed_sec")
    header = next(i for i, line in enumerate(lines) if line.startswith("metric "))
    assert lines.index(second) < header
    assert len(lines) - 1 - max(i for i, line in enumerate(lines) if not line) <= 2


def test_verdict_groups_one_shared_p_and_lists_different_ones() -> None:
    a, b = clear_runs(errors=0)
    for i, row in enumerate(b):
        row["total_tokens"] = 900 + i
        a[i]["total_tokens"] = 1000 + i
    comparison = compare_runs(a, b, labels=("base", "cand"), metrics=["answer_f1", "total_tokens"])
    first, _ = verdict_lines(comparison)
    assert first == (
        "cand (B) against base (A): better on answer_f1 +0.300, total_tokens -100 "
        "(p adj <0.001 each)"
    )
    # two metrics on 8 questions: exact p 2/256 each, Holm over the two rows 4/256 = 0.016
    small = [dict(r) for r in a[:8]], [dict(r) for r in b[:8]]
    for row in small[1]:
        row["elapsed_sec"] -= 1.0  # B now faster
    comparison = compare_runs(*small, metrics=["answer_f1", "elapsed_sec"])
    first, _ = verdict_lines(comparison)
    ps = [overall(comparison, m)["p_adjusted"] for m in ("answer_f1", "elapsed_sec")]
    assert ps[0] == ps[1] == pytest.approx(2 * 2 / 256)
    assert first == "B against A: better on answer_f1 +0.300, elapsed_sec -0.50 (p adj 0.016 each)"


def test_verdict_says_so_plainly_when_nothing_is_significant() -> None:
    a = [result(f"q{i}", "t1", answer_f1=0.1 * (i % 10)) for i in range(30)]
    b = [result(f"q{i}", "t1", answer_f1=0.1 * ((i + 5) % 10)) for i in range(30)]
    for i in range(3):  # a metric only 3 questions have: too few pairs to test
        a[i]["faithfulness"], b[i]["faithfulness"] = 0.2, 0.9
    comparison = compare_runs(a, b)
    assert overall(comparison, "answer_f1")["better"] is None
    assert not overall(comparison, "faithfulness")["testable"]
    assert verdict_lines(comparison) == [
        "B against A: no significant difference (p adj >= 0.05 on the metric tested)",
        "30 paired questions; errors: A 0, B 0; 1 of 2 metrics too few to test (n<6)",
    ]
    few = compare_runs(a[:3], b[:3])
    assert verdict_lines(few)[0] == (
        "B against A: nothing could be tested: every metric has too few pairs (n<6)"
    )


def test_a_count_that_changed_is_different_not_better() -> None:
    a = [result(f"q{i}", "t1", answer_reference_claims_count=3) for i in range(10)]
    b = [result(f"q{i}", "t1", answer_reference_claims_count=5) for i in range(10)]
    comparison = compare_runs(a, b)
    assert overall(comparison, "answer_reference_claims_count")["better"] is None
    first, _ = verdict_lines(comparison)
    assert first == "B against A: different on answer_reference_claims_count +2 (p adj 0.002)"
    assert "(=) a count, neither is better" in " ".join(format_table(comparison).split())


# ------------------------------------------------------------- per-template rows and --explain


def mixed_templates() -> dict[str, Any]:
    """t1 has 3 questions (too few to test), t2 has 10 (testable)."""
    a = [result(f"q{i}", "t1" if i < 3 else "t2", answer_f1=0.2) for i in range(13)]
    b = [result(f"q{i}", "t1" if i < 3 else "t2", answer_f1=0.7) for i in range(13)]
    return compare_runs(a, b)


def test_per_template_rows_only_where_testable_unless_asked() -> None:
    comparison = mixed_templates()
    lines = format_table(comparison, width=100).splitlines()
    assert [line.split()[0] for line in lines if line.startswith("  t")] == ["t2"]
    note = " ".join(lines[max(i for i, line in enumerate(lines) if not line) + 1 :])
    assert "--per-template (1 more row)" in note
    assert "n<6: too few pairs to test" in note
    every = format_table(comparison, width=100, per_template=True).splitlines()
    t1 = next(line for line in every if line.startswith("  t1 "))
    assert t1.split()[1] == "3" and "n<6" in t1
    assert "--per-template" not in " ".join(every[-2:])


def test_explain_prints_the_full_method() -> None:
    comparison = mixed_templates()
    short = format_table(comparison, width=100)
    full = format_table(comparison, width=100, explain=True)
    assert short.split("\n\n")[:-1] == full.split("\n\n")[:-1]  # the same verdict and tables
    note, legend = short.split("\n\n")[-1], " ".join(full.split("\n\n")[-1].split())
    assert len(note.splitlines()) <= 2 and "exact up to" not in note
    for words in ("exact up to 16 pairs", "Holm-adjusted within each table", "W/L/T: questions"):
        assert words in legend
    assert "--per-template lists the 1 per-template row too few to test" in legend
