"""Wrong files are refused with one line (exit 2), legitimate ones are not; the reference
fingerprint keeps runs of different datasets from being compared; --by keys are checked."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from qa_eval import run_evaluation
from qa_eval.cli import main
from qa_eval.io.kinds import (
    AGGREGATES,
    COMPARISON,
    EMPTY,
    FLAT,
    REFERENCE,
    RESPONSES,
    RESULTS,
    SIGNATURE,
    UNKNOWN,
    detect,
)
from qa_eval.run.prepare import prepare_reference
from qa_eval.run.signature import reference_fingerprint

DEMO = Path(__file__).parents[2] / "examples" / "powergrid"
EXAMPLES = Path(__file__).parents[2] / "examples"

SPEC_RESULT = {  # graphrag-eval's "Evaluation Results" example, shortened
    "template_id": "list_all_transformers_within_Substation_SUBSTATION",
    "question_id": "c10bbc8dce98a4b8832d125134a16153",
    "question_text": "List all transformers within Substation OSLO",
    "reference_answer": "OSLO T1, OSLO T2",
    "reference_steps": [[{"name": "retrieval", "args": {"k": 2}, "matches": "call_3"}]],
    "status": "success",
    "actual_answer": "OSLO T1 and OSLO T2",
    "actual_steps": [{"name": "retrieval", "id": "call_3", "status": "success", "output": "[]"}],
    "steps_score": 1,
    "input_tokens": 221339,
    "output_tokens": 212,
    "total_tokens": 221551,
    "elapsed_sec": 6.6,
}
SPEC_RESPONSE = {
    "question_id": "f91fc938d606e5f6089912bebfaf114b",
    "input_tokens": 298028,
    "actual_steps": [{"name": "retrieval", "args": {"k": 2}, "status": "success", "output": "[]"}],
    "actual_answer": "The substations ...",
}


def _jsonl(path: Path, records: list[Any]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def demo_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The demo evaluated once: results in YAML, JSON and JSONL, aggregates, a comparison."""
    folder = tmp_path_factory.mktemp("runs")
    reference = str(DEMO / "reference.yaml")
    assert (
        main(
            [
                "evaluate",
                reference,
                "--system",
                f"good={DEMO / 'responses-good.jsonl'}",
                "--system",
                f"flawed={DEMO / 'responses-flawed.jsonl'}",
                "-q",
                "-o",
                str(folder / "results.yaml"),
                "--aggregates",
                str(folder / "aggregates.json"),
            ]
        )
        == 0
    )
    good = yaml.safe_load((folder / "results.good.yaml").read_text())
    (folder / "results.json").write_text(json.dumps(good))
    _jsonl(folder / "results.jsonl", good)
    assert (
        main(
            [
                "compare",
                str(folder / "results.good.yaml"),
                str(folder / "results.flawed.yaml"),
                "-o",
                str(folder / "comparison.json"),
            ]
        )
        == 0
    )
    return {p.name: p for p in folder.iterdir()}


# ------------------------------------------------------------------------------- detection


def test_detects_every_kind(demo_runs: dict[str, Path]) -> None:
    def kind(path: Path) -> str:
        from qa_eval.io.files import read_data

        return detect(read_data(path)).kind

    assert kind(DEMO / "reference.yaml") == REFERENCE
    assert kind(EXAMPLES / "reference.yaml") == REFERENCE
    assert kind(DEMO / "responses-good.jsonl") == RESPONSES
    assert kind(EXAMPLES / "responses.jsonl") == RESPONSES
    for name in ("results.good.yaml", "results.json", "results.jsonl"):
        assert kind(demo_runs[name]) == RESULTS
    assert kind(demo_runs["aggregates.good.json"]) == AGGREGATES
    assert kind(demo_runs["comparison.json"]) == COMPARISON
    assert kind(demo_runs["results.good.signature.yaml"]) == SIGNATURE


@pytest.mark.parametrize(
    ("data", "kind", "strong"),
    [
        ([SPEC_RESULT], RESULTS, True),
        ([{**SPEC_RESULT, "status": "error", "error": "x"}], RESULTS, True),
        # a run without reference steps and without a judge: results, by their ids only
        ([{"template_id": "t", "question_id": "q", "question_text": "?", "status": "success"}],
         RESULTS, False),
        ([{"question_id": "q", "answer_f1": 0.5}], RESULTS, True),
        ([{"question_id": "q", "actual_steps": [{"name": "retrieval",
                                                 "retrieval_context_recall": 1.0}]}],
         RESULTS, True),
        ([SPEC_RESPONSE], RESPONSES, True),
        ([{"question_id": "q", "status": "error", "error": "timeout"}], RESPONSES, True),
        ({"q1": {"actual_answer": "a"}, "q2": {"error": "x"}}, RESPONSES, True),
        ({"q1": {"steps_score": 1.0}}, RESULTS, True),
        ({"per_template": {}, "micro": {}, "macro": {}}, AGGREGATES, True),
        ({"systems": {"a": {"micro": {}, "macro": {}}}}, AGGREGATES, True),
        ({"labels": {}, "method": {}, "metrics": []}, COMPARISON, True),
        ({"qa_eval_version": "1", "prompts": {}}, SIGNATURE, True),
        ([{"question": "q?", "answer": "a"}], FLAT, True),
        ([{"template_id": "t", "questions": []}], REFERENCE, True),
        (None, EMPTY, True),
        ([], EMPTY, True),
        ({}, EMPTY, True),
        ([1, 2], UNKNOWN, True),
        ("text", UNKNOWN, True),
        ([{"a": 1}], UNKNOWN, True),
        # responses and id-only results mixed: no guess
        ([SPEC_RESPONSE, {"template_id": "t", "question_id": "q", "question_text": "?"}],
         UNKNOWN, True),
    ],
)  # fmt: skip
def test_detect(data: Any, kind: str, strong: bool) -> None:
    found = detect(data)
    assert (found.kind, found.strong) == (kind, strong)


# ------------------------------------------------------------------------------- refusals


def _refused(argv: list[str], capsys: Any, *phrases: str) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    for phrase in phrases:
        assert phrase in err, err


def test_the_four_wrong_inputs_of_the_issue(
    demo_runs: dict[str, Path], tmp_path: Path, capsys: Any
) -> None:
    ref, resp = str(DEMO / "reference.yaml"), str(DEMO / "responses-good.jsonl")
    expects = "expects results written by `qa-eval evaluate -o`"
    _refused(
        ["aggregate", ref],
        capsys,
        "reference.yaml: looks like a reference dataset",
        f"`qa-eval aggregate` {expects}",
    )
    _refused(
        ["aggregate", resp],
        capsys,
        "looks like responses (records with question_id and actual_answer)",
        f"`qa-eval aggregate` {expects}",
    )
    _refused(
        ["report", ref, "-o", str(tmp_path / "r.html")],
        capsys,
        "looks like a reference dataset",
        f"`qa-eval report` {expects}",
    )
    assert not (tmp_path / "r.html").exists()
    _refused(
        ["compare", str(demo_runs["results.json"]), resp],
        capsys,
        "responses-good.jsonl: looks like responses",
        f"`qa-eval compare` {expects}",
    )


@pytest.mark.parametrize("name", ["aggregates.good.json", "comparison.json"])
def test_aggregate_refuses_aggregates_and_comparisons(
    demo_runs: dict[str, Path], name: str, capsys: Any
) -> None:
    _refused(["aggregate", str(demo_runs[name])], capsys, "looks like", "expects results")


def test_evaluate_refuses_other_files_as_reference_or_responses(
    demo_runs: dict[str, Path], tmp_path: Path, capsys: Any
) -> None:
    ref, resp = str(DEMO / "reference.yaml"), str(DEMO / "responses-good.jsonl")
    results, aggregates = str(demo_runs["results.json"]), str(demo_runs["aggregates.good.json"])
    as_reference = "`qa-eval evaluate` expects a reference dataset"
    as_responses = "`qa-eval evaluate` expects responses"
    _refused(["evaluate", results, resp], capsys, "looks like evaluation results", as_reference)
    _refused(["evaluate", aggregates, resp], capsys, "looks like aggregates", as_reference)
    _refused(["evaluate", resp, resp], capsys, "looks like responses", as_reference)
    _refused(["evaluate", ref, results], capsys, "results (records with", as_responses)
    _refused(["evaluate", ref, aggregates], capsys, "looks like aggregates", as_responses)
    _refused(["evaluate", ref, ref], capsys, "looks like a reference dataset", as_responses)
    flat = _jsonl(tmp_path / "rows.jsonl", [{"question": "q?", "answer": "a"}])
    _refused(["evaluate", ref, flat], capsys, "qa-eval evaluate-flat", as_responses)
    system = ["evaluate", ref, "--system", f"a={resp}", "--system", f"b={results}"]
    _refused(system, capsys, "results.json: looks like evaluation results")


def test_legitimate_inputs_are_not_refused(
    demo_runs: dict[str, Path], tmp_path: Path, capsys: Any
) -> None:
    for name in ("results.good.yaml", "results.json", "results.jsonl"):
        assert main(["aggregate", str(demo_runs[name])]) == 0
    spec = _jsonl(tmp_path / "graphrag.jsonl", [SPEC_RESULT])
    assert main(["aggregate", spec]) == 0
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert main(["aggregate", str(empty)]) == 0
    # an empty run is a legitimate file, but there is nothing to compare (one line, exit 2)
    assert main(["compare", str(empty), str(empty)]) == 2
    assert "no question" in capsys.readouterr().err.lower()
    # results of a run with no reference steps and no judge: only ids, text and answers
    ref = [{"template_id": "t", "questions": [{"id": "q1", "question_text": "?"}]}]
    plain = list(run_evaluation(ref, [{"question_id": "q1", "actual_answer": "a"}]))
    assert "steps_score" not in plain[0]
    path = _jsonl(tmp_path / "plain.jsonl", plain)
    assert main(["aggregate", path]) == 0
    assert main(["compare", path, path]) == 2  # read fine, but no metric to compare
    assert "no numeric metric" in capsys.readouterr().err
    # responses that carry template_id and question_text are still responses to evaluate
    ref_path = tmp_path / "ref.yaml"
    ref_path.write_text(yaml.safe_dump(ref))
    tagged = [{"template_id": "t", "question_id": "q1", "question_text": "?", "actual_answer": "a"}]
    assert main(["evaluate", str(ref_path), _jsonl(tmp_path / "tagged.jsonl", tagged), "-q"]) == 0
    assert main(["evaluate", str(ref_path), _jsonl(tmp_path / "none.jsonl", []), "-q"]) == 0
    capsys.readouterr()


# ------------------------------------------------------------------------------- fingerprints


def test_fingerprint_is_the_content_not_the_order_or_format() -> None:
    data = yaml.safe_load((DEMO / "reference.yaml").read_text())
    first = reference_fingerprint(prepare_reference(data))
    assert first.startswith("sha256:") and len(first) == 7 + 64
    shuffled = [
        {**t, "questions": list(reversed(t["questions"]))}
        for t in reversed(json.loads(json.dumps(data)))
    ]
    for template in shuffled:  # keys in another order too
        template["questions"] = [dict(reversed(list(q.items()))) for q in template["questions"]]
    assert reference_fingerprint(prepare_reference(shuffled)) == first
    changed = json.loads(json.dumps(data))
    changed[0]["questions"][0]["question_text"] += " "
    assert reference_fingerprint(prepare_reference(changed)) != first
    moved = json.loads(json.dumps(data))  # the same question under another template
    moved[1]["questions"].append(moved[0]["questions"].pop())
    assert reference_fingerprint(prepare_reference(moved)) != first


def test_signature_records_the_reference(demo_runs: dict[str, Path]) -> None:
    signature = yaml.safe_load(demo_runs["results.good.signature.yaml"].read_text())
    data = yaml.safe_load((DEMO / "reference.yaml").read_text())
    assert signature["reference"] == {
        "fingerprint": reference_fingerprint(prepare_reference(data)),
        "templates": 4,
        "questions": 11,
    }


def _other_dataset_run(tmp_path: Path) -> Path:
    """The good responses evaluated against the demo reference with one question changed."""
    data = yaml.safe_load((DEMO / "reference.yaml").read_text())
    data[0]["questions"][0]["question_text"] = "Something else?"
    ref = tmp_path / "other-reference.yaml"
    ref.write_text(yaml.safe_dump(data))
    out = tmp_path / "other.yaml"
    argv = ["evaluate", str(ref), str(DEMO / "responses-good.jsonl"), "-q", "-o", str(out)]
    assert main(argv) == 0
    return out


def test_compare_and_report_refuse_runs_of_different_references(
    demo_runs: dict[str, Path], tmp_path: Path, capsys: Any
) -> None:
    assert (
        main(
            [
                "evaluate",
                str(DEMO / "reference.yaml"),
                str(DEMO / "responses-good.jsonl"),
                "-q",
                "-o",
                str(tmp_path / "same.yaml"),
            ]
        )
        == 0
    )
    other = _other_dataset_run(tmp_path)
    good = str(demo_runs["results.good.yaml"])
    capsys.readouterr()
    _refused(
        ["compare", good, str(other)],
        capsys,
        "different reference datasets",
        "--allow-different-references",
    )
    html = tmp_path / "r.html"
    _refused(["report", good, str(other), "-o", str(html)], capsys, "different reference")
    assert not html.exists()
    assert main(["report", good, str(other), "-o", str(html), "--no-compare"]) == 0
    assert main(["compare", good, str(other), "--allow-different-references"]) == 0
    assert "note:" in capsys.readouterr().err
    assert main(["report", good, str(other), "-o", str(html), "--allow-different-references"]) == 0
    assert "different reference datasets" in capsys.readouterr().err
    # the same reference: no note at all
    assert main(["compare", good, str(tmp_path / "same.yaml")]) == 0
    assert "note:" not in capsys.readouterr().err


def test_runs_without_a_signature_are_compared_with_a_note(
    demo_runs: dict[str, Path], tmp_path: Path, capsys: Any
) -> None:
    bare = tmp_path / "bare.yaml"
    shutil.copy(demo_runs["results.flawed.yaml"], bare)
    md = tmp_path / "c.md"
    good = str(demo_runs["results.good.yaml"])
    assert main(["compare", good, str(bare), "--summary-md", str(md)]) == 0
    err = capsys.readouterr().err
    assert f"note: {bare}: no reference fingerprint" in err
    assert "no reference fingerprint" in md.read_text()


# ------------------------------------------------------------------------------- --by


def test_aggregate_by_a_key_no_result_has(demo_runs: dict[str, Path], capsys: Any) -> None:
    path = str(demo_runs["results.good.yaml"])
    _refused(
        ["aggregate", path, "--by", "difficulty"],
        capsys,
        "--by difficulty: no result has a value for this key",
    )
    assert main(["aggregate", path, "--by", "template_id"]) == 0
    assert main(["aggregate", path]) == 0  # question_type, the default, may be absent


def test_evaluate_by_checks_the_questions_and_copies_their_key(tmp_path: Path, capsys: Any) -> None:
    ref = [
        {
            "template_id": "t",
            "questions": [
                {"id": "q1", "question_text": "?", "difficulty": "hard"},
                {"id": "q2", "question_text": "?", "difficulty": "easy"},
            ],
        }
    ]
    ref_path = tmp_path / "ref.yaml"
    ref_path.write_text(yaml.safe_dump(ref))
    resp = _jsonl(tmp_path / "r.jsonl", [{"question_id": "q1", "actual_answer": "a"}])
    out, agg = tmp_path / "out.json", tmp_path / "agg.json"
    base = ["evaluate", str(ref_path), resp, "-q", "-o", str(out), "--aggregates", str(agg)]
    _refused(
        [*base, "--by", "dificulty"],
        capsys,
        "--by dificulty: no question has this key",
        "difficulty",
    )
    assert not out.exists()  # refused before the run
    _refused([*base, "--by", "question_type"], capsys, "--by question_type")  # explicit: checked
    assert main([*base, "--by", "difficulty", "--by", "status"]) == 0
    results = json.loads(out.read_text())
    assert [r["difficulty"] for r in results] == ["hard", "easy"]
    per_tag = json.loads(agg.read_text())["per_tag"]
    assert set(per_tag["difficulty"]) == {"hard", "easy"}
    assert set(per_tag["status"]) == {"success", "error"}
    assert main(base) == 0  # the default question_type is absent: fine


def test_results_that_are_not_records_are_bad_input(tmp_path: Path, capsys: Any) -> None:
    lines = tmp_path / "odd.jsonl"
    lines.write_text(json.dumps(SPEC_RESULT) + "\n\n" + json.dumps("text") + "\n")
    for command in ("aggregate", "compare", "report"):
        argv = [command, str(lines)] + ([str(lines)] if command == "compare" else [])
        argv += ["-o", str(tmp_path / "x.html")] if command == "report" else []
        _refused(argv, capsys, "odd.jsonl: line 3: a result must be a mapping, got str")
    twice = _jsonl(tmp_path / "twice.jsonl", [SPEC_RESULT, SPEC_RESULT])
    assert main(["report", twice, twice, "-o", str(tmp_path / "r.html")]) == 2
    assert "appears more than once" in capsys.readouterr().err  # after a note: no signature
