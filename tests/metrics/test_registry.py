"""The metric registry (``qa_eval.metrics.METRICS``) and the four defects it fixes: custom outputs
in the CLI's aggregates, custom outputs that collide with built-in keys, flat rows scored alike in
the API and the CLI, one direction per metric for aggregate, compare and the report."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from typing import Any

import pytest
import yaml

from openai_stub import StubServer, completion, prompt_text
from qa_eval import metrics as registry
from qa_eval.aggregate import ALWAYS_PRESENT, CATEGORIES, METRICS, SCORES, STEP_METRICS
from qa_eval.cli import main
from qa_eval.compare.runs import compare_runs, default_metrics, lower_is_better
from qa_eval.config import GROUPS, OFFLINE_SWITCHES, SWITCHES, parse_config
from qa_eval.errors import InputError
from qa_eval.io.flat import read_flat
from qa_eval.metrics import Metric, direction, parse_at_k
from qa_eval.metrics.definitions import collides, parse_custom_metric
from qa_eval.metrics.retrieval.ranking import parse_metric_name
from qa_eval.run.evaluation import run_evaluation

# The lists qa-eval had by hand before the registry: the derived ones must say the same.
OLD_AGGREGATED = {
    "answer_recall", "answer_precision", "answer_f1", "answer_relevance",
    "answer_relevance_cost", "llm_cost", "faithfulness", "context_precision",
    "context_precision_ap", "context_recall", "ragas_score", "factual_accuracy",
    "factual_accuracy_correctness", "factual_accuracy_completeness",
    "factual_accuracy_consistency", "semantic_similarity", "bertscore_precision",
    "bertscore_recall", "bertscore_f1", "answer_relevance_rubric", "steps_score",
    "input_tokens", "output_tokens", "total_tokens", "elapsed_sec",
}  # fmt: skip
# ragas' string metrics, registered after the hand lists (the ragas-text group)
RAGAS_TEXT = (
    "bleu_score", "chrf_score", "rouge_score", "exact_match", "string_present",
    "non_llm_string_similarity",
)  # fmt: skip
# ragas' LLM metrics on a question's inputs (the ragas group)
RAGAS_LLM = (
    "answer_accuracy", "factual_correctness", "response_groundedness", "context_entity_recall",
    "context_relevance", "noise_sensitivity", "summary_score", "ragas_answer_correctness",
    "topic_adherence",
)  # fmt: skip
# the judged agent metrics (the agent group)
AGENT = ("goal_accuracy", "trajectory_judgement")
# the trajectory family (issue 25, docs/metrics/trajectory.md)
TRAJECTORY = (
    "trajectory_match", "tool_recall", "tool_precision", "tool_f1", "tool_args_score",
    "tool_calls_missing", "tool_calls_extra", "tool_calls_failed", "tool_calls_repeated",
    "tool_calls_ratio",
)  # fmt: skip
# ragas' metrics registered with their options (docs/ragas.md): SQL and tables by their own keys
# only, the quoted spans with the string metrics, the tool calls and rubrics in the ragas group
RAGAS_MORE = (
    "sql_semantic_equivalence", "rubrics_score", "instance_specific_rubrics",
    "quoted_spans_alignment", "tool_call_accuracy", "tool_call_f1", "datacompy_score",
)  # fmt: skip


def test_derived_lists_equal_the_former_hand_lists() -> None:
    families = (OLD_AGGREGATED, RAGAS_TEXT, RAGAS_LLM, AGENT, TRAJECTORY, RAGAS_MORE)
    assert set(METRICS) == set().union(*map(set, families))
    assert len(METRICS) == sum(map(len, families))
    assert SCORES == (
        "steps_score", "answer_recall", "answer_precision", "answer_f1", "answer_relevance",
        "faithfulness", "context_precision", "context_recall", "ragas_score",
        "factual_accuracy", "semantic_similarity", "bertscore_f1",
    )  # fmt: skip
    expected_steps = {
        "retrieval": tuple(
            f"retrieval_{kind}_{part}"
            for kind in ("answer", "context")
            for part in ("recall", "precision", "f1")
        )
    }
    assert expected_steps == STEP_METRICS
    assert ALWAYS_PRESENT == ("input_tokens", "output_tokens", "total_tokens", "elapsed_sec")
    assert CATEGORIES == {
        "factual_accuracy_grade": ("A", "B", "C", "D", "E"),
        "answer_class": ("CORRECT", "WRONG", "DON'T KNOW"),
    }
    switches = (
        "answer_correctness", "answer_relevance", "retrieval_answer", "retrieval_context",
        "faithfulness", "context_precision", "context_recall", "ragas_score",
        "factual_accuracy", "semantic_similarity", "answer_class", "bertscore", *RAGAS_TEXT,
        *RAGAS_LLM, *AGENT, "trajectory", *RAGAS_MORE, "custom",
    )  # fmt: skip
    assert switches == SWITCHES
    groups = {
        "graphrag": (
            "faithfulness", "context_precision", "context_recall", "ragas_score",
            "factual_accuracy", "semantic_similarity", "answer_class",
        ),
        "ragas-text": (*RAGAS_TEXT, "quoted_spans_alignment"),
        "ragas": (
            *RAGAS_LLM, "rubrics_score", "instance_specific_rubrics", "tool_call_accuracy",
            "tool_call_f1",
        ),
        "agent": AGENT,
    }  # fmt: skip
    assert groups == GROUPS
    offline = (
        "semantic_similarity", "bertscore", *RAGAS_TEXT, "quoted_spans_alignment",
        "tool_call_accuracy", "tool_call_f1", "datacompy_score",
    )  # fmt: skip
    assert offline == OFFLINE_SWITCHES


def test_every_key_has_one_family_and_docs_exist() -> None:
    seen: dict[str, str] = {}
    root = Path(__file__).resolve().parents[2]
    for name, metric in registry.METRICS.items():
        assert metric.name == name
        assert (root / metric.doc).is_file(), metric.doc
        for key in metric.keys:
            assert key.name not in seen, f"{key.name} in {seen.get(key.name)} and {name}"
            seen[key.name] = name
            if key.aggregate or key.headline:
                assert key.scale in ("0-1", "cosine", "ratio", "count", "tokens", "usd", "seconds")


def test_tool_calls_ratio_is_declared_a_ratio_not_a_score() -> None:
    """More actual calls than the reference has make it exceed 1: the registry says so, and the
    terminal prints it as a ratio."""
    from qa_eval.io.numbers import format_number, scale_of
    from qa_eval.metrics.agents.trajectory_match import trajectory_keys
    from qa_eval.steps.trajectory.reference import parse_reference

    raw = [{"name": "search", "args": {"q": "x"}}]
    steps = [
        {"name": "search", "args": {"q": "x"}, "status": "success", "output": "a"},
        {"name": "search", "args": {"q": "y"}, "status": "success", "output": "b"},
        {"name": "lookup", "args": {}, "status": "success", "output": "c"},
    ]
    keys = trajectory_keys(parse_reference(raw), raw, steps)
    assert keys["tool_calls_ratio"] == 3.0
    assert scale_of("tool_calls_ratio") == "ratio"
    assert format_number(keys["tool_calls_ratio"], scale_of("tool_calls_ratio")) == "3.000"


def test_options_are_validated_from_the_registry() -> None:
    config = parse_config(
        {"llm": {"generation": {"api_key": "x"}}, "answer_class": {"phrases": ["no idea"]}}
    )
    assert config.option("answer_class", "phrases") == ("no idea",)
    with pytest.raises(InputError, match=r"answer_class\.colour: unknown key"):
        parse_config({"llm": {"generation": {"api_key": "x"}}, "answer_class": {"colour": 1}})
    with pytest.raises(InputError, match=r"bertscore\.layer"):
        parse_config({"bertscore": {"layer": 0}})


# --- defect (b): custom outputs may not take a built-in key ------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "faithfulness", "context_recall", "ragas_score", "llm_cost", "answer_f1",
        "answer_reference_claims_count", "faithfulness_reason", "retrieval_answer_recall",
        "steps_score", "input_tokens", "question_id", "answer_class_label",
    ],
)  # fmt: skip
def test_custom_outputs_that_collide_are_refused(name: str) -> None:
    assert collides(name)
    entry = {
        "name": "mine",
        "inputs": ["question", "actual_answer"],
        "instructions": "Judge it.",
        "outputs": {name: "a number"},
    }
    with pytest.raises(InputError, match=rf"outputs.*{name}|{name}.*"):
        parse_custom_metric(entry, "config.yaml", 0)


@pytest.mark.parametrize("name", ["my_score", "retrieval_recall", "steps_count", "usage"])
def test_custom_outputs_that_collide_with_nothing_are_accepted(name: str) -> None:
    assert not collides(name)


def test_every_registered_key_is_reserved() -> None:
    for metric in registry.METRICS.values():
        for key in metric.keys:
            assert collides(key.name), key.name


# --- defect (d): one direction per metric -------------------------------------------------------


@pytest.mark.parametrize(
    ("metric", "expected"),
    [
        ("answer_f1", "higher"),
        ("steps_score", "higher"),
        ("retrieval_context_f1", "higher"),
        ("answer_reference_claims_count", "none"),
        ("answer_matching_claims_count", "none"),
        ("answer_class", "none"),
        ("input_tokens", "lower"),
        ("elapsed_sec", "lower"),
        ("llm_cost", "lower"),
        ("faithfulness_cost", "lower"),
        ("ndcg@10", "higher"),
        ("my_score", "higher"),  # a custom output: by its name
        ("my_latency", "lower"),
        ("my_cost", "lower"),
        ("hits_count", "none"),
    ],
)
def test_direction(metric: str, expected: str) -> None:
    assert direction(metric) == expected
    assert lower_is_better(metric) == (expected == "lower")


def _run(values: list[float], key: str = "answer_reference_claims_count") -> list[dict[str, Any]]:
    return [
        {"template_id": "t", "question_id": str(i), "status": "success", key: v}
        for i, v in enumerate(values)
    ]


def test_compare_names_a_count_neither_better_nor_worse() -> None:
    a = _run([1.0] * 30)
    b = _run([5.0] * 30)
    out = compare_runs(a, b, resamples=2000)
    (entry,) = out["metrics"]
    assert entry["direction"] == "none"
    assert entry["overall"]["p_adjusted"] < 0.05  # a real change ...
    assert entry["overall"]["better"] is None  # ... that is neither better nor worse
    tokens = compare_runs(_run([10.0] * 30, "input_tokens"), _run([5.0] * 30, "input_tokens"))
    assert tokens["metrics"][0]["direction"] == "lower"
    assert tokens["metrics"][0]["overall"]["better"] == "b"
    f1 = compare_runs(_run([0.2] * 30, "answer_f1"), _run([0.9] * 30, "answer_f1"))
    assert f1["metrics"][0]["overall"]["better"] == "b"


def test_compare_and_aggregate_know_the_same_metrics() -> None:
    results = _run([0.5], "answer_f1")
    results[0]["answer_relevance_rubric"] = 0.75
    assert default_metrics(results) == [m for m in METRICS if m in results[0]]


# --- defect (a): custom outputs reach the CLI's aggregates ---------------------------------------


def test_cli_aggregates_custom_outputs(tmp_path: Path, stub: Any) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        "\n".join(
            json.dumps({"question": q, "answer": a, "ground_truth": "x"})
            for q, a in [("Q1?", "A1."), ("Q2?", "A2.")]
        ),
        encoding="utf-8",
    )
    config = tmp_path / "judge.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "llm": {"generation": {"base_url": stub.url, "api_key": "x"}},
                "answer_correctness": False,
                "answer_relevance": False,
                "custom_evaluations": [
                    {
                        "name": "mine",
                        "inputs": ["question", "actual_answer"],
                        "instructions": "Judge it.",
                        "outputs": {"my_score": "a number from 0 to 1", "my_reason": "why"},
                    }
                ],
            }
        ),
        encoding="utf-8",
    )
    out, aggregates = tmp_path / "results.jsonl", tmp_path / "aggregates.yaml"
    code = main(
        ["evaluate-flat", str(rows), "-c", str(config), "--no-cache", "-q", "-o", str(out),
         "--aggregates", str(aggregates)]
    )  # fmt: skip
    assert code == 0
    data = yaml.safe_load(aggregates.read_text())
    assert data["micro"]["my_score"]["n"] == 2
    assert data["micro"]["my_score"]["mean"] == 1
    # qa-eval aggregate with the run's config says the same; without it, only built-in keys
    again = tmp_path / "again.yaml"
    assert main(["aggregate", str(out), "--config", str(config), "-o", str(again)]) == 0
    assert yaml.safe_load(again.read_text())["micro"]["my_score"]["n"] == 2
    assert main(["aggregate", str(out), "-o", str(again)]) == 0
    assert "my_score" not in yaml.safe_load(again.read_text())["micro"]


# --- defect (c): flat rows score alike in the API and on the CLI ---------------------------------


def _flat(tmp_path: Path) -> Path:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        json.dumps(
            {"question": "Q?", "answer": "A.", "contexts": ["one", "two"], "ground_truth": "A."}
        ),
        encoding="utf-8",
    )
    return rows


def _judge(url: str, **blocks: Any) -> dict[str, Any]:
    return {"llm": {"generation": {"base_url": url, "api_key": "x"}}, **blocks}


def test_flat_rows_skip_the_retrieval_step_metrics_in_the_api(tmp_path: Path, stub: Any) -> None:
    reference, responses = read_flat(_flat(tmp_path))
    assert responses[0]["actual_steps"][0]["flat_contexts"] is True
    config = _judge(stub.url, answer_relevance=False)
    (result,) = run_evaluation(reference, responses, config=config, cache=False)
    assert len(stub.requests) == 1  # answer correctness only: no retrieval_answer_* call
    assert "answer_f1" in result
    assert not any(k.startswith("retrieval_") for k in result["actual_steps"][0])


def test_flat_rows_get_the_retrieval_step_metrics_when_enabled(tmp_path: Path, stub: Any) -> None:
    reference, responses = read_flat(_flat(tmp_path))
    config = _judge(stub.url, answer_relevance=False, answer_correctness=False)
    (result,) = run_evaluation(
        reference, responses, config=config, cache=False, enable=["retrieval_answer"]
    )
    step = result["actual_steps"][0]
    assert "retrieval_answer_recall" in step and "retrieval_answer_precision" in step
    assert not any(k.startswith("retrieval_context") for k in step)


def test_flat_rows_give_the_same_keys_in_the_api_and_the_cli(tmp_path: Path, stub: Any) -> None:
    rows = _flat(tmp_path)
    blocks = {"llm": {"generation": {"base_url": stub.url, "api_key": "x"}},
              "answer_relevance": False}  # fmt: skip
    config = tmp_path / "judge.yaml"
    config.write_text(yaml.safe_dump(blocks), encoding="utf-8")
    out = tmp_path / "results.jsonl"
    assert main(["evaluate-flat", str(rows), "-c", str(config), "--no-cache", "-q",
                 "-o", str(out)]) == 0  # fmt: skip
    (cli,) = [json.loads(line) for line in out.read_text().splitlines()]
    reference, responses = read_flat(rows)
    (api,) = run_evaluation(reference, responses, config=str(config), cache=False)
    assert set(cli) == set(api)
    assert cli["actual_steps"] == api["actual_steps"]
    assert "retrieval_answer_recall" not in json.dumps(cli)


# --- qa-eval metrics ------------------------------------------------------------------------------


def test_metrics_command_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["metrics"]) == 0
    out = capsys.readouterr().out
    for name in SWITCHES:
        assert f"\n{name}  " in f"\n{out}"
    assert "answer_reference_claims_count            count   neither" in out
    assert "faithfulness  default off  needs judge  group graphrag" in out
    assert "(docs/metrics/graphrag.md)" in out
    assert "ndcg@k  API function" in out


def test_metrics_command_json_and_one_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["metrics", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    by_name = {e["name"]: e for e in data}
    assert by_name["answer_relevance"]["judge"] and by_name["answer_relevance"]["embedder"]
    assert not by_name["semantic_similarity"]["judge"]
    assert by_name["bertscore"]["default"] == "off"
    keys = {k["name"]: k for k in by_name["usage"]["keys"]}
    assert keys["elapsed_sec"]["direction"] == "lower"
    assert main(["metrics", "NDCG@10", "--format", "json"]) == 0
    assert [e["name"] for e in json.loads(capsys.readouterr().out)] == ["ndcg@k"]
    assert main(["metrics", "faithfulness_cost", "--format", "json"]) == 0
    assert [e["name"] for e in json.loads(capsys.readouterr().out)] == ["faithfulness"]
    assert main(["metrics", "ndcg@0"]) == 2
    assert "k must be a positive integer" in capsys.readouterr().err
    assert main(["metrics", "nonsense"]) == 2


@pytest.mark.parametrize(
    ("name", "parsed"),
    [("recall@5", ("recall", 5)), ("NDCG@10", ("ndcg", 10)), ("map", ("map", None))],
)
def test_name_at_k_parses_one_way(name: str, parsed: tuple[str, int | None]) -> None:
    assert parse_at_k(name) == parsed
    base, k = parse_metric_name(name)
    assert k == parsed[1]
    assert base == {"map": "ap"}.get(parsed[0], parsed[0])  # ranking.py adds its aliases


@pytest.mark.parametrize("name", ["recall@0", "recall@", "@5", "re call@5", ""])
def test_bad_names_at_k(name: str) -> None:
    with pytest.raises(ValueError):
        parse_at_k(name)
    with pytest.raises(ValueError):
        parse_metric_name(name)


# --- a new metric is one registry entry -----------------------------------------------------------


async def _toy_score(judge: Any, inputs: dict[str, Any], options: dict[str, Any]) -> Any:
    from pydantic import BaseModel

    class Reply(BaseModel):
        score: float

    text = f"TOY <question>{inputs['question']}</question> <answer>{inputs['answer']}</answer>"
    verdict = await judge.ask("toy", [{"role": "user", "content": text}], Reply)
    return {"toy": verdict.value.score}, verdict.cost


def test_a_registry_entry_with_a_score_function_is_scheduled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = types.ModuleType("toy_metric_module")
    module.score = _toy_score  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "toy_metric_module", module)
    toy = Metric(
        "toy", "a toy", ("question", "answer", "judge"),
        (registry.Key("toy", "higher", "0-1"), registry.Key("toy_cost", "lower", "usd")),
        "docs/adding-a-metric.md", score="toy_metric_module:score",
    )  # fmt: skip
    monkeypatch.setitem(registry.METRICS, "toy", toy)
    reference = [{"template_id": "t", "questions": [
        {"id": "a", "question_text": "Q?"}, {"id": "b", "question_text": "R?"},
        {"id": "c", "question_text": "S?"},
    ]}]  # fmt: skip
    responses = [
        {"question_id": "a", "actual_answer": "A."},
        {"question_id": "b", "actual_answer": "unparseable"},
        {"question_id": "c", "status": "error", "error": "boom"},
    ]

    def script(payload: dict[str, Any], number: int) -> Any:
        text = prompt_text(payload)
        return completion("not json" if "unparseable" in text else '{"score": 0.5}')

    with StubServer(script) as server:
        results = run_evaluation(
            reference,
            responses,
            config=_judge(server.url, answer_relevance=False, answer_correctness=False),
            cache=False,
        )
    assert results[0]["toy"] == 0.5 and results[0]["toy_cost"] > 0
    assert results[0]["llm_cost"] == results[0]["toy_cost"]
    assert "toy" not in results[1] and results[1]["toy_error"]  # the judge's error, in one place
    assert "toy" not in results[2] and "toy_error" not in results[2]  # error responses: none
    assert collides("toy_reason")
    assert direction("toy_cost") == "lower"


def test_progress_estimate_skips_a_flat_rows_step_metrics(tmp_path: Path) -> None:
    from qa_eval.run.score import AnswerScorer

    _, responses = read_flat(_flat(tmp_path))
    result = {**responses[0], "status": "success", "reference_answer": "A."}
    config = parse_config({"llm": {"generation": {"api_key": "x"}}, "answer_relevance": False})
    judge: Any = object()  # only its presence matters to the estimate
    assert AnswerScorer(config, judge, None).expected_asks(result, []) == 1
    explicit = AnswerScorer(config, judge, None, enabled=frozenset({"retrieval_answer"}))
    assert explicit.expected_asks(result, []) == 3  # + recall and precision of the step
