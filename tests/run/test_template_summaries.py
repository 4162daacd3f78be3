"""A streamed run (``evaluate -o RESULTS.jsonl``) keeps its per-template summaries in a temporary
file and writes the aggregates file with them spliced in: the bytes of the run that holds its
results whole (``-o RESULTS.json``), through the CLI, for every aggregates format, with
``--workers 2`` and with graphrag-eval's keys, on a reference whose templates' questions are
scattered over its lines (each template's part goes to the spill file and comes back)."""

from __future__ import annotations

import random
import warnings
from pathlib import Path
from typing import Any

import orjson
import pytest
from test_pinned_outputs import _benchmark

from qa_eval.aggregate.summaries import TemplateSummaries
from qa_eval.cli import main
from qa_eval.run.files import evaluate_files


@pytest.fixture(scope="module")
def scattered(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The benchmark's matching mix (200 questions, 40 templates) as one question a line, the
    lines shuffled: a template's questions are rarely next to each other."""
    folder = tmp_path_factory.mktemp("scattered")
    reference, responses = _benchmark().dataset(200)
    lines = [{"template_id": t["template_id"], **q} for t in reference for q in t["questions"]]
    random.Random(7).shuffle(lines)
    ref, resp = folder / "reference.jsonl", folder / "responses.jsonl"
    ref.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    rows = responses.values() if isinstance(responses, dict) else responses
    resp.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    return ref, resp


def _evaluate(ref: Path, resp: Path, output: Path, aggregates: Path, *extra: str) -> bytes:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(
            [
                "evaluate",
                str(ref),
                str(resp),
                "-o",
                str(output),
                "--aggregates",
                str(aggregates),
                "--no-judge",
                "-q",
                *extra,
            ]
        )
    assert code == 0
    return aggregates.read_bytes()


@pytest.mark.parametrize("suffix", [".json", ".yaml", ".jsonl"])
def test_a_streamed_run_writes_the_aggregates_of_a_run_held_whole(
    scattered: tuple[Path, Path], tmp_path: Path, suffix: str
) -> None:
    ref, resp = scattered
    whole = _evaluate(ref, resp, tmp_path / "whole.json", tmp_path / f"whole{suffix}")
    streamed = _evaluate(ref, resp, tmp_path / "one.jsonl", tmp_path / f"one{suffix}")
    assert streamed == whole
    two = _evaluate(ref, resp, tmp_path / "two.jsonl", tmp_path / f"two{suffix}", "--workers", "2")
    # the same bytes up to the signature, which says how the run was spread
    assert _head(two) == _head(whole) and _without_spread(two, suffix) == _without_spread(
        whole, suffix
    )
    keys = ("--keys", "graphrag-eval")
    original = _evaluate(ref, resp, tmp_path / "o.json", tmp_path / f"o{suffix}", *keys)
    assert _evaluate(ref, resp, tmp_path / "p.jsonl", tmp_path / f"p{suffix}", *keys) == original
    assert not list(tmp_path.glob(".*"))  # (no piece left beside the aggregates)


def _head(data: bytes) -> bytes:
    """The aggregates' bytes before the signature (per_template, micro, macro, per_tag)."""
    at = max(data.find(b'"signature"'), data.find(b"\nsignature:"))
    assert at > 0
    return data[:at]


def _without_spread(data: bytes, suffix: str) -> bytes:
    """The aggregates' bytes without the signature's ``spread`` (how the run was spread)."""
    if suffix == ".yaml":
        import yaml

        parsed: Any = yaml.safe_load(data)
    else:
        parsed = orjson.loads(data)
    parsed["signature"].pop("spread", None)
    return orjson.dumps(parsed)


def test_the_run_gives_its_per_template_as_a_mapping_read_from_the_file(
    scattered: tuple[Path, Path], tmp_path: Path
) -> None:
    ref, resp = scattered
    kept = evaluate_files(ref, resp, output=tmp_path / "r.jsonl", no_judge=True, cache=False)
    held = evaluate_files(ref, resp, output=tmp_path / "r.json", no_judge=True, cache=False)
    per_template = kept.aggregates["per_template"]
    assert isinstance(per_template, TemplateSummaries) and len(per_template) == 40
    assert list(per_template.items()) == list(held.aggregates["per_template"].items())
    assert kept.summary()["per_template"] == held.aggregates["per_template"]
    assert type(kept.summary()["per_template"]) is dict  # (what --format json prints)
