"""Evaluate responses held in a Ray Data ``Dataset`` (``evaluate_dataset``): on every core of a
Ray cluster, with the results and aggregates of one process.

Each batch of responses is evaluated by ``run_evaluation`` (the one code path of every run)
against the part of the reference its responses answer, and aggregated there into mergeable
partial aggregates (``aggregate.partial``), which the driver merges: the driver never reads a
result back. The questions no response answers are evaluated once on the driver. Results keep
their reference position (``position``, then ``rank`` among a question's trials), so the results
Dataset is in reference order and the merged aggregates are ``compute_aggregates`` of the whole.
A question's trials may come in any batches: a first pass reads each response's ``question_id``
and ``trial`` (only those, and only from lines that name a trial), so every batch knows each
trial's rank among its question's trials (in the order of their ``trial`` values: numbers, then
text). A judge runs in a pool of actors whose concurrencies add up to at most the config's
``concurrency``. See docs/scale.md.

Rows of the input are either JSON Lines text (a ``text`` column as ``ray.data.read_text`` gives,
or the column named by ``column``): each line read exactly as ``qa-eval evaluate`` reads a
responses file; or response records (``read_json``, ``read_parquet``, ``from_items``), which pass
through Arrow's types first (a key one record lacks is null in it when another has it).

Importing this module without Ray installed raises :class:`~qa_eval.extras.MissingExtra`.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import os
import pickle
import warnings
from collections.abc import Iterable, Iterator, Mapping
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
from .run.prepare.reference import prepare_reference  # noqa: E402
from .run.prepare.responses import Unknown  # noqa: E402
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

_REFUSED = ("max_cost", "on_result", "progress", "on_progress", "fingerprint", "options")
"""Run options that cannot hold across batches scored apart: ``max_cost`` (one budget: see
docs/scale.md), the callbacks (called in the process that runs each batch), the fingerprint (the
whole reference's, computed here) and ``options``."""

Trials = dict[int, dict[Any, int]]
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
    out; each batch is one ``run_evaluation``, aggregated into a ``PartialAggregates``."""

    def __init__(
        self, shared: Any, column: str | None, config: Any, keywords: dict, spec: AggregateSpec
    ) -> None:
        data, ids, trials = ray.get(shared) if isinstance(shared, ray.ObjectRef) else shared
        self.reference = _Reference(data, ids)
        self.trials: Trials = trials
        self.column = column
        self.config = config
        self.keywords = keywords
        self.spec = spec

    def __call__(self, batch: pyarrow.Table) -> dict[str, list[Any]]:
        try:
            return self._evaluated(batch)
        except QaEvalError as error:  # bad input: its one line goes to the driver, which raises
            out: dict[str, list[Any]] = {name: [] for name in COLUMNS}
            _row(out, _META, 0, "", pickle.dumps({"error": str(error)}))
            return out

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
            results = run_evaluation(
                reference.part(answered), responses, self.config, **self.keywords
            )
        ranked: list[tuple[int, int, dict[str, Any]]] = []
        single: list[int] = []  # the positions answered without trials
        index = 0
        for position in answered:
            for _ in range(counts[position]):
                result = results[index]
                index += 1
                ranked.append((position, self._rank(position, result), result))
            if TRIAL_KEY not in results[index - 1]:
                single.append(position)
        ranked.sort(key=lambda item: (item[0], item[1]))  # a question's trials by rank
        partial = PartialAggregates(self.spec)
        partial.add(
            (result for _, _, result in ranked),
            [position_key(position, rank) for position, rank, _ in ranked],
        )
        out: dict[str, list[Any]] = {name: [] for name in COLUMNS}
        for position, rank, result in ranked:
            _row(out, position, rank, reference.ids[position], dump_json(result))
        meta = {"signature": results.signature, "single": single, "aggregates": partial}
        _row(out, _META, 0, "", pickle.dumps(meta, protocol=pickle.HIGHEST_PROTOCOL))
        return out

    def _rank(self, position: int, result: dict[str, Any]) -> int:
        """A result's rank among its question's results: its trial's, from the first pass."""
        if TRIAL_KEY not in result:
            return 0
        rank = self.trials.get(position, {}).get(result[TRIAL_KEY])
        if rank is None:  # read otherwise by the first pass: a source that changed meanwhile
            raise QaEvalError(
                f"responses dataset: question_id {self.reference.ids[position]!r}: trial "
                f"{result[TRIAL_KEY]!r} was not there when the trials were first read (the "
                "dataset gave other rows on a second read)"
            )
        return rank


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
    **keywords: Any,
) -> DatasetRun:
    """Evaluate the responses of ``ds`` against ``reference`` (a path or the data) on Ray; the
    results equal ``run_evaluation``'s and the aggregates ``compute_aggregates``'s on the same
    data.

    ``config`` as ``run_evaluation`` takes it; with a judge, ``actors`` (at most the config's
    ``concurrency``) each get ``concurrency // actors`` judge calls at once, so the pool never
    exceeds the bound; without one, ``actors`` defaults to the cluster's CPUs. The reply cache
    (``cache=``) is each node's own unless a folder every node shares is given. ``column``: the
    column holding each response's JSON text (default: ``text`` when it is the only column, as
    ``ray.data.read_text`` gives; else each row is a response record). A question's responses
    (its trials) may come in any batches; its trials are ordered by their ``trial`` values.
    ``by``: the tags the aggregates group by; ``pass_thresholds`` (metric -> value): the
    aggregates' pass@k and pass^k of repeated trials, as ``compute_aggregates`` takes them. The
    other keywords are ``run_evaluation``'s
    (``enable``, ``disable``, ``keys``, ``cache``, ...), but not ``max_cost`` nor the
    callbacks."""
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
    whole = _Reference(data, ids)
    trials = _first_pass(ds, column, whole)
    shared = ray.put((data, ids, trials))
    mapped = ds.map_batches(
        _Batches,
        batch_size=batch_size,
        batch_format="pyarrow",
        fn_constructor_args=(shared, column, actor_config, keywords, spec),
        compute=ray.data.ActorPoolStrategy(size=actors),
        # Half a CPU each: a pool as large as the cluster's CPUs still leaves Ray Data's read
        # tasks (read_text, read_parquet: one CPU each) room to run; with a whole CPU each, a
        # pool of every CPU waited forever for its input.
        num_cpus=0.5,
    )
    mapped = mapped.materialize()
    aggregates = PartialAggregates(spec)
    signatures: list[dict[str, Any]] = []
    answered = bytearray(len(ids))  # 1: answered without trials (once); 2: with trials
    for position in trials:
        answered[position] = 2
    for row in mapped.filter(expr=col("position") == _META).iter_rows():
        meta = pickle.loads(row["result"])  # written by _Batches, in this run
        if "error" in meta:
            raise QaEvalError(meta["error"])
        signatures.append(meta["signature"])
        _mark(answered, meta["single"], ids)
        aggregates.merge(meta["aggregates"])
    results = mapped.filter(expr=col("position") != _META)
    missing = [i for i, seen in enumerate(answered) if not seen]
    if missing or not signatures:
        rest = run_evaluation(whole.part(missing), [], config, **keywords)
        signatures.append(rest.signature)
        out: dict[str, list[Any]] = {name: [] for name in COLUMNS}
        for position, result in zip(missing, rest, strict=True):
            _row(out, position, 0, ids[position], dump_json(result))
        aggregates.add(rest, [position_key(position, 0) for position in missing])
        results = results.union(ray.data.from_items(_records(out)))
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


def _trial_pairs(batch: pyarrow.Table, column: str | None) -> dict[str, list[Any]]:
    """The first pass over a batch: the question id and trial of each response that has a trial
    (as the JSON of the pair). Only lines that may name a trial are parsed; a line that cannot
    be read is left to the second pass, which names it."""
    names = batch.column_names
    if column is None and names == ["text"]:
        column = "text"
    pairs: Iterable[tuple[Any, Any]] = ()
    if column is None and TRIAL_KEY in names and "question_id" in names:
        pairs = zip(batch.column("question_id").to_pylist(), batch.column(TRIAL_KEY).to_pylist())
    elif column is not None and column in names:
        pairs = _text_pairs(batch.column(column).to_pylist())
    return {"pair": [dump_json([qid, trial]) for qid, trial in pairs if _an_id(trial)]}


def _text_pairs(texts: list[Any]) -> Iterator[tuple[Any, Any]]:
    for text in texts:
        # A key written with escapes ("\u0074rial") is a trial too.
        if text and ("trial" in text or "\\u" in text):
            try:
                record = parse_json(text, "responses dataset")
            except QaEvalError:
                continue
            if isinstance(record, dict) and TRIAL_KEY in record:
                yield record.get("question_id"), record[TRIAL_KEY]


def _an_id(value: Any) -> bool:
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def _first_pass(ds: ray.data.Dataset, column: str | None, reference: _Reference) -> Trials:
    """Each trial's rank among its question's trials (their ``trial`` values sorted: numbers,
    then text); ``QaEvalError`` for a trial given twice."""
    read = functools.partial(_trial_pairs, column=column)
    pairs = ds.map_batches(read, batch_format="pyarrow", batch_size=None)
    found: dict[int, list[Any]] = {}
    for batch in pairs.iter_batches(batch_format="pyarrow", batch_size=None):
        table: pyarrow.Table = batch  # the format asked for
        for raw in table.column("pair").to_pylist():
            qid, trial = parse_json(raw.decode("utf-8", "surrogatepass"), "responses dataset")
            position = reference.position(qid)
            if position is not None:
                found.setdefault(position, []).append(trial)
    trials: Trials = {}
    for position, values in found.items():
        ordered = sorted(values, key=lambda trial: (isinstance(trial, str), trial))
        for before, after in itertools.pairwise(ordered):
            if before == after and type(before) is type(after):
                raise QaEvalError(
                    f"responses dataset: question_id {reference.ids[position]!r}: duplicate "
                    f"trial {before!r}"
                )
        trials[position] = {trial: rank for rank, trial in enumerate(ordered)}
    return trials


def _records(columns: dict[str, list[Any]]) -> list[dict[str, Any]]:
    return [dict(zip(columns, row, strict=True)) for row in zip(*columns.values(), strict=True)]


def _mark(answered: bytearray, single: list[int], ids: list[Any]) -> None:
    """Note the positions a batch answered without trials; a question answered in two batches
    that way (a duplicate response), or with and without trials, is refused."""
    for position in single:
        if answered[position]:
            detail = (
                "a duplicate response"
                if answered[position] == 1
                else "trial: missing here but given in another response to this question"
            )
            raise QaEvalError(
                f"responses dataset: question_id {ids[position]!r} is answered in two batches "
                f"({detail})"
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
