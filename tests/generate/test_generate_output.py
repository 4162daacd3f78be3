"""Generated reference sets: every shape, every query executed and stored, answers written from
the results, the controls, determinism, and that the file is a reference qa-eval evaluates and
refresh-references finds current."""

from __future__ import annotations

import copy
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import DEMO
from qa_eval import run_evaluation
from qa_eval.cli import main
from qa_eval.generate import GraphSource, generate_reference_file
from qa_eval.generate.canonical import canonical_query
from qa_eval.generate.engine import SHAPES
from qa_eval.io.files import read_data
from qa_eval.refresh.changes import canonical
from qa_eval.refresh.reference import refresh_reference
from qa_eval.refresh.runners import store_runner

pyoxigraph = pytest.importorskip("pyoxigraph")


def _questions(data: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [q for t in data for q in t["questions"]]


def _generate(graph: Path, out: Path, n: int = 60, seed: int = 0, **options: Any) -> Any:
    return generate_reference_file(GraphSource(store=graph), out, n, seed=seed, **options)


@pytest.fixture(scope="module")
def demo_set(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, list[dict[str, Any]]]:
    out = tmp_path_factory.mktemp("demo") / "reference.yaml"
    generation = _generate(DEMO, out, n=60, seed=1)
    return generation, read_data(out)


def test_every_shape_the_demo_graph_fits_is_made(demo_set: Any) -> None:
    generation, data = demo_set
    made = Counter(q["generated"]["shape"] for q in _questions(data))
    # The demo has no multi-valued property: its list questions are the reverse ones (the
    # transformers of a substation), 2 to max_answers entities each.
    assert set(made) == set(SHAPES)
    lists = [q for q in _questions(data) if q["generated"]["shape"] == "list"]
    assert lists and generation.report.shapes["list"].made == len(lists)
    for q in lists:
        assert q["generated"]["parameters"] == {"direction": "reverse"}
        rows = json.loads(q["reference_steps"][-1][0]["output"])["results"]["bindings"]
        assert 2 <= len(rows) <= 10
        assert q["question_text"].startswith("What are all the ")
        assert q["reference_answer"].count(", ") == len(rows) - 1
    assert sum(made.values()) == 60 == generation.report.made
    for template in data:
        shape = template["questions"][0]["generated"]["shape"]
        assert template["template_id"].startswith(shape + "__")
        assert all(q["generated"]["shape"] == shape for q in template["questions"])


def test_filter_asks_windows_inside_the_values_once_the_tails_are_used(tmp_path: Path) -> None:
    out = tmp_path / "filters.yaml"
    generate_reference_file(GraphSource(store=DEMO), out, 60, seed=1, shapes=["filter"])
    filters = _questions(read_data(out))
    windows = [q for q in filters if q["generated"]["parameters"]["direction"] == "between"]
    assert windows and len(windows) < len(filters)  # the tails come first
    graph = pyoxigraph.Store()
    graph.load(path=str(DEMO), format=pyoxigraph.RdfFormat.TURTLE)
    for q in windows:
        query = q["reference_steps"][-1][0]["args"]["query"]
        prop = re.search(r"\?entity (\S+) \?value", query).group(1)  # type: ignore[union-attr]
        prefixes = "\n".join(line for line in query.splitlines() if line.startswith("PREFIX"))
        values = sorted(
            float(row["v"].value)
            for row in graph.query(f"{prefixes}\nSELECT DISTINCT ?v WHERE {{ ?s {prop} ?v }}")
        )
        low, high = (float(q["generated"]["parameters"][k]) for k in ("from", "to"))
        assert values[0] < low < high <= values[-1]  # from inside the values, not their start
        rows = json.loads(q["reference_steps"][-1][0]["output"])["results"]["bindings"]
        assert 1 <= len(rows) <= 10 and " and " in q["question_text"]


def test_every_stored_output_is_what_the_graph_answers(demo_set: Any) -> None:
    _, data = demo_set
    run = store_runner(DEMO)
    for question in _questions(data):
        step = question["reference_steps"][-1][0]
        assert step["name"] == "sparql_query"
        assert step["output_media_type"] == "application/sparql-results+json"
        again = run(step["args"]["query"])
        assert canonical(again, False) == canonical(json.loads(step["output"]), False)
        columns = again.get("head", {}).get("vars", [])
        assert set(step["required_columns"]) <= set(columns)


def test_refresh_references_finds_nothing_to_change(demo_set: Any) -> None:
    _, data = demo_set
    result = refresh_reference(data, store_runner(DEMO))
    assert result.steps_run == len(_questions(data))
    assert result.changes == []


def test_answers_are_labels_numbers_and_yes_no(demo_set: Any) -> None:
    _, data = demo_set
    for question in _questions(data):
        answer = question["reference_answer"]
        assert "http" not in answer and "_:" not in answer and "^^" not in answer
        result = json.loads(question["reference_steps"][-1][0]["output"])
        shape = question["generated"]["shape"]
        if shape == "boolean":
            assert answer == ("yes" if result["boolean"] else "no")
        elif shape == "unanswerable":
            assert result["results"]["bindings"] == []
            assert question["generated"]["answerable"] is False
            assert "no answer" in answer
        elif shape == "count":
            assert answer == result["results"]["bindings"][0]["count"]["value"]
        else:
            assert 1 <= len(result["results"]["bindings"]) <= 10
            assert question["generated"]["answerable"] is True


def test_booleans_are_about_half_true(demo_set: Any) -> None:
    _, data = demo_set
    truths = [
        json.loads(q["reference_steps"][-1][0]["output"])["boolean"]
        for q in _questions(data)
        if q["generated"]["shape"] == "boolean"
    ]
    assert abs(truths.count(True) - truths.count(False)) <= 1


def test_entity_steps_find_the_named_iris(demo_set: Any) -> None:
    _, data = demo_set
    for question in _questions(data):
        entities = question["generated"]["entities"]
        if not entities:
            assert len(question["reference_steps"]) == 1
            continue
        searches = question["reference_steps"][0]
        assert [s["name"] for s in searches] == ["autocomplete_search"] * len(entities)
        for step, entity in zip(searches, entities):
            assert step["args"]["query"] == entity["label"]
            (binding,) = json.loads(step["output"])["results"]["bindings"]
            assert binding["iri"] == {"type": "uri", "value": entity["iri"]}
            assert entity["label"] in question["question_text"]
            assert entity["iri"] in question["reference_steps"][-1][0]["args"][
                "query"
            ] or re.search(
                re.escape(entity["iri"].rsplit("/", 1)[-1]),
                question["reference_steps"][-1][0]["args"]["query"],
            )


def test_no_two_questions_share_a_query_or_a_text(demo_set: Any) -> None:
    _, data = demo_set
    questions = _questions(data)
    queries = [canonical_query(q["reference_steps"][-1][0]["args"]["query"]) for q in questions]
    texts = [" ".join(q["question_text"].casefold().split()) for q in questions]
    assert len(set(queries)) == len(queries)
    assert len(set(texts)) == len(texts)
    assert len({q["id"] for q in questions}) == len(questions)


def test_no_entity_is_named_in_more_than_max_uses_questions(demo_set: Any) -> None:
    _, data = demo_set
    uses = Counter(e["iri"] for q in _questions(data) for e in q["generated"]["entities"])
    assert max(uses.values()) <= 3


def test_the_same_seed_gives_the_same_bytes_and_another_seed_another_set(tmp_path: Path) -> None:
    _generate(DEMO, tmp_path / "a.yaml", n=25, seed=7)
    _generate(DEMO, tmp_path / "b.yaml", n=25, seed=7)
    _generate(DEMO, tmp_path / "c.yaml", n=25, seed=8)
    assert (tmp_path / "a.yaml").read_bytes() == (tmp_path / "b.yaml").read_bytes()
    ids = {q["id"] for q in _questions(read_data(tmp_path / "a.yaml"))}
    other = {q["id"] for q in _questions(read_data(tmp_path / "c.yaml"))}
    assert ids != other


def test_mix_sets_the_shares(tmp_path: Path) -> None:
    generation = _generate(
        DEMO,
        tmp_path / "m.json",
        n=12,
        shapes=["lookup", "count", "boolean"],
        mix="lookup=2,count=1,boolean=1",
    )
    made = {s: r.made for s, r in generation.report.shapes.items()}
    assert made == {"lookup": 6, "count": 3, "boolean": 3}


def test_formats_by_extension(tmp_path: Path) -> None:
    for name in ("r.yaml", "r.json", "r.jsonl"):
        _generate(DEMO, tmp_path / name, n=8, seed=2)
    yaml_data = read_data(tmp_path / "r.yaml")
    assert read_data(tmp_path / "r.json") == yaml_data
    assert list(read_data(tmp_path / "r.jsonl")) == yaml_data


def _perfect(data: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Responses that ran exactly the reference steps."""
    responses = []
    for question in _questions(data):
        steps = []
        for group in question["reference_steps"]:
            for step in group:
                steps.append(
                    {
                        "name": step["name"],
                        "args": step["args"],
                        "id": f"call_{len(steps)}",
                        "status": "success",
                        "output": step["output"],
                    }
                )
        responses.append(
            {
                "question_id": question["id"],
                "actual_steps": steps,
                "actual_answer": question["reference_answer"],
            }
        )
    return responses


def test_perfect_responses_score_one_and_corrupted_ones_less(demo_set: Any) -> None:
    _, data = demo_set
    perfect = _perfect(data)
    results = run_evaluation(data, perfect)
    assert len(results) == len(perfect)
    assert all(r["steps_score"] == 1.0 for r in results)
    corrupted = copy.deepcopy(perfect)
    for response in corrupted[::2]:
        last = response["actual_steps"][-1]
        result = json.loads(last["output"])
        if "boolean" in result:
            result["boolean"] = not result["boolean"]
        elif result["results"]["bindings"]:
            result["results"]["bindings"] = result["results"]["bindings"][1:] or [
                {v: {"type": "literal", "value": "wrong"} for v in result["head"]["vars"]}
            ]
        else:
            result["results"]["bindings"] = [
                {v: {"type": "literal", "value": "invented"} for v in result["head"]["vars"]}
            ]
        last["output"] = json.dumps(result)
    scores = [r["steps_score"] for r in run_evaluation(data, corrupted)]
    assert all(s == 0.0 for s in scores[::2])
    assert all(s == 1.0 for s in scores[1::2])


def test_evaluate_command_reads_a_generated_file(tmp_path: Path) -> None:
    reference = tmp_path / "reference.yaml"
    _generate(DEMO, reference, n=10, seed=4)
    responses = tmp_path / "responses.jsonl"
    responses.write_text(
        "".join(json.dumps(r) + "\n" for r in _perfect(read_data(reference))), encoding="utf-8"
    )
    out = tmp_path / "results.jsonl"
    assert main(["evaluate", str(reference), str(responses), "-o", str(out), "-q"]) == 0
    assert all(r["steps_score"] == 1.0 for r in read_data(out))


def test_refresh_references_command_reports_nothing_to_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reference = tmp_path / "reference.yaml"
    _generate(DEMO, reference, n=15, seed=5)
    before = reference.read_bytes()
    assert main(["refresh-references", str(reference), "--store", str(DEMO)]) == 0
    assert "15 SPARQL steps run, 0 changed" in capsys.readouterr().out
    assert reference.read_bytes() == before


def test_generated_yaml_is_plain_yaml(demo_set: Any, tmp_path: Path) -> None:
    out = tmp_path / "r.yaml"
    _generate(DEMO, out, n=5, seed=1)
    assert yaml.safe_load(out.read_text(encoding="utf-8")) == read_data(out)


def test_what_graphrag_eval_reads_is_there(demo_set: Any) -> None:
    """graphrag-eval 6.6.1 scores the last group of reference steps: each step's ``output`` must
    be a non-empty JSON string, a SPARQL JSON one with ``required_columns`` (it indexes them)."""
    _, data = demo_set
    for template in data:
        assert isinstance(template["template_id"], str)
        for question in template["questions"]:
            assert isinstance(question["question_text"], str) and question["question_text"]
            for group in question["reference_steps"]:
                for step in group:
                    assert isinstance(step["output"], str) and step["output"]
                    json.loads(step["output"])
            for step in question["reference_steps"][-1]:
                assert step["output_media_type"] == "application/sparql-results+json"
                assert isinstance(step["required_columns"], list)
