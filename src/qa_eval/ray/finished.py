"""The driver's side of the batches' pass in ``qa_eval.ray``: the blocks read as they finish
(:class:`Finished`: the rows the batches wrote for the driver, the results for ``on_result``) and
the callbacks called (:class:`Callbacks`)."""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import ray
import ray.data
from ray.data.expressions import col

from ..errors import QaEvalError
from ..io.files import parse_json
from ..run.options import ResultCallback
from ..run.progress import ProgressCallback
from .batches import META

if TYPE_CHECKING:
    import pyarrow

__all__ = ["Callbacks", "Finished", "driver_rows"]


class Callbacks:
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

    def result(self, result: dict[str, Any] | None) -> None:
        """One result finished: ``on_result(result)`` (None: not read, for ``progress`` alone),
        then ``progress(done, total)``."""
        self.done += 1
        if self.on_result is not None and result is not None:
            self.on_result(result)
        if self.progress is not None:
            self.progress(self.done, self.total)


class Finished:
    """The batches' pass run to its end block by block, in the order blocks finish: the rows each
    batch wrote for the driver, its results given to the callbacks (read onto the driver only
    when ``on_result`` wants them), and the blocks kept (``refs``: the results, materialized in
    the object store)."""

    def __init__(self, callbacks: Callbacks) -> None:
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


def _called(callbacks: Callbacks, lines: list[bytes] | None, count: int) -> None:
    """The callbacks for one block's results: its ``lines`` parsed (``on_result``), or only
    counted (``progress``)."""
    if lines is None:
        for _ in range(count):
            callbacks.result(None)
        return
    for line in lines:
        callbacks.result(parse_json(line.decode("utf-8", "surrogatepass"), "results dataset"))


def _split(positions: Any, values: Any) -> tuple[list[bytes], list[bytes]]:
    """A block's rows for the driver and its results' lines, in block order."""
    metas: list[bytes] = []
    lines: list[bytes] = []
    for position, value in zip(positions.to_pylist(), values.to_pylist(), strict=True):
        (metas if position == META else lines).append(value)
    return metas, lines


@ray.remote(num_cpus=0)
def _metas_of(block: pyarrow.Table) -> list[bytes]:
    """A block's rows for the driver, read where the block is (its results stay there)."""
    import pyarrow.compute

    rows = block.filter(pyarrow.compute.equal(block.column("position"), META))
    return rows.column("result").to_pylist()  # type: ignore[no-any-return]


def driver_rows(mapped: ray.data.Dataset) -> Iterator[dict[str, Any]]:
    """The rows the batches wrote for the driver; ``QaEvalError`` for a batch's bad input."""
    for row in mapped.filter(expr=col("position") == META).iter_rows():
        meta = pickle.loads(row["result"])  # written by this run's batches
        if "error" in meta:
            raise QaEvalError(meta["error"])
        yield meta
