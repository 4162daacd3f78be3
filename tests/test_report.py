"""The HTML report (qa_eval.report): escaping, no network references, metrics, runs, comparison."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from qa_eval.io import write_data
from qa_eval.report import Run, build_report, load_run, script_json, write_report

XSS = "<script>alert(1)</script>"

NEW_METRICS = (
    "faithfulness",
    "context_precision",
    "context_recall",
    "ragas_score",
    "factual_accuracy",
    "semantic_similarity",
    "bertscore_f1",
)


def sample_results(shift: float = 0.0) -> list[dict[str, Any]]:
    """Results of three templates with every kind of key, one error and one hostile answer."""
    sparql = json.dumps(
        {
            "head": {"vars": ["n"]},
            "results": {"bindings": [{"n": {"type": "literal", "value": "T1"}}]},
        }
    )
    empty = '{"head": {"vars": ["n"]}, "results": {"bindings": []}}'
    out: list[dict[str, Any]] = []
    for i in range(6):
        template = ("transformers", "voltage", "documents")[i % 3]
        score = round(min(1.0, max(0.0, 0.35 + 0.12 * i + shift)), 3)
        result: dict[str, Any] = {
            "template_id": template,
            "question_id": f"q{i}",
            "question_text": f"Question {i} about {template}?",
            "reference_answer": f"Reference answer {i}",
            "actual_answer": XSS if i == 1 else f"Actual answer {i} & more",
            "status": "success",
            "reference_steps": [
                [
                    {"name": "iri_discovery", "args": {"query": "OSLO"}, "matches": f"call_{i}_a"},
                    {"name": "sparql_query", "args": {"query": "SELECT ..."}},
                ]
            ],
            "actual_steps": [
                {
                    "name": "autocomplete_search",
                    "id": f"call_{i}_a",
                    "args": {"query": "OSLO"},
                    "status": "success",
                    "output": sparql,
                },
                {
                    "name": "sparql_query",
                    "id": f"call_{i}_b",
                    "args": {"query": "SELECT </script><b>x</b>"},
                    "status": "error" if i == 2 else "success",
                    **({"error": "Parse error <b>bad</b>"} if i == 2 else {"output": empty}),
                },
                {
                    "name": "retrieval",
                    "id": f"call_{i}_r",
                    "args": {"query": "docs", "k": 2},
                    "status": "success",
                    "output": '[{"id": "doc:1", "text": "T1 was commissioned in 1998."}]',
                    "retrieval_answer_recall": score,
                    "retrieval_context_precision": 1.0,
                    "retrieval_answer_precision_error": "judge said <nonsense>",
                },
            ],
            "steps_score": score,
            "answer_recall": score,
            "answer_precision": 1.0,
            "answer_f1": round(2 * score / (1 + score), 3),
            "answer_correctness_reason": f"Claims matched <i>{i}</i>",
            "answer_relevance": 0.9,
            "answer_relevance_cost": 0.0004,
            "faithfulness": score,
            "faithfulness_statements": [
                {"statement": "OSLO T1 exists", "verdict": 1, "reason": "in context"},
                {"statement": XSS, "verdict": 0, "reason": "not <em>supported</em>"},
            ],
            "context_precision": 0.75,
            "context_recall": score,
            "ragas_score": score,
            "factual_accuracy": score,
            "factual_accuracy_grade": "A" if score > 0.6 else "C",
            "semantic_similarity": 0.8,
            "bertscore_f1": 0.85,
            "answer_class": ("CORRECT", "WRONG", "DON'T KNOW")[i % 3],
            "answer_class_reason": "compared with the reference",
            "llm_cost": 0.0012,
            "input_tokens": 1000 + i,
            "output_tokens": 50 + i,
            "total_tokens": 1050 + 2 * i,
            "elapsed_sec": 1.5 + i,
        }
        if i == 4:
            result.update(status="error", error="Agent timed out <after> 60 s", actual_steps=[])
            for key in ("actual_answer", "answer_f1", "faithfulness", "faithfulness_statements"):
                result.pop(key)
        out.append(result)
    return out


SIGNATURE = {
    "qa_eval_version": "0.1.0",
    "judge": {"model": "gpt-<b>judge</b>", "provider": "openai", "temperature": 0.0},
    "embedding": "all-MiniLM-L6-v2",
    "options": {"metrics": {"faithfulness": True, "bertscore": False}},
    "usage": {
        "total": {
            "calls": 42,
            "cached": 2,
            "retries": 1,
            "failures": 0,
            "prompt_tokens": 12345,
            "completion_tokens": 678,
            "cost": 0.0321,
        }
    },
}

COMPARISON = {
    "a": "baseline",
    "b": "candidate",
    "metrics": [
        {
            "metric": "answer_f1",
            "template": "voltage",
            "n": 2,
            "mean_a": 0.5,
            "mean_b": 0.62,
            "delta": 0.12,
            "ci": [-0.05, 0.29],
            "p_value": 0.21,
            "wins": 1,
            "losses": 0,
            "ties": 1,
        },
        {
            "metric": "faithfulness",
            "template": None,
            "n": 5,
            "mean_a": 0.7,
            "mean_b": 0.6,
            "delta": -0.1,
            "ci": [-0.2, 0.0],
            "p_value": 0.04,
            "wins": 0,
            "losses": 3,
            "ties": 2,
            "note": "<img src=x onerror=alert(2)>",
        },
    ],
}


def _outside_plotly(page: str) -> str:
    """The page without the inlined plotly.js (whose code names URLs it never loads here)."""
    start = page.index('<script id="plotly-js">')
    end = page.index("</script>", start)
    return page[:start] + page[end:]


def _data(page: str) -> dict[str, Any]:
    match = re.search(
        r'<script type="application/json" id="qa-report-data">(.*?)</script>', page, re.S
    )
    assert match
    return json.loads(match.group(1))


@pytest.fixture(scope="module")
def page() -> str:
    return build_report([Run("baseline", sample_results(), SIGNATURE)], COMPARISON, title="T <1>")


def test_hostile_text_is_escaped(page: str) -> None:
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<b>bad</b>" not in page and "&lt;b&gt;bad&lt;/b&gt;" in page
    assert "<img src=x" not in page
    assert "<title>T &lt;1&gt;</title>" in page
    # Exactly three script elements: the data, plotly.js and ours; none closed early.
    assert page.count("<script") == 3
    assert page.count("</script>") == 3


def test_embedded_json_cannot_break_out() -> None:
    text = script_json({"x": "</script><!-- & \u2028\u2029 >"})
    for bad in ("<", ">", "&", "\u2028", "\u2029"):
        assert bad not in text
    assert json.loads(text) == {"x": "</script><!-- & \u2028\u2029 >"}


def test_no_network_references(page: str) -> None:
    outside = _outside_plotly(page)
    assert not re.search(r"\b(src|href|action|srcset)\s*=\s*[\"']?\s*(https?:)?//", outside, re.I)
    assert not re.search(r"<(link|img|iframe|object|embed)\b", outside, re.I)
    assert "@import" not in outside and "url(" not in outside
    assert "http://" not in outside and "https://" not in outside
    # plotly.js is inlined exactly once
    from plotly.offline import get_plotlyjs

    assert page.count(get_plotlyjs()[:200]) == 1


def test_every_metric_appears(page: str) -> None:
    for metric in (
        "steps_score",
        "answer_recall",
        "answer_precision",
        "answer_f1",
        "answer_relevance",
        "answer_relevance_cost",
        "llm_cost",
        "input_tokens",
        "output_tokens",
        "total_tokens",
        "elapsed_sec",
        "retrieval_answer_recall",
        "retrieval_context_precision",
        *NEW_METRICS,
    ):
        assert f"<th>{metric}</th>" in page, metric
        assert f"{metric}: mean per template" in page, metric
    titles = [f["layout"]["title"]["text"] for f in _data(page)["figures"].values()]
    assert "faithfulness: distribution" in titles
    assert "answer_class: count per template" in titles
    assert "factual_accuracy_grade: count per template" in titles


def test_sections_and_details(page: str) -> None:
    for section in ("signature", "totals", "templates", "distributions", "labels", "steps"):
        assert f'<section id="{section}">' in page
    assert '<section id="comparison">' in page and '<section id="questions">' in page
    # judge usage from the signature
    assert "judge calls" in page and ">42<" in page and "12,345" in page
    assert "gpt-&lt;b&gt;judge&lt;/b&gt;" in page
    # claims and verdicts, reasons, errors, matched and unmatched steps
    assert "faithfulness_statements" in page and "OSLO T1 exists" in page
    assert "Claims matched &lt;i&gt;0&lt;/i&gt;" in page
    assert "Agent timed out &lt;after&gt; 60 s" in page
    assert "✓ matched" in page and "✗ not matched" in page
    # the step table counts failed and empty results
    steps = page[page.index('<section id="steps">') : page.index('<section id="comparison">')]
    assert "sparql_query" in steps and "autocomplete_search" in steps


def test_totals_and_template_means() -> None:
    page = build_report([("only", sample_results(), None)])
    totals = page[page.index('<section id="totals">') : page.index('<section id="templates">')]
    assert re.search(r"questions</td><td><span class=\"num\">6<", totals)
    assert re.search(r"error answers</td><td><span class=\"num\">1<", totals)
    assert "judge calls" not in totals  # no signature, no judge usage
    # bertscore_f1 is 0.85 everywhere: its mean is shown
    assert "0.85</span>" in page


def test_multiple_runs() -> None:
    runs = [
        Run("baseline", sample_results(), SIGNATURE),
        Run("candidate <v2>", sample_results(shift=0.2), None),
    ]
    page = build_report(runs)
    assert "candidate &lt;v2&gt;" in page and "candidate <v2>" not in page
    figures = _data(page)["figures"]
    bars = [
        f
        for f in figures.values()
        if f["layout"]["title"]["text"] == "answer_f1: mean per template"
    ]
    assert len(bars) == 1
    assert [t["name"] for t in bars[0]["data"]] == ["baseline", "candidate &lt;v2&gt;"]
    assert '<select id="q-run">' in page
    assert (
        page.count('data-run="baseline"') == 6
        and page.count('data-run="candidate &lt;v2&gt;"') == 6
    )


def test_comparison_section(page: str) -> None:
    section = page[page.index('<section id="comparison">') : page.index('<section id="questions">')]
    for column in ("metric", "template", "mean_a", "mean_b", "delta", "ci", "p_value", "wins"):
        assert f"<th>{column}</th>" in section
    assert "[-0.05, 0.29]" in section
    assert "&lt;img src=x onerror=alert(2)&gt;" in section
    assert "baseline" in section and "candidate" in section
    titles = [f["layout"]["title"]["text"] for f in _data(page)["figures"].values()]
    assert any(t.startswith("difference b") for t in titles)
    assert '<section id="comparison">' not in build_report([("x", sample_results(), None)])


def test_empty_results() -> None:
    page = build_report([Run("empty", [], None)])
    assert "No questions." in page
    assert "No numeric metric in the results." in page
    assert _data(page)["figures"] == {}
    assert build_report([]).startswith("<!DOCTYPE html>")


def test_missing_signature(tmp_path: Path) -> None:
    results = tmp_path / "run1.yaml"
    write_data(results, sample_results())
    run = load_run(results)
    assert run.label == "run1" and run.signature is None
    out = write_report([results], tmp_path / "report.html")
    page = out.read_text(encoding="utf-8")
    assert "No signature" in page


def test_write_report_reads_signature_beside(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        write_data(tmp_path / name / "results.jsonl", sample_results())
    write_data(tmp_path / "a" / "results.signature.yaml", SIGNATURE)
    paths = [tmp_path / "a" / "results.jsonl", tmp_path / "b" / "results.jsonl"]
    page = write_report(paths, tmp_path / "r.html", comparison=COMPARISON).read_text("utf-8")
    # the same file names: labelled by path
    assert _e_path(paths[0]) in page and _e_path(paths[1]) in page
    assert "judge calls" in page and "No signature" in page
    with pytest.raises(ValueError):
        write_report(paths, tmp_path / "r.html", labels=["one"])


def _e_path(path: Path) -> str:
    import html

    return html.escape(str(path))


def test_results_from_run_evaluation_keep_their_signature() -> None:
    from qa_eval import run_evaluation
    from qa_eval.io import read_reference, read_responses

    examples = Path(__file__).parent.parent / "examples"
    results = run_evaluation(
        read_reference(examples / "reference.yaml"), read_responses(examples / "responses.jsonl")
    )
    run = Run.of("examples", results)
    assert run.signature is results.signature
    page = build_report([run])
    assert "qa-eval version" in page and "transformers_in_substation" in page


def test_report_size_is_reasonable(page: str) -> None:
    assert len(_outside_plotly(page)) < 600_000


def test_the_judge_prompt_cache_hit_share_is_shown() -> None:
    usage = {**SIGNATURE["usage"]["total"], "cached_prompt_tokens": 5000}  # type: ignore[index]
    usage["cached_prompt_share"] = 5000 / usage["prompt_tokens"]
    signature = {**SIGNATURE, "usage": {"total": usage}}
    page = build_report([Run("cached", sample_results(), signature)])
    totals = page[page.index('<section id="totals">') : page.index('<section id="templates">')]
    assert "judge prompt tokens cached by the provider" in totals and ">5000<" in totals
    assert "judge prompt cache hit share" in totals and "0.405" in totals
    # a run without the counts (an older signature) shows neither row
    assert "cache hit share" not in build_report([Run("old", sample_results(), SIGNATURE)])
