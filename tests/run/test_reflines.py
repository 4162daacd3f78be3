"""A reference in JSON Lines read as a stream (``run.reflines``): the results, aggregates and
fingerprint of the same dataset read whole, byte for byte (one template a line, one question a
line, ``.gz``, trials, responses in another order, missing and unknown ones, shards, workers);
bad lines are one line naming the file, the line and the field, before anything is written."""

from __future__ import annotations

import gzip
import json
import random
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from test_pinned_outputs import _benchmark
from test_spread import _files as files_of
from test_spread import _run as run_files

from qa_eval import run_evaluation
from qa_eval.errors import InputError
from qa_eval.run.files import evaluate_files
from qa_eval.run.plan import plan_evaluation
from qa_eval.run.reflines import JsonLinesReference
from qa_eval.run.signature import digests_fingerprint, question_digest, reference_fingerprint
from qa_eval.run.stream import JsonLinesResponses

CONFORMANCE = Path(__file__).resolve().parents[3] / "shared" / "conformance" / "cases"


def _lines(records: list[Any]) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


def _question_lines(reference: list[dict[str, Any]]) -> bytes:
    """One question a line, each carrying its template's id."""
    return _lines(
        [{"template_id": t["template_id"], **q} for t in reference for q in t["questions"]]
    )


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Any, Path]]:
    """Both benchmark mixes (300 questions, responses shuffled, some missing, some unknown) and
    the conformance cases: (the reference read whole, RESPONSES.jsonl)."""
    bench = _benchmark()
    folder = tmp_path_factory.mktemp("cases")
    reference, responses = bench.dataset(300)
    out: dict[str, tuple[Any, Path]] = {}
    for mix in ("matching", "mismatch"):
        answers = bench.mismatch_mix(reference, responses) if mix == "mismatch" else responses
        rows = list(answers.values() if isinstance(answers, dict) else answers)
        random.Random(mix).shuffle(rows)
        rows = [*rows[5:], {"question_id": "not-in-the-reference", "actual_answer": "x"}]
        path = folder / f"{mix}-responses.jsonl"
        path.write_bytes(_lines(rows))
        out[mix] = (reference, path)
    for case in sorted(CONFORMANCE.glob("*")) if CONFORMANCE.is_dir() else ():
        data = yaml.safe_load((case / "reference.yaml").read_text("utf-8"))
        out[f"conformance {case.name}"] = (data, case / "responses.jsonl")
    return out


def _run(reference: Path, responses: Path, folder: Path, name: str, **options: Any) -> dict:
    """A run of files (test_spread's); its results' and aggregates' bytes and its signature."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the unknown response's warning)
        run_files(reference, responses, folder, name, **options)
    return files_of(folder, name)


def _forms(reference: list[dict[str, Any]], folder: Path, name: str) -> dict[str, Path]:
    """The reference whole (JSON), one template a line, one question a line, and gzipped."""
    whole, templates = folder / f"{name}.json", folder / f"{name}-t.jsonl"
    questions, packed = folder / f"{name}-q.jsonl", folder / f"{name}-t.jsonl.gz"
    whole.write_bytes(orjson.dumps(reference))
    templates.write_bytes(_lines(reference))
    questions.write_bytes(_question_lines(reference))
    packed.write_bytes(gzip.compress(_lines(reference)))
    return {"whole": whole, "templates": templates, "questions": questions, "gz": packed}


def test_a_streamed_reference_gives_the_bytes_of_the_whole(
    cases: dict[str, tuple[Any, Path]], tmp_path: Path
) -> None:
    for case, (reference, responses) in cases.items():
        name = case.replace(" ", "-")
        forms = _forms(reference, tmp_path, name)
        whole = _run(forms["whole"], responses, tmp_path, f"{name}-whole")
        for form in ("templates", "questions", "gz"):
            plan = plan_evaluation(forms[form], responses, output=tmp_path / "x.jsonl")
            assert isinstance(plan.reference, JsonLinesReference), (case, form)
            streamed = _run(forms[form], responses, tmp_path, f"{name}-{form}")
            assert streamed == whole, (case, form)


def test_workers_check_and_evaluate_a_streamed_reference(
    cases: dict[str, tuple[Any, Path]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workers check and evaluate ranges of the files (small ones here: many ranges)."""
    from qa_eval.run import parallel

    monkeypatch.setattr(parallel, "CHUNK", 2000)
    monkeypatch.setattr(parallel, "RESPONSES_CHUNK", 3000)
    for case, (reference, responses) in cases.items():
        name = case.replace(" ", "-")
        forms = _forms(reference, tmp_path, name)
        whole = _run(forms["whole"], responses, tmp_path, f"{name}-whole")
        for form in ("templates", "questions"):
            two = _run(forms[form], responses, tmp_path, f"{name}-{form}-2", workers=2)
            assert two["signature"].pop("spread") == {"workers": 2}
            assert two == whole, (case, form)


def test_workers_give_one_process_errors_and_trials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from qa_eval.run import parallel

    monkeypatch.setattr(parallel, "CHUNK", 100)
    monkeypatch.setattr(parallel, "RESPONSES_CHUNK", 100)
    records = [{"template_id": "t", "id": f"q{i}", "question_text": "?"} for i in range(6)]
    trials = [{"question_id": f"q{i % 3}", "actual_answer": "a", "trial": i} for i in range(6)]
    cases = [
        ([*records[:3], {"template_id": "t", "id": "q4"}, *records[3:]], trials[:2]),
        ([*records, records[2]], trials[:2]),
        ([*records[:4], {"template_id": "u", "questions": []}], trials[:2]),
        ([*records[:4], "[1]"], trials[:2]),
        (
            records,
            [{"question_id": "q1"}, {"question_id": "q2", "error": 3}, {"question_id": "q1"}],
        ),
        (records, [{"question_id": "q1", "trial": 1}, {"question_id": "q1"}]),
        (records, [*trials, {"question_id": "nope"}]),
    ]
    for number, (lines, rows) in enumerate(cases):
        reference, responses = tmp_path / f"r{number}.jsonl", tmp_path / f"s{number}.jsonl"
        reference.write_bytes(
            b"".join(
                x.encode() + b"\n" if isinstance(x, str) else orjson.dumps(x) + b"\n" for x in lines
            )
        )
        responses.write_bytes(_lines(rows))
        outcomes = []
        for workers in (1, 2):
            try:
                done = _run(reference, responses, tmp_path, f"o{number}-{workers}", workers=workers)
                done["signature"].pop("spread", None)
                outcomes.append(done)
            except InputError as e:
                outcomes.append(str(e))
        assert outcomes[0] == outcomes[1], number


def test_workers_and_shards_over_a_streamed_reference(
    cases: dict[str, tuple[Any, Path]], tmp_path: Path
) -> None:
    from qa_eval.run.merge import merge_shards

    reference, responses = cases["mismatch"]
    forms = _forms(reference, tmp_path, "mix")
    whole = _run(forms["whole"], responses, tmp_path, "whole")
    two = _run(forms["questions"], responses, tmp_path, "two", workers=2)
    assert two["signature"].pop("spread") == {"workers": 2}
    assert two == whole
    shards = []
    for index in (2, 1, 3):
        _run(forms["templates"], responses, tmp_path, f"s{index}", shard=f"{index}/3")
        shards.append(tmp_path / f"s{index}.jsonl")
    merge_shards(shards, tmp_path / "merged.jsonl", tmp_path / "merged.aggregates.json")
    assert (tmp_path / "merged.jsonl").read_bytes() == whole["results"]
    aggregates = orjson.loads((tmp_path / "merged.aggregates.json").read_bytes())
    aggregates.pop("signature")
    assert orjson.dumps(aggregates) == whole["aggregates"]


def test_trials_and_gz_responses(tmp_path: Path) -> None:
    reference = [
        {"template_id": "t1", "questions": [{"id": "q1", "question_text": "a?"}]},
        {
            "template_id": 2,
            "questions": [{"id": 7, "question_text": "b?"}, {"id": "7", "question_text": "c?"}],
        },
    ]
    rows = [
        {"question_id": "7", "actual_answer": "c", "trial": 1},
        {"question_id": "q1", "actual_answer": "a", "trial": 2},
        {"question_id": "q1", "actual_answer": "b", "trial": 1},
        {"question_id": "7", "actual_answer": "d", "trial": 0},
    ]
    responses = tmp_path / "responses.jsonl.gz"
    responses.write_bytes(gzip.compress(b"\xef\xbb\xbf" + _lines(rows)))
    forms = _forms(reference, tmp_path, "trials")
    whole = _run(forms["whole"], responses, tmp_path, "whole")
    assert whole["results"].count(b"\n") == 5
    for form in ("templates", "questions", "gz"):
        assert _run(forms[form], responses, tmp_path, form) == whole, form
    assert not list(tmp_path.glob("**/qa-eval-responses-*"))


def test_run_evaluation_takes_the_stream_objects() -> None:
    bench = _benchmark()
    reference, responses = bench.dataset(40)
    folder = Path(__import__("tempfile").mkdtemp())
    (folder / "r.jsonl").write_bytes(_question_lines(reference))
    rows = list(responses.values() if isinstance(responses, dict) else responses)
    (folder / "s.jsonl").write_bytes(_lines(rows[::-1]))
    whole = run_evaluation(reference, JsonLinesResponses(folder / "s.jsonl"))
    streamed = run_evaluation(
        JsonLinesReference(folder / "r.jsonl"), JsonLinesResponses(folder / "s.jsonl")
    )
    assert orjson.dumps(list(streamed)) == orjson.dumps(list(whole))
    assert streamed.signature == whole.signature
    with pytest.raises(Exception, match="JsonLinesResponses"):
        run_evaluation(JsonLinesReference(folder / "r.jsonl"), rows)


def test_the_fingerprint_of_digests_sorts_them_as_bytes() -> None:
    rng = random.Random(5)
    questions = []
    for i in range(300):
        raw = {"id": i, "question_text": "x" * rng.randrange(5)}
        questions.append((rng.choice(["a", 1]), raw))
    digests = [question_digest(t, raw) for t, raw in questions]
    digests += [bytes(31) + b"\x01", bytes(32), b"\x01" + bytes(31)]  # zero bytes sort too
    expected = "sha256:" + __import__("hashlib").sha256(b"".join(sorted(digests))).hexdigest()
    assert digests_fingerprint(b"".join(digests)) == expected
    from qa_eval.run.prepare import prepare_reference

    data = [{"template_id": t, "questions": [raw]} for t, raw in questions]
    assert digests_fingerprint(b"".join(digests[:300])) == reference_fingerprint(
        prepare_reference(data)
    )


BAD = [
    (
        [{"template_id": "t", "questions": [{"id": "q1", "question_text": "a?"}, {"id": "q2"}]}],
        "ref.jsonl: line 1 template 't' question 'q2': question_text: missing",
    ),
    (
        [
            {"template_id": "t", "id": "q1", "question_text": "a?"},
            {"template_id": "t", "id": "q1", "question_text": "b?"},
        ],
        "ref.jsonl: line 2 question 'q1': id: duplicate question id (also in line 1)",
    ),
    (
        [
            {"template_id": "t", "id": "q1", "question_text": "a?"},
            {"template_id": "u", "questions": []},
        ],
        "ref.jsonl: line 2: a template (a record with questions) here, but line 1 is a question",
    ),
    (
        [
            {"template_id": "t", "id": "q1", "question_text": "a?"},
            {"id": "q2", "question_text": "b?"},
        ],
        "ref.jsonl: line 2: template_id: missing",
    ),
    (
        [
            {
                "template_id": "t",
                "id": "q1",
                "question_text": "a?",
                "reference_steps": [
                    [
                        {
                            "name": "sparql_query",
                            "output": "{",
                            "output_media_type": "application/sparql-results+json",
                            "required_columns": [],
                        }
                    ]
                ],
            }
        ],
        "ref.jsonl: line 1 question 'q1': reference_steps[0][0].output: not a SPARQL JSON result",
    ),
    ([[1, 2]], "ref.jsonl: line 1: a line must be a mapping (a template or a question), got list"),
]


@pytest.mark.parametrize(("records", "message"), BAD)
def test_bad_lines_are_one_line_naming_file_line_and_field(
    records: list[Any], message: str, tmp_path: Path
) -> None:
    reference = tmp_path / "ref.jsonl"
    reference.write_bytes(_lines(records))
    responses = tmp_path / "responses.jsonl"
    responses.write_bytes(_lines([{"question_id": "q1", "actual_answer": "a"}]))
    with pytest.raises(InputError) as error:
        run_evaluation(JsonLinesReference(reference), JsonLinesResponses(responses))
    assert str(error.value).replace(str(tmp_path) + "/", "").startswith(message)
    run = subprocess.run(
        [sys.executable, "-m", "qa_eval", "evaluate", "ref.jsonl", "responses.jsonl", "-o",
         "out.jsonl", "--no-judge", "--no-cache", "-q"],
        cwd=tmp_path, capture_output=True, text=True,
    )  # fmt: skip
    assert run.returncode == 2, run.stderr
    assert (
        run.stderr.strip().splitlines() == [f"qa-eval: error: {message}"] or message in run.stderr
    )
    assert "Traceback" not in run.stderr
    assert not (tmp_path / "out.jsonl").exists()
    assert not list(tmp_path.glob("out.jsonl*"))


def test_bad_json_and_by_keys_and_kind(tmp_path: Path) -> None:
    reference = tmp_path / "ref.jsonl"
    reference.write_bytes(b'{"template_id": "t", "id": "q1", "question_text": "a?"}\n{"id": \n')
    responses = tmp_path / "responses.jsonl"
    responses.write_bytes(_lines([{"question_id": "q1", "actual_answer": "a"}]))
    out = tmp_path / "out.jsonl"
    with pytest.raises(InputError, match=r"ref.jsonl: line 2: JSON does not parse"):
        evaluate_files(reference, responses, output=out, no_judge=True, cache=False)
    reference.write_bytes(
        _lines([{"template_id": "t", "id": "q1", "question_text": "a?", "level": "x"}])
    )
    with pytest.raises(
        InputError,
        match=r"by nope: no question has this key \(question keys: level, template_id, status\)",
    ):
        evaluate_files(reference, responses, output=out, no_judge=True, cache=False, by=["nope"])
    for output in (out, tmp_path / "out.json"):  # streamed, and read whole
        evaluate_files(
            reference, responses, output=output, no_judge=True, cache=False, by=["level"]
        )
    reference.write_bytes(
        _lines(
            [
                {
                    "template_id": "t",
                    "question_id": "q1",
                    "question_text": "a?",
                    "status": "success",
                    "actual_answer": "x",
                    "steps_score": 1,
                }
            ]
        )
    )
    with pytest.raises(InputError, match="looks like"):
        evaluate_files(reference, responses, output=out, no_judge=True, cache=False)
    assert not out.exists() or out.read_bytes()


def test_response_errors_are_those_of_the_whole(tmp_path: Path) -> None:
    reference = [
        {"template_id": "t", "questions": [{"id": f"q{i}", "question_text": "?"} for i in range(3)]}
    ]
    forms = _forms(reference, tmp_path, "ref")
    bad = [
        [{"question_id": "q1", "actual_answer": "a"}, {"question_id": "q1", "actual_answer": "b"}],
        [{"question_id": "q1", "trial": 1}, {"question_id": "q1"}],
        [{"question_id": "q1"}, {"question_id": "q1", "trial": 1}],
        [{"question_id": "q1", "trial": 1}, {"question_id": "q1", "trial": 1}],
        [{"question_id": "q2", "actual_answer": 3}, {"question_id": 5, "actual_answer": "x"}],
    ]
    for rows in bad:
        responses = tmp_path / "responses.jsonl"
        responses.write_bytes(_lines(rows))
        errors = []
        for form in ("whole", "questions"):
            with pytest.raises(InputError) as error:
                evaluate_files(
                    forms[form], responses, output=tmp_path / "o.jsonl", no_judge=True, cache=False
                )
            errors.append((str(error.value), getattr(error.value, "problems", None)))
        assert errors[0] == errors[1], rows


def test_a_reference_changed_during_the_run_is_an_error(tmp_path: Path) -> None:
    reference = tmp_path / "ref.jsonl"
    records = [{"template_id": "t", "id": f"q{i}", "question_text": "?"} for i in range(3)]
    reference.write_bytes(_lines(records))
    responses = tmp_path / "responses.jsonl"
    responses.write_bytes(_lines([{"question_id": "q1", "actual_answer": "a"}]))
    index = JsonLinesReference(reference).check()
    reference.write_bytes(_lines(records[::-1]))
    with pytest.raises(InputError, match="line 1: the file changed while it was being evaluated"):
        list(index.each())
    assert json.loads(reference.read_text().splitlines()[0])["id"] == "q2"


def test_a_judged_run_with_workers_over_a_streamed_reference(tmp_path: Path) -> None:
    """The workers check and score the deterministic part of their ranges; the judge stays in
    the run's process: one process's results, the calls within the one bound, each made once."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from test_spread import judge_config, judged_inputs

    from openai_stub import StubServer, completion, oracle_content

    reference, rows = judged_inputs()
    (tmp_path / "ref.jsonl").write_bytes(_question_lines(reference))
    (tmp_path / "responses.jsonl").write_bytes(_lines(rows[::-1]))
    with StubServer(lambda request, number: completion(oracle_content(request))) as server:
        config = judge_config(server.url)
        options: dict[str, Any] = {"config": config, "disable": ["answer_relevance"]}
        one = run_evaluation(reference, rows, cache=tmp_path / "one.sqlite3", **options)
        two = run_evaluation(
            JsonLinesReference(tmp_path / "ref.jsonl"),
            JsonLinesResponses(tmp_path / "responses.jsonl"),
            cache=tmp_path / "two.sqlite3",
            workers=2,
            **options,
        )
    assert orjson.dumps(list(two)) == orjson.dumps(list(one))
    assert all("answer_f1" in r for r in two)
    usage = two.signature["usage"]
    assert usage["total"]["calls"] == one.signature["usage"]["total"]["calls"] == 30
    assert usage["peak_concurrency"] <= 3


@pytest.mark.parametrize("reference_suffix", [".yaml", ".jsonl"])
@pytest.mark.parametrize("workers", [1, 2])
def test_by_a_question_key_reaches_streamed_results_and_their_aggregates(
    tmp_path: Path, reference_suffix: str, workers: int
) -> None:
    """``by`` a key only the reference's questions have: results written as they finish (JSON
    Lines) carry it and group by it (``per_tag``), as results written at the end (JSON) do; it
    was left out of the streamed ones, so their aggregates had no ``per_tag`` at all."""
    demo = Path(__file__).resolve().parents[2] / "examples" / "powergrid"
    reference = yaml.safe_load((demo / "reference.yaml").read_text())
    for template in reference:
        for i, question in enumerate(template["questions"]):
            question["difficulty"] = ["easy", "hard", 3][i % 3]
    path = tmp_path / f"reference{reference_suffix}"
    if reference_suffix == ".jsonl":
        path.write_text("".join(json.dumps(t) + "\n" for t in reference))
    else:
        path.write_text(yaml.safe_dump(reference))
    responses = demo / "responses-good.jsonl"
    runs = {}
    for name, extra in (("whole.json", {}), ("streamed.jsonl", {"workers": workers})):
        out = tmp_path / name
        aggregates = tmp_path / f"{name}.aggregates.json"
        evaluate_files(
            path, responses, output=out, aggregates=aggregates, by=["difficulty"],
            no_judge=True, cache=False, **extra,
        )  # fmt: skip
        text = out.read_text()
        results = (
            json.loads(text)
            if name.endswith(".json")
            else list(map(json.loads, text.split("\n")[:-1]))
        )
        runs[name] = results, json.loads(aggregates.read_text())
    (whole, whole_aggregates), (streamed, streamed_aggregates) = runs.values()
    assert streamed == whole and all("difficulty" in r for r in streamed)
    assert list(map(list, streamed)) == list(map(list, whole))  # the key at the same place
    assert len(streamed_aggregates["per_tag"]["difficulty"]) == 3  # easy, hard and 3
    for key in ("per_template", "micro", "macro", "per_tag"):
        assert streamed_aggregates[key] == whole_aggregates[key], key
