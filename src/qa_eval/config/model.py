"""A run's judge and metric configuration as one value (``EvalConfig``), and the metric switches
a config can set (from the registry, through its table ``vocabulary.switch_table``: a run without
a config does not build the registry)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field, replace
from typing import TYPE_CHECKING, Any

from ..judge.settings import (
    EmbeddingConfig,
    GenerationConfig,
)
from ..vocabulary import switch_table as _table
from ..vocabulary.frozen import FACTORY, Frozen, frozen

if TYPE_CHECKING:  # custom metrics and examples are read when a config has some
    from ..metrics.definitions import CustomMetric
    from ..prompts import Example

SWITCHES = _table.SWITCH_ORDER
"""The metric families a config or ``--enable`` / ``--disable`` switches (from the registry,
``qa_eval.vocabulary.registry.METRICS``)."""
GRAPHRAG_SWITCHES = tuple(s for s in SWITCHES if s in _table.OFF_BY_DEFAULT)
"""The switches that are off unless a config or ``--enable`` switches them on."""
GROUPS = _table.SWITCH_GROUPS
"""Names that ``--enable`` expands: ``graphrag`` is every GraphRAG metric but BERTScore (which
needs PyTorch)."""
OFFLINE_SWITCHES = _table.JUDGE_FREE
"""Metrics that need no judge."""


@frozen
class EvalConfig(Frozen):
    """Everything a run needs to know about its judge and its LLM metrics."""

    generation: GenerationConfig | None = None
    embedding: EmbeddingConfig = field(default_factory=EmbeddingConfig)
    concurrency: int = 8
    timeout: float = 60.0
    max_attempts: int = 6
    retry_base: float = 0.5
    prices: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    metrics: Mapping[str, bool] = field(default_factory=dict)
    custom_metrics: tuple[Mapping[str, Any], ...] = ()
    answer_correctness_prompt: str | None = None
    relevance_questions: int = 3
    repeats: int = 1
    """How many times every LLM metric is asked per question (``llm.repeats``, ``--repeats``;
    see ``judge.repeats``)."""
    options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    source: str = "config"
    examples: Mapping[str, tuple[Example, ...]] = field(default_factory=dict)
    """Few-shot examples from people's labels, by metric (``answer_correctness`` or a custom
    metric's name): the ``examples*`` keys of its block (``qa_eval.agreement.examples``)."""
    custom_definitions: tuple[CustomMetric, ...] = field(default=(), compare=False, repr=False)
    """``custom_metrics`` checked and parsed, once: when the config is read (or built), and
    carried over by ``with_options``; the scorer uses these."""

    def __init__(
        self,
        generation: GenerationConfig | None = None,
        embedding: EmbeddingConfig = FACTORY,
        concurrency: int = 8,
        timeout: float = 60.0,
        max_attempts: int = 6,
        retry_base: float = 0.5,
        prices: Mapping[str, Mapping[str, float]] = FACTORY,
        metrics: Mapping[str, bool] = FACTORY,
        custom_metrics: tuple[Mapping[str, Any], ...] = (),
        answer_correctness_prompt: str | None = None,
        relevance_questions: int = 3,
        repeats: int = 1,
        options: Mapping[str, Mapping[str, Any]] = FACTORY,
        source: str = "config",
        examples: Mapping[str, tuple[Example, ...]] = FACTORY,
        custom_definitions: tuple[CustomMetric, ...] = (),
    ) -> None:
        # The fields in order, as @dataclass would write them (see qa_eval.vocabulary.frozen);
        # into the instance's dictionary: it is frozen to assignment.
        fields = self.__dict__
        fields["generation"] = generation
        fields["embedding"] = EmbeddingConfig() if embedding is FACTORY else embedding
        fields["concurrency"] = concurrency
        fields["timeout"] = timeout
        fields["max_attempts"] = max_attempts
        fields["retry_base"] = retry_base
        fields["prices"] = {} if prices is FACTORY else prices
        fields["metrics"] = {} if metrics is FACTORY else metrics
        fields["custom_metrics"] = custom_metrics
        fields["answer_correctness_prompt"] = answer_correctness_prompt
        fields["relevance_questions"] = relevance_questions
        fields["repeats"] = repeats
        fields["options"] = {} if options is FACTORY else options
        fields["source"] = source
        fields["examples"] = {} if examples is FACTORY else examples
        fields["custom_definitions"] = custom_definitions
        self.__post_init__()

    def __post_init__(self) -> None:
        names = [d.name for d in self.custom_definitions]
        if names != [m.get("name") for m in self.custom_metrics]:  # built or replaced by hand
            from ..metrics.definitions import parse_custom_metric

            parsed = tuple(
                parse_custom_metric(m, self.source, i) for i, m in enumerate(self.custom_metrics)
            )
            object.__setattr__(self, "custom_definitions", parsed)

    def enabled(self, switch: str) -> bool:
        """Whether a metric family is switched on (the original's are, the GraphRAG set is not,
        unless the config says otherwise)."""
        return bool(self.metrics.get(switch, switch not in _table.OFF_BY_DEFAULT))

    def switched_on(
        self,
        switch: str,
        enable: frozenset[str] = frozenset(),
        disable: frozenset[str] = frozenset(),
    ) -> bool:
        """Whether a metric runs, given a run's ``enable`` and ``disable`` on top of the config."""
        return (self.enabled(switch) or switch in enable) and switch not in disable

    def option(self, switch: str, key: str, default: Any = None) -> Any:
        """A metric's own setting (e.g. ``factual_accuracy.cutoffs``), or ``default``."""
        return self.options.get(switch, {}).get(key, default)

    def with_options(self, **changes: Any) -> EvalConfig:
        """A copy with some settings replaced (``None`` values are ignored)."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    def public(self) -> dict[str, Any]:
        """The settings that go into a run signature: no API keys."""
        return {
            "generation": self.generation.public() if self.generation else None,
            "embedding": self.embedding.public(),
            "concurrency": self.concurrency,
            "timeout": self.timeout,
            "max_attempts": self.max_attempts,
            "metrics": {s: self.enabled(s) for s in SWITCHES},
            "custom_metrics": [m.get("name") for m in self.custom_metrics],
            "relevance_questions": self.relevance_questions,
            "repeats": self.repeats,
            "metric_options": {k: dict(v) for k, v in self.options.items()},
        }
