"""Every key qa-eval writes is either one graphrag-eval 6.6.1 writes or listed in
docs/compatibility.md (run with every metric, a custom metric, repeats and tags, over HTTP
against the scripted judge); ``keys="graphrag-eval"`` leaves only 6.6.1's. And without a config,
``run_evaluation`` calls no judge even with ``OPENAI_API_KEY`` set, as 6.6.1."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from compat_doc import documented_keys, listed
from openai_stub import StubServer
from qa_eval import compute_aggregates, run_evaluation
from qa_eval.cli import main
from qa_eval.io.keysets import own_keys
from qa_eval.run.files import evaluate_files

# What graphrag-eval 6.6.1 writes, read from its code (evaluation.py, answer_correctness.py,
# answer_relevance.py, custom_evaluation.py, steps/, aggregation.py): written out here, not
# taken from qa-eval, so the check does not depend on what it checks.
RESULT_6_6_1 = {
    "template_id", "question_id", "question_text", "input_tokens", "output_tokens",
    "total_tokens", "elapsed_sec", "actual_answer", "reference_answer", "reference_steps",
    "status", "error", "actual_steps", "steps_score", "answer_relevance",
    "answer_relevance_error", "answer_reference_claims_count", "answer_actual_claims_count",
    "answer_matching_claims_count", "answer_correctness_reason", "answer_recall",
    "answer_precision", "answer_f1", "answer_correctness_error",
}  # fmt: skip
STEP_METRICS_6_6_1 = {
    f"retrieval_{kind}_{part}"
    for kind in ("answer", "context")
    for part in ("recall", "precision", "f1", "recall_error", "precision_error")
}
AGGREGATED_6_6_1 = {
    "answer_recall", "answer_precision", "answer_relevance", "answer_f1", "steps_score",
    "input_tokens", "output_tokens", "total_tokens", "elapsed_sec",
}  # fmt: skip
GROUP_6_6_1 = {"number_of_error_samples", "number_of_success_samples", "steps"}
STEP_COUNTERS_6_6_1 = {"total", "errors", "once_per_sample", "empty_results"}
STATISTICS_6_6_1 = {"sum", "mean", "median", "min", "max"}

CHUNKS = json.dumps(
    [
        {"id": "d1", "text": "Substation Oslo has transformers T1 and T2."},
        {"id": "d2", "text": "Bergen lies on the west coast."},
    ]
)
SELECT = json.dumps(
    {"head": {"vars": ["a"]}, "results": {"bindings": [{"a": {"type": "literal", "value": "1"}}]}}
)
REFERENCE = [
    {
        "template_id": "t1",
        "questions": [
            {
                "id": "q1",
                "question_text": "Which transformers are in Oslo?",
                "reference_answer": "T1 and T2.",
                "question_type": "list",
                "difficulty": "easy",
                "reference_steps": [
                    [{"name": "retrieval", "args": {"k": 2}, "output": CHUNKS}],
                    [
                        {
                            "name": "sparql_query",
                            "args": {"query": "SELECT ?a {}"},
                            "output": SELECT,
                            "output_media_type": "application/sparql-results+json",
                            "required_columns": ["a"],
                        }
                    ],
                ],
            },
            {
                "id": "q2",
                "question_text": "How many transformers are in Oslo?",
                "reference_answer": "Two.",
                "difficulty": "hard",
                "reference_steps": [[{"name": "search", "output": "zz"}]],
            },
        ],
    },
    {
        "template_id": "t2",
        "questions": [
            {"id": "q3", "question_text": "Unanswered?", "reference_answer": "x"},
            {"id": "q4", "question_text": "Failed?", "reference_answer": "y"},
        ],
    },
]
RESPONSES = [
    {
        "question_id": "q1",
        "actual_answer": "Oslo has T1. Oslo also has T2.",
        "input_tokens": 10,
        "output_tokens": 2,
        "total_tokens": 12,
        "elapsed_sec": 1.5,
        "actual_steps": [
            {"id": "s1", "name": "retrieval", "args": {"k": 2}, "status": "success"}
            | {"output": CHUNKS},
            {"id": "s2", "name": "sparql_query", "args": {}, "status": "success", "output": SELECT},
        ],
    },
    {
        "question_id": "q2",
        "actual_answer": "I don't know.",
        "actual_steps": [
            {"id": "a", "name": "search", "status": "success"},
            {"id": "b", "name": "sparql_query", "status": "error", "error": "timeout"},
        ],
    },
    {"question_id": "q4", "error": "the agent crashed", "status": "error"},
]
CUSTOM = [
    {
        "name": "tone",
        "inputs": ["question", "actual_answer"],
        "instructions": "Is the answer polite?",
        "outputs": {"polite": "1 if polite, else 0", "tone_word": "one word"},
    }
]
CUSTOM_6_6_1 = {"polite", "tone_word", "tone_error"}
STEP_FIELDS = {
    "id",
    "name",
    "args",
    "output",
    "status",
    "error",
    "output_media_type",
    "required_columns",
}  # fmt: skip  (the inputs' own step keys, passed through)


def _config(url: str, repeats: int) -> dict[str, Any]:
    return {
        "llm": {
            "generation": {"model": "gpt-4o-mini", "base_url": url, "api_key": "x"},
            "embedding": {"provider": "openai", "base_url": url, "api_key": "x"},
            "repeats": repeats,
        },
        "custom_evaluations": CUSTOM,
        "answer_relevance": {"rubric_fallback": True},
    }


def _keys(results: list[dict[str, Any]], aggregates: dict[str, Any]) -> dict[str, set[str]]:
    """The keys seen at each level of results and aggregates."""
    seen: dict[str, set[str]] = {k: set() for k in ("result", "step", "reference")}
    for result in results:
        seen["result"] |= set(result)
        for step in result.get("actual_steps") or ():
            seen["step"] |= set(step)
        for group in result.get("reference_steps") or ():
            for step in group:
                seen["reference"] |= set(step)
    seen["top"] = set(aggregates)
    groups = [aggregates["micro"], *aggregates["per_template"].values()]
    for by_value in (aggregates.get("per_tag") or {}).values():
        groups += by_value.values()
    seen["group"], seen["statistic"], seen["steps"] = set(), set(), set()
    for group in groups:
        seen["group"] |= set(group)
        for key, block in group.items():
            if key == "steps":
                seen["steps"] |= set(block)
                for name, inner in block.items():
                    if name not in STEP_COUNTERS_6_6_1:  # a step metric's statistics
                        seen["statistic"] |= set(inner)
            elif isinstance(block, dict):
                seen["statistic"] |= set(block)
    seen["macro"] = set(aggregates["macro"])
    seen["macro_statistic"] = {s for b in aggregates["macro"].values() for s in b}
    return seen


ALLOWED_6_6_1 = {
    "result": RESULT_6_6_1 | CUSTOM_6_6_1,
    "step": STEP_FIELDS | STEP_METRICS_6_6_1,
    "reference": STEP_FIELDS | {"matches"},
    "top": {"per_template", "micro", "macro"},
    "group": GROUP_6_6_1 | AGGREGATED_6_6_1 | STEP_METRICS_6_6_1 | {"polite", "tone_word"},
    "statistic": STATISTICS_6_6_1,
    "steps": STEP_COUNTERS_6_6_1 | STEP_METRICS_6_6_1,
    "macro": AGGREGATED_6_6_1 | STEP_METRICS_6_6_1 | {"polite", "tone_word"},
    "macro_statistic": {"mean"},
}


def _run(url: str, repeats: int, keys: str) -> dict[str, set[str]]:
    config = _config(url, repeats)
    results = run_evaluation(
        copy.deepcopy(REFERENCE),
        RESPONSES,
        config=config,
        enable=["graphrag", "ragas-text"],
        keys=keys,
    )
    aggregates = compute_aggregates(results, config, keys=keys)
    return _keys(list(results), aggregates)


def test_the_doc_table_is_the_code_table() -> None:
    assert set(documented_keys()) == {key for key, _ in own_keys()}


@pytest.mark.parametrize("repeats", [1, 2])
def test_every_key_written_is_6_6_1s_or_documented(stub: StubServer, repeats: int) -> None:
    seen = _run(stub.url, repeats, "qa-eval")
    documented = documented_keys()
    extra = {
        level: sorted(k for k in keys - ALLOWED_6_6_1[level] if not listed(k, documented))
        for level, keys in seen.items()
    }
    assert extra == {level: [] for level in seen}
    # the run exercised what the table is about: qa-eval's own keys at every level
    assert {"mismatch"} <= seen["reference"]
    assert {"llm_cost", "faithfulness", "step_errors", "tone_reason"} <= seen["result"]
    assert {"bleu_score", "non_llm_string_similarity"} <= seen["result"]
    assert {"retrieval_answer_recall_cost", "retrieval_answer_recall"} <= seen["step"]
    assert {"n", "sum"} <= seen["statistic"] and "per_tag" in seen["top"]
    if repeats > 1:
        assert {"judge_repeats", "answer_f1_sd", "answer_f1_repeats"} <= seen["result"]
        assert {"judge_sd", "judge_se"} <= seen["statistic"]


@pytest.mark.parametrize("repeats", [1, 2])
def test_graphrag_eval_keys_leave_only_6_6_1s(stub: StubServer, repeats: int) -> None:
    seen = _run(stub.url, repeats, "graphrag-eval")
    assert {level: sorted(keys - ALLOWED_6_6_1[level]) for level, keys in seen.items()} == {
        level: [] for level in seen
    }
    assert {"answer_f1", "answer_relevance", "polite", "steps_score"} <= seen["result"]
    assert {"retrieval_answer_recall", "retrieval_answer_f1"} <= seen["step"]
    assert "matches" in seen["reference"]


def test_by_tags_written_to_the_results_file_are_documented(tmp_path: Path) -> None:
    ref, resp = tmp_path / "reference.json", tmp_path / "responses.json"
    ref.write_text(json.dumps(REFERENCE), encoding="utf-8")
    resp.write_text(json.dumps(RESPONSES), encoding="utf-8")
    out = tmp_path / "results.json"
    evaluate_files(ref, resp, output=out, by=["difficulty"], cache=False)
    written = {k for r in json.loads(out.read_text(encoding="utf-8")) for k in r}
    assert "difficulty" in written and listed("difficulty", documented_keys())
    evaluate_files(ref, resp, output=out, by=["difficulty"], cache=False, keys="graphrag-eval")
    written = {k for r in json.loads(out.read_text(encoding="utf-8")) for k in r}
    assert written <= RESULT_6_6_1 and "difficulty" not in written


def test_no_config_means_no_judge_even_with_a_key(
    stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-stale")
    monkeypatch.setenv("OPENAI_BASE_URL", stub.url)
    results = run_evaluation(copy.deepcopy(REFERENCE), RESPONSES, cache=False)
    assert stub.requests == []
    assert not any("answer_f1" in r for r in results)
    assert "pass a config with llm.generation" in results.signature["llm_metrics"]
    assert results.signature["judge"] is None
    # a config with llm still calls the judge it names
    configured = run_evaluation(
        copy.deepcopy(REFERENCE), RESPONSES, config={"llm": {"generation": {}}}, cache=False
    )
    assert stub.requests and "answer_f1" in configured[0]


def test_the_command_line_keeps_its_announced_default(
    tmp_path: Path,
    stub: StubServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", stub.url)
    ref, resp = tmp_path / "reference.json", tmp_path / "responses.json"
    ref.write_text(json.dumps(REFERENCE), encoding="utf-8")
    resp.write_text(json.dumps(RESPONSES), encoding="utf-8")
    assert main(["evaluate", str(ref), str(resp), "-q", "--no-cache"]) == 0
    assert "note: no --config and OPENAI_API_KEY is set" in capsys.readouterr().err
    assert stub.requests
    # evaluate_files is the command as a function: the same default judge
    calls = len(stub.requests)
    run = evaluate_files(ref, resp, cache=False)
    assert len(stub.requests) > calls and "answer_f1" in run.results[0]
