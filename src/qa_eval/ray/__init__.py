"""Evaluate responses held in a Ray Data ``Dataset`` (``evaluate_dataset``): on every core of a
Ray cluster, with the results and aggregates of one process.

Each batch of responses is evaluated by ``run_evaluation`` (the one code path of every run)
against the part of the reference its responses answer, and aggregated there into mergeable
partial aggregates (``aggregate.partial``), which the driver merges as the blocks finish: the
driver reads a result back only for an ``on_result`` callback. The questions no response answers
are evaluated once on the driver. Results keep their reference position (``position``, then
``rank`` among a question's trials), so the results Dataset is in reference order and the merged
aggregates are ``compute_aggregates`` of the whole. A question's trials may come in any batches:
each batch reports the trials it scored, the driver ranks each question's trials (in the order of
their ``trial`` values: numbers, then text), and a second pass over the results with a trial (only
when there are any) gives each its rank and aggregates them. A judge runs in a pool of actors
whose concurrencies add up to at most the config's ``concurrency``, and spends from one
``max_cost`` budget whose total a Ray actor holds (``judge.ledger.SharedBudget``). See
docs/scale.md.

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
import warnings
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ..extras import require

require("ray.data", "qa_eval.ray")

import ray  # noqa: E402  (after the extra is checked)
import ray.data  # noqa: E402
from ray.data.expressions import col  # noqa: E402

from ..aggregate.compute import AggregateSpec  # noqa: E402
from ..aggregate.partial import PartialAggregates  # noqa: E402
from ..config.load import as_config  # noqa: E402
from ..errors import QaEvalError, UnknownResponsesWarning  # noqa: E402
from ..io.files import parse_json, read_reference  # noqa: E402
from ..io.limits import dump_json  # noqa: E402
from ..run.evaluation import run_evaluation  # noqa: E402
from ..run.options import ResultCallback, RunOptions  # noqa: E402
from ..run.prepare.reference import prepare_reference  # noqa: E402
from ..run.prepare.responses import Unknown  # noqa: E402
from ..run.progress import ProgressCallback  # noqa: E402
from ..run.shards import position_key  # noqa: E402
from ..run.signature import reference_fingerprint  # noqa: E402
from .batches import COLUMNS, META, UNRANKED, Batches, Ranked, Ranks, Reference, add_row  # noqa: E402
from .budget import SPENT, run_options  # noqa: E402
from .finished import Callbacks, Finished, driver_rows  # noqa: E402

if TYPE_CHECKING:
    import pyarrow

__all__ = ["COLUMNS", "DatasetRun", "evaluate_dataset", "iter_results"]

_REFUSED = ("on_progress", "fingerprint", "options")
"""Run options that cannot hold across batches scored apart: ``on_progress`` (its judge counts
are each batch's own), the fingerprint (the whole reference's, computed here) and ``options``."""


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
    budget = None
    if judged and keywords.get("max_cost") is not None:
        from ..judge.calls import Judge

        assert settings is not None  # (judged)
        Judge(settings, max_cost=keywords["max_cost"])  # (a model without a price: one line)
        budget = SPENT.remote()
    try:
        # Made here: bad options are one line on the driver, not an actor that fails to start.
        options = (
            run_options(actor_config, keywords, budget),
            run_options(settings, keywords, budget),
        )
        return _evaluated(
            ds,
            Reference(data, ids),
            (column, options, spec),
            Callbacks(len(ids), on_result, progress),
            batch_size,
            actors,
            (settings, fingerprint, templates),
        )
    finally:
        if budget is not None:
            ray.kill(budget)


def _evaluated(
    ds: ray.data.Dataset,
    whole: Reference,
    batches: tuple[str | None, tuple[RunOptions, RunOptions], AggregateSpec],
    callbacks: Callbacks,
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
        Batches,
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
    finished = Finished(callbacks)
    for meta in finished.metas(mapped):
        signatures.append(meta["signature"])
        _mark(answered, meta["single"], ids)
        for position, trial in meta["trials"]:
            trials.setdefault(position, []).append(trial)
        aggregates.merge(meta["aggregates"])
    if finished.refs:
        results = ray.data.from_arrow_refs(finished.refs).filter(expr=col("position") != META)
    if trials:
        assert results is not None
        ranks = ray.put(_ranks(trials, answered, ids))
        unranked = col("rank") == UNRANKED
        ranked = (
            results.filter(expr=unranked)
            .map_batches(
                Ranked,
                batch_size=batch_size,
                batch_format="pyarrow",
                fn_constructor_args=(ranks, spec),
                compute=ray.data.ActorPoolStrategy(size=actors),
                num_cpus=0.5,
            )
            .materialize()
        )
        for meta in driver_rows(ranked):
            aggregates.merge(meta["aggregates"])
        ranked = ranked.filter(expr=col("position") != META)
        results = results.filter(expr=col("rank") != UNRANKED).union(ranked)
    missing = [i for i, seen in enumerate(answered) if not seen]
    if missing or not signatures:
        rest = run_evaluation(whole.part(missing), [], options=driver_options)
        signatures.append(rest.signature)
        out: dict[str, list[Any]] = {name: [] for name in COLUMNS}
        for position, result in zip(missing, rest, strict=True):
            add_row(out, position, 0, ids[position], dump_json(result))
            callbacks.result(result)
        aggregates.add(rest, [position_key(position, 0) for position in missing])
        driver = ray.data.from_items(_records(out))
        results = driver if results is None else results.union(driver)
    assert results is not None
    ordered = results.sort(["position", "rank"]).materialize()
    signature = _signature(signatures, fingerprint, templates, len(ids), settings)
    return DatasetRun(ordered, aggregates.finish(), signature)


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
