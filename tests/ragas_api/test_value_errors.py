"""Where ragas 0.4.3 raises ``ValueError`` (no LLM, or one not from ``llm_factory``, given to a
metric; ``llm_factory("")``; embeddings of another kind), qa-eval raises a ``ValueError`` too (a
``SetupError``, still a ``QaEvalError``: one line at the CLI), so code written against ragas that
catches ``ValueError`` keeps working."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("openai")
pytest.importorskip("pydantic")

from openai import AsyncOpenAI

from qa_eval.embeddings import embedding_factory
from qa_eval.errors import QaEvalError, SetupError
from qa_eval.llms import llm_factory
from qa_eval.metrics import collections


@pytest.fixture
def llm() -> Any:
    return llm_factory("gpt-4o-mini", client=AsyncOpenAI(api_key="sk-test", base_url="http://x"))


def _refused(make: Any, match: str) -> None:
    with pytest.raises(ValueError, match=match) as caught:
        make()
    assert isinstance(caught.value, SetupError) and isinstance(caught.value, QaEvalError)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("wrong", [None, "gpt-4o-mini", object()])
@pytest.mark.parametrize(
    "metric", ["Faithfulness", "ContextRecall", "AnswerAccuracy", "ToolCallAccuracy"]
)
def test_a_metric_given_no_llm_or_a_wrong_one(metric: str, wrong: Any) -> None:
    cls = getattr(collections, metric)
    if metric == "ToolCallAccuracy":  # no LLM at all: nothing to refuse
        assert cls().llm is None
        return
    _refused(lambda: cls(llm=wrong), "llm_factory")


def test_llm_factory_without_a_model_or_a_usable_client() -> None:
    _refused(lambda: llm_factory(""), "model name")
    _refused(lambda: llm_factory("gpt-4o-mini", client=42), "int")


def test_embeddings_of_another_kind(llm: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    _refused(lambda: collections.AnswerRelevancy(llm=llm, embeddings="x"), "embedding_factory")
    _refused(lambda: collections.SemanticSimilarity(embeddings=object()), "embedding_factory")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    _refused(lambda: embedding_factory("openai"), "OPENAI_API_KEY")
