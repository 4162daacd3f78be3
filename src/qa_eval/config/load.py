"""Reading a config: ``parse_config`` checks a mapping, ``load_config`` reads a YAML file (or the
environment), ``as_config`` takes any of the forms a run accepts."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..errors import InputError
from ..metrics.definitions import parse_custom_metric
from .blocks import metric_blocks
from .examples import all_examples
from .llm import LLM_KEYS, read_embedding, read_generation, read_prices, read_repeats
from .model import SWITCHES, EvalConfig
from .reader import Reader, env


def parse_config(data: Any, source: str = "config") -> EvalConfig:
    """Check a config mapping (as loaded from YAML) and fill unset keys from the environment.

    The keys of graphrag-eval 6.6.1 (``llm.generation``, ``llm.embedding``,
    ``answer_correctness: {enabled, prompt}``, ``answer_relevance: {enabled}``,
    ``custom_evaluations``) mean what they mean there; qa-eval adds ``llm.concurrency``,
    ``llm.timeout``, ``llm.max_attempts``, ``llm.retry_base``, ``llm.prices``,
    ``llm.relevance_questions``, ``llm.repeats``, ``retrieval_answer`` /
    ``retrieval_context: {enabled}`` and the
    GraphRAG metric blocks (``faithfulness``, ``context_precision``, ``context_recall``,
    ``ragas_score: {weights}``, ``factual_accuracy: {weights, cutoffs}``, ``semantic_similarity``,
    ``answer_class: {phrases}``, ``bertscore: {model, layer}``), each ``{enabled: ...}`` or just
    ``true`` / ``false``; ``answer_relevance`` also takes ``rubric_fallback``.
    """
    top = Reader(data, source, "")
    blocks = tuple(s for s in SWITCHES if s != "custom")  # custom: ``custom_evaluations``
    top.check_keys(("llm", *blocks, "custom_evaluations"))
    data, examples = all_examples(data, source)
    top = Reader(data, source, "")
    llm = top.sub("llm")
    llm.check_keys(LLM_KEYS)
    generation = read_generation(llm.sub("generation")) if llm.data or not data else None
    switches, prompt, options = metric_blocks(top, blocks)
    custom = _custom_entries(data, source)
    definitions = tuple(parse_custom_metric(entry, source, i) for i, entry in enumerate(custom))
    if data and not llm.data:
        _require_llm(custom, switches, source)
    return EvalConfig(
        generation=generation,
        embedding=read_embedding(llm.sub("embedding"), generation),
        concurrency=llm.integer("concurrency", 8) or 8,
        timeout=llm.number("timeout", 60.0, minimum=0.001) or 60.0,
        max_attempts=llm.integer("max_attempts", 6) or 6,
        retry_base=llm.number("retry_base", 0.5) or 0.0,
        prices=read_prices(llm.sub("prices")),
        metrics=switches,
        custom_metrics=tuple(dict(m) for m in custom),
        custom_definitions=definitions,
        answer_correctness_prompt=prompt,
        relevance_questions=llm.integer("relevance_questions", 3) or 3,
        repeats=read_repeats(llm),
        options=options,
        source=source,
        examples=examples,
    )


def _custom_entries(data: Any, source: str) -> list[Any]:
    """The entries of ``custom_evaluations`` (none when the key is left out)."""
    custom = data.get("custom_evaluations") if isinstance(data, Mapping) else None
    if custom is None:
        return []
    if not isinstance(custom, list) or not all(isinstance(m, Mapping) for m in custom):
        raise InputError("must be a list of mappings", source=source, field="custom_evaluations")
    if not custom:
        raise InputError(
            "must list at least one metric (leave the key out for none)",
            source=source,
            field="custom_evaluations",
        )
    return custom


def _require_llm(custom: list[Any], switches: Mapping[str, bool], source: str) -> None:
    """As graphrag-eval: a config that asks for an LLM metric must say which LLM."""
    if custom:
        raise InputError(
            "an llm section is required when custom_evaluations are given",
            source=source,
            field="llm",
        )
    if switches.get("answer_correctness"):
        raise InputError(
            "an llm section is required when answer_correctness is enabled",
            source=source,
            field="llm",
        )


def default_config() -> EvalConfig:
    """No config file: the judge is gpt-4o-mini on OpenAI when ``OPENAI_API_KEY`` is set."""
    if env("OPENAI_API_KEY"):
        return parse_config({}, "environment")
    return EvalConfig(source="environment")


def load_config(path: str | os.PathLike[str] | None) -> EvalConfig:
    """Read a YAML config file (or, without one, the environment)."""
    if path is None:
        return default_config()
    from ..io.files import read_data

    return parse_config(read_data(path), str(path))


def as_config(config: EvalConfig | str | os.PathLike[str] | Mapping[str, Any] | None) -> EvalConfig:
    """The config a run uses: an ``EvalConfig`` as is, a mapping parsed, a path (or ``None``: the
    environment) loaded."""
    if isinstance(config, EvalConfig):
        return config
    if isinstance(config, Mapping):
        return parse_config(config)
    return load_config(config)
