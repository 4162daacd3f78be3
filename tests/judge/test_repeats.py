"""Judge variance (``llm.repeats`` / ``--repeats``): every LLM metric asked N times per question as
distinct cache entries, merged into mean, standard deviation and per-repeat values, label flips,
aggregates with the judge's noise beside the spread between questions, and compare's
``within_judge_noise`` - over real HTTP against a scripted server that answers differently each
time it sees the same prompt; the statistics are checked by simulation."""

from __future__ import annotations

import json
import math
import random
import re
import statistics
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from fakes import substation_dataset
from openai_stub import Reply, StubServer, completion, error, oracle_content, prompt_text
from qa_eval import compute_aggregates, run_evaluation
from qa_eval.cli import main
from qa_eval.compare.runs import compare_runs
from qa_eval.compare.table import format_table
from qa_eval.config import parse_config
from qa_eval.errors import InputError
from qa_eval.judge.repeats import judge_noise, merge_repeats, sample_variance
from qa_eval.metrics.answer.correctness import correctness_scores

REFERENCE, RESPONSES = substation_dataset(4)


class PerRepeat:
    """A script that counts how often it has seen each prompt and answers the n-th time
    differently: correctness matches ``n % 3`` of 2 claims; the class of question q0 alternates
    CORRECT / WRONG (the others are always CORRECT); other prompts get the oracle's reply."""

    def __init__(self) -> None:
        self.seen: Counter[str] = Counter()
        self.lock = threading.Lock()

    def __call__(self, request: dict[str, Any], number: int) -> Reply:
        text = prompt_text(request)
        with self.lock:
            occurrence = self.seen[text]
            self.seen[text] += 1
        if "[qa-eval:answer-correctness]" in text:
            content = json.dumps(
                {
                    "reference_claims_count": 2,
                    "actual_claims_count": 2,
                    "matching_claims_count": occurrence % 3,
                    "reason": f"try {occurrence}",
                }
            )
        elif "[qa-eval:classify]" in text:
            flips = "substation 0?" in text
            label = "WRONG" if flips and occurrence % 2 else "CORRECT"
            content = json.dumps({"label": label, "reason": "compared"})
        else:
            content = oracle_content(request)
        return completion(content, prompt_tokens=100, completion_tokens=10)


def config(url: str, repeats: int = 3, **blocks: Any) -> dict[str, Any]:
    llm = {
        "generation": {"model": "gpt-4o-mini", "base_url": url, "api_key": "x"},
        "embedding": {"provider": "openai", "base_url": url, "api_key": "x"},
        "repeats": repeats,
    }
    return {"llm": llm, **blocks}


def chat_calls(server: StubServer) -> int:
    return len(server.chat_requests)


def test_each_repeat_is_its_own_call_and_the_values_are_merged(tmp_path: Path) -> None:
    script = PerRepeat()
    cache = tmp_path / "cache.sqlite3"
    with StubServer(script) as server:
        results = run_evaluation(
            REFERENCE,
            RESPONSES,
            config=config(server.url, answer_class=True),
            cache=cache,
            disable=["answer_relevance", "retrieval_context"],
        )
        calls = chat_calls(server)
        # three metrics (correctness, class, retrieval answer recall + precision) x 3 repeats
        assert calls == 4 * 3 * (1 + 1 + 2)
        for result in results:
            f1s = [correctness_scores(2, 2, m)[2] for m in (0, 1, 2)]
            assert sorted(result["answer_f1_repeats"]) == sorted(f1s)
            assert result["answer_f1"] == pytest.approx(statistics.mean(f1s))
            assert result["answer_f1_sd"] == pytest.approx(statistics.stdev(f1s))
            assert result["judge_repeats"] == 3
            # the costs of all three repeats: 3 x (100 prompt + 10 completion tokens)
            assert result["answer_correctness_cost"] == pytest.approx(
                3 * (100 * 0.15 + 10 * 0.6) / 1e6
            )
            step = result["actual_steps"][0]
            assert len(step["retrieval_answer_recall_repeats"]) == 3
            assert step["retrieval_answer_recall_sd"] == 0  # the oracle says the same thrice
            # claim counts are the first repeat's (integers, as the format says)
            assert isinstance(result["answer_matching_claims_count"], int)
        flipped = {r["question_id"]: r["answer_class_flipped"] for r in results}
        assert flipped == {"q0": True, "q1": False, "q2": False, "q3": False}
        q0 = results[0]
        assert sorted(q0["answer_class_repeats"]) == ["CORRECT", "CORRECT", "WRONG"]
        assert q0["answer_class"] == "CORRECT"  # the most frequent label

        # a rerun replays all three repeats from the cache: no call, the same values
        again = run_evaluation(
            REFERENCE,
            RESPONSES,
            config=config(server.url, answer_class=True),
            cache=cache,
            disable=["answer_relevance", "retrieval_context"],
        )
        assert chat_calls(server) == calls
        assert [dict(r) for r in again] == [dict(r) for r in results]
        assert again.signature["options"]["repeats"] == 3

    aggregates = compute_aggregates(results)
    micro = aggregates["micro"]
    flips = micro["label_flips"]["answer_class"]
    assert flips == {"n": 4, "flipped": 1, "share": 0.25}
    block = micro["answer_f1"]
    per_question = [sample_variance(r["answer_f1_repeats"]) for r in results]
    assert block["judge_sd"] == pytest.approx(math.sqrt(statistics.mean(per_question)))
    assert block["judge_n"] == 4
    assert block["judge_se"] == pytest.approx(math.sqrt(sum(v / 3 for v in per_question)) / 4)
    assert block["sd"] == pytest.approx(statistics.stdev(r["answer_f1"] for r in results))
    assert "judge_sd" in aggregates["per_template"]["t1"]["answer_f1"]


def test_a_cache_made_without_repeats_serves_repeat_zero(tmp_path: Path) -> None:
    cache = tmp_path / "cache.sqlite3"
    with StubServer(PerRepeat()) as server:
        options: dict[str, Any] = {"cache": cache, "disable": ["answer_relevance"]}
        single = run_evaluation(REFERENCE, RESPONSES, config=config(server.url, 1), **options)
        first = chat_calls(server)
        assert "answer_f1_sd" not in single[0] and "judge_repeats" not in single[0]
        repeated = run_evaluation(REFERENCE, RESPONSES, config=config(server.url, 2), **options)
        assert chat_calls(server) == 2 * first  # only repeat 1 was asked
    for one, two in zip(single, repeated):
        assert two["answer_f1_repeats"][0] == one["answer_f1"]


def test_a_repeat_that_fails_is_left_out_of_the_mean(tmp_path: Path) -> None:
    """The second time a correctness prompt comes, the judge refuses it (413): the question's
    value is the mean of the other repeats and the failure is listed, not an error key."""
    seen: Counter[str] = Counter()
    lock = threading.Lock()

    def script(request: dict[str, Any], number: int) -> Reply:
        text = prompt_text(request)
        with lock:
            occurrence = seen[text]
            seen[text] += 1
        if "[qa-eval:answer-correctness]" in text and occurrence == 1:
            return error(413, "this request is too large")
        return completion(oracle_content(request))

    with StubServer(script) as server:
        results = run_evaluation(
            REFERENCE[:1],
            RESPONSES,
            config=config(server.url, 3),
            cache=False,
            disable=["answer_relevance", "retrieval_answer", "retrieval_context"],
        )
    for result in results:
        listed = result["answer_f1_repeats"]
        assert listed.count(None) == 1
        assert result["answer_f1"] == pytest.approx(
            statistics.mean(v for v in listed if v is not None)
        )
        assert "answer_correctness_error" not in result
        errors = result["answer_correctness_error_repeats"]
        assert [e is None for e in errors] == [v is not None for v in listed]


def test_verdict_flips_of_the_graphrag_metrics() -> None:
    """Faithfulness verdicts that differ between repeats flip; identical ones do not."""
    seen: Counter[str] = Counter()
    lock = threading.Lock()

    def script(request: dict[str, Any], number: int) -> Reply:
        text = prompt_text(request)
        with lock:
            occurrence = seen[text]
            seen[text] += 1
        if "[qa-eval:faithfulness-verdicts]" in text and "substation 0" in text.lower():
            count = len(re.findall(r"<statement id=", text))
            verdicts = [
                {"statement": i + 1, "reason": "r", "verdict": (occurrence + i) % 2}
                for i in range(count)
            ]
            return completion(json.dumps({"verdicts": verdicts}))
        return completion(oracle_content(request))

    with StubServer(script) as server:
        results = run_evaluation(
            REFERENCE,
            RESPONSES,
            config=config(server.url, 2),
            cache=False,
            enable=["faithfulness"],
            disable=["answer_relevance", "retrieval_answer", "retrieval_context"],
        )
    flipped = [r["faithfulness_verdicts_flipped"] for r in results]
    assert flipped == [True, False, False, False]
    q0 = results[0]
    assert q0["faithfulness_repeats"] == [0.5, 0.5]  # one of two supported, each time
    flips = compute_aggregates(results)["micro"]["label_flips"]["faithfulness_verdicts"]
    assert flips == {"n": 4, "flipped": 1, "share": 0.25}


def test_merge_rules_for_every_kind_of_key() -> None:
    records = [
        {
            "answer_f1": 0.5,
            "answer_correctness_cost": 0.01,
            "llm_cost": 0.02,
            "answer_correctness_reason": "first",
            "semantic_similarity": 0.9,
            "custom_label": "yes",
            "factual_accuracy_grade": "B",
        },
        {
            "answer_f1": 1.0,
            "answer_correctness_cost": 0.01,
            "llm_cost": 0.01,
            "answer_correctness_reason": "second",
            "custom_label": "no",
            "factual_accuracy_grade": "B",
        },
        {"answer_correctness_error": "gave up", "llm_cost": 0.0, "custom_label": "no"},
    ]
    merged = merge_repeats(records, ["answer_f1", "custom_label"])
    assert merged["answer_f1"] == 0.75
    assert merged["answer_f1_sd"] == pytest.approx(math.sqrt(0.125))
    assert merged["answer_f1_repeats"] == [0.5, 1.0, None]
    assert merged["answer_correctness_cost"] == pytest.approx(0.02)
    assert merged["llm_cost"] == pytest.approx(0.03)
    assert merged["answer_correctness_reason"] == "first"
    assert merged["semantic_similarity"] == 0.9 and "semantic_similarity_sd" not in merged
    assert merged["answer_correctness_error_repeats"] == [None, None, "gave up"]
    assert "answer_correctness_error" not in merged
    assert merged["custom_label"] == "no" and merged["custom_label_flipped"] is True
    assert merged["factual_accuracy_grade"] == "B"
    assert merged["factual_accuracy_grade_flipped"] is False
    # the same value each time: exactly no spread (not a rounding residue of the mean)
    assert merge_repeats([{"x": 0.7}] * 3, ["x"])["x_sd"] == 0.0
    # every repeat failed: the error is kept
    failed = merge_repeats([{"x_error": "a"}, {"x_error": "b"}], ["x"])
    assert failed == {"x_error": "a"}


def test_repeats_are_checked_in_the_config_and_taken_from_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for bad in (0, 101, 2.5, "3"):
        with pytest.raises(InputError, match=r"llm\.repeats"):
            parse_config({"llm": {"repeats": bad}})
    assert parse_config({"llm": {"repeats": 4}}).repeats == 4
    reference = tmp_path / "reference.yaml"
    responses = tmp_path / "responses.jsonl"
    reference.write_text(yaml.safe_dump(REFERENCE))
    responses.write_text("\n".join(json.dumps(r) for r in RESPONSES))
    with StubServer(PerRepeat()) as server:
        cfg = tmp_path / "judge.yaml"
        cfg.write_text(yaml.safe_dump(config(server.url, 1)))
        out = tmp_path / "results.json"
        aggregates = tmp_path / "aggregates.json"
        args = [str(reference), str(responses), "-c", str(cfg), "-o", str(out), "-q"]
        args += ["--aggregates", str(aggregates), "--disable", "answer_relevance"]
        assert main(["evaluate", *args, "--repeats", "2"]) == 0
        assert main(["evaluate", *args, "--repeats", "0"]) == 2
    assert "--repeats" in capsys.readouterr().err
    results = json.loads(out.read_text())
    assert all(r["judge_repeats"] == 2 and len(r["answer_f1_repeats"]) == 2 for r in results)
    micro = json.loads(aggregates.read_text())["micro"]
    assert micro["answer_f1"]["judge_n"] == 4


# ---------------------------------------------------------------- the statistics, by simulation


def _simulated_run(
    rng: random.Random, truth: list[float], judge_sd: float, repeats: int, name: str
) -> list[dict[str, Any]]:
    """Results of one system whose question q has true score ``truth[q]``, judged ``repeats``
    times with normal noise of ``judge_sd``."""
    results = []
    for q, value in enumerate(truth):
        calls = [value + rng.gauss(0, judge_sd) for _ in range(repeats)]
        merged = merge_repeats([{"score": c} for c in calls], ["score"])
        results.append(
            {"template_id": "t", "question_id": f"q{q}", "status": "success", **merged}
            | {"judge_repeats": repeats, "system": name}
        )
    return results


def test_judge_sd_and_judge_se_are_right_by_simulation() -> None:
    """judge_sd estimates the noise of one call (unbiased in the variance); the micro mean of
    a run moves between judge runs of the same answers by judge_se."""
    rng = random.Random(7)
    truth = [rng.random() for _ in range(40)]
    means, variances, ses = [], [], []
    for _ in range(300):
        run = _simulated_run(rng, truth, judge_sd=0.1, repeats=3, name="a")
        block = compute_aggregates(run, extra_metrics=["score"])["micro"]["score"]
        means.append(block["mean"])
        variances.append(block["judge_sd"] ** 2)
        ses.append(block["judge_se"])
    assert statistics.mean(variances) == pytest.approx(0.01, rel=0.05)
    expected_se = 0.1 / math.sqrt(3) / math.sqrt(40)
    assert statistics.stdev(means) == pytest.approx(expected_se, rel=0.15)
    assert statistics.mean(ses) == pytest.approx(expected_se, rel=0.05)


def test_within_judge_noise_holds_95_percent_of_the_time_under_the_null() -> None:
    """Two systems with the same true scores differ only by the judge's noise: the flag says
    so in about 95 % of runs; a real difference of 4 judge standard errors is almost never
    flagged. (judge_noise directly, as compare_runs computes it for its rows.)"""
    rng = random.Random(11)
    truth = [rng.random() for _ in range(30)]
    k, sigma, n = 3, 0.1, len(truth)
    se = sigma * math.sqrt(2 / k) / math.sqrt(n)

    def flagged(shift: float) -> bool:
        a = [[t + rng.gauss(0, sigma) for _ in range(k)] for t in truth]
        b = [[t + shift + rng.gauss(0, sigma) for _ in range(k)] for t in truth]
        delta = statistics.mean(statistics.mean(y) - statistics.mean(x) for x, y in zip(a, b))
        noise = judge_noise(
            [((sample_variance(x), k), (sample_variance(y), k)) for x, y in zip(a, b)]
        )
        assert noise is not None
        return abs(delta) < 2 * noise

    null_rate = sum(flagged(0.0) for _ in range(2000)) / 2000
    assert 0.93 <= null_rate <= 0.97
    assert sum(flagged(4 * se) for _ in range(500)) / 500 < 0.1


def test_compare_marks_rows_within_the_judges_noise() -> None:
    rng = random.Random(3)
    truth = [rng.random() for _ in range(30)]
    a = _simulated_run(rng, truth, 0.2, 3, "a")
    same = _simulated_run(rng, truth, 0.2, 3, "b")
    better = _simulated_run(rng, [t + 0.5 for t in truth], 0.2, 3, "b")
    row = compare_runs(a, same, metrics=["score"], resamples=200)["metrics"][0]["overall"]
    expected = judge_noise(
        [
            ((sample_variance(x["score_repeats"]), 3), (sample_variance(y["score_repeats"]), 3))
            for x, y in zip(a, same)
        ]
    )
    assert row["judge_se"] == pytest.approx(expected)
    assert row["within_judge_noise"] is (abs(row["delta"]) < 2 * expected)
    far = compare_runs(a, better, metrics=["score"], resamples=200)
    assert far["metrics"][0]["overall"]["within_judge_noise"] is False
    # the _sd of a repeated metric is not compared as a metric of its own
    assert [m["metric"] for m in compare_runs(a, same, resamples=200)["metrics"]] == ["score"]
    # a run without repeats against one with: its variance is taken from the other run
    plain = [{k: v for k, v in r.items() if not k.startswith(("score_", "judge"))} for r in same]
    mixed = compare_runs(a, plain, metrics=["score"], resamples=200)["metrics"][0]["overall"]
    pooled = statistics.mean(sample_variance(r["score_repeats"]) for r in a)
    assert mixed["judge_se"] == pytest.approx(math.sqrt(30 * (pooled / 3 + pooled)) / 30)
    # neither run repeated: no judge noise is claimed
    plain_a = [{k: v for k, v in r.items() if not k.startswith(("score_", "judge"))} for r in a]
    row = compare_runs(plain_a, plain, metrics=["score"], resamples=200)["metrics"][0]["overall"]
    assert "within_judge_noise" not in row
    # an error scored as a failed answer (0) brings no judge noise of its own
    failed = [{**same[0], "status": "error", "error": "timeout"}, *same[1:]]
    row = compare_runs(a, failed, metrics=["score"], resamples=200)["metrics"][0]["overall"]
    va = [sample_variance(r["score_repeats"]) for r in a]
    vb = [sample_variance(r["score_repeats"]) for r in same]
    assert row["judge_se"] == pytest.approx(math.sqrt(sum(va) / 3 + sum(vb[1:]) / 3) / 30)
    # the same scores again: delta 0, within the noise, and the table marks it
    twin = compare_runs(a, [dict(r, system="b") for r in a], metrics=["score"], resamples=200)
    assert twin["metrics"][0]["overall"]["within_judge_noise"] is True
    table = format_table(twin, width=120)
    assert "+0.000~" in table and "2 judge standard errors" in " ".join(table.split())
    assert "judge standard errors" not in format_table(far, width=120)
