"""``qa-eval view`` end to end in a real headless Chromium (Playwright; one browser per session).

Two runs of the report's sample results are served on 127.0.0.1 (port 0): the tests open them,
filter, search, open a question, label five questions with the keyboard (and find them in the
labels file and in the agreement panel), compare the runs and review three generated questions.
The report's hostile runs are served too: every text stays text on every page. Set
``QA_EVAL_VIEW_SCREENSHOTS=FOLDER`` to keep the screenshots docs/view.md shows.
"""

from __future__ import annotations

import csv
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "report"))

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from serving import Served, write_jsonl, write_review
from test_report import SIGNATURE, sample_results

from browser import Tab
from qa_eval.view.server import settings_for

REVIEW = [
    {"id": "g1", "question": "Which transformers exceed 400 MVA?", "answer": "T1, T3",
     "query": "SELECT ?t WHERE { ?t :mva ?m FILTER(?m > 400) }", "decision": "", "edit": ""},
    {"id": "g2", "question": "How many substations are there?", "answer": "12",
     "query": "SELECT (COUNT(?s) AS ?n) WHERE { ?s a :Substation }", "decision": "", "edit": ""},
    {"id": "g3", "question": "What voltage does line L7 carry?", "answer": "110 kV",
     "query": "SELECT ?v WHERE { :L7 :voltage ?v }", "decision": "", "edit": ""},
    {"id": "g4", "question": "Who operates T9?", "answer": "GridCo",
     "query": "SELECT ?o WHERE { :T9 :operator ?o }", "decision": "", "edit": ""},
]  # fmt: skip


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("view")
    baseline = write_jsonl(folder / "baseline.jsonl", sample_results())
    (folder / "baseline.signature.yaml").write_text(
        orjson.dumps(SIGNATURE).decode(), encoding="utf-8"
    )
    candidate = sample_results(0.2)
    candidate[5]["steps_score"] = 0.0
    write_jsonl(folder / "candidate.jsonl", candidate)
    settings = settings_for(
        [baseline, folder / "candidate.jsonl"],
        labels=folder / "labels.csv",
        annotator="ana",
        review=write_review(folder / "review.csv", REVIEW),
    )
    app = Served(settings)
    try:
        yield app
    finally:
        app.stop()


@pytest.fixture
def tab(browser: Any, served: Served) -> Iterator[Tab]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = Tab(context.new_page())
    page.page.goto(served.url)
    try:
        yield page
    finally:
        assert page.problems == []
        outside = [u for u in page.requests if not u.startswith(served.base + "/")]
        assert outside == []
        context.close()


def shot(tab: Tab, name: str) -> None:
    folder = os.environ.get("QA_EVAL_VIEW_SCREENSHOTS")
    if folder:
        tab.page.screenshot(path=str(Path(folder) / f"{name}.png"))


def rows(tab: Tab) -> list[str]:
    return tab.evaluate(  # type: ignore[no-any-return]
        "Array.from(document.querySelectorAll('#questions tbody tr td:nth-child(2) code'))"
        ".map(e => e.textContent)"
    )


def test_runs_page_shows_both_runs_with_their_signature(tab: Tab) -> None:
    text = tab.evaluate("document.body.textContent")
    assert "baseline" in text and "candidate" in text
    assert "gpt-<b>judge</b>" in text  # the signature's judge model, as text
    assert "none (no .signature.yaml" in text  # the candidate has none
    shot(tab, "runs")


def test_filter_search_and_the_url_holds_the_view(tab: Tab, served: Served) -> None:
    page = tab.page
    page.click("nav.vnav a:text('baseline')")
    assert rows(tab) == ["q0", "q1", "q2", "q3", "q4", "q5"]
    page.fill("input[name=q]", "question 3")
    page.press("input[name=q]", "Enter")
    page.wait_for_url("**q=question+3**")
    assert rows(tab) == ["q3"]
    page.fill("input[name=q]", "")
    page.select_option("select[name=template]", "voltage")
    page.click("button[type=submit]")
    page.wait_for_url("**template=voltage**")
    assert rows(tab) == ["q1", "q4"]
    page.select_option("select[name=errors]", "only")
    page.click("button[type=submit]")
    assert rows(tab) == ["q4"]
    # the view is in the URL: a colleague opening it sees the same rows
    url = page.url
    page.goto(served.base + "/")
    page.goto(url)
    assert rows(tab) == ["q4"]
    assert "1 of 6 results" in tab.evaluate("document.getElementById('count').textContent")
    # a regular expression over the judge's reasons
    page.goto(served.base + "/run/0?regex=1&q=" + "matched%20%3Ci%3E%5B25%5D%3C%2Fi%3E")
    assert rows(tab) == ["q2", "q5"]
    # sort by a metric, descending, by clicking its header
    page.goto(served.base + "/run/0")
    page.click("#questions th a:text('answer_recall')")
    page.wait_for_url("**sort=answer_recall**")
    assert rows(tab)[0] == "q5"
    shot(tab, "questions")


def test_open_a_question_side_by_side(tab: Tab, served: Served) -> None:
    page = tab.page
    page.goto(served.base + "/run/0")
    page.click("#questions a:has(code:text('q3'))")
    page.wait_for_url("**/run/0/q/3")
    drill = tab.evaluate("document.querySelector('.question-page').textContent")
    assert "Question 3 about transformers?" in drill and "reference" in drill
    assert tab.evaluate("document.querySelectorAll('.question-page table.res').length") > 0
    page.goto(served.base + "/run/0/q/1?with=1")
    labels = tab.evaluate(
        "Array.from(document.querySelectorAll('.question-page .rl')).map(e => e.textContent)"
    )
    assert any("baseline" in x for x in labels) and any("candidate" in x for x in labels)
    # the hostile answer of q1 is text
    assert "<script>alert(1)</script>" in tab.evaluate("document.body.textContent")
    assert tab.evaluate("document.scripts.length") == 1
    shot(tab, "question")


def test_label_five_questions_with_the_keyboard(tab: Tab, served: Served) -> None:
    page = tab.page
    page.goto(served.base + "/label?run=0&metric=faithfulness&queue=sample&seed=3")
    typed = []
    for key in "pfppf":
        qid = tab.evaluate("document.getElementById('label-form').dataset.question")
        if key == "f":
            page.keyboard.press("n")
            page.keyboard.type(f"wrong on {qid}")
            page.keyboard.press("Escape")
        with page.expect_navigation():
            page.keyboard.press(key)
        typed.append((qid, key))
    labels = served.settings.labels.read_text(encoding="utf-8").splitlines()
    assert labels[0] == "question_id,template_id,metric,label,annotator,note,supersedes"
    written = [tuple(row.split(",")[:6]) for row in labels[1:]]
    assert [(w[0], w[3], w[4]) for w in written] == [
        (qid, "true" if key == "p" else "false", "ana") for qid, key in typed
    ]
    assert all(w[2] == "faithfulness" for w in written)
    assert [w[5] for w in written if w[3] == "false"] == [
        f"wrong on {qid}" for qid, key in typed if key == "f"
    ]
    # the five questions with faithfulness are labelled: the queue is done
    assert tab.evaluate("document.getElementById('queue-done') !== null")
    panel = tab.evaluate("document.getElementById('agreement-panel').textContent")
    assert "5 label rows" in panel and "ana" in panel
    counts = tab.evaluate(
        "Array.from(document.querySelectorAll('#agreement-panel table.agreement-judges tbody tr'))"
        ".map(r => r.children[4].textContent)"
    )
    assert counts == ["5", "5"]  # both runs measured on the five labelled questions
    # qa-eval agreement reads the file
    from qa_eval.agreement import agreement

    source = served.settings.runs[0].index.source
    report = agreement(str(source), str(served.settings.labels)).to_dict()
    assert report["judges"][0]["metrics"][0]["n"] == 5
    shot(tab, "label")


def test_change_and_clear_a_label_with_the_keyboard(tab: Tab, served: Served) -> None:
    from qa_eval.agreement import read_labels

    page = tab.page
    page.goto(served.base + "/label?run=0&metric=faithfulness&queue=sample&seed=3")
    links = tab.evaluate(
        "Array.from(document.querySelectorAll('#recent-labels a')).map(a => a.textContent)"
    )
    assert len(links) == 5  # the five labels of the test before, the last first
    before = {r.question_id: r.value for r in read_labels(served.settings.labels).rows}
    qid = links[0]
    with page.expect_navigation():
        page.click("#recent-labels a >> nth=0")
    assert tab.evaluate("document.getElementById('label-form').dataset.question") == qid
    assert "your label" in tab.evaluate("document.getElementById('current-label').textContent")
    key = "f" if before[qid] is True else "p"
    with page.expect_navigation():
        page.keyboard.press(key)  # changed: back to the queue
    after = {r.question_id: r.value for r in read_labels(served.settings.labels).rows}
    assert after == {**before, qid: key == "p"}
    assert served.settings.labels.read_text().splitlines()[-1].endswith(",true")  # supersedes
    with page.expect_navigation():
        page.click("#recent-labels a >> nth=0")
    with page.expect_navigation():
        page.keyboard.press("c")  # cleared
    cleared = {r.question_id: r.value for r in read_labels(served.settings.labels).rows}
    assert qid not in cleared and len(cleared) == 4
    panel = tab.evaluate("document.getElementById('agreement-panel').textContent")
    assert "4 label rows" in panel
    # the cleared question is in the queue again
    assert tab.evaluate("document.getElementById('label-form').dataset.question") == qid


def test_compare_shows_the_verdict_and_the_changes(tab: Tab, served: Served) -> None:
    from qa_eval.compare import compare_runs
    from qa_eval.io.files import read_results

    page = tab.page
    page.goto(served.base + "/compare?metric=steps_score")
    verdict = tab.evaluate("document.getElementById('comparison').textContent")
    assert "Verdict: candidate against baseline" in verdict
    expected = compare_runs(
        read_results(served.settings.runs[0].index.source),
        read_results(served.settings.runs[1].index.source),
        labels=("baseline", "candidate"),
    )
    shown = tab.evaluate(
        "Array.from(document.querySelectorAll('#comparison table.verdict tbody tr'))"
        ".map(r => [r.children[0].textContent.trim(), r.children[1].textContent])"
    )
    from qa_eval.report.model import verdict_of

    assert [[r.metric, str(r.n)] for r in verdict_of(expected).overall] == [
        [name.split(" ")[0], n] for name, n in shown
    ]
    page.select_option("select[name=show]", "worse")
    page.click("button[type=submit]")
    page.wait_for_url("**show=worse**")
    worse = tab.evaluate(
        "Array.from(document.querySelectorAll('#change-table tbody tr'))"
        ".map(r => [r.querySelector('code').textContent, r.children[4].className])"
    )
    assert worse == [["q5", "down"]]
    shot(tab, "compare")
    page.click("#change-table a")
    page.wait_for_url("**/q/5?with=1")
    assert "candidate" in tab.evaluate("document.querySelector('.question-page').textContent")


def test_review_three_generated_questions(tab: Tab, served: Served) -> None:
    page = tab.page
    page.goto(served.base + "/review")
    page.keyboard.press("a")  # g1 accepted, the focus moves on
    assert tab.poll("document.querySelector('[data-id=g1] .decision').textContent === 'accept'")
    page.keyboard.press("r")  # g2 rejected
    assert tab.poll("document.querySelector('[data-id=g2] .decision').textContent === 'reject'")
    page.keyboard.press("e")  # g3: a better wording, Enter accepts it
    page.keyboard.type("Which voltage does line L7 carry?")
    page.keyboard.press("Enter")
    assert tab.poll("document.querySelector('[data-id=g3] .decision').textContent === 'accept'")
    with served.settings.review.open(newline="", encoding="utf-8") as f:
        decided = {r["id"]: (r["decision"], r["edit"]) for r in csv.DictReader(f)}
    assert decided == {
        "g1": ("accept", ""),
        "g2": ("reject", ""),
        "g3": ("accept", "Which voltage does line L7 carry?"),
        "g4": ("", ""),
    }
    assert "3 of 4 decided" in tab.evaluate("document.getElementById('review-count').textContent")
    shot(tab, "review")
