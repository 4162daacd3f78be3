"""The HTML report (qa_eval.report): built from the aggregates and the comparison, leads with the
verdict, escapes every text field, loads nothing, stays small."""

from __future__ import annotations

import base64
import gzip
import json
import random
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from qa_eval.aggregate import compute_aggregates
from qa_eval.compare.runs import compare_runs
from qa_eval.compare.table import report_rows
from qa_eval.errors import InputError
from qa_eval.io.files import read_results, write_data
from qa_eval.judge.repeats import merge_repeats
from qa_eval.report import Run, build_report, load_run, write_report
from qa_eval.report.drill import drill_down
from qa_eval.report.figures import histogram, template_bars
from qa_eval.report.model import metric_list, summarize_run, verdict_of
from qa_eval.report.render import num
from qa_eval.report.text import format_query

XSS = "<script>alert(1)</script>"
ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples" / "powergrid"


def sparql(vars_: list[str], rows: list[list[str]]) -> str:
    """A SPARQL JSON result of IRIs (``urn:`` ...) and literals."""
    bindings = [
        {
            v: {"type": "uri", "value": c}
            if c.startswith("urn:")
            else {"type": "literal", "value": c}
            for v, c in zip(vars_, row)
        }
        for row in rows
    ]
    return json.dumps({"head": {"vars": vars_}, "results": {"bindings": bindings}})


def sample_results(shift: float = 0.0) -> list[dict[str, Any]]:
    """Six questions of three templates with every kind of key, one error, one hostile answer."""
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
                    {
                        "name": "sparql_query",
                        "args": {"query": "SELECT ?t ?mva WHERE { ... }"},
                        "output": sparql(["t", "mva"], [["urn:T1", "1000"], ["urn:T3", "450"]]),
                        "required_columns": ["t"],
                        **({"matches": f"call_{i}_b"} if score >= 0.6 else {}),
                        **({} if score >= 0.6 else {"mismatch": "missing row urn:T3"}),
                    },
                ]
            ],
            "actual_steps": [
                {
                    "name": "sparql_query",
                    "id": f"call_{i}_b",
                    "args": {"query": "SELECT ?x ?y WHERE { ... }"},
                    "status": "error" if i == 2 else "success",
                    **(
                        {"error": "Parse error <b>bad</b>"}
                        if i == 2
                        else {
                            "output": sparql(
                                ["x", "y"],
                                [["urn:T1", "1000"]]
                                + ([["urn:T3", "450"]] if score >= 0.6 else []),
                            )
                        }
                    ),
                },
                {
                    "name": "retrieval",
                    "id": f"call_{i}_r",
                    "args": {"query": "docs", "k": 2},
                    "status": "success",
                    "output": '[{"id": "doc:1", "text": "T1 was commissioned in 1998."}]',
                    "retrieval_answer_recall": score,
                    "retrieval_context_precision": 1.0,
                },
            ],
            "steps_score": 1.0 if score >= 0.6 else 0.0,
            "answer_recall": score,
            "answer_f1": round(2 * score / (1 + score), 3),
            "answer_correctness_reason": f"Claims matched <i>{i}</i>",
            "faithfulness": score,
            "faithfulness_statements": [
                {"statement": "OSLO T1 exists", "verdict": 1, "reason": "in context"},
                {"statement": XSS, "verdict": 0, "reason": "not <em>supported</em>"},
            ],
            "answer_class": ("CORRECT", "WRONG", "DON'T KNOW")[i % 3],
            "llm_cost": 0.0012,
            "input_tokens": 1000 + i,
            "output_tokens": 50 + i,
            "total_tokens": 1050 + 2 * i,
            "elapsed_sec": 1.5 + i - 4 * shift,
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
    "usage": {"total": {"calls": 42, "cached": 2, "prompt_tokens": 12345, "cost": 0.0321}},
}


# ------------------------------------------------------------------ reading a page


def drills(page: str) -> list[str]:
    """The drill-down HTML of every question (the page keeps it compressed)."""
    match = re.search(
        r'<script type="application/octet-stream" id="qa-drills">(.*?)</script>', page
    )
    if match is None:
        return []
    return json.loads(gzip.decompress(base64.b64decode(match.group(1))))


class Structure(HTMLParser):
    """Tags, attributes and text of an HTML document."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


ALLOWED_TAGS = {
    "html", "head", "meta", "title", "style", "body", "header", "nav", "main", "section", "div",
    "span", "a", "h1", "h2", "h3", "h4", "p", "b", "i", "code", "pre", "table", "thead", "tbody",
    "tr", "th", "td", "details", "summary", "dl", "dt", "dd", "ol", "li", "label", "input",
    "select", "option", "button", "script", "figure", "figcaption", "svg", "line", "rect", "text",
}  # fmt: skip


def assert_safe(html: str) -> Structure:
    """Only the report's own elements, no event handler, no link off the page, no image."""
    structure = Structure(html)
    for tag, attrs in structure.tags:
        assert tag in ALLOWED_TAGS, (tag, attrs)
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name)
            if name in ("href", "src", "action", "xlink:href"):
                assert (value or "").startswith("#"), (tag, name, value)
    return structure


def sections(page: str) -> list[str]:
    return re.findall(r'<section id="([\w-]+)"', page)


@pytest.fixture(scope="module")
def two_runs() -> str:
    return build_report(
        [Run("baseline", sample_results(), SIGNATURE), Run("candidate", sample_results(0.2))],
        title="T <1>",
    )


# ------------------------------------------------------------------ the numbers


def test_numbers_are_the_aggregates_and_the_comparison() -> None:
    a, b = sample_results(), sample_results(0.2)
    run = summarize_run("a", a, None)
    aggregates = compute_aggregates(a, extra_metrics=["answer_correctness_reason"])
    for metric, stat in run.micro.stats.items():
        assert stat.mean == aggregates["micro"][metric]["mean"], metric
        assert stat.n == aggregates["micro"][metric]["n"], metric
    assert run.macro["steps_score"] == (
        aggregates["macro"]["steps_score"]["mean"],
        aggregates["macro"]["steps_score"]["n"],
    )
    assert run.errors == aggregates["micro"]["number_of_error_samples"] == 1
    # steps: aggregates' counters; labels: its counts
    sparql_steps = next(s for s in run.steps if s.name == "sparql_query")
    assert sparql_steps.total == aggregates["micro"]["steps"]["total"]["sparql_query"]
    assert sparql_steps.errors == aggregates["micro"]["steps"]["errors"]["sparql_query"] == 1
    assert run.labels["answer_class"] == aggregates["micro"]["answer_class"]["counts"]
    compared = compare_runs(a, b, labels=("a", "b"))
    verdict = verdict_of(compared)
    for entry, row in zip(compared["metrics"], verdict.overall):
        assert row.metric == entry["metric"] and row.direction == entry["direction"]
        assert row.p_adjusted == entry["overall"]["p_adjusted"]
        assert row.delta == entry["overall"]["delta"]
        assert row.outcome == {"b": "better", "a": "worse"}.get(
            entry["overall"]["better"], "same" if entry["overall"]["testable"] else "untestable"
        )
    # compare.report_rows (the flat form) reads the same
    flat = verdict_of(report_rows(compared))
    assert [(r.metric, r.p_adjusted, r.better) for r in flat.overall] == [
        (r.metric, r.p_adjusted, r.better) for r in verdict.overall
    ]


def test_headline_shows_micro_macro_and_errors(two_runs: str) -> None:
    head = two_runs[two_runs.index('id="headline"') : two_runs.index('id="comparison"')]
    aggregates = compute_aggregates(sample_results())
    micro = aggregates["micro"]["answer_recall"]["mean"]
    macro = aggregates["macro"]["answer_recall"]["mean"]
    row = re.search(r"<tr><td>answer_recall</td>(.*?)</tr>", head)
    assert row is not None
    cells = re.findall(r">([^<>]*)</td>", row.group(1))
    assert cells[:2] == [num(micro), num(macro)] == ["0.650", "0.650"]
    assert re.search(r"<td>errors</td><td colspan=\"2\" class=\"down\">1</td>", head)
    assert "judge calls" in head and "12,345" in head  # from the signature's usage


def test_the_verdict_comes_first_and_the_signature_folds_away(two_runs: str) -> None:
    assert sections(two_runs)[0] == "summary"
    assert sections(two_runs)[-1] == "signature"
    summary = two_runs[: two_runs.index('<section id="comparison-details">')]
    assert "Verdict: candidate against baseline" in summary
    assert "qa-eval version" not in summary and "gpt-" not in summary
    signature = two_runs[two_runs.index('<section id="signature">') :]
    assert "<details><summary>baseline: qa-eval version 0.1.0" in signature
    assert "gpt-&lt;b&gt;judge&lt;/b&gt;" in signature


def test_colours_follow_each_metric_direction() -> None:
    """elapsed_sec falls in B (lower is better): green; answer_recall rises: green; a
    higher-is-better metric that falls: red."""
    a, b = sample_results(), sample_results(0.2)
    for result in b:
        result["faithfulness"] = max(0.0, float(result.get("faithfulness", 0.5)) - 0.3)
    page = build_report([Run("a", a), Run("b", b)])
    verdict = page[page.index('id="comparison"') : page.index('<section id="comparison-details">')]

    def delta_class(metric: str) -> str:
        found = re.search(
            rf"<tr><td>{metric}(?: <span[^>]*>↓</span>)?</td>.*?<td class=\"([^\"]*)\">", verdict
        )
        assert found is not None, metric
        return found.group(1)

    assert delta_class("elapsed_sec").startswith("up")  # a fall, lower is better
    assert delta_class("answer_recall").startswith("up")
    assert delta_class("faithfulness").startswith("down")


def test_questions_that_got_worse_link_to_their_drill_down() -> None:
    a, b = sample_results(), sample_results()
    b[3]["steps_score"] = 0.0
    b[5].update(status="error", error="boom")
    page = build_report([Run("a", a), Run("b", b)])
    worse = page[
        page.index('<div class="worse">') : page.index('<section id="comparison-details">')
    ]
    links = re.findall(r'<a href="#(q-\d+)">([^<]*)</a>', worse)
    assert {qid for _, qid in links} == {"q3", "q5"}
    assert links[0][1] == "q5"  # a new error first
    for anchor, qid in links:
        assert re.search(rf'<details data-i="\d+" class="q worse[^"]*" id="{anchor}" ', page), qid
    assert "steps_score 1 → <span" in worse
    # the drill-down list starts with them too
    order = re.findall(
        r'<details data-i="\d+" class="q[^"]*" id="q-\d+" data-rank="\d+" data-qid="([^"]*)"', page
    )
    assert order[:2] == ["q5", "q3"]


def test_no_rows_for_empty_metrics_and_one_scale_per_metric() -> None:
    results = sample_results()
    for result in results:
        for key in ("input_tokens", "output_tokens", "total_tokens", "elapsed_sec"):
            result.pop(key, None)
    page = build_report([Run("x", results)])
    assert "input_tokens" not in page and "elapsed_sec" not in page  # n = 0 everywhere
    run = summarize_run("x", sample_results(), None)
    metrics = {m.name: m for m in metric_list([run], None)}
    score = template_bars(metrics["steps_score"], [run])
    tokens = template_bars(metrics["input_tokens"], [run])
    assert score is not None and tokens is not None
    ticks = [t.text for t in score.texts if t.cls == "tick"]
    assert ticks == ["0", "0.25", "0.5", "0.75", "1"]
    token_ticks = [t.text for t in tokens.texts if t.cls == "tick"]
    assert token_ticks[-1] != "1" and "steps_score" not in tokens.title


def test_histograms_of_several_runs_share_their_bins() -> None:
    a = [
        {"question_id": f"q{i}", "template_id": "t", "input_tokens": v}
        for i, v in enumerate([1, 2, 3])
    ]
    b = [
        {"question_id": f"q{i}", "template_id": "t", "input_tokens": v}
        for i, v in enumerate([80, 90, 100])
    ]
    runs = [summarize_run("a", a, None), summarize_run("b", b, None)]
    metric = next(m for m in metric_list(runs, None) if m.name == "input_tokens")
    chart = histogram(metric, runs)
    assert chart is not None
    bins = {r.title.split(" in ")[1] for r in chart.rects}
    a_bins = {r.title.split(" in ")[1] for r in chart.rects if r.title.startswith("a:")}
    b_bins = {r.title.split(" in ")[1] for r in chart.rects if r.title.startswith("b:")}
    assert a_bins and b_bins and a_bins | b_bins == bins
    widths = {r.w for r in chart.rects}
    assert len(widths) == 1  # the same bin width for both runs
    assert sum(int(r.title.split(": ")[1].split(" ")[0]) for r in chart.rects) == 6


def test_drill_down_marks_missing_and_extra_rows_and_shows_the_mismatch() -> None:
    reference = sparql(["t", "mva"], [["urn:T1", "1000"], ["urn:T2", "1000"], ["urn:T3", "450.5"]])
    actual = sparql(["x", "rating"], [["urn:T2", "1000"], ["urn:T1", "1000"], ["urn:T9", "1"]])
    result = {
        "question_id": "q",
        "question_text": "Which transformers?",
        "reference_steps": [
            [
                {
                    "name": "sparql_query",
                    "args": {"query": "PREFIX r: <urn:>\nSELECT ?t ?mva WHERE {}"},
                    "output": reference,
                    "required_columns": ["t"],
                    "mismatch": "missing row T3",
                }
            ]
        ],
        "actual_steps": [
            {"name": "sparql_query", "id": "c1", "args": {"query": "SELECT ?x"}, "output": actual}
        ],
    }
    drill = drill_down([result])
    (block,) = drill.blocks
    (run_step,) = block.runs
    assert run_step is not None and not run_step.matched and run_step.closest
    assert run_step.mismatch == "missing row T3"
    table = run_step.call.table if run_step.call else None
    assert table is not None and (table.missing, table.extra) == (1, 1)
    assert table.keys == ("t", "")  # ?x is compared as ?t
    marks = [(row.mark, row.cells[0].text) for row in table.rows]
    assert ("missing", "r:T3") in marks and ("extra", "r:T9") in marks
    missing = next(row for row in table.rows if row.mark == "missing")
    assert missing.cells[1].text == "450.5"  # the optional column, paired for display
    page = build_report([Run("x", [result])])
    (html,) = drills(page)
    assert '<div class="why">missing row T3</div>' in html
    assert '<tr class="missing">' in html and '<tr class="extra">' in html
    assert '<pre class="query">PREFIX r: &lt;urn:&gt;\nSELECT ?t ?mva WHERE {}</pre>' in html


def test_one_line_queries_are_laid_out() -> None:
    query = (
        'PREFIX g: <urn:g#> SELECT ?t WHERE { ?t a g:T ; g:label "a . { b" . '
        "FILTER(?x < 2.5) OPTIONAL { ?t g:y ?y . } } LIMIT 5"
    )
    assert format_query(query) == "\n".join(
        [
            "PREFIX g: <urn:g#>",
            "SELECT ?t WHERE {",
            "  ?t a g:T ;",
            '    g:label "a . { b" .',
            "  FILTER(?x < 2.5)",
            "  OPTIONAL {",
            "    ?t g:y ?y .",
            "  }",
            "}",
            "LIMIT 5",
        ]
    )
    written = "SELECT ?t\nWHERE { ?t ?p ?o . ?o ?q ?r . ?r ?s ?u . ?u ?v ?w }"
    assert format_query(written) == written  # the author's layout is kept


def test_two_runs_side_by_side_in_the_drill_down(two_runs: str) -> None:
    html = drills(two_runs)[0]
    assert html.count('<div class="rl"><i class="sw c0"></i>baseline</div>') >= 2
    assert html.count('<div class="rl"><i class="sw c1"></i>candidate</div>') >= 2
    assert '<div class="col ref"><div class="rl">reference</div>' in html


def test_max_questions_lists_the_worst_and_says_so() -> None:
    page = build_report([Run("x", sample_results())], max_questions=2)
    assert len(drills(page)) == 2 == page.count('<details data-i="')
    assert "The 2 worst of 6 questions" in page
    first = re.search(r'data-qid="([^"]*)"', page)
    assert first is not None and first.group(1) == "q4"  # the error first
    assert len(drills(build_report([Run("x", sample_results())], max_questions=None))) == 6
    with pytest.raises(ValueError):
        build_report([Run("x", [])], max_questions=-1)


def test_comparison_argument() -> None:
    a, b = sample_results(), sample_results(0.2)
    runs = [Run("a", a), Run("b", b)]
    computed = build_report(runs)
    given = build_report(runs, compare_runs(a, b, labels=("a", "b")))
    strip = re.compile(r"generated [^<]*UTC")
    assert strip.sub("", computed) == strip.sub("", given)
    assert 'id="comparison"' in build_report(runs, report_rows(compare_runs(a, b)))
    assert 'id="comparison"' not in build_report(runs, False)
    assert 'id="comparison"' not in build_report([runs[0]])
    other = [{**r, "question_id": f"other-{r['question_id']}"} for r in b]
    page = build_report([Run("a", a), Run("b", other)])
    assert "No comparison" in page and "no question is in both runs" in page
    with pytest.raises(TypeError):
        build_report(runs, comparison=True)


# ------------------------------------------------------------------ safety


HOSTILE = "<img src=x onerror=alert({n})>"


def hostile_runs() -> tuple[list[Run], list[str]]:
    """Two runs with a distinct hostile text in every text field the report shows."""
    marks: list[str] = []

    def h(field: str) -> str:
        text = f"{field}:" + HOSTILE.format(n=len(marks))
        marks.append(text)
        return text

    questions = [
        {
            "template_id": h("template id") if i == 0 else "t",
            "question_id": h("question id") if i == 0 else f"q{i}",
            "question_text": h("question text"),
            "reference_answer": h("reference answer"),
            "query": h("reference query"),
            "arg name": h("arg name"),
            "arg": h("arg"),
            "column": h("column"),
            "cell": h("reference cell"),
            "name": h("reference step name"),
        }
        for i in range(3)
    ]

    def run(shift: float) -> list[dict[str, Any]]:
        out = []
        for i, q in enumerate(questions):
            out.append(
                {
                    "template_id": q["template_id"],
                    "question_id": q["question_id"],
                    "question_text": q["question_text"],
                    "reference_answer": q["reference_answer"],
                    "actual_answer": h("actual answer"),
                    "status": "error" if i == 2 else "success",
                    **({"error": h("error message")} if i == 2 else {}),
                    "reference_steps": [
                        [
                            {
                                "name": q["name"],
                                "args": {"query": q["query"], q["arg name"]: q["arg"]},
                                "output": json.dumps(
                                    {"head": {"vars": [q["column"]]}, "results": {"bindings": []}}
                                ),
                                "mismatch": h("mismatch"),
                            },
                            {
                                "name": "sparql_query",
                                "args": {"query": "SELECT ?v"},
                                "output": sparql(["v"], [[q["cell"]]]),
                                "matches": h("matched id"),
                            },
                        ]
                    ],
                    "actual_steps": [
                        {
                            "name": h("step name"),
                            "id": h("step id"),
                            "args": {"query": h("actual query")},
                            "status": h("step status"),
                            "error": h("step error"),
                        },
                        {
                            "name": "retrieval",
                            "id": "r1",
                            "args": {"k": 1},
                            "output": json.dumps([{"id": h("doc id"), "text": h("doc text")}]),
                            "retrieval_answer_recall": 0.5 + shift,
                            "retrieval_answer_recall_error": h("step metric error"),
                            h("step metric name"): 0.5,
                        },
                        {"name": "text_tool", "id": "t1", "output": h("text output")},
                    ],
                    "steps_score": 0.5 + shift * i,
                    h("metric name"): 0.25 + shift,
                    "answer_class": h("label"),
                    "answer_correctness_reason": h("judge reason"),
                    "faithfulness_error": h("metric error"),
                    "faithfulness_statements": [
                        {"statement": h("statement"), "verdict": 0, h("list column"): 1}
                    ],
                    "notes_list": [h("list item")],
                    "extra_text": h("other value"),
                }
            )
        return out

    signature = {
        "qa_eval_version": h("version"),
        "judge": {"model": h("judge model"), "provider": h("provider")},
        "embedding": h("embedding"),
        "llm_metrics": h("signature note"),
        "options": {"metrics": {h("enabled metric"): True}},
        "usage": {"total": {"calls": 3}},
        "reference": {"fingerprint": h("reference fingerprint")},
        h("signature key"): h("signature value"),
    }
    runs = [Run(h("run label"), run(0.0), signature), Run(h("other run label"), run(0.3))]
    return runs, marks


def test_every_text_field_stays_text() -> None:
    runs, marks = hostile_runs()
    comparison = compare_runs(
        runs[0].results, runs[1].results, labels=(runs[0].label, runs[1].label)
    )
    marks.append(HOSTILE.format(n="method"))
    comparison["method"]["note"] = marks[-1]
    page = build_report(runs, comparison, title=h_title())
    assert len({m.split(":<img")[0] for m in marks}) == 44
    texts = ["".join(assert_safe(page).text)]
    for html in drills(page):
        texts.append("".join(assert_safe(html).text))
    shown = "\n".join(texts)
    missing = [m for m in set(marks) if m not in shown]
    assert missing == [], missing
    assert "<img" not in page and "<img" not in "".join(drills(page))
    scripts = [attrs for tag, attrs in Structure(page).tags if tag == "script"]
    assert scripts == [{"type": "application/octet-stream", "id": "qa-drills"}, {}]


def h_title() -> str:
    return "T </title><script>alert(9)</script>"


def test_templates_never_turn_escaping_off() -> None:
    folder = ROOT / "src" / "qa_eval" / "report"
    for path in (folder / "templates").iterdir():
        text = path.read_text(encoding="utf-8")
        assert "|safe" not in text.replace(" ", "") and "autoescape" not in text, path.name
    for path in folder.glob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "Markup" not in text and "markupsafe" not in text, path.name
        if path.name == "render.py":
            assert "autoescape=True" in text


def test_no_network_references(two_runs: str) -> None:
    for html in [two_runs, *drills(two_runs)]:
        assert not re.search(r"\b(src|href|action|srcset)\s*=\s*[\"']?\s*(https?:)?//", html, re.I)
        assert not re.search(r"<(link|img|iframe|object|embed|base)\b", html, re.I)
        assert "@import" not in html and "url(" not in html
        assert "http://" not in html.replace("http://www.w3.org/2000/svg", "")
        assert "https://" not in html
    assert "default-src 'none'" in two_runs and "unsafe-eval" not in two_runs


def test_api_keys_are_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    key = "sk-test-0123456789abcdefghij"
    monkeypatch.setenv("OPENAI_API_KEY", "secret-from-the-environment")
    results = sample_results()
    results[0]["actual_answer"] = f"my key is {key}"
    results[1]["error"] = (
        "401 from https://user:hunter22@example.org, key secret-from-the-environment"
    )
    page = build_report([Run("x", results)])
    everything = page + "".join(drills(page))
    assert key not in everything and "hunter22" not in everything
    assert "secret-from-the-environment" not in everything
    assert "[redacted]" in everything


# ------------------------------------------------------------------ files, sizes, API


def test_empty_results() -> None:
    page = build_report([Run("empty", [], None)])
    assert "No questions." in page and "No numeric metric in the results." in page
    assert drills(page) == []
    assert build_report([]).startswith("<!DOCTYPE html>")


def test_missing_signature_and_labels_by_path(tmp_path: Path) -> None:
    results = tmp_path / "run1.yaml"
    write_data(results, sample_results())
    run = load_run(results)
    assert run.label == "run1" and run.signature is None
    page = write_report([results], tmp_path / "report.html").read_text(encoding="utf-8")
    assert "no signature" in page
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        write_data(tmp_path / name / "results.jsonl", sample_results())
    write_data(tmp_path / "a" / "results.signature.yaml", SIGNATURE)
    paths = [tmp_path / "a" / "results.jsonl", tmp_path / "b" / "results.jsonl"]
    page = write_report(paths, tmp_path / "r.html").read_text("utf-8")
    assert str(paths[0]) in page and str(paths[1]) in page  # the same names: labelled by path
    assert "judge calls" in page
    with pytest.raises(ValueError):
        write_report(paths, tmp_path / "r.html", labels=["one"])


def test_results_from_run_evaluation_keep_their_signature() -> None:
    from qa_eval import run_evaluation
    from qa_eval.io.files import read_reference, read_responses

    examples = ROOT / "examples"
    results = run_evaluation(
        read_reference(examples / "reference.yaml"), read_responses(examples / "responses.jsonl")
    )
    run = Run.of("examples", results)
    assert run.signature is results.signature
    page = build_report([run])
    assert "qa-eval version" in page and "transformers_in_substation" in page


def test_the_demo_report_is_small_and_explains_the_missing_row(tmp_path: Path) -> None:
    from qa_eval.cli import main

    assert (
        main(
            [
                "evaluate",
                str(DEMO / "reference.yaml"),
                "--system",
                f"good={DEMO / 'responses-good.jsonl'}",
                "--system",
                f"flawed={DEMO / 'responses-flawed.jsonl'}",
                "-o",
                str(tmp_path / "results.yaml"),
                "-q",
            ]
        )
        == 0
    )
    runs = [str(tmp_path / "results.good.yaml"), str(tmp_path / "results.flawed.yaml")]
    out = tmp_path / "report.html"
    assert main(["report", *runs, "-o", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    assert out.stat().st_size < 1_000_000
    assert "Significantly worse:</span> <b>steps_score</b>" in page
    oslo = next(d for d in drills(page) if "substation OSLO, and what" in d)
    assert re.search(
        r'<tr class="missing"><td class="mk">missing</td><td[^>]*>r:tr-OSLO-T3</td>', oslo
    )
    flawed = read_results(runs[1])
    assert len(drills(page)) == len(flawed)
    assert main(["report", *runs, "-o", str(out), "--max-questions", "3"]) == 0
    assert len(drills(out.read_text(encoding="utf-8"))) == 3
    assert main(["report", *runs, "-o", str(out), "--max-questions", "-1"]) == 2


# ------------------------------------------------------------------ any input


def _strategies() -> Any:
    from hypothesis import strategies as st

    text = st.text(alphabet=st.characters(codec="utf-8"), max_size=12) | st.sampled_from(
        ["<b>x</b>", "</script>", "&amp;", "", "error", "success", "q1", "t"]
    )
    scalar = (
        st.none()
        | st.booleans()
        | st.integers(-(10**6), 10**6)
        | st.floats(allow_nan=True, allow_infinity=True)
        | text
    )
    json_value = st.recursive(
        scalar,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
        max_leaves=6,
    )
    binding = st.dictionaries(
        st.sampled_from(["a", "b", "c"]),
        st.fixed_dictionaries(
            {
                "type": st.sampled_from(["uri", "literal", "bnode", "typed-literal", "odd"]),
                "value": text,
            }
        )
        | json_value,
        max_size=3,
    )
    output = (
        json_value
        | st.builds(
            lambda rows, vars_: json.dumps(
                {"head": {"vars": vars_}, "results": {"bindings": rows}}
            ),
            st.lists(binding, max_size=4),
            st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=3),
        )
        | st.builds(lambda b: json.dumps({"boolean": b}), st.booleans())
        | st.builds(
            json.dumps, st.lists(st.fixed_dictionaries({"id": text, "text": text}), max_size=3)
        )
    )
    step = st.fixed_dictionaries(
        {"name": st.sampled_from(["sparql_query", "retrieval", "x"]) | json_value},
        optional={
            "id": st.sampled_from(["c1", "c2"]) | json_value,
            "args": json_value | st.fixed_dictionaries({"query": text}),
            "output": output,
            "status": st.sampled_from(["success", "error"]) | json_value,
            "error": json_value,
            "matches": st.sampled_from(["c1", "c2"]) | json_value,
            "mismatch": json_value,
            "required_columns": json_value | st.lists(st.sampled_from(["a", "b", "z"]), max_size=2),
            "ordered": json_value,
            "ignore_duplicates": json_value,
            "retrieval_answer_recall": json_value,
        },
    )
    trajectory = st.fixed_dictionaries(
        {"calls": st.lists(step | json_value, max_size=3) | json_value},
        optional={
            "alternatives": st.lists(st.lists(step, max_size=2) | json_value, max_size=2),
            "match": json_value,
            "args": json_value,
            "ordered": json_value,
        },
    )
    trajectory_call = st.fixed_dictionaries(
        {},
        optional={
            "index": st.integers(-3, 5) | json_value,
            "role": st.sampled_from(["matched", "extra", "failed", "optional"]) | json_value,
            "reference": st.integers(-2, 4) | json_value,
            "repeated": json_value,
            "id": json_value,
        },
    )
    result = st.fixed_dictionaries(
        {"question_id": st.sampled_from(["q1", "q2", "q3"]) | json_value},
        optional={
            "template_id": st.sampled_from(["t1", "t2"]) | json_value,
            "question_text": json_value,
            "reference_answer": json_value,
            "actual_answer": json_value,
            "status": st.sampled_from(["success", "error"]) | json_value,
            "error": json_value,
            "reference_steps": st.lists(st.lists(step, max_size=2) | step, max_size=2) | json_value,
            "actual_steps": st.lists(step, max_size=3) | json_value,
            "steps_score": json_value,
            "answer_f1": st.floats(0, 1),
            "input_tokens": st.integers(0, 5000),
            "answer_class": text,
            "my_metric": json_value,
            "faithfulness_statements": json_value,
            "reference_trajectory": json_value | st.lists(step, max_size=3) | trajectory,
            "trajectory_calls": json_value | st.lists(trajectory_call, max_size=4),
            "trajectory_alternative": st.integers(-1, 3) | json_value,
            "trajectory_error": json_value,
            "trial": st.integers(0, 2) | json_value,
        },
    )
    return st.lists(result, max_size=4)


def test_any_results_make_a_safe_page() -> None:
    """Random results of every shape a user could write: the page is built and stays safe, or
    a result whose ids or step lists the statistics cannot read is refused in one line."""
    from hypothesis import HealthCheck, given, settings

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(_strategies(), _strategies())
    def check(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> None:
        try:
            page = build_report([Run("a", a), Run("b", b)])
        except InputError as e:  # a shape the statistics cannot read: one line, where
            assert str(e).startswith(("run a: result [", "run b: result [")), e
            assert "\n" not in str(e)
            return
        assert_safe(page)
        for html in drills(page):
            assert_safe(html)

    check()


# ------------------------------------------------------------------ judge variance (--repeats)


def repeated_run(
    rng: random.Random, truth: list[float], judge_sd: float, name: str, flips: int = 0
) -> list[dict[str, Any]]:
    """Results judged 3 times per question with normal noise of ``judge_sd`` (merged as a run
    with ``--repeats 3`` merges them); the first ``flips`` questions' answer class flipped."""
    out = []
    for q, value in enumerate(truth):
        calls = [{"answer_recall": value + rng.gauss(0, judge_sd)} for _ in range(3)]
        labels = ["CORRECT", "WRONG", "CORRECT"] if q < flips else ["CORRECT"] * 3
        for call, label in zip(calls, labels):
            call["answer_class"] = label
        merged = merge_repeats(calls, ["answer_recall", "answer_class"])
        out.append(
            {
                "template_id": ("t1", "t2")[q % 2],
                "question_id": f"q{q}",
                "question_text": f"Question {q}?",
                "status": "success",
                "system": name,
                "judge_repeats": 3,
                **merged,
            }
        )
    return out


def table_rows(html: str) -> list[list[str]]:
    """The text of each cell of each row of a table's HTML."""
    rows = []
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", html, re.S):
        cells = re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)
        rows.append(["".join(Structure(c).text).strip() for c in cells])
    return rows


def card(page: str, ident: str) -> str:
    start = page.index(f'id="{ident}"')
    return page[start : page.index("</table>", start)]


def test_judge_variance_sits_beside_the_spread_between_questions() -> None:
    rng = random.Random(5)
    truth = [rng.random() for _ in range(12)]
    a = repeated_run(rng, truth, 0.1, "a", flips=3)
    page = build_report([Run("run <a>", a)])
    assert_safe(page)
    micro = compute_aggregates(a)["micro"]
    block = micro["answer_recall"]
    assert block["judge_sd"] > 0 and block["sd"] > block["judge_sd"]
    rows = table_rows(card(page, "judge-variance"))
    assert rows[0][1] == "run <a> 3 repeats"  # the label as text
    assert rows[1][1:] == ["sd between questions", "judge sd", "judge se of the mean"]
    assert [
        "answer_recall",
        num(block["sd"]),
        num(block["judge_sd"]),
        num(block["judge_se"]),
    ] in rows
    flipped = micro["label_flips"]["answer_class"]
    assert (flipped["flipped"], flipped["n"]) == (3, 12)
    assert ["answer_class flipped", "3 of 12 questions (25 %)"] in rows
    # the per-template table: each group's spread and judge noise beside its mean
    templates = table_rows(card(page, "templates"))
    header = templates[0]
    column = header.index("answer_recall")
    per_template = compute_aggregates(a)["per_template"]
    checked = 0
    for row in templates[1:]:
        if row[0] in per_template:
            checked += 1
            t = per_template[row[0]]["answer_recall"]
            assert row[column] == (
                f"{num(t['mean'])} n={t['n']} sd {num(t['sd'])} · judge {num(t['judge_sd'])}"
            )
    assert checked == 2
    micro_row = next(r for r in templates if r[0] == "all questions (micro)")
    assert micro_row[column].endswith(f"sd {num(block['sd'])} · judge {num(block['judge_sd'])}")


def test_without_repeats_no_judge_variance_is_shown(two_runs: str) -> None:
    assert 'id="judge-variance"' not in two_runs
    assert "judge se" not in two_runs and "within judge noise" not in two_runs
    assert "· judge" not in two_runs


def test_compare_rows_say_when_a_difference_is_within_the_judges_noise() -> None:
    rng = random.Random(11)
    truth = [rng.random() for _ in range(30)]
    a = repeated_run(rng, truth, 0.2, "a")
    same = repeated_run(rng, truth, 0.2, "b")
    better = repeated_run(rng, [t + 0.4 for t in truth], 0.2, "b")
    for other, expected in ((same, True), (better, False)):
        comparison = compare_runs(a, other, labels=("A", "B"), metrics=["answer_recall"])
        row = comparison["metrics"][0]["overall"]
        assert row["within_judge_noise"] is expected  # as compare decided it
        page = build_report([Run("A", a), Run("B", other)], comparison)
        assert_safe(page)
        verdict = table_rows(card(page, "comparison"))
        header, line = verdict[0], next(r for r in verdict if r and r[0] == "answer_recall")
        assert line[header.index("judge se")] == num(row["judge_se"])
        assert line[-1].endswith("within judge noise") is expected
        lead = page[
            page.index('id="comparison"') : page.index("</p>", page.index('id="comparison"'))
        ]
        assert ("Within the judge" in lead) is expected
        if expected:
            assert f"judge se {num(row['judge_se'])}" in lead
        # per template rows carry it too
        per_template = table_rows(page[page.index('id="comparison-details"') :])
        assert per_template[0][-2] == "judge se"


def test_hostile_labels_of_repeated_runs_stay_text() -> None:
    rng = random.Random(2)
    results = repeated_run(rng, [0.2, 0.5, 0.8], 0.1, "a")
    hostile = "<img src=x onerror=alert(1)>"
    for result in results:
        result[f"{hostile}_flipped"] = True  # a flip of a key named by the results file
    page = build_report([Run(hostile, results), Run("b", repeated_run(rng, [0.3] * 3, 0.1, "b"))])
    structure = assert_safe(page)
    assert "<img" not in page
    text = "".join(structure.text)
    assert f"{hostile} flipped" in text and hostile in text
