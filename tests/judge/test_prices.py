"""Prices: genai-prices' data, config overrides, unknown models, cached-input and batch rates."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest
from pydantic import BaseModel

from qa_eval.errors import JudgeError
from qa_eval.judge.prices import price_of, usd

pytest.importorskip("genai_prices")


def test_known_model_has_standard_cached_and_batch_rates() -> None:
    price = price_of("gpt-4o-mini")
    assert price is not None
    assert price["input"] > 0 and price["output"] > price["input"]
    assert 0 < price["cached_input"] < price["input"]
    assert price["batch_input"] == pytest.approx(price["input"] / 2)
    assert price["batch_output"] == pytest.approx(price["output"] / 2)


@pytest.mark.parametrize("name", ["gpt-4o-mini-2024-07-18", "openai/gpt-4o-mini"])
def test_dated_and_vendor_prefixed_names_find_the_same_price(name: str) -> None:
    assert price_of(name) == price_of("gpt-4o-mini")


def test_embedding_model_has_an_input_rate_and_zero_output() -> None:
    price = price_of("text-embedding-3-small")
    assert price is not None and price["input"] > 0 and price["output"] == 0.0


@pytest.mark.parametrize("name", ["qwen2.5:7b-instruct", "my-azure-deployment", "no/such-model"])
def test_unknown_model_has_no_price(name: str) -> None:
    assert price_of(name) is None
    assert usd(price_of(name), 1000, 100) is None


def test_config_override_wins_and_zero_is_a_known_price() -> None:
    overrides = {"gpt-4o-mini": {"input": 1.0, "output": 2.0}, "local": {"input": 0, "output": 0}}
    assert price_of("gpt-4o-mini", overrides) == {"input": 1.0, "output": 2.0}
    assert price_of("local", overrides) == {"input": 0.0, "output": 0.0}
    assert usd(price_of("local", overrides), 5000, 500) == 0.0


def test_usd_prices_cached_tokens_and_batch() -> None:
    price = {"input": 2.0, "output": 8.0, "cached_input": 0.5}
    assert math.isclose(usd(price, 1_000_000, 0) or 0, 2.0)
    # 400k of 1M prompt tokens came from the provider's cache
    assert math.isclose(usd(price, 1_000_000, 0, cached_tokens=400_000) or 0, 1.2 + 0.2)
    # more cached than prompt tokens (a server's mistake) is capped at the prompt
    assert math.isclose(usd(price, 1000, 0, cached_tokens=5000) or 0, 1000 * 0.5 / 1e6)
    # batch without batch rates: half the standard rates
    assert math.isclose(usd(price, 1_000_000, 1_000_000, batch=True) or 0, 1.0 + 4.0)
    explicit = {**price, "batch_input": 0.3, "batch_output": 1.0}
    assert math.isclose(usd(explicit, 1_000_000, 1_000_000, batch=True) or 0, 1.3)


def _failing_judge(model: str) -> Any:
    """A judge of ``model`` whose endpoint answers every call with a 400 (no reply to price)."""
    from openai_stub import StubServer, error
    from qa_eval.config import parse_config
    from qa_eval.judge.calls import Judge

    class Reply(BaseModel):
        score: int

    with StubServer(lambda request, number: error(400, "no")) as server:
        generation = {"provider": "openai", "base_url": server.url, "api_key": "x", "model": model}
        judge = Judge(parse_config({"llm": {"generation": generation}}))
        assert not judge._priced  # looked up at first use, not when the judge is made
        messages = [{"role": "user", "content": "hi"}]
        with pytest.raises(JudgeError):
            asyncio.run(judge.ask("score", messages, Reply))
    return judge


@pytest.mark.parametrize(("model", "cost"), [("no-such-model-xyz", None), ("gpt-4o-mini", 0.0)])
def test_a_cost_is_unknown_without_a_price_even_when_no_reply_came(
    model: str, cost: float | None
) -> None:
    """The price is looked up at first use (after the first request, in a run), yet every usage
    made before says whether its cost is known: an unpriced model's cost is None, never 0."""
    judge = _failing_judge(model)
    assert judge.total.as_dict()["cost"] == cost
    assert judge.usage["score"].as_dict()["cost"] == cost
    assert judge.usage["score"].failures == 1
