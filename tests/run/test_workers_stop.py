"""A run with worker processes that is stopped: a worker killed, Ctrl-C, bad input. The exit codes
are a run's in one process (1 with one line, 130, 2), and no process is left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_merge import _data

SRC = Path(__file__).resolve().parents[2] / "src"


def _children(pid: int) -> set[int]:
    """The worker processes whose parent is ``pid`` (from /proc; multiprocessing's resource
    tracker, a child too, is not a worker)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == pid and b"spawn_main" in command:
            found.add(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[0] != "Z"


ENV = {**os.environ, "PYTHONPATH": str(SRC)}


def _command(folder: Path, questions: int, form: str = "json") -> list[str]:
    """``qa-eval evaluate`` with two workers on generated data of ``questions`` questions (the
    reference as JSON, or in JSON Lines: read as a stream, its ranges checked by the workers)."""
    ref, resp = _data(folder, questions)
    if form == "jsonl":
        import orjson

        lines = ref.with_suffix(".jsonl")
        lines.write_bytes(b"".join(orjson.dumps(t) + b"\n" for t in orjson.loads(ref.read_bytes())))
        ref = lines
    command = [sys.executable, "-m", "qa_eval", "evaluate", str(ref), str(resp)]
    return [*command, "-o", str(folder / "out.jsonl"), "--workers", "2", "-q", "--no-judge"]


def _start(folder: Path, form: str) -> subprocess.Popen[bytes]:
    command = _command(folder, 20000, form)
    return subprocess.Popen(command, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _workers(process: subprocess.Popen[bytes], want: int = 2) -> set[int]:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and process.poll() is None:
        found = _children(process.pid)
        if len(found) >= want:
            return found
        time.sleep(0.02)
    pytest.fail("the run's worker processes never started")


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads processes from /proc")
@pytest.mark.parametrize("stop", ["kill a worker", "ctrl-c"])
@pytest.mark.parametrize("form", ["json", "jsonl"])
def test_a_stopped_run_leaves_no_process(tmp_path: Path, stop: str, form: str) -> None:
    process = _start(tmp_path, form)
    workers = _workers(process)
    if stop == "kill a worker":
        os.kill(min(workers), signal.SIGKILL)
    else:
        process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=180)
    text = err.decode()
    if stop == "kill a worker":
        assert process.returncode == 1, text
        assert "worker process ended" in text
    else:
        assert process.returncode == 130, text
    assert "Traceback" not in text
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in workers)


@pytest.mark.parametrize("form", ["json", "jsonl"])
def test_bad_input_with_workers_is_exit_2(tmp_path: Path, form: str) -> None:
    command = _command(tmp_path, 100, form)
    responses = tmp_path / "responses.jsonl"
    responses.write_bytes(
        responses.read_bytes() + b'{"question_id": "q0-0", "actual_answer": "x"}\n'
    )
    done = subprocess.run(command, env=ENV, capture_output=True, check=False)
    assert done.returncode == 2
    assert done.stderr.decode().count("\n") == 1
    assert "duplicate response" in done.stderr.decode()
    assert not (tmp_path / "out.jsonl").exists()
