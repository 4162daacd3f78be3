"""In-process fakes for metric arithmetic: a judge answering from queued replies and an embedder
answering from a table (the judge itself is tested over real HTTP in test_judge.py); and the
prepared step groups of a one-question dataset."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from qa_eval.errors import JudgeError
from qa_eval.judge.usage import Verdict
from qa_eval.run.prepare import prepare_reference
from qa_eval.steps.kinds import ReferenceStep


class Score(BaseModel):
    """A small reply schema for judge-level tests."""

    score: int = Field(ge=0, le=10)
    reason: str = ""


class Sleeps:
    """An injectable ``sleep`` that records how long it was asked to wait and returns at once."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


class FakeJudge:
    """Answers ``ask`` from queued replies: a dict (validated with the schema), a ``(dict, cost)``
    pair, or a ``JudgeError`` to raise. ``by_metric`` gives a metric its own queue (for metrics
    that run concurrently). A reply that fails validation becomes a ``JudgeError``, as the real
    judge's second failed validation does. ``calls`` holds (metric, prompt text, schema)."""

    def __init__(
        self,
        *replies: Any,
        cost: float | None = 0.25,
        by_metric: Mapping[str, Sequence[Any]] | None = None,
    ) -> None:
        self.queue = list(replies)
        self.by_metric = {k: list(v) for k, v in (by_metric or {}).items()}
        self.cost = cost
        self.calls: list[tuple[str, str, type[BaseModel]]] = []

    @property
    def metrics(self) -> list[str]:
        """The metric of each call, in order."""
        return [metric for metric, _, _ in self.calls]

    def prompt(self, index: int = 0) -> str:
        """The text of one call's messages."""
        return self.calls[index][1]

    def prompt_of(self, metric: str) -> str:
        """The text of every call of one metric."""
        return "\n".join(text for name, text, _ in self.calls if name == metric)

    async def ask(
        self, metric: str, messages: list[dict[str, str]], schema: type[BaseModel]
    ) -> Verdict[Any]:
        """The next queued reply for this metric."""
        self.calls.append((metric, "\n".join(m["content"] for m in messages), schema))
        queue = self.by_metric.get(metric, self.queue)
        if not queue:
            raise AssertionError(f"unexpected judge call for {metric}")
        reply = queue.pop(0)
        if isinstance(reply, JudgeError):
            raise reply
        cost = self.cost
        if isinstance(reply, tuple):
            reply, cost = reply
        try:
            value = schema.model_validate(reply)
        except ValidationError as e:
            raise JudgeError(f"invalid judge reply, twice: {e.error_count()} problem(s)") from None
        return Verdict(value, 100, 20, cost, cached=False)


class FakeEmbedder:
    """Vectors from a text → vector table; each call costs ``call_cost``."""

    name = "fake"
    cost = 0.0

    def __init__(self, vectors: Mapping[str, list[float]], call_cost: float | None = 0.125) -> None:
        self.vectors = dict(vectors)
        self.call_cost = call_cost
        self.calls: list[list[str]] = []

    async def embed(self, texts: Sequence[str]) -> tuple[list[list[float]], float | None]:
        """The table's vectors for the texts."""
        self.calls.append(list(texts))
        return [self.vectors[t] for t in texts], self.call_cost


class FailingEmbedder(FakeEmbedder):
    """An embedding endpoint that is down."""

    async def embed(self, texts: Sequence[str]) -> tuple[list[list[float]], float | None]:
        """Records the call, then fails."""
        self.calls.append(list(texts))
        raise ConnectionError("embedding endpoint down")


def run(coro: Any) -> Any:
    """Run a coroutine to completion."""
    return asyncio.run(coro)


def prepared_groups(steps: list[list[dict]]) -> tuple[tuple[ReferenceStep, ...], ...]:
    """The prepared reference step groups of a dataset with one question that has ``steps``."""
    question = {"id": "q", "question_text": "?", "reference_steps": steps}
    groups = prepare_reference([{"template_id": "t", "questions": [question]}])[0].groups
    assert groups is not None
    return groups


CHUNKS = json.dumps(
    [
        {"id": "d1", "text": "Substation Oslo has transformers T1 and T2."},
        {"id": "d2", "text": "Bergen lies on the west coast."},
    ]
)
"""The output of a retrieval step with two chunks (judge tests over HTTP)."""


def substation_dataset(n: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A reference of ``n`` questions about substations and responses that answer each with two
    sentences and a retrieval step (:data:`CHUNKS`)."""
    reference = [
        {
            "template_id": "t1",
            "questions": [
                {
                    "id": f"q{i}",
                    "question_text": f"Which transformers are in substation {i}?",
                    "reference_answer": f"T{i} and T{i + 1}.",
                }
                for i in range(n)
            ],
        }
    ]
    responses = [
        {
            "question_id": f"q{i}",
            "actual_answer": f"Substation {i} has T{i}. It also has T{i + 1}.",
            "actual_steps": [{"name": "retrieval", "status": "success", "output": CHUNKS}],
        }
        for i in range(n)
    ]
    return reference, responses


def items_dataset(n: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A reference of ``n`` questions about items, each with a reference answer, and responses
    whose answers are close to it (judge runs over HTTP)."""
    reference = [
        {
            "template_id": "items",
            "questions": [
                {
                    "id": f"q{i}",
                    "question_text": f"What is item {i}?",
                    "reference_answer": f"Item {i} is a red box of size {i}.",
                }
                for i in range(n)
            ],
        }
    ]
    responses = [
        {"question_id": f"q{i}", "actual_answer": f"Item {i} is a box of size {i}."}
        for i in range(n)
    ]
    return reference, responses


def scipy_p(deltas: Any, resamples: float = float("inf"), seed: int | None = None) -> float:
    """scipy's paired permutation test of mean(deltas) = 0 (two-sided): the oracle of the
    sign-flip tests (exact with ``resamples`` infinite, else Monte Carlo from ``seed``)."""
    import inspect

    import numpy as np
    import pytest

    stats = pytest.importorskip("scipy.stats")
    seeded = {}
    if seed is not None:
        parameters = inspect.signature(stats.permutation_test).parameters
        name = "rng" if "rng" in parameters else "random_state"  # scipy < 1.15
        seeded = {name: np.random.default_rng(seed)}
    result = stats.permutation_test(
        (deltas, np.zeros(len(deltas))),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        permutation_type="samples",
        vectorized=True,
        n_resamples=resamples,
        alternative="two-sided",
        **seeded,
    )
    return float(result.pvalue)
