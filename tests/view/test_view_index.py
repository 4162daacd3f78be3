"""The viewer's index: built once, rebuilt only when the content changes, in the cache folder
when the results' folder is read-only; the table's filters, sorting and search."""

from __future__ import annotations

import gzip
import os
import sys
from pathlib import Path

import orjson
import pytest
import yaml

sys.path.insert(0, str(Path(__file__).parents[1] / "report"))

from test_report import sample_results

from qa_eval.errors import InputError
from qa_eval.view.index import index_path, load_result, open_index
from qa_eval.view.query import TableView, page_of


def write(path: Path, records: list[dict]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def ids(index, **view) -> list[str]:
    return [r["question_id"] for r in page_of(index, TableView(**view)).rows]


def test_built_once_and_rebuilt_when_the_content_changes(tmp_path: Path) -> None:
    results = write(tmp_path / "run.jsonl", sample_results())
    index = open_index(results)
    assert index.path == tmp_path / "run.jsonl.qa-view.sqlite" and index.count == 6
    built = index.path.stat().st_ino  # a rebuild writes a new file and renames it
    assert open_index(results).path.stat().st_ino == built  # reused
    later = results.stat().st_mtime_ns + 10**9
    os.utime(results, ns=(later, later))  # touched, same content: reused
    assert open_index(results).path.stat().st_ino == built
    records = sample_results()
    records[0]["answer_recall"] = 0.0
    write(results, records)  # new content: rebuilt
    again = open_index(results)
    assert again.path.stat().st_ino != built
    assert load_result(again, 0)["answer_recall"] == 0.0


def test_read_only_folder_puts_the_index_in_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    results = write(folder / "run.jsonl", sample_results())
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder.chmod(0o555)
    try:
        if os.access(folder, os.W_OK):
            pytest.skip("running as a user who may write anywhere")
        index = open_index(results)
        assert index.path.parent == tmp_path / "cache" / "qa-eval" / "view"
        assert index_path(results) == index.path and index.count == 6
    finally:
        folder.chmod(0o755)


@pytest.mark.parametrize("name", ["run.yaml", "run.json", "run.jsonl.gz", "run.yaml.gz"])
def test_every_results_format(tmp_path: Path, name: str) -> None:
    records = sample_results()
    if ".yaml" in name:
        data = yaml.safe_dump(records).encode()
    elif ".jsonl" in name:
        data = b"".join(orjson.dumps(r) + b"\n" for r in records)
    else:
        data = orjson.dumps(records)
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    index = open_index(path)
    assert index.count == 6
    assert load_result(index, 3) == records[3]


def test_a_bad_file_is_one_line_naming_it(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question_id": "q1", "template_id": "t"}\n{"question_id": [1]}\n')
    with pytest.raises(InputError, match=r"bad.jsonl.*line 2.*question_id"):
        open_index(bad)
    assert not list(tmp_path.glob("*.sqlite*"))  # nothing half-written
    with pytest.raises(InputError, match="no such file"):
        open_index(tmp_path / "missing.jsonl")


def test_filters_sorting_and_search(tmp_path: Path) -> None:
    records = sample_results()
    records[0]["trial"] = 0
    records[1]["trial"] = 1
    records[2]["difficulty"] = "hard"
    records[3]["faithfulness_error"] = "the judge's reply was not JSON"
    index = open_index(write(tmp_path / "run.jsonl", records))
    assert ids(index) == ["q0", "q1", "q2", "q3", "q4", "q5"]
    assert ids(index, template="voltage") == ["q1", "q4"]
    assert ids(index, tag="difficulty=hard") == ["q2"]
    assert ids(index, tag="answer_class=WRONG") == ["q1", "q4"]
    assert ids(index, metric="answer_recall", low=0.5, high=0.8) == ["q2", "q3"]
    assert ids(index, errors="only") == ["q4"]
    assert ids(index, errors="none", template="voltage") == ["q1"]
    assert ids(index, failed="faithfulness") == ["q3"]
    assert ids(index, trial=1) == ["q1"]
    assert ids(index, sort="answer_recall", desc=True)[:2] == ["q5", "q4"]
    assert ids(index, q="question 3") == ["q3"]
    assert ids(index, q="claims matched 4") == ["q4"]  # a judge's reason
    assert ids(index, q="missing row") == ["q0", "q1", "q2"]  # a step's mismatch
    assert ids(index, q="timed out") == ["q4"]  # the error
    assert ids(index, q=r"answer [13]\b", regex=True) == ["q1", "q3"]
    assert ids(index, q='"; DROP TABLE q; --') == []  # words only reach FTS, quoted
    page = page_of(index, TableView(size=25, page=1, sort="qid"))
    assert page.total == 6 and page.pages == 1
    with pytest.raises(InputError, match="regular expression"):
        page_of(index, TableView(q="(", regex=True))
    with pytest.raises(InputError, match="no metric"):
        page_of(index, TableView(sort="nope"))


def test_the_view_round_trips_through_the_url() -> None:
    view = TableView(template="a b", q="x&y", regex=True, sort="answer_f1", desc=True, page=3)
    from urllib.parse import parse_qsl

    assert TableView.from_query(dict(parse_qsl(view.query()))) == view
    assert TableView().query() == ""
    for bad in ({"page": "0"}, {"size": "7"}, {"low": "x"}, {"errors": "maybe"}):
        with pytest.raises(InputError):
            TableView.from_query(bad)


def test_every_text_key_is_a_tag_filter(tmp_path: Path) -> None:
    from qa_eval.view.index import MAX_TAG_KEYS
    from qa_eval.view.query import tags_of
    from qa_eval.view.queue import queue_order

    keys = MAX_TAG_KEYS + 6
    records = [
        {
            "template_id": "t",
            "question_id": f"q{i}",
            "question_text": f"question {i}",
            **{f"key{k:03d}": f"v{(i + k) % 3}" for k in range(keys)},
        }
        for i in range(9)
    ]
    index = open_index(write(tmp_path / "wide.jsonl", records))
    assert len(index.tags) == MAX_TAG_KEYS and len(index.extra_tags) == 6
    last = f"key{keys - 1:03d}"  # past the columns: in the side table
    expected = [r["question_id"] for r in records if r[last] == "v1"]
    assert ids(index, tag=f"{last}=v1") == expected
    assert ids(index, tag=f"{last}=v1", sort="qid", desc=True) == sorted(expected, reverse=True)
    assert ids(index, tag=f"{last}=nothing") == []
    assert ids(index, tag="key000=v1") == [r["question_id"] for r in records if r["key000"] == "v1"]
    offered = {(k, v) for k, v, _ in tags_of(index)}
    assert {(f"key{k:03d}", f"v{j}") for k in range(keys) for j in range(3)} == offered
    with pytest.raises(InputError, match="no tag 'key999'"):
        page_of(index, TableView(tag="key999=v1"))
    assert sorted(queue_order([index], 0, last, "sample")) == list(range(9))
    assert index.classes[last] == ["v0", "v1", "v2"]
