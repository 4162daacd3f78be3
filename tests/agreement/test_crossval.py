"""``agreement --cross-validate K``: the judge run without examples and with examples drawn only
from the other folds, over a scripted judge that answers well only when it sees examples."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from openai_stub import Reply, StubServer, completion, prompt_text
from qa_eval.cli import main
from qa_eval.config import parse_config
from qa_eval.errors import InputError
from qa_eval.io.files import write_data
from qa_eval.run.crossval import WITH, WITHOUT, cross_validate, example_family, split_results
from qa_eval.schemas import load_schema

N = 20
RIGHT = {i for i in range(N) if i % 3 != 0}  # 13 right answers, 7 wrong


def _results() -> list[dict[str, Any]]:
    return [
        {
            "template_id": "facts",
            "question_id": f"q{i}",
            "question_text": f"Question {i}?",
            "reference_answer": f"Fact {i}.",
            "actual_answer": f"Answer {i} is {'right' if i in RIGHT else 'wrong'}.",
            "status": "success",
            "answer_f1": 1.0,
        }
        for i in range(N)
    ]


def _labels() -> list[dict[str, Any]]:
    return [
        {"question_id": f"q{i}", "metric": "answer_f1", "label": int(i in RIGHT)} for i in range(N)
    ]


class Script:
    """Says every answer matches unless the prompt shows examples; with them, it reads the
    answer's "right"/"wrong". Records which question each prompt judged and which it showed."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, list[str]]] = []

    def __call__(self, request: dict[str, Any], number: int) -> Reply:
        text = prompt_text(request)
        judged = re.search(r"<candidate_answer>\n(.*?)\n</candidate_answer>", text, re.S)
        shown = re.findall(r"<example id=\"\d+\">\n<question>\n(.*?)\n</question>", text, re.S)
        question = re.findall(r"<question>\n(.*?)\n</question>", text, re.S)[-1]
        self.seen.append((question, shown))
        match = 1 if not shown or "right" in (judged.group(1) if judged else "") else 0
        reply = {
            "reference_claims_count": 1,
            "actual_claims_count": 1,
            "matching_claims_count": match,
            "reason": "compared",
        }
        return completion(json.dumps(reply))


def _config(url: str) -> dict[str, Any]:
    return {
        "llm": {"generation": {"provider": "openai", "base_url": url, "api_key": "x"}},
        "answer_correctness": {"enabled": True},
        "answer_relevance": False,
    }


def test_examples_help_and_never_show_the_items_of_the_judged_fold() -> None:
    script = Script()
    with StubServer(script) as server:
        report = cross_validate(
            _results(),
            _labels(),
            _config(server.url),
            "answer_f1",
            folds=4,
            count=3,
            cache=False,
            resamples=500,
        )
    data = report.to_dict()
    plain = report.metric(WITHOUT, "answer_f1")
    helped = report.metric(WITH, "answer_f1")
    assert plain is not None and helped is not None
    assert plain["n"] == helped["n"] == N
    assert plain["accuracy"] == pytest.approx(len(RIGHT) / N)  # says "matches" everywhere
    assert helped["accuracy"] == 1.0 and helped["kappa"] == 1.0
    (mcnemar,) = [c for c in data["comparisons"] if c["statistic"] == "accuracy"]
    assert mcnemar["only_b_right"] == N - len(RIGHT) and mcnemar["only_a_right"] == 0
    assert mcnemar["p_value"] < 0.05
    cv = data["method"]["cross_validation"]
    assert cv["folds"] == 4 and cv["items"] == N and cv["family"] == "answer_correctness"
    assert cv["examples_shown"] == [3, 3, 3, 3]
    # N prompts without examples, N with; a prompt never shows its own question, and the
    # examples of one fold's prompts never include an item of that fold
    without = [q for q, shown in script.seen if not shown]
    fold_prompts = [(q, shown) for q, shown in script.seen if shown]
    assert len(without) == N and len(fold_prompts) == N
    by_examples: dict[tuple[str, ...], set[str]] = {}
    for question, shown in fold_prompts:
        assert question not in shown
        by_examples.setdefault(tuple(shown), set()).add(question)
    # the prompts sharing one set of examples are one fold or more: none of them is shown
    assert len(by_examples) >= 2
    for shown, judged in by_examples.items():
        assert not judged & set(shown)
        assert len(judged) % (N // 4) == 0  # whole folds of 5
    assert set().union(*by_examples.values()) == {f"Question {i}?" for i in range(N)}


def test_the_command_prints_both_judges_and_their_comparison(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results, labels = tmp_path / "results.jsonl", tmp_path / "labels.csv"
    write_data(results, _results())
    labels.write_text(
        "question_id,metric,label\n"
        + "".join(f"q{i},answer_f1,{int(i in RIGHT)}\n" for i in range(N))
    )
    with StubServer(Script()) as server:
        write_data(tmp_path / "judge.yaml", _config(server.url))
        args = ["agreement", str(results), "--labels", str(labels), "--resamples", "300"]
        code = main(
            [
                *args,
                "--cross-validate",
                "4",
                "-c",
                str(tmp_path / "judge.yaml"),
                "--no-cache",
                "--format",
                "json",
            ]
        )
    out = capsys.readouterr()
    assert code == 0, out.err
    data = json.loads(out.out)
    assert [j["label"] for j in data["judges"]] == [WITHOUT, WITH]
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator(load_schema("agreement")).validate(data)
    assert data["method"]["cross_validation"]["folds"] == 4
    with StubServer(Script()) as server:
        write_data(tmp_path / "judge.yaml", _config(server.url))
        code = main([*args, "--cross-validate", "4", "-c", str(tmp_path / "judge.yaml")])
    text = capsys.readouterr().out
    assert code == 0
    assert text.startswith("few-shot examples cross-validated: 20 labelled items in 4 folds")
    assert "no examples" in text and "with examples (cross-validated)" in text
    for bad, message in [
        (["--cross-validate", "4"], "give its config with -c"),
        (["--cross-validate", "1", "-c", "x.yaml"], "at least 2 folds"),
    ]:
        assert main([*args, *bad]) == 2
        assert message in capsys.readouterr().err


def test_the_family_of_a_labelled_metric() -> None:
    config = parse_config(
        {
            "llm": {"generation": {"provider": "openai", "api_key": "x"}},
            "custom_evaluations": [
                {"name": "g", "inputs": ["question"], "instructions": "i", "outputs": {"ok": "b"}}
            ],
        }
    )
    assert example_family(config, "answer_f1") == "answer_correctness"
    assert example_family(config, "ok") == "g"
    with pytest.raises(InputError, match="faithfulness"):
        example_family(config, "faithfulness")
    reference, responses = split_results(_results()[:2])
    assert reference[0]["questions"][1] == {
        "id": "q1",
        "question_text": "Question 1?",
        "reference_answer": "Fact 1.",
    }
    assert responses[0] == {"question_id": "q0", "actual_answer": "Answer 0 is wrong."}
