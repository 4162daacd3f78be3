"""What the ragas parity tests (``tests/integration/test_ragas_parity*.py``) share: one scripted
judge answering both sides over real HTTP, and the stub, loop and client it runs behind.

A :class:`ParityScript` is a ``StubServer`` script. It recognises qa-eval's prompts by their
``[qa-eval:<kind>]`` marker and ragas' by a phrase of their instruction, reads what is judged
from each (qa-eval's tagged blocks; ragas' JSON input after "Now perform the same with the
following input") and answers with the verdicts of the table the test set (``use``), in each
side's reply format; it records the (side, kind) of every request, and a prompt the table does not
cover becomes a 400 reply and a ``problems`` entry (the test fails, not the server). A module
subclasses it with its tables of phrases and its two answerers, ``ours`` and ``theirs``.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

import pytest

from openai_stub import Reply, StubServer, completion

__all__ = ["RAGAS_INPUT", "ParityScript", "numbered", "parity_stub", "tagged"]

RAGAS_INPUT = "Now perform the same with the following input\ninput: "
"""What precedes the JSON input of a ragas prompt."""

T = TypeVar("T")


def tagged(text: str, tag: str) -> str:
    """The text of the first ``<tag>`` block of a qa-eval prompt."""
    found = re.search(rf"<{tag}>\n(.*?)\n</{tag}>", text, re.S)
    assert found, f"no <{tag}> in the prompt"
    return found.group(1)


def numbered(text: str, tag: str) -> list[tuple[int, str]]:
    """The ``<tag id="n">`` blocks of a qa-eval prompt, as (n, text)."""
    found = re.findall(rf'<{tag} id="(\d+)">\n(.*?)\n</{tag}>', text, re.S)
    return [(int(i), body) for i, body in found]


class ParityScript(Generic[T]):
    """Answers qa-eval's prompts and ragas' from one table of verdicts (see the module)."""

    OUR_MARKERS: Mapping[str, str] = {}
    """``[qa-eval:...]`` marker -> kind; empty: the marker's name is the kind."""
    RAGAS_PHRASES: Mapping[str, str] = {}
    """A phrase of a ragas prompt's instruction -> kind."""
    FIRST_LINE = True
    """Whether a ragas phrase is looked for in the prompt's first line only (else in all of its
    instruction, before the input)."""

    def __init__(self, table: T) -> None:
        self.table = table
        self.calls: list[tuple[str, str]] = []
        """(side, kind) of each chat request."""
        self.problems: list[str] = []
        """Prompts or cases the table does not cover."""
        self.lock = threading.Lock()

    def use(self, table: T) -> None:
        """Answer from ``table`` from now on, the records cleared."""
        with self.lock:
            self.table = table
            self.calls.clear()
            self.problems.clear()

    def count(self, side: str, kind: str | None = None) -> int:
        """Chat requests of one side (and kind)."""
        return sum(1 for s, k in self.calls if s == side and (kind is None or k == kind))

    def __call__(self, request: dict[str, Any], number: int) -> Reply:
        try:
            side, kind, reply = self.answer(request.get("messages") or [])
        except Exception as e:  # a case the table does not cover: fail the test, not the server
            with self.lock:
                self.problems.append(f"{type(e).__name__}: {e}")
            return Reply(status=400, body={"error": {"message": str(e), "type": "stub"}})
        with self.lock:
            self.calls.append((side, kind))
        return completion(json.dumps(reply))

    def answer(self, messages: list[dict[str, Any]]) -> tuple[str, str, Any]:
        """(side, kind, reply) of one chat request."""
        # ours: the instructions and the data, before any re-asked reply
        asked = []
        for message in messages:
            if message.get("role") == "assistant":
                break
            asked.append(str(message.get("content", "")))
        first = "\n".join(asked)
        kind = self._our_kind(first)
        if kind is not None:
            return "ours", kind, self.ours(kind, first)
        # instructor's JSON mode puts its own system message first: the prompt is the last user
        # message, its input the JSON after RAGAS_INPUT
        user = [str(m.get("content", "")) for m in messages if m.get("role") == "user"]
        prompt = user[-1] if user else ""
        instruction, _, given = prompt.rpartition(RAGAS_INPUT)
        where = prompt.split("\n", 1)[0] if self.FIRST_LINE else instruction
        for phrase, kind in self.RAGAS_PHRASES.items():
            if phrase in where:
                data = json.loads(given.rsplit("\nOutput:", 1)[0])
                with self.lock:
                    return "ragas", kind, self.theirs(kind, data)
        raise ValueError(f"unrecognised prompt: {(prompt or first)[:120]!r}")

    def _our_kind(self, text: str) -> str | None:
        if self.OUR_MARKERS:
            return next((k for m, k in self.OUR_MARKERS.items() if m in text), None)
        found = re.search(r"\[qa-eval:([\w-]+)\]", text)
        return found.group(1) if found else None

    def ours(self, kind: str, text: str) -> Any:
        """The reply to qa-eval's prompt of ``kind``."""
        raise NotImplementedError

    def theirs(self, kind: str, data: Any) -> Any:
        """The reply to ragas' prompt of ``kind`` on its JSON input ``data``."""
        raise NotImplementedError


@contextmanager
def parity_stub(
    script: ParityScript[Any], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[StubServer, asyncio.AbstractEventLoop, Any]]:
    """A stub answering with ``script``, one event loop and one ``AsyncOpenAI`` client of it
    (no retries of its own) for a whole module; the client is closed and the loop too after."""
    from openai import AsyncOpenAI

    loop = asyncio.new_event_loop()
    with pytest.MonkeyPatch.context() as mp, StubServer(script) as server:
        # ragas makes an analytics user id (uuid.json) under the user data dir even when it does
        # not track: keep it out of the home directory
        mp.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("xdg-data")))
        client = AsyncOpenAI(base_url=server.url, api_key="test", max_retries=0)
        try:
            yield server, loop, client
        finally:
            loop.run_until_complete(client.close())
            loop.close()
