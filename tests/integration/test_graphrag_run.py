"""The GraphRAG metric set inside whole runs: switches, contexts from retrieval steps, the
composite, the rubric fallback, aggregates per tag, the flat input format and the CLI - over real
HTTP against the scripted judge."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from openai_stub import StubServer, completion, oracle_content
from qa_eval import compute_aggregates, run_evaluation
from qa_eval.cli import main
from qa_eval.errors import InputError, QaEvalError
from qa_eval.io.flat import flat_to_dataset, read_flat
from qa_eval.metrics.answer.geval import letter_grade
from qa_eval.metrics.retrieval.composite import ragas_score

CHUNKS = json.dumps(
    [
        {"id": "d1", "text": "Substation Oslo has transformers T1 and T2."},
        {"id": "d2", "text": "Bergen lies on the west coast."},
    ]
)
REFERENCE = [
    {
        "template_id": "transformers",
        "questions": [
            {
                "id": "q1",
                "question_text": "Which transformers are in Oslo?",
                "reference_answer": "T1 and T2.",
                "question_type": "list",
            },
            {
                "id": "q2",
                "question_text": "How many transformers are in Oslo?",
                "reference_answer": "Two.",
                "question_type": "count",
            },
        ],
    }
]
RESPONSES = [
    {
        "question_id": "q1",
        "actual_answer": "Oslo has T1. Oslo also has T2.",
        "actual_steps": [
            {"name": "retrieval", "args": {"k": 2}, "status": "success", "output": CHUNKS}
        ],
    },
    {"question_id": "q2", "actual_answer": "I don't know.", "actual_steps": []},
]


def _config(url: str, **blocks: Any) -> dict[str, Any]:
    return {
        "llm": {
            "generation": {"model": "gpt-4o-mini", "base_url": url, "api_key": "x"},
            "embedding": {"provider": "openai", "base_url": url, "api_key": "x"},
        },
        **blocks,
    }


def test_graphrag_metrics_run_over_http(stub: Any) -> None:
    results = run_evaluation(
        REFERENCE, RESPONSES, config=_config(stub.url), enable=["graphrag"], cache=False
    )
    first, second = results
    # contexts come from the retrieval step: one statement per sentence of the answer
    assert [s["statement"] for s in first["faithfulness_statements"]] == [
        "Oslo has T1.",
        "Oslo also has T2.",
    ]
    verdicts = [s["supported"] for s in first["faithfulness_statements"]]
    assert first["faithfulness"] == sum(verdicts) / len(verdicts)
    assert len(first["context_precision_verdicts"]) == 2
    assert first["context_precision_basis"] == "reference"
    assert 0 <= first["context_recall"] <= 1
    expected = ragas_score(
        {
            "faithfulness": first["faithfulness"],
            "context_precision": first["context_precision"],
            "context_recall": first["context_recall"],
            "answer_relevance": first["answer_relevance"],
        }
    )
    assert first["ragas_score"] == pytest.approx(expected.score)
    assert first["ragas_score_components"] == list(expected.used)
    criteria = [
        first[f"factual_accuracy_{c}"] for c in ("correctness", "completeness", "consistency")
    ]
    assert first["factual_accuracy"] == pytest.approx(
        0.5 * criteria[0] + 0.3 * criteria[1] + 0.2 * criteria[2]
    )
    assert first["factual_accuracy_grade"] == letter_grade(
        round(first["factual_accuracy"] * 100, 9)
    )
    assert first["answer_class"] in ("CORRECT", "WRONG")
    assert 0 <= first["semantic_similarity"] <= 1
    step_costs = first["actual_steps"][0].items()
    costs = [v for k, v in first.items() if k.endswith("_cost") and k != "llm_cost"]
    costs += [v for k, v in step_costs if k.endswith("_cost") and not k.endswith("_f1_cost")]
    assert first["llm_cost"] == pytest.approx(math.fsum(costs))
    # no retrieval step: the context metrics do not apply; the uncertainty phrase fires
    assert not any(k.startswith(("faithfulness", "context_")) for k in second)
    assert second["answer_class"] == "DON'T KNOW"
    assert second["answer_class_phrase"] == "i don't know"
    assert second["ragas_score_components"] == ["answer_relevance"]
    assert "bertscore_f1" not in first  # not part of 'graphrag'

    aggregates = compute_aggregates(results)
    micro = aggregates["micro"]
    assert micro["answer_class"]["n"] == 2
    assert micro["answer_class"]["counts"]["DON'T KNOW"] == 1
    assert sum(micro["factual_accuracy_grade"]["counts"].values()) == 2
    assert micro["faithfulness"]["n"] == 1
    assert set(aggregates["per_tag"]["question_type"]) == {"list", "count"}
    assert aggregates["per_tag"]["question_type"]["count"]["answer_class"]["counts"] == {
        "CORRECT": 0,
        "WRONG": 0,
        "DON'T KNOW": 1,
    }


def test_graphrag_metrics_are_off_by_default(stub: Any) -> None:
    (result, _) = run_evaluation(REFERENCE, RESPONSES, config=_config(stub.url), cache=False)
    assert "answer_f1" in result and "answer_relevance" in result
    assert not any(
        k.startswith(("faithfulness", "context_", "ragas", "factual", "answer_class"))
        for k in result
    )
    # switched on one by one in the config, in both forms
    (result, _) = run_evaluation(
        REFERENCE,
        RESPONSES,
        config=_config(stub.url, faithfulness=True, context_recall={"enabled": True}),
        disable=["answer_correctness", "answer_relevance", "retrieval_answer"],
        cache=False,
    )
    assert "faithfulness" in result and "context_recall" in result
    assert "context_precision" not in result and "answer_f1" not in result


def test_unknown_metric_names_are_refused(stub: Any) -> None:
    with pytest.raises(QaEvalError, match="unknown metric to enable: faithfullness"):
        run_evaluation(REFERENCE, RESPONSES, config=_config(stub.url), enable=["faithfullness"])


def test_relevance_falls_back_to_the_rubric_when_generation_fails() -> None:
    def script(request: dict[str, Any], number: int) -> Any:
        text = request["messages"][0]["content"]
        if "[qa-eval:answer-relevance]" in text:
            return completion("no JSON here, twice")
        return completion(oracle_content(request))

    with StubServer(script) as server:
        (result, _) = run_evaluation(
            REFERENCE,
            RESPONSES,
            config=_config(server.url),
            disable=["answer_correctness", "retrieval_answer"],
            cache=False,
        )
        # The rubric score is kept under its own key; answer_relevance stays an error, so its
        # mean never mixes the cosine scale with the rubric's five levels.
        assert result["answer_relevance_rubric"] in (1.0, 0.75, 0.5, 0.25, 0.0)
        assert result["answer_relevance_rubric_reason"]
        assert "answer_relevance" not in result
        assert result["answer_relevance_error"].startswith("invalid judge reply")
        assert "answer_relevance_method" not in result
        (plain, _) = run_evaluation(
            REFERENCE,
            RESPONSES,
            config=_config(server.url, answer_relevance={"rubric_fallback": False}),
            disable=["answer_correctness", "retrieval_answer"],
            cache=False,
        )
        assert "answer_relevance" not in plain and plain["answer_relevance_error"]
        assert "answer_relevance_rubric" not in plain


def test_grade_cutoffs_and_weights_come_from_the_config(stub: Any) -> None:
    config = _config(
        stub.url,
        factual_accuracy={"enabled": True, "weights": [1, 0, 0], "cutoffs": {"PASS": 0}},
        ragas_score={"enabled": True, "weights": {"answer_relevance": 1}},
    )
    (result, _) = run_evaluation(
        REFERENCE, RESPONSES, config=config, disable=["answer_correctness"], cache=False
    )
    assert result["factual_accuracy"] == result["factual_accuracy_correctness"]
    assert result["factual_accuracy_grade"] == "PASS"
    assert result["ragas_score"] == pytest.approx(result["answer_relevance"])
    assert result["ragas_score_components"] == ["answer_relevance"]


def test_offline_similarity_needs_no_judge() -> None:
    results = run_evaluation(REFERENCE, RESPONSES, enable=["semantic_similarity"], cache=False)
    assert 0 < results[0]["semantic_similarity"] <= 1
    assert "answer_f1" not in results[0]  # no judge, so no LLM metric
    assert results.signature["embedding"] == "offline:all-MiniLM-L6-v2-int8"


# --- the flat format -------------------------------------------------------------------------


def test_flat_rows_with_ragas_names_become_questions_and_responses() -> None:
    rows = [
        (
            1,
            {
                "user_input": "Q1?",
                "response": "A1.",
                "retrieved_contexts": ["c1", "c2"],
                "reference": "R1.",
                "question_type": "simple",
            },
        ),
        (2, {"user_input": "Q2?", "reference": ["R2a.", "R2b."]}),
    ]
    reference, responses = flat_to_dataset(rows)
    assert reference == [
        {
            "template_id": "simple",
            "questions": [
                {
                    "id": "row-1",
                    "question_text": "Q1?",
                    "reference_answer": "R1.",
                    "question_type": "simple",
                }
            ],
        },
        {
            "template_id": "all",
            "questions": [
                {"id": "row-2", "question_text": "Q2?", "reference_answer": "R2a.\nR2b."}
            ],
        },
    ]
    step = responses[0]["actual_steps"][0]
    assert step["name"] == "retrieval"
    assert json.loads(step["output"]) == [{"id": "1", "text": "c1"}, {"id": "2", "text": "c2"}]
    assert responses[1] == {"question_id": "row-2", "status": "error", "error": "no answer"}


def test_flat_csv_lists_and_column_mapping(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    path.write_text(
        "qid,prompt,answer,contexts,ground_truth\n"
        "a,What?,It.,\"['one', 'two, three']\",Truth.\n"
        'b,Who?,Him.,"[""x""]",Truth2.\n'
        "c,Why?,Because.,plain text,\n",
        encoding="utf-8",
    )
    reference, responses = read_flat(path, {"question": "prompt", "question_id": "qid"})
    questions = reference[0]["questions"]
    assert [q["id"] for q in questions] == ["a", "b", "c"]
    assert "reference_answer" not in questions[2]
    texts = [[c["text"] for c in json.loads(r["actual_steps"][0]["output"])] for r in responses]
    assert texts == [["one", "two, three"], ["x"], ["plain text"]]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"answer": "x"}\n', "no question column"),
        ('{"question": "q", "id": 1}\n{"question": "r", "id": 1}\n', "line 2: id: duplicate"),
        (
            '{"question": "q", "answer": "a", "contexts": [1, 2]}\n',
            "line 1: contexts: must be a list of strings",
        ),
        ('{"question": ""}\n', "line 1: question: must be a non-empty string"),
        ('{"question": "q"}\n[1]\n', "line 2: must be a JSON object"),
        ('{"question": "q", "answer": 3}\n', "line 1: answer: must be a string"),
    ],
)
def test_flat_input_errors_name_the_file_line_and_column(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_flat(path)
    assert str(info.value).startswith(str(path))
    assert message in str(info.value)


def test_evaluate_flat_command(
    tmp_path: Path, stub: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {
                    "question": "Which transformers are in Oslo?",
                    "answer": "Oslo has T1. It also has T2.",
                    "contexts": ["Substation Oslo has T1 and T2."],
                    "ground_truth": "T1 and T2.",
                    "question_type": "list",
                },
                {
                    "question": "How many lines leave Bergen?",
                    "answer": "I am not sure.",
                    "contexts": [],
                    "ground_truth": "Three.",
                    "question_type": "count",
                },
            ]
        ),
        encoding="utf-8",
    )
    config = tmp_path / "judge.yaml"
    config.write_text(yaml.safe_dump(_config(stub.url)), encoding="utf-8")
    out, aggregates = tmp_path / "results.jsonl", tmp_path / "aggregates.yaml"
    code = main(
        [
            "evaluate-flat",
            str(rows),
            "-c",
            str(config),
            "--enable",
            "graphrag",
            "--no-cache",
            "-o",
            str(out),
            "--aggregates",
            str(aggregates),
        ]
    )
    printed = capsys.readouterr().out
    assert code == 0
    assert "ragas_score % (mean)" in printed and "answer_class: CORRECT" in printed
    results = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["template_id"] for r in results] == ["list", "count"]
    assert results[0]["faithfulness"] is not None
    assert "retrieval_answer_recall" not in json.dumps(results)  # the made-up step is not judged
    assert results[1]["context_precision"] == 0.0  # no contexts retrieved: 0, without a call
    assert results[1]["answer_class"] == "DON'T KNOW"
    data = yaml.safe_load(aggregates.read_text())
    assert set(data["per_tag"]["question_type"]) == {"list", "count"}


def test_evaluate_flat_bad_mapping_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"question": "q", "answer": "a"}\n', encoding="utf-8")
    assert main(["evaluate-flat", str(rows), "--column", "questoin=q"]) == 2
    assert "unknown field(s) in the column mapping: questoin" in capsys.readouterr().err
    assert main(["evaluate-flat", str(rows), "--column", "question"]) == 2


def test_bertscore_runs_offline_in_a_run_and_records_model_and_layer() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from qa_eval.metrics.textual.bertscore import BertScorer

    results = run_evaluation(
        REFERENCE,
        RESPONSES,
        config={"bertscore": {"enabled": True, "layer": 5}},
        cache=False,
    )
    first = results[0]
    expected = BertScorer(layer=5).score([RESPONSES[0]["actual_answer"]], ["T1 and T2."])[0]
    assert (first["bertscore_precision"], first["bertscore_recall"], first["bertscore_f1"]) == (
        pytest.approx(expected, abs=1e-6)
    )
    assert first["bertscore_model"] == "all-MiniLM-L6-v2" and first["bertscore_layer"] == 5
    assert results.signature["options"]["bertscore"]["layer"] == 5


def test_bertscore_without_torch_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a)
    )
    with pytest.raises(QaEvalError, match=r"BERTScore needs torch; install it with: pip install"):
        run_evaluation(REFERENCE, RESPONSES, enable=["bertscore"], cache=False)
