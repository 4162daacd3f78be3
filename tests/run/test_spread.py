"""A run spread over worker processes or shards gives one process's bytes: the results (in
reference order), the aggregates and the reference fingerprint, on both benchmark mixes and on
the conformance cases; the signature differs only in ``spread``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from test_pinned_outputs import _benchmark

from qa_eval import compute_aggregates, run_evaluation
from qa_eval.run.files import evaluate_files
from qa_eval.run.merge import merge_shards

CONFORMANCE = Path(__file__).resolve().parents[3] / "shared" / "conformance" / "cases"


@pytest.fixture(scope="module")
def mixes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    """Both benchmark mixes (300 questions) as files: REFERENCE.json and RESPONSES.jsonl."""
    bench = _benchmark()
    folder = tmp_path_factory.mktemp("mixes")
    reference, responses = bench.dataset(300)
    out = {}
    for mix in ("matching", "mismatch"):
        answers = bench.mismatch_mix(reference, responses) if mix == "mismatch" else responses
        ref, resp = folder / f"{mix}-reference.json", folder / f"{mix}-responses.jsonl"
        ref.write_bytes(orjson.dumps(reference))
        rows = answers.values() if isinstance(answers, dict) else answers
        resp.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
        out[mix] = (ref, resp)
    for case in sorted(CONFORMANCE.glob("*")) if CONFORMANCE.is_dir() else ():
        out[f"conformance {case.name}"] = (case / "reference.yaml", case / "responses.jsonl")
    return out


def _files(folder: Path, name: str) -> dict[str, Any]:
    """The bytes of a run's results and aggregates (without the signature), and its signature."""
    aggregates = orjson.loads((folder / f"{name}.aggregates.json").read_bytes())
    signature = aggregates.pop("signature")
    return {
        "results": (folder / f"{name}.jsonl").read_bytes(),
        "aggregates": orjson.dumps(aggregates),
        "signature": signature,
    }


def _run(reference: Path, responses: Path, folder: Path, name: str, **options: Any) -> None:
    evaluate_files(
        reference,
        responses,
        output=folder / f"{name}.jsonl",
        aggregates=folder / f"{name}.aggregates.json",
        no_judge=True,
        cache=False,
        **options,
    )


def test_workers_give_one_process_bytes(
    mixes: dict[str, tuple[Path, Path]], tmp_path: Path
) -> None:
    for mix, (reference, responses) in mixes.items():
        _run(reference, responses, tmp_path, f"{mix}-one")
        _run(reference, responses, tmp_path, f"{mix}-two", workers=2)
        one, two = _files(tmp_path, f"{mix}-one"), _files(tmp_path, f"{mix}-two")
        assert two["results"] == one["results"], mix
        assert two["aggregates"] == one["aggregates"], mix
        assert two["signature"].pop("spread") == {"workers": 2}
        assert two["signature"] == one["signature"], mix


def test_workers_in_memory_give_one_process_results(mixes: dict[str, tuple[Path, Path]]) -> None:
    bench = _benchmark()
    reference, responses = bench.dataset(200)
    for answers in (responses, bench.mismatch_mix(reference, responses)):
        one = run_evaluation(reference, answers)
        two = run_evaluation(reference, answers, workers=2)
        assert orjson.dumps(list(two)) == orjson.dumps(list(one))
        assert orjson.dumps(compute_aggregates(two)) == orjson.dumps(compute_aggregates(one))
        assert two.signature.pop("spread") == {"workers": 2}
        assert two.signature == one.signature


@pytest.mark.parametrize("count", [1, 3])
def test_shards_merged_give_one_run_bytes(
    mixes: dict[str, tuple[Path, Path]], tmp_path: Path, count: int
) -> None:
    for mix, (reference, responses) in mixes.items():
        _run(reference, responses, tmp_path, f"{mix}-one")
        shards = []
        for index in range(count, 0, -1):  # given in any order
            _run(reference, responses, tmp_path, f"{mix}-{index}", shard=f"{index}/{count}")
            shards.append(tmp_path / f"{mix}-{index}.jsonl")
        merge_shards(
            shards, tmp_path / f"{mix}-merged.jsonl", tmp_path / f"{mix}-merged.aggregates.json"
        )
        one, merged = _files(tmp_path, f"{mix}-one"), _files(tmp_path, f"{mix}-merged")
        assert merged["results"] == one["results"], mix
        assert merged["aggregates"] == one["aggregates"], mix
        assert merged["signature"].pop("spread") == {"shards": count}
        assert merged["signature"] == one["signature"], mix
        on_disk = yaml.safe_load((tmp_path / f"{mix}-merged.signature.yaml").read_text())
        assert on_disk["spread"] == {"shards": count}


def judge_config(url: str) -> dict[str, Any]:
    """A judge at ``url`` (the scripted server) with at most 3 calls at once."""
    endpoint = {"provider": "openai", "api_key": "x", "base_url": url, "model": "gpt-4o-mini"}
    return {"llm": {"generation": endpoint, "concurrency": 3}}


def judged_inputs() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Thirty questions with reference answers and responses the oracle judge scores."""
    reference = [
        {
            "template_id": f"t{t}",
            "questions": [
                {
                    "id": f"q{t}-{q}",
                    "question_text": f"What is stored under item-{t}{q}?",
                    "reference_answer": f"Item {t}{q} holds {q * 7} units.",
                }
                for q in range(10)
            ],
        }
        for t in range(3)
    ]
    responses = [
        {"question_id": q["id"], "actual_answer": q["reference_answer"].lower()}
        for t in reference
        for q in t["questions"]
    ]
    return reference, responses


def test_judged_run_with_workers_keeps_one_judge(tmp_path: Path) -> None:
    """The deterministic part in two workers, the judge in the run's process: the same results
    as one process, the calls within the one concurrency bound, each made once (one cache)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from openai_stub import StubServer, completion, oracle_content

    reference, responses = judged_inputs()
    with StubServer(lambda request, number: completion(oracle_content(request))) as server:
        config = judge_config(server.url)
        runs = [
            run_evaluation(
                reference,
                responses,
                config=config,
                cache=tmp_path / f"cache-{workers}.sqlite3",
                workers=workers,
                disable=["answer_relevance"],
            )
            for workers in (1, 2)
        ]
    one, two = runs
    assert orjson.dumps(list(two)) == orjson.dumps(list(one))
    assert all("answer_f1" in r for r in two)
    usage = two.signature["usage"]
    assert usage["total"]["calls"] == one.signature["usage"]["total"]["calls"] == 30
    assert usage["peak_concurrency"] <= 3
