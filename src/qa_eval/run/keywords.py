"""The keywords of a run (``RunKeywords``), written once: ``run_evaluation``, ``arun_evaluation``
and ``RunOptions.of`` take them. In a module of their own, imported when first needed: a
``TypedDict`` compiles each of its annotations when it is made, which a fresh process's first
``run_evaluation`` given no keyword need not pay.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:  # the judge side (pydantic, the metrics) is imported only when a run uses it
    from ..judge.calls import Judge
    from ..judge.embeddings import Embedder
    from .progress import ProgressCallback, ResultCallback, StatusCallback

__all__ = ["RunKeywords"]


class RunKeywords(TypedDict, total=False):
    """The keywords of ``run_evaluation``, ``arun_evaluation`` and :meth:`RunOptions.of`, written
    once; a keyword left out takes :class:`RunOptions`' default (``concurrency``: the config's)."""

    concurrency: int | None
    cache: str | os.PathLike[str] | bool | None
    max_cost: float | None
    dry_run: bool
    disable: Iterable[str]
    enable: Iterable[str]
    progress: ProgressCallback | None
    on_progress: StatusCallback | None
    on_result: ResultCallback | None
    reference_source: str
    responses_source: str
    judge: Judge | None
    embedder: Embedder | None
    fingerprint: str | None
    keys: str
    workers: int
    shard: str | tuple[int, int] | None
