"""graphrag-eval 6.6.1's config and call forms, as its users write them (issue: a true drop-in)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from openai_stub import StubServer
from qa_eval import run_evaluation
from qa_eval.config import parse_config
from qa_eval.errors import InputError

REFERENCE = [
    {
        "template_id": "t",
        "questions": [
            {"id": "q1", "question_text": "Capital of France?", "reference_answer": "Paris"},
        ],
    }
]
RESPONSES = {"q1": {"question_id": "q1", "actual_answer": "Paris"}}


def test_extra_generation_keys_are_sent_with_every_judge_call(stub: StubServer) -> None:
    config = {
        "llm": {
            "generation": {
                "provider": "openai",
                "model": "gpt-4o-mini",
                "base_url": stub.url,
                "api_key": "x",
                "seed": 42,
                "top_p": 0.5,
            }
        },
        "answer_relevance": {"enabled": False},
    }
    parsed = parse_config(config)
    assert parsed.generation is not None and dict(parsed.generation.extra) == {
        "seed": 42,
        "top_p": 0.5,
    }
    results = run_evaluation(copy.deepcopy(REFERENCE), RESPONSES, config=config, cache=False)
    assert "answer_f1" in results[0]
    assert stub.requests, "no judge call was made"
    for request in stub.requests:
        assert request["seed"] == 42 and request["top_p"] == 0.5
    # the extra keys are part of what a reply is cached under, and of the signature
    assert results.signature["judge"]["extra"] == {"seed": 42, "top_p": 0.5}


@pytest.mark.parametrize("temperature", [-0.1, 2.01, 7])
def test_temperature_outside_0_to_2_is_refused_at_load(temperature: float) -> None:
    with pytest.raises(InputError, match="temperature"):
        parse_config({"llm": {"generation": {"model": "m", "temperature": temperature}}})


def test_temperature_2_is_allowed() -> None:
    config = parse_config({"llm": {"generation": {"model": "m", "temperature": 2}}})
    assert config.generation is not None and config.generation.temperature == 2.0


@pytest.mark.parametrize("provider", ["ollama", "cohere", "bedrock"])
def test_embedding_provider_of_the_original_is_accepted(provider: str) -> None:
    config = parse_config(
        {
            "llm": {
                "generation": {"provider": "openai", "model": "gpt-4o-mini", "api_key": "x"},
                "embedding": {"provider": provider, "model": "nomic-embed-text", "dims": 8},
            }
        }
    )
    assert config.embedding.provider == provider
    assert dict(config.embedding.extra) == {"dims": 8}
    from qa_eval.judge.embeddings import LiteLLMEmbedder, make_embedder

    assert isinstance(make_embedder(config.embedding), LiteLLMEmbedder)


CUSTOM = {
    "name": "retrieval",
    "inputs": ["question", "actual_answer"],
    "instructions": "Judge it.",
    "outputs": {"retrieval_recall": "0 to 1", "retrieval_reason": "why"},
}


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"custom_evaluations": [CUSTOM]}, "required when custom_evaluations are given"),
        ({"answer_correctness": {"enabled": True}}, "required when answer_correctness is enabled"),
        ({"llm": {"generation": {}}, "custom_evaluations": []}, "at least one metric"),
    ],
)
def test_llm_metrics_without_an_llm_are_a_config_error(
    config: dict[str, Any], message: str
) -> None:
    with pytest.raises(InputError, match=message) as caught:
        parse_config(config, "config.yaml")
    # callers of graphrag-eval catch ValueError
    assert isinstance(caught.value, ValueError)


def test_config_error_through_run_evaluation_is_a_value_error(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("custom_evaluations: []\n", encoding="utf-8")
    with pytest.raises(ValueError, match="custom_evaluations"):
        run_evaluation(REFERENCE, RESPONSES, config=str(path))
