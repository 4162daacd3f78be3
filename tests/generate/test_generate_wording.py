"""``--verbalize llm`` against the scripted OpenAI-compatible server: the rewrite and the round
trip calls, a failed round trip retried once and then the template kept, the verdicts stored per
question, the cache (a second run calls nothing), the dry run (calls nothing, writes nothing)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from conftest import DEMO
from openai_stub import Reply, StubServer, asked_text, completion
from qa_eval.cli import main
from qa_eval.io.files import read_data

pytest.importorskip("pyoxigraph")
pytest.importorskip("openai")


def _script(truths: dict[str, str], wrong: str) -> Any:
    """Rewrites a question as 'Tell me: ...'; in the round trip picks the option that is the
    question's true query (``truths``: template text -> query), except for questions starting
    with ``wrong``, where it picks another."""

    def script(request: dict[str, Any], number: int) -> Reply:
        text = asked_text(request)
        question = re.search(r"<question>\n(.*?)\n</question>", text, re.S).group(1)  # type: ignore[union-attr]
        if "[qa-eval:generate-rewrite]" in text:
            return completion(json.dumps({"question": f"Tell me: {question}"}))
        template = question.split(": ", 1)[1]
        options = re.findall(r'<query id="([A-D])">\n(.*?)\n</query>', text, re.S)
        true = [letter for letter, body in options if body.split("\n# ")[0] == truths[template]]
        assert len(true) == 1
        pick = true[0]
        if template.startswith(wrong):
            pick = next(letter for letter, _ in options if letter != pick)
        return completion(json.dumps({"choice": pick}))

    return script


def _config(tmp_path: Path, url: str) -> Path:
    path = tmp_path / "judge.yaml"
    path.write_text(
        "llm:\n"
        f"  generation: {{provider: openai, model: gpt-4o-mini, base_url: '{url}', api_key: x}}\n",
        encoding="utf-8",
    )
    return path


def _run(tmp_path: Path, url: str, out: Path, *extra: str) -> int:
    return main(
        [
            "generate",
            "--store",
            str(DEMO),
            "-n",
            "12",
            "-o",
            str(out),
            "--seed",
            "3",
            "--shapes",
            SHAPES,
            "--verbalize",
            "llm",
            "--judge-config",
            str(_config(tmp_path, url)),
            "--cache",
            str(tmp_path / "cache.sqlite"),
            "--report-json",
            str(tmp_path / "rep.json"),
            *extra,
        ]
    )


def _truths(tmp_path: Path) -> dict[str, str]:
    """Template question -> its query, from the same generation worded by templates."""
    out = tmp_path / "template.yaml"
    args = ["-n", "12", "-o", str(out), "--seed", "3", "--shapes", SHAPES]
    assert main(["generate", "--store", str(DEMO), *args]) == 0
    return {
        q["question_text"]: q["reference_steps"][-1][0]["args"]["query"]
        for t in read_data(out)
        for q in t["questions"]
    }


SHAPES = "lookup,reverse_lookup,boolean,count"


def test_rewrites_are_checked_by_a_round_trip(tmp_path: Path) -> None:
    truths = _truths(tmp_path)
    with StubServer(_script(truths, wrong="Is")) as server:
        out = tmp_path / "r.yaml"
        assert _run(tmp_path, server.url, out, "--styles", "conversational") == 0
        questions = [q for t in read_data(out) for q in t["questions"]]
        calls = len(server.chat_requests)
        report = json.loads((tmp_path / "rep.json").read_text())["wording"]
        out2 = tmp_path / "r2.yaml"
        assert _run(tmp_path, server.url, out2, "--styles", "conversational") == 0
        assert len(server.chat_requests) == calls  # the same run again: all from the cache
    verdicts = {q["generated"]["round_trip"] for q in questions}
    assert verdicts == {"passed", "failed: template kept"}
    kept = [q for q in questions if q["generated"]["round_trip"] == "passed"]
    failed = [q for q in questions if q["generated"]["round_trip"] == "failed: template kept"]
    assert len(failed) == 3 and len(kept) == 9  # the three booleans fail
    for q in kept:
        assert q["question_text"].startswith("Tell me: ")
        assert q["generated"]["wording"] == "conversational"
    for q in failed:  # the booleans ("Is the ...") fail twice and keep the template
        assert q["question_text"].startswith("Is ")
        assert q["generated"]["wording"] == "template"
    # a rewrite and a round trip per question, and the failed ones a second of each
    assert calls == report["judge_calls"]
    assert calls + report["cached"] == 2 * len(questions) + 2 * len(failed)
    assert report["verdicts"] == {"passed": 9, "failed: template kept": 3}
    assert report["styles"] == {"conversational": 9}
    assert out2.read_bytes() == out.read_bytes()
    again = json.loads((tmp_path / "rep.json").read_text())["wording"]
    assert again["judge_calls"] == 0 and again["cached"] == calls + report["cached"]


def test_dry_run_calls_nothing_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with StubServer(_script({}, wrong="")) as server:
        out = tmp_path / "r.yaml"
        assert _run(tmp_path, server.url, out, "--dry-run") == 0
        assert server.chat_requests == []
    printed = capsys.readouterr().out
    assert "generate_rewrite" in printed and "no judge call was made" in printed
    assert not out.exists()


def test_llm_options_need_llm(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.yaml"
    assert main(["generate", "--store", str(DEMO), "-n", "2", "-o", str(out), "--dry-run"]) == 2
    assert "--verbalize llm" in capsys.readouterr().err
    code = main(["generate", "--store", str(DEMO), "-n", "2", "-o", str(out), "--verbalize", "llm"])
    assert code == 2
    assert "needs a judge" in capsys.readouterr().err
    assert not out.exists()


def test_max_cost_stops_the_calls_and_keeps_the_templates(tmp_path: Path) -> None:
    truths = _truths(tmp_path)
    with StubServer(_script(truths, wrong="")) as server:
        out = tmp_path / "r.yaml"
        assert _run(tmp_path, server.url, out, "--max-cost", "0.0000001", "--concurrency", "1") == 0
        calls = len(server.chat_requests)
    questions = [q for t in read_data(out) for q in t["questions"]]
    kept = [
        q for q in questions if q["generated"]["round_trip"] == "budget exceeded: template kept"
    ]
    assert kept and calls < 2 * len(questions)
    for q in kept:
        assert q["generated"]["wording"] == "template"
        assert q["question_text"] in truths
