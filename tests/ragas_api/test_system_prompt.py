"""``llm_factory(model, client=..., system_prompt="...")`` as ragas documents it: the text is sent
as the system message of every call (before qa-eval's own fixed instructions), never as a
request-body key, over real HTTP against a scripted server that refuses unknown arguments as
OpenAI's API does."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("openai")
pytest.importorskip("pydantic")

from openai import AsyncOpenAI

from openai_stub import Reply, StubServer, oracle
from qa_eval.errors import SetupError
from qa_eval.llms import llm_factory
from qa_eval.metrics.collections import Faithfulness, score_rows

PROMPT = "You are a meticulous fact checker. Answer in English."
ROW = {
    "user_input": "When was it?",
    "response": "It was in 1967. It was in Los Angeles. It rained.",
    "retrieved_contexts": ["The game was played on January 15, 1967 in Los Angeles."],
}


def strict(request: dict[str, Any], number: int) -> Reply:
    """The oracle judge, refusing a body with a key the API does not know (as OpenAI does)."""
    if "system_prompt" in request:
        message = "Unrecognized request argument supplied: system_prompt"
        return Reply(status=400, body={"error": {"message": message, "type": "invalid_request"}})
    return oracle()(request, number)  # type: ignore[no-any-return]


def _checked(requests: list[dict[str, Any]]) -> None:
    assert requests
    for body in requests:
        assert "system_prompt" not in body
        first = body["messages"][0]
        assert first["role"] == "system" and first["content"].startswith(PROMPT)
        assert sum(m["role"] == "system" for m in body["messages"]) == 1


def test_system_prompt_is_the_system_message() -> None:
    with StubServer(strict) as server:
        client = AsyncOpenAI(base_url=server.url, api_key="sk-test")
        llm = llm_factory("gpt-4o-mini", client=client, system_prompt=PROMPT, cache=False)
        assert llm.system_prompt == PROMPT
        result = asyncio.run(Faithfulness(llm=llm).ascore(**ROW))
        assert result.error is None and result.value is not None
        _checked(server.chat_requests)
        before = len(server.chat_requests)
        rows = score_rows([Faithfulness(llm=llm)], [ROW])  # one run's judge: the same message
        assert rows[0].get("faithfulness_error") is None
        _checked(server.chat_requests[before:])


def test_without_a_system_prompt_nothing_is_added() -> None:
    with StubServer(strict) as server:
        client = AsyncOpenAI(base_url=server.url, api_key="sk-test")
        llm = llm_factory("gpt-4o-mini", client=client, cache=False)
        assert llm.system_prompt is None
        asyncio.run(Faithfulness(llm=llm).ascore(**ROW))
        for body in server.chat_requests:
            assert all(PROMPT not in str(m.get("content")) for m in body["messages"])


def test_a_system_prompt_that_is_not_text_is_refused() -> None:
    client = AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="sk-test")
    with pytest.raises(ValueError, match="system_prompt must be str, got int") as caught:
        llm_factory("gpt-4o-mini", client=client, system_prompt=3)
    assert isinstance(caught.value, SetupError)
