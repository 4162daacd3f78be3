"""``qa-eval generate --verbalize llm`` against a real small model behind a real llama.cpp server
(``tests/llama_server.py``): the rewrite and round-trip calls go out, every question comes back
with a verdict (a rewrite kept, or the template kept), the queries and outputs are the graph's
whatever the wording, and a rerun makes no call. The model is tiny: its rewrites and picks are
often wrong, so this checks the mechanics, never the quality.

Marked ``real_judge`` (run by ``.ci/run`` with ``pytest -m real_judge``); skipped where
xllamacpp or the model is not installed."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import llama_server
from llama_server import LlamaServer
from qa_eval.cli import main
from qa_eval.io.files import read_data
from qa_eval.refresh.reference import refresh_reference
from qa_eval.refresh.runners import store_runner

pytestmark = [
    pytest.mark.real_judge,
    pytest.mark.skipif(
        llama_server.missing() is not None,
        reason=f"no real llama.cpp judge here: {llama_server.missing()}",
    ),
]

DEMO = Path(__file__).resolve().parents[2] / "examples" / "powergrid" / "graph.ttl"
VERDICTS = {
    "passed",
    "passed on retry",
    "failed: template kept",
    "not checked: no distractor",
    "judge error: template kept",
    "duplicate text: template kept",
}


def test_generate_with_a_real_model(tmp_path: Path) -> None:
    config = tmp_path / "judge.yaml"
    with LlamaServer(tmp_path / "server.log") as server:
        generation = {"provider": "openai", "base_url": server.url, "api_key": "unused"}
        config.write_text(
            yaml.safe_dump(
                {
                    "llm": {
                        "generation": {**generation, "model": "smollm2", "max_tokens": 96},
                        "concurrency": 2,
                        "timeout": 120,
                    }
                }
            ),
            encoding="utf-8",
        )
        out, again = tmp_path / "r.yaml", tmp_path / "again.yaml"
        args = [
            "generate", "--store", str(DEMO), "-n", "4", "--seed", "1",
            "--shapes", "lookup,count", "--verbalize", "llm", "--judge-config", str(config),
            "--cache", str(tmp_path / "cache.sqlite"), "--styles", "plain",
            "--report-json", str(tmp_path / "report.json"),
        ]  # fmt: skip
        assert main([*args, "-o", str(out)]) == 0
        report = yaml.safe_load((tmp_path / "report.json").read_text())["wording"]
        assert report["judge_calls"] >= 4
        assert main([*args, "-o", str(again)]) == 0
        assert yaml.safe_load((tmp_path / "report.json").read_text())["wording"]["judge_calls"] == 0
    assert again.read_bytes() == out.read_bytes()
    data = read_data(out)
    questions = [q for t in data for q in t["questions"]]
    assert len(questions) == 4
    for q in questions:
        assert q["generated"]["round_trip"] in VERDICTS
        assert q["question_text"].strip()
        if q["generated"]["round_trip"].endswith("template kept"):
            assert q["generated"]["wording"] == "template"
        else:
            assert q["generated"]["wording"] == "plain"
    assert refresh_reference(data, store_runner(DEMO)).changes == []
