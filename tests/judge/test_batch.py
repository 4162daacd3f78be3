"""``--batch``: the judge's requests through the Batch API of the scripted server
(``openai_batch_stub``): the same values as a synchronous run with the same replies, second-round
requests (faithfulness verdicts, re-asks), failed and expired requests asked synchronously once,
batch prices, ``--no-wait``, a killed run that resumes without submitting again, Azure's paths,
and the options that do not go together."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from fakes import substation_dataset
from openai_batch_stub import BatchStubServer
from openai_stub import Reply, completion, oracle, oracle_content, prompt_text
from qa_eval import run_evaluation
from qa_eval.cli import main
from qa_eval.config import parse_config
from qa_eval.errors import QaEvalError
from qa_eval.judge.batch import Batcher
from qa_eval.judge.prices import price_of, usd
from qa_eval.run.prefill import prefill

REFERENCE, RESPONSES = substation_dataset(5)
CUSTOM = [
    {
        "name": "tone",
        "inputs": ["question", "actual_answer"],
        "instructions": "Is the answer polite?",
        "outputs": {"polite": "1 if polite, else 0"},
    }
]


def settings(url: str, provider: str = "openai", **llm: Any) -> dict[str, Any]:
    generation = {"provider": provider, "model": "gpt-4o-mini", "base_url": url, "api_key": "x"}
    embedding = {"provider": "openai", "base_url": url, "api_key": "x"}
    return {"llm": {"generation": generation, "embedding": embedding, **llm}}


def script_with_reask(request: dict[str, Any], number: int) -> Reply:
    """The oracle, except that the first correctness reply for question 0 breaks its schema: it
    is re-asked (a second round in a batch). Deterministic by content, as a batch needs."""
    text = prompt_text(request)
    messages = request.get("messages") or []
    first = not any(m.get("role") == "assistant" for m in messages)  # not a re-ask
    if "[qa-eval:answer-correctness]" in text and "substation 0?" in text and first:
        return completion(json.dumps({"reference_claims_count": 0}), 50, 5)
    return completion(oracle_content(request), prompt_tokens=len(text) // 4, completion_tokens=40)


def _without_costs(record: Any) -> Any:
    if isinstance(record, dict):
        return {
            k: _without_costs(v)
            for k, v in record.items()
            if not (k.endswith("_cost") or k == "llm_cost")
        }
    if isinstance(record, list):
        return [_without_costs(v) for v in record]
    return record


def _bodies(requests: list[dict[str, Any]]) -> Counter[str]:
    keep = ("messages", "response_format", "temperature", "max_tokens", "model")
    return Counter(json.dumps({k: r.get(k) for k in keep}, sort_keys=True) for r in requests)


def _costs(record: dict[str, Any]) -> dict[str, float]:
    out = {k: v for k, v in record.items() if k.endswith("_cost") and isinstance(v, float)}
    for i, step in enumerate(record.get("actual_steps") or []):
        out |= {f"{i}.{k}": v for k, v in step.items() if k.endswith("_cost")}
    return out


def test_a_batch_run_gives_the_values_of_a_synchronous_run_at_batch_prices(
    tmp_path: Path,
) -> None:
    options: dict[str, Any] = {"enable": ["graphrag"]}
    with BatchStubServer(script_with_reask) as sync_server:
        config = settings(sync_server.url) | {"custom_evaluations": CUSTOM}
        synchronous = run_evaluation(
            REFERENCE, RESPONSES, config=config, cache=tmp_path / "sync.sqlite3", **options
        )
        sync_requests = sync_server.chat_requests
    lines: list[str] = []
    with BatchStubServer(script_with_reask) as server:
        config = settings(server.url) | {"custom_evaluations": CUSTOM}
        cache = tmp_path / "batch.sqlite3"
        report = prefill(
            [(REFERENCE, RESPONSES)],
            config=parse_config(config),
            cache=cache,
            poll=0.01,
            report=lines.append,
            **options,
        )
        assert server.chat_requests == []  # no synchronous call at all
        batched = run_evaluation(REFERENCE, RESPONSES, config=config, cache=cache, **options)
        assert server.chat_requests == []  # the run completed from the cache
        assert batched.signature["usage"]["total"]["calls"] == 0
        # a rerun: nothing submitted, nothing called, the same batch-rate costs from the cache
        rerun = prefill([(REFERENCE, RESPONSES)], config=parse_config(config), cache=cache)
        assert rerun.submitted == [] and rerun.collected == [] and len(server.batches) == 2
        replay = run_evaluation(REFERENCE, RESPONSES, config=config, cache=cache, **options)
        assert server.chat_requests == []
    assert [dict(r) for r in replay] == [dict(r) for r in batched]
    # round 1: the first calls; round 2: faithfulness verdicts and the re-ask of question 0
    assert report.rounds == 2 and len(report.submitted) == 2
    assert report.failed == 0 and report.waiting == [] and report.left == 0
    assert any("round 2" in line for line in lines)
    second = [body for batch, _, body in server.answered if batch == report.submitted[1]]
    # the re-ask: the reply it corrects is in its messages
    assert any(any(m["role"] == "assistant" for m in body["messages"]) for body in second)
    assert any("[qa-eval:faithfulness-verdicts]" in prompt_text(body) for body in second)
    # the same requests as the synchronous run (bodies, response format, parameters) ...
    assert _bodies([body for _, _, body in server.answered]) == _bodies(sync_requests)
    assert report.requests == len(sync_requests) == report.succeeded
    # ... so the same values, and every cost at batch rates (half, for gpt-4o-mini)
    assert _without_costs([dict(r) for r in batched]) == _without_costs(
        [dict(r) for r in synchronous]
    )
    price = price_of("gpt-4o-mini")
    assert usd(price, 10**6, 10**6, batch=True) == pytest.approx(usd(price, 10**6, 10**6) / 2)
    for fast, cheap in zip(synchronous, batched):
        sync_costs, batch_costs = _costs(fast), _costs(cheap)
        assert sync_costs.keys() == batch_costs.keys()
        # embeddings are not batched: semantic similarity's cost stays, answer relevance's
        # (judge + embeddings) is more than half
        similarity = fast["semantic_similarity_cost"]
        assert cheap["semantic_similarity_cost"] == similarity
        embedding = cheap["answer_relevance_cost"] - fast["answer_relevance_cost"] / 2
        assert 0 < embedding < fast["answer_relevance_cost"] / 2
        expected = (fast["llm_cost"] - similarity) / 2 + embedding + similarity
        assert cheap["llm_cost"] == pytest.approx(expected)
        unbatched = ("answer_relevance_cost", "semantic_similarity_cost", "llm_cost")
        for key, value in sync_costs.items():
            if key not in unbatched:
                assert value > 0 and batch_costs[key] == pytest.approx(value / 2), key
    assert report.standard_cost == pytest.approx(
        usd(price, report.prompt_tokens, report.completion_tokens)
    )
    assert report.cost == pytest.approx(report.standard_cost / 2)


def test_failed_and_expired_requests_are_asked_synchronously_once(tmp_path: Path) -> None:
    """Batch 1 expires half-way and two of its answered requests fail with a 500: those are
    asked synchronously, once each; nothing the batch answered is asked again."""
    faults = {}

    def item_fault(custom_id: str, body: dict[str, Any]) -> str | None:
        text = prompt_text(body)
        if "[qa-eval:answer-correctness]" in text and "substation 1?" in text:
            faults[custom_id] = "500"
            return "500"
        return None

    with BatchStubServer(
        oracle(), item_fault=item_fault, fate=lambda n: "expired" if n == 0 else "completed"
    ) as server:
        config = settings(server.url)
        cache = tmp_path / "cache.sqlite3"
        report = prefill(
            [(REFERENCE, RESPONSES)], config=parse_config(config), cache=cache, poll=0.01
        )
        results = run_evaluation(REFERENCE, RESPONSES, config=config, cache=cache)
        synchronous = server.chat_requests
        answered = [body for _, _, body in server.answered]
    assert report.failed > len(faults) >= 1  # expired ones and the 500s
    assert len(synchronous) == report.failed
    billed = _bodies(answered) + _bodies(synchronous)
    assert all(count == 1 for count in billed.values())  # nothing billed twice
    for result in results:
        assert not [k for k in result if k.endswith("_error")], result
        assert isinstance(result["answer_f1"], float)


def test_a_batch_that_fails_validation_is_asked_synchronously(tmp_path: Path) -> None:
    with BatchStubServer(oracle(), fate=lambda n: "failed") as server:
        config = settings(server.url)
        cache = tmp_path / "cache.sqlite3"
        report = prefill(
            [(REFERENCE, RESPONSES)], config=parse_config(config), cache=cache, poll=0.01
        )
        assert report.succeeded == 0 and report.failed == report.requests > 0
        results = run_evaluation(REFERENCE, RESPONSES, config=config, cache=cache)
        assert len(server.chat_requests) == report.requests
    assert all("answer_f1" in r for r in results)


def _files(tmp_path: Path, url: str, **llm: Any) -> list[str]:
    reference = tmp_path / "reference.yaml"
    responses = tmp_path / "responses.jsonl"
    config = tmp_path / "judge.yaml"
    reference.write_text(yaml.safe_dump(REFERENCE))
    responses.write_text("\n".join(json.dumps(r) for r in RESPONSES))
    config.write_text(yaml.safe_dump(settings(url, **llm)))
    return [str(reference), str(responses), "-c", str(config), "--enable", "faithfulness"]


def test_no_wait_submits_and_exits_and_a_later_run_collects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "results.json"
    cache = tmp_path / "cache.sqlite3"
    with BatchStubServer(oracle()) as server:
        server.hold.set()  # the batches stay in progress
        args = [*_files(tmp_path, server.url), "-o", str(out), "--cache", str(cache), "--batch"]
        assert main(["evaluate", *args, "--no-wait"]) == 0
        printed = capsys.readouterr().out
        assert "batch_1" in printed and "run the same command again" in printed
        assert not out.exists() and len(server.batches) == 1
        assert main(["evaluate", *args, "--no-wait"]) == 0  # still in flight: nothing new
        assert not out.exists() and len(server.batches) == 1
        server.hold.clear()
        assert main(["evaluate", *args]) == 0  # collects batch 1, then the verdicts' round
        assert len(server.batches) == 2 and server.chat_requests == []
    captured = capsys.readouterr()
    assert "batch: " in captured.err and "at batch rates" in captured.err
    results = json.loads(out.read_text())
    assert all("faithfulness" in r for r in results)
    signature = yaml.safe_load((tmp_path / "results.signature.yaml").read_text())
    assert signature["batch"]["collected"] == ["batch_1", "batch_2"]
    assert signature["batch"]["submitted"] == ["batch_2"]


def test_a_killed_batch_run_picks_up_its_batch_instead_of_submitting_again(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    cache = tmp_path / "cache.sqlite3"
    with BatchStubServer(oracle()) as server:
        server.hold.set()
        args = [*_files(tmp_path, server.url), "-o", str(out), "--cache", str(cache), "--batch"]
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
        child = subprocess.Popen(
            [sys.executable, "-m", "qa_eval", "evaluate", *args, "-q"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 60
            while server.retrieves == 0 and time.monotonic() < deadline:
                time.sleep(0.05)  # submitted, and polling
            assert server.retrieves > 0
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait()
        assert len(server.batches) == 1 and not out.exists()
        server.hold.clear()
        assert main(["evaluate", *args, "-q"]) == 0
        assert len(server.batches) == 2  # batch 1 collected, batch 2 the verdicts
        assert server.chat_requests == []
    assert len(json.loads(out.read_text())) == 5


def test_a_submission_killed_before_it_was_recorded_is_found_by_its_tag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed after the batch was created, before its id was stored: the next run finds the
    batch in the provider's list by qa-eval's tag and does not submit it again."""
    adopt = Batcher._adopt
    killed = threading.Event()

    def killed_once(self: Any, placeholder: str, batch_id: str, status: str) -> None:
        if not killed.is_set():
            killed.set()
            raise KeyboardInterrupt
        adopt(self, placeholder, batch_id, status)

    with BatchStubServer(oracle()) as server:
        config = settings(server.url)
        cache = tmp_path / "cache.sqlite3"
        monkeypatch.setattr(Batcher, "_adopt", killed_once)
        with pytest.raises(KeyboardInterrupt):
            prefill([(REFERENCE, RESPONSES)], config=parse_config(config), cache=cache, poll=0.01)
        assert len(server.batches) == 1
        lines: list[str] = []
        report = prefill(
            [(REFERENCE, RESPONSES)],
            config=parse_config(config),
            cache=cache,
            poll=0.01,
            report=lines.append,
        )
        assert len(server.batches) == 1 and report.submitted == []
        assert report.collected == ["batch_1"]
        assert any("submitted by an earlier run" in line for line in lines)
        run_evaluation(REFERENCE, RESPONSES, config=config, cache=cache)
        assert server.chat_requests == []


def test_azure_batches_use_its_paths(tmp_path: Path) -> None:
    with BatchStubServer(oracle()) as server:
        root = f"http://127.0.0.1:{server.port}"
        config = settings(root, provider="azure")
        config["llm"]["embedding"] = {"provider": "openai", "base_url": server.url, "api_key": "x"}
        cache = tmp_path / "cache.sqlite3"
        report = prefill(
            [(REFERENCE, RESPONSES)],
            config=parse_config(config),
            cache=cache,
            poll=0.01,
            disable=["answer_relevance"],
        )
        assert report.succeeded == report.requests > 0
        batch = server.batches["batch_1"]
        assert batch["endpoint"] == "/chat/completions"
        # the input file was deleted once the output was stored
        assert server.files == {} and batch["input_file_id"] in server.deletes
        first = json.loads(server.deleted[batch["input_file_id"]].splitlines()[0])
        assert first["url"] == "/chat/completions" and first["body"]["model"] == "gpt-4o-mini"
        results = run_evaluation(
            REFERENCE, RESPONSES, config=config, cache=cache, disable=["answer_relevance"]
        )
        assert server.chat_requests == [] and all("answer_f1" in r for r in results)
    assert server.api_paths and all(p.startswith("/openai/") for p in server.api_paths)
    assert any(p.startswith("/openai/files/file-") for p in server.api_paths)  # the deletes
    assert any(p.startswith("/openai/batches") for p in server.api_paths)


def test_repeats_go_into_the_batch_as_distinct_requests(tmp_path: Path) -> None:
    with BatchStubServer(oracle()) as server:
        config = settings(server.url, repeats=3)
        cache = tmp_path / "cache.sqlite3"
        report = prefill(
            [(REFERENCE, RESPONSES)],
            config=parse_config(config),
            cache=cache,
            poll=0.01,
            disable=["answer_relevance", "retrieval_answer", "retrieval_context"],
        )
        assert report.requests == 3 * 5  # one correctness request per question and repeat
        results = run_evaluation(
            REFERENCE,
            RESPONSES,
            config=config,
            cache=cache,
            disable=["answer_relevance", "retrieval_answer", "retrieval_context"],
        )
        assert server.chat_requests == []
    assert all(len(r["answer_f1_repeats"]) == 3 for r in results)


def test_options_that_do_not_go_together(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with BatchStubServer(oracle()) as server:
        files = _files(tmp_path, server.url)
        assert main(["evaluate", *files, "--no-wait"]) == 2
        assert "--no-wait goes with --batch" in capsys.readouterr().err
        assert main(["evaluate", *files, "--batch", "--no-cache"]) == 2
        assert "needs the cache" in capsys.readouterr().err
        assert main(["evaluate", *files, "--batch", "--max-cost", "1"]) == 2
        assert "cannot be combined" in capsys.readouterr().err
        # a dry run prices the plan at batch rates and submits nothing
        assert main(["evaluate", *files, "--batch", "--dry-run"]) == 0
        assert "cost (est., batch rates)" in capsys.readouterr().out
        assert server.batches == {} and server.chat_requests == []
    other = parse_config({"llm": {"generation": {"provider": "anthropic", "model": "claude"}}})
    with pytest.raises(QaEvalError, match="provider openai or azure"):
        prefill([(REFERENCE, RESPONSES)], config=other, cache=tmp_path / "c.sqlite3")


def test_several_systems_share_their_batches(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = _files(tmp_path, "http://unused")
    flawed = tmp_path / "flawed.jsonl"
    flawed.write_text("\n".join(json.dumps(r | {"actual_answer": "T9 only."}) for r in RESPONSES))
    out = tmp_path / "results.json"
    with BatchStubServer(oracle()) as server:
        (tmp_path / "judge.yaml").write_text(yaml.safe_dump(settings(server.url)))
        args = [files[0], "--system", f"good={files[1]}", "--system", f"flawed={flawed}"]
        args += [*files[2:], "-o", str(out), "--batch", "--format", "json"]
        assert main(["evaluate", *args]) == 0
        assert server.chat_requests == []
        first = server.deleted[server.batches["batch_1"]["input_file_id"]].decode()
        assert "Substation 0 has T0" in first and "T9 only." in first  # both systems
    assert json.loads(capsys.readouterr().out)["systems"].keys() == {"good", "flawed"}
    for name in ("good", "flawed"):
        assert len(json.loads((tmp_path / f"results.{name}.json").read_text())) == 5


def test_the_interrupted_line_says_batches_are_picked_up() -> None:
    from qa_eval.cli import build_parser, interrupted_message

    args = build_parser().parse_args(["evaluate", "ref.yaml", "resp.jsonl", "--batch"])
    assert "a rerun collects them instead of submitting them again" in interrupted_message(args)


def test_the_batch_tables_are_checked_like_the_others(tmp_path: Path) -> None:
    import sqlite3

    from qa_eval.judge.cache.sqlite import CacheError
    from qa_eval.judge.cache.store import ReplyCache

    path = tmp_path / "cache.sqlite3"
    ReplyCache(path).put_batch_tokens("k", 1, 2)  # made at first use, in a new file too
    db = sqlite3.connect(path)
    assert {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")} >= {
        "replies",
        "reply_batch_tokens",
    }
    db.execute("DROP TABLE reply_batch_tokens")
    db.execute("CREATE TABLE reply_batch_tokens (key TEXT, other TEXT)")
    db.commit()
    db.close()
    with pytest.raises(CacheError, match="reply_batch_tokens"):
        ReplyCache(path)


def test_batch_needs_a_cache_it_can_write(tmp_path: Path) -> None:
    from test_cache import read_only

    from qa_eval.judge.cache.store import ReplyCache

    path = tmp_path / "cache.sqlite3"
    cache = ReplyCache(path)
    cache.put_batch_tokens("k", 1, 2)
    cache.close()
    with read_only(path), BatchStubServer(oracle()) as server, pytest.warns(UserWarning):
        with pytest.raises(QaEvalError, match="needs a cache it can write"):
            prefill([(REFERENCE, RESPONSES)], config=parse_config(settings(server.url)), cache=path)
        assert server.batches == {}


def test_the_provider_files_are_deleted_once_the_replies_are_stored(tmp_path: Path) -> None:
    """Input, output and error files go once the batch's results are in the cache database; a
    provider that refuses the deletes costs a line each, nothing else."""

    def fault(custom_id: str, body: dict[str, Any]) -> str | None:
        return "500" if "substation 1?" in prompt_text(body) else None  # an error file too

    for refused in (None, 500):
        lines: list[str] = []
        with BatchStubServer(oracle(), item_fault=fault, delete_fault=refused) as server:
            config = settings(server.url)
            cache = tmp_path / f"cache-{refused}.sqlite3"
            report = prefill(
                [(REFERENCE, RESPONSES)],
                config=parse_config(config),
                cache=cache,
                poll=0.01,
                report=lines.append,
            )
            made = {
                f
                for b in server.batches.values()
                for f in (b["input_file_id"], b["output_file_id"], b["error_file_id"])
                if f
            }
            assert any(b["error_file_id"] for b in server.batches.values())
            assert report.failed > 0 and report.collected == list(server.batches)
            deletes = Counter(server.deletes)
            assert set(deletes) == made
            # each file once; a refused delete is retried once
            assert set(deletes.values()) == ({1} if refused is None else {2})
            failed_calls = report.failed
            results = run_evaluation(REFERENCE, RESPONSES, config=config, cache=cache)
            # only the requests the batch failed are asked synchronously
            assert len(server.chat_requests) == failed_calls
        assert all("answer_f1" in r for r in results)
        not_deleted = [line for line in lines if "was not deleted" in line]
        if refused is None:
            assert server.files == {} and not_deleted == []
        else:
            assert set(server.files) == made
            assert len(not_deleted) == len(made) and all("500" in line for line in not_deleted)


def test_two_batch_runs_on_one_cache_submit_each_request_once(tmp_path: Path) -> None:
    """Started together on one cache: the second plans after the first recorded its requests,
    waits for that batch and collects nothing twice; every request is answered once."""
    cache = tmp_path / "cache.sqlite3"
    with BatchStubServer(oracle()) as server:
        config = settings(server.url)
        start = threading.Barrier(2)
        reports: list[Any] = []
        lines: list[list[str]] = [[], []]
        failures: list[BaseException] = []

        def run(index: int) -> None:
            start.wait()
            try:
                reports.append(
                    prefill(
                        [(REFERENCE, RESPONSES)],
                        config=parse_config(config),
                        cache=cache,
                        poll=0.01,
                        report=lines[index].append,
                    )
                )
            except BaseException as e:  # pragma: no cover - shown by the assertion below
                failures.append(e)

        threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert failures == [] and len(reports) == 2
        answered = Counter(custom_id for _, custom_id, _ in server.answered)
        assert answered and set(answered.values()) == {1}  # nothing submitted twice
        assert sum(r.requests for r in reports) == len(answered)
        assert sum(len(r.collected) for r in reports) == len(server.batches)  # each once
        assert sorted(server.deletes) == sorted(set(server.deletes))
        results = run_evaluation(REFERENCE, RESPONSES, config=config, cache=cache)
        assert server.chat_requests == [] and all("answer_f1" in r for r in results)
