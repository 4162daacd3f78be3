"""The report's hostile strings in the viewer: every field stays text on every page, in the
browser (no dialog, no image, no handler attribute, no script but the viewer's own, no request
elsewhere) and in the HTML (nothing unescaped), plus bidi, control characters and a huge
string."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "report"))
pytest.importorskip("starlette")

from serving import Served, write_jsonl
from test_report import ALLOWED_TAGS, XSS, Structure, hostile_runs

from browser import Tab
from qa_eval.view.server import settings_for

BIDI = "\u202egnp.exe\u202c and \u200f\u2066isolate\u2069"
CONTROL = "bell\x07 backspace\x08 escape\x1b[31m red"
HUGE = "huge " + "x" * 300_000
LINK = "javascript:alert(document.cookie)"
VIEW_TAGS = ALLOWED_TAGS | {"link", "form", "aside", "kbd", "datalist"}


def assert_view_safe(html: str) -> None:
    """Only known elements, no event handler, links within the app, its own script only."""
    for tag, attrs in Structure(html).tags:
        assert tag in VIEW_TAGS, (tag, attrs)
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name)
            if name in ("href", "src", "action", "xlink:href", "formaction"):
                assert (value or "").startswith(("/", "?", "#")), (tag, name, value)
                assert not (value or "").startswith("//"), (tag, name, value)
        if tag == "script":
            assert attrs.get("src") == "/static/view.js", attrs


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, list[str]]]:
    runs, marks = hostile_runs()
    folder = tmp_path_factory.mktemp("hostile")
    paths = []
    for number, run in enumerate(runs):
        results = [dict(r) for r in run.results]
        if number == 0:
            replaced = [
                results[1]["actual_answer"],
                results[1]["answer_correctness_reason"],
                results[2]["actual_answer"],
            ]
            marks = [m for m in marks if m not in replaced]
            results[1]["actual_answer"] = BIDI
            results[1]["answer_correctness_reason"] = CONTROL
            results[0]["faithfulness_reason"] = HUGE
            results[0]["question_type"] = XSS
            results[2]["actual_answer"] = LINK
        # the run label is the file name, as the viewer names runs
        path = write_jsonl(folder / f"{run.label}.jsonl", results)
        if run.signature:
            sig = folder / f"{run.label}.signature.yaml"
            sig.write_text(orjson.dumps(run.signature).decode(), encoding="utf-8")
        paths.append(path)
    settings = settings_for(paths, labels=folder / "labels.csv", annotator=XSS)
    served = Served(settings)
    try:
        yield served, marks
    finally:
        served.stop()


def pages(count: int) -> list[str]:
    urls = ["/", "/run/0", "/run/1", "/compare", "/label?metric=steps_score"]
    urls += [f"/run/0/q/{i}?with=1" for i in range(count)]
    urls += ["/run/0?q=img", "/run/0?q=%3Cimg&regex=1", "/run/0?tag=question_type%3D" + XSS]
    return urls


def test_every_page_keeps_hostile_text_as_text(
    browser: Any, hostile: tuple[Served, list[str]]
) -> None:
    served, marks = hostile
    context = browser.new_context()
    tab = Tab(context.new_page())
    tab.page.goto(served.url)
    seen = ""
    for url in pages(3):
        tab.page.goto(served.base + url)
        tab.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        tab.page.wait_for_timeout(100)
        assert tab.evaluate("document.images.length") == 0, url
        assert tab.evaluate("Array.from(document.scripts).map(s => s.src)") == [
            served.base + "/static/view.js"
        ], url
        handlers = tab.evaluate(
            "Array.from(document.querySelectorAll('*')).flatMap(e => Array.from(e.attributes)"
            ".filter(a => a.name.startsWith('on')).map(a => e.tagName + ' ' + a.name))"
        )
        assert handlers == [], url
        links = tab.evaluate(
            "Array.from(document.querySelectorAll('a[href]')).map(a => a.href)"
            ".filter(h => !h.startsWith(location.origin + '/'))"
        )
        assert links == [], url
        seen += tab.evaluate("document.body.textContent") + tab.evaluate("document.title")
    assert tab.problems == []
    assert [u for u in tab.requests if not u.startswith(served.base + "/")] == []
    shown = {"run label", "other run label", "question text", "reference answer",
             "actual answer", "judge reason", "mismatch", "step name", "error message"}  # fmt: skip
    missing = [m for m in marks if m.split(":")[0] in shown and m not in seen]
    assert missing == []
    assert BIDI in seen and "red" in seen and "xxxxxxxx" in seen and LINK in seen
    context.close()


def test_the_html_escapes_every_field(hostile: tuple[Served, list[str]]) -> None:
    from starlette.testclient import TestClient

    from qa_eval.view.app import create_app

    served, _ = hostile
    client = TestClient(create_app(served.settings))
    client.get(served.url.replace(served.base, ""))
    for url in pages(3):
        response = client.get(url)
        assert response.status_code == 200, (url, response.text[:300])
        assert XSS not in response.text, url
        assert_view_safe(response.text)
