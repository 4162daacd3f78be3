"""graphrag-eval 6.6.1's call forms and inputs, as its users write them: the config as the third
positional argument or ``config_file_path=``, ``await run_evaluation(...)``, and responses for
question ids the reference does not have (the original ignores them)."""

from __future__ import annotations

import asyncio
import copy
import json
import re
import warnings
from pathlib import Path
from typing import Any

import pytest

from qa_eval import arun_evaluation, iter_evaluation, run_evaluation
from qa_eval.cli import main
from qa_eval.errors import UnknownResponsesWarning
from qa_eval.run.stream import JsonLinesResponses

# The original's shapes: templates with questions, responses keyed by question id, steps with
# ids and statuses, token counts.
REFERENCE = [
    {
        "template_id": "list_all_transformers",
        "questions": [
            {
                "id": "c10bbc8dce98a4b8832d125134a16153",
                "question_text": "List all transformers within Substation OSLO",
                "reference_answer": "OSLO T1, OSLO T2",
                "reference_steps": [
                    [{"name": "sparql_query", "output": "T1 T2", "args": {"query": "SELECT"}}]
                ],
            },
            {
                "id": "8bbea9a10876a04ad77a82fd2aedee40",
                "question_text": "List all transformers within Substation STAVANGER",
                "reference_answer": "STAVANGER T1",
                "reference_steps": [[{"name": "sparql_query", "output": "T1"}]],
            },
        ],
    }
]


def _responses() -> dict[str, Any]:
    return {
        "c10bbc8dce98a4b8832d125134a16153": {
            "question_id": "c10bbc8dce98a4b8832d125134a16153",
            "actual_answer": "OSLO T1, OSLO T2",
            "actual_steps": [
                {"name": "sparql_query", "output": "T1 T2", "status": "success", "id": "call_1"}
            ],
            "input_tokens": 221339,
            "output_tokens": 212,
            "total_tokens": 221551,
            "elapsed_sec": 46.3,
        },
        "8bbea9a10876a04ad77a82fd2aedee40": {
            "question_id": "8bbea9a10876a04ad77a82fd2aedee40",
            "actual_answer": "STAVANGER T1",
            "actual_steps": [
                {"name": "sparql_query", "output": "T2", "status": "success", "id": "call_2"}
            ],
        },
    }


NO_LLM = "answer_correctness:\n  enabled: false\n"
"""A config without an llm section that switches answer correctness off: valid in both."""


@pytest.fixture
def config_path(tmp_path: Path) -> Path:
    path = tmp_path / "eval_config.yaml"
    path.write_text(NO_LLM, encoding="utf-8")
    return path


def _scores(results: list[dict[str, Any]]) -> list[Any]:
    return [(r["question_id"], r["steps_score"]) for r in results]


EXPECTED = [("c10bbc8dce98a4b8832d125134a16153", 1.0), ("8bbea9a10876a04ad77a82fd2aedee40", 0.0)]


def test_config_as_third_positional_argument(config_path: Path) -> None:
    results = run_evaluation(copy.deepcopy(REFERENCE), _responses(), str(config_path))
    assert _scores(results) == EXPECTED
    assert results.signature["options"]["metrics"]["answer_correctness"] is False


def test_config_file_path_keyword(config_path: Path) -> None:
    results = run_evaluation(REFERENCE, _responses(), config_file_path=config_path)
    assert _scores(results) == EXPECTED
    assert results.signature["options"]["metrics"]["answer_correctness"] is False


def test_config_given_twice_is_a_type_error(config_path: Path) -> None:
    with pytest.raises(TypeError, match="config_file_path"):
        run_evaluation(REFERENCE, _responses(), str(config_path), config_file_path=config_path)
    with pytest.raises(TypeError):  # Python's own: the same parameter twice
        run_evaluation(REFERENCE, _responses(), config_path, config=config_path)  # type: ignore[misc]


def test_empty_config_path_means_no_config_as_in_the_original() -> None:
    assert _scores(run_evaluation(REFERENCE, _responses(), "")) == EXPECTED
    assert _scores(run_evaluation(REFERENCE, _responses(), config_file_path="")) == EXPECTED


def test_a_bad_config_path_is_still_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"missing\.yaml"):
        run_evaluation(REFERENCE, _responses(), config_file_path=tmp_path / "missing.yaml")


def test_await_run_evaluation_as_with_the_original_coroutine(config_path: Path) -> None:
    async def main_() -> list[Any]:
        # The original's README: ``await run_evaluation(reference, responses,
        # config_file_path=...)`` inside the user's own coroutine.
        awaited = await run_evaluation(REFERENCE, _responses(), config_file_path=config_path)
        plain = run_evaluation(REFERENCE, _responses(), config_path)
        asynchronous = await arun_evaluation(REFERENCE, _responses(), config_path)
        gathered = await asyncio.gather(
            run_evaluation(REFERENCE, _responses()), run_evaluation(REFERENCE, _responses())
        )
        task = await asyncio.create_task(run_evaluation(REFERENCE, _responses()))  # type: ignore[arg-type]
        return [awaited, plain, asynchronous, *gathered, task]

    for results in asyncio.run(main_()):
        assert isinstance(results, list)
        assert _scores(results) == EXPECTED


def test_asyncio_run_of_run_evaluation_outside_a_loop() -> None:
    # ``asyncio.run(run_evaluation(...))``, the script form of the original's coroutine.
    results = asyncio.run(run_evaluation(REFERENCE, _responses()))  # type: ignore[arg-type]
    assert _scores(results) == EXPECTED
    assert "qa_eval_version" in results.signature


def test_plain_call_still_returns_the_list_with_its_signature() -> None:
    results = run_evaluation(REFERENCE, _responses())
    assert type(results).__name__ == "Results" and len(results) == 2
    assert results == list(results)  # equality is the list's
    assert results.signature["reference"]["questions"] == 2


def test_iter_evaluation_takes_the_config_the_same_ways(config_path: Path) -> None:
    with iter_evaluation(REFERENCE, _responses(), str(config_path)) as stream:
        assert _scores(list(stream)) == EXPECTED
    assert stream.signature is not None
    assert stream.signature["options"]["metrics"]["answer_correctness"] is False
    with iter_evaluation(REFERENCE, _responses(), config_file_path=config_path) as stream:
        assert _scores(list(stream)) == EXPECTED


# Item 9: responses for question ids not in the reference.


def _with_strangers() -> dict[str, Any]:
    responses = _responses()
    for n in range(7):
        qid = f"not-in-reference-{n}"
        responses[qid] = {"question_id": qid, "actual_answer": "x", "actual_steps": []}
    return responses


def test_unknown_question_ids_are_ignored_with_one_warning() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = run_evaluation(REFERENCE, _with_strangers())
    assert _scores(results) == EXPECTED  # the rest is evaluated, as by the original
    mine = [w for w in caught if issubclass(w.category, UnknownResponsesWarning)]
    assert len(mine) == 1
    message = str(mine[0].message)
    assert message.startswith("responses: 7 responses for question ids not in the reference")
    assert "'not-in-reference-0'" in message and message.endswith(", ...)")
    assert results.signature["ignored_responses"] == {
        "count": 7,
        "question_ids": [f"not-in-reference-{n}" for n in range(5)],
    }


def test_no_warning_and_no_signature_key_when_every_id_is_known() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnknownResponsesWarning)
        results = run_evaluation(REFERENCE, _responses())
    assert "ignored_responses" not in results.signature


def test_list_of_responses_with_an_unknown_id() -> None:
    responses = [*_responses().values(), {"question_id": "elsewhere", "actual_answer": "?"}]
    with pytest.warns(UnknownResponsesWarning, match=r"1 response for .* \('elsewhere'\)"):
        results = run_evaluation(REFERENCE, responses)
    assert _scores(results) == EXPECTED


def test_streamed_jsonl_reader_ignores_them_the_same_way(tmp_path: Path) -> None:
    path = tmp_path / "responses.jsonl"
    lines = [json.dumps(r) for r in _with_strangers().values()]
    lines.insert(1, lines.pop())  # one stranger between the known ones
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.warns(UnknownResponsesWarning, match="7 responses") as caught:
        streamed = run_evaluation(REFERENCE, JsonLinesResponses(path), responses_source=str(path))
    assert len([w for w in caught if issubclass(w.category, UnknownResponsesWarning)]) == 1
    assert str(caught[0].message).startswith(f"{path}: 7 responses")
    assert _scores(streamed) == EXPECTED
    assert streamed.signature["ignored_responses"]["count"] == 7
    with pytest.warns(UnknownResponsesWarning):
        in_memory = run_evaluation(REFERENCE, _with_strangers())
    assert streamed == in_memory


def _cli_files(tmp_path: Path) -> tuple[Path, Path]:
    ref = tmp_path / "reference.json"
    ref.write_text(json.dumps(REFERENCE), encoding="utf-8")
    resp = tmp_path / "responses.jsonl"
    resp.write_text(
        "".join(json.dumps(r) + "\n" for r in _with_strangers().values()), encoding="utf-8"
    )
    return ref, resp


@pytest.mark.parametrize("output", ["results.jsonl", "results.json"])
def test_cli_warns_in_one_line_and_strict_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], output: str
) -> None:
    ref, resp = _cli_files(tmp_path)
    out = tmp_path / output
    assert main(["evaluate", str(ref), str(resp), "-o", str(out), "-q"]) == 0
    err = capsys.readouterr().err
    warned = [line for line in err.splitlines() if "not in the reference dataset" in line]
    assert warned == [
        f"qa-eval: warning: {resp}: 7 responses for question ids not in the reference dataset "
        "ignored ('not-in-reference-0', 'not-in-reference-1', 'not-in-reference-2', "
        "'not-in-reference-3', 'not-in-reference-4', ...)"
    ]
    assert main(["evaluate", str(ref), str(resp), "-o", str(out), "-q", "--strict"]) == 3
    err = capsys.readouterr().err
    assert "gate FAILED: strict" in err
    assert "7 responses for question ids not in the reference ignored" in err


# Item 10: no config, OPENAI_API_KEY set: the default judge is announced before its first call.


def _answers_files(tmp_path: Path, count: int) -> tuple[Path, Path]:
    questions = [
        {"id": f"q{n}", "question_text": f"Capital number {n}?", "reference_answer": f"Paris {n}"}
        for n in range(count)
    ]
    ref = tmp_path / "reference.json"
    ref.write_text(json.dumps([{"template_id": "capitals", "questions": questions}]), "utf-8")
    resp = tmp_path / "responses.jsonl"
    resp.write_text(
        "".join(
            json.dumps({"question_id": f"q{n}", "actual_answer": f"It is Paris {n}"}) + "\n"
            for n in range(count)
        ),
        encoding="utf-8",
    )
    return ref, resp


def _note(err: str) -> str:
    lines = [line for line in err.splitlines() if "OPENAI_API_KEY is set" in line]
    assert len(lines) == 1, err
    return lines[0]


def test_default_judge_is_announced_with_its_calls_and_cost(
    tmp_path: Path,
    stub: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", stub.url)
    ref, resp = _answers_files(tmp_path, 3)
    assert main(["evaluate", str(ref), str(resp), "-q", "--no-cache"]) == 0
    note = _note(capsys.readouterr().err)
    assert note.startswith("note: no --config and OPENAI_API_KEY is set, so the LLM metrics use")
    assert "openai gpt-4o-mini" in note and "--no-judge" in note
    assert "sk-test" not in note
    # The estimate (all 3 questions planned: no scaling) is the calls then made, plus at most
    # one answer-relevance rubric fallback per question, which the plan counts as an upper
    # bound (it is asked only when question generation fails).
    planned = int(re.search(r"about (\d+) judge calls", note).group(1))  # type: ignore[union-attr]
    assert 0 < len(stub.requests) <= planned <= len(stub.requests) + 3
    assert re.search(r"about \$0\.0\d\d[1-9] ", note)  # gpt-4o-mini's price is known


def test_estimate_of_a_large_run_is_scaled_from_a_sample(
    tmp_path: Path,
    stub: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", stub.url)
    ref, resp = _answers_files(tmp_path, 450)
    assert main(["evaluate", str(ref), str(resp), "-q", "--no-cache"]) == 0
    err = capsys.readouterr().err
    note = _note(err)
    assert "estimated from the first 200 of 450 questions" in note
    # every question alike: the scaled sample is the calls made, plus at most one relevance
    # fallback per question (an upper bound the plan counts)
    planned = int(re.search(r"about (\d+) judge calls", note).group(1))  # type: ignore[union-attr]
    assert 0 < len(stub.requests) <= planned <= len(stub.requests) + 450
    assert "not in the reference" not in err  # the sample's left-out responses are not warned


def test_no_judge_makes_no_call_and_no_announcement(
    tmp_path: Path,
    stub: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", stub.url)
    ref, resp = _answers_files(tmp_path, 3)
    out = tmp_path / "results.json"
    assert main(["evaluate", str(ref), str(resp), "-o", str(out), "--no-judge"]) == 0
    err = capsys.readouterr().err
    assert stub.requests == []
    assert "OPENAI_API_KEY is set" not in err
    assert "note: LLM metrics not computed: switched off by --no-judge" in err
    results = json.loads(out.read_text(encoding="utf-8"))
    assert all("answer_f1" not in r for r in results)


def test_no_judge_also_switches_off_a_configured_judge(
    tmp_path: Path, stub: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "judge.yaml"
    config.write_text(
        f"llm:\n  generation:\n    model: gpt-4o-mini\n    base_url: {stub.url}\n    api_key: x\n",
        encoding="utf-8",
    )
    ref, resp = _answers_files(tmp_path, 2)
    assert main(["evaluate", str(ref), str(resp), "-c", str(config), "-q", "--no-judge"]) == 0
    assert stub.requests == []
    assert main(["evaluate", str(ref), str(resp), "-c", str(config), "-q", "--no-cache"]) == 0
    assert stub.requests  # the same config without the flag does call it
    assert "OPENAI_API_KEY is set" not in capsys.readouterr().err  # configured: no note


def test_no_judge_on_evaluate_flat(
    tmp_path: Path,
    stub: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", stub.url)
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        json.dumps({"question": "Capital?", "answer": "Paris", "ground_truth": "Paris"}) + "\n",
        encoding="utf-8",
    )
    assert main(["evaluate-flat", str(rows), "-q", "--no-judge"]) == 0
    assert stub.requests == []
    assert main(["evaluate-flat", str(rows), "-q", "--no-cache"]) == 0
    assert stub.requests
    assert "OPENAI_API_KEY is set" in capsys.readouterr().err


def test_steps_of_other_names_do_not_match_by_raw_output() -> None:
    # graphrag-eval 6.6.1 scores this 1.0: before any type-specific comparison it matches an
    # actual step of any name whose output equals the reference's (docs/compatibility.md, 12a).
    reference = [
        {
            "template_id": "t",
            "questions": [
                {
                    "id": "q",
                    "question_text": "Power of T1 yesterday?",
                    "reference_steps": [
                        [{"name": "retrieve_time_series", "args": {"id": "T1"}, "output": "[]"}]
                    ],
                }
            ],
        }
    ]
    actual = {"name": "other_tool", "args": {"id": "T1"}, "output": "[]", "status": "success"}
    responses = {"q": {"question_id": "q", "actual_steps": [{**actual, "id": "call_1"}]}}
    result = run_evaluation(reference, responses)[0]
    assert result["steps_score"] == 0.0
    assert "matches" not in result["reference_steps"][0][0]
    same_name = {**actual, "name": "retrieve_time_series", "id": "call_1"}
    result = run_evaluation(reference, {"q": {"question_id": "q", "actual_steps": [same_name]}})[0]
    assert result["steps_score"] == 1.0 and result["reference_steps"][0][0]["matches"] == "call_1"
