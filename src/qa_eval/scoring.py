"""Schedules the LLM-judged metrics of one question: which apply, with what inputs, and where their
keys go (the result for answer metrics; a copy of the actual step for retrieval step metrics).

Which metric runs when:

- ``answer_correctness``: the reference has ``reference_answer`` and the response ``actual_answer``.
- ``answer_relevance``: the response has ``actual_answer``.
- ``retrieval_answer_*``: every successful ``retrieval`` actual step with an output, when the
  reference has ``reference_answer``.
- ``retrieval_context_*``: every ``retrieval`` actual step matched to a ``retrieval`` reference
  step with an output.
- custom metrics: every question that has their inputs.
- a registry family with a ``score`` entry point (``qa_eval.metrics.METRICS``, see
  docs/adding-a-metric.md): every question that has what its ``needs`` lists (answer, reference
  answer, contexts); a ``JudgeError`` or ``ValueError`` becomes its ``<name>_error``, a returned
  cost its ``<name>_cost``.
- a retrieval step marked ``flat_contexts`` (the made-up step of a flat row, ``flat.py``) gets no
  ``retrieval_answer_*`` / ``retrieval_context_*`` unless those are explicitly enabled (``enable``,
  ``--enable``): they would only repeat context precision and recall on it, in the API as on
  the CLI.

The GraphRAG set (off unless switched on; contexts are the chunk texts of the successful
``retrieval`` actual steps, in order; the ground truth is ``reference_answer``):

- ``faithfulness``, ``context_precision``: the response has a ``retrieval`` step (a question
  answered without retrieval has no contexts to judge, so these are not applicable) and, for
  faithfulness, ``actual_answer``.
- ``context_recall``: as above, and the reference has ``reference_answer``.
- ``factual_accuracy``, ``answer_class``, ``semantic_similarity``, ``bertscore``: both
  ``actual_answer`` and ``reference_answer`` (``answer_class`` needs no reference when an
  uncertainty phrase fires).
- ``ragas_score``: after the others, from whichever of faithfulness, context precision, context
  recall and answer relevance the question has.
- when ``answer_relevance``'s question generation fails, the direct rubric score is added under its
  own key ``answer_relevance_rubric`` (``answer_relevance.rubric_fallback``, on by default);
  ``answer_relevance`` itself is then an error, never the rubric score.

``semantic_similarity`` and ``bertscore`` run without a judge. Error responses get no metric.
Each family can be switched on or off in the config or the CLI.

With ``llm.repeats`` above 1 the judge's metrics run that many times per question and their
values are merged (mean, standard deviation, flips; see ``variance.py``).
"""

from __future__ import annotations

import asyncio
import importlib
import math
import re
from collections.abc import Coroutine, Mapping
from typing import Any

from .config import OFFLINE_SWITCHES, SWITCHES, EvalConfig
from .embeddings import Embedder
from .flat import FLAT_MARK
from .judge import Judge, JudgeError
from .metrics import METRICS as REGISTRY
from .metrics import Metric
from .metrics.classify import DEFAULT_UNCERTAINTY_PHRASES, classify_answer
from .metrics.composite import ragas_score
from .metrics.context import chunk_texts, retrieval_metrics
from .metrics.context_quality import (
    context_judgement,
    context_precision,
    context_recall_metric,
)
from .metrics.correctness import answer_correctness
from .metrics.custom import CustomMetric, custom_metric, parse_custom_metric
from .metrics.faithfulness import faithfulness, verdicts_schema
from .metrics.geval import DEFAULT_CUTOFFS, DEFAULT_WEIGHTS, factual_accuracy_metric
from .metrics.relevance import answer_relevance, answer_relevance_with_fallback
from .metrics.rubric import answer_relevance_rubric
from .metrics.similarity import semantic_similarity_metric
from .prompts import numbered_blocks, render

__all__ = ["AnswerScorer", "contexts_of"]

_ANSWER_METRICS = (
    "answer_correctness",
    "answer_relevance",
    "faithfulness",
    "factual_accuracy",
    "semantic_similarity",
    "answer_class",
    "bertscore",
)


_CHUNK_METRICS = (
    "retrieval_answer",
    "retrieval_context",
    "faithfulness",
    "context_precision",
    "context_recall",
)
"""The metrics that read the chunk texts of the retrieval steps."""


def retrieval_chunks(steps: list[Any]) -> dict[int, list[str] | ValueError]:
    """The chunk texts of each successful ``retrieval`` step with an output, by step index (or
    the ``ValueError`` of an output of another shape): each output is parsed once."""
    chunks: dict[int, list[str] | ValueError] = {}
    for index, step in enumerate(steps):
        if (
            isinstance(step, Mapping)
            and step.get("name") == "retrieval"
            and step.get("status", "success") == "success"
            and "output" in step
        ):
            try:
                chunks[index] = chunk_texts(step["output"])
            except ValueError as e:
                chunks[index] = e
    return chunks


def has_retrieval(steps: list[Any]) -> bool:
    """Whether the response has a ``retrieval`` step at all (successful or not)."""
    return any(isinstance(s, Mapping) and s.get("name") == "retrieval" for s in steps)


def contexts_of(steps: list[Any], chunks: dict[int, list[str] | ValueError]) -> list[str] | None:
    """The chunk texts (``chunks``, from ``retrieval_chunks``) of the successful ``retrieval``
    steps, in order; ``None`` when the response has no retrieval step at all. ``ValueError``
    for an output of another shape."""
    if not has_retrieval(steps):
        return None
    contexts: list[str] = []
    for texts in chunks.values():
        if isinstance(texts, ValueError):
            raise texts
        contexts.extend(texts)
    return contexts


class AnswerScorer:
    """Adds the LLM metrics' (and the offline answer metrics') keys to the results of a run."""

    def __init__(
        self,
        config: EvalConfig,
        judge: Judge | None,
        embedder: Embedder | None,
        disabled: frozenset[str] = frozenset(),
        enabled: frozenset[str] = frozenset(),
        bertscorer: Any = None,
    ) -> None:
        self.config = config
        self.judge = judge
        self.embedder = embedder
        self.bertscorer = bertscorer
        self._bert_lock = asyncio.Lock()
        self.on = {
            s: config.switched_on(s, enabled, disabled)
            and (judge is not None or s in OFFLINE_SWITCHES)
            for s in SWITCHES
        }
        self.enabled = enabled
        self.generic: list[Metric] = [
            m
            for m in REGISTRY.values()
            if m.score is not None
            and config.switched_on(m.name, enabled, disabled)
            and (judge is not None or m.offline)
            and (embedder is not None or "embedder" not in m.needs)
        ]
        if embedder is None:
            self.on["semantic_similarity"] = False
        if bertscorer is None:
            self.on["bertscore"] = False
        self.custom: list[CustomMetric] = (
            [parse_custom_metric(m, config.source, i) for i, m in enumerate(config.custom_metrics)]
            if self.on["custom"]
            else []
        )

    @property
    def active(self) -> bool:
        """Whether any metric is switched on at all."""
        return any(self.on.values())

    def applies(self, result: Mapping[str, Any]) -> bool:
        """Whether any metric would run for this result."""
        if result.get("status") != "success":
            return False
        if self.custom or self.generic:
            return True
        if "actual_answer" in result and any(self.on[m] for m in _ANSWER_METRICS):
            return True
        return has_retrieval(result["actual_steps"]) and any(
            self.on[m]
            for m in (
                "retrieval_answer",
                "retrieval_context",
                "context_precision",
                "context_recall",
            )
        )

    async def score(
        self, result: dict[str, Any], matched: list[tuple[Mapping[str, Any], int]]
    ) -> None:
        """Compute this question's metrics and write their keys into ``result`` (the judge's
        ``llm.repeats`` times, merged as ``variance.py`` says)."""
        if self.config.repeats > 1 and self.judge is not None:
            from .aggregate import METRICS, STEP_METRICS
            from .variance import score_repeated

            values = [*METRICS, *(m for names in STEP_METRICS.values() for m in names)]
            values += [name for metric in self.custom for name in metric.outputs]
            await score_repeated(self._score_once, result, matched, self.config.repeats, values)
            return
        await self._score_once(result, matched)

    async def _score_once(
        self,
        result: dict[str, Any],
        matched: list[tuple[Mapping[str, Any], int]],
        offline: bool = True,
    ) -> None:
        """One computation of the question's metrics (``offline``: also those without a judge)."""
        question = str(result.get("question_text") or "")
        reference = result.get("reference_answer")
        answer = result.get("actual_answer")
        steps = result["actual_steps"]
        # Only these metrics read the chunks: otherwise the retrieval outputs are not parsed.
        chunks = retrieval_chunks(steps) if any(self.on[m] for m in _CHUNK_METRICS) else {}
        jobs: list[Coroutine[Any, Any, dict[str, Any]]] = []
        if isinstance(answer, str):
            jobs.extend(self._answer_jobs(question, reference, answer, offline))
        jobs.extend(self._context_jobs(steps, chunks, question, reference, answer))
        for metric in self.custom:
            jobs.append(
                custom_metric(
                    self.judge,  # type: ignore[arg-type]  # custom is on only with a judge
                    metric,
                    {
                        "question": result.get("question_text"),
                        "reference_answer": reference,
                        "reference_steps": result.get("reference_steps"),
                        "actual_answer": answer,
                        "actual_steps": result.get("actual_steps"),
                    },
                )
            )
        if self.generic:
            jobs.extend(self._generic_jobs(question, reference, answer, steps, chunks))
        step_jobs = self._step_jobs(chunks, question, reference, matched, steps)
        outcomes = await asyncio.gather(*jobs, *(job for _, job in step_jobs))
        for keys in outcomes[: len(jobs)]:
            result.update(keys)
        for (index, _), keys in zip(step_jobs, outcomes[len(jobs) :]):
            if keys:
                copy = dict(steps[index])
                copy.update(keys)
                steps[index] = copy
        if self.on["ragas_score"]:
            result.update(self._composite(result))
        costs = [
            value
            for keys in outcomes
            for key, value in keys.items()
            if key.endswith("_cost")
            and not key.endswith("_f1_cost")
            and (value is None or isinstance(value, (int, float)))
        ]
        # A judge without a price makes the question's cost unknown (null), not the sum of the
        # offline metrics' known zeros.
        unpriced = self.judge is not None and getattr(self.judge, "price", {}) is None
        if costs:
            known = [c for c in costs if c is not None]
            unknown = unpriced or len(known) < len(costs)
            result["llm_cost"] = None if unknown else math.fsum(known)

    def _generic_jobs(
        self,
        question: str,
        reference: Any,
        answer: Any,
        steps: list[Any],
        chunks: dict[int, list[str] | ValueError],
    ) -> list[Coroutine[Any, Any, dict[str, Any]]]:
        """The registry families scheduled by their ``needs`` alone."""
        jobs: list[Coroutine[Any, Any, dict[str, Any]]] = []
        for metric in self.generic:
            needs = metric.needs
            if "answer" in needs and not isinstance(answer, str):
                continue
            if "reference_answer" in needs and not isinstance(reference, str):
                continue
            contexts: list[str] | None = None
            if "contexts" in needs:
                try:
                    contexts = contexts_of(steps, chunks or retrieval_chunks(steps))
                except ValueError as e:
                    jobs.append(_failed_keys([f"{metric.name}_error"], str(e)))
                    continue
                if contexts is None:
                    continue
            inputs = {
                "question": question,
                "answer": answer if isinstance(answer, str) else None,
                "reference_answer": reference if isinstance(reference, str) else None,
                "contexts": contexts,
                "steps": steps,
            }
            jobs.append(self._registered(metric, inputs))
        return jobs

    async def _registered(self, metric: Metric, inputs: dict[str, Any]) -> dict[str, Any]:
        """Run a registry family's ``score`` entry point: the one place its judge errors become
        ``<name>_error`` and its cost ``<name>_cost``."""
        assert metric.score is not None
        module, _, function = metric.score.partition(":")
        score = getattr(importlib.import_module(module), function)
        options = dict(self.config.options.get(metric.name, {}))
        try:
            out = await score(self.judge, inputs, options)
        except (JudgeError, ValueError) as e:
            return {f"{metric.name}_error": str(e)}
        cost = None
        if isinstance(out, tuple):
            out, cost = out
        keys = dict(out)
        if cost is not None:
            keys[f"{metric.name}_cost"] = cost
        return keys

    def _answer_jobs(
        self, question: str, reference: Any, answer: str, offline: bool = True
    ) -> list[Coroutine[Any, Any, dict[str, Any]]]:
        on, judge, config = self.on, self.judge, self.config
        has_reference = isinstance(reference, str)
        jobs: list[Coroutine[Any, Any, dict[str, Any]]] = []
        if judge is not None:
            if on["answer_correctness"] and has_reference:
                jobs.append(
                    answer_correctness(
                        judge, question, reference, answer, config.answer_correctness_prompt
                    )
                )
            if on["answer_relevance"] and self.embedder is not None:
                jobs.append(self._relevance(judge, self.embedder, question, answer))
            if on["factual_accuracy"] and has_reference:
                jobs.append(
                    factual_accuracy_metric(
                        judge,
                        question,
                        reference,
                        answer,
                        config.option("factual_accuracy", "weights", DEFAULT_WEIGHTS),
                        config.option("factual_accuracy", "cutoffs", DEFAULT_CUTOFFS),
                    )
                )
            if on["answer_class"]:
                phrases = config.option("answer_class", "phrases", DEFAULT_UNCERTAINTY_PHRASES)
                jobs.append(
                    classify_answer(
                        judge, question, reference if has_reference else "", answer, phrases
                    )
                )
        if not offline:
            return jobs
        if on["semantic_similarity"] and has_reference and self.embedder is not None:
            jobs.append(semantic_similarity_metric(self.embedder, answer, reference))
        if on["bertscore"] and has_reference:
            jobs.append(_bertscore(self.bertscorer, self._bert_lock, answer, reference))
        return jobs

    async def _relevance(
        self, judge: Judge, embedder: Embedder, question: str, answer: str
    ) -> dict[str, Any]:
        count = self.config.relevance_questions
        if not self.config.option("answer_relevance", "rubric_fallback", True):
            return await answer_relevance(judge, embedder, question, answer, count)
        if getattr(judge, "dry_run", False):  # the rubric fallback is counted with the call
            with judge.planning() as planned:
                keys = await answer_relevance(judge, embedder, question, answer, count)
            if planned:
                await answer_relevance_rubric(judge, question, answer)
            return keys
        return await answer_relevance_with_fallback(judge, embedder, question, answer, count)

    async def _faithfulness(
        self, judge: Judge, question: str, answer: str, contexts: list[str]
    ) -> dict[str, Any]:
        """:func:`faithfulness`; a dry run that plans its first call (the statements) also
        counts the second (the verdicts), estimated with the answer's sentences as statements."""
        if not getattr(judge, "dry_run", False):
            return await faithfulness(judge, question, answer, contexts)
        with judge.planning() as planned:
            keys = await faithfulness(judge, question, answer, contexts)
        if len(planned) == 1:
            sentences = [s for s in re.split(r"(?<=[.!?])\s+", answer.strip()) if s] or [answer]
            text = render(
                "faithfulness_verdicts",
                {"statements": numbered_blocks(sentences, "statement")},
                context="\n".join(contexts),
            )
            judge.plan_call(
                "faithfulness",
                [{"role": "user", "content": text}],
                verdicts_schema(len(sentences)),
            )
        return keys

    def _context_jobs(
        self,
        steps: list[Any],
        chunks: dict[int, list[str] | ValueError],
        question: str,
        reference: Any,
        answer: Any,
    ) -> list[Coroutine[Any, Any, dict[str, Any]]]:
        judge = self.judge
        wanted = [
            m
            for m in ("faithfulness", "context_precision", "context_recall")
            if self.on[m] and judge is not None
        ]
        if not wanted:
            return []
        try:
            contexts = contexts_of(steps, chunks)
        except ValueError as e:
            return [_failed_keys([f"{m}_error" for m in wanted], str(e))]
        if contexts is None:
            return []
        assert judge is not None
        text_reference = reference if isinstance(reference, str) else None
        text_answer = answer if isinstance(answer, str) else None
        jobs: list[Coroutine[Any, Any, dict[str, Any]]] = []
        if "faithfulness" in wanted and text_answer is not None:
            jobs.append(self._faithfulness(judge, question, text_answer, contexts))
        # Both on, with a reference: one combined call both await (context_quality.py).
        shared = context_judgement(
            judge,
            question,
            contexts,
            text_reference,
            precision="context_precision" in wanted,
            recall="context_recall" in wanted,
            options=self.config.options,
        )
        if "context_precision" in wanted:
            jobs.append(
                context_precision(
                    judge, question, contexts, text_reference, text_answer, shared=shared
                )
            )
        if "context_recall" in wanted and text_reference is not None:
            jobs.append(
                context_recall_metric(judge, question, text_reference, contexts, shared=shared)
            )
        return jobs

    def _composite(self, result: Mapping[str, Any]) -> dict[str, Any]:
        from .metrics.composite import COMPONENTS

        components = {name: result.get(name) for name in COMPONENTS}
        try:
            composite = ragas_score(
                components,  # type: ignore[arg-type]
                self.config.option("ragas_score", "weights"),
            )
        except ValueError as e:
            return {"ragas_score_error": str(e)}
        if composite.score is None:
            return {"ragas_score_reason": "none of its components was computed"}
        return {
            "ragas_score": composite.score,
            "ragas_score_components": list(composite.used),
        }

    def _step_jobs(
        self,
        chunks_by_step: dict[int, list[str] | ValueError],
        question: str,
        reference: Any,
        matched: list[tuple[Mapping[str, Any], int]],
        steps: list[Any],
    ) -> list[tuple[int, Coroutine[Any, Any, dict[str, Any]]]]:
        references: dict[int, Mapping[str, Any]] = {
            a: ref for ref, a in matched if ref.get("name") == "retrieval" and "output" in ref
        }
        explicit = {"retrieval_answer", "retrieval_context"} & self.enabled
        jobs = []
        for index, chunks in chunks_by_step.items():
            # A flat row's contexts: the step metrics would repeat the context ones.
            only = explicit if steps[index].get(FLAT_MARK) is True else None
            if only is not None and not only:
                continue
            if isinstance(chunks, ValueError):
                prefixes = self._prefixes(reference, index in references, only)
                jobs.append((index, _failed(prefixes, str(chunks))))
                continue
            together = self._together(question, reference, references.get(index), chunks, only)
            if together is not None:
                jobs.append((index, together))
        return jobs

    def step_on(self, switch: str, step: Mapping[str, Any]) -> bool:
        """Whether a retrieval step metric (``retrieval_answer`` / ``retrieval_context``) runs on
        this actual step (a flat row's made-up step only when explicitly enabled)."""
        only = self.enabled if step.get(FLAT_MARK) is True else None
        return self._step_on(switch, only)

    def _step_on(self, switch: str, only: frozenset[str] | set[str] | None) -> bool:
        """Whether a step metric runs on a step (``only``: the switches a marked step allows)."""
        return self.on[switch] and (only is None or switch in only)

    def _prefixes(
        self, reference: Any, matched: bool, only: frozenset[str] | set[str] | None = None
    ) -> list[str]:
        prefixes = []
        if self._step_on("retrieval_answer", only) and isinstance(reference, str):
            prefixes.append("retrieval_answer")
        if self._step_on("retrieval_context", only) and matched:
            prefixes.append("retrieval_context")
        return prefixes

    def _together(
        self,
        question: str,
        reference: Any,
        ref_step: Mapping[str, Any] | None,
        chunks: list[str],
        only: frozenset[str] | set[str] | None = None,
    ) -> Coroutine[Any, Any, dict[str, Any]] | None:
        parts: list[Coroutine[Any, Any, dict[str, Any]]] = []
        judge = self.judge
        if judge is None:  # never so: the LLM switches are on only with a judge
            return None
        if (
            self._step_on("retrieval_answer", only)
            and isinstance(reference, str)
            and reference.strip()
        ):
            parts.append(retrieval_metrics(judge, "retrieval_answer", question, reference, chunks))
        if self._step_on("retrieval_context", only) and ref_step is not None:
            try:
                reference_text = "\n".join(chunk_texts(ref_step["output"]))
            except ValueError as e:
                parts.append(_failed(["retrieval_context"], f"reference step: {e}"))
            else:
                parts.append(
                    retrieval_metrics(judge, "retrieval_context", question, reference_text, chunks)
                )
        if not parts:
            return None
        return _merged(parts)


async def _merged(parts: list[Coroutine[Any, Any, dict[str, Any]]]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for keys in await asyncio.gather(*parts):
        merged.update(keys)
    return merged


async def _failed(prefixes: list[str], message: str) -> dict[str, Any]:
    return await _failed_keys(
        [f"{p}_{m}_error" for p in prefixes for m in ("recall", "precision")], message
    )


async def _failed_keys(keys: list[str], message: str) -> dict[str, Any]:
    return dict.fromkeys(keys, message)


async def _bertscore(
    scorer: Any, lock: asyncio.Lock, answer: str, reference: str
) -> dict[str, Any]:
    """BERTScore P/R/F1 of the answer against the reference, computed on a worker thread (one
    at a time: the model uses every core already)."""
    try:
        async with lock:
            ((p, r, f1),) = await asyncio.to_thread(scorer.score, [answer], [reference])
    except Exception as e:  # the model's failure is this metric's, not the run's
        return {"bertscore_error": f"{type(e).__name__}: {e}"}
    from .metrics.bertscore import as_fields

    return as_fields((p, r, f1), scorer.info())
