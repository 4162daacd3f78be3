"""The judge's light transport (``qa_eval.judge.light``) against the openai SDK it stands in for:
each case runs the same judge twice on the same script, once through the SDK's ``AsyncOpenAI`` (as
before, and as a caller's own client still is) and once through the light client (the default for
an ``openai`` judge given as config), each on a scripted server of its own, and compares what the
server received (request line, headers in order, body bytes; only the port differs), what the
judge returned or raised, and the waits between attempts. Also: the errors themselves, class by
class and attribute by attribute; proxies from the environment; TLS refused; a refused
connection; a timeout."""

from __future__ import annotations

import asyncio
import json
import random
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from fakes import Score, Sleeps
from openai_stub import (
    TRANSPORT_FAULTS,
    Reply,
    StubServer,
    completion,
    error,
    fault_reply,
    oracle,
)
from qa_eval.config import EvalConfig, parse_config
from qa_eval.judge.calls import Judge
from qa_eval.judge.clients import sdk_client
from qa_eval.judge.light.client import LightClient, light_client
from qa_eval.judge.settings import GenerationConfig

if light_client(GenerationConfig(base_url="http://127.0.0.1:9/v1"), 1.0) is None:
    pytest.skip(
        "the installed openai SDK is not one the light client reproduces (3.63 to 3.x)",
        allow_module_level=True,
    )

GOOD = json.dumps({"score": 7, "reason": "fine"})
QUESTION = [{"role": "user", "content": "Rate the answer from 0 to 10: «été»."}]
Script = Callable[[dict[str, Any], int], Reply]


@pytest.fixture(autouse=True)
def _plain_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No proxy, organisation or SDK setting from the machine running the tests."""
    for name in (
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "NO_PROXY",
        "OPENAI_ORG_ID",
        "OPENAI_PROJECT_ID",
        "OPENAI_BASE_URL",
        "OPENAI_CUSTOM_HEADERS",
        "OPENAI_LOG",
    ):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    yield


def config(url: str | None, **llm: Any) -> EvalConfig:
    generation: dict[str, Any] = {"provider": "openai", "api_key": "sk-test-secret-0123456789"}
    if url is not None:
        generation["base_url"] = url
    generation.update(llm.pop("generation", {}))
    return parse_config({"llm": {"generation": generation, "retry_base": 0.001, **llm}})


def run(cfg: EvalConfig, sdk: bool, asks: int = 1) -> dict[str, Any]:
    """The judge's outcome for ``asks`` asks in turn, through the SDK or the light client."""
    random.seed(7)  # the jitter of a back-off
    sleeps = Sleeps()
    assert cfg.generation is not None
    client = sdk_client(cfg.generation, cfg.timeout, max_retries=0) if sdk else None
    judge = Judge(cfg, client=client, sleep=sleeps)
    assert isinstance(judge.client, LightClient) != sdk

    async def asks_in_turn() -> list[Any]:
        outcomes: list[Any] = []
        for _ in range(asks):
            try:
                v = await judge.ask("score", QUESTION, Score)
                outcomes.append(
                    (v.value.model_dump(), v.prompt_tokens, v.completion_tokens, v.cached_tokens)
                )
            except Exception as e:
                outcomes.append((type(e).__name__, str(e)))
        return outcomes

    outcomes = asyncio.run(asks_in_turn())
    return {"outcomes": outcomes, "sleeps": sleeps.calls, "signature": judge.signature()}


def received(server: StubServer) -> list[tuple[str, list[tuple[str, str]], bytes]]:
    """What the server received, its own port written as PORT."""
    port = str(server.port)
    return [
        (line, [(k, v.replace(port, "PORT")) for k, v in headers], body)
        for line, headers, body in server.received
    ]


def both(script: Script, asks: int = 1, **llm: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The SDK's and the light client's outcomes on the same script, each with what its server
    received."""
    outcomes = []
    for sdk in (True, False):
        with StubServer(script) as server:
            outcome = run(config(server.url, **llm), sdk, asks)
            outcome["received"] = received(server)
            outcome["signature"]["base_url"] = "URL"
        outcomes.append(outcome)
    return outcomes[0], outcomes[1]


def in_turn(*replies: Reply | Callable[[], Reply]) -> Script:
    """The replies in turn, the last one for every later request."""

    def script(request: dict[str, Any], number: int) -> Reply:
        reply = replies[min(number, len(replies) - 1)]
        return reply() if callable(reply) else reply

    return script


def usage_reply(usage: Any) -> Reply:
    reply = completion(GOOD)
    reply.body["usage"] = usage
    return reply


def body_reply(body: Any, status: int = 200) -> Reply:
    return Reply(status=status, body=body)


CASES: dict[str, tuple[Script, dict[str, Any]]] = {
    "a reply": (in_turn(completion(GOOD, 120, 30, cached_tokens=100)), {}),
    "usage counts as text": (
        in_turn(usage_reply({"prompt_tokens": "12", "completion_tokens": 3, "total_tokens": 15})),
        {},
    ),
    "usage counts as floats": (
        in_turn(usage_reply({"prompt_tokens": 12.0, "completion_tokens": 3.5, "total_tokens": 9})),
        {},
    ),
    "usage without its total": (
        in_turn(usage_reply({"prompt_tokens": "12", "completion_tokens": 3})),
        {},
    ),
    "usage with odd details": (
        in_turn(
            usage_reply(
                {
                    "prompt_tokens": "x",
                    "completion_tokens": 3,
                    "prompt_tokens_details": {"cached_tokens": "5", "audio_tokens": "n"},
                }
            )
        ),
        {},
    ),
    "usage details as a list": (
        in_turn(usage_reply({"prompt_tokens": 9, "prompt_tokens_details": [1]})),
        {},
    ),
    "usage as a list": (in_turn(usage_reply([{"prompt_tokens": 4}])), {}),
    "usage negative": (in_turn(usage_reply({"prompt_tokens": -4, "completion_tokens": 1})), {}),
    "usage a boolean count": (
        in_turn(usage_reply({"prompt_tokens": True, "completion_tokens": 1, "total_tokens": 2})),
        {},
    ),
    "content as parts": (
        in_turn(
            body_reply({"choices": [{"message": {"content": [{"type": "text", "text": GOOD}]}}]})
        ),
        {},
    ),
    "content a number": (in_turn(body_reply({"choices": [{"message": {"content": 5}}]})), {}),
    "choices an object": (in_turn(body_reply({"choices": {"0": {}}})), {"max_attempts": 1}),
    "a choice without a message": (in_turn(body_reply({"choices": [{}]})), {"max_attempts": 1}),
    "a JSON list": (in_turn(body_reply([1, 2])), {"max_attempts": 1}),
    "JSON null": (in_turn(Reply(raw="null")), {"max_attempts": 1}),
    "JSON as text/plain": (
        in_turn(Reply(raw=json.dumps(completion(GOOD).body), content_type="text/plain")),
        {},
    ),
    "text as text/plain": (
        in_turn(Reply(raw="hello", content_type="text/plain")),
        {"max_attempts": 1},
    ),
    "429 with Retry-After, then a reply": (
        in_turn(error(429, "slow down", {"Retry-After": "0.05"}), completion(GOOD)),
        {},
    ),
    "429 with retry-after-ms, then a reply": (
        in_turn(error(429, "slow down", {"retry-after-ms": "30"}), completion(GOOD)),
        {},
    ),
    "429 with an unusable Retry-After, then a reply": (
        in_turn(error(429, "slow down", {"Retry-After": "soon"}), completion(GOOD)),
        {},
    ),
    "503 then a reply": (in_turn(error(503, "busy"), completion(GOOD)), {}),
    "500 every time": (in_turn(error(500, "internal")), {"max_attempts": 3}),
    "500 with a text body": (
        in_turn(Reply(status=500, raw="upstream broke", content_type="text/plain")),
        {"max_attempts": 2},
    ),
    "502 with an empty body": (in_turn(Reply(status=502, raw="")), {"max_attempts": 2}),
    "408 then a reply": (in_turn(error(408, "request timeout"), completion(GOOD)), {}),
    "400": (in_turn(error(400, "bad parameter: temperature")), {}),
    "400 with an error string": (in_turn(body_reply({"error": "no such thing"}, 400)), {}),
    "400 with a code": (
        in_turn(body_reply({"error": {"message": "m", "code": 42, "param": "x"}}, 400)),
        {},
    ),
    "401": (in_turn(error(401, "Incorrect API key provided: sk-test-secret-0123456789")), {}),
    "403": (in_turn(error(403, "forbidden")), {}),
    "404": (in_turn(error(404, "The model `m` does not exist")), {}),
    "418": (in_turn(error(418, "teapot")), {}),
    "a format refused, then lower modes": (
        in_turn(error(400, "response_format json_schema is not supported"), completion(GOOD)),
        {},
    ),
    "max_tokens refused": (
        in_turn(
            error(400, "Unsupported parameter: 'max_tokens'; use 'max_completion_tokens'"),
            completion(GOOD),
        ),
        {"generation": {"max_tokens": 64, "seed": 3}},
    ),
    "a 307 redirect": (
        in_turn(Reply(status=307, headers={"Location": "/v2/chat/completions"}), completion(GOOD)),
        {},
    ),
    "a 302 redirect (followed as a GET)": (
        in_turn(Reply(status=302, headers={"Location": "/v2/chat/completions"})),
        {"max_attempts": 1},
    ),
    **{
        f"transport fault {kind}": (
            in_turn(lambda kind=kind: fault_reply(kind)),
            {"max_attempts": 1},
        )
        for kind in TRANSPORT_FAULTS
    },
    "a dropped connection, then a reply": (
        in_turn(fault_reply("drop"), completion(GOOD)),
        {},
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_light_client_sends_and_reads_as_the_sdk(case: str) -> None:
    script, llm = CASES[case]
    sdk, light = both(script, asks=2, **llm)
    assert light["received"] == sdk["received"]
    assert light["outcomes"] == sdk["outcomes"]
    assert light["sleeps"] == sdk["sleeps"]
    assert light["signature"] == sdk["signature"]
    assert sdk["received"], "the case made no request"


def test_the_cases_cover_retries_errors_and_replies() -> None:
    """The comparison is not vacuous: the cases retry after Retry-After, fail without retrying
    on a 400, stop the run on a 401, and read usage that the SDK coerces."""
    sdk, light = both(CASES["429 with Retry-After, then a reply"][0])
    assert sdk["sleeps"] == light["sleeps"] == [0.05] and len(sdk["received"]) == 2
    sdk, light = both(CASES["400"][0], asks=2)
    assert len(sdk["received"]) == len(light["received"]) == 2  # one per ask, none retried
    assert sdk["outcomes"][0] == (
        "JudgeError",
        "judge call failed (400): bad parameter: temperature",
    )
    sdk, light = both(CASES["401"][0], asks=2)
    assert len(light["received"]) == 1
    assert light["outcomes"][0][0] == "JudgeUnavailable"
    assert "sk-test-secret" not in light["outcomes"][0][1]  # redacted, as the SDK path is
    sdk, light = both(CASES["usage counts as text"][0])
    assert light["outcomes"][0][1] == sdk["outcomes"][0][1] == 12
    sdk, light = both(CASES["usage without its total"][0])
    assert light["outcomes"] == sdk["outcomes"]
    assert "usage.prompt_tokens is not a number" in light["outcomes"][0][1]


def _status_errors(sdk: bool, server: StubServer) -> list[tuple[Any, ...]]:
    gen = config(server.url).generation
    assert gen is not None
    client = sdk_client(gen, 5.0, max_retries=0) if sdk else light_client(gen, 5.0)
    assert client is not None
    seen = []

    async def calls() -> None:
        for _ in range(len(STATUS_REPLIES)):
            try:
                await client.chat.completions.create(
                    model="m", messages=QUESTION, temperature=0.0, timeout=5.0
                )
            except Exception as e:
                headers = sorted(getattr(getattr(e, "request", None), "headers", {}).keys())
                seen.append(
                    (
                        [c.__name__ for c in type(e).__mro__][:4],
                        str(e),
                        e.message,  # type: ignore[attr-defined]
                        e.body,  # type: ignore[attr-defined]
                        e.code,  # type: ignore[attr-defined]
                        e.param,  # type: ignore[attr-defined]
                        e.type,  # type: ignore[attr-defined]
                        e.status_code,  # type: ignore[attr-defined]
                        e.request_id,  # type: ignore[attr-defined]
                        headers,
                    )
                )

    asyncio.run(calls())
    return seen


STATUS_REPLIES = [
    error(400, "bad"),
    error(401, "no key"),
    error(403, "no"),
    error(404, "none"),
    error(409, "conflict"),
    error(422, "unprocessable"),
    error(429, "slow", {"x-request-id": "req-1"}),
    error(500, "internal"),
    error(503, "busy"),
    error(418, "teapot"),
    body_reply({"error": {"message": "", "code": "c", "type": "t", "param": 1}}, 400),
    body_reply({"error": "a string"}, 400),
    body_reply({"message": "top-level", "code": None}, 400),
    body_reply([1], 400),
    Reply(status=500, raw="plain text", content_type="text/plain"),
    Reply(status=500, raw=""),
]


def test_status_errors_are_the_sdks_class_by_class() -> None:
    outcomes = []
    for sdk in (True, False):
        with StubServer(in_turn(*STATUS_REPLIES)) as server:
            outcomes.append(_status_errors(sdk, server))
    sdk_errors, light_errors = outcomes
    assert len(sdk_errors) == len(STATUS_REPLIES)
    assert light_errors == sdk_errors
    assert sdk_errors[0][0][0] == "BadRequestError" and sdk_errors[0][1] == "Error code: 400 - bad"
    assert all("authorization" not in e[-1] for e in light_errors)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_refused_connection_reads_the_same() -> None:
    url = f"http://127.0.0.1:{_free_port()}/v1"  # nothing listens there
    sdk = run(config(url, max_attempts=2), sdk=True)
    light = run(config(url, max_attempts=2), sdk=False)
    assert light["outcomes"] == sdk["outcomes"]
    assert light["sleeps"] == sdk["sleeps"]
    assert sdk["outcomes"][0][0] == "JudgeUnavailable"
    assert "ConnectError" in sdk["outcomes"][0][1]


def test_tls_to_a_plain_server_fails_the_same() -> None:
    """Verification on (httpx2's default, as the SDK leaves it): https to a server that speaks
    plain HTTP fails in the handshake, with the same error."""
    outcomes = []
    for sdk in (True, False):
        with StubServer(in_turn(completion(GOOD))) as server:
            url = server.url.replace("http://", "https://").replace(str(server.port), "PORT")
            cfg = config(url.replace("PORT", str(server.port)), max_attempts=1)
            outcome = run(cfg, sdk)
            outcomes.append(
                json.loads(json.dumps(outcome["outcomes"]).replace(str(server.port), "PORT"))
            )
    assert outcomes[0] == outcomes[1]
    assert "APIConnectionError" in outcomes[0][0][1]


def test_a_timeout_reads_the_same() -> None:
    script = in_turn(Reply(body=completion(GOOD).body, delay=0.6))
    sdk, light = both(script, timeout=0.15)
    assert light["outcomes"] == sdk["outcomes"]
    assert light["received"] == sdk["received"]
    assert sdk["outcomes"][0] == (
        "JudgeError",
        "no reply within 0.15 s, twice (llm.timeout); a request the client gave up on may still "
        "be running on the server",
    )


def test_a_proxy_from_the_environment_is_used_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """``HTTP_PROXY`` is honoured by both (httpx2's ``trust_env``): the proxy (the stub, which
    answers itself) receives the absolute URL of an endpoint that does not resolve."""
    outcomes = []
    for sdk in (True, False):
        with StubServer(in_turn(completion(GOOD))) as proxy:
            monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
            outcome = run(config("http://judge.invalid/v1"), sdk)
            outcome["received"] = received(proxy)
            outcomes.append(outcome)
    sdk_run, light_run = outcomes
    assert light_run == sdk_run
    assert sdk_run["received"][0][0] == "POST http://judge.invalid/v1/chat/completions HTTP/1.1"
    assert sdk_run["outcomes"][0][0] == {"score": 7, "reason": "fine"}


def test_the_sdks_environment_settings_are_read_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """``OPENAI_BASE_URL`` (no base_url configured), ``OPENAI_ORG_ID`` and ``OPENAI_PROJECT_ID``
    give the same request; ``OPENAI_CUSTOM_HEADERS`` and ``OPENAI_LOG``, which the light client
    does not reproduce, leave the calls to the SDK."""
    outcomes = []
    for sdk in (True, False):
        with StubServer(in_turn(completion(GOOD))) as server:
            monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/")
            monkeypatch.setenv("OPENAI_ORG_ID", "org-1")
            monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-1")
            outcome = run(config(None), sdk)
            outcome["received"] = received(server)
            outcome["signature"].pop("base_url")
            outcomes.append(outcome)
    assert outcomes[1] == outcomes[0]
    names = [k.lower() for k, _ in outcomes[0]["received"][0][1]]
    assert "openai-organization" in names and "openai-project" in names
    gen = config("http://127.0.0.1:9/v1").generation
    assert gen is not None and light_client(gen, 1.0) is not None
    for name in ("OPENAI_CUSTOM_HEADERS", "OPENAI_LOG"):
        monkeypatch.setenv(name, "debug")
        assert light_client(gen, 1.0) is None
        monkeypatch.delenv(name)


def test_only_an_openai_judge_given_as_config_goes_light() -> None:
    """Azure and a caller's own client keep the SDK (so does any provider through litellm)."""
    azure = parse_config(
        {"llm": {"generation": {"provider": "azure", "base_url": "https://x.openai.azure.com"}}}
    ).generation
    assert azure is not None and light_client(azure, 1.0) is None
    with StubServer(in_turn(completion(GOOD))) as server:
        cfg = config(server.url)
        assert cfg.generation is not None
        own = sdk_client(cfg.generation, 5.0, max_retries=0)
        assert Judge(cfg, client=own).client is own
        assert isinstance(Judge(cfg).client, LightClient)


_FIRST_REQUEST = """
import json, runpy, sys
from qa_eval.judge.light import client as light

sent = light.LightClient.create
where = sys.argv[1]


async def create(self, **kwargs):
    if not light.__dict__.get("seen"):
        light.seen = sorted(sys.modules)
        with open(where, "w") as f:
            json.dump(light.seen, f)
    return await sent(self, **kwargs)


light.LightClient.create = create
sys.argv = ["qa-eval", *sys.argv[2:]]
runpy.run_module("qa_eval", run_name="__main__")
"""


def test_the_demos_first_judge_request_leaves_before_the_sdk_prices_and_rich_load(
    tmp_path: Path,
) -> None:
    """Issue 36 section 5: ``qa-eval evaluate`` on the demo, a judge configured, sends its first
    request before importing the openai SDK, the price catalogue (genai-prices), rich or trio;
    the run then completes against the scripted judge (a price is looked up once a reply came,
    and the results carry a cost)."""
    demo = Path(__file__).parents[2] / "examples" / "powergrid"
    with StubServer(oracle()) as server:
        judge = {"provider": "openai", "base_url": server.url, "api_key": "x"}
        (tmp_path / "judge.json").write_text(json.dumps({"llm": {"generation": judge}}))
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                _FIRST_REQUEST,
                str(tmp_path / "modules.json"),
                "evaluate",
                str(demo / "reference.yaml"),
                str(demo / "responses-good.jsonl"),
                "-c",
                str(tmp_path / "judge.json"),
                "--no-cache",
                "-q",
                "-o",
                str(tmp_path / "results.json"),
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads((tmp_path / "modules.json").read_text()))
    assert "httpx2" in loaded and "qa_eval.judge.calls" in loaded
    late = {"openai", "genai_prices", "rich", "trio"}  # trio: see the trio test below
    assert sorted(m for m in loaded if m.split(".")[0] in late) == []
    results = json.loads((tmp_path / "results.json").read_text())
    costs = [v for r in results for k, v in r.items() if k.endswith("_cost")]
    assert costs and all(isinstance(c, float) and c > 0 for c in costs)


_TRIO_AFTER = """
import sys
from qa_eval.judge.light.client import _import_httpcore2

_import_httpcore2()
assert "httpcore2" in sys.modules and "trio" not in sys.modules, sorted(sys.modules)
import trio
import httpx2


async def main():
    async with httpx2.AsyncClient() as client:
        try:
            await client.get(sys.argv[1])
        except httpx2.ConnectError:
            return "refused"


print(trio.run(main))
"""


def test_httpcore2_loads_without_trio_and_still_runs_under_trio() -> None:
    """The light client imports httpcore2 without importing trio (60 ms a run under asyncio
    never uses), yet httpx2 under trio works afterwards: the trio httpcore2 holds imports the
    real one at its first use."""
    pytest.importorskip("trio")
    url = f"http://127.0.0.1:{_free_port()}/"  # nothing listens there
    done = subprocess.run(
        [sys.executable, "-c", _TRIO_AFTER, url], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "refused"
