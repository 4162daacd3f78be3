"""The report's per-template comparison lists at most ``max_template_rows`` rows (default
``DEFAULT_MAX_TEMPLATE_ROWS``): the rows most worth a look (significantly worse first, then
significantly better, then by smallest p), in the comparison's order, and the page says how many
it left out. Below the limit the page is what it always was; the verdict, the tables and the
counts do not change with the limit."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from qa_eval.cli import main
from qa_eval.compare import compare_runs
from qa_eval.compare.columns import scan_results
from qa_eval.compare.streamed import compare_files
from qa_eval.report import DEFAULT_MAX_TEMPLATE_ROWS, Run, build_report
from qa_eval.report.model import verdict_of
from qa_eval.report.streamed import report_of_files

TEMPLATES = 24


def _results(shift: bool) -> list[dict[str, Any]]:
    """24 templates of 12 questions; with ``shift``, templates 0-3 much worse, 4-5 better."""
    out = []
    for i in range(TEMPLATES * 12):
        t, k = i % TEMPLATES, (i * 7) % 10
        score = k / 10
        if shift and t < 4:
            score = max(0.0, score - 0.6)
        elif shift and t in (4, 5):
            score = min(1.0, score + 0.5)
        elif shift:
            score = min(1.0, score + (0.1 if i % 2 else -0.1) * (t % 3))
        out.append(
            {
                "template_id": f"t{t}",
                "question_id": f"q{i}",
                "question_text": f"Question {i}?",
                "status": "success",
                "answer_f1": score,
                "elapsed_sec": 1.0 + k / 4 + (0.5 if shift and t == 7 else 0.0),
            }
        )
    return out


def _clean(page: str) -> str:
    return re.sub(r"generated \d{4}-\d\d-\d\d \d\d:\d\d UTC", "generated", page)


def _details(page: str) -> str:
    return page[page.index('<section id="comparison-details">') : page.index('id="templates"')]


def _rows(page: str) -> list[tuple[str, str]]:
    """(metric, template) of each row of the per-template comparison."""
    return re.findall(r'<tr><td>([^<]+)</td><td class="tpl">([^<]+)</td>', _details(page))


@pytest.fixture(scope="module")
def runs() -> tuple[Run, Run]:
    return Run("a", _results(False)), Run("b", _results(True))


@pytest.fixture(scope="module")
def comparison(runs: tuple[Run, Run]) -> dict[str, Any]:
    return compare_runs(runs[0].results, runs[1].results, labels=("a", "b"), resamples=2000)


def test_the_rows_kept_are_the_worse_then_the_better_then_by_p(
    comparison: dict[str, Any],
) -> None:
    everything = verdict_of(comparison)
    total = len(everything.per_template)
    assert everything.per_template_total is None and everything.left_out == 0
    worse = [r for r in everything.per_template if r.outcome == "worse"]
    better = [r for r in everything.per_template if r.outcome == "better"]
    assert len(worse) >= 4 and better  # the data has both, or the test shows nothing
    limit = len(worse) + 1
    kept = verdict_of(comparison, limit)
    assert kept.per_template_total == total and kept.left_out == total - limit
    assert len(kept.per_template) == limit
    # every worse row, then the better row with the smallest adjusted p (first of ties)
    best_better = min(better, key=lambda r: (r.p_adjusted, r.p_value, -abs(r.delta or 0)))
    expected = {(r.metric, r.template) for r in [*worse, best_better]}
    assert {(r.metric, r.template) for r in kept.per_template} == expected
    # in the comparison's order
    order = [(r.metric, r.template) for r in everything.per_template]
    positions = [order.index((r.metric, r.template)) for r in kept.per_template]
    assert positions == sorted(positions)
    assert kept.overall == everything.overall
    # fewer than the worse rows: the worse ones with the smallest p
    two = verdict_of(comparison, 2)
    assert all(r.outcome == "worse" for r in two.per_template) and two.left_out == total - 2
    assert verdict_of(comparison, 0).per_template == [] and verdict_of(comparison, total) == (
        everything
    )
    with pytest.raises(ValueError, match="max_template_rows"):
        verdict_of(comparison, -1)


def test_a_left_out_row_with_judge_noise_still_shows_the_judge_se_column(
    comparison: dict[str, Any],
) -> None:
    noisy = json.loads(json.dumps(comparison))
    rows = noisy["metrics"][0]["per_template"]
    quiet = [r for r in rows if r["better"] is None]
    quiet[-1]["judge_se"] = 0.01  # a row that is never kept with a limit of 1
    assert verdict_of(noisy).judge_noise
    limited = verdict_of(noisy, 1)
    assert all(r.judge_se is None for r in limited.per_template)
    assert limited.noise_left_out and limited.judge_noise


def test_the_page_says_how_many_rows_it_left_out(runs: tuple[Run, Run]) -> None:
    full = _clean(build_report(runs, max_template_rows=None))
    total = len(_rows(full))
    assert total > 20 and "left out)" not in _details(full)
    page = _clean(build_report(runs, max_template_rows=5))
    assert len(_rows(page)) == 5
    assert f"Per template (5 of {total} rows) and method" in page
    assert f"The 5 rows most worth a look of {total} ({total - 5} left out)" in page
    assert "<code>qa-eval compare --per-template</code> lists them all" in page
    # the rest of the page (verdict, tables, histograms, questions) is the same
    assert (
        page.split('<section id="comparison-details">')[0]
        == (full.split('<section id="comparison-details">')[0])
    )
    assert page.split('id="templates"')[1] == full.split('id="templates"')[1]


def test_below_the_limit_the_page_is_unchanged(runs: tuple[Run, Run]) -> None:
    full = _clean(build_report(runs, max_template_rows=None))
    assert len(_rows(full)) < DEFAULT_MAX_TEMPLATE_ROWS
    assert _clean(build_report(runs)) == full
    assert _clean(build_report(runs, max_template_rows=len(_rows(full)))) == full


def test_json_lines_results_keep_the_same_rows(tmp_path: Path, runs: tuple[Run, Run]) -> None:
    paths = []
    for run in runs:
        path = tmp_path / f"{run.label}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in run.results))
        paths.append(str(path))
    scans = [scan_results(p, "report") for p in paths]
    compared = compare_files(scans[0], scans[1], labels=("a", "b"))
    page = "".join(
        report_of_files(
            scans, ["a", "b"], [None, None], compared, "t", max_questions=2000, max_template_rows=7
        )
    )
    whole = build_report(runs, compared, "t", max_template_rows=7)
    assert "left out)" in _details(page)
    assert _clean(page) == _clean(whole)


def test_the_command_keeps_the_same_rows_of_json_lines_and_whole_files(
    tmp_path: Path, runs: tuple[Run, Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    import qa_eval.report

    monkeypatch.setattr(qa_eval.report, "DEFAULT_MAX_TEMPLATE_ROWS", 4)
    pages = []
    for suffix in (".jsonl", ".json"):
        paths = []
        for run in runs:
            path = tmp_path / f"{run.label}{suffix}"
            if suffix == ".jsonl":
                path.write_text("".join(json.dumps(r) + "\n" for r in run.results))
            else:
                path.write_text(json.dumps(run.results))
            paths.append(str(path))
        target = tmp_path / f"page{suffix}.html"
        assert main(["report", *paths, "-o", str(target)]) == 0
        pages.append(_clean(target.read_text()))
    assert len(_rows(pages[0])) == 4 and "(4 of 48 rows)" in pages[0]
    assert pages[0] == pages[1]


def test_the_verdict_card_keeps_no_template_row_and_renders_as_before(
    comparison: dict[str, Any],
) -> None:
    from qa_eval.report.figures import ci_strip
    from qa_eval.report.render import environment, verdict_context

    noisy = json.loads(json.dumps(comparison))
    noisy["metrics"][0]["per_template"][-1]["judge_se"] = 0.01  # a template row's noise only
    template = environment().get_template("verdict.html.j2")
    context = verdict_context(noisy)
    assert context["verdict"].per_template == [] and context["verdict"].judge_noise
    full = verdict_of(noisy)
    strips = {(r.metric, r.template): ci_strip(r) for r in [*full.overall, *full.per_template]}
    before = {"verdict": full, "strips": strips, "noise_sigmas": context["noise_sigmas"]}
    assert template.render(**context) == template.render(**before)
    assert "judge se" in template.render(**context)
