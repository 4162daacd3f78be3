"""The reference fingerprint is hashed once per evaluation of files, not once per system, and a
fingerprint handed to a run is the one its signature holds (same value as computed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

import qa_eval.run.signature as pipeline
from qa_eval import QaEvalError, evaluate_files, run_evaluation
from qa_eval.io.files import signature_path
from qa_eval.run.evaluation import iter_evaluation
from qa_eval.run.prepare import prepare_reference
from qa_eval.run.signature import reference_fingerprint

DEMO = Path(__file__).parents[2] / "examples" / "powergrid"
REFERENCE = DEMO / "reference.yaml"
RESPONSES = DEMO / "responses-good.jsonl"
FLAWED = DEMO / "responses-flawed.jsonl"


def _expected() -> str:
    return reference_fingerprint(prepare_reference(yaml.safe_load(REFERENCE.read_text())))


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls = [0]
    original = pipeline.reference_fingerprint

    def counted(questions: Any) -> str:
        calls[0] += 1
        return original(questions)

    monkeypatch.setattr(pipeline, "reference_fingerprint", counted)
    return calls


@pytest.mark.parametrize("output", ["results.json", "results.jsonl"])
def test_several_systems_hash_the_reference_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, output: str
) -> None:
    calls = _counting(monkeypatch)
    run = evaluate_files(
        REFERENCE,
        systems={"good": RESPONSES, "flawed": FLAWED, "again": RESPONSES},
        output=tmp_path / output,
        no_judge=True,
        cache=False,
    )
    assert calls[0] == 1
    expected = _expected()
    assert [s.signature["reference"]["fingerprint"] for s in run.systems] == [expected] * 3
    for name in ("good", "flawed", "again"):
        results = tmp_path / output.replace("results", f"results.{name}")
        written = yaml.safe_load(signature_path(results).read_text())
        assert written["reference"]["fingerprint"] == expected


def test_one_system_still_hashes_its_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _counting(monkeypatch)
    run = evaluate_files(REFERENCE, RESPONSES, no_judge=True, cache=False)
    assert calls[0] == 1
    assert run.systems[0].signature["reference"]["fingerprint"] == _expected()


def _demo() -> tuple[Any, list[Any]]:
    reference = yaml.safe_load(REFERENCE.read_text())
    responses = [yaml.safe_load(line) for line in RESPONSES.read_text().splitlines() if line]
    return reference, responses


def test_run_evaluation_hashes_its_reference_when_the_signature_is_first_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _counting(monkeypatch)
    results = run_evaluation(*_demo(), cache=False)
    assert calls[0] == 0  # the run itself does not hash the reference
    reference = results.signature["reference"]
    assert calls[0] == 1
    assert reference["fingerprint"] == _expected()
    assert list(reference) == ["fingerprint", "templates", "questions"]
    assert results.signature["reference"]["fingerprint"] == _expected()
    assert calls[0] == 1  # hashed once


def test_pickled_and_copied_results_carry_the_computed_fingerprint() -> None:
    import copy
    import pickle

    for clone in (pickle.loads, copy.deepcopy, copy.copy):
        results = run_evaluation(*_demo(), cache=False)
        cloned = pickle.loads(pickle.dumps(results)) if clone is pickle.loads else clone(results)
        assert cloned.signature["reference"]["fingerprint"] == _expected()
        assert cloned == results
        assert results.signature == cloned.signature


def test_results_without_a_signature_say_so_as_an_attribute_error() -> None:
    from qa_eval.run.question import Results

    assert getattr(Results([1]), "signature", None) is None
    results = Results([1])
    results.signature = {"reference": {"fingerprint": "sha256:" + "0" * 64}}
    assert results.signature["reference"]["fingerprint"] == "sha256:" + "0" * 64


def test_a_given_fingerprint_is_used_instead_of_hashing(monkeypatch: pytest.MonkeyPatch) -> None:
    reference, responses = _demo()
    computed = run_evaluation(reference, responses, cache=False).signature["reference"]
    assert computed["fingerprint"] == _expected()
    calls = _counting(monkeypatch)
    given = "sha256:" + "0" * 64
    results = run_evaluation(reference, responses, cache=False, fingerprint=given)
    assert calls[0] == 0
    assert results.signature["reference"] == {**computed, "fingerprint": given}
    with iter_evaluation(reference, responses, cache=False, fingerprint=given) as stream:
        assert len(list(stream)) == len(results)
    assert stream.signature is not None
    assert stream.signature["reference"]["fingerprint"] == given
    assert calls[0] == 0


@pytest.mark.parametrize(
    "bad", ["", "sha256:", "sha256:" + "g" * 64, "md5:" + "0" * 64, "sha256:" + "A" * 64, 7]
)
def test_a_malformed_fingerprint_is_refused(bad: Any) -> None:
    reference = yaml.safe_load(REFERENCE.read_text())
    with pytest.raises(QaEvalError, match="fingerprint must be"):
        run_evaluation(reference, [], cache=False, fingerprint=bad)


def _by_definition(questions: list[Any]) -> str:
    """The fingerprint as its docstring defines it: each question's sorted-key JSON hashed with
    the standard library's SHA-256, the sorted digests hashed again."""
    import hashlib
    import json

    digests = sorted(
        hashlib.sha256(
            json.dumps(
                [q.template_id, q.raw], sort_keys=True, separators=(",", ":"), ensure_ascii=False
            ).encode()
        ).digest()
        for q in questions
    )
    return "sha256:" + hashlib.sha256(b"".join(digests)).hexdigest()


def test_a_large_reference_hashed_by_openssl_has_the_same_fingerprint() -> None:
    # Past pipeline._BULK bytes the hashing moves to OpenSSL's SHA-256 mid-reference: the
    # questions before and after the switch, and the final hash, must not change.
    text = "x" * 1000
    reference = [
        {
            "template_id": f"t{t}",
            "questions": [
                {"id": f"t{t}-q{q}", "question_text": f"{text} {t} {q} é"} for q in range(50)
            ],
        }
        for t in range(16)
    ]
    questions = prepare_reference(reference)
    assert sum(len(q.raw["question_text"]) for q in questions) > pipeline._BULK
    assert reference_fingerprint(questions) == _by_definition(questions)


def test_a_record_with_number_keys_is_fingerprinted_as_before() -> None:
    # Such a record (given through the API) is written by orjson with number keys made text,
    # not by the faster path that only takes text keys.
    questions = prepare_reference(
        [{"template_id": "t", "questions": [{"id": "q", "question_text": "Q?", "extra": {2: "b"}}]}]
    )
    expected_json = b'["t",{"extra":{"2":"b"},"id":"q","question_text":"Q?"}]'
    import hashlib

    digest = hashlib.sha256(expected_json).digest()
    assert reference_fingerprint(questions) == "sha256:" + hashlib.sha256(digest).hexdigest()


def test_the_templates_of_a_reference_in_memory_are_counted_when_first_read() -> None:
    import pickle

    reference, responses = _demo()
    expected = len({template["template_id"] for template in reference})
    results = run_evaluation(reference, responses, cache=False)
    assert callable(results.__dict__["_signature"]["reference"]["templates"])  # not yet
    assert results.signature["reference"]["templates"] == expected
    cloned = pickle.loads(pickle.dumps(run_evaluation(reference, responses, cache=False)))
    assert cloned.signature["reference"]["templates"] == expected
    # A given fingerprint leaves the count alone pending (the hash is not the only one).
    given = run_evaluation(reference, responses, cache=False, fingerprint=_expected())
    assert given.signature["reference"] == {
        "fingerprint": _expected(),
        "templates": expected,
        "questions": len(responses),
    }
