"""Evaluate files as ``qa-eval evaluate`` does, from Python: :func:`evaluate_files`.

On top of ``run_evaluation`` (which takes data and returns results), this is the whole command:

- each result goes to ``OUTPUT.partial.jsonl`` as it finishes (flushed), so a run that stops
  keeps what it finished; at the end the results are written to ``output`` (``.yaml``,
  ``.json``) and the partial file is removed. With a JSON Lines ``output`` the results are
  streamed: written in reference order as they finish and aggregated on the way, none held, and
  the responses of a ``.jsonl`` file are read as a stream;
- the run signature goes to ``OUTPUT.signature.yaml`` and into the aggregates, which go to
  ``aggregates`` (per template, micro, macro and per ``by`` key; custom metrics included);
- several ``systems`` are each evaluated (to ``OUTPUT.NAME.ext``) and compared with the first;
- ``batch`` fills the reply cache through the provider's Batch API first; ``dry_run`` counts the
  judge calls instead (see :class:`~qa_eval.run.estimate.JudgeCallPlan`); a flat file of
  ragas-style rows is read with :func:`~qa_eval.io.flat.read_flat`.

:func:`~qa_eval.run.plan.plan_evaluation` checks and reads everything first (the runs' options
in one :class:`~qa_eval.run.options.RunOptions`); :func:`run_plan` runs a plan and tells an
:class:`Observer` what happens (the CLI renders it on the terminal).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from ..aggregate import compute_aggregates
from ..errors import QaEvalError
from ..io.files import signature_path, write_data
from ..io.limits import dump_json
from .estimate import JudgeCallPlan
from .evaluation import run_evaluation
from .notable import Notable, mismatches
from .options import RunOptions
from .plan import EvaluationPlan, PathArg, PlanKeywords, SystemPlan, plan_evaluation
from .tags import question_tags, reference_questions, with_tags

if TYPE_CHECKING:
    from ..judge.calls import Judge

__all__ = [
    "EvaluationRun",
    "Observer",
    "PartialFile",
    "SystemRun",
    "evaluate_files",
    "notable_keys",
    "run_plan",
]


Projections = tuple[Callable[[Mapping[str, Any]], dict[str, Any]], Callable[[Any], dict[str, Any]]]
"""What a result and the aggregates become in graphrag-eval 6.6.1's key set."""


class Observer:
    """What a run tells its caller as it goes; every method does nothing here (subclass it)."""

    def batches(self, report: Any) -> None:
        """The Batch API step is over (``report``: a :class:`~qa_eval.judge.batch.BatchReport`;
        ``report.waiting`` lists the batches still in flight: then nothing else runs)."""

    def batch_line(self, line: str) -> None:
        """One line on the Batch API step (submitted, waiting, collected)."""

    def system_started(self, system: SystemPlan) -> None:
        """A system's run starts."""

    def progress(self, status: Any) -> None:
        """The current system's :class:`~qa_eval.run.progress.RunProgress`."""

    def note(self, text: str) -> None:
        """Something a user should know (e.g. an earlier run's partial file is replaced)."""

    def system_finished(self, run: SystemRun) -> None:
        """A system's run is over and its files are written."""


@dataclass
class SystemRun:
    """One system's evaluation: its results (read back from a streamed ``output`` on demand),
    aggregates (a streamed run's ``per_template``: a read-only mapping read back from a
    temporary file, ``aggregate.summaries.TemplateSummaries``) and signature, the files
    written, and the seconds it took. A dry run has no results: ``judge_calls`` counts the
    calls it would make."""

    system: SystemPlan
    results: Sequence[dict[str, Any]] = field(default=(), repr=False)
    aggregates: dict[str, Any] = field(default_factory=dict, repr=False)
    elapsed: float = 0.0
    notable: Sequence[dict[str, Any]] | Notable = field(default=(), repr=False)
    """What the warnings read of the results: the results themselves, or (streamed) the
    tallies of those with a problem (no response, step or metric errors, mismatches)."""
    judge_calls: JudgeCallPlan | None = None

    @property
    def name(self) -> str | None:
        """The system's name (None for the one unnamed system)."""
        return self.system.name

    @property
    def signature(self) -> dict[str, Any]:
        """The run signature: versions, judge, prompt hashes, options, usage."""
        return dict(getattr(self.results, "signature", None) or {})

    @property
    def written(self) -> list[str]:
        """The results and aggregates files written (not the signature)."""
        if self.judge_calls is not None:
            return []
        return [p for p in (self.system.output, self.system.aggregates) if p]


@dataclass
class EvaluationRun:
    """What :func:`evaluate_files` did: one :class:`SystemRun` per system and, with several,
    each compared with the first (``compare_runs``). With ``batch`` and batches still in flight
    (``waiting``), nothing was evaluated."""

    plan: EvaluationPlan = field(repr=False)
    systems: list[SystemRun] = field(default_factory=list)
    comparisons: list[dict[str, Any]] = field(default_factory=list, repr=False)
    batch: Any = None

    @property
    def waiting(self) -> list[str]:
        """The batches still in flight (``batch`` with ``no_wait``): rerun to collect them."""
        return list(self.batch.waiting) if self.batch is not None else []

    @property
    def dry_run(self) -> bool:
        """Whether judge calls were counted instead of made."""
        return self.plan.dry_run

    @property
    def results(self) -> Sequence[dict[str, Any]]:
        """The results of the first system."""
        return self.systems[0].results if self.systems else []

    @property
    def aggregates(self) -> dict[str, Any]:
        """The aggregates of the first system."""
        return self.systems[0].aggregates if self.systems else {}

    def summary(self) -> dict[str, Any]:
        """The aggregates (one unnamed system), else ``{"systems": {name: aggregates},
        "comparisons": [...]}``: what ``qa-eval evaluate --format json`` prints."""
        from ..aggregate.summaries import plain  # (a streamed run's per_template, read whole)

        if len(self.systems) == 1 and self.systems[0].name is None:
            return plain(self.systems[0].aggregates)
        report: dict[str, Any] = {"systems": {s.name: plain(s.aggregates) for s in self.systems}}
        if len(self.systems) > 1:
            report["comparisons"] = self.comparisons
        return report


def evaluate_files(
    reference: PathArg | None = None,
    responses: PathArg | Sequence[PathArg] | None = None,
    *,
    exclude_errors: bool = False,
    compare: bool = True,
    observer: Observer | None = None,
    **options: Unpack[PlanKeywords],
) -> EvaluationRun:
    """Evaluate a reference dataset file against responses files (or a flat file), write the
    results, signature and aggregates, and compare several systems (see the module docstring).

    The options are :func:`~qa_eval.run.plan.plan_evaluation`'s; ``exclude_errors`` leaves the
    questions that are an error in either run out of the comparisons (``compare=False``: none);
    ``observer`` is told what happens as the run goes. ``keys="graphrag-eval"`` writes the
    results and aggregates files with only graphrag-eval 6.6.1's keys; the returned run keeps
    qa-eval's (the gates and the summary read ``n``, ``step_errors``, ...). Without ``config``,
    the judge is the command's default (gpt-4o-mini when ``OPENAI_API_KEY`` is set), unlike
    ``run_evaluation``, which calls no judge without a config."""
    plan = plan_evaluation(reference, responses, **options)
    return run_plan(plan, observer, compare=compare, exclude_errors=exclude_errors)


def run_plan(
    plan: EvaluationPlan,
    observer: Observer | None = None,
    *,
    compare: bool = True,
    exclude_errors: bool = False,
) -> EvaluationRun:
    """Run a plan: the batches first (``batch``), then each system in turn; several systems
    are compared with the first when ``compare``."""
    watch = observer or Observer()
    run = EvaluationRun(plan)
    if plan.batch and not plan.dry_run:
        from .prefill import prefill

        run.batch = prefill(
            [(plan.reference, system.responses) for system in plan.systems],
            config=plan.config,
            cache=plan.cache,
            enable=list(plan.enable),
            disable=list(plan.disable),
            no_wait=plan.no_wait,
            report=watch.batch_line,
            reference_source=plan.reference_source,
        )
        watch.batches(run.batch)
        if run.batch.waiting:
            return run
    fingerprint: str | None = None  # the reference's, hashed by the first system's run only
    for system in plan.systems:
        watch.system_started(system)
        done, fingerprint = _run_system(plan, system, watch, run.batch, fingerprint)
        if done.judge_calls is None:
            run.systems.append(done)
        watch.system_finished(done)
    if compare and not plan.dry_run:
        first = run.systems[0] if run.systems else None
        for other in run.systems[1:]:
            run.comparisons.append(_compare(first, other, exclude_errors))  # type: ignore[arg-type]
    return run


def _compare(a: SystemRun, b: SystemRun, exclude_errors: bool) -> dict[str, Any]:
    from ..compare.runs import compare_runs

    try:
        return compare_runs(
            a.results,
            b.results,
            labels=(a.name or "A", b.name or "B"),
            errors="exclude" if exclude_errors else "fail",
        )
    except ValueError as e:
        raise QaEvalError(f"comparing {a.name} with {b.name}: {e}") from None


def _run_system(
    plan: EvaluationPlan,
    system: SystemPlan,
    watch: Observer,
    batched: Any,
    fingerprint: str | None = None,
) -> tuple[SystemRun, str | None]:
    """One system's run, and the reference's fingerprint (given as ``fingerprint``, or computed
    by this run) for the next system's run over the same reference."""
    if system.traces is not None:
        watch.note(system.traces.summary())
    judge = _system_judge(plan, batched)
    original = _original_keys(plan)
    partial = _partial_file(plan, system, watch, original)
    started = time.monotonic()
    options = plan.system_options(system, judge, watch.progress, fingerprint)
    results: Sequence[dict[str, Any]]
    notable: Sequence[dict[str, Any]] | Notable
    aggregates: dict[str, Any] | None = None
    try:
        if partial is not None and system.streamed:
            results, aggregates, notable = _evaluate_streamed(plan, system, options, partial)
        else:
            on_result = partial.write if partial is not None else None
            results = notable = run_evaluation(
                plan.reference, system.responses, options=replace(options, on_result=on_result)
            )
    finally:
        if partial is not None:
            partial.close()  # on an interrupt, the finished results stay in it
        if judge is not None and judge.cache is not None:
            judge.cache.close()
    elapsed = time.monotonic() - started
    signature: dict[str, Any] = getattr(results, "signature", {})
    fingerprint = _fingerprint_of(signature or {}) or fingerprint
    if plan.dry_run and judge is not None:
        calls = JudgeCallPlan.of(judge, system.name, plan.batch)
        return SystemRun(system, elapsed=elapsed, judge_calls=calls), fingerprint
    _complete_signature(plan, signature, judge, batched)
    if system.name is not None:  # the name the user gave (--system NAME=...): the report's label
        signature["system"] = system.name
    if system.traces is not None:  # responses converted from agent traces: what they lost
        signature["traces"] = system.traces.as_dict()
    if aggregates is None:
        results = with_tags(results, plan.reference, plan.by)
        # the config's custom metric outputs are aggregated too
        aggregates = compute_aggregates(
            results, plan.config, by=plan.tags, pass_thresholds=plan.options.pass_thresholds
        )
    aggregates["signature"] = signature
    if system.name is not None:
        aggregates["system"] = system.name
    _write_files(system, results, signature, aggregates, partial, original)
    return SystemRun(system, results, aggregates, elapsed, notable), fingerprint


def _system_judge(plan: EvaluationPlan, batched: Any) -> Judge | None:
    """The judge a system's run is given: a dry run's (it counts), or the one that reads the
    batches' replies; None: the run makes its own from the config."""
    if plan.dry_run:
        from ..judge.cache.store import open_cache
        from ..judge.calls import Judge

        return Judge(plan.config, cache=open_cache(plan.cache), dry_run=True)
    if batched is not None:
        from .prefill import final_judge

        return final_judge(plan.config, plan.cache)  # the batches' replies; else synchronously
    return None


def _partial_file(
    plan: EvaluationPlan, system: SystemPlan, watch: Observer, original: Projections | None
) -> PartialFile | None:
    """The partial file a system's results go to as they finish (none without an output, or in
    a dry run)."""
    if not system.output or plan.dry_run:
        return None
    project = original[0] if original is not None else None
    return PartialFile(system.output, plan.cache is not False, watch.note, project)


def _complete_signature(
    plan: EvaluationPlan, signature: dict[str, Any], judge: Judge | None, batched: Any
) -> None:
    """What the run's signature says of the plan: no judge by choice, the batches."""
    if plan.no_judge and signature.get("llm_metrics"):
        signature["llm_metrics"] = (
            f"LLM metrics not computed: switched off by {plan.spell('no_judge')}"
        )
    if batched is not None:
        signature["batch"] = batched.as_dict()
        if judge is not None and judge.cache is not None:
            signature["options"]["cache"] = str(judge.cache.path)


def _write_files(
    system: SystemPlan,
    results: Sequence[dict[str, Any]],
    signature: dict[str, Any],
    aggregates: dict[str, Any],
    partial: PartialFile | None,
    original: Projections | None,
) -> None:
    """Write a system's results (unless streamed there already), signature and aggregates, in
    the plan's key set; the partial file goes."""
    output = system.output
    if output and not system.streamed:
        write_data(output, results if original is None else [original[0](r) for r in results])
    if output:
        write_data(signature_path(output), signature)
        if partial is not None:
            partial.path.unlink(missing_ok=True)
    if system.aggregates:
        from ..aggregate.summaries import write_aggregates  # (per_template may be in a file)

        write_aggregates(
            system.aggregates, aggregates if original is None else original[1](aggregates)
        )


def _original_keys(plan: EvaluationPlan) -> Projections | None:
    """With ``keys="graphrag-eval"``: the projections of a result and of the aggregates to
    graphrag-eval 6.6.1's keys (the config's custom outputs kept); None for qa-eval's keys."""
    if plan.keys != "graphrag-eval":
        return None
    import functools

    from ..aggregate import custom_outputs
    from ..io.keysets import custom_keys, original_aggregates, original_result

    outputs = list(custom_outputs(plan.config))
    return (
        functools.partial(original_result, custom=custom_keys(plan.config)),
        functools.partial(original_aggregates, custom=outputs),
    )


def _fingerprint_of(signature: Mapping[str, Any]) -> str | None:
    """The reference fingerprint a run's signature holds (None without one)."""
    reference = signature.get("reference")
    value = reference.get("fingerprint") if isinstance(reference, Mapping) else None
    return value if isinstance(value, str) else None


class PartialFile:
    """``OUTPUT.partial.jsonl``: each result as it finishes, one JSON line, flushed, so a run
    that stops keeps what it finished. Opened at the first result: a run that fails before
    that (bad input) leaves the file of an earlier run as it was (and ``note`` is told when
    an earlier run's file is replaced)."""

    def __init__(
        self,
        output: str,
        cached: bool,
        note: Callable[[str], None] | None = None,
        project: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> None:
        self.path = Path(f"{output}.partial.jsonl")
        self.project = project
        """What a result is written as (the graphrag-eval key set), when not as it is."""
        self.cached = cached
        self.note = note
        self.file: Any = None
        self.count = 0

    def write(self, result: dict[str, Any], flush: bool = True) -> None:
        """Append one result (flushed to the file unless ``flush`` is False)."""
        self._open()
        if self.project is not None:
            result = self.project(result)
        self.file.write(dump_json(result) + b"\n")
        self.count += 1
        if flush:
            self.file.flush()

    def _open(self) -> None:
        """Open the file at the first result (``note`` told of an earlier run's file)."""
        if self.file is None:
            if self.note is not None and self.path.is_file() and self.path.stat().st_size:
                self.note(
                    f"replacing {self.path}, left by an earlier run that did not finish"
                    + (" (its judge replies are in the reply cache)" if self.cached else "")
                )
            self.file = self.path.open("wb", buffering=1 << 20)

    def write_lines(self, data: bytes, count: int) -> None:
        """Append ``count`` results already written as JSON lines, flushed."""
        self._open()
        self.file.write(data)
        self.count += count
        self.file.flush()

    def close(self) -> None:
        """Close the file (when it was opened)."""
        if self.file is not None:
            self.file.close()
            self.file = None


def _evaluate_streamed(
    plan: EvaluationPlan, system: SystemPlan, options: RunOptions, partial: PartialFile
) -> tuple[Sequence[dict[str, Any]], dict[str, Any], Notable]:
    """Run with the results streamed: each goes to the partial file in reference order as soon
    as it and those before it finished (written, aggregated and its notable keys kept by
    ``run.sinks.LinesSink``: in worker processes with ``workers``); none is held. The partial
    file becomes the output at the end; a shard's run writes its shard file beside it. Returns
    the results (read back from the output on demand), the aggregates and the few keys of the
    results that the warnings read."""
    from ..aggregate.compute import AggregateSpec
    from .evaluation import run_into
    from .shards import ShardFile
    from .sinks import LinesSink
    from .stream import ResultsFile
    from .workers import LinesWork

    spec = AggregateSpec.of(plan.config, plan.tags, pass_thresholds=plan.options.pass_thresholds)
    tags = question_tags(_questions_of(plan.reference), plan.by)  # (as with_tags does)
    work = LinesWork(spec, partial.project, notable_keys, tags)
    sink = LinesSink(partial, work, in_order=options.shard is None)
    signature = run_into(plan.reference, system.responses, sink, options)
    aggregates = sink.aggregates.finish()
    partial.close()
    output = partial.path.with_name(partial.path.name[: -len(".partial.jsonl")])
    if partial.count:
        os.replace(partial.path, output)
    else:  # a reference without questions: the file was never opened, the output is empty
        output.write_bytes(b"")
    if options.shard is not None:
        assert sink.positions is not None  # (a LinesSink's are kept)
        ShardFile(*options.shard, sink.positions, sink.aggregates).write(output)
    sink.notable.signature = signature
    return ResultsFile(output, partial.count, signature), aggregates, sink.notable


def _questions_of(reference: Any) -> Iterable[dict[str, Any]]:
    """The question records of a reference read whole, or of a JSON Lines one read as a stream
    (read through once more)."""
    reflines = sys.modules.get("qa_eval.run.reflines")  # (imported if a stream was made)
    if reflines is None or not isinstance(reference, reflines.JsonLinesReference):
        return reference_questions(reference)  # (anything not a list has none)
    return (q for record in reference.records() for q in reflines.raw_questions(record))


def notable_keys(result: dict[str, Any]) -> dict[str, Any] | None:
    """The keys of a result that tell of a problem (no response, step errors, metric errors,
    mismatches), or None when it has none of them."""
    keys = None
    for key in result:
        if key == "error" or key == "step_errors" or key.endswith("_error"):
            keys = keys or {"question_id": result.get("question_id")}
            keys[key] = result[key]
    steps = None
    for step in result.get("actual_steps") or ():
        if isinstance(step, dict):
            errors = {k: v for k, v in step.items() if k.endswith("_error")}
            if errors:
                steps = steps or []
                steps.append(errors)
    if steps:
        keys = keys or {"question_id": result.get("question_id")}
        keys["actual_steps"] = steps
    found = mismatches(result)
    if found:
        keys = keys or {"question_id": result.get("question_id")}
        keys["mismatches"] = found
    return keys
