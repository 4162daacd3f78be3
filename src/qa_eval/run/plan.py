"""What an evaluation of files will do, before it runs: :func:`plan_evaluation`.

The plan holds the inputs read and checked (the reference dataset, each system's responses, or
the rows of a flat file), the resolved config and the run's options, and where each system's
results, signature and aggregates go. It can count the judge calls a run would make, with
tokens and cost, by a dry run (:meth:`EvaluationPlan.judge_calls`), on every question or on a
sample scaled to all (:meth:`EvaluationPlan.estimate`). :func:`qa_eval.run.files.run_plan`
runs it; ``qa-eval evaluate`` and ``qa-eval evaluate-flat`` are this plan and that run.

Messages name the options as ``spell`` spells them: the Python parameter names by default, the
command line's ``--options`` in the CLI.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, cast

from ..aggregate import DEFAULT_TAGS
from ..errors import QaEvalError
from ..io import kinds as filekind
from ..io.files import JSONL_SUFFIXES, check_output_path, read_reference, read_responses
from .estimate import JudgeCallPlan, JudgeEstimate
from .options import RunOptions, Spell, cli_option, python_name
from .progress import StatusCallback
from .reflines import JsonLinesReference, as_templates, jsonl_path, streams_with
from .tags import check_by_reference, reference_questions

if TYPE_CHECKING:
    from ..config import EvalConfig
    from ..judge.calls import Judge

__all__ = [
    "ANNOUNCE_SAMPLE",
    "EvaluationPlan",
    "JudgeCallPlan",
    "JudgeEstimate",
    "PlanKeywords",
    "SystemPlan",
    "plan_evaluation",
    "system_output_path",
]

ANNOUNCE_SAMPLE = 200
"""The questions whose judge calls are planned (a dry run) to estimate a whole run's."""

PathArg = str | os.PathLike[str]


def system_output_path(path: str | None, system: str | None) -> str | None:
    """``results.yaml`` -> ``results.NAME.yaml`` for one of several systems (unchanged for the
    one unnamed system)."""
    if path is None or system is None:
        return path
    p = Path(path)
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in system)
    return str(p.with_name(f"{p.stem}.{safe}{p.suffix}"))


def streamed(output: str | None) -> bool:
    """Whether the results of a run go to a JSON Lines file as they finish (in reference order)
    instead of being held until the end: so memory does not grow with the questions."""
    return output is not None and Path(output).suffix.lower() in JSONL_SUFFIXES


@dataclass(frozen=True)
class SystemPlan:
    """One system of a plan: its name (None when there is one system), its responses and where
    its results (``output``) and aggregates go (``results.NAME.ext`` for a named system)."""

    name: str | None
    source: str
    responses: Any = field(repr=False)
    output: str | None = None
    aggregates: str | None = None
    traces: Any = field(default=None, repr=False)
    """The :class:`~qa_eval.traces.read.TraceReport` of responses read from agent traces (what
    was read and lost: it goes into the run's signature); None for a responses file."""

    @property
    def streamed(self) -> bool:
        """Whether the results are streamed to a JSON Lines ``output`` as they finish."""
        return streamed(self.output)


@dataclass
class EvaluationPlan:
    """An evaluation ready to run (see the module docstring); made by :func:`plan_evaluation`.

    ``options`` holds the options of its runs (config, cache, budget, metric switches, key set,
    dry run); ``config``, ``cache``, ``max_cost``, ``disable``, ``enable``, ``dry_run``, ``keys``
    and ``reference_source`` read them."""

    reference: Any = field(repr=False)
    systems: tuple[SystemPlan, ...]
    options: RunOptions = field(repr=False)
    by: tuple[str, ...] = ()
    no_judge: bool = False
    batch: bool = False
    no_wait: bool = False
    flat: bool = False
    spell: Spell = field(default=python_name, repr=False)

    @property
    def config(self) -> EvalConfig:
        """The resolved config of the runs."""
        return self.options.config

    @property
    def reference_source(self) -> str:
        """Where the reference dataset (or the flat file) was read from."""
        return self.options.reference_source

    @property
    def cache(self) -> str | bool:
        """The reply cache: True for the user cache directory, a path, or False."""
        return cast("str | bool", self.options.cache)

    @property
    def max_cost(self) -> float | None:
        """The budget of each run in US dollars (None: none)."""
        return self.options.max_cost

    @property
    def disable(self) -> tuple[str, ...]:
        """The metrics switched off, as given."""
        return self.options.disable

    @property
    def enable(self) -> tuple[str, ...]:
        """The metrics switched on, as given."""
        return self.options.enable

    @property
    def dry_run(self) -> bool:
        """Whether the judge calls are counted instead of made."""
        return self.options.dry_run

    @property
    def keys(self) -> str:
        """The key set of the files written (``graphrag-eval``: only graphrag-eval 6.6.1's keys)."""
        return self.options.keys

    @property
    def tags(self) -> list[str]:
        """The result keys aggregated per value (``by``, else ``question_type``)."""
        return list(self.by) if self.by else list(DEFAULT_TAGS)

    @property
    def questions(self) -> int:
        """The number of reference questions (each system answers all of them)."""
        if isinstance(self.reference, JsonLinesReference):
            return self.reference.count()
        return len(reference_questions(self.reference))

    @property
    def default_judge(self) -> bool:
        """Whether the run calls a judge no config asked for (``OPENAI_API_KEY`` set, no
        config): then a user should be told which judge and the cost to expect."""
        return (
            self.config.source == "environment"
            and self.config.generation is not None
            and not self.dry_run
        )

    def system_options(
        self,
        system: SystemPlan,
        judge: Judge | None = None,
        on_progress: StatusCallback | None = None,
        fingerprint: str | None = None,
    ) -> RunOptions:
        """The options of one system's run: its responses' source, the ``judge`` the plan made
        for it (a dry run's counts through its own; the run itself makes no dry run), the
        progress callback and the reference's fingerprint when known. The run returns qa-eval's
        keys: the files' key set is applied when they are written."""
        return replace(
            self.options,
            responses_source=system.source,
            dry_run=False,
            keys="qa-eval",
            judge=judge,
            on_progress=on_progress,
            fingerprint=fingerprint,
        )

    def judge_calls(
        self, sample: int | None = None, on_progress: StatusCallback | None = None
    ) -> list[JudgeCallPlan]:
        """The judge calls each system's run would make (a dry run: nothing is called, nothing
        written), over the first ``sample`` questions (all with None)."""
        if self.config.generation is None:
            raise QaEvalError(
                f"{self.spell('dry_run')} needs a judge: pass {self.spell('config')} or set "
                "OPENAI_API_KEY"
            )
        from ..errors import UnknownResponsesWarning
        from ..judge.cache.store import open_cache
        from ..judge.calls import Judge
        from .evaluation import run_evaluation

        reference = self.reference if sample is None else _first_questions(self.reference, sample)
        plans = []
        fingerprint = None  # the (sampled) reference's, hashed by the first system's run only
        for system in self.systems:
            store = open_cache(self.cache)
            judge = Judge(self.config, cache=store, dry_run=True)
            options = self.system_options(system, judge, on_progress, fingerprint)
            try:
                with warnings.catch_warnings():
                    if sample is not None:  # a sample leaves most responses without question
                        warnings.simplefilter("ignore", UnknownResponsesWarning)
                    done = run_evaluation(reference, system.responses, options=options)
                fingerprint = (done.signature or {}).get("reference", {}).get("fingerprint")
            finally:
                if store is not None:
                    store.close()
            plans.append(JudgeCallPlan.of(judge, system.name, self.batch))
        return plans

    def estimate(self, sample: int = ANNOUNCE_SAMPLE) -> JudgeEstimate:
        """The judge calls and cost of the whole run (every system), from a dry run of the
        first ``sample`` questions scaled to all."""
        gen = self.config.generation
        if gen is None:
            raise QaEvalError("no judge is configured: nothing to estimate")
        sampled = len(reference_questions(_first_questions(self.reference, sample)))
        calls = 0
        cost: float | None = 0.0
        for plan in self.judge_calls(sample):
            calls += plan.total_calls
            spent = plan.cost()
            cost = None if cost is None or spent is None else cost + spent
        return JudgeEstimate(gen.model, gen.provider, sampled, self.questions, calls, cost)


class PlanKeywords(TypedDict, total=False):
    """The keyword options of :func:`plan_evaluation` that ``evaluate_files`` passes on, written
    once here with their types (their defaults and meaning are ``plan_evaluation``'s)."""

    systems: Mapping[str, PathArg] | Sequence[tuple[str, PathArg]] | None
    flat: PathArg | None
    columns: Mapping[str, str] | None
    output: PathArg | None
    aggregates: PathArg | None
    config: Any
    by: Iterable[str]
    concurrency: int | None
    repeats: int | None
    cache: PathArg | bool
    max_cost: float | None
    disable: Iterable[str]
    enable: Iterable[str]
    no_judge: bool
    dry_run: bool
    batch: bool
    no_wait: bool
    keys: str
    pass_thresholds: Mapping[str, float] | None
    workers: int
    shard: str | tuple[int, int] | None


def plan_evaluation(
    reference: PathArg | None = None,
    responses: PathArg | Sequence[PathArg] | None = None,
    *,
    systems: Mapping[str, PathArg] | Sequence[tuple[str, PathArg]] | None = None,
    flat: PathArg | None = None,
    columns: Mapping[str, str] | None = None,
    output: PathArg | None = None,
    aggregates: PathArg | None = None,
    config: Any = None,
    by: Iterable[str] = (),
    concurrency: int | None = None,
    repeats: int | None = None,
    cache: PathArg | bool = True,
    max_cost: float | None = None,
    disable: Iterable[str] = (),
    enable: Iterable[str] = (),
    no_judge: bool = False,
    dry_run: bool = False,
    batch: bool = False,
    no_wait: bool = False,
    check_config: Callable[[EvalConfig], None] | None = None,
    spell: Spell = python_name,
    keys: str = "qa-eval",
    pass_thresholds: Mapping[str, float] | None = None,
    workers: int = 1,
    shard: str | tuple[int, int] | None = None,
) -> EvaluationPlan:
    """Check the options, resolve the config and read the inputs of an evaluation; nothing is
    judged or written.

    The inputs: a ``reference`` dataset file and either one ``responses`` file or ``systems``
    (name -> responses file: each is evaluated and written to ``OUTPUT.NAME.ext``); a responses
    file may be agent traces (``responses`` several trace files), converted on the fly with
    :func:`~qa_eval.traces.read.read_traces` (see docs/traces.md); or a
    ``flat`` file of ragas-style rows (``columns`` maps fields to other column names; see
    docs/flat.md). ``config``: an :class:`~qa_eval.config.EvalConfig`, a mapping, a YAML path or
    None (the environment). ``check_config`` is called with the resolved config before any input
    is read. ``keys="graphrag-eval"`` writes the results and aggregates files with only the
    keys graphrag-eval 6.6.1 writes. ``pass_thresholds`` (metric -> value) adds the metric's
    pass@k and pass^k to the aggregates of responses with repeated trials. ``workers``: processes
    that score the deterministic part (``run.workers``); ``shard``: ``"i/N"``, only the
    questions of shard i of N, written with the shard file ``qa-eval merge`` reads (a JSON Lines
    ``output``, one system; ``run.shards``). Bad input raises ``InputError``, bad options
    ``QaEvalError``."""
    pairs = _system_pairs(reference, responses, systems, flat, spell)
    out = None if output is None else str(output)
    agg = None if aggregates is None else str(aggregates)
    for name, _ in pairs:
        for path in (out, agg):
            if path:
                check_output_path(system_output_path(path, name))  # type: ignore[arg-type]
    _check_options(concurrency, repeats, cache, max_cost, no_wait, batch, spell)
    settings = _settings(config, concurrency, repeats, no_judge, dry_run, spell)
    source = str(flat) if flat is not None else str(reference)
    options = RunOptions(
        settings,
        cache=cache if isinstance(cache, bool) else str(cache),
        max_cost=max_cost,
        dry_run=dry_run,
        disable=tuple(disable),
        enable=tuple(enable),
        keys=keys,
        reference_source=source,
        pass_thresholds=dict(pass_thresholds or {}),
        workers=workers,
        shard=shard,  # type: ignore[arg-type]  # (read by RunOptions)
    )
    if shard is not None:
        _check_shard(out, pairs, spell)
    if check_config is not None:
        check_config(settings)
    data: Any
    if flat is not None:
        from ..io.flat import read_flat

        data, flat_responses = read_flat(flat, dict(columns or {}))
        planned: tuple[SystemPlan, ...] = (SystemPlan(None, source, flat_responses, out, agg),)
    else:
        # A JSON Lines reference is read as a stream by a run that streams the rest (one
        # system's JSON Lines responses and results; ``batch`` reads the dataset whole).
        stream = not batch and len(pairs) == 1 and streamed(out)
        if stream and streams_with(source, pairs[0][1]):
            data = _reference_stream(source, tuple(by), spell)
        else:
            data = read_input(source, read_reference, "REFERENCE", spell)
            if jsonl_path(source) and isinstance(data, list):  # (question lines: templates)
                data = as_templates(data, source)
        planned = _read_systems(pairs, out, agg, spell, data)
    tags = tuple(by)
    if not isinstance(data, JsonLinesReference):  # (a stream checks them as it is read)
        check_by_reference(data, tags, source, spell)
    plan = EvaluationPlan(
        data, planned, options, tags, no_judge, batch, no_wait, flat is not None, spell
    )
    if dry_run and settings.generation is None:
        raise QaEvalError(
            f"{spell('dry_run')} needs a judge: pass {spell('config')} or set OPENAI_API_KEY"
        )
    return plan


def _check_shard(
    output: str | None, pairs: list[tuple[str | None, str | tuple[str, ...]]], spell: Spell
) -> None:
    """A shard's run writes JSON Lines results (with the shard file beside them) of one
    system: what ``qa-eval merge`` puts together."""
    if output is None or not streamed(output):
        raise QaEvalError(
            f"{spell('shard')} writes the shard's results for merging: give {spell('output')} "
            "a .jsonl path"
        )
    if len(pairs) > 1:
        raise QaEvalError(f"{spell('shard')} evaluates one system: give one {spell('responses')}")


def _check_options(
    concurrency: int | None,
    repeats: int | None,
    cache: PathArg | bool,
    max_cost: float | None,
    no_wait: bool,
    batch: bool,
    spell: Spell,
) -> None:
    """The command's checks of its options, alone and together (named as ``spell`` names them)."""
    from ..config import MAX_REPEATS

    if concurrency is not None and concurrency < 1:
        raise QaEvalError(f"{spell('concurrency')} must be at least 1")
    if max_cost is not None and not (math.isfinite(max_cost) and max_cost > 0):
        raise QaEvalError(f"{spell('max_cost')} must be a positive, finite number of US dollars")
    if no_wait and not batch:
        raise QaEvalError(f"{spell('no_wait')} goes with {spell('batch')}")
    if batch and cache is False:
        raise QaEvalError(
            f"{spell('batch')} needs the cache (it records the batches): drop {spell('no_cache')}"
        )
    if batch and max_cost is not None:
        raise QaEvalError(
            f"{spell('batch')} and {spell('max_cost')} cannot be combined: a batch is priced "
            f"when it ends (use {spell('dry_run')} {spell('batch')} to see the estimated cost at "
            "batch rates)"
        )
    if repeats is not None and not 1 <= repeats <= MAX_REPEATS:
        raise QaEvalError(f"{spell('repeats')} must be between 1 and {MAX_REPEATS}")


def _settings(
    config: Any,
    concurrency: int | None,
    repeats: int | None,
    no_judge: bool,
    dry_run: bool,
    spell: Spell,
) -> EvalConfig:
    """The config of the runs: ``config`` read (None: the environment's default judge), with
    ``concurrency`` and ``repeats`` applied, and no judge with ``no_judge``."""
    from ..config import as_config

    settings = as_config(config).with_options(concurrency=concurrency, repeats=repeats)
    if no_judge:
        if dry_run:
            raise QaEvalError(
                f"{spell('dry_run')} plans the judge's calls: it cannot go with {spell('no_judge')}"
            )
        settings = replace(settings, generation=None)
    return settings


def _read_systems(
    pairs: list[tuple[str | None, str | tuple[str, ...]]],
    out: str | None,
    agg: str | None,
    spell: Spell,
    reference: Any = None,
) -> tuple[SystemPlan, ...]:
    """Each system's responses read (as a stream when its results are; converted from agent
    traces when they are traces), with where its results and aggregates go."""
    from ..traces.read import is_trace_file, read_traces

    stream = len(pairs) == 1 and streamed(out)
    planned = []
    for name, path in pairs:
        paths = list(path) if isinstance(path, tuple) else [path]
        source = ", ".join(paths)
        output, aggregates = system_output_path(out, name), system_output_path(agg, name)
        if all(is_trace_file(p) for p in paths):
            responses, report = read_traces(paths, reference)
            planned.append(SystemPlan(name, source, responses, output, aggregates, report))
            continue
        if len(paths) > 1:
            raise QaEvalError(
                f"{spell('responses')}: several files must all be agent traces (one responses "
                f"file otherwise); not traces: {next(p for p in paths if not is_trace_file(p))}"
            )
        responses = read_input(
            source, lambda p: _responses_input(p, stream), "RESPONSES", spell, name
        )
        planned.append(SystemPlan(name, source, responses, output, aggregates))
    return tuple(planned)


def _system_pairs(
    reference: PathArg | None,
    responses: PathArg | Sequence[PathArg] | None,
    systems: Mapping[str, PathArg] | Sequence[tuple[str, PathArg]] | None,
    flat: PathArg | None,
    spell: Spell,
) -> list[tuple[str | None, str | tuple[str, ...]]]:
    """(system name, responses file) pairs: the one ``responses`` (several trace files: a
    tuple), or each of ``systems``."""
    if flat is not None:
        if reference is not None or responses is not None or systems:
            raise QaEvalError(
                f"give {spell('flat')} alone, or {spell('reference')} with {spell('responses')} "
                f"or {spell('systems')}"
            )
        return [(None, str(flat))]
    if reference is None:
        raise QaEvalError(f"give {spell('reference')} (or {spell('flat')})")
    if not systems:
        if responses is None:
            raise QaEvalError(f"give {spell('responses')} or {spell('systems')}")
        if isinstance(responses, (str, os.PathLike)):
            return [(None, str(responses))]
        files = [str(p) for p in responses]
        if not files:
            raise QaEvalError(f"give {spell('responses')} or {spell('systems')}")
        return [(None, files[0] if len(files) == 1 else tuple(files))]
    if responses is not None:
        raise QaEvalError(f"give either {spell('responses')} or {spell('systems')}, not both")
    items = list(systems.items()) if isinstance(systems, Mapping) else list(systems)
    pairs: list[tuple[str | None, str | tuple[str, ...]]] = []
    for name, path in items:
        if not isinstance(name, str) or not name.strip():
            raise QaEvalError(f"{spell('systems')}: a system needs a name, not {name!r}")
        if any(name == seen for seen, _ in pairs):
            raise QaEvalError(f"{spell('systems')}: {name!r} is given twice")
        pairs.append((name, str(path)))
    return pairs


_EVALUATE_INPUTS: dict[str, tuple[tuple[str, ...], str, bool]] = {
    "REFERENCE": (
        (filekind.REFERENCE,),
        "a reference dataset (a list of templates with questions)",
        False,
    ),
    "RESPONSES": (
        (filekind.RESPONSES,),
        "responses (records with question_id and actual_answer, actual_steps or error)",
        True,
    ),
}


def read_input(
    path: str,
    reader: Callable[[str], Any],
    role: str,
    spell: Spell = python_name,
    system: str | None = None,
) -> Any:
    """Read the REFERENCE or RESPONSES of an evaluation, refusing another kind of qa-eval file
    (results, aggregates, ...) with one line. The line names what expects the file as ``spell``
    does: the command line's ``qa-eval evaluate`` and its argument, or the Python parameter
    (``reference``, ``responses``, or ``systems['NAME']`` for a named ``system``)."""
    data = reader(path)
    _require_kind(data, path, role, spell, system)
    return data


def _require_kind(
    data: Any, path: str, role: str, spell: Spell, system: str | None, records: bool = False
) -> None:
    """``read_input``'s check of what kind of file was read (``records``: ``data`` is an
    iterator of the records of a JSON Lines file, its first ones)."""
    accept, wanted, weak_ok = _EVALUATE_INPUTS[role]
    if spell is cli_option:
        expected = f"`qa-eval evaluate` expects {wanted} as {role}"
    else:
        parameter = spell(role.lower())
        if system is not None and role == "RESPONSES":
            parameter = f"{spell('systems')}[{system!r}]"
        expected = f"`{parameter}` expects {wanted}"
    require = filekind.require_records if records else filekind.require
    require(data, str(path), accept, expected, weak_results_ok=weak_ok)


def _reference_stream(source: str, by: tuple[str, ...], spell: Spell) -> JsonLinesReference:
    """A JSON Lines reference to read as a stream, its first records' kind checked."""
    reference = JsonLinesReference(source, by, spell)
    _require_kind(reference.records(limit=20), source, "REFERENCE", spell, None, records=True)
    return reference


def _responses_input(path: str, stream: bool) -> Any:
    """The responses of one system: a JSON Lines file read as a stream when the run streams
    (see ``streamed``), else the file's data."""
    if stream and jsonl_path(path):
        from .stream import JsonLinesResponses

        return JsonLinesResponses(path)
    return read_responses(path)


def _first_questions(reference: Any, limit: int) -> list[Any]:
    """The reference dataset cut to its first ``limit`` questions."""
    if isinstance(reference, JsonLinesReference):
        return reference.head(limit)
    sample: list[Any] = []
    taken = 0
    for template in reference if isinstance(reference, list) else ():
        questions = template.get("questions") if isinstance(template, dict) else None
        if not isinstance(questions, list):
            continue
        if questions and taken < limit:
            sample.append({**template, "questions": questions[: limit - taken]})
            taken += len(sample[-1]["questions"])
    return sample
