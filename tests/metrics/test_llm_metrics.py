"""Hand-computed tables for the LLM metrics' pure functions, and the metric adapters driven by an
in-process fake judge and a fake embedder (no HTTP)."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import pytest
from pydantic import ValidationError

from fakes import FailingEmbedder, FakeEmbedder, FakeJudge, run
from qa_eval.config import parse_config
from qa_eval.errors import InputError, JudgeError
from qa_eval.metrics.answer.correctness import (
    CorrectnessReply,
    answer_correctness,
    correctness_scores,
    f1,
)
from qa_eval.metrics.answer.relevance import answer_relevance, answer_relevancy, cosine
from qa_eval.metrics.custom import custom_metric
from qa_eval.metrics.definitions import check_prompt, parse_custom_metric
from qa_eval.metrics.retrieval.step_context import (
    RecallReply,
    average_precision,
    chunk_texts,
    context_recall,
    retrieval_metrics,
)
from qa_eval.run.score import AnswerScorer

# --- fakes -----------------------------------------------------------------------------------


def correctness_reply(ref: int, act: int, match: int, reason: str = "r") -> dict[str, Any]:
    return {
        "reference_claims_count": ref,
        "actual_claims_count": act,
        "matching_claims_count": match,
        "reason": reason,
    }


# --- answer correctness: pure functions ---------------------------------------------------------


@pytest.mark.parametrize(
    ("ref", "act", "match", "expected"),
    [
        ((2, 2, 2), None, None, (1.0, 1.0, 1.0)),
        ((4, 2, 1), None, None, (0.25, 0.5, 1 / 3)),
        ((3, 0, 0), None, None, (0.0, 0.0, 0.0)),
        ((1, 5, 1), None, None, (1.0, 0.2, 1 / 3)),
        ((3, 3, 0), None, None, (0.0, 0.0, 0.0)),
        ((5, 4, 2), None, None, (0.4, 0.5, 4 / 9)),
    ],
    ids=["all", "4-2-1", "refusal", "verbose", "none-match", "5-4-2"],
)
def test_correctness_scores_table(ref: Any, act: Any, match: Any, expected: Any) -> None:
    recall, precision, f1_value = correctness_scores(*ref)
    assert recall == pytest.approx(expected[0], abs=1e-12)
    assert precision == pytest.approx(expected[1], abs=1e-12)
    assert f1_value == pytest.approx(expected[2], abs=1e-12)


@pytest.mark.parametrize("counts", [(0, 0, 0), (0, 3, 0), (-1, 1, 0)])
def test_correctness_scores_needs_a_reference_claim(counts: tuple[int, int, int]) -> None:
    with pytest.raises(ValueError):
        correctness_scores(*counts)


@pytest.mark.parametrize(
    ("recall", "precision", "expected"),
    [
        (None, 0.5, None),
        (0.5, None, None),
        (None, None, None),
        (0.0, 0.0, 0.0),
        (1.0, 1.0, 1.0),
        (0.5, 1.0, 2 / 3),
        (0.25, 0.5, 1 / 3),
        (1.0, 0.0, 0.0),
    ],
)
def test_f1_table(recall: float | None, precision: float | None, expected: float | None) -> None:
    value = f1(recall, precision)
    if expected is None:
        assert value is None
    else:
        assert value == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    "counts",
    [(2, 1, 2), (1, 3, 2), (3, 0, 1), (0, 0, 0), (0, 2, 0), (1, -1, 0), (1, 1, -1)],
    ids=["match>act", "match>ref", "match>act0", "ref0", "ref0-act2", "act<0", "match<0"],
)
def test_correctness_reply_rejects_impossible_counts(counts: tuple[int, int, int]) -> None:
    with pytest.raises(ValidationError):
        CorrectnessReply.model_validate(correctness_reply(*counts))


@pytest.mark.parametrize("counts", [(1, 0, 0), (2, 2, 2), (3, 5, 3), (4, 1, 1)])
def test_correctness_reply_accepts_possible_counts(counts: tuple[int, int, int]) -> None:
    reply = CorrectnessReply.model_validate(correctness_reply(*counts))
    assert (
        reply.reference_claims_count,
        reply.actual_claims_count,
        reply.matching_claims_count,
    ) == counts


# --- answer correctness: adapter -----------------------------------------------------------------


@pytest.mark.parametrize("answer", ["", "   \n\t"])
def test_empty_answer_scores_zero_without_a_call(answer: str) -> None:
    judge = FakeJudge()
    out = run(answer_correctness(judge, "Q?", "OSLO T1", answer))
    assert judge.calls == []
    assert out["answer_recall"] == 0.0
    assert out["answer_precision"] == 0.0
    assert out["answer_f1"] == 0.0
    assert out["answer_actual_claims_count"] == 0
    assert out["answer_matching_claims_count"] == 0
    assert out["answer_correctness_cost"] == 0.0
    assert "answer_correctness_error" not in out


def test_empty_reference_is_an_error_without_a_call() -> None:
    judge = FakeJudge()
    out = run(answer_correctness(judge, "Q?", "  ", "OSLO T1"))
    assert judge.calls == []
    assert "answer_correctness_error" in out
    assert out["answer_eval_error"] == out["answer_correctness_error"]
    assert "answer_f1" not in out


def test_refusal_scores_zero_not_an_error() -> None:
    judge = FakeJudge(correctness_reply(3, 0, 0, "the answer refuses"), cost=0.5)
    out = run(answer_correctness(judge, "Q?", "A, B and C", "I don't know."))
    assert judge.metrics == ["answer_correctness"]
    assert (out["answer_recall"], out["answer_precision"], out["answer_f1"]) == (0.0, 0.0, 0.0)
    assert out["answer_reference_claims_count"] == 3
    assert out["answer_actual_claims_count"] == 0
    assert out["answer_correctness_reason"] == "the answer refuses"
    assert out["answer_correctness_cost"] == 0.5
    assert "answer_correctness_error" not in out
    assert "answer_eval_error" not in out


def test_answer_correctness_scores_the_judges_counts() -> None:
    judge = FakeJudge(correctness_reply(4, 2, 1))
    out = run(answer_correctness(judge, "Q?", "a b c d", "a x"))
    assert out["answer_recall"] == 0.25
    assert out["answer_precision"] == 0.5
    assert out["answer_f1"] == pytest.approx(1 / 3)
    assert out["answer_matching_claims_count"] == 1
    assert out["answer_correctness_cost"] == 0.25
    prompt = judge.prompt()
    assert "a b c d" in prompt and "a x" in prompt


def test_answer_correctness_without_a_known_cost_has_a_null_cost() -> None:
    judge = FakeJudge(correctness_reply(1, 1, 1), cost=None)
    out = run(answer_correctness(judge, "Q?", "a", "a"))
    assert out["answer_f1"] == 1.0
    assert out["answer_correctness_cost"] is None  # unknown, not 0


def test_judge_error_is_recorded_on_the_question() -> None:
    judge = FakeJudge(JudgeError("invalid judge reply, twice"))
    out = run(answer_correctness(judge, "Q?", "OSLO T1", "OSLO T1"))
    assert out == {
        "answer_correctness_error": "invalid judge reply, twice",
        "answer_eval_error": "invalid judge reply, twice",
    }


def test_custom_correctness_template_is_used_literally() -> None:
    template = (
        "Question: {question}\nReference: {reference_answer}\nCandidate: {actual_answer}\n"
        'Reply like {{"reference_claims_count": 1}}.'
    )
    check_prompt(template)
    question = "What is {x} worth in $y?"
    judge = FakeJudge(correctness_reply(1, 1, 1))
    out = run(answer_correctness(judge, question, "ref {z}", "act $w", template))
    assert out["answer_f1"] == 1.0
    prompt = judge.prompt()
    assert "Question: What is {x} worth in $y?" in prompt
    assert "Reference: ref {z}" in prompt
    assert "Candidate: act $w" in prompt
    assert 'Reply like {"reference_claims_count": 1}.' in prompt
    assert "{{" not in prompt
    # the default prompt is not used
    assert "Split the reference answer into its claims" not in prompt


def test_default_correctness_prompt_keeps_braces_and_dollars() -> None:
    judge = FakeJudge(correctness_reply(1, 1, 1))
    run(answer_correctness(judge, "What is {x} in $y?", "ref", "act"))
    assert "What is {x} in $y?" in judge.prompt()


@pytest.mark.parametrize(
    "template",
    [
        "Compare {question} with {foo}",
        "An unbalanced { brace",
        "A closing } alone",
        "Positional {}",
        "Index {0}",
        "Attribute {question.upper}",
    ],
)
def test_check_prompt_rejects(template: str) -> None:
    with pytest.raises(ValueError):
        check_prompt(template)


@pytest.mark.parametrize(
    "template",
    [
        "{question} {reference_answer} {actual_answer}",
        "No placeholders at all, {{ and }} and $dollar",
        "Only {actual_answer}",
    ],
)
def test_check_prompt_accepts(template: str) -> None:
    check_prompt(template)


def test_check_prompt_names_the_unknown_placeholder() -> None:
    with pytest.raises(ValueError, match=r"\{foo\}"):
        check_prompt("{question} {foo}")


# --- answer relevance ----------------------------------------------------------------------------

R = 1 / math.sqrt(2)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ([1, 0], [1, 0], 1.0),
        ([1, 0], [0, 1], 0.0),
        ([1, 0], [1, 1], R),
        ([1, 0], [-1, 0], -1.0),
        ([3, 4], [6, 8], 1.0),
        ([1, 2, 3], [4, 5, 6], 32 / math.sqrt(14 * 77)),
        ([0, 0], [1, 1], 0.0),
        ([1, 1], [0, 0], 0.0),
        ([0, 0], [0, 0], 0.0),
    ],
)
def test_cosine_table(a: list[float], b: list[float], expected: float) -> None:
    assert cosine(a, b) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    ("generated", "noncommittal", "expected"),
    [
        ([[1, 0], [0, 1], [1, 1]], [0, 0, 0], (1 + 0 + R) / 3),
        ([[1, 0], [1, 0]], [0, 0], 1.0),
        ([[1, 0], [0, 1], [1, 1]], [1, 1, 1], 0.0),
        ([[1, 0], [0, 1], [1, 1]], [1, 0, 1], (1 + 0 + R) / 3),
        ([[1, 1]], [0], R),
        ([], [], 0.0),
        ([[1, 0], [0, 1]], [True, True], 0.0),
    ],
    ids=["mean", "same", "all-noncommittal", "one-committal", "single", "none", "bools"],
)
def test_answer_relevancy_table(
    generated: list[list[float]], noncommittal: list[int], expected: float
) -> None:
    assert answer_relevancy([1, 0], generated, noncommittal) == pytest.approx(expected, abs=1e-12)


def test_answer_relevance_drops_empty_questions_and_adds_costs() -> None:
    question = "Which transformers are in OSLO?"
    judge = FakeJudge(
        {
            "questions": [
                {"question": "Where is T1?", "noncommittal": 0},
                {"question": "   ", "noncommittal": 0},
                {"question": "What is T2?", "noncommittal": 1},
                {"question": "", "noncommittal": 0},
            ]
        },
        cost=0.25,
    )
    embedder = FakeEmbedder(
        {question: [1.0, 0.0], "Where is T1?": [1.0, 1.0], "What is T2?": [0.0, 1.0]},
        call_cost=0.125,
    )
    out = run(answer_relevance(judge, embedder, question, "T1 and T2", count=4))
    assert embedder.calls == [[question, "Where is T1?", "What is T2?"]]
    assert out["answer_relevance"] == pytest.approx((R + 0.0) / 2, abs=1e-12)
    assert out["answer_relevance_questions"] == ["Where is T1?", "What is T2?"]
    assert out["answer_relevance_cost"] == 0.375
    assert judge.metrics == ["answer_relevance"]
    assert "T1 and T2" in judge.prompt()
    assert "4" in judge.prompt()


def test_answer_relevance_all_questions_dropped_scores_zero() -> None:
    judge = FakeJudge({"questions": [{"question": " ", "noncommittal": 0}]}, cost=0.25)
    embedder = FakeEmbedder({})
    out = run(answer_relevance(judge, embedder, "Q?", "an answer"))
    assert out["answer_relevance"] == 0.0
    assert out["answer_relevance_questions"] == []
    assert out["answer_relevance_cost"] == 0.25
    assert embedder.calls == []


def test_answer_relevance_all_noncommittal_scores_zero() -> None:
    judge = FakeJudge(
        {
            "questions": [
                {"question": "A?", "noncommittal": 1},
                {"question": "B?", "noncommittal": 1},
            ]
        }
    )
    embedder = FakeEmbedder({"Q?": [1.0, 0.0], "A?": [1.0, 0.0], "B?": [1.0, 0.0]})
    out = run(answer_relevance(judge, embedder, "Q?", "I cannot say."))
    assert out["answer_relevance"] == 0.0


def test_answer_relevance_empty_answer_without_a_call() -> None:
    judge = FakeJudge()
    embedder = FakeEmbedder({})
    out = run(answer_relevance(judge, embedder, "Q?", "  "))
    assert out == {"answer_relevance": 0.0, "answer_relevance_cost": 0.0}
    assert judge.calls == [] and embedder.calls == []


def test_answer_relevance_errors() -> None:
    out = run(answer_relevance(FakeJudge(JudgeError("boom")), FakeEmbedder({}), "Q?", "A"))
    assert out == {"answer_relevance_error": "boom"}
    judge = FakeJudge({"questions": [{"question": "A?", "noncommittal": 0}]})
    out = run(answer_relevance(judge, FailingEmbedder({}), "Q?", "A"))
    assert "answer_relevance" not in out
    assert "embedding endpoint down" in out["answer_relevance_error"]


def test_answer_relevance_unknown_embedding_cost_is_null() -> None:
    judge = FakeJudge({"questions": [{"question": "A?", "noncommittal": 0}]})
    embedder = FakeEmbedder({"Q?": [1.0, 0.0], "A?": [1.0, 0.0]}, call_cost=None)  # type: ignore[arg-type]
    out = run(answer_relevance(judge, embedder, "Q?", "A"))
    assert out["answer_relevance"] == 1.0
    assert out["answer_relevance_cost"] is None  # unknown, not 0


# --- retrieval context ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("useful", "expected"),
    [
        ([1, 0, 1, 1, 0], (1 + 2 / 3 + 3 / 4) / 3),
        ([0, 0], 0.0),
        ([], 0.0),
        ([1, 1], 1.0),
        ([0, 1], 0.5),
        ([1], 1.0),
        ([0, 0, 1], 1 / 3),
        ([1, 0, 0, 1], (1 + 2 / 4) / 2),
    ],
)
def test_average_precision_table(useful: list[int], expected: float) -> None:
    assert average_precision([bool(u) for u in useful]) == pytest.approx(expected, abs=1e-12)


def test_average_precision_all_useful_is_exactly_one() -> None:
    assert average_precision([True, True]) == 1.0
    assert average_precision([True] * 7) == 1.0


@pytest.mark.parametrize(
    ("attributed", "expected"),
    [
        ([True, False, True, True], 0.75),
        ([True], 1.0),
        ([False, False], 0.0),
        ([True, False, False], 1 / 3),
    ],
)
def test_context_recall_table(attributed: list[bool], expected: float) -> None:
    assert context_recall(attributed) == pytest.approx(expected, abs=1e-12)


def test_context_recall_needs_a_statement() -> None:
    with pytest.raises(ValueError):
        context_recall([])


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ('[{"id": "1", "text": "a"}, {"id": "2", "text": "b"}]', ["a", "b"]),
        ("[]", []),
        ([{"id": "1", "text": "x {y} $z"}], ["x {y} $z"]),
        (b'[{"text": ""}]', [""]),
    ],
)
def test_chunk_texts_valid(output: Any, expected: list[str]) -> None:
    assert chunk_texts(output) == expected


@pytest.mark.parametrize(
    "output",
    [
        '{"id": "1", "text": "a"}',
        '["a", "b"]',
        '[{"id": "1"}]',
        '[{"id": "1", "text": 3}]',
        '[{"id": "1", "text": "a"}, "b"]',
        "not json",
        "null",
        42,
    ],
)
def test_chunk_texts_invalid(output: Any) -> None:
    with pytest.raises(ValueError):
        chunk_texts(output)


def test_retrieval_metrics_without_chunks_scores_zero_without_a_call() -> None:
    judge = FakeJudge()
    out = run(retrieval_metrics(judge, "retrieval_answer", "Q?", "ref", []))
    assert judge.calls == []
    for name in ("recall", "precision", "f1"):
        assert out[f"retrieval_answer_{name}"] == 0.0
        assert out[f"retrieval_answer_{name}_cost"] == 0.0


def test_retrieval_metrics_scores_and_costs() -> None:
    judge = FakeJudge(
        (
            {
                "statements": [
                    {"statement": "s1", "attributed": True},
                    {"statement": "s2", "attributed": False},
                    {"statement": "s3", "attributed": True},
                    {"statement": "s4", "attributed": True},
                ],
            },
            0.25,
        ),
        (
            {
                "verdicts": [
                    {"chunk": 3, "relevant": True},
                    {"chunk": 1, "relevant": True},
                    {"chunk": 2, "relevant": False},
                ]
            },
            0.5,
        ),
    )
    chunks = ["chunk one", "chunk two", "chunk {three} $x"]
    out = run(retrieval_metrics(judge, "retrieval_answer", "Q?", "the reference", chunks))
    assert judge.metrics == ["retrieval_answer_recall", "retrieval_answer_precision"]
    recall = 0.75
    precision = (1 + 2 / 3) / 2  # sorted by chunk: [T, F, T]
    assert out["retrieval_answer_recall"] == recall
    assert out["retrieval_answer_precision"] == pytest.approx(precision, abs=1e-12)
    expected_f1 = 2 * recall * precision / (recall + precision)
    assert out["retrieval_answer_f1"] == pytest.approx(expected_f1, abs=1e-12)
    assert out["retrieval_answer_recall_cost"] == 0.25
    assert out["retrieval_answer_precision_cost"] == 0.5
    assert out["retrieval_answer_f1_cost"] == 0.75
    assert "s2: no" in out["retrieval_answer_recall_reason"]
    for i in (0, 1):
        prompt = judge.prompt(i)
        assert "the reference" in prompt
        assert '<chunk id="3">' in prompt
        assert "chunk {three} $x" in prompt


def test_retrieval_metrics_verdict_order_matters_only_by_chunk_number() -> None:
    verdicts = [{"chunk": 2, "relevant": True}, {"chunk": 1, "relevant": False}]
    judge = FakeJudge({"verdicts": verdicts})
    out = run(retrieval_metrics(judge, "p", "Q?", "ref", ["a", "b"], recall=False))
    # chunk 1 not useful, chunk 2 useful → [F, T] → 1/2 (unsorted it would be 1.0)
    assert out["p_precision"] == 0.5
    assert "p_recall" not in out and "p_f1" not in out


def test_retrieval_metrics_wrong_number_of_verdicts_fails_validation() -> None:
    judge = FakeJudge(
        {"statements": [{"statement": "s", "attributed": True}]},
        {"verdicts": [{"chunk": 1, "relevant": True}]},
    )
    out = run(retrieval_metrics(judge, "retrieval_answer", "Q?", "ref", ["a", "b"]))
    schema = judge.calls[1][2]
    with pytest.raises(ValidationError):
        schema.model_validate({"verdicts": [{"chunk": 1, "relevant": True}]})
    with pytest.raises(ValidationError):
        schema.model_validate({"verdicts": [{"chunk": i, "relevant": True} for i in (1, 2, 3)]})
    two = schema.model_validate({"verdicts": [{"chunk": i, "relevant": True} for i in (1, 2)]})
    assert len(two.verdicts) == 2  # type: ignore[attr-defined]
    assert out["retrieval_answer_recall"] == 1.0
    assert "retrieval_answer_precision_error" in out
    assert "retrieval_answer_precision" not in out
    assert "retrieval_answer_f1" not in out
    assert "retrieval_answer_f1_cost" not in out


def test_recall_reply_needs_a_statement() -> None:
    with pytest.raises(ValidationError):
        RecallReply.model_validate({"statements": []})


def test_retrieval_metrics_judge_errors() -> None:
    judge = FakeJudge(JudgeError("r failed"), JudgeError("p failed"))
    out = run(retrieval_metrics(judge, "retrieval_context", "Q?", "ref", ["a"]))
    assert out == {
        "retrieval_context_recall_error": "r failed",
        "retrieval_context_precision_error": "p failed",
    }


# --- custom metrics ------------------------------------------------------------------------------

SPARQL_METRIC: dict[str, Any] = {
    "name": "sparql_llm_evaluation",
    "inputs": ["actual_steps"],
    "steps_name": "sparql_query",
    "steps_keys": ["output"],
    "instructions": (
        "Count the results of each query. Write a set as {a, b}; a price as $5.\n"
        "Treat {x} and ${y} as plain text.\n"
    ),
    "outputs": {
        "sparql_recall": "fraction of the expected results found (0-1)",
        "sparql_reason2": "why",
    },
}


def test_parse_custom_metric_documented_example() -> None:
    metric = parse_custom_metric(SPARQL_METRIC, "config.yaml", 0)
    assert metric.name == "sparql_llm_evaluation"
    assert metric.inputs == ("actual_steps",)
    assert metric.steps_name == "sparql_query"
    assert metric.steps_keys == ("output",)
    assert list(metric.outputs) == ["sparql_recall", "sparql_reason2"]
    assert "{x}" in metric.instructions and "$5" in metric.instructions


def test_parse_custom_metric_original_readme_examples() -> None:
    relevance = parse_custom_metric(
        {
            "name": "my_answer_relevance",
            "inputs": ["question", "actual_answer"],
            "instructions": "Evaluate how relevant is the answer to the question.\n",
            "outputs": {
                "my_answer_relevance": "fraction between 0 and 1",
                "my_answer_relevance_reason": "reason for your evaluation",
            },
        },
        "config.yaml",
        0,
    )
    assert relevance.steps_name is None and relevance.steps_keys == ()
    sparql = parse_custom_metric(
        {
            "name": "sparql_llm_evaluation",
            "inputs": ["question", "reference_answer", "actual_steps"],
            "steps_keys": ["output"],
            "steps_name": "sparql",
            "instructions": "Divide the reference answer into claims.\n",
            "outputs": {
                "sparql_recall": "fraction 0-1",
                "sparql_precision": "fraction 0-1",
                "sparql_reason": "reason for your evaluation",
            },
        },
        "config.yaml",
        1,
    )
    assert sparql.inputs == ("question", "reference_answer", "actual_steps")


def _with(**changes: Any) -> dict[str, Any]:
    data = copy.deepcopy(SPARQL_METRIC)
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return data


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({**SPARQL_METRIC, "prompt": "x"}, "prompt"),
        (_with(inputs=["answer"]), "inputs"),
        (_with(inputs=[]), "inputs"),
        (_with(inputs="question"), "inputs"),
        (_with(steps_name=None), "steps_name"),
        (_with(steps_keys=None), "steps_keys"),
        (_with(steps_keys=["result"]), "steps_keys"),
        (_with(outputs={"answer_f1": "x"}), "outputs"),
        (_with(outputs={"steps_score": "x"}), "outputs"),
        (_with(outputs={"retrieval_answer_recall": "x"}), "outputs"),
        (_with(outputs={"reason": "x"}), "outputs"),
        (_with(outputs={"bad name": "x"}), "outputs"),
        (_with(outputs={}), "outputs"),
        (_with(outputs={"ok": 3}), "outputs.ok"),
        (_with(name="bad-name"), "name"),
        (_with(name=None), "name"),
        (_with(instructions="  "), "instructions"),
        (_with(inputs=["question"]), "steps_name"),
    ],
    ids=[
        "unknown-key",
        "bad-input",
        "no-inputs",
        "inputs-not-list",
        "no-steps-name",
        "no-steps-keys",
        "bad-steps-key",
        "answer_f1",
        "steps_score",
        "retrieval-prefix",
        "reason",
        "bad-output-name",
        "no-outputs",
        "description-not-str",
        "bad-name",
        "no-name",
        "blank-instructions",
        "steps-name-without-steps",
    ],
)
def test_parse_custom_metric_rejects(data: dict[str, Any], field: str) -> None:
    with pytest.raises(InputError) as info:
        parse_custom_metric(data, "config.yaml", 2)
    assert info.value.field == field
    assert info.value.source == "config.yaml"
    assert info.value.record is not None and info.value.record.startswith("custom_evaluations[2]")
    assert "custom_evaluations[2]" in str(info.value)


SPARQL_STEPS = [
    {
        "name": "sparql_query",
        "args": {"query": "SELECT ?hidden_args WHERE {}"},
        "output": '{"results": {"bindings": [{"x": {"value": "OSLO T1"}}]}}',
    },
    {"name": "retrieval", "args": {"query": "q"}, "output": "RETRIEVAL-CHUNK-TEXT"},
    {"name": "sparql_query", "args": {"query": "ASK {}"}, "output": "not json {at all}"},
]


def test_custom_metric_writes_outputs_reason_and_cost() -> None:
    metric = parse_custom_metric(SPARQL_METRIC, "config.yaml", 0)
    judge = FakeJudge(
        {"sparql_recall": 0.5, "sparql_reason2": "one of two", "reason": "overall"}, cost=0.125
    )
    out = run(custom_metric(judge, metric, {"actual_steps": SPARQL_STEPS}))
    assert out == {
        "sparql_recall": 0.5,
        "sparql_reason2": "one of two",
        "sparql_llm_evaluation_reason": "overall",
        "sparql_llm_evaluation_cost": 0.125,
    }
    assert judge.metrics == ["sparql_llm_evaluation"]
    prompt = judge.prompt()
    # the instructions are text: braces and dollars are kept as written
    assert "Write a set as {a, b}; a price as $5." in prompt
    assert "Treat {x} and ${y} as plain text." in prompt
    # only the sparql_query steps, and only their outputs
    assert "OSLO T1" in prompt
    assert "not json {at all}" in prompt
    assert "RETRIEVAL-CHUNK-TEXT" not in prompt
    assert "hidden_args" not in prompt
    assert '"sparql_recall"' in prompt and '"sparql_reason2"' in prompt


def test_custom_metric_missing_input_nulls_every_output_without_a_call() -> None:
    metric = parse_custom_metric(SPARQL_METRIC, "config.yaml", 0)
    judge = FakeJudge()
    out = run(custom_metric(judge, metric, {"actual_steps": None, "question": "Q?"}))
    assert judge.calls == []
    assert out["sparql_recall"] is None
    assert out["sparql_reason2"] is None
    assert "actual_steps" in out["sparql_llm_evaluation_error"]
    assert "sparql_llm_evaluation_cost" not in out


def test_custom_metric_judge_error_nulls_every_output() -> None:
    metric = parse_custom_metric(SPARQL_METRIC, "config.yaml", 0)
    judge = FakeJudge(JudgeError("gave up after 6 attempts"))
    out = run(custom_metric(judge, metric, {"actual_steps": SPARQL_STEPS}))
    assert out == {
        "sparql_recall": None,
        "sparql_reason2": None,
        "sparql_llm_evaluation_error": "gave up after 6 attempts",
    }


def test_custom_metric_reply_without_an_output_is_invalid() -> None:
    metric = parse_custom_metric(SPARQL_METRIC, "config.yaml", 0)
    judge = FakeJudge({"sparql_recall": 0.5})
    out = run(custom_metric(judge, metric, {"actual_steps": SPARQL_STEPS}))
    assert out["sparql_recall"] is None and out["sparql_reason2"] is None
    assert "sparql_llm_evaluation_error" in out


def test_custom_metric_reference_steps_are_shown_per_group_with_args() -> None:
    metric = parse_custom_metric(
        {
            "name": "plan_check",
            "inputs": ["question", "reference_steps"],
            "steps_name": "sparql_query",
            "steps_keys": ["args"],
            "instructions": "Compare.",
            "outputs": {"plan_ok": "true or false"},
        },
        "config.yaml",
        0,
    )
    groups = [
        [{"name": "sparql_query", "args": {"query": "FIRST-GROUP"}, "output": "OUT-1"}],
        [
            {"name": "other", "args": {"query": "OTHER-STEP"}},
            {"name": "sparql_query", "args": '{"query": "SECOND-GROUP"}', "output": "OUT-2"},
        ],
    ]
    judge = FakeJudge({"plan_ok": True})
    out = run(custom_metric(judge, metric, {"question": "Q {x} $y?", "reference_steps": groups}))
    assert out["plan_ok"] is True
    assert out["plan_check_reason"] == ""
    prompt = judge.prompt()
    assert "Q {x} $y?" in prompt
    assert prompt.index("FIRST-GROUP") < prompt.index("SECOND-GROUP")
    assert "OTHER-STEP" not in prompt
    assert "OUT-1" not in prompt and "OUT-2" not in prompt


def test_custom_metric_output_named_like_its_reason_keeps_the_judges_value() -> None:
    # graphrag-eval's README example: an output called <name>_reason
    metric = parse_custom_metric(
        {
            "name": "my_answer_relevance",
            "inputs": ["question", "actual_answer"],
            "instructions": "Evaluate how relevant is the answer to the question.",
            "outputs": {
                "my_answer_relevance": "fraction between 0 and 1",
                "my_answer_relevance_reason": "reason for your evaluation",
            },
        },
        "config.yaml",
        0,
    )
    judge = FakeJudge({"my_answer_relevance": 0.9, "my_answer_relevance_reason": "on topic"})
    out = run(custom_metric(judge, metric, {"question": "Q?", "actual_answer": "A"}))
    assert out["my_answer_relevance"] == 0.9
    assert out["my_answer_relevance_reason"] == "on topic"


# --- scoring -------------------------------------------------------------------------------------

CHUNKS = [
    {"id": "doc/1", "text": "Transformer OSLO T1 is in Substation Oslo."},
    {"id": "doc/2", "text": "The weather in Oslo is mild."},
]
REFERENCE_CHUNKS = [{"id": "doc/9", "text": "OSLO T1 and OSLO T2 are in OSLO."}]


def _result() -> dict[str, Any]:
    return {
        "template_id": "t",
        "question_id": "q1",
        "question_text": "List all transformers within Substation OSLO",
        "reference_answer": "OSLO T1, OSLO T2",
        "status": "success",
        "actual_answer": "OSLO T1",
        "actual_steps": [
            {"name": "sparql_query", "args": {"query": "SELECT"}, "status": "success"},
            {
                "name": "retrieval",
                "args": {"query": "transformers OSLO", "k": 2},
                "status": "success",
                "output": json.dumps(CHUNKS),
            },
        ],
    }


def test_answer_scorer_end_to_end() -> None:
    config = parse_config({"llm": {"generation": {"model": "m"}}})
    judge = FakeJudge(
        cost=0.25,
        by_metric={
            "answer_correctness": [correctness_reply(2, 1, 1)],
            "answer_relevance": [{"questions": [{"question": "G?", "noncommittal": 0}]}],
            "retrieval_answer_recall": [
                {
                    "statements": [
                        {"statement": "OSLO T1", "attributed": True},
                        {"statement": "OSLO T2", "attributed": False},
                    ]
                }
            ],
            "retrieval_answer_precision": [
                {"verdicts": [{"chunk": 2, "relevant": False}, {"chunk": 1, "relevant": True}]}
            ],
            "retrieval_context_recall": [{"statements": [{"statement": "T1", "attributed": True}]}],
            "retrieval_context_precision": [
                {"verdicts": [{"chunk": 1, "relevant": False}, {"chunk": 2, "relevant": True}]}
            ],
        },
    )
    question = "List all transformers within Substation OSLO"
    embedder = FakeEmbedder({question: [1.0, 0.0], "G?": [1.0, 1.0]}, call_cost=0.125)
    scorer = AnswerScorer(config, judge, embedder)  # type: ignore[arg-type]
    result = _result()
    original_steps = result["actual_steps"]
    original_step = original_steps[1]
    snapshot = copy.deepcopy(original_step)
    reference_step = {"name": "retrieval", "output": json.dumps(REFERENCE_CHUNKS)}
    assert scorer.applies(result)
    given = copy.deepcopy(result)
    scored = run(scorer.score(result, [(reference_step, 1)]))
    assert result == given  # the result is not changed: the scored one is a new dict
    assert result["actual_steps"] is original_steps and scored is not result
    result = scored

    assert sorted(judge.metrics) == sorted(
        [
            "answer_correctness",
            "answer_relevance",
            "retrieval_answer_recall",
            "retrieval_answer_precision",
            "retrieval_context_recall",
            "retrieval_context_precision",
        ]
    )
    assert result["answer_recall"] == 0.5
    assert result["answer_precision"] == 1.0
    assert result["answer_f1"] == pytest.approx(2 / 3)
    assert result["answer_correctness_cost"] == 0.25
    assert result["answer_relevance"] == pytest.approx(R)
    assert result["answer_relevance_cost"] == 0.375
    assert not any(k.startswith("retrieval_") for k in result)

    # the step keys go on a copy: the original step dict is unchanged
    assert original_step == snapshot
    step = result["actual_steps"][1]
    assert step is not original_step
    assert {k: step[k] for k in snapshot} == snapshot
    assert step["retrieval_answer_recall"] == 0.5
    assert step["retrieval_answer_precision"] == 1.0
    assert step["retrieval_answer_f1"] == pytest.approx(2 / 3)
    assert step["retrieval_answer_f1_cost"] == 0.5
    assert step["retrieval_context_recall"] == 1.0
    assert step["retrieval_context_precision"] == 0.5
    assert step["retrieval_context_f1"] == pytest.approx(2 / 3)
    # the other step is untouched
    assert result["actual_steps"][0] == {
        "name": "sparql_query",
        "args": {"query": "SELECT"},
        "status": "success",
    }
    # retrieval_answer judges against the reference answer, retrieval_context against the
    # reference step's texts
    assert "OSLO T1, OSLO T2" in judge.prompt_of("retrieval_answer_recall")
    assert "OSLO T1 and OSLO T2 are in OSLO." in judge.prompt_of("retrieval_context_recall")
    assert "OSLO T1 and OSLO T2 are in OSLO." not in judge.prompt_of("retrieval_answer_recall")


def test_answer_scorer_switches_and_bad_retrieval_output() -> None:
    config = parse_config(
        {
            "llm": {"generation": {"model": "m"}},
            "answer_correctness": {"enabled": False},
            "retrieval_context": {"enabled": False},
        }
    )
    judge = FakeJudge()
    scorer = AnswerScorer(config, judge, None, frozenset({"retrieval_answer"}))  # type: ignore[arg-type]
    result = _result()
    result["actual_steps"][1]["output"] = "not a chunk list"
    # relevance has no embedder; the rest is switched off
    result = run(scorer.score(result, []))
    assert judge.calls == []
    assert "answer_f1" not in result
    assert "retrieval_answer_recall" not in result["actual_steps"][1]

    scorer = AnswerScorer(parse_config({"llm": {}}), judge, None)  # type: ignore[arg-type]
    result = _result()
    result.pop("actual_answer")
    result["actual_steps"][1]["output"] = "not a chunk list"
    result = run(scorer.score(result, []))
    step = result["actual_steps"][1]
    assert "retrieval_answer_recall_error" in step
    assert "retrieval_answer_precision_error" in step
    assert judge.calls == []


def test_answer_scorer_runs_custom_metrics() -> None:
    config = parse_config(
        {"llm": {"generation": {"model": "m"}}, "custom_evaluations": [SPARQL_METRIC]}
    )
    judge = FakeJudge(
        by_metric={
            "answer_correctness": [correctness_reply(1, 1, 1)],
            "sparql_llm_evaluation": [{"sparql_recall": 1.0, "sparql_reason2": "all"}],
            "retrieval_answer_recall": [{"statements": [{"statement": "s", "attributed": True}]}],
            "retrieval_answer_precision": [
                {"verdicts": [{"chunk": 1, "relevant": True}, {"chunk": 2, "relevant": True}]}
            ],
        }
    )
    scorer = AnswerScorer(config, judge, None)  # type: ignore[arg-type]
    result = run(scorer.score(_result(), []))
    assert result["sparql_recall"] == 1.0
    assert result["sparql_reason2"] == "all"
    assert result["sparql_llm_evaluation_cost"] == 0.25
    assert result["answer_f1"] == 1.0
    assert result["actual_steps"][1]["retrieval_answer_precision"] == 1.0


@pytest.mark.parametrize("status", ["error", "timeout", None])
def test_answer_scorer_skips_error_results(status: str | None) -> None:
    config = parse_config({"llm": {"generation": {"model": "m"}}})
    scorer = AnswerScorer(config, FakeJudge(), FakeEmbedder({}))  # type: ignore[arg-type]
    result = {
        "question_id": "q1",
        "question_text": "Q?",
        "reference_answer": "A",
        "status": status,
        "error": "the agent crashed",
        "actual_answer": "A",
        "actual_steps": [],
    }
    assert scorer.applies(result) is False
    result["status"] = "success"
    assert scorer.applies(result) is True


@pytest.mark.parametrize(
    "name",
    ["retrieval_recall", "retrieval_precision", "retrieval_reason", "answer_quality", "my_score"],
)
def test_custom_output_names_the_original_allows_are_accepted(name: str) -> None:
    metric = parse_custom_metric(_with(outputs={name: "x"}), "config.yaml", 0)
    assert list(metric.outputs) == [name]


@pytest.mark.parametrize(
    "name", ["faithfulness", "ragas_score", "llm_cost", "context_recall", "answer_relevance_cost"]
)
def test_custom_output_that_collides_names_the_key(name: str) -> None:
    with pytest.raises(InputError, match=f"'{name}' would overwrite a result key"):
        parse_custom_metric(_with(outputs={name: "x"}), "config.yaml", 0)
