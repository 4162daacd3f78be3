"""Several per-sample metrics over many rows at once, as one run: ``ascore_rows`` (and its
synchronous face ``score_rows``).

The metrics whose engine a full run has (Faithfulness, AnswerRelevancy, ContextPrecision /
ContextPrecisionWithReference, ContextRecall, SemanticSimilarity without a threshold) are scored
by ``run_evaluation``'s own code path on the rows turned into a reference and responses
(``io.flat``): so ContextPrecision and ContextRecall of a row share one combined judge call, as in
a run, and the results carry the keys a run writes (``faithfulness``, ``answer_relevance``,
``context_precision_ap``, ``context_recall``, ``semantic_similarity``, their reasons, errors and
costs). Such a metric goes this way only when every row has the inputs ragas requires of it, so
its values are the ones its ``ascore`` would give on the same verdicts; otherwise, and for every
other metric, each row is scored through the metric object (``BaseMetric.ascore_row``), its value
written under the metric's ``name`` with ``<name>_reason``, ``<name>_cost`` and ``<name>_error``.

Both ways ask one judge, made here from the metrics' ``llm``: one bound on calls in flight
(``concurrency``), identical requests in flight shared, the reply cache, and one budget
(``max_cost``, in USD: once spent, no call starts; the values not computed are errors
``budget exceeded`` of their rows, and every row is still returned). The result is a
:class:`RowResults`: one result dict per row, in row order, with ``question_id`` and
``template_id`` (from the rows, else ``row-<n>`` and ``all``), and the run's ``signature``
(qa-eval version, judge model and parameters, prompt hashes, options, usage); ``scores`` holds
each row's :class:`MetricResult` by metric name. ``compute_aggregates(results,
extra_metrics=results.extra_metrics)``, ``compare_runs`` and ``build_report`` take it as a run.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ...errors import BudgetExceeded, QaEvalError
from ...run.evaluation import arun_evaluation
from ...run.options import RunOptions, library_config
from ...run.question import Results
from ..ragas.judged import tally
from .base import BaseMetric, Progress, progress_of, run_sync
from .rag import (
    AnswerRelevancy,
    ContextPrecision,
    ContextPrecisionWithReference,
    ContextRecall,
    Faithfulness,
    SemanticSimilarity,
)
from .result import MetricResult

__all__ = ["RowResults", "ascore_rows", "result_keys", "score_rows"]


@dataclasses.dataclass(frozen=True)
class _Face:
    """How a full run computes a metric class: its switch, the key of its value, and the inputs
    ragas requires of a row (``filled``: not empty either)."""

    switch: str
    key: str
    given: tuple[str, ...]
    filled: tuple[str, ...]


_FACES: dict[type, _Face] = {
    Faithfulness: _Face(
        "faithfulness",
        "faithfulness",
        ("user_input", "response", "retrieved_contexts"),
        ("user_input", "retrieved_contexts"),
    ),
    AnswerRelevancy: _Face(
        "answer_relevance", "answer_relevance", ("user_input", "response"), ("user_input",)
    ),
    ContextPrecision: _Face(
        "context_precision",
        "context_precision_ap",
        ("user_input", "reference", "retrieved_contexts"),
        ("user_input", "reference"),
    ),
    ContextPrecisionWithReference: _Face(
        "context_precision",
        "context_precision_ap",
        ("user_input", "reference", "retrieved_contexts"),
        ("user_input", "reference"),
    ),
    ContextRecall: _Face(
        "context_recall",
        "context_recall",
        ("user_input", "retrieved_contexts", "reference"),
        ("user_input", "reference"),
    ),
    SemanticSimilarity: _Face(
        "semantic_similarity", "semantic_similarity", ("reference", "response"), ()
    ),
}

_TEXT_INPUTS = ("user_input", "response", "reference")


def result_keys(metric: Any) -> tuple[str, ...]:
    """The keys a result dict may hold a metric object's value under, likeliest first: the run
    key of a class a full run computes (``ContextPrecision``: ``context_precision_ap``, not the
    run's other ``context_precision``), then the object's ``name`` (row by row)."""
    face = _FACES.get(type(metric))
    name = str(metric.name)
    return (face.key, name) if face is not None and face.key != name else (name,)


class RowResults(Results):
    """The results of ``ascore_rows``: one result dict per row (a run's keys) and ``signature``;
    ``scores[i]`` maps each metric's name to its :class:`MetricResult` on row ``i``, ``keys``
    each metric's name to the result key of its value, ``extra_metrics`` the value keys outside
    the metric registry (give them to ``compute_aggregates(extra_metrics=...)``)."""

    scores: list[dict[str, MetricResult]]
    keys: dict[str, str]
    extra_metrics: list[str]


def _fits_a_run(face: _Face, rows: Sequence[Mapping[str, Any]]) -> bool:
    """Whether every row has what ragas requires of the metric, as a run reads it (texts as
    text, the contexts a list of texts)."""
    for row in rows:
        for name in face.given:
            value = row.get(name)
            if name in _TEXT_INPUTS and not isinstance(value, str):
                return False
            if name == "retrieved_contexts" and not (
                isinstance(value, list) and all(isinstance(c, str) for c in value)
            ):
                return False
        if any(not row.get(name) for name in face.filled):
            return False
    return True


@dataclasses.dataclass
class _Plan:
    """Which metrics a run scores (by name, with their face) and which go row by row."""

    judged: dict[str, tuple[BaseMetric, _Face]]
    per_row: list[BaseMetric]
    keys: dict[str, str]


def _plan(metrics: Sequence[BaseMetric], rows: Sequence[Mapping[str, Any]]) -> _Plan:
    plan = _Plan({}, [], {})
    switches: set[str] = set()
    embedder: Any = None
    for metric in metrics:
        if not isinstance(metric, BaseMetric):
            raise QaEvalError(
                f"ascore_rows takes metric objects of qa_eval.metrics.collections, not "
                f"{type(metric).__name__}"
            )
        if metric.name in plan.keys:
            raise QaEvalError(f"two metrics are named {metric.name!r}: give one another name")
        face = _FACES.get(type(metric))
        if isinstance(metric, SemanticSimilarity) and metric.threshold:
            face = None  # a threshold turns the value into 1 or 0: not what a run writes
        if (
            isinstance(metric, AnswerRelevancy | SemanticSimilarity)
            and embedder is not None
            and metric.embeddings is not embedder
        ):
            face = None  # a run has one embedder: the other is scored row by row
        if face is not None and face.switch not in switches and _fits_a_run(face, rows):
            switches.add(face.switch)
            if metric.embeddings is not None:
                embedder = metric.embeddings
            plan.judged[metric.name] = (metric, face)
            plan.keys[metric.name] = face.key
        else:
            plan.per_row.append(metric)
            plan.keys[metric.name] = face.key if face is not None else metric.name
    taken = list(plan.keys.values())
    doubled = sorted({k for k in taken if taken.count(k) > 1})
    if doubled:
        raise QaEvalError(f"two metrics would write {doubled[0]!r}: give one of them another name")
    return plan


def _llm_of(metrics: Sequence[BaseMetric]) -> Any:
    """The one judge settings of the metrics (``None`` when none has an llm)."""
    llms = [m.llm for m in metrics if m.llm is not None]
    for other in llms[1:]:
        if other is not llms[0] and other.config != llms[0].config:
            raise QaEvalError(
                "ascore_rows scores with one judge under one budget: give every metric the "
                f"same llm (got {llms[0].model!r} and {other.model!r})"
            )
    return llms[0] if llms else None


def _flat_row(index: int, row: Mapping[str, Any]) -> dict[str, Any]:
    """A row as ``io.flat`` reads it: its id, texts and contexts (other inputs stay out)."""
    qid = row.get("question_id", row.get("id"))
    question = row.get("user_input")
    flat: dict[str, Any] = {
        "question_id": str(qid) if qid is not None else f"row-{index + 1}",
        "question": question if isinstance(question, str) and question.strip() else "(no text)",
    }
    response = row.get("response")
    if isinstance(response, str):
        flat["answer"] = response
    elif response is not None:
        flat["answer"] = ""  # a structured response (messages, tool calls): scored per row
    contexts = row.get("retrieved_contexts")
    if isinstance(contexts, list) and all(isinstance(c, str) for c in contexts):
        flat["contexts"] = contexts
    if isinstance(row.get("reference"), str):
        flat["ground_truth"] = row["reference"]
    for name in ("template_id", "question_type"):
        if row.get(name) is not None:
            flat[name] = str(row[name])
    return flat


def _inputs(metric: BaseMetric, row: Mapping[str, Any]) -> dict[str, Any]:
    """The keys of ``row`` the metric's ``ascore`` (or wrapped function) takes by name."""
    target: Callable[..., Any] = getattr(metric, "function", None) or metric.ascore
    try:
        parameters = inspect.signature(target).parameters.values()
    except (TypeError, ValueError):
        return dict(row)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return dict(row)
    names = {p.name for p in parameters}
    return {k: v for k, v in row.items() if k in names}


def _from_run(
    metric: BaseMetric, face: _Face, result: Mapping[str, Any], threshold: float | None
) -> MetricResult:
    """A metric's result read from the keys a run wrote for its row."""
    switch, name = face.switch, metric.name
    cost = result.get(f"{switch}_cost")
    error = result.get(f"{switch}_error")
    if error is not None:
        return MetricResult(
            None, f"not scored: {error}", error=str(error), threshold=threshold, name=name
        )
    value = result.get(face.key)
    reason = result.get(f"{switch}_reason")
    if value is None:
        reason = reason or "not computed for this row (the run wrote no value)"
    elif not reason:
        reason = _verdicts(result, switch) or f"{face.key} = {value:.4g}"
    return MetricResult(
        value,
        str(reason),
        cost=cost if isinstance(cost, (int, float)) else None,
        threshold=threshold,
        name=name,
    )


def _verdicts(result: Mapping[str, Any], switch: str) -> str | None:
    """A reason built from the verdicts a run wrote (chunks, statements), when it wrote some."""
    chunks = result.get(f"{switch}_verdicts")
    if isinstance(chunks, list) and chunks:
        useful = sum(1 for c in chunks if isinstance(c, Mapping) and c.get("relevant"))
        return f"{useful} of {len(chunks)} chunks useful"
    statements = result.get(f"{switch}_statements")
    if isinstance(statements, list) and statements:
        mark = "attributed" if switch == "context_recall" else "supported"
        pairs = [(str(s.get("statement", "")), bool(s.get(mark))) for s in statements]
        return tally(pairs, "statements", mark, "not " + mark)
    return None


def _put(result: dict[str, Any], key: str, scored: MetricResult, priced: bool) -> None:
    """A row-by-row metric's result into its row's result dict (``priced``: the metric calls a
    model, so its cost is written and added to the row's ``llm_cost``)."""
    result[key] = scored.value
    result[f"{key}_reason"] = scored.reason
    if scored.error is not None:
        result[f"{key}_error"] = scored.error
    if not priced:
        return
    result[f"{key}_cost"] = scored.cost
    if scored.cost is not None and isinstance(result.get("llm_cost", 0.0), (int, float)):
        result["llm_cost"] = float(result.get("llm_cost") or 0.0) + scored.cost


class _Rows:
    """The rows in flight: each is handed on (``on_result``, ``progress``) once the run and
    every row-by-row metric finished it."""

    def __init__(
        self,
        rows: Sequence[Mapping[str, Any]],
        plan: _Plan,
        on_result: Callable[[int, dict[str, Any]], Any] | None,
        progress: Progress | None,
    ) -> None:
        self.rows = rows
        self.plan = plan
        self.on_result = on_result
        self.progress = progress
        self.results: list[dict[str, Any] | None] = [None] * len(rows)
        self.scores: list[dict[str, MetricResult]] = [{} for _ in rows]
        self.pending = [len(plan.per_row) + 1 for _ in rows]
        self.by_id: dict[str, int] = {}
        self.skipped: Counter[str] = Counter()
        self.done = 0

    def from_run(self, result: dict[str, Any]) -> None:
        """A row's result from the run: its run metrics read, the row maybe finished."""
        index = self.by_id[str(result["question_id"])]
        self.results[index] = result
        for name, (metric, face) in self.plan.judged.items():
            self.scores[index][name] = _from_run(metric, face, result, metric.threshold)
        self._one_less(index)

    def from_metric(self, index: int, metric: BaseMetric, scored: MetricResult) -> None:
        """A row-by-row metric's result."""
        self.scores[index][metric.name] = scored
        self._one_less(index)

    def _one_less(self, index: int) -> None:
        self.pending[index] -= 1
        if self.pending[index]:
            return
        result = self.results[index]
        assert result is not None
        for metric in self.plan.per_row:
            priced = metric.llm is not None or metric.embeddings is not None
            _put(result, self.plan.keys[metric.name], self.scores[index][metric.name], priced)
        self.done += 1
        if self.on_result is not None:
            self.on_result(index, result)
        if self.progress is not None:
            self.progress(self.done, len(self.rows))


async def _per_row(rows: Sequence[Mapping[str, Any]], state: _Rows, judge: Any, limit: int) -> None:
    """Every row-by-row metric on every row, at most ``limit`` at a time, through ``judge``."""
    gate = asyncio.Semaphore(max(1, limit))

    async def one(index: int, metric: BaseMetric) -> None:
        async with gate:
            inputs = _inputs(metric, rows[index])
            try:
                try:
                    scored = await metric.ascore_row(inputs, judge)
                except NotImplementedError:  # a metric without the row hook: its own judge
                    scored = await metric.ascore(**inputs)
            except Exception as e:
                if isinstance(e, BudgetExceeded) or str(e) == str(BudgetExceeded()):
                    state.skipped["budget"] += 1
                scored = MetricResult.failed(e, metric.name, metric.threshold)
        state.from_metric(index, metric, scored)

    await asyncio.gather(*(one(i, m) for i in range(len(rows)) for m in state.plan.per_row))


def _usage(judge: Any) -> dict[str, Any]:
    """The judge's usage as a run's signature writes it."""
    return {
        "total": judge.total.as_dict(),
        "per_metric": {m: u.as_dict() for m, u in judge.usage.items()},
        "peak_concurrency": judge.peak_in_flight,
    }


def _options(llm: Any, plan: _Plan, judge: Any, max_cost: float | None) -> RunOptions:
    """The run's options: the judge's settings, the run metrics on and every other off."""
    from ...config import SWITCHES

    config = llm.config if llm is not None else library_config(None)
    embedder = None
    for metric, _ in plan.judged.values():
        if isinstance(metric, AnswerRelevancy):
            config = dataclasses.replace(config, relevance_questions=metric.strictness)
        embedder = embedder or metric.embeddings
    wanted = {face.switch for _, face in plan.judged.values()}
    return RunOptions(
        config,
        cache=False,
        max_cost=max_cost,
        enable=tuple(sorted(wanted)),
        disable=tuple(s for s in SWITCHES if s not in wanted),
        judge=judge,
        embedder=embedder,
    )


def _judge(llm: Any, concurrency: int | None, max_cost: float | None) -> Any:
    """One judge of the llm's settings for all the rows, with the budget."""
    if llm is None:
        return None
    from ...judge.calls import Judge

    config = llm.config.with_options(concurrency=concurrency)
    client = llm.client.view() if llm.client is not None else None
    return Judge(
        config,
        cache=llm.store(),
        client=client,
        max_cost=max_cost,
        system_prompt=getattr(llm, "system_prompt", None),
    )


async def ascore_rows(
    metrics: Iterable[BaseMetric],
    rows: Iterable[Mapping[str, Any]],
    *,
    concurrency: int | None = None,
    max_cost: float | None = None,
    on_result: Callable[[int, dict[str, Any]], Any] | None = None,
    progress: bool | Progress | None = None,
) -> RowResults:
    """Every metric on every row as one run (see the module docstring): one result dict per row,
    in row order, with the signature; ``on_result(index, result)`` as each row finishes."""
    metrics = list(metrics)
    rows = [dict(row) for row in rows]
    if not metrics:
        raise QaEvalError("ascore_rows needs at least one metric")
    plan = _plan(metrics, rows)
    llm = _llm_of(metrics)
    judge = _judge(llm, concurrency, max_cost)
    state = _Rows(rows, plan, on_result, progress_of(progress, "rows"))
    flat = [(i + 1, _flat_row(i, row)) for i, row in enumerate(rows)]
    from ...io.flat import flat_to_dataset

    reference, responses = flat_to_dataset(flat, source="rows")
    state.by_id = {str(f["question_id"]): i for i, (_, f) in enumerate(flat)}
    options = dataclasses.replace(_options(llm, plan, judge, max_cost), on_result=state.from_run)
    limit = 2 * (judge.config.concurrency if judge is not None else concurrency or 8)
    run, _ = await asyncio.gather(
        arun_evaluation(reference, responses, options=options),
        _per_row(rows, state, judge, limit),
    )
    signature = dict(run.signature)
    signature.pop("llm_metrics", None)  # the per-row metrics may need no judge
    if judge is not None:
        signature["usage"] = _usage(judge)
    if state.skipped:
        skipped = Counter(signature.get("skipped_metric_values") or {})
        skipped.update(state.skipped)
        signature["skipped_metric_values"] = dict(sorted(skipped.items()))
    signature["metrics"] = {
        m.name: {
            "class": type(m).__name__,
            "key": plan.keys[m.name],
            "scored": "as a run" if m.name in plan.judged else "row by row",
        }
        for m in metrics
    }
    out = RowResults(r for r in state.results if r is not None)
    out.signature = signature
    out.scores = state.scores
    out.keys = dict(plan.keys)
    from ...vocabulary.lookup import aggregated_keys

    known = set(aggregated_keys())
    out.extra_metrics = [k for k in plan.keys.values() if k not in known]
    return out


def score_rows(
    metrics: Iterable[BaseMetric],
    rows: Iterable[Mapping[str, Any]],
    *,
    concurrency: int | None = None,
    max_cost: float | None = None,
    on_result: Callable[[int, dict[str, Any]], Any] | None = None,
    progress: bool | Progress | None = None,
) -> RowResults:
    """:func:`ascore_rows` from synchronous code (inside a running loop too)."""
    metrics, rows = list(metrics), list(rows)
    return run_sync(
        lambda: ascore_rows(
            metrics,
            rows,
            concurrency=concurrency,
            max_cost=max_cost,
            on_result=on_result,
            progress=progress,
        )
    )
