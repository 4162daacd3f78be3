"""``qa-eval generate`` from files: open the graph, read the config and the schema, generate,
write the reference file (and the review CSV and the report JSON) each in one step; describe a
graph; apply a review. The CLI calls these."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from ..io.files import check_output_path
from ..refresh.writer import write_atomically
from .engine import SHAPES, GenerateOptions, Generation, generate, parse_mix
from .records import records, write_output
from .review import ReviewResult, apply_review_file, write_review
from .schema import Schema, read_schema
from .settings import read_settings
from .source import Graph, open_graph

if TYPE_CHECKING:
    from .verbalize import WordingBatch

__all__ = ["GraphSource", "apply_review_files", "describe_graph", "generate_reference_file"]


@dataclass(frozen=True)
class GraphSource:
    """Where the graph is: an RDF file or an endpoint, with the endpoint's options."""

    store: str | os.PathLike[str] | None = None
    endpoint: str | None = None
    strict_rdf: bool = False
    headers: Mapping[str, str] | Iterable[str] | None = None
    default_graph_uris: Sequence[str] = ()
    timeout: float = 30.0

    def open(self) -> Graph:
        """Open the graph."""
        return open_graph(
            store=self.store,
            endpoint=self.endpoint,
            strict_rdf=self.strict_rdf,
            default_graph_uris=self.default_graph_uris,
            headers=self.headers,
            timeout=self.timeout,
        )


def describe_graph(
    source: GraphSource, language: str = "en", config: str | os.PathLike[str] | None = None
) -> Schema:
    """The schema of a graph (``--describe``)."""
    settings = read_settings(config)
    return read_schema(source.open(), settings, language)


def _shapes(shapes: Sequence[str] | None) -> tuple[str, ...]:
    if not shapes:
        return SHAPES
    for shape in shapes:
        if shape not in SHAPES:
            raise InputError(f"unknown shape {shape!r} (known: {', '.join(SHAPES)})")
    return tuple(dict.fromkeys(shapes))


def generate_reference_file(
    source: GraphSource,
    output: str | os.PathLike[str],
    n: int,
    *,
    seed: int = 0,
    shapes: Sequence[str] | None = None,
    mix: str | None = None,
    language: str = "en",
    config: str | os.PathLike[str] | None = None,
    report_json: str | os.PathLike[str] | None = None,
    review: str | os.PathLike[str] | None = None,
    judge: Any = None,
    styles: Sequence[str] | None = None,
    batch: WordingBatch | None = None,
) -> Generation:
    """Generate ``n`` questions from the graph and write them (see ``qa-eval generate``); with
    a ``judge`` (``qa_eval.judge.Judge``) the questions are reworded in ``styles`` and checked
    by a round trip (``--verbalize llm``). A dry-run judge plans its calls and nothing is
    written. With ``batch`` (and no judge) the judge's calls go through the Batch API first
    (``--batch``); while batches are in flight (``no_wait``) nothing is written and
    ``generation.batch.waiting`` names them."""
    if n < 1:
        raise InputError(f"-n must be at least 1, got {n}")
    chosen = _shapes(shapes)
    weights = parse_mix(mix, chosen)
    check_output_path(output)
    for extra in (report_json, review):
        if extra is not None and not Path(extra).parent.is_dir():
            raise InputError("the folder does not exist", source=str(extra))
    settings = read_settings(config)
    graph = source.open()
    schema = read_schema(graph, settings, language)
    options = GenerateOptions(
        n=n,
        seed=seed,
        shapes=chosen,
        mix=weights,
        max_answers=settings.max_answers,
        max_uses_per_entity=settings.max_uses_per_entity,
    )
    generation = generate(graph, schema, options)
    if batch is not None and judge is None:
        if not _batched(generation, batch, styles):
            return generation  # batches in flight: a rerun collects them
    elif judge is not None:
        _reword(generation, judge, styles)
        if getattr(judge, "dry_run", False):
            return generation
    data = records(generation)
    write_output(output, data)
    if review is not None:
        write_review(review, data)
    if report_json is not None:
        text = json.dumps(generation.report.as_dict(), indent=2, ensure_ascii=False) + "\n"
        write_atomically(Path(report_json), text.encode("utf-8"))
    return generation


def _reword(generation: Generation, judge: Any, styles: Sequence[str] | None) -> None:
    """``--verbalize llm`` with ``judge``, its counts into the report."""
    from .verbalize import STYLES, verbalize

    counts = verbalize(generation, judge, styles or tuple(STYLES))
    total = judge.total
    generation.report.wording = {
        **counts.as_dict(),
        "judge_calls": total.calls,
        "cached": total.cached,
        "cost": round(total.cost, 6) if total.cost_known else None,
    }


def _batched(generation: Generation, batch: WordingBatch, styles: Sequence[str] | None) -> bool:
    """``--verbalize llm --batch``: the batches' rounds, then the rewording with the judge that
    reads their replies; False while batches are still in flight."""
    import asyncio

    from ..run.prefill import final_judge
    from .verbalize import STYLES, aprefill_wording

    generation.batch = asyncio.run(aprefill_wording(generation, batch, styles or tuple(STYLES)))
    if generation.batch.waiting:
        return False
    judge = final_judge(batch.config, batch.cache)
    try:
        _reword(generation, judge, styles)
    finally:
        if judge.cache is not None:
            judge.cache.close()
    generation.report.wording["batch"] = generation.batch.as_dict()
    return True


def apply_review_files(
    source: GraphSource,
    review: str | os.PathLike[str],
    reference: str | os.PathLike[str],
    output: str | os.PathLike[str],
) -> ReviewResult:
    """Apply a review CSV to a generated reference file and write the kept questions."""
    check_output_path(output)
    graph = source.open()
    result = apply_review_file(review, reference, graph.run_query)
    write_output(output, result.data)
    return result
