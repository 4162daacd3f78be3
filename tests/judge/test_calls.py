"""The LLM judge over real HTTP, against the scripted OpenAI-compatible server in openai_stub:
parsing and cost, re-asks, retries, response-mode fallback, fatal errors, the concurrency bound,
the reply cache (also across a SIGKILL), dry runs, the cost budget, and keeping API keys out."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from fakes import Score, Sleeps, items_dataset
from openai_stub import (
    TRANSPORT_FAULTS,
    LlamaLike,
    Reply,
    StubServer,
    completion,
    context_exceeded,
    error,
    fault_reply,
    oracle,
    oracle_content,
    prompt_text,
)
from qa_eval import compute_aggregates, run_evaluation
from qa_eval.config import EvalConfig, parse_config
from qa_eval.errors import JudgeError, JudgeUnavailable
from qa_eval.io.files import write_data
from qa_eval.io.limits import dump_json
from qa_eval.judge.cache.store import CachedReply, ReplyCache, request_key
from qa_eval.judge.calls import Judge
from qa_eval.judge.replies import MAX_DEPTH, sent_schema
from qa_eval.judge.usage import Verdict
from qa_eval.metrics.answer.correctness import CorrectnessReply
from qa_eval.metrics.answer.relevance import relevance_reply
from qa_eval.metrics.custom import _reply_model

GOOD = json.dumps({"score": 7, "reason": "fine"})
QUESTION = [{"role": "user", "content": "Rate the answer from 0 to 10."}]


def judge_config(url: str, **llm: Any) -> EvalConfig:
    generation = {"provider": "openai", "base_url": url, "api_key": "x"}
    return parse_config({"llm": {"generation": generation, "retry_base": 0.001, **llm}})


def prompts(n: int) -> list[list[dict[str, str]]]:
    return [[{"role": "user", "content": f"Rate answer {i} from 0 to 10."}] for i in range(n)]


def ask(judge: Judge, messages: list[dict[str, str]] = QUESTION) -> Verdict[Score]:
    """One ask in its own event loop (a judge's client belongs to the loop of its first call:
    each judge here is used in one loop only, as a run does)."""
    return asyncio.run(judge.ask("score", messages, Score))


def ask_in_turn(judge: Judge, batches: list[list[dict[str, str]]]) -> list[Any]:
    """Asks one after the other in one loop; each outcome a Verdict or the exception raised."""

    async def run() -> list[Any]:
        outcomes: list[Any] = []
        for messages in batches:
            try:
                outcomes.append(await judge.ask("score", messages, Score))
            except Exception as e:
                outcomes.append(e)
        return outcomes

    return asyncio.run(run())


def ask_together(judge: Judge, batches: list[list[dict[str, str]]]) -> list[Any]:
    """Asks all at once (asyncio.gather) in one loop; each outcome a Verdict or an exception."""

    async def run() -> list[Any]:
        return await asyncio.gather(
            *(judge.ask("score", m, Score) for m in batches), return_exceptions=True
        )

    return asyncio.run(run())


def formats(server: StubServer) -> list[str | None]:
    """The response_format type of each chat request (None: plain text)."""
    return [(r.get("response_format") or {}).get("type") for r in server.chat_requests]


# --- one judge, one ask ------------------------------------------------------------------------


def test_valid_reply_is_parsed_and_priced() -> None:
    with StubServer(lambda req, n: completion(GOOD, 1000, 500)) as server:
        judge = Judge(judge_config(server.url))
        verdict = ask(judge)
    assert verdict.value == Score(score=7, reason="fine")
    assert (verdict.prompt_tokens, verdict.completion_tokens, verdict.cached) == (1000, 500, False)
    # gpt-4o-mini: $0.15 per 1M input tokens, $0.60 per 1M output tokens:
    # (1000 * 0.15 + 500 * 0.60) / 1_000_000 = $0.00045.
    assert verdict.cost == pytest.approx(0.00045, rel=1e-12)
    usage = judge.usage["score"]
    assert (usage.calls, usage.prompt_tokens, usage.completion_tokens) == (1, 1000, 500)
    assert usage.cost == pytest.approx(0.00045, rel=1e-12)
    assert judge.total.cost == pytest.approx(0.00045, rel=1e-12)
    request = server.chat_requests[0]
    assert request["model"] == "gpt-4o-mini"
    assert request["messages"] == QUESTION
    assert request["response_format"]["type"] == "json_schema"
    assert request["response_format"]["json_schema"]["schema"] == sent_schema(Score)


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        ("I would say about seven.", "the reply holds no JSON object"),
        # The field and the count are qa-eval's words; between them is pydantic's message.
        ('{"score": "high"}', r"score: \S.* \(1 problem\(s\)\)"),
    ],
)
def test_malformed_reply_is_reasked_once_with_the_problem(bad: str, problem: str) -> None:
    def script(request: dict[str, Any], number: int) -> Reply:
        return completion(bad if number == 0 else GOOD, 100, 10)

    with StubServer(script) as server:
        judge = Judge(judge_config(server.url))
        verdict = ask(judge)
    assert verdict.value.score == 7
    assert len(server.chat_requests) == 2
    second = server.chat_requests[1]["messages"]
    assert second[: len(QUESTION)] == QUESTION
    assert second[-2] == {"role": "assistant", "content": bad}
    assert second[-1]["role"] == "user"
    assert re.search(problem, second[-1]["content"]), second[-1]["content"]
    # Both calls' tokens are counted (and priced) for the verdict.
    assert (verdict.prompt_tokens, verdict.completion_tokens) == (200, 20)
    assert judge.usage["score"].calls == 2


def test_json_that_breaks_the_schema_twice_is_a_judge_error() -> None:
    with StubServer(lambda req, n: completion('{"score": "high"}', 100, 10)) as server:
        judge = Judge(judge_config(server.url))
        with pytest.raises(JudgeError, match="invalid judge reply"):
            ask(judge)
    assert len(server.chat_requests) == 2
    assert judge.usage["score"].failures == 1


def test_replies_with_no_json_are_asked_again_up_to_max_attempts() -> None:
    # A different reply each time: each re-ask is a new exchange, up to max_attempts replies.
    with StubServer(lambda req, n: completion(f"no idea ({n})", 100, 10)) as server:
        judge = Judge(judge_config(server.url))
        with pytest.raises(JudgeError) as raised:
            ask(judge)
    assert len(server.chat_requests) == judge.config.max_attempts == 6
    assert str(raised.value).startswith("invalid judge reply after 6 attempts: ")
    usage = judge.usage["score"]
    assert (usage.calls, usage.reasks, usage.retries, usage.failures) == (6, 5, 0, 1)


def test_an_identical_exchange_is_not_repeated() -> None:
    """A model at temperature 0 gives the same reply to the same re-ask: asking it a third time
    would repeat the second exchange exactly, so it is not asked (and the error says so)."""
    with StubServer(lambda req, n: completion("no idea", 100, 10)) as server:
        judge = Judge(judge_config(server.url))
        with pytest.raises(JudgeError) as raised:
            ask(judge)
    assert len(server.chat_requests) == 2
    assert str(raised.value) == (
        "invalid judge reply after 2 attempts, the same reply again: the reply holds no JSON object"
    )
    usage = judge.usage["score"]
    assert (usage.calls, usage.reasks, usage.retries, usage.failures) == (2, 1, 0, 1)
    # every request sent differs from every other
    sent = [json.dumps(r, sort_keys=True) for r in server.chat_requests]
    assert len(set(sent)) == len(sent)


def test_a_garbled_reask_is_a_fault_not_the_end() -> None:
    replies = ["no idea", "still prose", GOOD]
    with StubServer(lambda req, n: completion(replies[n], 100, 10)) as server:
        judge = Judge(judge_config(server.url))
        verdict = ask(judge)
    assert verdict.value.score == 7
    assert len(server.chat_requests) == 3


def test_identical_asks_in_flight_share_one_call() -> None:
    with StubServer(lambda req, n: Reply(**vars(completion(GOOD)) | {"delay": 0.2})) as server:
        judge = Judge(judge_config(server.url))

        async def both() -> list[Any]:
            messages = [{"role": "user", "content": "Rate the answer from 0 to 10."}]
            return await asyncio.gather(*(judge.ask("score", messages, Score) for _ in range(3)))

        verdicts = asyncio.run(both())
    assert len(server.chat_requests) == 1
    assert [v.cached for v in verdicts].count(False) == 1
    assert all(v.value.score == 7 for v in verdicts)


# --- retries -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "wait"), [({"Retry-After": "2"}, 2.0), ({"retry-after-ms": "1500"}, 1.5)]
)
def test_rate_limit_waits_as_long_as_the_server_says(headers: dict[str, str], wait: float) -> None:
    def script(request: dict[str, Any], number: int) -> Reply:
        return error(429, "slow down", headers) if number == 0 else completion(GOOD)

    sleeps = Sleeps()
    with StubServer(script) as server:
        judge = Judge(judge_config(server.url), sleep=sleeps)
        verdict = ask(judge)
    assert verdict.value.score == 7
    assert sleeps.calls == [wait]
    assert len(server.chat_requests) == 2
    assert judge.total.retries == 1


def test_server_error_is_retried() -> None:
    def script(request: dict[str, Any], number: int) -> Reply:
        return error(500, "internal error") if number == 0 else completion(GOOD)

    sleeps = Sleeps()
    with StubServer(script) as server:
        judge = Judge(judge_config(server.url), sleep=sleeps)
        verdict = ask(judge)
    assert verdict.value.score == 7
    assert len(server.chat_requests) == 2
    assert len(sleeps.calls) == 1 and 0 <= sleeps.calls[0] <= 0.01


def test_persistent_server_error_gives_up_after_max_attempts() -> None:
    sleeps = Sleeps()
    with StubServer(lambda req, n: error(500, "internal error")) as server:
        judge = Judge(judge_config(server.url, max_attempts=3), sleep=sleeps)
        with pytest.raises(JudgeError, match="gave up after 3 attempts"):
            ask(judge)
    assert len(server.chat_requests) == 3
    assert len(sleeps.calls) == 2
    # 3 attempts are 2 retries: the last failed attempt is a failure, not a retry
    assert (judge.usage["score"].retries, judge.usage["score"].failures) == (2, 1)


def test_slow_reply_times_out_and_is_retried() -> None:
    def script(request: dict[str, Any], number: int) -> Reply:
        reply = completion(GOOD)
        reply.delay = 1.0 if number == 0 else 0.0
        return reply

    with StubServer(script) as server:
        judge = Judge(judge_config(server.url, timeout=0.2))
        started = time.monotonic()
        verdict = ask(judge)
        elapsed = time.monotonic() - started
    assert verdict.value.score == 7
    assert len(server.chat_requests) == 2
    assert judge.total.retries == 1
    assert elapsed < 0.9  # the first call was abandoned, not waited for


# --- response modes ----------------------------------------------------------------------------


def test_rejected_json_schema_falls_back_to_json_object_for_the_rest_of_the_run() -> None:
    def script(request: dict[str, Any], number: int) -> Reply:
        if (request.get("response_format") or {}).get("type") == "json_schema":
            return error(500, "failed to parse grammar from JSON schema")
        return completion(GOOD)

    with StubServer(script) as server:
        judge = Judge(judge_config(server.url), sleep=Sleeps())
        outcomes = ask_in_turn(judge, prompts(3))
    assert [o.value.score for o in outcomes] == [7, 7, 7]
    assert formats(server) == ["json_schema", "json_object", "json_object", "json_object"]
    # json_object still carries the schema (llama.cpp's servers enforce it there)
    for request in server.chat_requests[1:]:
        assert request["response_format"]["schema"] == sent_schema(Score)
    assert judge.mode == "json_object+schema"
    signature = judge.signature()
    assert signature["response_mode"] == "json_object+schema"
    assert signature["response_modes"] == {"json_object+schema": 3}
    assert signature["response_mode_reason"] == (
        "json_schema refused (500): failed to parse grammar from JSON schema"
    )
    assert judge.total.retries == 0 and judge.total.calls == 3


def test_asks_waiting_for_a_slot_use_the_mode_found_meanwhile() -> None:
    def script(request: dict[str, Any], number: int) -> Reply:
        if (request.get("response_format") or {}).get("type") == "json_schema":
            return error(500, "json_schema response_format is not supported")
        return completion(GOOD)

    with StubServer(script) as server:
        judge = Judge(judge_config(server.url, concurrency=1), sleep=Sleeps())
        outcomes = ask_together(judge, prompts(6))
    assert all(isinstance(o, Verdict) for o in outcomes), outcomes
    assert formats(server) == ["json_schema"] + ["json_object"] * 6


def test_rejected_json_object_falls_back_to_text() -> None:
    def script(request: dict[str, Any], number: int) -> Reply:
        if request.get("response_format"):
            return error(400, "response_format is not supported")
        return completion("Here it is:\n```json\n" + GOOD + "\n```")

    with StubServer(script) as server:
        judge = Judge(judge_config(server.url), sleep=Sleeps())
        outcomes = ask_in_turn(judge, prompts(2))
    assert [o.value.score for o in outcomes] == [7, 7]
    assert formats(server) == ["json_schema", "json_object", "json_object", None, None]
    assert ["schema" in (r.get("response_format") or {}) for r in server.chat_requests] == [
        False,  # json_schema holds it under json_schema
        True,
        False,
        False,
        False,
    ]
    assert judge.mode == "text"
    assert judge.signature()["response_modes"] == {"text": 2}


# --- fatal errors and concurrency --------------------------------------------------------------


def test_unauthorized_stops_the_judge() -> None:
    with StubServer(lambda req, n: error(401, "Incorrect API key provided")) as server:
        judge = Judge(judge_config(server.url, concurrency=1), sleep=Sleeps())
        in_turn = ask_in_turn(judge, prompts(3))
        assert len(server.chat_requests) == 1
        # Asks already waiting for a slot when the 401 arrives must not call either.
        judge = Judge(judge_config(server.url, concurrency=1), sleep=Sleeps())
        together = ask_together(judge, prompts(5))
        assert len(server.chat_requests) == 2
    assert all(isinstance(o, JudgeUnavailable) for o in [*in_turn, *together])
    assert "401" in str(in_turn[0]) and "Incorrect API key" in str(in_turn[0])


def test_concurrency_is_bounded() -> None:
    def script(request: dict[str, Any], number: int) -> Reply:
        reply = completion(GOOD)
        reply.delay = 0.05
        return reply

    with StubServer(script) as server:
        judge = Judge(judge_config(server.url, concurrency=4))
        outcomes = ask_together(judge, prompts(40))
    assert all(isinstance(o, Verdict) for o in outcomes)
    assert len(server.chat_requests) == 40
    assert 2 <= server.peak <= 4
    assert 2 <= judge.peak_in_flight <= 4


# --- cache -------------------------------------------------------------------------------------


def test_cached_reply_makes_no_call_and_keeps_its_cost(tmp_path: Path) -> None:
    with StubServer(lambda req, n: completion(GOOD, 1000, 500)) as server:
        cache = ReplyCache(tmp_path / "judge.sqlite3")
        judge = Judge(judge_config(server.url), cache=cache)
        first = ask(judge)
        assert len(server.chat_requests) == 1
        again = Judge(judge_config(server.url), cache=cache)
        second, other = ask_in_turn(again, [QUESTION, prompts(1)[0]])
        assert second.cached and not first.cached
        assert second.value == first.value
        assert (second.prompt_tokens, second.completion_tokens) == (1000, 500)
        assert second.cost == first.cost == pytest.approx(0.00045, rel=1e-12)
        assert again.total.cached == 1 and again.total.calls == 1
        assert len(server.chat_requests) == 2
        assert server.chat_requests[1]["messages"] == prompts(1)[0]
        assert not other.cached
        assert len(cache) == 2
        cache.close()


# --- whole runs --------------------------------------------------------------------------------


dataset = items_dataset


def run_config(url: str, api_key: str = "x", **llm: Any) -> dict[str, Any]:
    return {
        "llm": {
            "generation": {"provider": "openai", "base_url": url, "api_key": api_key},
            "embedding": {
                "provider": "openai",
                "model": "text-embedding-3-small",
                "base_url": url,
                "api_key": api_key,
            },
            "retry_base": 0.001,
            **llm,
        }
    }


def test_run_uses_the_cache_across_runs(tmp_path: Path) -> None:
    reference, responses = dataset(4)
    cache = tmp_path / "judge.sqlite3"
    with StubServer(oracle()) as server:
        config = run_config(server.url, concurrency=4)
        first = run_evaluation(reference, responses, config=config, cache=cache)
        calls = len(server.chat_requests)
        assert calls == 8
        for result in first:
            assert isinstance(result["answer_recall"], float), result
            assert isinstance(result["answer_relevance"], float), result
            assert "answer_correctness_error" not in result
            assert "answer_relevance_error" not in result
        second = run_evaluation(reference, responses, config=config, cache=cache)
        assert len(server.chat_requests) == calls
        assert second == first
        assert second.signature["usage"]["total"]["cached"] == 8
        assert second.signature["usage"]["total"]["calls"] == 0
        third = run_evaluation(reference, responses, config=config, cache=False)
        assert len(server.chat_requests) == 2 * calls
        assert third == first


CHILD = """
import json, sys
from qa_eval import run_evaluation
spec = json.loads(open(sys.argv[1]).read())
run_evaluation(spec["reference"], spec["responses"], config=spec["config"], cache=spec["cache"])
"""


def _key(judge: Judge, request: dict[str, Any]) -> str:
    """The cache key of a chat request the judge made (its schema told by the prompt marker)."""
    text = prompt_text(request)
    schema = CorrectnessReply if "[qa-eval:answer-correctness]" in text else relevance_reply(3)
    return request_key(judge.request(request["messages"], schema))


def test_killed_run_repeats_no_finished_call(tmp_path: Path) -> None:
    reference, responses = dataset(30)
    total = 60  # answer correctness and answer relevance for each question
    cache = tmp_path / "judge.sqlite3"
    state = {"delay": 0.1}

    def script(request: dict[str, Any], number: int) -> Reply:
        reply = completion(oracle_content(request), 50, 10)
        reply.delay = state["delay"]
        return reply

    with StubServer(script) as server:
        spec = tmp_path / "spec.json"
        spec.write_text(
            json.dumps(
                {
                    "reference": reference,
                    "responses": responses,
                    "config": run_config(server.url, concurrency=2),
                    "cache": str(cache),
                }
            )
        )
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(spec)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            deadline = time.monotonic() + 60
            while len(server.chat_requests) < 6:
                assert child.poll() is None, child.stderr.read().decode() if child.stderr else ""
                assert time.monotonic() < deadline, "the child made no judge calls"
                time.sleep(0.005)
            child.send_signal(signal.SIGKILL)
        finally:
            child.kill()
            child.wait()
            if child.stderr:
                child.stderr.close()
        assert child.returncode == -signal.SIGKILL
        # Let the server finish reading and answering what the child had sent before it died.
        time.sleep(0.05)
        while server.in_flight and time.monotonic() < deadline:
            time.sleep(0.01)
        killed_requests = list(server.chat_requests)
        assert len(killed_requests) < total

        db = sqlite3.connect(cache)
        try:
            stored = {row[0] for row in db.execute("SELECT key FROM replies")}
        finally:
            db.close()
        judge = Judge(parse_config(run_config(server.url)))
        first_keys = {_key(judge, r) for r in killed_requests}
        assert stored, "no finished reply was kept"
        assert stored <= first_keys

        state["delay"] = 0.0
        before = len(killed_requests)
        assert len(server.chat_requests) == before
        results = run_evaluation(
            reference, responses, config=run_config(server.url, concurrency=8), cache=cache
        )
        rerun = server.chat_requests[before:]
    rerun_keys = [_key(judge, r) for r in rerun]
    assert len(rerun) == total - len(stored)
    assert len(set(rerun_keys)) == len(rerun_keys)
    assert not set(rerun_keys) & stored
    assert len(set(rerun_keys) | stored) == total
    assert results.signature["usage"]["total"]["cached"] == len(stored)
    for result in results:
        assert "answer_recall" in result and "answer_relevance" in result, result


def test_dry_run_makes_no_call(tmp_path: Path) -> None:
    reference, responses = dataset(3)
    with StubServer(oracle()) as server:
        config = parse_config(run_config(server.url))
        judge = Judge(config, dry_run=True)
        results = run_evaluation(reference, responses, config=config, judge=judge)
        # the rubric fallback of answer relevance is counted with the call it may follow
        assert judge.plan.calls == {
            "answer_correctness": 3,
            "answer_relevance": 3,
            "answer_relevance_rubric": 3,
        }
        assert all(judge.plan.prompt_tokens[m] > 0 for m in judge.plan.calls)
        plain = run_evaluation(
            reference,
            responses,
            config=run_config(server.url),
            dry_run=True,
            cache=tmp_path / "c.sqlite3",
        )
        assert server.chat_requests == []
    for result in [*results, *plain]:
        assert result["answer_correctness_error"] == "not computed (dry run)"
        assert result["answer_relevance_error"] == "not computed (dry run)"
        assert "answer_recall" not in result
    assert plain.signature["options"]["dry_run"] is True


def test_max_cost_stops_calls() -> None:
    reference, responses = dataset(5)

    def script(request: dict[str, Any], number: int) -> Reply:
        return completion(oracle_content(request), prompt_tokens=1, completion_tokens=7)

    prices = {"gpt-4o-mini": {"input": 1_000_000, "output": 0}}  # $1 per call
    with StubServer(script) as server:
        results = run_evaluation(
            reference,
            responses,
            config=run_config(server.url, concurrency=1, prices=prices),
            cache=False,
            max_cost=1.5,
        )
        calls = len(server.chat_requests)
    assert calls == 2  # the second call starts at $1 < $1.5; none after it, at $2
    assert calls < len(reference[0]["questions"])
    errors = [
        r.get(key)
        for r in results
        for key in ("answer_correctness_error", "answer_relevance_error")
    ]
    assert errors.count("budget exceeded") == 2 * len(results) - calls
    assert {e for e in errors if e is not None} == {"budget exceeded"}
    assert results.signature["usage"]["total"]["cost"] == pytest.approx(2.0)


class _Ledger:
    """A shared budget's total in memory (what ``qa_eval.ray`` keeps in a Ray actor)."""

    def __init__(self) -> None:
        self.total = 0.0
        self.reads = 0

    async def spent(self) -> float:
        self.reads += 1
        return self.total

    async def spend(self, cost: float) -> None:
        self.total += cost


def test_runs_sharing_a_budget_stop_at_its_total_as_one_run_does() -> None:
    """Two runs of 3 questions spend from one shared budget of $3.5 (calls of $1, one at a
    time): the first makes three calls, the second one, as one run of all 6 questions would
    (4 calls); each run's own total alone would have let the second make three more."""
    from qa_eval.run.options import RunOptions

    reference, responses = dataset(6)
    halves = [
        ([{**reference[0], "questions": reference[0]["questions"][part]}], responses[part])
        for part in (slice(0, 3), slice(3, 6))
    ]

    def script(request: dict[str, Any], number: int) -> Reply:
        return completion(oracle_content(request), prompt_tokens=1, completion_tokens=7)

    prices = {"gpt-4o-mini": {"input": 1_000_000, "output": 0}}  # $1 per call
    ledger = _Ledger()
    with StubServer(script) as server:
        config = run_config(server.url, concurrency=1, prices=prices)
        budget: dict[str, Any] = {"cache": False, "max_cost": 3.5, "disable": ["answer_relevance"]}
        whole = run_evaluation(reference, responses, config, **budget)
        one = len(server.chat_requests)
        options = RunOptions.of(config, **budget)
        shared = dataclasses.replace(options, shared_budget=ledger)
        parts = [run_evaluation(ref, resp, options=shared) for ref, resp in halves]
        spread = len(server.chat_requests) - one
    # Read before each of the 4 calls, and by the 2 asks the spent total refused.
    assert one == spread == 4 and ledger.total == 4.0 and ledger.reads == 6
    assert [len(_judged_ids(p)) for p in parts] == [3, 1]
    assert [p.signature["usage"]["total"]["cost"] for p in parts] == [3.0, 1.0]
    assert parts[1].signature["skipped_metric_values"] == {"budget": 2}
    assert parts[1][2]["answer_correctness_error"] == "budget exceeded"
    assert whole.signature["usage"]["total"]["cost"] == 4.0


def _judged_ids(results: list[dict[str, Any]]) -> list[str]:
    return [r["question_id"] for r in results if "answer_recall" in r]


def test_api_key_is_never_stored(tmp_path: Path) -> None:
    secret = "sk-secret-123"
    reference, responses = dataset(2)
    folder = tmp_path / "cache"
    with StubServer(oracle()) as server:
        config = run_config(server.url, api_key=secret)
        results = run_evaluation(reference, responses, config=config, cache=folder / "j.sqlite3")
        assert len(server.chat_requests) == 4
    files = [p for p in folder.iterdir() if p.is_file()]
    assert files
    for path in files:
        assert secret.encode() not in path.read_bytes(), path
    assert all("answer_recall" in r for r in results)
    assert secret not in str(results)
    assert secret not in str(results.signature)
    assert secret not in json.dumps(results.signature, default=str)
    assert secret not in repr(parse_config(config))


# --- what a hostile or broken server sends -----------------------------------------------------


def _first_then(kind: str) -> Any:
    """A script: the first call gets the fault ``kind``, every later one a good reply."""

    def script(request: dict[str, Any], number: int) -> Reply:
        return fault_reply(kind) if number == 0 else completion(GOOD)

    return script


@pytest.mark.parametrize("kind", TRANSPORT_FAULTS)
def test_every_transport_fault_is_retried(kind: str) -> None:
    sleeps = Sleeps()
    with StubServer(_first_then(kind)) as server:
        judge = Judge(judge_config(server.url), sleep=sleeps)
        verdict = ask(judge)
    assert verdict.value.score == 7
    assert len(server.chat_requests) == 2
    assert judge.total.retries == 1 and judge.total.failures == 0
    assert judge.total.calls == 1  # the fault is not a call that answered
    assert len(sleeps.calls) == 1
    # A bad Retry-After backs off instead (uniform(0, retry_base * 2)), never waits "soon".
    assert 0 <= sleeps.calls[0] <= (0.05 if kind == "429" else 0.002)


@pytest.mark.parametrize("kind", TRANSPORT_FAULTS)
def test_a_fault_on_every_attempt_is_the_metric_error(kind: str) -> None:
    with StubServer(lambda req, n: fault_reply(kind)) as server:
        judge = Judge(judge_config(server.url, max_attempts=3), sleep=Sleeps())
        outcomes = ask_in_turn(judge, [QUESTION])
    (outcome,) = outcomes
    assert isinstance(outcome, JudgeError), outcome
    assert str(outcome).startswith("gave up after 3 attempts; last: ")
    assert len(server.chat_requests) == 3
    assert judge.usage["score"].failures == 1


def test_a_body_that_is_not_json_is_named_in_the_error() -> None:
    with StubServer(lambda req, n: fault_reply("not-json")) as server:
        judge = Judge(judge_config(server.url, max_attempts=2), sleep=Sleeps())
        (outcome,) = ask_in_turn(judge, [QUESTION])
    assert "unreadable reply: JSONDecodeError" in str(outcome)
    with StubServer(lambda req, n: fault_reply("html")) as server:
        judge = Judge(judge_config(server.url, max_attempts=2), sleep=Sleeps())
        (outcome,) = ask_in_turn(judge, [QUESTION])
    assert "not a chat completion" in str(outcome) and "text, not JSON" in str(outcome)


@pytest.mark.parametrize(
    ("value", "wait"),
    [
        ("soon", None),
        ("123abc", None),
        ("Wed, 99 Foo 2024 25:61:00 GMT", None),
        ("-5", None),
        ("nan", None),
        ("", None),
        ("0x10", None),
        ("1e400", 120.0),
        ("99999999999", 120.0),
        ("Fri, 31 Dec 9999 23:59:59 GMT", 120.0),
        ("Thu, 01 Jan 1970 00:00:00 GMT", 0.0),
        ("3", 3.0),
    ],
)
def test_retry_after_that_is_not_a_delay_backs_off(value: str, wait: float | None) -> None:
    def script(request: dict[str, Any], number: int) -> Reply:
        return error(429, "slow down", {"Retry-After": value}) if number == 0 else completion(GOOD)

    sleeps = Sleeps()
    with StubServer(script) as server:
        judge = Judge(judge_config(server.url), sleep=sleeps)
        verdict = ask(judge)
    assert verdict.value.score == 7
    (slept,) = sleeps.calls
    if wait is None:  # backoff: uniform(0, retry_base * 2^1)
        assert 0 <= slept <= 0.002
    else:
        assert slept == wait


@pytest.mark.parametrize(
    "header", [{"retry-after-ms": "soon"}, {"retry-after-ms": "-1"}, {"retry-after-ms": "nan"}]
)
def test_malformed_retry_after_ms_backs_off(header: dict[str, str]) -> None:
    def script(request: dict[str, Any], number: int) -> Reply:
        return error(429, "slow down", header) if number == 0 else completion(GOOD)

    sleeps = Sleeps()
    with StubServer(script) as server:
        judge = Judge(judge_config(server.url), sleep=sleeps)
        assert ask(judge).value.score == 7
    (slept,) = sleeps.calls
    assert 0 <= slept <= 0.002


BIG = 10**30
CLAIMS_OK = {
    "reference_claims_count": 2,
    "actual_claims_count": 1,
    "matching_claims_count": 1,
    "reason": "ok",
}


@pytest.mark.parametrize(
    "bad",
    [
        json.dumps({**CLAIMS_OK, "reference_claims_count": BIG}),
        json.dumps({**CLAIMS_OK, "actual_claims_count": 10**18}),
        '{"reference_claims_count": NaN, "actual_claims_count": 1, "matching_claims_count": 0}',
        '{"reference_claims_count": 1e400, "actual_claims_count": 1, "matching_claims_count": 0}',
        '{"reference_claims_count": 2, "actual_claims_count": 1, "matching_claims_count": 0, '
        '"reason": ' + "[" * 5000 + "]" * 5000 + "}",
    ],
    ids=["10^30", "10^18", "NaN", "Infinity", "5000-deep"],
)
def test_reply_values_are_checked_before_they_are_used_or_cached(tmp_path: Path, bad: str) -> None:
    good = json.dumps(CLAIMS_OK)

    def script(request: dict[str, Any], number: int) -> Reply:
        return completion(bad if number == 0 else good)

    messages = [{"role": "user", "content": "count the claims"}]
    with StubServer(script) as server:
        cache = ReplyCache(tmp_path / "c.sqlite3")
        judge = Judge(judge_config(server.url), cache=cache, sleep=Sleeps())
        verdict = asyncio.run(judge.ask("answer_correctness", messages, CorrectnessReply))
        assert verdict.value.reference_claims_count == 2
        assert len(server.chat_requests) == 2  # the bad reply was re-asked, with its problem
        assert server.chat_requests[1]["messages"][-1]["content"].startswith(
            "That reply could not be used"
        )
        stored = cache.get(request_key(judge.request(messages, CorrectnessReply)))
        assert stored is not None and json.loads(stored.content) == CLAIMS_OK
        cache.close()
    # Persistently bad: the metric's error, nothing cached.
    with StubServer(lambda req, n: completion(bad)) as server:
        cache = ReplyCache(tmp_path / "d.sqlite3")
        judge = Judge(judge_config(server.url), cache=cache, sleep=Sleeps())
        with pytest.raises(JudgeError, match="invalid judge reply"):
            asyncio.run(judge.ask("answer_correctness", messages, CorrectnessReply))
        assert len(cache) == 0
        cache.close()


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (12345678901234567890123, "an integer beyond 64 bits"),
        (-(2**63) - 1, "an integer beyond 64 bits"),
        (float("nan"), "not a finite number"),
        (float("-inf"), "not a finite number"),
    ],
)
def test_custom_outputs_must_be_writable(value: Any, problem: str) -> None:
    from qa_eval.judge.replies import parse_reply

    schema = _reply_model("ids", ("id",))
    with pytest.raises(ValueError, match=problem):
        parse_reply(json.dumps({"id": value, "reason": "r"}), schema)
    deep: Any = 1
    for _ in range(MAX_DEPTH + 1):
        deep = [deep]
    with pytest.raises(ValueError, match="nested deeper than"):
        parse_reply(json.dumps({"id": deep}), schema)
    # The largest values that can be written are kept as they are; lone surrogates become U+FFFD.
    for big in (2**63 - 1, -(2**63)):
        ok = parse_reply(json.dumps({"id": big, "reason": "a\ud800b"}), schema)
        assert ok.model_dump() == {"id": big, "reason": "a\ufffdb"}
        dump_json(ok.model_dump())


def test_a_run_with_hostile_custom_outputs_writes_its_results(tmp_path: Path) -> None:
    reference, responses = dataset(3)
    replies = [
        '{"item_id": 12345678901234567890123, "reason": "20-digit id"}',
        '{"item_id": NaN, "reason": "nan"}',
        '{"item_id": ' + "[" * 300 + "]" * 300 + ', "reason": "deep"}',
    ]

    def script(request: dict[str, Any], number: int) -> Reply:
        text = prompt_text(request)
        for i, reply in enumerate(replies):
            if f"What is item {i}?" in text:
                return completion(reply)
        return completion('{"reason": "?"}')

    config = run_config("") | {
        "custom_evaluations": [
            {
                "name": "ids",
                "inputs": ["question", "actual_answer"],
                "instructions": "Give the item's id.",
                "outputs": {"item_id": "the id"},
            }
        ]
    }
    with StubServer(script) as server:
        config["llm"]["generation"]["base_url"] = server.url
        config["llm"]["embedding"]["base_url"] = server.url
        results = run_evaluation(
            reference,
            responses,
            config=config,
            disable=["answer_correctness", "answer_relevance"],
            cache=tmp_path / "c.sqlite3",
        )
    assert [r["item_id"] for r in results] == [None, None, None]
    assert all(r["ids_error"].startswith("invalid judge reply after 2 attempts") for r in results)
    for suffix in ("json", "jsonl", "yaml"):
        write_data(tmp_path / f"results.{suffix}", results)
        assert (tmp_path / f"results.{suffix}").stat().st_size > 0


def test_a_bad_cached_reply_is_a_miss_not_a_crash(tmp_path: Path) -> None:
    reference, responses = dataset(4)
    cache_path = tmp_path / "c.sqlite3"
    with StubServer(oracle()) as server:
        config = run_config(server.url)
        clean = run_evaluation(reference, responses, config=config, cache=cache_path)
        calls = len(server.chat_requests)
        assert calls == 8
        # Spoil every stored reply, each a different way (as a bad writer or a bad day would).
        db = sqlite3.connect(cache_path)
        keys = [row[0] for row in db.execute("SELECT key FROM replies ORDER BY key")]
        spoilt = [
            ("content", json.dumps({**CLAIMS_OK, "reference_claims_count": BIG})),
            ("content", '{"questions": [{"question": "q", "noncommittal": NaN}]}'),
            ("content", "[" * 100_000 + "]" * 100_000),
            ("content", b"\x00\xff binary"),
            ("prompt_tokens", "many"),
            ("completion_tokens", -1),
            ("prompt_tokens", 2**62),
            ("content", "no JSON at all"),
        ]
        for key, (column, value) in zip(keys, spoilt):
            db.execute(f"UPDATE replies SET {column} = ? WHERE key = ?", (value, key))
        db.commit()
        db.close()
        again = run_evaluation(reference, responses, config=config, cache=cache_path)
        assert len(server.chat_requests) == 2 * calls  # every spoilt entry was asked again
        assert again == clean
        # ... and replaced: a third run makes no call.
        third = run_evaluation(reference, responses, config=config, cache=cache_path)
        assert len(server.chat_requests) == 2 * calls
        assert third == clean


def test_twenty_percent_transport_faults_give_the_values_of_a_clean_run() -> None:
    reference, responses = dataset(60)
    with StubServer(oracle()) as server:
        clean = run_evaluation(
            reference, responses, config=run_config(server.url, concurrency=8), cache=False
        )
    with StubServer(oracle(fault_rate=0.2, seed=7, faults=TRANSPORT_FAULTS)) as server:
        faulty = run_evaluation(
            reference, responses, config=run_config(server.url, concurrency=8), cache=False
        )
        requests = len(server.chat_requests)
    assert requests > len(clean) * 2  # faults happened and were retried
    for a, b in zip(clean, faulty):
        errors = {k: v for k, v in b.items() if k.endswith("_error")}
        if errors:  # only after max_attempts (6) faults in a row: an explicit error
            assert all(str(v).startswith("gave up after 6 attempts") for v in errors.values())
        else:
            assert a == b
    assert sum(1 for r in faulty if any(k.endswith("_error") for k in r)) <= 1
    assert faulty.signature["usage"]["total"]["retries"] > 0


def test_a_judge_that_refuses_every_connection_stops_the_judge() -> None:
    with StubServer(lambda req, n: completion(GOOD)) as server:
        url = server.url
    # The server is gone: nothing listens on its port any more.
    sleeps = Sleeps()
    judge = Judge(judge_config(url, max_attempts=3, concurrency=1), sleep=sleeps)
    outcomes = ask_in_turn(judge, prompts(4))
    # One call tries max_attempts times; then every ask stops at once, as after a 401.
    assert all(isinstance(o, JudgeUnavailable) for o in outcomes)
    assert len({id(o) for o in outcomes}) == 1
    assert str(outcomes[0]).startswith(
        f"cannot reach the judge at {url}: every connection failed (3 attempts over "
    )
    assert "\n" not in str(outcomes[0])
    assert len(sleeps.calls) == 2
    assert (judge.total.retries, judge.total.failures) == (2, 1)


def test_refused_connections_while_other_calls_get_replies_are_the_metric_error() -> None:
    """Connections refused for one call while the endpoint answers others (a flaky balancer,
    a restart): that call's error after its attempts, not the end of the run."""
    from qa_eval.judge.clients import sdk_client

    with StubServer(lambda req, n: completion(GOOD)) as gone:
        dead_config = judge_config(gone.url)
    with StubServer(lambda req, n: Reply(**vars(completion(GOOD)) | {"delay": 0.05})) as server:
        config = judge_config(server.url, max_attempts=3)
        assert config.generation is not None and dead_config.generation is not None
        real = sdk_client(config.generation, 5.0, max_retries=0)
        dead = sdk_client(dead_config.generation, 5.0, max_retries=0)

        class Refusing:
            """Sends prompt 0 to a port nothing listens on; the others to the server."""

            def __init__(self) -> None:
                self.chat = self
                self.completions = self

            async def create(self, **kwargs: Any) -> Any:
                if "answer 0 " in kwargs["messages"][0]["content"]:
                    await asyncio.sleep(0.1)  # the others' replies arrive meanwhile
                    return await dead.chat.completions.create(**kwargs)
                return await real.chat.completions.create(**kwargs)

        judge = Judge(config, client=Refusing(), sleep=Sleeps())
        outcomes = ask_together(judge, prompts(3))
    assert isinstance(outcomes[0], JudgeError), outcomes[0]
    assert str(outcomes[0]).startswith("gave up after 3 attempts; last: APIConnectionError")
    assert all(isinstance(o, Verdict) for o in outcomes[1:])


@pytest.mark.parametrize("kind", ["not-json", "html", "reset"])
def test_a_run_whose_every_reply_is_unreadable_finishes_with_errors(
    tmp_path: Path, kind: str
) -> None:
    reference, responses = dataset(3)
    with StubServer(lambda req, n: fault_reply(kind)) as server:
        results = run_evaluation(
            reference,
            responses,
            config=run_config(server.url, max_attempts=2),
            cache=tmp_path / "c.sqlite3",
        )
    for result in results:
        assert result["answer_correctness_error"].startswith("gave up after 2 attempts")
        assert result["answer_relevance_error"].startswith("gave up after 2 attempts")
        assert "answer_recall" not in result and "answer_relevance" not in result
    assert len(ReplyCache(tmp_path / "c.sqlite3")) == 0  # nothing cached
    write_data(tmp_path / "results.json", results)


@pytest.mark.parametrize(
    ("content", "ok"),
    [
        (
            [{"type": "text", "text": '{"score": 7, '}, {"type": "text", "text": '"reason": "x"}'}],
            True,
        ),
        (7, False),
        ({"text": GOOD}, False),
    ],
)
def test_message_content_that_is_not_a_string(content: Any, ok: bool) -> None:
    """Content parts (a list of texts) are joined; any other non-text content is a fault."""

    def script(request: dict[str, Any], number: int) -> Reply:
        reply = completion(GOOD)
        if number == 0:
            reply.body["choices"][0]["message"]["content"] = content
        return reply

    with StubServer(script) as server:
        judge = Judge(judge_config(server.url), sleep=Sleeps())
        verdict = ask(judge)
    assert verdict.value.score == 7
    assert len(server.chat_requests) == (1 if ok else 2)
    assert judge.total.retries == (0 if ok else 1)


def test_any_other_client_failure_is_a_retried_fault() -> None:
    """A client other than the SDK (litellm) may raise its own exceptions: faults too."""
    from qa_eval.judge.clients import sdk_client

    with StubServer(lambda req, n: completion(GOOD)) as server:
        config = judge_config(server.url)
        assert config.generation is not None
        real = sdk_client(config.generation, 5.0, max_retries=0)
        calls = []

        class Flaky:
            """The SDK client's shape; its first call fails with an exception of its own."""

            def __init__(self) -> None:
                self.chat = self
                self.completions = self

            async def create(self, **kwargs: Any) -> Any:
                calls.append(kwargs)
                if len(calls) == 1:
                    raise KeyError("choices")
                return await real.chat.completions.create(**kwargs)

        judge = Judge(config, client=Flaky(), sleep=Sleeps())
        verdict = ask(judge)
    assert verdict.value.score == 7
    assert len(calls) == 2 and len(server.chat_requests) == 1
    assert judge.total.retries == 1


# --- what a real llama.cpp server does (issue 18), scripted by openai_stub.LlamaLike -----------
# tests/integration/test_real_judge.py runs the same paths against the real server with a real
# model.

CHUNK_TEXTS = [
    {"id": "d1", "text": "Item 0 is a red box of size 0."},
    {"id": "d2", "text": "Bergen lies on the west coast."},
]


def rag_dataset(n: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``dataset(n)`` whose responses have a retrieval step (for the context metrics)."""
    reference, responses = dataset(n)
    for response in responses:
        response["actual_steps"] = [
            {"name": "retrieval", "status": "success", "output": json.dumps(CHUNK_TEXTS)}
        ]
    return reference, responses


def test_reply_budget_is_sized_to_the_schema() -> None:
    from qa_eval.judge.replies import BUDGET_RANGE, OPEN_LIST_ITEMS, STRING_TOKENS, reply_budget
    from qa_eval.metrics.retrieval.faithfulness import StatementsReply
    from qa_eval.metrics.retrieval.flat_context import relevance_schema

    low, high = BUDGET_RANGE
    assert reply_budget(Score) == low  # a number and a reason: the floor
    # {"statements": [str, ...]}: braces 2, the key 4 + 10 // 3, the list 2 + 16 * (2 + 100)
    assert reply_budget(StatementsReply) == 2 + 4 + 3 + 2 + OPEN_LIST_ITEMS * (2 + STRING_TOKENS)
    three, twenty = reply_budget(relevance_schema(3)), reply_budget(relevance_schema(20))
    assert low <= three < twenty <= high  # one verdict per chunk: more chunks, more tokens
    assert reply_budget(relevance_schema(500)) == high


def test_every_call_sends_max_tokens_sized_to_its_schema() -> None:
    from qa_eval.judge.replies import reply_budget

    with StubServer(LlamaLike()) as server:
        results = run_evaluation(
            *rag_dataset(2),
            config=run_config(server.url),
            enable=["graphrag"],
            disable=["factual_accuracy", "answer_class"],
            cache=False,
        )
        requests = server.chat_requests
        assert all(isinstance(r.get("max_tokens"), int) for r in requests)
        correctness = [r for r in requests if "[qa-eval:answer-correctness]" in prompt_text(r)]
        assert [r["max_tokens"] for r in correctness] == [reply_budget(CorrectnessReply)] * 2
        assert len({r["max_tokens"] for r in requests}) > 2  # sized per schema, not one value
        # a configured max_tokens is sent as it is, to every call
        fixed = run_config(server.url)
        fixed["llm"]["generation"]["max_tokens"] = 333
        run_evaluation(*dataset(1), config=fixed, cache=False)
        assert {r["max_tokens"] for r in server.chat_requests[len(requests) :]} == {333}
    assert all("answer_recall" in r and "faithfulness" in r for r in results)


def test_a_model_that_runs_away_is_cut_at_max_tokens_not_at_the_timeout() -> None:
    """The retry storm seen against llama.cpp: no max_tokens, a weak model writing JSON to the
    end of its context, the timeout firing, retries piling up. Now every call is bounded: a
    reply cut at max_tokens is asked again once, then the metric's error; no timeout fires and
    the server never has more requests than the concurrency."""
    from qa_eval.judge.replies import prompt_tokens_of, reply_budget

    def away(request: dict[str, Any]) -> bool:
        return "[qa-eval:answer-relevance]" in prompt_text(request)

    script = LlamaLike(slots=2, seconds_per_token=0.0001, n_ctx=32768, runs_away=away)
    with StubServer(script) as server:
        results = run_evaluation(
            *dataset(4),
            config=run_config(server.url, concurrency=2, timeout=30),
            cache=False,
        )
        requests = server.chat_requests
        assert server.peak <= 2
    relevance = [r for r in requests if away(r)]
    assert len(relevance) == 8  # each asked, cut, asked again, cut again: no more
    assert len(requests) == 4 + 8 + 4  # + correctness + the rubric fallback
    for request in relevance:
        # sized to the schema (3 questions) and the prompt as first asked
        asked = request["messages"][:2]
        assert request["max_tokens"] == reply_budget(relevance_reply(3), prompt_tokens_of(asked))
        assert request["max_tokens"] < 32768 // 8
    for result in results:
        assert "answer_recall" in result  # the other metric is not disturbed
        error_text = result["answer_relevance_error"]
        assert error_text.startswith("invalid judge reply after 2 attempts")
        assert "it was cut off at the limit of " in error_text
        assert "answer_relevance_rubric" in result  # its fallback still answers
    usage = results.signature["usage"]["total"]
    assert usage["retries"] == 0 and usage["reasks"] == 4


def test_a_timeout_is_retried_once_only() -> None:
    """A request the client gave up on keeps running on a single-slot server: retrying a
    timeout again and again piles up requests there. One retry, then the metric's error."""
    slow = Reply(**vars(completion(GOOD)) | {"delay": 0.8})
    with StubServer(lambda req, n: slow) as server:
        judge = Judge(judge_config(server.url, timeout=0.2), sleep=Sleeps())
        with pytest.raises(JudgeError) as raised:
            ask(judge)
        assert len(server.chat_requests) == 2
    assert str(raised.value) == (
        "no reply within 0.2 s, twice (llm.timeout); a request the client gave up on may still "
        "be running on the server"
    )
    assert (judge.total.retries, judge.total.failures) == (1, 1)


def test_a_context_length_error_is_that_questions_error_and_keeps_the_mode() -> None:
    """llama.cpp answers a prompt longer than its context with a 400: that question's error,
    asked once, and no downgrade of the response mode for the questions after it."""
    reference, responses = dataset(4)
    responses[1]["actual_answer"] = "A very long answer. " * 400
    with StubServer(LlamaLike(n_ctx=1200)) as server:
        results = run_evaluation(
            reference,
            responses,
            config=run_config(server.url, concurrency=1),
            disable=["answer_relevance"],
            cache=False,
        )
        assert formats(server) == ["json_schema"] * 4
    assert results[1]["answer_correctness_error"].startswith("judge call failed (400): request (")
    assert (
        "exceeds the available context size (1200 tokens)" in results[1]["answer_correctness_error"]
    )
    assert all("answer_recall" in results[i] for i in (0, 2, 3))
    assert results.signature["judge"]["response_mode"] == "json_schema"
    assert results.signature["judge"]["response_modes"] == {"json_schema": 3}


def test_a_400_that_is_not_about_the_format_is_the_metric_error_at_once() -> None:
    with StubServer(lambda req, n: error(400, "Invalid value for 'temperature'")) as server:
        judge = Judge(judge_config(server.url), sleep=Sleeps())
        with pytest.raises(JudgeError, match=r"judge call failed \(400\): Invalid value"):
            ask(judge)
        assert formats(server) == ["json_schema"]
    assert judge.mode == "json_schema"


def test_a_format_error_is_kept_only_once_a_lower_mode_has_worked() -> None:
    """The first request's json_schema is refused for its schema, and its json_object probe
    fails for another reason (the context): nothing confirms that the format was the problem,
    so the next request is asked with json_schema again."""
    parser = (
        "Unable to generate parser for this template. Automatic parser generation failed: "
        "JSON schema error at #/properties/a: cannot resolve $ref"
    )

    def script(request: dict[str, Any], number: int) -> Reply:
        if number == 0:
            return error(400, parser)
        if number == 1:
            return context_exceeded(5031, 2048)
        return completion(GOOD)

    with StubServer(script) as server:
        judge = Judge(judge_config(server.url), sleep=Sleeps())
        outcomes = ask_in_turn(judge, prompts(2))
        assert formats(server) == ["json_schema", "json_object", "json_schema"]
    assert isinstance(outcomes[0], JudgeError) and "exceeds the available context" in str(
        outcomes[0]
    )
    assert isinstance(outcomes[1], Verdict)
    assert judge.mode == "json_schema"
    assert "response_mode_reason" not in judge.signature()


def test_json_object_with_the_schema_when_json_schema_is_refused() -> None:
    """A server that refuses json_schema (as llama.cpp's did: 'response_format type must be one
    of "text" or "json_object"') but enforces a schema given with json_object; without the
    schema, the small model writes prose. Every metric gets its value, in json_object+schema."""

    def prose(request: dict[str, Any]) -> str:
        return "The answer looks fine to me."

    script = LlamaLike(refuse=("json_schema",), unconstrained=prose)
    with StubServer(script) as server:
        results = run_evaluation(
            *dataset(3), config=run_config(server.url, concurrency=1), cache=False
        )
        requests = server.chat_requests
    assert formats(server)[0] == "json_schema"
    assert all(r["response_format"] == {"type": "json_object", "schema": ANY} for r in requests[1:])
    for result in results:
        assert "answer_recall" in result and "answer_relevance" in result, result
    judge = results.signature["judge"]
    assert judge["response_mode"] == "json_object+schema"
    assert judge["response_modes"] == {"json_object+schema": 6}
    assert judge["response_mode_reason"].startswith(
        'json_schema refused (400): response_format type must be one of "text" or "json_object"'
    )


class _Any:
    def __eq__(self, other: object) -> bool:
        return True


ANY = _Any()


def _untyped(schema: Any, defs: dict[str, Any]) -> list[str]:
    """The properties of a JSON schema that give no type (a constrained decoder cannot use)."""
    found = []
    if isinstance(schema, dict):
        if "$ref" in schema:
            return _untyped(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
        for name, value in (schema.get("properties") or {}).items():
            if not any(k in value for k in ("type", "anyOf", "enum", "$ref", "const")):
                found.append(name)
            found += _untyped(value, defs)
        for option in schema.get("anyOf") or []:
            found += _untyped(option, defs)
        if isinstance(schema.get("items"), dict):
            found += _untyped(schema["items"], defs)
    return found


def test_custom_metric_outputs_are_typed_for_constrained_decoders() -> None:
    """A grammar-building server refuses a schema with an untyped property (as
    llama-cpp-python did for every custom metric): the custom reply schema types its outputs."""

    def script(request: dict[str, Any], number: int) -> Reply:
        schema = request["response_format"]["json_schema"]["schema"]
        untyped = _untyped(schema, schema.get("$defs", {}))
        if untyped:
            return error(500, f"failed to build a grammar from the JSON schema: {untyped}")
        if "[qa-eval:custom]" in prompt_text(request):
            return completion(json.dumps({"score": 0.5, "ok": True, "label": "x", "reason": "r"}))
        return completion(oracle_content(request))

    config = run_config("") | {
        "custom_evaluations": [
            {
                "name": "mine",
                "inputs": ["question", "actual_answer"],
                "instructions": "Judge the answer.",
                "outputs": {"score": "0 to 1", "ok": "true or false", "label": "a word"},
            }
        ]
    }
    with StubServer(script) as server:
        config["llm"]["generation"]["base_url"] = server.url
        config["llm"]["embedding"]["base_url"] = server.url
        results = run_evaluation(*dataset(2), config=config, cache=False)
        assert set(formats(server)) == {"json_schema"}  # no downgrade was needed
        schema = next(
            r["response_format"]["json_schema"]["schema"]
            for r in server.chat_requests
            if "[qa-eval:custom]" in prompt_text(r)
        )
    for result in results:
        assert (result["score"], result["ok"], result["label"]) == (0.5, True, "x")
        assert result["mine_reason"] == "r"
    types = [o["type"] for o in schema["properties"]["score"]["anyOf"]]
    assert sorted(types) == ["boolean", "integer", "number", "string"]
    assert schema["required"] == ["score", "ok", "label"]


def test_an_unpriced_judge_gives_null_costs_not_zero(tmp_path: Path) -> None:
    """A local model has no price: every judge metric's cost and the question's llm_cost are
    null ("unknown"), even when an offline metric adds a known 0."""
    pytest.importorskip("onnxruntime")
    with StubServer(oracle()) as server:
        config = run_config(server.url)
        config["llm"]["generation"]["model"] = "/models/SmolLM2-135M-Instruct.Q4_1.gguf"
        config["llm"]["embedding"] = {"provider": "offline"}
        results = run_evaluation(
            *rag_dataset(2),
            config=config,
            enable=["graphrag"],
            disable=["bertscore"],
            cache=False,
        )
        priced = run_evaluation(
            *rag_dataset(2),
            config=config
            | {
                "llm": {
                    **config["llm"],
                    "prices": {config["llm"]["generation"]["model"]: {"input": 1, "output": 2}},
                }
            },
            enable=["graphrag"],
            disable=["bertscore"],
            cache=False,
        )
    for result in results:
        assert result["semantic_similarity_cost"] == 0.0  # offline: a known 0
        for key in (
            "answer_correctness_cost",
            "answer_relevance_cost",
            "faithfulness_cost",
            "context_precision_cost",
            "context_recall_cost",
            "factual_accuracy_cost",
            "answer_class_cost",
        ):
            assert key in result and result[key] is None, key
        step = result["actual_steps"][0]
        assert step["retrieval_answer_recall_cost"] is None
        assert step["retrieval_answer_f1_cost"] is None
        assert "llm_cost" in result and result["llm_cost"] is None
    assert results.signature["usage"]["total"]["cost"] is None
    aggregates = compute_aggregates(results)
    assert "llm_cost" not in aggregates["micro"]  # no known cost: no statistic, not a 0
    for result in priced:
        assert isinstance(result["llm_cost"], float) and result["llm_cost"] > 0
        assert isinstance(result["answer_correctness_cost"], float)


def test_dry_run_counts_the_calls_the_run_makes(tmp_path: Path) -> None:
    """Faithfulness makes two calls (statements, then verdicts) and answer relevance may fall
    back to its rubric: a dry run counts both; after the run, a dry run finds them cached."""
    data = rag_dataset(3)
    cache = tmp_path / "c.sqlite3"
    with StubServer(oracle()) as server:
        config = parse_config(run_config(server.url))
        judge = Judge(config, dry_run=True)
        run_evaluation(*data, config=config, judge=judge, enable=["faithfulness"])
        assert server.chat_requests == []
        plan = dict(judge.plan.calls)
        run = run_evaluation(*data, config=config, enable=["faithfulness"], cache=cache)
        made = {m: u["calls"] for m, u in run.signature["usage"]["per_metric"].items()}
        warm = Judge(config, cache=ReplyCache(cache), dry_run=True)
        run_evaluation(*data, config=config, judge=warm, enable=["faithfulness"])
    assert plan["faithfulness"] == made["faithfulness"] == 6
    assert plan["answer_correctness"] == made["answer_correctness"] == 3
    assert plan["answer_relevance"] == made["answer_relevance"] == 3
    assert plan["answer_relevance_rubric"] == 3  # at most: asked only if generation fails
    assert "answer_relevance_rubric" not in made
    assert warm.plan.calls == {}
    assert warm.plan.cached["faithfulness"] == 6


def test_a_judge_nobody_listens_to_stops_the_command_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from qa_eval.cli import main

    with StubServer(lambda req, n: completion(GOOD)) as server:
        url = server.url
    reference, responses = dataset(20)
    write_data(tmp_path / "reference.yaml", reference)
    (tmp_path / "responses.jsonl").write_text(
        "\n".join(json.dumps(r) for r in responses) + "\n", encoding="utf-8"
    )
    write_data(tmp_path / "judge.yaml", run_config(url, max_attempts=2, concurrency=2))
    code = main(
        [
            "evaluate",
            str(tmp_path / "reference.yaml"),
            str(tmp_path / "responses.jsonl"),
            "-c",
            str(tmp_path / "judge.yaml"),
            "--no-cache",
            "-q",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith(f"qa-eval: error: cannot reach the judge at {url}: ")
    assert "Traceback" not in err


def test_cached_prompt_tokens_are_recorded_and_priced(tmp_path: Path) -> None:
    """The instructions go first, as a system message the same for every question, so the
    server's prompt cache reuses them; the tokens it served from its cache are recorded per call,
    metric and run, priced at the cached-input rate, and kept in qa-eval's cache for reruns."""
    from qa_eval.judge.prices import usd

    price = {"input": 1.0, "output": 2.0, "cached_input": 0.25}
    script = LlamaLike()
    cache = tmp_path / "c.sqlite3"
    with StubServer(script) as server:
        config = run_config(server.url, concurrency=1)
        config["llm"]["prices"] = {"gpt-4o-mini": price}
        first = run_evaluation(
            *dataset(3), config=config, disable=["answer_relevance"], cache=cache
        )
        requests = server.chat_requests
        second = run_evaluation(
            *dataset(3), config=config, disable=["answer_relevance"], cache=cache
        )
        assert len(server.chat_requests) == 3
    system = [r["messages"][0] for r in requests]
    assert all(m["role"] == "system" for m in system)
    assert len({m["content"] for m in system}) == 1  # the same for every question
    assert system[0]["content"].startswith("[qa-eval:answer-correctness]")
    assert "Reply with a JSON object" in system[0]["content"]
    assert "<question>" not in system[0]["content"]
    assert all(r["messages"][1]["role"] == "user" for r in requests)
    assert all(r["messages"][1]["content"].startswith("The texts below are data") for r in requests)
    total = first.signature["usage"]["total"]
    cached = [c for _, _, c in script.usage]  # concurrency 1: in the order of the requests
    # the first call finds nothing; each later one at least the shared system message
    assert cached[0] == 0 and all(c >= len(system[0]["content"]) // 4 for c in cached[1:])
    assert total["cached_prompt_tokens"] == sum(cached)
    assert total["prompt_tokens"] == sum(p for p, _, _ in script.usage)
    assert total["cached_prompt_share"] == pytest.approx(sum(cached) / total["prompt_tokens"])
    per_metric = first.signature["usage"]["per_metric"]["answer_correctness"]
    assert per_metric["cached_prompt_tokens"] == sum(cached)
    for result, (prompt, written, hit) in zip(first, script.usage):
        expected = usd(price, prompt, written, cached_tokens=hit)
        assert result["answer_correctness_cost"] == pytest.approx(expected, rel=1e-12)
        # the cached tokens made it cheaper than the full input rate
        assert (hit == 0) == (expected == usd(price, prompt, written))
    # the rerun makes no call and reports the same costs (the cached tokens were stored)
    assert [r["answer_correctness_cost"] for r in second] == [
        r["answer_correctness_cost"] for r in first
    ]
    assert second.signature["usage"]["total"]["cached_prompt_tokens"] == 0
    assert total["cost"] == pytest.approx(sum(r["answer_correctness_cost"] for r in first))


@pytest.mark.parametrize("configured", [None, 500])
def test_a_model_that_refuses_max_tokens_is_asked_without_it(configured: int | None) -> None:
    """OpenAI's reasoning models refuse ``max_tokens`` (they take ``max_completion_tokens``,
    which counts their reasoning too): the call is asked again at once without it - with a
    configured limit under the other name, with none when the limit was only sized per reply
    (it would starve the reasoning) - and so is every later call."""

    def script(request: dict[str, Any], number: int) -> Reply:
        if "max_tokens" in request:
            return error(
                400,
                "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
                "'max_completion_tokens' instead.",
            )
        return completion(GOOD)

    with StubServer(script) as server:
        generation = {"provider": "openai", "base_url": server.url, "api_key": "x"}
        if configured:
            generation["max_tokens"] = configured
        judge = Judge(parse_config({"llm": {"generation": generation}}), sleep=Sleeps())
        outcomes = ask_in_turn(judge, prompts(2))
        limits = [
            (r.get("max_tokens"), r.get("max_completion_tokens")) for r in server.chat_requests
        ]
    assert all(isinstance(o, Verdict) for o in outcomes)
    first = configured or limits[0][0]
    assert isinstance(first, int)
    assert limits == [(first, None), (None, configured), (None, configured)]
    assert judge.signature()["token_limit"] == "max_completion_tokens"
    assert judge.total.retries == 0 and judge.total.failures == 0


def test_cached_prompt_tokens_are_stored_and_an_older_cache_reads_as_none(tmp_path: Path) -> None:
    """The cached prompt tokens of a reply live in the cache's ``reply_usage`` table; a cache
    written before it (no such table) is read as 0 and gets the table at its next reply."""
    path = tmp_path / "c.sqlite3"
    cache = ReplyCache(path)
    cache.put("k1", "m", CachedReply(GOOD, 100, 10, cached_tokens=64))
    assert cache.get("k1") == CachedReply(GOOD, 100, 10, cached_tokens=64)
    cache.close()
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE reply_usage")
    older = ReplyCache(path)
    assert older.get("k1") == CachedReply(GOOD, 100, 10, cached_tokens=0)
    older.put("k2", "m", CachedReply(GOOD, 100, 10, cached_tokens=32))
    assert older.get("k2") == CachedReply(GOOD, 100, 10, cached_tokens=32)
    # a count that cannot be one (more than the prompt) is read as 0
    older.put("k3", "m", CachedReply(GOOD, 100, 10, cached_tokens=101))
    assert older.get("k3") == CachedReply(GOOD, 100, 10, cached_tokens=0)
    older.close()


def test_an_asks_context_is_passed_not_inherited() -> None:
    """The repeat and the dry run's planned list go with the ask that is given them: a planning
    view notes only its own planned calls (not those of asks running beside it), and a repeat
    above 0 is its own request while repeat 0 is the plain one."""
    from qa_eval.errors import DryRunSkip
    from qa_eval.judge.calls import AskContext, Asking

    judge = Judge(judge_config("http://127.0.0.1:9"), dry_run=True)
    planner, planned = judge.planning()
    repeat = Asking(judge, AskContext(repeat=2))

    async def one(asker: Any, metric: str, messages: list[dict[str, str]]) -> None:
        with pytest.raises(DryRunSkip):
            await asker.ask(metric, messages, Score)

    async def run() -> None:
        first, second = prompts(2)
        await asyncio.gather(one(planner, "mine", first), one(judge, "other", second))
        await one(repeat, "repeated", first)

    asyncio.run(run())
    assert planned == ["mine"]
    assert judge.plan.calls == {"mine": 1, "other": 1, "repeated": 1}
    assert judge.request(QUESTION, Score) == judge.request(QUESTION, Score, 0)
    assert judge.request(QUESTION, Score, 2) == {**judge.request(QUESTION, Score), "repeat": 2}
