"""qa_eval.ray on a local Ray (one session for the whole file, ``ray.init(num_cpus=2)``): the
results, aggregates and signature of ``evaluate_dataset`` equal one process's on the benchmark's
two mixes and on the conformance cases; a judge's pool of actors keeps the concurrency bound; and
without Ray the import names the extra."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from fakes import items_dataset
from openai_stub import StubServer, completion, oracle, oracle_content
from qa_eval import QaEvalError, compute_aggregates, run_evaluation
from qa_eval.extras import MissingExtra, available
from qa_eval.io.limits import dump_json

ROOT = Path(__file__).resolve().parents[1]
CONFORMANCE = Path("/work/shared/conformance/cases")
if not CONFORMANCE.exists():  # beside the checkout, as tests/integration/test_conformance.py
    CONFORMANCE = ROOT.parent / "shared" / "conformance" / "cases"

needs_ray = pytest.mark.skipif(
    not available("ray"), reason="Ray is not installed: pip install 'qa-eval[ray]'"
)


@pytest.fixture(scope="session")
def ray_session() -> Iterator[Any]:
    """One local Ray for every test here (a start costs ~15 s), kept small: 2 CPUs, 200 MB of
    object store, no dashboard, no progress bars."""
    ray = pytest.importorskip("ray")
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        object_store_memory=200 * 1024 * 1024,
        log_to_driver=False,
    )
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield ray
    ray.shutdown()


def _benchmark() -> Any:
    path = ROOT / "benchmarks" / "run.py"
    spec = importlib.util.spec_from_file_location("qa_eval_benchmark_run", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _lines(ray: Any, responses: list[Any]) -> Any:
    """The responses as ``ray.data.read_text`` gives a JSON Lines file: one ``text`` row each."""
    return ray.data.from_items([{"text": dump_json(r).decode()} for r in responses])


def _same_as_one_process(run: Any, single: Any, aggregates: dict[str, Any]) -> None:
    from qa_eval.ray import iter_results

    got = list(iter_results(run.results))
    assert [dump_json(r) for r in got] == [dump_json(r) for r in single]
    assert dump_json(run.aggregates) == dump_json(aggregates)
    assert run.signature == single.signature


@needs_ray
@pytest.mark.parametrize("mix", ["matching", "mismatch"])
def test_the_benchmark_mixes_give_one_process_s_bytes(
    ray_session: Any, mix: str, tmp_path: Path
) -> None:
    from qa_eval.ray import evaluate_dataset

    bench = _benchmark()
    reference, responses = bench.dataset(480)
    if mix == "mismatch":
        responses = bench.mismatch_mix(reference, responses)
    single = run_evaluation(reference, responses)
    # Shuffled, in small batches: positions, not the order read, give the reference order.
    shuffled = responses[1::2] + responses[::2]
    if mix == "matching":
        ds = _lines(ray_session, shuffled)
    else:  # a JSON Lines file read by Ray Data's read tasks beside a pool of every CPU
        path = tmp_path / "responses.jsonl"
        path.write_bytes(b"".join(dump_json(r) + b"\n" for r in shuffled))
        ds = ray_session.data.read_text(str(path))
    run = evaluate_dataset(ds, reference, batch_size=64)
    results, aggregates = run  # unpacks as the pair
    assert aggregates is run.aggregates
    assert results.columns() == ["position", "rank", "question_id", "result"]
    assert results.count() == len(single)
    _same_as_one_process(run, single, compute_aggregates(single))
    assert run.signature["reference"]["fingerprint"] == single.signature["reference"]["fingerprint"]


@needs_ray
def test_trials_split_across_batches_give_one_process_s_bytes(ray_session: Any) -> None:
    """Each round of trials follows the last (as a harness that runs every question again
    writes them), the rows shuffled and cut in batches of 16: a question's trials are scored in
    different batches, merged on the driver, ordered by trial (1, 2, 10, then text)."""
    from qa_eval.ray import evaluate_dataset

    bench = _benchmark()
    reference, responses = bench.dataset(80)
    spoiled = bench.mismatch_mix(reference, responses)
    rounds = [(1, responses), (2, spoiled), (10, responses), ("x", spoiled[::7])]
    ordered = [{**r, "trial": trial} for trial, given in rounds for r in given]
    thresholds = {"steps_score": 0.5}
    single = run_evaluation(reference, ordered)
    shuffled = ordered[1::3] + ordered[2::3] + ordered[::3]
    run = evaluate_dataset(
        _lines(ray_session, shuffled), reference, batch_size=16, pass_thresholds=thresholds
    )
    whole = compute_aggregates(single, pass_thresholds=thresholds)
    assert "trials" in whole["micro"] and whole["micro"]["trials"]["n_trials"]["max"] == 4
    _same_as_one_process(run, single, whole)
    ranks = [row["rank"] for row in run.results.take(4)]
    assert ranks == [0, 1, 2, 3]


def _conformance_cases() -> list[Path]:
    return sorted(p for p in CONFORMANCE.glob("*") if p.is_dir()) if CONFORMANCE.exists() else []


@needs_ray
@pytest.mark.skipif(not _conformance_cases(), reason="../shared/conformance is not here")
def test_the_conformance_cases_give_one_process_s_results(ray_session: Any) -> None:
    from qa_eval.ray import evaluate_dataset

    for case in _conformance_cases():
        reference = yaml.safe_load((case / "reference.yaml").read_text(encoding="utf-8"))
        lines = (case / "responses.jsonl").read_text(encoding="utf-8").splitlines()
        texts = [line for line in lines if line.strip()]
        single = run_evaluation(reference, [yaml.safe_load(t) for t in texts])
        ds = ray_session.data.from_items([{"text": t} for t in texts])
        run = evaluate_dataset(ds, reference, batch_size=2)
        _same_as_one_process(run, single, compute_aggregates(single))


def _judge(url: str, concurrency: int) -> dict[str, Any]:
    endpoint = {"provider": "openai", "base_url": url, "api_key": "x"}
    return {
        "llm": {
            "generation": {**endpoint, "model": "gpt-4o-mini"},
            "embedding": {**endpoint, "model": "text-embedding-3-small"},
            "concurrency": concurrency,
        }
    }


def _priced(request: dict[str, Any], number: int) -> Any:
    """Correct replies that each cost exactly $0.001 at :func:`_one_judge`'s price."""
    reply = completion(oracle_content(request), prompt_tokens=1000, completion_tokens=10)
    reply.delay = 0.01
    return reply


def _one_judge(url: str, concurrency: int) -> dict[str, Any]:
    """$1 per million prompt tokens, completions free; with ``disable=ONE`` one judged metric
    (answer correctness: one call a question)."""
    config = _judge(url, concurrency)
    config["llm"]["prices"] = {"gpt-4o-mini": {"input": 1.0, "output": 0.0}}
    return config


ONE = ["answer_relevance"]


def _judged(results: list[dict[str, Any]]) -> list[str]:
    """The questions answer correctness was judged for (the others: its error)."""
    return [r["question_id"] for r in results if "answer_recall" in r]


@needs_ray
def test_a_judge_pool_keeps_the_concurrency_bound_and_one_process_s_results(
    ray_session: Any,
) -> None:
    from qa_eval.ray import evaluate_dataset

    reference, responses = items_dataset(24)
    with StubServer(oracle(latency=0.05)) as server:
        config = _judge(server.url, 4)
        single = run_evaluation(reference, responses, config, cache=False)
        one_peak = server.peak
        server.peak = 0
        calls = len(server.requests)
        # Records, not text: rows as read_json or from_items give them.
        ds = ray_session.data.from_items(responses)
        run = evaluate_dataset(ds, reference, config, batch_size=6, actors=2, cache=False)
        assert len(server.requests) == 2 * calls  # every call made again: nothing cached
        pool_peak = server.peak
    assert 1 < pool_peak <= 4 and one_peak <= 4
    from qa_eval.ray import iter_results

    got = list(iter_results(run.results))
    assert [dump_json(r) for r in got] == [dump_json(r) for r in single]
    assert dump_json(run.aggregates) == dump_json(compute_aggregates(single, config))
    usage, one = run.signature.pop("usage"), dict(single.signature).pop("usage")
    # The calls and tokens add up exactly; the cost as floats added in another order.
    assert usage["total"] == pytest.approx(one["total"], rel=1e-12)
    assert usage["per_metric"].keys() == one["per_metric"].keys()
    for metric, used in usage["per_metric"].items():
        assert used == pytest.approx(one["per_metric"][metric], rel=1e-12)
    expected = {k: v for k, v in single.signature.items() if k != "usage"}
    assert run.signature == expected
    assert run.signature["options"]["concurrency"] == 4


@needs_ray
def test_bad_input_duplicates_and_mixed_trials_are_one_line(ray_session: Any) -> None:
    from qa_eval.ray import evaluate_dataset

    reference, responses = items_dataset(4)
    broken = [dict(r) for r in responses]
    broken[2]["actual_steps"] = "not a list"
    with pytest.raises(QaEvalError, match="actual_steps"):
        evaluate_dataset(_lines(ray_session, broken), reference, batch_size=2)
    twice = responses + responses[:1]
    with pytest.raises(QaEvalError, match=r"answered in two batches \(a duplicate response"):
        evaluate_dataset(_lines(ray_session, twice), reference, batch_size=2)
    # Trials: one given twice, and a question answered with and without them, batches apart.
    trials = [{**r, "trial": t} for t in (1, 2) for r in responses]
    with pytest.raises(
        QaEvalError, match=r"^responses dataset: question_id 'q0': duplicate trial 2$"
    ):
        evaluate_dataset(_lines(ray_session, trials + trials[4:5]), reference, batch_size=2)
    with pytest.raises(QaEvalError, match=r"'q1'.*missing in one response but given in another"):
        evaluate_dataset(_lines(ray_session, trials + responses[1:2]), reference, batch_size=2)


def _budget_runs(
    ds: Any, reference: Any, responses: Any, spread: dict[str, int], **callbacks: Any
) -> tuple[dict[str, Any], Any, Any, tuple[int, int]]:
    """One process and the pool on the same data with ``max_cost=0.0035`` (calls of $0.001):
    the config, both runs, and the chat calls each made."""
    from qa_eval.ray import evaluate_dataset

    with StubServer(_priced) as server:
        config = _one_judge(server.url, spread.pop("concurrency"))
        budget: dict[str, Any] = {"cache": False, "max_cost": 0.0035, "disable": ONE}
        single = run_evaluation(reference, responses, config, **budget)
        one = len(server.chat_requests)
        run = evaluate_dataset(ds, reference, config, **spread, **budget, **callbacks)
        return config, single, run, (one, len(server.chat_requests) - one)


@needs_ray
def test_max_cost_is_one_budget_for_every_batch_and_the_callbacks_see_every_result(
    ray_session: Any,
) -> None:
    """One actor, one call at a time, batches of 2: the calls come in reference order, as in one
    process, and the budget ($0.0035: four calls of $0.001) runs out in the second batch; every
    later batch's judge reads the spent total and makes no call. Results, aggregates and the
    signature equal one process's; one response is missing (its question is evaluated on the
    driver). ``on_result`` sees each result once, ``progress`` counts up to the total."""
    from qa_eval.ray import iter_results

    reference, responses = items_dataset(10)
    responses = responses[:7] + responses[8:]
    seen: list[dict[str, Any]] = []
    counts: list[tuple[int, int]] = []
    config, single, run, calls = _budget_runs(
        ray_session.data.from_items(responses, override_num_blocks=1),
        reference,
        responses,
        dict(concurrency=1, batch_size=2, actors=1),
        on_result=seen.append,
        progress=lambda done, total: counts.append((done, total)),
    )
    assert calls == (4, 4)
    assert _judged(single) == ["q0", "q1", "q2", "q3"]
    assert single[4]["answer_correctness_error"] == "budget exceeded"
    assert single.signature["skipped_metric_values"] == {"budget": 5}  # q7: no response
    got = list(iter_results(run.results))
    assert [dump_json(r) for r in got] == [dump_json(r) for r in single]
    assert dump_json(run.aggregates) == dump_json(compute_aggregates(single, config))
    usage, one = run.signature.pop("usage"), dict(single.signature).pop("usage")
    assert usage["total"] == pytest.approx(one["total"], rel=1e-12)
    assert usage["total"]["cost"] == pytest.approx(0.004)
    assert run.signature == {k: v for k, v in single.signature.items() if k != "usage"}
    assert sorted(dump_json(r) for r in seen) == sorted(dump_json(r) for r in single)
    assert counts == [(done, 10) for done in range(1, 11)]


@needs_ray
def test_two_actors_spend_one_budget_as_one_process_with_two_calls_at_once(
    ray_session: Any,
) -> None:
    """Two actors, one call at a time each: the pool stops at the budget as one process with
    ``concurrency: 2`` does, the calls in flight when it is reached finishing (4 or 5 calls of
    $0.001 for $0.0035); the questions not judged say ``budget exceeded``, counted in the
    signature. Split per actor, or per batch, the budget would pay for all 12 calls."""
    from qa_eval.ray import iter_results

    reference, responses = items_dataset(12)
    counts: list[tuple[int, int]] = []
    _, single, run, (one_calls, pool_calls) = _budget_runs(
        ray_session.data.from_items(responses),
        reference,
        responses,
        dict(concurrency=2, batch_size=3, actors=2),
        progress=lambda done, total: counts.append((done, total)),
    )
    results = list(iter_results(run.results))
    for judged, calls in ((_judged(single), one_calls), (_judged(results), pool_calls)):
        assert 4 <= len(judged) == calls <= 5
    for done in (single, results):
        skipped = [r for r in done if "answer_recall" not in r]
        assert {r["answer_correctness_error"] for r in skipped} == {"budget exceeded"}
    assert run.signature["skipped_metric_values"] == {"budget": 12 - pool_calls}
    assert run.signature["usage"]["total"]["cost"] == pytest.approx(pool_calls * 0.001)
    assert run.signature["options"]["max_cost"] == 0.0035
    assert counts == [(done, 12) for done in range(1, 13)]


@needs_ray
def test_on_progress_is_refused_with_one_line(ray_session: Any) -> None:
    from qa_eval.ray import evaluate_dataset

    reference, responses = items_dataset(2)
    with pytest.raises(QaEvalError, match=r"^evaluate_dataset does not take on_progress$"):
        evaluate_dataset(_lines(ray_session, responses), reference, on_progress=print)


def test_without_ray_the_import_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a)
    )
    monkeypatch.delitem(sys.modules, "qa_eval.ray", raising=False)
    with pytest.raises(MissingExtra, match=r"^qa_eval.ray needs .*pip install 'qa-eval\[ray\]'$"):
        importlib.import_module("qa_eval.ray")
