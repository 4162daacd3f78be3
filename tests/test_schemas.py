"""The JSON Schemas of the reference, responses and results formats: the repository's examples
and the results qa-eval writes validate; documents qa-eval refuses do not."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from openai_stub import StubServer, oracle
from qa_eval import InputError, read_reference, read_responses, read_results, run_evaluation
from qa_eval.cli import main
from qa_eval.io.files import read_data, write_data
from qa_eval.io.flat import read_flat
from qa_eval.io.limits import dump_json
from qa_eval.run.prepare import prepare_reference, prepare_responses
from qa_eval.schemas import SCHEMAS, load_schema, schema_text

jsonschema = pytest.importorskip("jsonschema")

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
DEMO = EXAMPLES / "powergrid"
PAIRS = [
    (EXAMPLES / "reference.yaml", EXAMPLES / "responses.jsonl"),
    (DEMO / "reference.yaml", DEMO / "responses-good.jsonl"),
    (DEMO / "reference.yaml", DEMO / "responses-flawed.jsonl"),
]


def _validator(name: str) -> Any:
    schema = load_schema(name)
    return jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )


def _errors(name: str, document: Any) -> list[str]:
    return [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in _validator(name).iter_errors(document)
    ]


def _as_json(data: Any) -> Any:
    """The data as a JSON file holds it (what qa-eval writes with -o results.json/.jsonl)."""
    return json.loads(dump_json(data))


@pytest.mark.parametrize("name", SCHEMAS)
def test_schemas_are_valid_and_printed_by_the_cli(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = load_schema(name)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert main(["schema", name]) == 0
    printed = capsys.readouterr().out
    assert json.loads(printed) == schema and printed == schema_text(name)


def test_shared_definitions_are_the_same_in_every_schema() -> None:
    schemas = {name: load_schema(name)["$defs"] for name in SCHEMAS}
    shared = {}
    for name, defs in schemas.items():
        for key, value in defs.items():
            shared.setdefault(key, []).append((name, value))
    repeated = {key: found for key, found in shared.items() if len(found) > 1}
    assert {"id", "term", "sparqlResults", "actualStep", "referenceStep"} <= set(repeated)
    for key, found in repeated.items():
        assert all(value == found[0][1] for _, value in found), key


@pytest.mark.parametrize("path", sorted({p for p, _ in PAIRS}), ids=lambda p: p.name)
def test_example_references_validate(path: Path) -> None:
    data = read_reference(path)
    assert _errors("reference", data) == []
    assert _errors("reference", _as_json(data)) == []


@pytest.mark.parametrize("path", [r for _, r in PAIRS], ids=lambda p: p.name)
def test_example_responses_validate_as_lines_lists_and_mappings(path: Path) -> None:
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    for line in lines:  # JSON Lines: each line is a response
        assert _errors("responses", line) == []
    assert _errors("responses", lines) == []
    by_id = {r["question_id"]: {k: v for k, v in r.items() if k != "question_id"} for r in lines}
    assert _errors("responses", by_id) == []


@pytest.mark.parametrize(("reference", "responses"), PAIRS, ids=lambda p: p.name)
def test_results_of_the_examples_validate(reference: Path, responses: Path, tmp_path: Path) -> None:
    results = run_evaluation(read_reference(reference), read_responses(responses))
    assert _errors("results", _as_json(list(results))) == []
    for result in results:
        assert _errors("results", _as_json(result)) == []
    written = tmp_path / "results.yaml"  # and as read back from a YAML results file
    write_data(written, results)
    assert _errors("results", read_results(written)) == []


def test_results_with_every_judge_metric_validate() -> None:
    """The demo judged over HTTP by the scripted judge, with the GraphRAG metrics: the answer,
    retrieval, faithfulness, context, ragas, GEval, similarity and class keys all validate."""
    config = {
        "llm": {
            "generation": {"model": "gpt-4o-mini", "base_url": "", "api_key": "x"},
            "embedding": {"provider": "openai", "base_url": "", "api_key": "x"},
        }
    }
    with StubServer(oracle()) as server:
        for block in ("generation", "embedding"):
            config["llm"][block]["base_url"] = server.url
        results = run_evaluation(
            read_reference(DEMO / "reference.yaml"),
            read_responses(DEMO / "responses-flawed.jsonl"),
            config=config,
            enable=["graphrag"],
            cache=False,
        )
    keys = {key for result in results for key in result}
    assert {"answer_f1", "faithfulness", "factual_accuracy_grade", "answer_class"} <= keys
    assert any("retrieval_answer_recall" in s for r in results for s in r["actual_steps"])
    assert _errors("results", _as_json(list(results))) == []


def test_results_of_flat_rows_validate(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        json.dumps(
            {
                "question": "Which transformers are in Oslo?",
                "answer": "T1 and T2.",
                "contexts": ["Oslo has T1.", "Oslo has T2."],
                "ground_truth": "T1 and T2.",
            }
        )
        + "\n",
        encoding="utf-8",
    )
    reference, responses = read_flat(rows)
    assert _errors("reference", _as_json(reference)) == []
    assert _errors("responses", _as_json(responses)) == []
    assert _errors("results", _as_json(list(run_evaluation(reference, responses)))) == []


def _demo_question(data: list[Any], question_id: str) -> dict[str, Any]:
    return next(q for t in data for q in t["questions"] if q["id"] == question_id)


def _bad_references() -> list[tuple[str, Any]]:
    base = read_data(DEMO / "reference.yaml")
    cases: list[tuple[str, Any]] = [("not a list", {"templates": base})]

    def case(label: str, change: Any) -> None:
        data = copy.deepcopy(base)
        change(data)
        cases.append((label, data))

    case("template_id missing", lambda d: d[0].pop("template_id"))
    case("template_id true", lambda d: d[0].update(template_id=True))
    case("questions not a list", lambda d: d[0].update(questions={"q": 1}))
    case("question_text missing", lambda d: _demo_question(d, "capacity-no1").pop("question_text"))
    case("id a list", lambda d: _demo_question(d, "capacity-no1").update(id=["x"]))
    case("reference_answer a number", lambda d: _demo_question(d, "capacity-no1").update(
        reference_answer=7))  # fmt: skip
    case("reference_goal a list", lambda d: _demo_question(d, "capacity-no1").update(
        reference_goal=["book"]))  # fmt: skip
    case("reference_topics empty", lambda d: _demo_question(d, "capacity-no1").update(
        reference_topics=[]))  # fmt: skip
    case("a blank reference topic", lambda d: _demo_question(d, "capacity-no1").update(
        reference_topics=["flights", " "]))  # fmt: skip
    case("no step groups", lambda d: _demo_question(d, "capacity-no1").update(reference_steps=[]))
    case("an empty group", lambda d: _demo_question(d, "capacity-no1").update(
        reference_steps=[[]]))  # fmt: skip

    def step(change: Any) -> Any:
        return lambda d: change(_demo_question(d, "capacity-no1")["reference_steps"][0][0])

    case("a step without name", step(lambda s: s.pop("name")))
    case("args a string", step(lambda s: s.update(args="SELECT *")))
    case("ordered a string", step(lambda s: s.update(ordered="yes")))
    case("ignore_duplicates null", step(lambda s: s.update(ignore_duplicates=None)))
    case("no required_columns", step(lambda s: s.pop("required_columns")))
    case("required_columns of numbers", step(lambda s: s.update(required_columns=[1, 2])))
    case("a SPARQL output that is a list", step(lambda s: s.update(output=[1])))
    case("a SPARQL object without results", step(lambda s: s.update(output={"head": {}})))
    term_without_value = {
        "head": {"vars": ["transformers", "totalMVA"]},
        "results": {"bindings": [{"transformers": {"type": "literal"}}]},
    }
    case("a binding term without value", step(lambda s: s.update(output=term_without_value)))
    case("an iri_discovery without output", step(lambda s: s.update(
        name="iri_discovery", output=None)))  # fmt: skip
    return cases


@pytest.mark.parametrize(
    ("label", "data"), _bad_references(), ids=[c[0] for c in _bad_references()]
)
def test_references_qa_eval_refuses_do_not_validate(label: str, data: Any) -> None:
    assert _errors("reference", data), label
    with pytest.raises(InputError):  # the loader refuses them too: the schema agrees with it
        prepare_reference(data, "reference")


BAD_RESPONSES = [
    ("status done", {"question_id": "q1", "status": "done"}),
    ("question_id missing in a list", [{"actual_answer": "x"}]),
    ("question_id a float", {"question_id": 1.5}),
    ("tokens as text", {"question_id": "q1", "input_tokens": "12"}),
    ("tokens boolean", {"question_id": "q1", "total_tokens": True}),
    ("steps not a list", {"question_id": "q1", "actual_steps": {"name": "x"}}),
    ("a step without name", {"question_id": "q1", "actual_steps": [{"status": "success"}]}),
    ("a step status null", {"question_id": "q1", "actual_steps": [{"name": "x", "status": None}]}),
    ("a step args list", {"question_id": "q1", "actual_steps": [{"name": "x", "args": [1]}]}),
    ("a mapping of strings", {"q1": "the answer"}),
]


@pytest.mark.parametrize(("label", "data"), BAD_RESPONSES, ids=[c[0] for c in BAD_RESPONSES])
def test_responses_qa_eval_refuses_do_not_validate(label: str, data: Any) -> None:
    assert _errors("responses", data), label
    reference = [{"template_id": "t", "questions": [{"id": "q1", "question_text": "?"}]}]
    questions = prepare_reference(reference)
    with pytest.raises(InputError):
        prepare_responses([data] if isinstance(data, dict) and "question_id" in data else data,
                          questions)  # fmt: skip


def test_invalid_results_do_not_validate() -> None:
    results = _as_json(
        list(
            run_evaluation(
                read_reference(EXAMPLES / "reference.yaml"),
                read_responses(EXAMPLES / "responses.jsonl"),
            )
        )
    )
    assert _errors("results", results) == []
    changes = {
        "status missing": lambda r: r.pop("status"),
        "status unknown": lambda r: r.update(status="partial"),
        "question_id missing": lambda r: r.pop("question_id"),
        "steps_score above 1": lambda r: r.update(steps_score=1.5),
        "steps_score as text": lambda r: r.update(steps_score="1"),
        "step_errors a string": lambda r: r.update(step_errors="bad"),
        "matches a list": lambda r: r["reference_steps"][0][0].update(matches=[0]),
        "an answer_f1 of 2": lambda r: r.update(answer_f1=2),
        "a grade F": lambda r: r.update(factual_accuracy_grade="F"),
        "a negative cost": lambda r: r.update(answer_relevance_cost=-1),
        "an error that is a number": lambda r: r.update(answer_relevance_error=3),
        "a retrieval metric as text": lambda r: r["actual_steps"][0].update(
            retrieval_answer_recall="high"
        ),
    }
    for label, change in changes.items():
        broken = copy.deepcopy(results)
        change(broken[0])
        errors = _errors("results", broken)
        assert errors, label
