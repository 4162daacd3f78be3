"""Semantic similarity: the cosine of the answer's and the reference answer's embeddings.

Source: ``../shared/spec/graphrag-metrics.md``, section 7 ("Semantic Similarity Percentage"):

    semantic_similarity = max(0, a·g / (|a| |g|))

with a and g the embeddings of the answer and of the reference answer; 0 when either vector is
zero. The spec multiplies by 100 and rounds to 2 decimals; qa-eval stores the unrounded value on
0-1 (multiply by 100 for the spec's percentage). Floating-point noise above 1 is clipped, so
identical texts score exactly 1.

An empty answer scores 0 without an embedding call, as in the spec. An empty reference answer is
recorded as ``semantic_similarity_error`` rather than scored 0 (the spec scores it 0): a missing
reference is a fault of the data set, not of the system under test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...judge.embeddings import Embedder
from ...redact import redact
from ..output import Output, measure, serialize
from .relevance import cosine

__all__ = ["score", "semantic_similarity", "semantic_similarity_metric", "similarity_output"]

METRIC = "semantic_similarity"


def semantic_similarity(a_vec: Sequence[float], b_vec: Sequence[float]) -> float:
    """max(0, cosine) of two vectors of the same length, clipped to at most 1."""
    if len(a_vec) != len(b_vec):
        raise ValueError(f"vectors of different lengths: {len(a_vec)} and {len(b_vec)}")
    return min(1.0, max(0.0, cosine(a_vec, b_vec)))


async def similarity_output(embedder: Embedder, answer: str, reference: str) -> Output:
    """The ``semantic_similarity`` record of one question; ``ValueError`` for an empty
    reference answer or a failed embedding."""
    if not answer.strip():
        return Output(METRIC, {"semantic_similarity": 0.0}, costs=(0.0,))
    if not reference.strip():
        raise ValueError("the reference answer is empty")
    try:
        vectors, cost = await embedder.embed([answer, reference])
        value = semantic_similarity(vectors[0], vectors[1])
    except Exception as e:  # an embedding endpoint's failure is this metric's, not the run's
        raise ValueError(redact(f"embedding failed: {type(e).__name__}: {e}")) from None
    # the cost is None when the embedding model has no price
    return Output(METRIC, {"semantic_similarity": value}, costs=(cost,))


async def score(judge: Any, inputs: Mapping[str, Any], options: Mapping[str, Any]) -> Output:
    """The registry's entry point (no judge: the embedder of ``inputs``)."""
    return await similarity_output(inputs["embedder"], inputs["answer"], inputs["reference_answer"])


async def semantic_similarity_metric(
    embedder: Embedder, answer: str, reference: str
) -> dict[str, Any]:
    """The ``semantic_similarity`` keys of one question (or ``semantic_similarity_error``)."""
    return serialize(await measure(METRIC, similarity_output(embedder, answer, reference)))
