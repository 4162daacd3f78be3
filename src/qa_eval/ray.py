"""Evaluate responses held in a Ray Data ``Dataset`` (``evaluate_dataset``): on every core of a
Ray cluster, with the results and aggregates of one process.

Each batch of responses is evaluated by ``run_evaluation`` (the one code path of every run)
against the part of the reference its responses answer; the questions no response answers are
evaluated once on the driver; results keep their reference position (``position``, then ``rank``
among a question's trials), so the results Dataset is in reference order and the aggregates are
``compute_aggregates`` of the whole. A judge runs in a pool of actors whose concurrencies add up
to at most the config's ``concurrency``. See docs/scale.md.

Rows of the input are either JSON Lines text (a ``text`` column as ``ray.data.read_text`` gives,
or the column named by ``column``): each line read exactly as ``qa-eval evaluate`` reads a
responses file; or response records (``read_json``, ``read_parquet``, ``from_items``), which pass
through Arrow's types first (a key one record lacks is null in it when another has it).

Importing this module without Ray installed raises :class:`~qa_eval.extras.MissingExtra`.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from .extras import require

require("ray.data", "qa_eval.ray")

import ray  # noqa: E402  (after the extra is checked)
import ray.data  # noqa: E402
from ray.data.expressions import col  # noqa: E402

from .aggregate.compute import compute_aggregates  # noqa: E402
from .config.load import as_config  # noqa: E402
from .errors import QaEvalError, UnknownResponsesWarning  # noqa: E402
from .io.files import parse_json, read_reference  # noqa: E402
from .io.limits import dump_json  # noqa: E402
from .run.evaluation import run_evaluation  # noqa: E402
from .run.prepare.reference import prepare_reference  # noqa: E402
from .run.prepare.responses import Unknown  # noqa: E402
from .run.signature import reference_fingerprint  # noqa: E402

if TYPE_CHECKING:
    import pyarrow

__all__ = ["DatasetRun", "evaluate_dataset", "iter_results"]

COLUMNS = ("position", "rank", "question_id", "result")
"""The results Dataset's columns: the question's position in the reference, the result's rank
among the question's results (its trials, in the order read), the question id as text, and the
result as the JSON bytes a results file holds on its line."""

_META = -1
"""The position of the one row each batch adds for the driver: its signature and the positions
it answered (filtered out of the results)."""

_REFUSED = ("max_cost", "on_result", "progress", "on_progress", "fingerprint", "options")
"""Run options that cannot hold across batches scored apart (one budget, callbacks in this
process, the fingerprint the run computes)."""


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
    out; each batch is one ``run_evaluation``."""

    def __init__(self, reference: Any, column: str | None, config: Any, keywords: dict) -> None:
        data, ids = ray.get(reference) if isinstance(reference, ray.ObjectRef) else reference
        self.reference = _Reference(data, ids)
        self.column = column
        self.config = config
        self.keywords = keywords

    def __call__(self, batch: pyarrow.Table) -> dict[str, list[Any]]:
        try:
            return self._evaluated(batch)
        except QaEvalError as error:  # bad input: its one line goes to the driver, which raises
            out: dict[str, list[Any]] = {name: [] for name in COLUMNS}
            _row(out, _META, 0, "", dump_json({"error": str(error)}))
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
        out: dict[str, list[Any]] = {name: [] for name in COLUMNS}
        index = 0
        for position in answered:
            for rank in range(counts[position]):
                _row(out, position, rank, reference.ids[position], dump_json(results[index]))
                index += 1
        meta = {"signature": results.signature, "answered": answered}
        _row(out, _META, 0, "", dump_json(meta))
        return out


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
    (its trials) must come in one batch. ``by``: the tags the aggregates group by. The other
    keywords are ``run_evaluation``'s (``enable``, ``disable``, ``keys``, ``cache``, ...), but
    not ``max_cost`` nor the callbacks."""
    refused = sorted(set(keywords) & set(_REFUSED))
    if refused:
        raise QaEvalError(f"evaluate_dataset does not take {', '.join(refused)}")
    data, ids, fingerprint, templates = _loaded(reference)
    keywords = {**keywords, "fingerprint": fingerprint}
    settings = None if config is None else as_config(config)
    judged = settings is not None and settings.generation is not None
    if actors is None:
        actors = max(1, int(ray.available_resources().get("CPU", 1)))
    actor_config: Any = settings
    if judged:
        assert settings is not None
        actors = max(1, min(actors, settings.concurrency))
        actor_config = dataclasses.replace(settings, concurrency=settings.concurrency // actors)
    shared = ray.put((data, ids))
    mapped = ds.map_batches(
        _Batches,
        batch_size=batch_size,
        batch_format="pyarrow",
        fn_constructor_args=(shared, column, actor_config, keywords),
        compute=ray.data.ActorPoolStrategy(size=actors),
        # Half a CPU each: a pool as large as the cluster's CPUs still leaves Ray Data's read
        # tasks (read_text, read_parquet: one CPU each) room to run; with a whole CPU each, a
        # pool of every CPU waited forever for its input.
        num_cpus=0.5,
    )
    mapped = mapped.materialize()
    metas = [
        parse_json(bytes(row["result"]).decode(), "batch")
        for row in mapped.filter(expr=col("position") == _META).iter_rows()
    ]
    failed = next((m["error"] for m in metas if "error" in m), None)
    if failed is not None:
        raise QaEvalError(failed)
    answered = _answered(metas, ids)
    results = mapped.filter(expr=col("position") != _META)
    missing = [i for i, seen in enumerate(answered) if not seen]
    signatures = [m["signature"] for m in metas]
    if missing or not signatures:
        rest = run_evaluation(_Reference(data, ids).part(missing), [], config, **keywords)
        signatures.append(rest.signature)
        out: dict[str, list[Any]] = {name: [] for name in COLUMNS}
        for position, result in zip(missing, rest, strict=True):
            _row(out, position, 0, ids[position], dump_json(result))
        results = results.union(ray.data.from_items(_records(out)))
    ordered = results.sort(["position", "rank"]).materialize()  # sorted once, read twice
    signature = _signature(signatures, fingerprint, templates, len(ids), settings)
    aggregates = _aggregates(ordered, settings if config is not None else None, by, keywords)
    return DatasetRun(ordered, aggregates, signature)


def _records(columns: dict[str, list[Any]]) -> list[dict[str, Any]]:
    return [dict(zip(columns, row, strict=True)) for row in zip(*columns.values(), strict=True)]


def _answered(metas: list[dict[str, Any]], ids: list[Any]) -> list[bool]:
    """Which reference positions some batch answered; a question answered in two batches is
    refused (its responses, e.g. its trials, must come in one batch)."""
    seen = [False] * len(ids)
    for meta in metas:
        for position in meta["answered"]:
            if seen[position]:
                raise QaEvalError(
                    f"responses dataset: question_id {ids[position]!r} is answered in two "
                    "batches (a duplicate response, or trials that must come in one batch)"
                )
            seen[position] = True
    return seen


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


def _aggregates(
    ordered: ray.data.Dataset, config: Any, by: Iterable[str] | None, keywords: Mapping[str, Any]
) -> dict[str, Any]:
    """The aggregates of the whole run.

    PARTIAL AGGREGATES PLUG IN HERE: today every result is read back once, in reference order,
    into one ``compute_aggregates`` on the driver. With mergeable partial aggregates (issue 35,
    section 3), each batch returns its partial in its driver row and this merges them."""
    options: dict[str, Any] = {}
    if by is not None:
        options["by"] = by
    if "keys" in keywords:
        options["keys"] = keywords["keys"]
    if keywords.get("pass_thresholds"):
        options["pass_thresholds"] = keywords["pass_thresholds"]
    return compute_aggregates(iter_results(ordered), config, **options)
