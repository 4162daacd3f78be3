"""Schedules the LLM-judged metrics of one question: which apply, with what inputs, and where their
keys go (the result for answer metrics; a copy of the actual step for retrieval step metrics). The
scored result is a new dict: the result given, and its steps, are not changed.

Which metric runs when:

- ``answer_correctness``: the reference has ``reference_answer`` and the response ``actual_answer``.
- ``answer_relevance``: the response has ``actual_answer``.
- ``retrieval_answer_*``: every successful ``retrieval`` actual step with an output, when the
  reference has ``reference_answer``.
- ``retrieval_context_*``: every ``retrieval`` actual step matched to a ``retrieval`` reference
  step with an output.
- custom metrics: every question that has their inputs.
- every registry family (``vocabulary.registry``; the built-in answer and GraphRAG families as
  any added one, see docs/adding-a-metric.md) through its ``score`` entry point, on every question
  that has what its ``needs`` lists (answer, reference answer, contexts, embedder). Each returns
  frozen records (``metrics/output.py``); ``output.measure`` is the one place where a
  ``JudgeError`` or ``ValueError`` becomes ``<name>_error`` (with a typed skip reason for a call
  that was not made), ``Output.result_keys`` the one place a record becomes result keys, its costs
  ``<name>_cost``, and ``llm_cost`` is the sum of the question's records' costs.
- a retrieval step marked ``flat_contexts`` (the made-up step of a flat row, ``io.flat``) gets no
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
values are merged (mean, standard deviation, flips; see ``judge.repeats``).
"""

from __future__ import annotations

import asyncio
import copy
import importlib
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from types import MappingProxyType
from typing import Any, cast

from ..config import OFFLINE_SWITCHES, SWITCHES, EvalConfig
from ..io.flat import FLAT_MARK
from ..judge.calls import AskContext, Asking, Judge
from ..judge.embeddings import Embedder
from ..metrics.custom import custom_output
from ..metrics.definitions import CustomMetric
from ..metrics.output import Output, failed, llm_cost, measure, serialize
from ..metrics.retrieval.flat_context import combines, context_judgement
from ..metrics.retrieval.step_context import chunk_texts, retrieval_outputs
from ..steps.trajectory.comparators import mentions_llm
from ..vocabulary.model import Metric
from ..vocabulary.registry import METRICS as REGISTRY
from .question import AGENT_REFERENCE_KEYS, RAGAS_REFERENCE_KEYS

__all__ = ["AnswerScorer", "contexts_of", "unrecorded"]

_STEP_SWITCHES = ("retrieval_answer", "retrieval_context")
"""The families scheduled per actual ``retrieval`` step (their keys go into the step)."""

_CONFIG_OPTIONS: dict[str, dict[str, str]] = {
    "answer_correctness": {"prompt": "answer_correctness_prompt"},
    "answer_relevance": {"questions": "relevance_questions"},
}
"""Options of a family that the config keeps outside its block (option -> EvalConfig field)."""

Records = tuple[Output, ...]


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


def unrecorded(result: Mapping[str, Any]) -> dict[str, str]:
    """What a metric may need that the response's trace did not record (``answer``, and
    ``contexts`` when a ``retrieval`` step has no recorded output), each with the reason a metric
    that needs it is not evaluable (docs/traces.md): such a metric is an error, never a value
    computed on what is left, never absent."""
    found: dict[str, str] = {}
    trace = result.get("trace")
    if not isinstance(trace, Mapping):
        trace = {}
    keep = trace.get("keep")
    how = f"; to keep it: {keep}" if isinstance(keep, str) else ""
    lost = trace.get("lost")
    if (
        isinstance(lost, list)
        and "answer" in lost
        and not isinstance(result.get("actual_answer"), str)
    ):
        found["answer"] = f"the trace did not record the answer (content capture off{how})"
    steps = result.get("actual_steps")
    retrieval = (
        [s for s in steps if isinstance(s, Mapping) and s.get("name") == "retrieval"]
        if isinstance(steps, list)
        else []
    )
    blind = [s for s in retrieval if "output" in (s.get("lost") or ())]
    if blind:
        found["contexts"] = (
            f"{len(blind)} of {len(retrieval)} retrieval steps have no recorded output (the "
            f"contexts: the trace did not capture them{how})"
        )
    return found


_ENTRIES: dict[str, Callable[..., Awaitable[Any]]] = {}


def entry_point(metric: Metric) -> Callable[..., Awaitable[Any]]:
    """A family's ``score`` coroutine function, imported on first use."""
    assert metric.score is not None
    found = _ENTRIES.get(metric.score)
    if found is None:
        module, _, function = metric.score.partition(":")
        found = _ENTRIES[metric.score] = getattr(importlib.import_module(module), function)
    return found


class AnswerScorer:
    """Computes the LLM metrics' (and the offline answer metrics') keys of the results of a run."""

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
        self.on = {
            s: config.switched_on(s, enabled, disabled)
            and (judge is not None or s in OFFLINE_SWITCHES)
            for s in SWITCHES
        }
        self.enabled = enabled
        if embedder is None:
            self.on["semantic_similarity"] = False
        if bertscorer is None:
            self.on["bertscore"] = False
        self.families: list[Metric] = [
            m
            for m in REGISTRY.values()
            if m.score is not None
            and (
                self.on[m.name]
                if m.name in self.on
                else config.switched_on(m.name, enabled, disabled)
                and (judge is not None or m.offline)
            )
            and (embedder is not None or "embedder" not in m.needs)
        ]
        """The registry families that run (in registry order), each through its ``score``."""
        running = {m.name for m in self.families}
        self._context_pair = ("context_precision" in running, "context_recall" in running)
        """Whether context precision and context recall run (candidates for one shared call)."""
        self.skipped: Counter[str] = Counter()
        """Metric values whose judge call was not made, by ``SkipReason`` value (every repeat
        counts): the run's signature reports them."""
        self.custom: list[CustomMetric] = (
            list(config.custom_definitions)  # parsed once, with the config
            if self.on["custom"]
            else []
        )

    def applies(self, result: Mapping[str, Any]) -> bool:
        """Whether any metric would run for this result: a family that needs an answer when it
        has one, one that needs contexts (and no answer) when it has a retrieval step, any
        other family, a custom metric; the retrieval step metrics on a retrieval step."""
        if result.get("status") != "success":
            return False
        if self.custom:
            return True
        answer = "actual_answer" in result or "answer" in unrecorded(result)
        retrieval = has_retrieval(result["actual_steps"])
        for metric in self.families:
            if metric.derived:
                continue
            if "answer" in metric.needs:
                if answer:
                    return True
            elif "reference_trajectory" in metric.needs:
                if mentions_llm(result.get("reference_trajectory")):
                    return True
            elif "contexts" in metric.needs:
                if retrieval:
                    return True
            else:
                return True
        return retrieval and any(self.on[s] for s in _STEP_SWITCHES)

    def expected_asks(
        self, result: Mapping[str, Any], matched: list[tuple[Mapping[str, Any], int]]
    ) -> int:
        """How many judge asks this schedule makes for a result, for the progress display's
        estimate: each family's ``calls`` when the result has what it needs, one per custom
        metric, two per retrieval step and reference kind. An estimate: a faithfulness answer
        with no statement, a re-ask or an uncertainty phrase changes it."""
        if self.judge is None:
            return 0
        answer = isinstance(result.get("actual_answer"), str)
        reference = isinstance(result.get("reference_answer"), str)
        steps = result.get("actual_steps") or []
        retrieval = [
            i
            for i, s in enumerate(steps)
            if isinstance(s, Mapping) and s.get("name") == "retrieval"
        ]
        asks = len(self.custom)
        for metric in self.families:
            if (
                ("answer" not in metric.needs or answer)
                and ("reference_answer" not in metric.needs or reference)
                and ("contexts" not in metric.needs or retrieval)
                and ("reference_topics" not in metric.needs or "reference_topics" in result)
            ):
                asks += metric.calls
        reference_text = result.get("reference_answer")
        if (
            retrieval
            and combines(*self._context_pair, reference_text, self.config.options)
            and not self._recall_is_a_step_request(steps, retrieval, reference_text)
        ):
            asks -= 1  # one call for the two (context_quality.py)
        matched_steps = {a for ref, a in matched if ref.get("name") == "retrieval"}
        for index in retrieval:
            asks += 2 * (self.step_on("retrieval_answer", steps[index]) and reference)
            asks += 2 * (self.step_on("retrieval_context", steps[index]) and index in matched_steps)
        return int(asks)

    async def score(
        self, result: Mapping[str, Any], matched: list[tuple[Mapping[str, Any], int]]
    ) -> dict[str, Any]:
        """This question's result with its metrics' keys: a new dict (``result`` and its steps
        are not changed); the judge's ``llm.repeats`` times, merged as ``judge.repeats`` says."""
        if self.config.repeats > 1 and self.judge is not None:
            from ..aggregate import METRICS, STEP_METRICS
            from ..judge.repeats import score_repeated

            values = [*METRICS, *(m for names in STEP_METRICS.values() for m in names)]
            values += [name for metric in self.custom for name in metric.outputs]
            return await score_repeated(
                self._score_repeat, result, matched, self.config.repeats, values
            )
        return await self._score_repeat(result, matched, 0)

    async def _score_repeat(
        self, result: Mapping[str, Any], matched: list[tuple[Mapping[str, Any], int]], repeat: int
    ) -> dict[str, Any]:
        """One computation of the question's metrics as repeat ``repeat``, its asks in that
        context (repeat 0: also the metrics without a judge), as a new result."""
        scorer = self
        if self.judge is not None:
            asking = Asking(self.judge, AskContext(repeat=repeat))
            scorer = self.with_judge(cast("Judge", asking))
        return await scorer._score_once(result, matched, offline=repeat == 0)

    def with_judge(self, judge: Judge) -> AnswerScorer:
        """This scorer asking ``judge`` (one question's counting view of the run's judge); the
        rest, the tally of ``skipped`` values included, is shared."""
        view = copy.copy(self)
        view.judge = judge
        return view

    async def _score_once(
        self,
        result: Mapping[str, Any],
        matched: list[tuple[Mapping[str, Any], int]],
        offline: bool = True,
    ) -> dict[str, Any]:
        """One computation of the question's metrics (``offline``: also those without a judge),
        as a new result."""
        reference = result.get("reference_answer")
        steps = result["actual_steps"]
        chunks = self._chunks(steps)
        inputs, contexts = self._inputs(result, chunks)
        lost = unrecorded(result)
        jobs: list[Awaitable[Records]] = [
            job
            for metric in self.families
            if not metric.derived and (offline or not metric.offline)
            for job in self._family_job(metric, inputs, contexts, lost)
        ]
        jobs.extend(self._custom_jobs(result))
        step_jobs = self._step_jobs(chunks, inputs["question"], reference, matched, steps)
        outcomes = await asyncio.gather(*jobs, *(job for _, job in step_jobs))
        records = [o for outputs in outcomes[: len(jobs)] for o in outputs]
        await self._derived(records, inputs)
        new_steps = list(steps)
        for (index, _), outputs in zip(step_jobs, outcomes[len(jobs) :]):
            if outputs:
                new_steps[index] = {**steps[index], **serialize(outputs)}
        step_records = [o for outputs in outcomes[len(jobs) :] for o in outputs]
        return self._scored(result, records, step_records, new_steps)

    def _chunks(self, steps: list[Any]) -> dict[int, list[str] | ValueError]:
        """The chunk texts of the retrieval steps, when a metric that runs reads them."""
        reads_chunks = any(self.on[s] for s in _STEP_SWITCHES) or any(
            "contexts" in m.needs for m in self.families
        )
        # Only these metrics read the chunks: otherwise the retrieval outputs are not parsed.
        return retrieval_chunks(steps) if reads_chunks else {}

    def _inputs(
        self, result: Mapping[str, Any], chunks: dict[int, list[str] | ValueError]
    ) -> tuple[dict[str, Any], list[str] | ValueError | None]:
        """What the families read of a question, and its contexts (or why they are none)."""
        question = str(result.get("question_text") or "")
        reference = result.get("reference_answer")
        answer = result.get("actual_answer")
        steps = result["actual_steps"]
        inputs = {
            "question": question,
            "answer": answer if isinstance(answer, str) else None,
            "reference_answer": reference if isinstance(reference, str) else None,
            "steps": steps,
            **{key: result.get(key) for key in (*AGENT_REFERENCE_KEYS, *RAGAS_REFERENCE_KEYS)},
            "embedder": self.embedder,
            "bertscorer": self.bertscorer,
        }
        contexts: list[str] | ValueError | None = None
        if any("contexts" in m.needs for m in self.families):
            try:
                contexts = contexts_of(steps, chunks)
            except ValueError as e:
                contexts = e
        if self.judge is not None and isinstance(contexts, list):
            # Context precision and recall of this question share one judge call when both run
            # (context_quality.py); the two entry points await the same reply. Not when context
            # recall's own request is the one retrieval_answer_recall sends for the response's
            # only retrieval step: that one is asked once for both, so precision alone is cheaper.
            precision, recall = self._context_pair
            recall = recall and not self._recall_is_a_step_request(steps, list(chunks), reference)
            inputs["context_judgement"] = context_judgement(
                self.judge,
                question,
                contexts,
                inputs["reference_answer"],
                precision=precision,
                recall=recall,
                options=self.config.options,
            )
        return inputs, contexts

    def _custom_jobs(self, result: Mapping[str, Any]) -> list[Awaitable[Records]]:
        """The jobs of the config's custom metrics on one question."""
        return [
            custom_output(
                self.judge,  # type: ignore[arg-type]  # custom is on only with a judge
                metric,
                {
                    "question": result.get("question_text"),
                    "reference_answer": result.get("reference_answer"),
                    "reference_steps": result.get("reference_steps"),
                    "actual_answer": result.get("actual_answer"),
                    "actual_steps": result.get("actual_steps"),
                },
                self.config.examples.get(metric.name, ()),
            )
            for metric in self.custom
        ]

    async def _derived(self, records: list[Output], inputs: Mapping[str, Any]) -> None:
        """The derived families (``ragas_score``), computed from the records so far."""
        for metric in self.families:
            if metric.derived:
                scores = MappingProxyType(serialize(records))
                records.extend(await self._run(metric, {**inputs, "scores": scores}))

    def _scored(
        self,
        result: Mapping[str, Any],
        records: list[Output],
        step_records: list[Output],
        new_steps: list[Any],
    ) -> dict[str, Any]:
        """The new result: the records' keys, the steps with theirs, the question's cost; the
        skipped values tallied."""
        # A judge without a price makes the question's cost unknown (null), not the sum of the
        # offline metrics' known zeros.
        unpriced = self.judge is not None and getattr(self.judge, "price", {}) is None
        for record in (*records, *step_records):
            if record.skip is not None:
                self.skipped[record.skip.value] += 1
        costed, cost = llm_cost([*records, *step_records], unpriced)
        out = {**result, **serialize(records), "actual_steps": new_steps}
        if costed:
            out["llm_cost"] = cost
        return out

    def _family_job(
        self,
        metric: Metric,
        inputs: Mapping[str, Any],
        contexts: list[str] | ValueError | None,
        lost: Mapping[str, str],
    ) -> list[Awaitable[Records]]:
        """The job of a family on one question, if it has what the family needs (none if not;
        ``not evaluable`` when the trace did not record something it needs: ``lost``)."""
        needs = metric.needs
        if "contexts" in needs:
            if isinstance(contexts, ValueError):
                return [_ready((failed(metric.name, contexts, aliases=metric.aliases),))]
            if contexts is None:
                return []
            inputs = {**inputs, "contexts": contexts}
        if "answer" in needs and inputs["answer"] is None and "answer" not in lost:
            return []
        if "reference_answer" in needs and inputs["reference_answer"] is None:
            return []
        if "reference_topics" in needs and inputs["reference_topics"] is None:
            return []
        if "reference_trajectory" in needs and not mentions_llm(inputs["reference_trajectory"]):
            return []  # computed with the question's deterministic results (run/question.py)
        missing = [lost[need] for need in needs if need in lost]
        if missing:
            error = ValueError("not evaluable: " + "; ".join(missing))
            return [_ready((failed(metric.name, error, aliases=metric.aliases),))]
        return [self._run(metric, inputs)]

    async def _run(self, metric: Metric, inputs: Mapping[str, Any]) -> Records:
        """Run a family's ``score`` entry point through the one wrapper (``output.measure``)."""
        options = dict(self.config.options.get(metric.name, {}))
        for option, setting in _CONFIG_OPTIONS.get(metric.name, {}).items():
            options[option] = getattr(self.config, setting)
        if metric.name in self.config.examples:  # few-shot examples from people's labels
            options["examples"] = self.config.examples[metric.name]
        score = entry_point(metric)
        job = score(self.judge, MappingProxyType(dict(inputs)), MappingProxyType(options))
        return await measure(metric.name, job, aliases=metric.aliases)

    def _step_jobs(
        self,
        chunks_by_step: dict[int, list[str] | ValueError],
        question: str,
        reference: Any,
        matched: list[tuple[Mapping[str, Any], int]],
        steps: list[Any],
    ) -> list[tuple[int, Awaitable[Records]]]:
        references: dict[int, Mapping[str, Any]] = {
            a: ref for ref, a in matched if ref.get("name") == "retrieval" and "output" in ref
        }
        explicit = set(_STEP_SWITCHES) & self.enabled
        jobs: list[tuple[int, Awaitable[Records]]] = []
        for index, chunks in chunks_by_step.items():
            # A flat row's contexts: the step metrics would repeat the context ones.
            only = explicit if steps[index].get(FLAT_MARK) is True else None
            if only is not None and not only:
                continue
            if isinstance(chunks, ValueError):
                prefixes = self._prefixes(reference, index in references, only)
                jobs.append((index, _ready(_failed(prefixes, str(chunks)))))
                continue
            together = self._together(question, reference, references.get(index), chunks, only)
            if together is not None:
                jobs.append((index, together))
        return jobs

    def _recall_is_a_step_request(
        self, steps: list[Any], retrieval: list[int], reference: Any
    ) -> bool:
        """Whether context recall's request equals the ``retrieval_answer_recall`` request of a
        step (``retrieval``, the indices of the retrieval steps, has one, the step metric is on
        for it, the reference is text): the judge then asks it once (the cache and in-flight
        sharing), so it costs no call of its own."""
        return (
            isinstance(reference, str)
            and len(retrieval) == 1
            and self.step_on("retrieval_answer", steps[retrieval[0]])
        )

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
    ) -> Awaitable[Records] | None:
        parts: list[Awaitable[Records]] = []
        judge = self.judge
        if judge is None:  # never so: the LLM switches are on only with a judge
            return None
        if (
            self._step_on("retrieval_answer", only)
            and isinstance(reference, str)
            and reference.strip()
        ):
            parts.append(retrieval_outputs(judge, "retrieval_answer", question, reference, chunks))
        if self._step_on("retrieval_context", only) and ref_step is not None:
            try:
                reference_text = "\n".join(chunk_texts(ref_step["output"]))
            except ValueError as e:
                parts.append(_ready(_failed(["retrieval_context"], f"reference step: {e}")))
            else:
                parts.append(
                    retrieval_outputs(judge, "retrieval_context", question, reference_text, chunks)
                )
        if not parts:
            return None
        return _merged(parts)


async def _merged(parts: list[Awaitable[Records]]) -> Records:
    return tuple(o for outputs in await asyncio.gather(*parts) for o in outputs)


async def _ready(records: Records) -> Records:
    return records


def _failed(prefixes: list[str], message: str) -> Records:
    """The error records of the recall and precision of the step metrics ``prefixes``."""
    return tuple(failed(f"{p}_{m}", message) for p in prefixes for m in ("recall", "precision"))
