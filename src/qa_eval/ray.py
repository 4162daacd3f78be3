"""Evaluate responses held in a Ray Data ``Dataset`` (``evaluate_dataset``): on every core of a
Ray cluster, with the results and aggregates of one process.

Each batch of responses is evaluated by ``run_evaluation`` (the one code path of every run)
against the part of the reference its responses answer, and aggregated there into mergeable
partial aggregates (``aggregate.partial``), which the driver merges: the driver never reads a
result back. The questions no response answers are evaluated once on the driver. Results keep
their reference position (``position``, then ``rank`` among a question's trials), so the results
Dataset is in reference order and the merged aggregates are ``compute_aggregates`` of the whole.
A question's trials may come in any batches: each batch reports the trials it scored, the driver
ranks each question's trials (in the order of their ``trial`` values: numbers, then text), and a
second pass over the results with a trial (only when there are any) gives each its rank and
aggregates them. A judge runs in a pool of actors whose concurrencies add up to at most the config's
``concurrency``. See docs/scale.md.

Rows of the input are either JSON Lines text (a ``text`` column as ``ray.data.read_text`` gives,
or the column named by ``column``): each line read exactly as ``qa-eval evaluate`` reads a
responses file; or response records (``read_json``, ``read_parquet``, ``from_items``), which pass
through Arrow's types first (a key one record lacks is null in it when another has it).

Importing this module without Ray installed raises :class:`~qa_eval.extras.MissingExtra`.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import pickle
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from .extras import require

require("ray.data", "qa_eval.ray")

import ray  # noqa: E402  (after the extra is checked)
import ray.data  # noqa: E402
from ray.data.expressions import col  # noqa: E402

from .aggregate.compute import AggregateSpec  # noqa: E402
from .aggregate.partial import PartialAggregates  # noqa: E402
from .config.load import as_config  # noqa: E402
from .errors import QaEvalError, UnknownResponsesWarning  # noqa: E402
from .io.files import parse_json, read_reference  # noqa: E402
from .io.limits import dump_json  # noqa: E402
from .metrics.agents.trials import TRIAL_KEY  # noqa: E402
from .run.evaluation import run_evaluation  # noqa: E402
from .run.options import ResultCallback, RunOptions  # noqa: E402
from .run.prepare.reference import prepare_reference  # noqa: E402
from .run.prepare.responses import Unknown  # noqa: E402
from .run.progress import ProgressCallback  # noqa: E402
from .run.shards import position_key  # noqa: E402
from .run.signature import reference_fingerprint  # noqa: E402

if TYPE_CHECKING:
    import pyarrow

__all__ = ["DatasetRun", "evaluate_dataset", "iter_results"]

COLUMNS = ("position", "rank", "question_id", "result")
"""The results Dataset's columns: the question's position in the reference, the result's rank
among the question's results (0 without trials; with trials, its place in the order of their
``trial`` values, numbers before text), the question id as text, and the result as the JSON bytes
a results file holds on its line."""

_META = -1
"""The position of the one row each batch adds for the driver (filtered out of the results):
its signature, the positions it answered without trials and its partial aggregates, pickled."""

_REFUSED = ("on_progress", "fingerprint", "options")
"""Run options that cannot hold across batches scored apart: ``on_progress`` (its judge counts
are each batch's own), the fingerprint (the whole reference's, computed here) and ``options``."""

_UNRANKED = -1
"""The rank of a result with a trial until the second pass ranks it."""

Ranks = dict[int, dict[Any, int]]
"""Reference position -> {trial value: its rank among the question's trials}, for the questions
answered with trials."""


class DatasetRun:
    """What ``evaluate_dataset`` gives: ``results`` (a ``ray.data.Dataset`` in reference order,
    columns :data:`COLUMNS`), ``aggregates`` (``compute_aggregates`` of them) and
    ``signature`` (the run's, as a single-process run records it). Unpacks as
    ``results, aggregates``."""

    def __init__(
        self, results: ray.data.Dataset, aggregates: dict[str, Any], signature: dict[str, Any]
    ) -> None:
        self.results = results
        self.aggregates = aggregates
        self.signature = signature

    def __iter__(self) -> Iterator[Any]:
        return iter((self.results, self.aggregates))


class _Reference:
    """The reference as every batch needs it: its templates, and each question's id and place
    (template, index in it) by reference position."""

    def __init__(self, data: list[Any], ids: list[Any]) -> None:
        self.data = data
        self.places = [(t, q) for t, tpl in enumerate(data) for q in range(len(tpl["questions"]))]
        self.ids = ids
        self.positions: dict[Any, int] = {qid: i for i, qid in enumerate(ids)}

    def position(self, qid: Any) -> int | None:
        """The reference position of a question id (None: not in the reference)."""
        try:
            return self.positions.get(qid)
        except TypeError:  # an unhashable id: the run names it
            return None

    def part(self, positions: Iterable[int]) -> list[dict[str, Any]]:
        """The reference of these questions only (ascending positions), template by template."""
        out: list[dict[str, Any]] = []
        current = -1
        for position in positions:
            t, q = self.places[position]
            template = self.data[t]
            if t != current:
                current = t
                out.append({**template, "questions": []})
            out[-1]["questions"].append(template["questions"][q])
        return out


class _Batches:
    """The actors' callable: one batch of responses in, its results (and one row for the driver)
    out; each batch is one ``run_evaluation``, its results without trials aggregated into a
    ``PartialAggregates``. Results with a trial leave unranked (rank :data:`_UNRANKED`): their
    rank needs every batch's trials (see :class:`_Ranked`)."""

    def __init__(
        self, shared: Any, column: str | None, options: RunOptions, spec: AggregateSpec
    ) -> None:
        data, ids = ray.get(shared) if isinstance(shared, ray.ObjectRef) else shared
        self.reference = _Reference(data, ids)
        self.column = column
        self.options = options
        self.spec = spec

    def __call__(self, batch: pyarrow.Table) -> dict[str, list[Any]]:
        return _guarded(self._evaluated, batch)

    def _evaluated(self, batch: pyarrow.Table) -> dict[str, list[Any]]:
        responses = _responses(batch, self.column)
        reference = self.reference
        counts: dict[int, int] = {}
        for response in responses:
            qid = response.get("question_id") if isinstance(response, dict) else None
            position = reference.position(qid)
            if position is not None:
                counts[position] = counts.get(position, 0) + 1
        answered = sorted(counts)
        with warnings.catch_warnings():  # counted in the signature; the driver warns once
            warnings.simplefilter("ignore", UnknownResponsesWarning)
            results = run_evaluation(reference.part(answered), responses, options=self.options)
        out: dict[str, list[Any]] = {name: [] for name in COLUMNS}
        single: list[int] = []  # the positions answered without a trial
        trials: list[tuple[int, Any]] = []  # (position, trial) of each result with one
        index = 0
        for position in answered:
            for _ in range(counts[position]):
                result = results[index]
                index += 1
                if TRIAL_KEY in result:
                    trials.append((position, result[TRIAL_KEY]))
                    rank = _UNRANKED
                else:
                    single.append(position)
                    rank = 0
                _row(out, position, rank, reference.ids[position], dump_json(result))
        partial = PartialAggregates(self.spec)
        plain = (r for r in results if TRIAL_KEY not in r)
        partial.add(plain, [position_key(p, 0) for p in single])
        meta = {"signature": results.signature, "single": single, "trials": trials}
        _meta(out, {**meta, "aggregates": partial})
        return out


class _Ranked:
    """The second pass, over the results with a trial only (none: no second pass): each gets
    its rank among its question's trials, and they are aggregated with it."""

    def __init__(self, ranks: Any, spec: AggregateSpec) -> None:
        self.ranks: Ranks = ray.get(ranks) if isinstance(ranks, ray.ObjectRef) else ranks
        self.spec = spec

    def __call__(self, batch: pyarrow.Table) -> dict[str, list[Any]]:
        return _guarded(self._ranked, batch)

    def _ranked(self, batch: pyarrow.Table) -> dict[str, list[Any]]:
        positions = batch.column("position").to_pylist()
        ids = batch.column("question_id").to_pylist()
        lines = batch.column("result").to_pylist()
        results = [
            parse_json(line.decode("utf-8", "surrogatepass"), "results dataset") for line in lines
        ]
        ranks = [self.ranks[p][r[TRIAL_KEY]] for p, r in zip(positions, results, strict=True)]
        order = sorted(range(len(lines)), key=lambda i: (positions[i], ranks[i]))
        partial = PartialAggregates(self.spec)
        partial.add(
            [results[i] for i in order], [position_key(positions[i], ranks[i]) for i in order]
        )
        out: dict[str, list[Any]] = {name: [] for name in COLUMNS}
        for i in order:
            _row(out, positions[i], ranks[i], ids[i], lines[i])
        _meta(out, {"aggregates": partial})
        return out


def _guarded(
    evaluate: Callable[[pyarrow.Table], dict[str, list[Any]]], batch: pyarrow.Table
) -> dict[str, list[Any]]:
    """A batch's rows; for bad input, the one row that carries its one line to the driver."""
    try:
        return evaluate(batch)
    except QaEvalError as error:
        out: dict[str, list[Any]] = {name: [] for name in COLUMNS}
        _meta(out, {"error": str(error)})
        return out


def _meta(out: dict[str, list[Any]], meta: dict[str, Any]) -> None:
    """Add the batch's row for the driver (pickled: read only by this run's driver)."""
    _row(out, _META, 0, "", pickle.dumps(meta, protocol=pickle.HIGHEST_PROTOCOL))


def _row(out: dict[str, list[Any]], position: int, rank: int, qid: Any, result: bytes) -> None:
    out["position"].append(position)
    out["rank"].append(rank)
    out["question_id"].append(str(qid))
    out["result"].append(result)


def _responses(batch: pyarrow.Table, column: str | None) -> list[Any]:
    """The batch's responses: parsed from their JSON Lines text, or its rows as records."""
    names = batch.column_names
    if column is None and names == ["text"]:
        column = "text"
    if column is None:
        return batch.to_pylist()  # type: ignore[no-any-return]
    if column not in names:
        raise QaEvalError(f"responses dataset: no column {column!r} (it has {names})")
    texts = batch.column(column).to_pylist()
    return [
        parse_json(text, "responses dataset", f"row {text[:60]!r}")
        for text in texts
        if text is not None and text.strip()
    ]


def _loaded(reference: Any) -> tuple[list[Any], list[Any], str, int]:
    """The reference (a path or the data), checked: its templates, question ids, fingerprint
    and number of templates."""
    source = "reference"
    if isinstance(reference, (str, os.PathLike)):
        source, reference = str(reference), read_reference(reference)
    questions = prepare_reference(reference, source)
    ids = [q.question_id for q in questions]
    templates = len({q.template_id for q in questions})
    return reference, ids, reference_fingerprint(questions), templates


def evaluate_dataset(
    ds: ray.data.Dataset,
    reference: Any,
    config: Any = None,
    *,
    column: str | None = None,
    batch_size: int = 1000,
    actors: int | None = None,
    by: Iterable[str] | None = None,
    pass_thresholds: Mapping[str, float] | None = None,
    on_result: ResultCallback | None = None,
    progress: ProgressCallback | None = None,
    **keywords: Any,
) -> DatasetRun:
    """Evaluate the responses of ``ds`` against ``reference`` (a path or the data) on Ray; the
    results equal ``run_evaluation``'s and the aggregates ``compute_aggregates``'s on the same
    data.

    ``config`` as ``run_evaluation`` takes it; with a judge, ``actors`` (at most the config's
    ``concurrency``) each get ``concurrency // actors`` judge calls at once, so the pool never
    exceeds the bound; without one, ``actors`` defaults to the cluster's CPUs. The reply cache
    (``cache=``) is each node's own unless a folder every node shares is given. ``max_cost`` is
    one budget for the whole pool: every actor's judge reads the one spent total (held by a Ray
    actor) before a call starts and adds each reply's cost to it, the rule of one process.
    ``column``: the column holding each response's JSON text (default: ``text`` when it is the
    only column, as ``ray.data.read_text`` gives; else each row is a response record). A
    question's responses (its trials) may come in any batches; its trials are ordered by their
    ``trial`` values. ``by``: the tags the aggregates group by; ``pass_thresholds`` (metric ->
    value): the aggregates' pass@k and pass^k of repeated trials, as ``compute_aggregates`` takes
    them. ``on_result`` and ``progress(done, total)`` are called on the driver, for each result,
    as the batches finish (``total``: the reference's questions, plus one for each trial beyond a
    question's first as the batches report them; docs/scale.md). The other keywords are
    ``run_evaluation``'s (``enable``, ``disable``, ``keys``, ``cache``, ...), but not
    ``on_progress``, ``fingerprint`` nor ``options`` (docs/scale.md says why)."""
    refused = sorted(set(keywords) & set(_REFUSED))
    if refused:
        raise QaEvalError(f"evaluate_dataset does not take {', '.join(refused)}")
    data, ids, fingerprint, templates = _loaded(reference)
    keywords = {**keywords, "fingerprint": fingerprint}
    settings = None if config is None else as_config(config)
    spec = _spec(settings, by, keywords.get("keys"), pass_thresholds)
    judged = settings is not None and settings.generation is not None
    if actors is None:
        actors = max(1, int(ray.available_resources().get("CPU", 1)))
    actor_config: Any = settings
    if judged:
        assert settings is not None
        actors = max(1, min(actors, settings.concurrency))
        actor_config = dataclasses.replace(settings, concurrency=settings.concurrency // actors)
    budget = _SPENT.remote() if judged and keywords.get("max_cost") is not None else None
    try:
        # Made here: bad options are one line on the driver, not an actor that fails to start.
        options = (
            _run_options(actor_config, keywords, budget),
            _run_options(settings, keywords, budget),
        )
        return _evaluated(
            ds,
            _Reference(data, ids),
            (column, options, spec),
            _Callbacks(len(ids), on_result, progress),
            batch_size,
            actors,
            (settings, fingerprint, templates),
        )
    finally:
        if budget is not None:
            ray.kill(budget)


def _evaluated(
    ds: ray.data.Dataset,
    whole: _Reference,
    batches: tuple[str | None, tuple[RunOptions, RunOptions], AggregateSpec],
    callbacks: _Callbacks,
    batch_size: int,
    actors: int,
    run: tuple[Any, str, int],
) -> DatasetRun:
    """``evaluate_dataset``'s run, its arguments checked: the batches' pass (``batches``: the
    response column, the options of each batch and of the driver's run, the aggregates asked
    for; and the trials' second pass), the unanswered questions on the driver, the results
    sorted."""
    column, (batch_options, driver_options), spec = batches
    settings, fingerprint, templates = run
    ids = whole.ids
    shared = ray.put((whole.data, ids))
    mapped = ds.map_batches(
        _Batches,
        batch_size=batch_size,
        batch_format="pyarrow",
        fn_constructor_args=(shared, column, batch_options, spec),
        compute=ray.data.ActorPoolStrategy(size=actors),
        # Half a CPU each: a pool as large as the cluster's CPUs still leaves Ray Data's read
        # tasks (read_text, read_parquet: one CPU each) room to run; with a whole CPU each, a
        # pool of every CPU waited forever for its input.
        num_cpus=0.5,
    )
    aggregates = PartialAggregates(spec)
    signatures: list[dict[str, Any]] = []
    answered = bytearray(len(ids))  # 1: answered without a trial, 2: with trials
    trials: dict[int, list[Any]] = {}
    results: ray.data.Dataset | None = None
    finished = _Finished(callbacks)
    for meta in finished.metas(mapped):
        signatures.append(meta["signature"])
        _mark(answered, meta["single"], ids)
        for position, trial in meta["trials"]:
            trials.setdefault(position, []).append(trial)
        aggregates.merge(meta["aggregates"])
    if finished.refs:
        results = ray.data.from_arrow_refs(finished.refs).filter(expr=col("position") != _META)
    if trials:
        assert results is not None
        ranks = ray.put(_ranks(trials, answered, ids))
        unranked = col("rank") == _UNRANKED
        ranked = (
            results.filter(expr=unranked)
            .map_batches(
                _Ranked,
                batch_size=batch_size,
                batch_format="pyarrow",
                fn_constructor_args=(ranks, spec),
                compute=ray.data.ActorPoolStrategy(size=actors),
                num_cpus=0.5,
            )
            .materialize()
        )
        for meta in _metas(ranked):
            aggregates.merge(meta["aggregates"])
        ranked = ranked.filter(expr=col("position") != _META)
        results = results.filter(expr=col("rank") != _UNRANKED).union(ranked)
    missing = [i for i, seen in enumerate(answered) if not seen]
    if missing or not signatures:
        rest = run_evaluation(whole.part(missing), [], options=driver_options)
        signatures.append(rest.signature)
        out: dict[str, list[Any]] = {name: [] for name in COLUMNS}
        for position, result in zip(missing, rest, strict=True):
            _row(out, position, 0, ids[position], dump_json(result))
            callbacks.result(result)
        aggregates.add(rest, [position_key(position, 0) for position in missing])
        driver = ray.data.from_items(_records(out))
        results = driver if results is None else results.union(driver)
    assert results is not None
    ordered = results.sort(["position", "rank"]).materialize()
    signature = _signature(signatures, fingerprint, templates, len(ids), settings)
    return DatasetRun(ordered, aggregates.finish(), signature)


class _Callbacks:
    """``on_result`` and ``progress`` on the driver: each result as its batch finishes;
    ``progress(done, total)`` after each, ``total`` the reference's questions plus each trial
    beyond a question's first reported so far (so ``done`` never passes it, and they meet at the
    end)."""

    def __init__(
        self, questions: int, on_result: ResultCallback | None, progress: ProgressCallback | None
    ) -> None:
        self.on_result = on_result
        self.progress = progress
        self.total = questions
        self.done = 0
        self.trialled: set[int] = set()
        """The positions a batch reported a trial of (the first counted in ``questions``)."""

    @property
    def wanted(self) -> bool:
        """Whether there is a callback to call."""
        return self.on_result is not None or self.progress is not None

    def trials(self, meta: dict[str, Any]) -> None:
        """Count the trials a batch reports beyond each question's first in ``total``."""
        for position, _ in meta.get("trials", ()):
            if position in self.trialled:
                self.total += 1
            else:
                self.trialled.add(position)

    def result(self, result: dict[str, Any]) -> None:
        """One result finished: ``on_result(result)``, then ``progress(done, total)``."""
        self.done += 1
        if self.on_result is not None:
            self.on_result(result)
        if self.progress is not None:
            self.progress(self.done, self.total)


class _Finished:
    """The batches' pass run to its end block by block, in the order blocks finish: the rows each
    batch wrote for the driver, its results given to the callbacks (read onto the driver only
    when ``on_result`` wants them), and the blocks kept (``refs``: the results, materialized in
    the object store)."""

    def __init__(self, callbacks: _Callbacks) -> None:
        self.callbacks = callbacks
        self.refs: list[Any] = []

    def metas(self, mapped: ray.data.Dataset) -> Iterator[dict[str, Any]]:
        """Each batch's row for the driver, as its block finishes; ``QaEvalError`` for a batch's
        bad input (raised after every batch finished, as one ``materialize`` would; the
        callbacks see no result after it)."""
        error: str | None = None
        callbacks = self.callbacks
        for bundle in mapped.iter_internal_ref_bundles():
            for ref, block in zip(bundle.block_refs, bundle.metadata, strict=True):
                self.refs.append(ref)
                if callbacks.on_result is not None:
                    table = ray.get(ref)
                    metas, lines = _split(table.column("position"), table.column("result"))
                else:
                    metas = ray.get(_metas_of.remote(ref))
                    lines = None
                loaded = [pickle.loads(meta) for meta in metas]  # written by this run's batches
                error = error or next((m["error"] for m in loaded if "error" in m), None)
                if error is not None:
                    continue
                yield from loaded
                if callbacks.wanted:
                    for meta in loaded:
                        callbacks.trials(meta)
                    _called(callbacks, lines, (block.num_rows or 0) - len(metas))
        if error is not None:
            raise QaEvalError(error)


def _called(callbacks: _Callbacks, lines: list[bytes] | None, count: int) -> None:
    """The callbacks for one block's results: its ``lines`` parsed (``on_result``), or only
    counted (``progress``)."""
    if lines is None:
        for _ in range(count):
            callbacks.result({})
        return
    for line in lines:
        callbacks.result(parse_json(line.decode("utf-8", "surrogatepass"), "results dataset"))


def _split(positions: Any, values: Any) -> tuple[list[bytes], list[bytes]]:
    """A block's rows for the driver and its results' lines, in block order."""
    metas: list[bytes] = []
    lines: list[bytes] = []
    for position, value in zip(positions.to_pylist(), values.to_pylist(), strict=True):
        (metas if position == _META else lines).append(value)
    return metas, lines


@ray.remote(num_cpus=0)
def _metas_of(block: pyarrow.Table) -> list[bytes]:
    """A block's rows for the driver, read where the block is (its results stay there)."""
    return _split(block.column("position"), block.column("result"))[0]


class _Spent:
    """The spent total of a run's ``max_cost`` budget, one for every actor's judge."""

    def __init__(self) -> None:
        self.total = 0.0

    def spent(self) -> float:
        """What the run's judges have spent so far."""
        return self.total

    def spend(self, cost: float) -> None:
        """Add one reply's cost."""
        self.total += cost


_SPENT: Any = ray.remote(num_cpus=0)(_Spent)
""":class:`_Spent` as a Ray actor class (no CPU: it only adds)."""


class _SharedSpent:
    """A judge's view of the run's :class:`_Spent` (a ``judge.ledger.SharedBudget``)."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    async def spent(self) -> float:
        """The run's spent total, read from its actor."""
        total: float = await self.handle.spent.remote()
        return total

    async def spend(self, cost: float) -> None:
        """Add one reply's cost to the run's total (returns once it is added)."""
        await self.handle.spend.remote(cost)


def _run_options(config: Any, keywords: dict[str, Any], budget: Any) -> RunOptions:
    """The options of each batch's ``run_evaluation``: spending from the run's one budget."""
    options = RunOptions.of(config, **keywords)
    if budget is None:
        return options
    return dataclasses.replace(options, shared_budget=_SharedSpent(budget))


def _metas(mapped: ray.data.Dataset) -> Iterator[dict[str, Any]]:
    """The rows the batches wrote for the driver; ``QaEvalError`` for a batch's bad input."""
    for row in mapped.filter(expr=col("position") == _META).iter_rows():
        meta = pickle.loads(row["result"])  # written by this run's batches
        if "error" in meta:
            raise QaEvalError(meta["error"])
        yield meta


def _spec(
    settings: Any, by: Iterable[str] | None, keys: str | None, thresholds: Any
) -> AggregateSpec:
    """What the aggregates are asked for: ``compute_aggregates``' arguments for this run."""
    options: dict[str, Any] = {"pass_thresholds": thresholds}
    if by is not None:
        options["by"] = by
    if keys is not None:
        options["keys"] = keys
    return AggregateSpec.of(settings, **options)


def _ranks(trials: dict[int, list[Any]], answered: bytearray, ids: list[Any]) -> Ranks:
    """Each trial's rank among its question's trials (their ``trial`` values sorted: numbers,
    then text); ``QaEvalError`` for a trial given twice, or a question answered with and
    without trials."""
    ranks: Ranks = {}
    for position, values in trials.items():
        if answered[position]:
            raise QaEvalError(
                f"responses dataset: question_id {ids[position]!r} is answered in two batches "
                "(trial: missing in one response but given in another to this question)"
            )
        answered[position] = 2
        ordered = sorted(values, key=lambda trial: (isinstance(trial, str), trial))
        for before, after in itertools.pairwise(ordered):
            if before == after and type(before) is type(after):
                raise QaEvalError(
                    f"responses dataset: question_id {ids[position]!r}: duplicate trial {before!r}"
                )
        ranks[position] = {trial: rank for rank, trial in enumerate(ordered)}
    return ranks


def _records(columns: dict[str, list[Any]]) -> list[dict[str, Any]]:
    return [dict(zip(columns, row, strict=True)) for row in zip(*columns.values(), strict=True)]


def _mark(answered: bytearray, single: list[int], ids: list[Any]) -> None:
    """Note the positions a batch answered without a trial; a question answered in two batches
    that way (a duplicate response) is refused."""
    for position in single:
        if answered[position]:
            raise QaEvalError(
                f"responses dataset: question_id {ids[position]!r} is answered in two batches "
                "(a duplicate response)"
            )
        answered[position] = 1


def _signature(
    signatures: list[dict[str, Any]],
    fingerprint: str,
    templates: int,
    questions: int,
    settings: Any,
) -> dict[str, Any]:
    """The run's signature from its batches': the whole reference, the config's concurrency
    (each actor ran with its share), usage and skipped values added up, the responses left out
    counted once (and warned about once)."""
    signature = dict(signatures[0])
    signature["reference"] = {
        "fingerprint": fingerprint,
        "templates": templates,
        "questions": questions,
    }
    if settings is not None:
        signature["options"] = {**signature["options"], "concurrency": settings.concurrency}
    judges = [s["judge"] for s in signatures if s.get("judge")]
    if judges:  # the replies received in each response mode, added up
        modes = _added([j["response_modes"] for j in judges])
        signature["judge"] = {**signature["judge"], "response_modes": modes}
    for key in ("llm_metrics",):
        note = next((s[key] for s in signatures if key in s), None)
        if note is not None:
            signature[key] = note
    usages = [s["usage"] for s in signatures if "usage" in s]
    if usages:
        signature["usage"] = {
            "total": _added([u["total"] for u in usages]),
            "per_metric": _added([u["per_metric"] for u in usages]),
            "peak_concurrency": max(u["peak_concurrency"] for u in usages),
        }
    skipped = [s["skipped_metric_values"] for s in signatures if "skipped_metric_values" in s]
    if skipped:
        signature["skipped_metric_values"] = dict(sorted(_added(skipped).items()))
    unknown = Unknown()
    for s in signatures:
        ignored = s.get("ignored_responses")
        if ignored:
            unknown.count += ignored["count"]
            unknown.examples.extend(ignored["question_ids"][: 5 - len(unknown.examples)])
    signature.pop("ignored_responses", None)
    if unknown.count:
        signature["ignored_responses"] = unknown.as_dict()
        warnings.warn(unknown.message("responses dataset"), UnknownResponsesWarning, stacklevel=3)
    return signature


def _added(values: list[Any]) -> Any:
    """Mappings of numbers added key by key (nested mappings too); other values: the first."""
    first = values[0]
    if isinstance(first, Mapping):
        keys = list(dict.fromkeys(k for v in values for k in v))
        return {k: _added([v[k] for v in values if k in v]) for k in keys}
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return sum(values)
    return first


def iter_results(results: ray.data.Dataset) -> Iterator[dict[str, Any]]:
    """The results of an ``evaluate_dataset`` run (its results Dataset) as dicts, in its order,
    read one batch at a time."""
    for batch in results.iter_batches(batch_format="pyarrow", batch_size=4096):
        table: pyarrow.Table = batch  # the format asked for
        for value in table.column("result").to_pylist():
            yield parse_json(value.decode("utf-8", "surrogatepass"), "results dataset")
