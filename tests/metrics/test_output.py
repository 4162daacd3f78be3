"""Typed metric records (metrics/output.py): the one wrapper, skip reasons, the one serializer,
llm_cost as a sum of records, and the registry path every built-in family takes."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from fakes import FakeEmbedder, FakeJudge, run
from qa_eval.config import parse_config
from qa_eval.errors import BudgetExceeded, Deferred, DryRunSkip, JudgeError
from qa_eval.metrics import METRICS
from qa_eval.metrics.answer.relevance import relevance_outputs
from qa_eval.metrics.output import (
    CallUsage,
    Output,
    SkipReason,
    llm_cost,
    measure,
    outputs_of,
    serialize,
    skip_reason,
)
from qa_eval.run.score import AnswerScorer


async def _raise(error: BaseException) -> Output:
    raise error


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (BudgetExceeded(), SkipReason.BUDGET),
        (DryRunSkip(), SkipReason.DRY_RUN),
        (Deferred(), SkipReason.DEFERRED),
        (JudgeError("invalid judge reply, twice"), None),
        (ValueError("the reference answer is empty"), None),
    ],
)
def test_the_wrapper_records_errors_with_a_typed_skip_reason(
    error: BaseException, reason: SkipReason | None
) -> None:
    (record,) = run(measure("faithfulness", _raise(error)))
    assert record.skip is reason
    assert skip_reason(error) is reason
    assert record.error == str(error)
    # the serialized text stays what it was (compatibility), the reason is the class's
    assert record.result_keys() == {"faithfulness_error": str(error)}


def test_a_budget_skip_is_recognized_by_its_class_not_its_message() -> None:
    class Renamed(BudgetExceeded):
        def __str__(self) -> str:
            return "over the limit"

    (record,) = run(measure("x", _raise(Renamed())))
    assert record.skip is SkipReason.BUDGET
    (other,) = run(measure("x", _raise(JudgeError("budget exceeded"))))
    assert other.skip is None  # the same text from a real failure is a failure


def test_records_are_frozen_and_read_only() -> None:
    record = Output("m", {"m": 0.5}, costs=(0.25,))
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.error = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        record.values["m"] = 1.0  # type: ignore[index]


def test_the_serializer_writes_values_cost_error_and_aliases() -> None:
    assert Output("m", {"m": 0.5, "m_reason": "r"}, costs=(0.25, 0.5)).result_keys() == {
        "m": 0.5,
        "m_reason": "r",
        "m_cost": 0.75,
    }
    assert Output("m", {"m": 0.5}, costs=(0.25, None)).result_keys() == {"m": 0.5, "m_cost": None}
    assert Output("m", {"m": 0.5}).result_keys() == {"m": 0.5}  # no cost key without a cost
    failed = Output("m", error="boom", aliases=("m_eval_error",))
    assert failed.result_keys() == {"m_error": "boom", "m_eval_error": "boom"}
    assert serialize([Output("a", {"a": 1}), Output("b", {"b": 2})]) == {"a": 1, "b": 2}


def test_llm_cost_is_the_sum_of_the_counted_records() -> None:
    a = Output("a", {}, costs=(0.25,))
    b = Output("b", {}, costs=(0.5, 0.125))
    f1 = Output("f1", {}, costs=(0.25, 0.5), counted=False)  # repeats others' costs
    assert llm_cost([a, b, f1]) == (True, 0.875)
    assert llm_cost([a, Output("c", {}, costs=(None,))]) == (True, None)  # one unknown
    assert llm_cost([a], unpriced=True) == (True, None)  # a judge without a price
    assert llm_cost([Output("x", {"x": 1})]) == (False, None)  # nothing cost anything
    # a value that happens to end in _cost is data, not a cost
    assert llm_cost([Output("custom", {"my_cost": 99.0}, costs=(0.25,))]) == (True, 0.25)


def test_usage_counts_the_judge_calls_of_a_record() -> None:
    judge = FakeJudge({"statements": ["s1"]}, {"verdicts": [{"statement": 1, "verdict": 1}]})
    from qa_eval.metrics.retrieval.faithfulness import faithfulness_output

    record = run(faithfulness_output(judge, "Q?", "A.", ["ctx"]))
    assert record.usage == CallUsage(2, 200, 40)  # FakeJudge: 100 prompt, 20 completion each
    assert record.cost == 0.5


def test_outputs_of_reads_what_older_entry_points_return() -> None:
    (record,) = outputs_of("toy", ({"toy": 0.5, "toy_reason": "r"}, 0.25))
    assert record.result_keys() == {"toy": 0.5, "toy_reason": "r", "toy_cost": 0.25}
    (record,) = outputs_of("toy", {"toy_error": "boom"})
    assert record.error == "boom" and record.result_keys() == {"toy_error": "boom"}
    with pytest.raises(TypeError):
        outputs_of("toy", 0.5)  # type: ignore[arg-type]


def test_every_built_in_family_has_a_score_entry() -> None:
    scheduled = {"retrieval_answer", "retrieval_context", "custom"}  # per step, per definition
    no_score = {"llm_cost", "steps_score", "usage"}  # written by the run itself
    for name, metric in METRICS.items():
        assert (metric.score is not None) is (name not in scheduled | no_score), name


def test_relevance_falls_back_to_the_rubric_on_a_failure_but_not_on_a_skip() -> None:
    embedder = FakeEmbedder({})
    failure = FakeJudge(JudgeError("invalid judge reply"), {"level": "mostly", "reason": "r"})
    first, rubric = run(relevance_outputs(failure, embedder, "Q?", "A."))  # type: ignore[arg-type]
    assert first.error == "invalid judge reply" and first.skip is None
    assert rubric.metric == "answer_relevance_rubric" and rubric.values[rubric.metric] == 0.75
    for skipped in (BudgetExceeded(), DryRunSkip(), Deferred()):
        judge = FakeJudge(skipped)
        (only,) = run(relevance_outputs(judge, embedder, "Q?", "A."))  # type: ignore[arg-type]
        assert only.skip is not None and judge.metrics == ["answer_relevance"]


def _result(**extra: Any) -> dict[str, Any]:
    return {
        "template_id": "t",
        "question_id": "q",
        "question_text": "Q?",
        "reference_answer": "A and B.",
        "status": "success",
        "actual_answer": "A.",
        "actual_steps": [],
        **extra,
    }


def test_the_scheduler_writes_every_family_through_the_one_wrapper() -> None:
    """A judge error of any built-in family becomes its ``<family>_error`` (and the aliases the
    registry declares), without a cost, and the question's llm_cost sums the others."""
    config = parse_config(
        {
            "llm": {"generation": {"model": "m"}},
            "answer_relevance": False,
            "factual_accuracy": True,
            "answer_class": True,
        }
    )
    judge = FakeJudge(
        by_metric={
            "answer_correctness": [JudgeError("endpoint down")],
            "factual_accuracy": [BudgetExceeded()],
            "answer_class": [{"label": "CORRECT", "reason": "ok"}],
        },
        cost=0.25,
    )
    scorer = AnswerScorer(config, judge, None)  # type: ignore[arg-type]
    result = _result()
    scored = run(scorer.score(result, []))
    assert scored is not result and "answer_class" not in result
    assert scored["answer_correctness_error"] == scored["answer_eval_error"] == "endpoint down"
    assert "answer_correctness_cost" not in scored
    assert scored["factual_accuracy_error"] == "budget exceeded"
    assert scored["answer_class"] == "CORRECT" and scored["answer_class_cost"] == 0.25
    assert scored["llm_cost"] == 0.25


def test_failed_judge_replies_over_http_are_counted_by_the_aggregates() -> None:
    """End to end over the scripted server: an unusable reply becomes the metric's error in the
    result (written by the one wrapper) and a ``failed`` count in the aggregates."""
    from openai_stub import StubServer, completion, oracle_content, prompt_text
    from qa_eval import compute_aggregates, run_evaluation

    reference = [
        {
            "template_id": t,
            "questions": [
                {"id": f"{t}{i}", "question_text": f"Q {t}{i}?", "reference_answer": "A."}
                for i in range(3)
            ],
        }
        for t in ("t1", "t2")
    ]
    broken = {"t10", "t20", "t21"}
    responses = [
        {"question_id": q, "actual_answer": "UNPARSEABLE" if q in broken else "A."}
        for q in ("t10", "t11", "t12", "t20", "t21", "t22")
    ]

    def script(request: dict[str, Any], number: int) -> Any:
        if "UNPARSEABLE" in prompt_text(request):
            return completion("not json at all")
        return completion(oracle_content(request))

    config = {
        "llm": {"generation": {"api_key": "x"}},
        "answer_relevance": False,
    }
    with StubServer(script) as server:
        config["llm"]["generation"]["base_url"] = server.url  # type: ignore[index]
        results = run_evaluation(reference, responses, config=config, cache=False)
    errors = {r["question_id"] for r in results if "answer_correctness_error" in r}
    assert errors == broken
    assert all(r["answer_eval_error"] == r["answer_correctness_error"] for r in results if
               r["question_id"] in broken)  # fmt: skip
    aggregates = compute_aggregates(results)
    assert aggregates["micro"]["answer_f1"]["n"] == 3
    assert aggregates["micro"]["answer_f1"]["failed"] == 3
    assert aggregates["per_template"]["t1"]["answer_f1"]["failed"] == 1
    assert aggregates["per_template"]["t2"]["answer_f1"]["failed"] == 2
    # llm_cost is the sum of the records' costs: a failed record has none
    for r in results:
        if r["question_id"] in broken:
            assert "llm_cost" not in r and "answer_correctness_cost" not in r
        else:
            assert r["llm_cost"] == r["answer_correctness_cost"] > 0


def _doc_blocks(kind: str) -> list[str]:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "adding-a-metric.md").read_text("utf-8")
    return [part.split("```", 1)[0] for part in text.split(f"```{kind}\n")[1:]]


def test_the_worked_example_of_adding_a_metric_runs_as_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """docs/adding-a-metric.md: its module, its prompt and its registry line, taken from the page
    as written, run end to end over the scripted server (values, cost, error, aggregates)."""
    import importlib
    import sys
    import types

    from openai_stub import StubServer, completion, prompt_text
    from qa_eval import compute_aggregates, prompts, run_evaluation
    from qa_eval.vocabulary import registry

    module_source, entry_source = _doc_blocks("python")
    (prompt,) = _doc_blocks("text")
    importlib.import_module("qa_eval.metrics.answer")  # the family the page puts it in
    module = types.ModuleType("qa_eval.metrics.answer.conciseness")
    module.__package__ = "qa_eval.metrics.answer"
    exec(compile(module_source, "conciseness.py", "exec"), module.__dict__)
    monkeypatch.setitem(sys.modules, "qa_eval.metrics.answer.conciseness", module)
    original = prompts.prompt_text
    monkeypatch.setattr(
        prompts, "prompt_text", lambda name: prompt if name == "conciseness" else original(name)
    )
    (entry,) = eval("{" + entry_source + "}", vars(registry)).values()  # the page, our text
    # on by default here: the config's switches are read from the registry when it is imported
    monkeypatch.setitem(registry.METRICS, "conciseness", dataclasses.replace(entry, default=True))

    def script(request: dict[str, Any], number: int) -> Any:
        text = prompt_text(request)
        assert "[qa-eval:conciseness]" in text
        if "broken" in text:
            return completion("no JSON here")
        return completion('{"needed": 1, "total": 4, "reason": "padding"}')

    reference = [{"template_id": "t", "questions": [
        {"id": "a", "question_text": "Q?"}, {"id": "b", "question_text": "R?"},
    ]}]  # fmt: skip
    responses = [
        {"question_id": "a", "actual_answer": "A. B. C. D."},
        {"question_id": "b", "actual_answer": "broken"},
    ]
    config = {
        "llm": {"generation": {"api_key": "x"}},
        "answer_correctness": False,
        "answer_relevance": False,
    }
    with StubServer(script) as server:
        config["llm"]["generation"]["base_url"] = server.url  # type: ignore[index]
        good, bad = run_evaluation(reference, responses, config=config, cache=False)
    assert good["conciseness"] == 0.25 and good["conciseness_reason"] == "padding"
    assert good["conciseness_cost"] > 0 and good["llm_cost"] == good["conciseness_cost"]
    assert "conciseness" not in bad and "invalid" in bad["conciseness_error"]
    micro = compute_aggregates([good, bad])["micro"]
    assert micro["conciseness"]["n"] == 1 and micro["conciseness"]["failed"] == 1


@pytest.mark.parametrize("mode", ["budget", "dry_run"])
def test_the_signature_counts_skipped_metric_values_by_their_typed_reason(mode: str) -> None:
    """Budget and dry-run skips are counted from the records' ``SkipReason`` (the result keeps
    the text ``budget exceeded`` / ``not computed (dry run)`` for compatibility)."""
    from openai_stub import StubServer, completion, oracle_content
    from qa_eval import run_evaluation

    reference = [{"template_id": "t", "questions": [
        {"id": f"q{i}", "question_text": f"Q{i}?", "reference_answer": "A."} for i in range(4)
    ]}]  # fmt: skip
    responses = [{"question_id": f"q{i}", "actual_answer": "A."} for i in range(4)]

    def script(request: dict[str, Any], number: int) -> Any:
        return completion(oracle_content(request), prompt_tokens=1, completion_tokens=7)

    config: dict[str, Any] = {
        "llm": {
            "generation": {"api_key": "x"},
            "concurrency": 1,
            "prices": {"gpt-4o-mini": {"input": 1_000_000, "output": 0}},  # $1 a call
        },
        "answer_relevance": False,
    }
    options: dict[str, Any] = {"max_cost": 1.5} if mode == "budget" else {"dry_run": True}
    with StubServer(script) as server:
        config["llm"]["generation"]["base_url"] = server.url
        results = run_evaluation(reference, responses, config=config, cache=False, **options)
    text = "budget exceeded" if mode == "budget" else "not computed (dry run)"
    skipped = [r for r in results if r.get("answer_correctness_error") == text]
    assert skipped and len(skipped) == (len(results) - 2 if mode == "budget" else len(results))
    assert results.signature["skipped_metric_values"] == {mode: len(skipped)}


def test_a_run_without_skips_has_no_skip_count(stub: Any) -> None:
    from qa_eval import run_evaluation

    reference = [{"template_id": "t", "questions": [
        {"id": "q", "question_text": "Q?", "reference_answer": "A."},
    ]}]  # fmt: skip
    generation = {"api_key": "x", "base_url": stub.url}
    config = {"llm": {"generation": generation}, "answer_relevance": False}
    results = run_evaluation(reference, [{"question_id": "q", "actual_answer": "A."}],
                             config=config, cache=False)  # fmt: skip
    assert "answer_f1" in results[0] and "skipped_metric_values" not in results.signature


def test_a_custom_output_named_like_a_cost_is_not_summed_into_llm_cost() -> None:
    """The suffix filter of older releases summed any ``*_cost`` value: a custom output
    ``query_cost`` (a judged number) made the question's judge cost 5.25 instead of 0.25."""
    metric = {
        "name": "sparqlish",
        "inputs": ["question", "actual_answer"],
        "instructions": "Judge it.",
        "outputs": {"query_cost": "the query's estimated cost"},
    }
    config = parse_config(
        {
            "llm": {"generation": {"model": "m"}},
            "answer_correctness": False,
            "answer_relevance": False,
            "custom_evaluations": [metric],
        }
    )
    judge = FakeJudge({"query_cost": 5, "reason": "r"}, cost=0.25)
    scored = run(AnswerScorer(config, judge, None).score(_result(), []))  # type: ignore[arg-type]
    assert scored["query_cost"] == 5 and scored["sparqlish_cost"] == 0.25
    assert scored["llm_cost"] == 0.25
