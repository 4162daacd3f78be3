"""A real small judge against people's labels, end to end: ``evaluate`` then ``agreement``.

``tests/data/agreement/`` holds 30 fact questions (``reference.yaml``), one answer each
(``responses.jsonl``) and two annotators' labels of ``answer_f1`` (``labels.csv``: 1 = correct,
0 = wrong; both say 1 on 13 answers, 0 on 15, and they disagree on 2). The
judge is SmolLM2-135M on llama.cpp (``tests/llama_server.py``): its agreement with the labels is
poor, and that is the honest figure (docs/agreement.md reports it). This module checks the
plumbing only: every question has a value or a counted error, every figure of the binary-label,
continuous-judge case is present (or its absence is explained), ``n`` is 30 less the tied and
failed items, and the command prints no traceback. ``QA_EVAL_AGREEMENT_OUT=DIR`` keeps the
results and the agreement report there (how the figures in the docs were made).

Marked ``real_judge``: deselected by default, run by ``.ci/run`` with ``pytest -m real_judge``;
skipped, saying why, where xllamacpp or the model is not installed.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any

import pytest

import llama_server
from llama_server import LlamaServer
from qa_eval.cli import main
from qa_eval.io.files import write_data

pytestmark = [
    pytest.mark.real_judge,
    pytest.mark.skipif(
        llama_server.missing() is not None,
        reason=f"no real llama.cpp judge here: {llama_server.missing()}",
    ),
]

DATA = Path(__file__).resolve().parents[1] / "data" / "agreement"
QUESTIONS = 30


def _config(url: str) -> dict[str, Any]:
    return {
        "llm": {
            "generation": {
                "provider": "openai",
                "base_url": url,
                "api_key": "unused",
                "model": "smollm2",
                "max_tokens": 192,
            },
            "embedding": {"provider": "offline"},
            "concurrency": 2,
            "timeout": 120,
            "max_attempts": 8,
        },
        "answer_correctness": {"enabled": True},
        "answer_relevance": {"enabled": False},
    }


def _tied_items() -> set[str]:
    """The items the two annotators label differently (no majority: left out, counted tied)."""
    by_item: dict[str, set[str]] = {}
    with (DATA / "labels.csv").open(encoding="utf-8") as f:
        for row in csv.DictReader(f):
            by_item.setdefault(row["question_id"], set()).add(row["label"])
    return {item for item, labels in by_item.items() if len(labels) > 1}


def test_evaluate_then_agreement_with_smollm2(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    out = Path(os.environ.get("QA_EVAL_AGREEMENT_OUT") or tmp_path)
    out.mkdir(parents=True, exist_ok=True)
    with LlamaServer(tmp_path / "server.log") as server:
        config = tmp_path / "judge.yaml"
        write_data(config, _config(server.url))
        results = out / "smollm2.jsonl"
        code = main(
            [
                "evaluate",
                str(DATA / "reference.yaml"),
                str(DATA / "responses.jsonl"),
                "-c",
                str(config),
                "-o",
                str(results),
                "--no-cache",
            ]
        )
    evaluated = capfd.readouterr()
    assert code in (0, 1), evaluated.err  # 1: some judge calls failed, counted below
    rows = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == QUESTIONS
    failed = [r for r in rows if r.get("answer_f1") is None]
    for row in failed:  # no value: an error sentence says why
        assert row.get("answer_correctness_error"), row
        assert "Traceback" not in row["answer_correctness_error"]

    report = out / "agreement.json"
    code = main(
        ["agreement", str(results), "--labels", str(DATA / "labels.csv"), "-o", str(report)]
    )
    shown = capfd.readouterr()
    assert code == 0, shown.err
    assert "Traceback" not in shown.err + evaluated.err
    (out / "agreement.txt").write_text(shown.out, encoding="utf-8")
    data = json.loads(report.read_text(encoding="utf-8"))
    (judge,) = data["judges"]
    assert judge["label"] == "smollm2" and judge["model"] == "smollm2"
    assert judge["cost"] is None  # an unpriced local model: unknown, never 0
    (entry,) = judge["metrics"]
    assert entry["metric"] == "answer_f1" and entry["kind"] == "binary"
    tied = _tied_items()
    assert entry["n_tied"] == len(tied) == 2
    # a tied item is left out as tied whether or not the judge gave it a value
    unjudged = {r["question_id"] for r in failed} - tied
    assert entry["missing"] == len(unjudged)
    assert entry["n"] == QUESTIONS - len(tied) - len(unjudged)
    assert entry["n"] > 0
    # every figure of binary labels: present, or absent for a reason the report can give
    assert 0 <= entry["accuracy"] <= 1 and len(entry["accuracy_ci"]) == 2
    assert entry["confusion"]["classes"] == [False, True]
    assert sum(map(sum, entry["confusion"]["counts"])) == entry["n"]
    if entry["judge_values"] == "continuous":
        assert entry["threshold"] is not None and "threshold_cv" in entry
        assert 0 <= entry["auc"] <= 1  # a judge with one value everywhere has AUC 0.5
    # kappa is undefined (None, with no interval) only when its chance agreement is 1: the
    # labels and the judge's calls all one and the same class. When only one side keeps to a
    # single class, kappa is defined, and 0 (CI once saw SmolLM2 call every item one class).
    counts = entry["confusion"]["counts"]
    rows = [i for i, row in enumerate(counts) if sum(row)]
    columns = [j for j, column in enumerate(zip(*counts)) if sum(column)]
    chance_is_one = len(rows) == 1 and rows == columns
    assert (entry.get("kappa") is None) == chance_is_one
    if len(rows) == 1 or len(columns) == 1:
        assert chance_is_one or abs(entry["kappa"]) < 1e-9
    people = data["annotators"]["metrics"][0]
    assert people["metric"] == "answer_f1" and people["n"] == QUESTIONS
    assert people["level"] == "nominal" and 0 < people["alpha"] < 1
    assert {r["annotator"] for r in people["raters"]} == {"ann_a", "ann_b"}
    assert "answer_f1 (binary labels" in shown.out
