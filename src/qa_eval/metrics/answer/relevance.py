"""Answer relevance, as ragas 0.4's collections ``AnswerRelevancy`` computes it.

Source: ``../shared/spec/ragas-collections-usage.md`` ("Answer Relevancy") and ragas'
``metrics/collections/answer_relevancy``: the judge writes N questions (default 3) that the answer
would answer, each with a ``noncommittal`` flag; questions that come back empty are dropped;

    answer_relevance = mean_i cos(E(question), E(generated_i))   if some generated question is
                                                                   committal
                     = 0                                          if all are noncommittal, or none
                                                                   is left

with cos(a, b) = a·b / (|a| |b|). Unlike ragas, which makes N judge calls with the same prompt,
qa-eval asks for the N questions in one call (same formula, a third of the prompt tokens). An empty
answer scores 0 without a call.

When question generation fails (the judge's reply is unusable after its re-asks and retries), the
metric is an error - ``answer_relevance_error`` - and never another method's score under the same
key: with the rubric fallback on (``answer_relevance.rubric_fallback``, the default),
:func:`answer_relevance_with_fallback` adds the direct rubric score under its own key,
``answer_relevance_rubric`` (see ``rubric.py``; a 5-level scale, not a cosine), so the mean of
``answer_relevance`` never mixes the two scales.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field, create_model

from ...errors import DryRunSkip, JudgeError
from ...judge.calls import Judge
from ...judge.embeddings import Embedder
from ...prompts import render
from ...redact import redact
from ..output import Output, failed, measure, serialize
from .direct_assessment import rubric_output

__all__ = [
    "EmbeddingFailed",
    "GeneratedQuestion",
    "RelevanceReply",
    "answer_relevance",
    "answer_relevance_with_fallback",
    "answer_relevancy",
    "cosine",
    "relevance_output",
    "relevance_outputs",
    "relevance_reply",
    "score",
]

METRIC = "answer_relevance"
RUBRIC = "answer_relevance_rubric"


class GeneratedQuestion(BaseModel):
    """One question the answer would answer."""

    question: str
    noncommittal: int = Field(ge=0, le=1)


class RelevanceReply(BaseModel):
    """The judge's generated questions."""

    questions: list[GeneratedQuestion] = Field(min_length=1)


@functools.lru_cache(maxsize=32)
def relevance_reply(count: int) -> type[RelevanceReply]:
    """:class:`RelevanceReply` with at most ``count`` questions, the number asked for: a model
    writing under a grammar (llama.cpp) stops there instead of adding questions until its reply
    is cut."""
    field = (list[GeneratedQuestion], Field(min_length=1, max_length=count))
    return create_model(f"RelevanceReply{count}", __base__=RelevanceReply, questions=field)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity; 0 when either vector is zero."""
    dot = math.fsum(x * y for x, y in zip(a, b))
    norm = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
    return dot / norm if norm else 0.0


def answer_relevancy(
    question_vector: Sequence[float],
    generated_vectors: Sequence[Sequence[float]],
    noncommittal: Sequence[int | bool],
) -> float:
    """Mean cosine of the generated questions to the question, 0 if all are noncommittal."""
    if not generated_vectors or all(noncommittal):
        return 0.0
    return math.fsum(cosine(question_vector, g) for g in generated_vectors) / len(generated_vectors)


class EmbeddingFailed(ValueError):
    """The embedding endpoint failed: the metric's error, and no reason for the rubric."""


async def relevance_output(
    judge: Judge, embedder: Embedder, question: str, answer: str, count: int = 3
) -> Output:
    """The ``answer_relevance`` record of one question; ``JudgeError`` when question generation
    gives no usable reply (``DryRunSkip`` in a dry run, which calls no embedder either),
    :class:`EmbeddingFailed` when the embedder fails."""
    if not answer.strip():
        return Output(METRIC, {"answer_relevance": 0.0}, costs=(0.0,))
    messages = [
        {
            "role": "user",
            "content": render("answer_relevance", trusted={"count": str(count)}, answer=answer),
        }
    ]
    verdict = await judge.ask("answer_relevance", messages, relevance_reply(count))
    if getattr(judge, "dry_run", False):  # a dry run calls nothing, not even the embedder
        raise DryRunSkip()
    kept = [q for q in verdict.value.questions if q.question.strip()]
    embed_cost: float | None = 0.0
    try:
        if kept:
            vectors, embed_cost = await embedder.embed([question, *(q.question for q in kept)])
    except Exception as e:  # an embedding endpoint's failure is this metric's, not the run's
        raise EmbeddingFailed(redact(f"embedding failed: {type(e).__name__}: {e}")) from None
    score = (
        answer_relevancy(vectors[0], vectors[1:], [q.noncommittal for q in kept]) if kept else 0.0
    )
    values = {"answer_relevance": score, "answer_relevance_questions": [q.question for q in kept]}
    return Output.judged(METRIC, values, verdict, costs=(embed_cost,))  # None: unknown


async def relevance_outputs(
    judge: Judge, embedder: Embedder, question: str, answer: str, count: int = 3
) -> tuple[Output, ...]:
    """:func:`relevance_output`; when its question generation fails (not for a call that was
    not made, nor for a failed embedder), also the direct rubric score's record
    (``answer_relevance_rubric*``)."""
    try:
        return (await relevance_output(judge, embedder, question, answer, count),)
    except EmbeddingFailed as e:
        return (failed(METRIC, e),)
    except JudgeError as e:
        first = failed(METRIC, e)
    if first.skip is not None:
        return (first,)
    return (first, *await measure(RUBRIC, rubric_output(judge, question, answer)))


async def score(
    judge: Judge, inputs: Mapping[str, Any], options: Mapping[str, Any]
) -> tuple[Output, ...]:
    """The registry's entry point: ``options["questions"]`` questions, the rubric fallback
    unless ``options["rubric_fallback"]`` is false. A dry run that plans the question generation
    also plans the rubric call, as a fallback could make it."""
    embedder, question, answer = inputs["embedder"], inputs["question"], inputs["answer"]
    count = int(options.get("questions", 3))
    if not options.get("rubric_fallback", True):
        return await measure(METRIC, relevance_output(judge, embedder, question, answer, count))
    if getattr(judge, "dry_run", False):  # the rubric fallback is counted with the call
        planner, planned = judge.planning()
        outputs = await measure(
            METRIC, relevance_output(planner, embedder, question, answer, count)
        )
        if planned:
            await measure(RUBRIC, rubric_output(judge, question, answer))
        return outputs
    return await relevance_outputs(judge, embedder, question, answer, count)


async def answer_relevance(
    judge: Judge, embedder: Embedder, question: str, answer: str, count: int = 3
) -> dict[str, Any]:
    """The ``answer_relevance`` keys of one question (or ``answer_relevance_error``)."""
    return serialize(
        await measure(METRIC, relevance_output(judge, embedder, question, answer, count))
    )


async def answer_relevance_with_fallback(
    judge: Judge, embedder: Embedder, question: str, answer: str, count: int = 3
) -> dict[str, Any]:
    """:func:`answer_relevance`; when its question generation fails, also the direct rubric
    score under its own keys (``answer_relevance_rubric*``), beside ``answer_relevance_error``."""
    return serialize(await relevance_outputs(judge, embedder, question, answer, count))
