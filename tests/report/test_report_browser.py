"""The HTML report in a real headless Chromium, driven by Playwright (tests/browser.py).

Checks that the page becomes ready (``window.__qaEvalReady``) with no console error and no
network request other than the report file itself, that hostile text stays text in every field
once every drill-down is open (no dialog, no image, no handler), that the verdict's links open
their question and that the question list filters and sorts. Skipped when no Chromium is
installed (``.ci/install-browser`` installs one) or when Playwright is missing.

Set ``QA_EVAL_REPORT_SCREENSHOT=/path/report.png`` to keep a screenshot of the first screen, and
``QA_EVAL_CHROMIUM`` to choose the browser binary. Load times are measured by
``benchmarks/report.py``, not asserted here.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_report import SIGNATURE, XSS, hostile_runs, sample_results
from test_report_trajectory import hostile_trajectory_runs

from browser import Tab
from qa_eval.report import Run, build_report

READY = "typeof window.__qaEvalReady === 'number'"
OPEN_ALL = (
    "(() => { const items = Array.from(document.querySelectorAll('details.q'));"
    " items.forEach(d => { d.hidden = false; d.open = true; }); return items.length; })()"
)
ALL_LOADED = (
    "Array.from(document.querySelectorAll('details.q')).every(d => d.hasAttribute('data-loaded'))"
)


def _load(browser: Any, path: Path) -> Tab:
    """A new page with the report loaded and ready."""
    tab = Tab(browser.new_page())
    tab.page.goto(path.as_uri())
    assert tab.poll(READY), "the page never set window.__qaEvalReady"
    return tab


@pytest.fixture(scope="module")
def sample(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Tab, Path]]:
    page = tmp_path_factory.mktemp("sample") / "report.html"
    candidate = sample_results(0.2)
    candidate[5]["steps_score"] = 0.0  # one question got worse
    page.write_text(
        build_report([Run("baseline", sample_results(), SIGNATURE), Run("candidate", candidate)]),
        encoding="utf-8",
    )
    tab = _load(browser, page)
    screenshot = os.environ.get("QA_EVAL_REPORT_SCREENSHOT")
    if screenshot:
        tab.page.screenshot(path=screenshot)
    yield tab, page
    tab.page.close()


def test_ready_with_no_console_error_and_no_network_request(sample: tuple[Tab, Path]) -> None:
    browser, page = sample
    assert browser.problems == []
    assert browser.requests == [page.as_uri()]
    assert browser.evaluate("window.__qaEvalReady") > 0
    # the first screen: the headline and the verdict
    top = browser.evaluate(
        "['headline', 'comparison'].map(id => document.getElementById(id)"
        ".getBoundingClientRect().top)"
    )
    assert all(0 <= t < 1000 for t in top), top
    assert browser.evaluate("document.querySelectorAll('svg').length") > 10


def test_details_open_and_close(sample: tuple[Tab, Path]) -> None:
    browser, _ = sample
    first = "document.querySelector('details.q:not([hidden])')"
    assert browser.evaluate(f"{first}.open") is False
    browser.evaluate(f"{first}.querySelector('summary').click()")
    assert browser.poll(f"{first}.hasAttribute('data-loaded')")
    text = browser.evaluate(f"{first}.querySelector('.drill').textContent")
    assert "reference" in text and "baseline" in text and "candidate" in text
    assert browser.evaluate(f"{first}.querySelectorAll('table.res').length") > 0
    browser.evaluate(f"{first}.querySelector('summary').click()")
    assert browser.evaluate(f"{first}.open") is False


def test_the_verdict_links_open_their_question(sample: tuple[Tab, Path]) -> None:
    browser, _ = sample
    browser.evaluate("document.querySelectorAll('details.q').forEach(d => { d.open = false; })")
    target = browser.evaluate(
        "(() => { const a = document.querySelector('.worse a[href^=\"#q-\"]');"
        " a.click(); return a.getAttribute('href').slice(1); })()"
    )
    assert browser.poll(f"document.getElementById('{target}').hasAttribute('data-loaded')")
    assert browser.evaluate(f"document.getElementById('{target}').open") is True
    assert browser.evaluate(f"document.getElementById('{target}').classList.contains('worse')")


def test_filter_and_sort(sample: tuple[Tab, Path]) -> None:
    browser, _ = sample
    visible = "Array.from(document.querySelectorAll('details.q')).filter(d => !d.hidden)"
    count = "document.getElementById('q-count').textContent"
    assert browser.evaluate(f"{visible}.length") == 6
    assert browser.evaluate(count) == "6 of 6 questions"

    def set_filter(text: str) -> None:
        browser.evaluate(
            "(() => { const f = document.getElementById('q-filter'); "
            f"f.value = {text!r}; f.dispatchEvent(new Event('input')); }})()"
        )

    set_filter("question 3 about")
    assert browser.poll(f"{count} === '1 of 6 questions'")
    assert browser.evaluate(f"{visible}.map(d => d.dataset.qid)") == ["q3"]
    set_filter("1998")  # text inside the drill-downs (a retrieved document) is searched too
    assert browser.poll(f"{count} === '5 of 6 questions'")  # the error has no steps
    set_filter("")
    browser.evaluate(
        "(() => { const t = document.getElementById('q-template'); t.value = 'voltage';"
        " t.dispatchEvent(new Event('change')); })()"
    )
    assert set(browser.evaluate(f"{visible}.map(d => d.dataset.template)")) == {"voltage"}
    assert browser.evaluate(count) == "2 of 6 questions"
    browser.evaluate(
        "(() => { const t = document.getElementById('q-template'); t.value = '';"
        " t.dispatchEvent(new Event('change')); const e = document.getElementById('q-errors');"
        " e.click(); })()"
    )
    assert browser.evaluate(f"{visible}.map(d => d.dataset.qid)") == ["q4"]
    browser.evaluate("document.getElementById('q-errors').click()")
    # sort by the candidate's score, ascending then descending; empty values last
    values = "Array.from(document.querySelectorAll('details.q')).map(d => d.dataset.s1)"
    button = "document.querySelector('.qh button[data-sort=\"s1\"]')"
    browser.evaluate(f"{button}.click()")
    ascending = [float(v) for v in browser.evaluate(values) if v != ""]
    assert ascending == sorted(ascending) and len(ascending) >= 5
    browser.evaluate(f"{button}.click()")
    descending = [float(v) for v in browser.evaluate(values) if v != ""]
    assert descending == sorted(descending, reverse=True)
    browser.evaluate("document.querySelector('.qh button[data-sort=\"rank\"]').click()")
    ranks = browser.evaluate(
        "Array.from(document.querySelectorAll('details.q')).map(d => Number(d.dataset.rank))"
    )
    assert ranks == sorted(ranks)


def test_hostile_text_is_shown_as_text(
    browser: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    runs, marks = hostile_runs()
    page = tmp_path_factory.mktemp("hostile") / "report.html"
    page.write_text(build_report(runs, title=XSS), encoding="utf-8")
    browser = _load(browser, page)
    assert browser.evaluate(OPEN_ALL) == 3
    assert browser.poll(ALL_LOADED)
    browser.evaluate("document.querySelectorAll('section details').forEach(d => d.open = true)")
    browser.evaluate("new Promise(r => setTimeout(r, 300))")  # let anything that would run, run
    assert browser.problems == []
    assert browser.requests == [page.as_uri()]
    assert browser.evaluate("document.images.length") == 0
    assert browser.evaluate("document.scripts.length") == 2
    handlers = browser.evaluate(
        "Array.from(document.querySelectorAll('*')).flatMap(e => Array.from(e.attributes)"
        ".filter(a => a.name.startsWith('on')).map(a => e.tagName + ' ' + a.name))"
    )
    assert handlers == []
    text = browser.evaluate("document.body.textContent") + browser.evaluate("document.title")
    assert [m for m in set(marks) if m not in text] == []
    assert XSS in browser.evaluate("document.title")
    # SVG labels: the hostile template id and metric names are text of <text>/<title>
    svg_text = browser.evaluate(
        "Array.from(document.querySelectorAll('svg text, svg title')).map(e => e.textContent)"
        ".join('\\n')"
    )
    assert any(m.startswith("template id:") and m in svg_text for m in marks)
    assert any(m.startswith("metric name:") and m in svg_text for m in marks)


def test_trajectory_drill_down_stays_text_and_is_searched(
    browser: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    runs, marks = hostile_trajectory_runs()
    page = tmp_path_factory.mktemp("trajectory") / "report.html"
    page.write_text(build_report(runs), encoding="utf-8")
    browser = _load(browser, page)
    assert browser.evaluate(OPEN_ALL) == 1
    assert browser.poll(ALL_LOADED)
    # every folded output open too
    opened = browser.evaluate(
        "(() => { const d = document.querySelectorAll('.traj details');"
        " d.forEach(e => e.open = true); return d.length; })()"
    )
    assert opened >= 3
    browser.evaluate("new Promise(r => setTimeout(r, 300))")
    assert browser.problems == []
    assert browser.requests == [page.as_uri()]
    assert browser.evaluate("document.images.length") == 0
    assert browser.evaluate("document.scripts.length") == 2
    text = browser.evaluate("document.querySelector('.traj').textContent")
    assert [m for m in marks if m not in text and json.dumps(m)[1:-1] not in text] == []
    rows = browser.evaluate(
        "Array.from(document.querySelectorAll('.traj table.act-calls td.mk'))"
        ".map(e => e.textContent)"
    )
    # run a scored; run b not evaluated (trajectory_error): its calls have no role
    assert rows == ["extra", "failed", "extra", "missing", "missing", "", "", ""]
    # the filter searches the calls: a tool name finds the question, another word does not
    count = "document.getElementById('q-count').textContent"
    for word, expected in (("missing tool:", "1 of 1 questions"), ("no such tool", "0 of 1")):
        browser.evaluate(
            "(() => { const f = document.getElementById('q-filter'); "
            f"f.value = {word!r}; f.dispatchEvent(new Event('input')); }})()"
        )
        assert browser.poll(f"{count}.startsWith({expected!r})"), browser.evaluate(count)
