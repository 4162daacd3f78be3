"""Retrieval answer and retrieval context precision / recall / F1 of a ``retrieval`` step.

Source: the QA-evaluation README of graphrag-eval ("Output Keys": ``retrieval_answer_*``,
``retrieval_context_*``) and the ragas definitions its code calls (ragas 0.4 collections
``ContextRecall`` and ``ContextPrecision``, ``../shared/spec/ragas-collections-usage.md``). The
chunks are the ``text`` fields of the step's output (a JSON list of ``{id, text}``). The
*reference* is the question's ``reference_answer`` for ``retrieval_answer_*``, and the texts of
the matched reference step's output, joined by newlines, for ``retrieval_context_*``.

    recall    = statements of the reference attributed to the chunks / statements of the reference
    precision = sum_k (precision@k * v_k) / sum_k v_k, v_k = 1 when chunk k is useful for the
                reference (average precision over the ranked chunks; 0 when no chunk is useful)
    f1        = 2 * recall * precision / (recall + precision)   (0 when both are 0)

Unlike ragas, which asks the judge once per chunk, the chunks of a step are judged in one call.
ragas adds 1e-10 to the denominator of precision; qa-eval does not (an all-useful ranking is 1,
not 0.9999999999). A step that retrieved no chunks scores 0 for both, without a call.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Annotated, Any

import orjson
from pydantic import AfterValidator, BaseModel, Field, create_model

from ...judge.calls import Judge
from ...judge.usage import Verdict
from ...prompts import numbered_blocks, render
from ..answer.correctness import f1
from ..output import Output, measure, serialize
from . import ranking

__all__ = [
    "Attribution",
    "ChunkVerdict",
    "RecallReply",
    "average_precision",
    "chunk_texts",
    "context_recall",
    "numbered_schema",
    "retrieval_metrics",
    "retrieval_outputs",
]


class Attribution(BaseModel):
    """One statement of the reference and whether the chunks support it."""

    statement: str
    attributed: bool
    reason: str = ""


class RecallReply(BaseModel):
    """The judge's attributions."""

    statements: list[Attribution] = Field(min_length=1)
    reason: str = ""


class ChunkVerdict(BaseModel):
    """Whether one chunk is useful for the reference."""

    chunk: int
    relevant: bool
    reason: str = ""


def context_recall(attributed: Sequence[bool]) -> float:
    """Share of the reference's statements attributed to the chunks."""
    if not attributed:
        raise ValueError("a reference has at least one statement")
    return sum(1 for a in attributed if a) / len(attributed)


def average_precision(useful: Sequence[bool]) -> float:
    """sum_k precision@k * v_k / sum_k v_k over the ranked chunks; 0 when none is useful
    (``ranking.average_precision`` with the useful chunks as the relevant ids)."""
    return ranking.average_precision([i for i, v in enumerate(useful) if v], range(len(useful)))


def chunk_texts(output: Any) -> list[str]:
    """The ``text`` of each chunk of a retrieval output; ``ValueError`` for another shape."""
    data = orjson.loads(output) if isinstance(output, (str, bytes)) else output
    if not isinstance(data, list) or not all(
        isinstance(c, dict) and isinstance(c.get("text"), str) for c in data
    ):
        raise ValueError("a retrieval output must be a JSON list of objects with a 'text'")
    return [c["text"] for c in data]


def numbered_chunks(chunks: Sequence[str]) -> str:
    return numbered_blocks(chunks, "chunk")


@functools.lru_cache(maxsize=128)
def numbered_schema(name: str, item: type[BaseModel], number: str, n: int) -> type[BaseModel]:
    """A reply schema ``{"verdicts": [item, ...]}`` with exactly ``n`` items whose ``number``
    fields are 1..n, each once (the one-call-for-all-items replies of the context metrics)."""

    def one_each(value: list[Any]) -> list[Any]:
        if sorted(getattr(v, number) for v in value) != list(range(1, len(value) + 1)):
            raise ValueError(f"give one verdict for each {number} number 1..{n}")
        return value

    verdicts = Annotated[
        list[item], Field(min_length=n, max_length=n), AfterValidator(one_each)  # type: ignore[valid-type]
    ]
    return create_model(name, __doc__=f"One verdict per {number}.", verdicts=(verdicts, ...))


def _precision_schema(n: int) -> type[BaseModel]:
    return numbered_schema("ChunkVerdicts", ChunkVerdict, "chunk", n)


async def ask_recall(
    judge: Judge, metric: str, question: str, reference: str, chunks: Sequence[str]
) -> Verdict[RecallReply]:
    """Ask which statements of the reference the numbered chunks support (``context_recall``
    prompt); ``JudgeError`` when no usable reply comes."""
    trusted = {"chunks": numbered_chunks(chunks)}
    text = render("context_recall", trusted, question=question, reference=reference)
    return await judge.ask(metric, [{"role": "user", "content": text}], RecallReply)


async def _recall_output(
    judge: Judge, name: str, question: str, reference: str, chunks: Sequence[str]
) -> Output:
    verdict = await ask_recall(judge, name, question, reference, chunks)
    statements = verdict.value.statements
    reason = verdict.value.reason or "; ".join(
        f"{s.statement}: {'yes' if s.attributed else 'no'}" for s in statements
    )
    values = {name: context_recall([s.attributed for s in statements]), f"{name}_reason": reason}
    return Output.judged(name, values, verdict)  # a cost of None: the price is unknown


async def _precision_output(
    judge: Judge, name: str, question: str, reference: str, chunks: Sequence[str]
) -> Output:
    trusted = {"chunks": numbered_chunks(chunks)}
    text = render("context_precision", trusted, question=question, reference=reference)
    messages = [{"role": "user", "content": text}]
    answer = await judge.ask(name, messages, _precision_schema(len(chunks)))
    ordered = sorted(answer.value.verdicts, key=lambda v: v.chunk)  # type: ignore[attr-defined]
    return Output.judged(name, {name: average_precision([v.relevant for v in ordered])}, answer)


async def retrieval_outputs(
    judge: Judge,
    prefix: str,
    question: str,
    reference: str,
    chunks: Sequence[str],
    *,
    recall: bool = True,
    precision: bool = True,
) -> tuple[Output, ...]:
    """The records of ``<prefix>_recall`` and ``_precision`` (each with its reason, error and
    cost) and of ``_f1`` (its cost is theirs again: not counted into ``llm_cost``)."""
    if not chunks:
        return (
            Output(
                f"{prefix}_recall",
                {f"{prefix}_recall": 0.0, f"{prefix}_recall_reason": "no chunks were retrieved"},
                costs=(0.0,),
            ),
            Output(f"{prefix}_precision", {f"{prefix}_precision": 0.0}, costs=(0.0,)),
            Output(f"{prefix}_f1", {f"{prefix}_f1": 0.0}, costs=(0.0,), counted=False),
        )
    outputs: list[Output] = []
    if recall:
        name = f"{prefix}_recall"
        outputs += await measure(name, _recall_output(judge, name, question, reference, chunks))
    if precision:
        name = f"{prefix}_precision"
        outputs += await measure(name, _precision_output(judge, name, question, reference, chunks))
    if len(outputs) == 2 and all(o.error is None for o in outputs):
        r, p = (o.values[o.metric] for o in outputs)
        costs = tuple(c for o in outputs for c in o.costs)
        f1_value = {f"{prefix}_f1": f1(r, p)}
        outputs.append(Output(f"{prefix}_f1", f1_value, costs=costs, counted=False))
    return tuple(outputs)


async def retrieval_metrics(
    judge: Judge,
    prefix: str,
    question: str,
    reference: str,
    chunks: Sequence[str],
    *,
    recall: bool = True,
    precision: bool = True,
) -> dict[str, Any]:
    """``<prefix>_recall`` / ``_precision`` / ``_f1`` with reasons, errors and costs."""
    return serialize(
        await retrieval_outputs(
            judge, prefix, question, reference, chunks, recall=recall, precision=precision
        )
    )
