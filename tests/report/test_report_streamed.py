"""``qa-eval report`` of JSON Lines results (read a line at a time, keeping only what the page
shows) writes the page it writes for the same results read whole; with more questions than it
lists, it says how many it left out and its numbers are those of the whole."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from qa_eval.cli import main


def _results(count: int, shift: float, seed: int) -> list[dict[str, Any]]:
    """Results with errors, step metrics, a custom metric, label counts and odd template ids."""
    out = []
    for i in range(count):
        k = (i * 7 + seed) % 10
        result: dict[str, Any] = {
            "template_id": (f"t{i % 4}", 3, None)[i % 3] if i % 5 else "t0",
            "question_id": f"q{i}" if i % 9 else i,
            "question_text": f"Question {i}?",
            "status": "error" if (i + seed) % 8 == 0 else "success",
            "answer_f1": min(1.0, k / 10 + shift),
            "elapsed_sec": 1.0 + k / 4,
            "total_tokens": 100 + k,
            "actual_steps": [
                {"name": "retrieval", "id": f"c{i}", "retrieval_answer_recall": k / 10},
                {"name": "sparql_query", "id": f"s{i}", "status": "success"},
            ],
            "reference_steps": [[{"name": "sparql_query", "matches": f"s{i}" if k > 3 else None}]],
        }
        if i % 3 == 0:
            result["my_score"] = k * 1.5
        if result["status"] == "error":
            result["error"] = "timeout"
            del result["answer_f1"]
        out.append(result)
    return out


def _write(folder: Path, name: str, results: list[dict[str, Any]]) -> tuple[str, str]:
    """The results as JSON Lines (read as a stream) and as JSON (read whole)."""
    lines, whole = folder / f"{name}.jsonl", folder / "whole" / f"{name}.json"
    whole.parent.mkdir(exist_ok=True)
    lines.write_text("".join(json.dumps(r) + "\n" for r in results))
    whole.write_text(json.dumps(results))
    return str(lines), str(whole)


def _page(tmp_path: Path, paths: list[str], *options: str) -> str:
    target = tmp_path / "page.html"
    assert main(["report", *paths, "-o", str(target), *options]) == 0
    return re.sub(r"generated \d{4}-\d\d-\d\d \d\d:\d\d UTC", "generated", target.read_text())


@pytest.mark.parametrize(
    "runs, options",
    [
        (1, ()),
        (2, ()),
        (2, ("--max-questions", "7")),
        (3, ("--exclude-errors", "--max-questions", "3")),
        (2, ("--no-compare", "--max-questions", "5")),
    ],
)
def test_json_lines_give_the_page_of_the_runs_read_whole(
    tmp_path: Path, runs: int, options: tuple[str, ...]
) -> None:
    files = [
        _write(tmp_path, f"run{i}", _results(40 - 3 * i, 0.1 * i, i)[:: -1 if i == 1 else 1])
        for i in range(runs)
    ]
    streamed = _page(tmp_path, [lines for lines, _ in files], *options)
    assert streamed == _page(tmp_path, [whole for _, whole in files], *options)


def test_more_questions_than_listed_says_how_many_were_left_out(tmp_path: Path) -> None:
    a, b = _results(120, 0.0, 0), _results(120, 0.2, 3)
    files = [_write(tmp_path, "a", a)[0], _write(tmp_path, "b", b)[0]]
    kept = _page(tmp_path, files, "--max-questions", "10")
    assert "The 10 worst of 120 questions (110 left out; max_questions 10;" in kept
    assert kept.count('<details data-i="') == 10
    everything = _page(tmp_path, files, "--max-questions", "0")  # all of them listed
    assert everything.count('<details data-i="') == 120 and "left out" not in everything
    head = _numbers(kept)  # verdict, tables, histograms
    assert head == _numbers(everything)
    assert "answer_f1" in head and "retrieval_answer_recall" in head


def _numbers(page: str) -> str:
    """The page before the question list, with the verdict's names of questions that got worse
    unlinked (a link where the question is listed, a note where it is not)."""
    head = page.split('<section id="questions">')[0]
    head = re.sub(r'<a href="#q-\d+">([^<]*)</a>', r"\1", head)
    return re.sub(r'<span title="not in the drill-down [^"]*">([^<]*)</span>', r"\1", head)


def test_a_run_with_trials_is_read_whole_and_gives_the_same_page(tmp_path: Path) -> None:
    results = _results(12, 0.0, 1)
    for result in results:
        result["trial"] = 1
    lines, whole = _write(tmp_path, "run", results)
    assert _page(tmp_path, [lines]) == _page(tmp_path, [whole])


def test_a_page_written_in_pieces_is_put_in_place_whole_or_not_at_all(tmp_path: Path) -> None:
    """The streamed report is written piece by piece beside its target and moved into place: the
    pieces joined are the file's text, and a failure while drawing leaves the old page as it was
    and no partial file behind."""
    from qa_eval.report.streamed import write_page

    target = tmp_path / "page.html"
    write_page(target, iter(["<p>", "é\n", "</p>"]))
    assert target.read_text(encoding="utf-8") == "<p>é\n</p>"

    def failing() -> Any:
        yield "<p>new"
        raise RuntimeError("drawing failed")

    with pytest.raises(RuntimeError, match="drawing failed"):
        write_page(target, failing())
    assert target.read_text(encoding="utf-8") == "<p>é\n</p>"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["page.html"]
