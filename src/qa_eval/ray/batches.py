"""The actors' side of ``qa_eval.ray``: one batch of responses evaluated (:class:`Batches`), the
trials' second pass (:class:`Ranked`), and the rows both give the driver (:data:`COLUMNS`, one
row of :data:`META` position a batch)."""

from __future__ import annotations

import pickle
import warnings
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import ray

from ..aggregate.compute import AggregateSpec
from ..aggregate.partial import PartialAggregates
from ..errors import QaEvalError, UnknownResponsesWarning
from ..io.files import parse_json
from ..io.limits import dump_json
from ..metrics.agents.trials import TRIAL_KEY
from ..run.evaluation import run_evaluation
from ..run.options import RunOptions
from ..run.shards import position_key

if TYPE_CHECKING:
    import pyarrow

__all__ = ["COLUMNS", "META", "UNRANKED", "Batches", "Ranked", "Ranks", "Reference", "add_row"]

COLUMNS = ("position", "rank", "question_id", "result")
"""The results Dataset's columns: the question's position in the reference, the result's rank
among the question's results (0 without trials; with trials, its place in the order of their
``trial`` values, numbers before text), the question id as text, and the result as the JSON bytes
a results file holds on its line."""

META = -1
"""The position of the one row each batch adds for the driver (filtered out of the results):
its signature, the positions it answered without trials and its partial aggregates, pickled."""

UNRANKED = -1
"""The rank of a result with a trial until the second pass ranks it."""

Ranks = dict[int, dict[Any, int]]
"""Reference position -> {trial value: its rank among the question's trials}, for the questions
answered with trials."""


class Reference:
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


class Batches:
    """The actors' callable: one batch of responses in, its results (and one row for the driver)
    out; each batch is one ``run_evaluation``, its results without trials aggregated into a
    ``PartialAggregates``. Results with a trial leave unranked (rank :data:`UNRANKED`): their
    rank needs every batch's trials (see :class:`Ranked`)."""

    def __init__(
        self, shared: Any, column: str | None, options: RunOptions, spec: AggregateSpec
    ) -> None:
        data, ids = ray.get(shared) if isinstance(shared, ray.ObjectRef) else shared
        self.reference = Reference(data, ids)
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
                    rank = UNRANKED
                else:
                    single.append(position)
                    rank = 0
                add_row(out, position, rank, reference.ids[position], dump_json(result))
        partial = PartialAggregates(self.spec)
        plain = (r for r in results if TRIAL_KEY not in r)
        partial.add(plain, [position_key(p, 0) for p in single])
        meta = {"signature": results.signature, "single": single, "trials": trials}
        _meta(out, {**meta, "aggregates": partial})
        return out


class Ranked:
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
            add_row(out, positions[i], ranks[i], ids[i], lines[i])
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
    add_row(out, META, 0, "", pickle.dumps(meta, protocol=pickle.HIGHEST_PROTOCOL))


def add_row(out: dict[str, list[Any]], position: int, rank: int, qid: Any, result: bytes) -> None:
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
