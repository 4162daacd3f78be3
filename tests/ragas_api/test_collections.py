"""The per-sample API (``qa_eval.llms``, ``qa_eval.embeddings``, ``qa_eval.metrics.collections``)
over real HTTP against the scripted judge (``openai_stub``): the spec's four examples as written
but for the import, and what qa-eval adds (a running loop, a sync client, batches, the cache,
the concurrency bound, refusals at construction, equality with a full run)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

pytest.importorskip("openai")
pytest.importorskip("pydantic")

from openai import AsyncOpenAI, OpenAI

from openai_stub import Reply, StubServer, oracle
from qa_eval.errors import QaEvalError
from qa_eval.metrics.collections import MetricResult


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Any:
    with StubServer(oracle()) as stub:
        monkeypatch.setenv("OPENAI_BASE_URL", stub.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        yield stub


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_the_spec_faithfulness_example_runs_with_the_import_changed(
    server: Any, capsys: Any
) -> None:
    async def example() -> None:
        from openai import AsyncOpenAI

        from qa_eval.llms import llm_factory
        from qa_eval.metrics.collections import Faithfulness

        # Setup LLM
        client = AsyncOpenAI()
        llm = llm_factory("gpt-4o-mini", client=client)

        # Create metric
        scorer = Faithfulness(llm=llm)

        # Evaluate
        result = await scorer.ascore(
            user_input="When was the first super bowl?",
            response="The first superbowl was held on Jan 15, 1967",
            retrieved_contexts=[
                "The First AFL–NFL World Championship Game was an American football game played on January 15, 1967, at the Los Angeles Memorial Coliseum in Los Angeles."  # noqa: E501
            ],
        )
        print(f"Faithfulness Score: {result.value}")
        assert result.reason and result.details.claims == 1

    _run(example())
    assert capsys.readouterr().out == "Faithfulness Score: 1.0\n"


def test_the_spec_answer_relevancy_example_runs(server: Any, capsys: Any) -> None:
    async def example() -> None:
        from openai import AsyncOpenAI

        from qa_eval.embeddings.base import embedding_factory
        from qa_eval.llms import llm_factory
        from qa_eval.metrics.collections import AnswerRelevancy

        # Setup LLM and embeddings
        client = AsyncOpenAI()
        llm = llm_factory("gpt-4o-mini", client=client)
        embeddings = embedding_factory("openai", model="text-embedding-3-small", client=client)

        # Create metric
        scorer = AnswerRelevancy(llm=llm, embeddings=embeddings)

        # Evaluate
        result = await scorer.ascore(
            user_input="When was the first super bowl?",
            response="The first superbowl was held on Jan 15, 1967",
        )
        print(f"Answer Relevancy Score: {result.value}")
        assert len(result.details.questions) == 3

    _run(example())
    out = capsys.readouterr().out
    assert out.startswith("Answer Relevancy Score: ")
    assert 0.0 < float(out.split(": ")[1]) <= 1.0


def test_the_spec_context_precision_example_runs(server: Any, capsys: Any) -> None:
    async def example() -> MetricResult:
        from openai import AsyncOpenAI

        from qa_eval.llms import llm_factory
        from qa_eval.metrics.collections import ContextPrecision

        # Setup LLM
        client = AsyncOpenAI()
        llm = llm_factory("gpt-4o-mini", client=client)

        # Create metric
        scorer = ContextPrecision(llm=llm)

        # Evaluate
        result = await scorer.ascore(
            user_input="Where is the Eiffel Tower located?",
            reference="The Eiffel Tower is located in Paris.",
            retrieved_contexts=[
                "The Eiffel Tower is located in Paris.",
                "The Brandenburg Gate is located in Berlin.",
            ],
        )
        print(f"Context Precision Score: {result.value}")
        return result

    result = _run(example())
    useful = [c.useful for c in result.details.chunks]
    assert len(useful) == 2
    # ragas' average precision of the verdicts the judge gave
    hits = [sum(useful[: k + 1]) / (k + 1) for k in range(2) if useful[k]]
    assert result.value == pytest.approx(sum(hits) / (sum(useful) + 1e-10), abs=1e-15)
    assert capsys.readouterr().out == f"Context Precision Score: {result.value}\n"


def test_the_spec_context_recall_example_runs(server: Any, capsys: Any) -> None:
    async def example() -> MetricResult:
        from openai import AsyncOpenAI

        from qa_eval.llms import llm_factory
        from qa_eval.metrics.collections import ContextRecall

        # Setup LLM
        client = AsyncOpenAI()
        llm = llm_factory("gpt-4o-mini", client=client)

        # Create metric
        scorer = ContextRecall(llm=llm)

        # Evaluate
        result = await scorer.ascore(
            user_input="Where is the Eiffel Tower located?",
            retrieved_contexts=["Paris is the capital of France."],
            reference="The Eiffel Tower is located in Paris.",
        )
        print(f"Context Recall Score: {result.value}")
        return result

    result = _run(example())
    supported = [s.supported for s in result.details.statements]
    assert result.value == sum(supported) / len(supported)
    assert result.reason.startswith(f"{sum(supported)} of {len(supported)} reference statements")
    assert capsys.readouterr().out == f"Context Recall Score: {result.value}\n"


FAITH_ROW = {
    "user_input": "When was it?",
    "response": "It was in 1967. It was in Los Angeles. It rained.",
    "retrieved_contexts": ["The game was played on January 15, 1967 in Los Angeles."],
}


def _faithfulness(client: Any, **kwargs: Any) -> Any:
    from qa_eval.llms import llm_factory
    from qa_eval.metrics.collections import Faithfulness

    return Faithfulness(llm=llm_factory("gpt-4o-mini", client=client, **kwargs))


def test_score_works_inside_a_running_event_loop(server: Any) -> None:
    scorer = _faithfulness(AsyncOpenAI(), cache=False)

    async def inside() -> MetricResult:
        return scorer.score(**FAITH_ROW)  # sync call from a coroutine (Jupyter, FastAPI)

    result = asyncio.run(inside())
    top = scorer.score(**FAITH_ROW)
    assert result.value == top.value and result.details == top.details
    assert result.usage.calls == 2 and top.usage.calls == 2


def test_a_synchronous_openai_client_is_called_off_the_loop(server: Any) -> None:
    scorer = _faithfulness(OpenAI(), cache=False)
    threads: list[str] = []
    original = server.script

    def script(request: dict[str, Any], number: int) -> Reply:
        threads.append(threading.current_thread().name)
        return original(request, number)

    server.script = script
    result = scorer.score(**FAITH_ROW)
    statements = result.details.statements
    assert len(statements) == 3
    assert result.value == sum(s.supported for s in statements) / 3
    assert result.usage.calls == 2 and len(threads) == 2


def test_one_bad_row_in_twenty_is_that_rows_error(server: Any) -> None:
    scorer = _faithfulness(AsyncOpenAI(), cache=False)
    rows = [dict(FAITH_ROW, user_input=f"When was it? ({i})") for i in range(20)]
    rows[7] = {k: v for k, v in rows[7].items() if k != "retrieved_contexts"}
    seen: list[int] = []
    results = scorer.batch_score(rows, on_result=lambda i, r: seen.append(i))
    assert sorted(seen) == list(range(20))
    assert results[7].value is None and "retrieved_contexts" in (results[7].error or "")
    kept = [r for i, r in enumerate(results) if i != 7]
    assert all(r.error is None and r.value is not None for r in kept)
    with pytest.raises(TypeError, match="retrieved_contexts"):
        scorer.batch_score(rows, return_exceptions=False)


def test_a_second_identical_call_comes_from_the_cache_at_no_cost(server: Any) -> None:
    scorer = _faithfulness(AsyncOpenAI(), prices={"gpt-4o-mini": {"input": 1.0, "output": 2.0}})
    first = scorer.score(**FAITH_ROW)
    calls = len(server.chat_requests)
    second = scorer.score(**FAITH_ROW)
    assert first.cost is not None and first.cost > 0 and not first.cached
    assert second.cached and second.cost == 0.0 and second.usage.calls == 0
    assert second.value == first.value and len(server.chat_requests) == calls == 2
    from qa_eval.llms import llm_factory
    from qa_eval.metrics.collections import Faithfulness

    other = Faithfulness(llm=llm_factory("gpt-4o", client=AsyncOpenAI()))  # the model is keyed
    assert not other.score(**FAITH_ROW).cached


def test_the_concurrency_bound_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    slow = oracle()

    def script(request: dict[str, Any], number: int) -> Reply:
        reply = slow(request, number)
        reply.delay = 0.05
        return reply

    with StubServer(script) as stub:
        client = AsyncOpenAI(base_url=stub.url, api_key="sk-test")
        scorer = _faithfulness(client, cache=False, concurrency=3)
        rows = [dict(FAITH_ROW, response=f"It was in {1950 + i}.") for i in range(12)]
        results = scorer.batch_score(rows, concurrency=12)
        assert all(r.error is None for r in results)
        assert stub.peak <= 3 and len(stub.chat_requests) == 24


@pytest.mark.parametrize("client", ["not a client", object(), 42])
def test_an_unusable_client_is_refused_in_one_line(client: Any) -> None:
    from qa_eval.llms import llm_factory

    with pytest.raises(QaEvalError) as caught:
        llm_factory("gpt-4o-mini", client=client)
    assert "\n" not in str(caught.value) and type(client).__name__ in str(caught.value)


def test_a_metric_refuses_an_llm_not_from_llm_factory() -> None:
    from qa_eval.metrics.collections import ContextRecall, Faithfulness

    for metric in (Faithfulness, ContextRecall):
        with pytest.raises(QaEvalError, match="llm_factory") as caught:
            metric(llm="gpt-4o-mini")
        assert "\n" not in str(caught.value)


def test_no_client_and_no_environment_is_refused_at_construction() -> None:
    from qa_eval.llms import llm_factory

    with pytest.raises(QaEvalError, match="OPENAI_API_KEY"):
        llm_factory("gpt-4o-mini")


def test_the_client_keeps_no_retries_and_no_key_in_the_settings(server: Any) -> None:
    from qa_eval.llms import llm_factory

    llm = llm_factory("gpt-4o-mini", client=AsyncOpenAI(api_key="sk-secret-key"))
    assert llm.config.generation.api_key is None
    assert "sk-secret" not in repr(llm.signature())

    async def view() -> Any:
        return llm.client.view()

    assert asyncio.run(view()).max_retries == 0


def test_plan_counts_calls_without_making_one(server: Any) -> None:
    scorer = _faithfulness(AsyncOpenAI(), prices={"gpt-4o-mini": {"input": 1.0, "output": 2.0}})
    plan = scorer.plan([FAITH_ROW, dict(FAITH_ROW, user_input="other")])
    assert server.chat_requests == []
    assert plan.rows == 2 and plan.calls == 4 and plan.cached == 0
    assert plan.cost is not None and plan.cost > 0 and plan.prompt_tokens > 0


def test_results_equal_what_a_full_run_writes(server: Any) -> None:
    from qa_eval import run_evaluation
    from qa_eval.embeddings import embedding_factory
    from qa_eval.io.flat import flat_to_dataset
    from qa_eval.llms import llm_factory
    from qa_eval.metrics.collections import (
        AnswerRelevancy,
        ContextPrecision,
        ContextRecall,
        Faithfulness,
        SemanticSimilarity,
    )

    question = "Where is the Eiffel Tower, and when was it built?"
    answer = "The Eiffel Tower is in Paris. It was built in 1889."
    reference = "The Eiffel Tower stands in Paris; it was completed in 1889."
    contexts = ["The Eiffel Tower is in Paris.", "It was finished in 1889.", "Berlin is big."]
    url = server.url
    llm_block = {
        "generation": {"model": "gpt-4o-mini", "base_url": url, "api_key": "sk-test"},
        "embedding": {"provider": "openai", "model": "text-embedding-3-small", "base_url": url},
    }
    config = {
        "llm": llm_block,
        "faithfulness": True,
        "context_precision": {"enabled": True, "combined": False},
        "context_recall": {"enabled": True, "combined": False},
        "semantic_similarity": True,
        "answer_relevance": True,
    }
    flat = {
        "user_input": question,
        "response": answer,
        "retrieved_contexts": contexts,
        "reference": reference,
    }
    reference_qas, responses = flat_to_dataset([(1, flat)])
    (row,) = run_evaluation(reference_qas, responses, config=config)

    client = AsyncOpenAI()
    llm = llm_factory("gpt-4o-mini", client=client)
    embeddings = embedding_factory("openai", model="text-embedding-3-small", client=client)
    ours = {
        "faithfulness": Faithfulness(llm=llm).score(
            user_input=question, response=answer, retrieved_contexts=contexts
        ),
        "context_precision_ap": ContextPrecision(llm=llm).score(
            user_input=question, reference=reference, retrieved_contexts=contexts
        ),
        "context_recall": ContextRecall(llm=llm).score(
            user_input=question, retrieved_contexts=contexts, reference=reference
        ),
        "answer_relevance": AnswerRelevancy(llm=llm, embeddings=embeddings).score(
            user_input=question, response=answer
        ),
        "semantic_similarity": SemanticSimilarity(embeddings=embeddings).score(
            reference=reference, response=answer
        ),
    }
    for key, result in ours.items():
        assert result.value == row[key], key
    # the run filled the cache: the LLM metrics' replies are served from it
    assert ours["faithfulness"].cached and ours["context_recall"].cached


def test_the_result_keeps_ragas_surface() -> None:
    result = MetricResult(0.75, "3 of 4", threshold=0.7)
    assert float(result) == 0.75 and result > 0.5 and result == 0.75 and result + 1 == 1.75
    assert result.success is True
    assert result.to_dict()["result"] == 0.75 and result.to_dict()["reason"] == "3 of 4"
    assert MetricResult(0.5, threshold=0.7).success is False


def test_a_deterministic_metric_wraps_a_pure_function() -> None:
    from qa_eval.metrics.collections import DeterministicMetric

    exact = DeterministicMetric(
        "exact_match", lambda reference, response: float(reference == response)
    )
    assert exact.score(reference="a", response="a").value == 1.0
    results = exact.batch_score([{"reference": "a", "response": "b"}, {"reference": "a"}])
    assert results[0].value == 0.0 and results[1].error is not None
