"""A scripted OpenAI-compatible server on 127.0.0.1 (port 0) for tests and benchmarks.

It answers ``POST /v1/chat/completions`` (also Azure's ``/openai/deployments/D/chat/completions``)
and ``POST /v1/embeddings``. What a chat call gets back is decided by a *script*: a callable given
the parsed request and the call's number that returns a :class:`Reply` (status, body, headers,
delay). The server records every request and the peak number of requests in flight.

A reply can also be a transport fault: a body that is not JSON (``raw``, e.g. an HTML page from a
proxy, with ``content_type``), a body cut short (``truncate``: only that many bytes of it are sent,
under the full ``Content-Length``, then the connection is closed), a connection reset mid-body
(``reset``: TCP RST) or a connection closed before any reply (``drop``).

:class:`LlamaLike` scripts what a llama.cpp server with a small model does (slots that keep
generating abandoned requests, replies cut at ``max_tokens`` or at the end of the context, a 400
for a prompt longer than the context, ``json_object`` with a ``schema``, cached prompt tokens in
the usage); ``tests/integration/test_real_judge.py`` runs the same paths against the real server.

Run as a program (for benchmarks) it prints its port and serves the ``oracle`` script with a fixed
latency and an optional rate of injected faults (429 with Retry-After, 500, garbage text; more
kinds with ``--faults``).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import random
import re
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted answer: a JSON body (or raw text) with a status, headers and a delay; or a
    transport fault (``truncate``, ``reset``, ``drop``)."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    raw: str | None = None
    content_type: str = "application/json"
    truncate: int | None = None
    reset: bool = False
    drop: bool = False


def completion(
    content: str,
    prompt_tokens: int = 100,
    completion_tokens: int = 20,
    cached_tokens: int | None = None,
    finish_reason: str = "stop",
) -> Reply:
    """A successful chat completion whose message is ``content``; with ``cached_tokens``, its
    usage has ``prompt_tokens_details.cached_tokens`` (prompt tokens served from the server's
    prompt cache), as OpenAI and llama.cpp report them; ``finish_reason`` ``length`` for a reply
    cut at ``max_tokens``."""
    usage: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    if cached_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
    return Reply(
        body={
            "id": "chatcmpl-stub",
            "object": "chat.completion",
            "created": 0,
            "model": "stub",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": finish_reason,
                    "message": {"role": "assistant", "content": content},
                }
            ],
            "usage": usage,
        }
    )


def context_exceeded(prompt_tokens: int, n_ctx: int) -> Reply:
    """llama.cpp's server's answer to a prompt longer than a slot's context (a 400 with type
    ``exceed_context_size_error``; OpenAI's says ``context_length_exceeded``)."""
    return Reply(
        status=400,
        body={
            "error": {
                "code": 400,
                "message": f"request ({prompt_tokens} tokens) exceeds the available context size "
                f"({n_ctx} tokens), try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": prompt_tokens,
                "n_ctx": n_ctx,
            }
        },
    )


def error(status: int, message: str, headers: dict[str, str] | None = None) -> Reply:
    """An OpenAI-style error reply."""
    return Reply(
        status=status, body={"error": {"message": message, "type": "stub"}}, headers=headers or {}
    )


def html_page(status: int = 200, title: str = "502 Bad Gateway") -> Reply:
    """An HTML error page, as a proxy in front of the endpoint sends it (not JSON)."""
    page = f"<html><head><title>{title}</title></head><body><h1>{title}</h1><hr>nginx</body></html>"
    return Reply(status=status, raw=page, content_type="text/html")


def truncated(reply: Reply, keep: int | None = None) -> Reply:
    """``reply`` with its body cut after ``keep`` bytes (default: half), then the connection
    closed: the client reads a short body (or fails to read the rest)."""
    data = reply.raw if reply.raw is not None else json.dumps(reply.body)
    reply.truncate = len(data.encode()) // 2 if keep is None else keep
    return reply


def reset_mid_body(reply: Reply, keep: int | None = None) -> Reply:
    """``reply`` cut after ``keep`` bytes (default: half) by a TCP reset."""
    truncated(reply, keep)
    reply.reset = True
    return reply


def dropped() -> Reply:
    """No reply at all: the connection is closed as soon as the request is read."""
    return Reply(drop=True)


def embedding_of(text: str, dim: int = 32) -> list[float]:
    """A deterministic pseudo-embedding of a text (bag of hashed words, normalised)."""
    vector = [0.0] * dim
    for word in re.findall(r"\w+", text.lower()):
        h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "big")
        vector[h % dim] += 1.0 if h & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


Script = Callable[[dict[str, Any], int], Reply]


class _QuietServer(ThreadingHTTPServer):
    """A client that gives up on a slow reply (a timeout test) is expected: no traceback."""

    request_queue_size = 1024  # a burst of new connections must not overflow the listen queue

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


class StubServer:
    """The server, started on a free loopback port; use as a context manager."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.received: list[tuple[str, list[tuple[str, str]], bytes]] = []
        """Each request as it came: its request line, its headers in order, its body."""
        self.in_flight = 0
        self.peak = 0
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go in two writes: no 40 ms wait

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                payload = json.loads(raw or b"{}")
                with stub._lock:
                    number = len(stub.requests)
                    stub.requests.append(payload)
                    stub.paths.append(self.path)
                    stub.received.append((self.requestline, list(self.headers.items()), raw))
                    stub.in_flight += 1
                    stub.peak = max(stub.peak, stub.in_flight)
                try:
                    if self.path.split("?")[0].endswith("/embeddings"):
                        inputs = payload["input"]
                        inputs = [inputs] if isinstance(inputs, str) else inputs
                        reply = Reply(
                            body={
                                "object": "list",
                                "model": payload.get("model"),
                                "data": [
                                    {
                                        "object": "embedding",
                                        "index": i,
                                        "embedding": embedding_of(t),
                                    }
                                    for i, t in enumerate(inputs)
                                ],
                                "usage": {"prompt_tokens": 5 * len(inputs), "total_tokens": 5},
                            }
                        )
                    else:
                        reply = stub.script(payload, number)
                    if reply.delay:
                        time.sleep(reply.delay)
                    if reply.drop:
                        self._abort(reset=reply.reset)
                        return
                    data = (reply.raw if reply.raw is not None else json.dumps(reply.body)).encode()
                    self.send_response(reply.status)
                    self.send_header("Content-Type", reply.content_type)
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    if reply.truncate is not None:
                        data = data[: reply.truncate]
                    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                        self.wfile.write(data)
                        if reply.truncate is not None:
                            self.wfile.flush()
                            self._abort(reset=reply.reset)
                finally:
                    with stub._lock:
                        stub.in_flight -= 1

            def _abort(self, reset: bool) -> None:
                """Close the connection now; with ``reset``, by a TCP RST (SO_LINGER 0)."""
                self.close_connection = True
                with contextlib.suppress(OSError):
                    if reset:
                        self.connection.setsockopt(
                            socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                        )
                    else:
                        self.connection.shutdown(socket.SHUT_RDWR)
                    self.connection.close()

        self.httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        # Checking for shutdown every 10 ms (not the default 0.5 s) lets a test end at once.
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    def __enter__(self) -> StubServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        """The chat completion requests received, in order of arrival."""
        return [r for r, p in zip(self.requests, self.paths) if "chat/completions" in p]


def prompt_text(request: dict[str, Any]) -> str:
    """All message contents of a chat request, joined."""
    return "\n".join(str(m.get("content", "")) for m in request.get("messages", []))


def asked_text(request: dict[str, Any]) -> str:
    """The prompt of a chat request as first asked: its messages before the first assistant
    message (a re-ask adds the reply and the problem after them), joined."""
    texts = []
    for message in request.get("messages") or []:
        if message.get("role") == "assistant":
            break
        texts.append(str(message.get("content", "")))
    return "\n".join(texts)


def oracle_content(request: dict[str, Any]) -> str:
    """A plausible, deterministic judge reply for any qa-eval prompt, chosen by its marker; it
    depends on the prompt as first asked only (:func:`asked_text`: the system and user messages
    before any reply), so a re-asked prompt gets the same answer."""
    text = asked_text(request)
    seed = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
    if "[qa-eval:answer-correctness]" in text:
        ref = 1 + seed % 4
        act = 1 + (seed >> 3) % 4
        return json.dumps(
            {
                "reference_claims_count": ref,
                "actual_claims_count": act,
                "matching_claims_count": min(ref, act, (seed >> 6) % 4),
                "reason": "claims compared",
            }
        )
    if "[qa-eval:answer-relevance]" in text:
        n = (
            int(re.search(r"exactly (\d+) questions", text).group(1))
            if re.search(r"exactly (\d+) questions", text)
            else 3
        )
        question = re.search(r"<question>\n?(.*?)\n?</question>", text, re.S)
        base = question.group(1) if question else "what is it"
        return json.dumps(
            {
                "questions": [
                    {"question": f"{base} {'variant ' * i}".strip(), "noncommittal": 0}
                    for i in range(n)
                ]
            }
        )
    if "[qa-eval:context-quality]" in text:  # the combined precision + recall call
        count = len(re.findall(r"<chunk id=", text))
        return json.dumps(
            {
                "verdicts": [
                    {"chunk": i + 1, "relevant": bool((seed >> i) & 1), "reason": "r"}
                    for i in range(count)
                ],
                "statements": [
                    {"statement": "s1", "attributed": True, "reason": "r"},
                    {"statement": "s2", "attributed": bool(seed & 1), "reason": "r"},
                ],
            }
        )
    if "[qa-eval:context-verdicts]" in text or "[qa-eval:context-relevance]" in text:
        count = len(re.findall(r"<chunk id=", text))
        return json.dumps(
            {
                "verdicts": [
                    {"chunk": i + 1, "relevant": bool((seed >> i) & 1), "reason": "r"}
                    for i in range(count)
                ]
            }
        )
    if "[qa-eval:statements-attribution]" in text:
        return json.dumps(
            {
                "statements": [
                    {"statement": "s1", "attributed": True, "reason": "r"},
                    {"statement": "s2", "attributed": bool(seed & 1), "reason": "r"},
                ]
            }
        )
    if "[qa-eval:faithfulness-statements]" in text:
        answer = re.search(r"<answer>\n?(.*?)\n?</answer>", text, re.S)
        sentences = re.split(r"(?<=[.!?])\s+", answer.group(1).strip()) if answer else []
        return json.dumps({"statements": [s for s in sentences if s]})
    if "[qa-eval:faithfulness-verdicts]" in text:
        count = len(re.findall(r"<statement id=", text))
        return json.dumps(
            {
                "verdicts": [
                    {"statement": i + 1, "reason": "r", "verdict": int(i == 0 or (seed >> i) & 1)}
                    for i in range(count)
                ]
            }
        )
    if "[qa-eval:geval]" in text:
        scores = [10 * (5 + (seed >> (4 * i)) % 6) for i in range(3)]
        return json.dumps(
            {
                name: {"score": score, "reason": f"{name} judged"}
                for name, score in zip(("correctness", "completeness", "consistency"), scores)
            }
        )
    if "[qa-eval:classify]" in text:
        return json.dumps({"label": "CORRECT" if seed & 1 else "WRONG", "reason": "compared"})
    if "[qa-eval:relevance-rubric]" in text:
        levels = ("complete", "mostly", "partial", "tangential", "irrelevant")
        return json.dumps({"level": levels[seed % 5], "reason": "rubric"})
    if "[qa-eval:agent-goal-outcome]" in text:
        return json.dumps({"user_goal": "the user's goal", "end_state": "what the agent did"})
    if "[qa-eval:agent-goal-compare]" in text:
        return json.dumps({"reason": "outcomes compared", "verdict": seed & 1})
    if "[qa-eval:trajectory-judgement" in text:  # with and without a reference
        ratings = {"logical": seed % 3, "efficient": (seed >> 2) % 3, "equivalent": (seed >> 4) % 3}
        if "[qa-eval:trajectory-judgement-free]" in text:
            ratings.pop("equivalent")
        return json.dumps({"reason": "trajectory judged", **ratings})
    if "[qa-eval:custom]" in text:
        outputs = re.findall(r'^- "(\w+)"', text, re.M)
        return json.dumps({name: 1 for name in outputs} | {"reason": "ok"})
    return json.dumps({"reason": "unknown prompt"})


def tokens_of(text: str) -> int:
    """A token count of a text, as the scripted servers count it (4 characters a token)."""
    return (len(text) + 3) // 4


class LlamaLike:
    """A script that behaves as llama.cpp's server (``llama-server``, xllamacpp) does with a
    small model, as seen in practice:

    - ``slots`` requests are generated at a time, each at ``seconds_per_token``; the others wait.
      A request the client gave up on (a timeout) is still generated to its end: its slot stays
      busy, as on the real server.
    - Without ``max_tokens`` a model that ``runs_away`` (``True``, or a predicate of the
      request) writes until its context is full (``n_ctx`` tokens per slot) and the reply is cut
      (``finish_reason: length``); with ``max_tokens`` it is cut there. Otherwise the reply is
      ``content(request)`` (default: :func:`oracle_content`), cut at ``max_tokens`` if longer.
    - A prompt longer than ``n_ctx`` gets :func:`context_exceeded` (a 400).
    - ``response_format``: ``json_schema`` and ``json_object`` with a ``schema`` are enforced
      (the content is given as is); plain ``json_object`` and text get ``unconstrained(request)``
      when given (default: the same content). ``formats`` lists the types it refuses with
      llama.cpp's 400 (``response_format type must be one of ...``).
    - The usage counts 4 characters a token and reports ``prompt_tokens_details.cached_tokens``:
      the longest prefix (in whole tokens) the prompt shares with an earlier prompt, as the
      server's prompt cache reuses it.
    """

    def __init__(
        self,
        content: Callable[[dict[str, Any]], str] | None = None,
        *,
        slots: int = 1,
        seconds_per_token: float = 0.0,
        n_ctx: int = 4096,
        runs_away: bool | Callable[[dict[str, Any]], bool] = False,
        unconstrained: Callable[[dict[str, Any]], str] | None = None,
        refuse: tuple[str, ...] = (),
    ) -> None:
        self.content = content or oracle_content
        self.slots = threading.Semaphore(slots)
        self.seconds_per_token = seconds_per_token
        self.n_ctx = n_ctx
        self.runs_away = runs_away
        self.unconstrained = unconstrained
        self.refuse = refuse
        self.prompts: list[str] = []
        self.generated: list[int] = []
        """Completion tokens generated per request, in order of completion."""
        self.usage: list[tuple[int, int, int]] = []
        """(prompt, completion, cached prompt) tokens of each reply, in order of completion."""
        self._lock = threading.Lock()

    def _cached(self, prompt: str) -> int:
        best = 0
        for earlier in self.prompts:
            n = 0
            for a, b in zip(prompt, earlier):
                if a != b:
                    break
                n += 1
            best = max(best, n)
        return best // 4

    def __call__(self, request: dict[str, Any], number: int) -> Reply:
        prompt = "\n".join(
            f"<{m.get('role')}>{m.get('content', '')}" for m in request.get("messages") or []
        )
        prompt_tokens = tokens_of(prompt)
        if prompt_tokens > self.n_ctx:
            return context_exceeded(prompt_tokens, self.n_ctx)
        response_format = request.get("response_format") or {}
        kind = response_format.get("type", "text")
        if kind in self.refuse:
            return error(
                400, f'response_format type must be one of "text" or "json_object", but got: {kind}'
            )
        constrained = kind == "json_schema" or (
            kind == "json_object" and "schema" in response_format
        )
        text = self.content(request)
        if not constrained and self.unconstrained is not None:
            text = self.unconstrained(request)
        limit = request.get("max_tokens")
        away = self.runs_away(request) if callable(self.runs_away) else self.runs_away
        room = self.n_ctx - prompt_tokens
        budget = min(limit, room) if isinstance(limit, int) else room
        if away:  # a string that never ends, as a weak model writes one under a grammar
            text = text.rstrip().rstrip("}") + ', "more": "' + "and so on " * (budget + 1)
        written = min(tokens_of(text), budget)
        cut = tokens_of(text) > budget
        with self._lock:
            cached = self._cached(prompt)
            self.prompts.append(prompt)
        with self.slots:  # generated one slot at a time, whether or not the client still waits
            if self.seconds_per_token:
                time.sleep(written * self.seconds_per_token)
        with self._lock:
            self.generated.append(written)
            self.usage.append((prompt_tokens, written, cached))
        return completion(
            text[: written * 4] if cut else text,
            prompt_tokens,
            written,
            cached_tokens=cached,
            finish_reason="length" if cut else "stop",
        )


FAULTS = ("429", "500", "garbage")
"""The fault kinds ``oracle`` injects by default."""
TRANSPORT_FAULTS = (
    "429",
    "500",
    "bad-retry-after",
    "html",
    "not-json",
    "truncated",
    "reset",
    "drop",
    "no-choices",
)
"""Faults that carry no judge text: a run that retries them gets the values of a clean run."""


def fault_reply(kind: str, latency: float = 0.0) -> Reply:
    """One injected fault: ``429`` (Retry-After 0.05), ``500``, ``garbage`` (a completion whose
    text is not JSON, different each time), ``bad-retry-after`` (429 with ``Retry-After:
    soon``), ``html`` (an HTML page with status 200), ``not-json`` (status 200, JSON content
    type, a body cut mid-object with a matching length), ``truncated`` (the body cut short under
    its full length, then the connection closed), ``reset`` (a TCP reset mid-body), ``drop``
    (no reply at all), ``no-choices`` (JSON that is not a chat completion)."""
    if kind == "429":
        return error(429, "slow down", {"Retry-After": "0.05"})
    if kind == "500":
        return Reply(status=500, body={"error": {"message": "internal error"}}, delay=latency)
    if kind == "garbage":
        # a different text each time, as a transient fault's is (the judge stops re-asking a
        # reply that repeats itself exactly, as a model at temperature 0 does)
        reply = completion(f"I think the answer is fine ({random.random():.6f}).", 50, 10)
    elif kind == "bad-retry-after":
        reply = error(429, "slow down", {"Retry-After": "soon"})
    elif kind == "html":
        reply = html_page(200)
    elif kind == "not-json":
        reply = Reply(raw='{"id": "chatcmpl-stub", "choices": [{"index": 0, "mess')
    elif kind == "truncated":
        reply = truncated(completion('{"reason": "cut"}'))
    elif kind == "reset":
        reply = reset_mid_body(completion('{"reason": "reset"}'))
    elif kind == "drop":
        reply = dropped()
    elif kind == "no-choices":
        reply = Reply(body={"object": "error", "detail": "upstream timed out"})
    else:
        raise ValueError(f"unknown fault kind {kind!r}")
    reply.delay = latency
    return reply


def oracle(
    latency: float = 0.0,
    fault_rate: float = 0.0,
    seed: int = 1,
    faults: tuple[str, ...] = FAULTS,
) -> Script:
    """The benchmark script: correct replies after ``latency`` seconds; with ``fault_rate``,
    that share of calls fails with one of ``faults`` (see :func:`fault_reply`; by default 429
    with Retry-After, 500, or text that is not JSON)."""
    rng = random.Random(seed)
    lock = threading.Lock()

    def script(request: dict[str, Any], number: int) -> Reply:
        with lock:
            roll = rng.random()
            kind = rng.randrange(len(faults))
        if roll < fault_rate:
            return fault_reply(faults[kind], latency)
        text = prompt_text(request)
        reply = completion(
            oracle_content(request), prompt_tokens=len(text) // 4, completion_tokens=40
        )
        reply.delay = latency
        return reply

    return script


def main() -> None:
    """Serve the oracle until killed; print the port on the first line."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--fault-rate", type=float, default=0.0)
    parser.add_argument(
        "--faults",
        default=",".join(FAULTS),
        help=f"comma-separated fault kinds (default {','.join(FAULTS)}; also "
        f"{','.join(k for k in TRANSPORT_FAULTS if k not in FAULTS)})",
    )
    args = parser.parse_args()
    kinds = tuple(k.strip() for k in args.faults.split(",") if k.strip())
    server = StubServer(oracle(args.latency, args.fault_rate, faults=kinds))
    with server:
        print(server.port, flush=True)
        try:
            for line in sys.stdin:
                if line.strip() == "stats":
                    print(
                        json.dumps(
                            {
                                "requests": len(server.requests),
                                "peak": server.peak,
                                "chat": len(server.chat_requests),
                            }
                        ),
                        flush=True,
                    )
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
