"""The report's agreement section: each run a judge against people's labels; its figures, the
confusion matrices, the disagreements (the judge's reason escaped) and the judges with cost."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from qa_eval.agreement import agreement
from qa_eval.cli import main
from qa_eval.io.files import write_data
from qa_eval.report import Run, build_report

pytest.importorskip("jinja2")

HOSTILE = '<script>alert("x")</script> & </td>'


def _results(flip: set[int], cost: float) -> list[dict[str, Any]]:
    rows = []
    for i in range(12):
        right = i % 2 == 0
        judged = (not right) if i in flip else right
        rows.append(
            {
                "template_id": "t",
                "question_id": f"q{i}",
                "question_text": f"Question {i}" + (f" {HOSTILE}" if i == 3 else ""),
                "reference_answer": "r",
                "actual_answer": "a",
                "status": "success",
                "faithfulness": 0.9 if judged else 0.1,
                "faithfulness_reason": HOSTILE if i in flip else "fine",
                "llm_cost": cost,
            }
        )
    return rows


def _labels() -> list[dict[str, Any]]:
    rows = [
        {"question_id": f"q{i}", "metric": "faithfulness", "label": i % 2 == 0, "annotator": "ana"}
        for i in range(12)
    ]
    rows += [
        {"question_id": f"q{i}", "metric": "faithfulness", "label": i % 2 == 0, "annotator": "ben"}
        for i in range(0, 12, 3)
    ]
    return rows


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.scripts = 0
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        self.scripts += tag == "script"

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _section(page: str) -> str:
    start = page.index('<section id="agreement">')
    return page[start : page.index("</section>", start) + len("</section>")]


def test_the_section_shows_the_figures_the_matrices_the_disagreements_and_the_costs() -> None:
    mini, big = _results({1, 3}, 0.0002), _results({3}, 0.004)
    runs = [Run("mini", mini, {"judge": {"model": "gpt-4o-mini"}}), Run("big", big, None)]
    page = build_report(runs, labels=_labels(), max_questions=None)
    section = _section(page)
    expected = agreement({"mini": mini, "big": big}, _labels(), threshold=None).to_dict()
    for judge in expected["judges"]:
        (entry,) = judge["metrics"]
        assert f"<td>{judge['label']}</td>" in section
        assert f"<td>{entry['n']}</td>" in section
        assert f"{entry['auc']:.3g}"[:4] in section or f"{entry['auc']:.2f}" in section
    assert "gpt-4o-mini" in section and "$0.0002" in section and "$0.004" in section
    assert section.count('class="agreement-confusion"') == 2
    assert "Judges compared" in section and "McNemar exact" in section
    assert "Krippendorff" in section and "ana: kappa" in section
    assert "Where mini disagrees most on faithfulness" in section
    # the judge's reason and the question text are data: escaped, never markup
    assert HOSTILE not in page
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; &lt;/td&gt;" in section
    parser = _Text()
    parser.feed(section)
    assert parser.scripts == 0
    assert HOSTILE in "".join(parser.text)
    assert '<a href="#agreement">Agreement</a>' in page


def test_no_labels_no_section_and_a_given_report_is_used_as_is() -> None:
    mini = _results({1}, 0.001)
    page = build_report([Run("mini", mini)])
    assert 'id="agreement"' not in page
    given = agreement({"mini": mini}, _labels()).to_dict()
    given["judges"][0]["label"] = "renamed-judge"
    page = build_report([Run("mini", mini)], agreement=given)
    assert "<td>renamed-judge</td>" in _section(page)


def test_report_command_takes_labels(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_data(tmp_path / "mini.jsonl", _results({1, 3}, 0.0002))
    write_data(tmp_path / "labels.jsonl", _labels())
    out = tmp_path / "report.html"
    code = main(
        [
            "report",
            str(tmp_path / "mini.jsonl"),
            "--labels",
            str(tmp_path / "labels.jsonl"),
            "-o",
            str(out),
        ]
    )
    assert code == 0, capsys.readouterr().err
    section = _section(out.read_text(encoding="utf-8"))
    assert re.search(r"<td>mini</td>.*<td>faithfulness", section, re.S)
    bad = tmp_path / "bad.csv"
    bad.write_text("question_id,metric,label\nq1,faithfulness,\n", encoding="utf-8")
    code = main(["report", str(tmp_path / "mini.jsonl"), "--labels", str(bad), "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "bad.csv" in err and "row 2" in err and "Traceback" not in err
