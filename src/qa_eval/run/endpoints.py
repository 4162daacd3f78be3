"""The judge, embedder and BERTScore model of a run, and its reply cache (``Endpoints``)."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from ..config import OFFLINE_SWITCHES, EvalConfig
from ..extras import available, require
from ..vocabulary.switch_table import NEED_EMBEDDER
from .options import RunOptions

if TYPE_CHECKING:  # the judge side (pydantic, the metrics) is imported only when a run uses it
    from ..judge.cache.store import ReplyCache
    from ..judge.calls import Judge
    from ..judge.embeddings import Embedder
    from .score import AnswerScorer

__all__ = ["Endpoints", "judge_free"]


def judge_free(options: RunOptions) -> bool:
    """Whether a run scores only the deterministic metrics: no judge given or configured, and
    no offline answer metric on (its :meth:`Endpoints.scorer` is None). Such a run waits for
    nothing, and needs no reply cache."""
    return (
        options.judge is None
        and options.config.generation is None
        and not any(options.wants(s) for s in OFFLINE_SWITCHES)
    )


class Endpoints:
    """The judge, embedder and BERTScore model of a run, and the reply cache the run opened for
    them (closed at the end): given in the options, or made from the config."""

    def __init__(self) -> None:
        self.judge: Judge | None = None
        self.embedder: Embedder | None = None
        self.store: ReplyCache | None = None
        self.bertscorer: Any = None
        self.offline: list[str] = []

    def open(self, options: RunOptions) -> None:
        """The run's judge, embedder and BERTScore model, as its options and config ask."""
        settings = options.config
        judge = options.judge
        self.offline = [s for s in OFFLINE_SWITCHES if options.wants(s)]
        if judge is not None or settings.generation is not None or self.offline:
            if judge is None and settings.generation is not None and not available("openai"):
                # Checked without importing the SDK: the judge's own calls do not need it.
                require("openai", "the LLM judge")
            require("pydantic", "the answer metrics")
            from ..judge.calls import Judge
        if judge is None and settings.generation is not None:
            from ..judge.cache.store import open_cache

            self.store = open_cache(options.cache)
            judge = Judge(
                settings,
                cache=self.store,
                max_cost=options.max_cost,
                dry_run=options.dry_run,
                shared_budget=options.shared_budget,
            )
        self.judge = judge
        self.embedder = options.embedder
        if self.embedder is None and any(
            options.wants(name) and (judge is not None or name in OFFLINE_SWITCHES)
            for name in NEED_EMBEDDER
        ):  # a family that runs needs one (answer_relevance, semantic_similarity, ...)
            self.embedder = self._embedder(options)
        self.bertscorer = _bertscorer(settings) if options.wants("bertscore") else None

    def _embedder(self, options: RunOptions) -> Embedder:
        """The embedder the config names, its vectors cached (in the judge's cache)."""
        from ..judge.embeddings import CachingEmbedder, make_embedder

        judge = self.judge
        if judge is None and self.store is None:
            from ..judge.cache.store import open_cache

            self.store = open_cache(options.cache)
        settings = options.config
        inner = make_embedder(settings.embedding, settings.timeout)
        remote = settings.embedding.provider != "offline"
        return CachingEmbedder(
            inner,
            judge.cache if judge is not None else self.store,
            judge.slot if remote and judge is not None else None,
        )

    def scorer(self, options: RunOptions) -> AnswerScorer | None:
        """The scorer of the LLM (and offline answer) metrics; None when none can run."""
        if self.judge is None and not self.offline:
            return None
        from .score import AnswerScorer

        return AnswerScorer(
            options.config,
            self.judge,
            self.embedder,
            options.disabled,
            options.enabled,
            self.bertscorer,
        )

    def close(self) -> None:
        """Close the reply cache the run opened."""
        if self.store is not None:
            self.store.close()


def _bertscorer(settings: EvalConfig) -> Any:
    """The BERTScore model the config names; ``QaEvalError`` when PyTorch is not installed."""
    from ..metrics.textual.bertscore import require_torch

    require_torch()
    scorer = _shared_bertscorer(
        settings.option("bertscore", "model", "all-MiniLM-L6-v2"),
        settings.option("bertscore", "layer"),
    )
    scorer.info()  # finds the model and checks the layer now, not at the first question
    return scorer


@functools.cache
def _shared_bertscorer(model: str, layer: int | None) -> Any:
    """One scorer (and so one loaded model) per model and layer for the whole process: the runs
    of several systems, or of repeated API calls, share it."""
    from ..metrics.textual.bertscore import BertScorer

    return BertScorer(model=model, layer=layer)
