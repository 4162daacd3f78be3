"""Judge and metric configuration: the original's YAML (``llm.generation``, ``llm.embedding``) plus
qa-eval's own keys (concurrency, retries, cache, prices, metric switches, custom metrics).

A config is plain data: loading it reads the file and the environment, and checks every key, but
creates no client. API keys are kept only in memory, never written anywhere; ``public()`` is the
form that goes into a run signature.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import orjson

from .errors import InputError
from .judge.settings import (
    AZURE_API_VERSION,
    DEFAULT_MODEL,
    EmbeddingConfig,
    GenerationConfig,
)
from .metrics.definitions import CustomMetric, check_prompt, parse_custom_metric
from .metrics.retrieval.composite import COMPONENTS
from .prompts import Example
from .vocabulary import lookup as _lookup
from .vocabulary import registry as _registry

__all__ = ["EvalConfig", "as_config", "load_config", "parse_config"]

SWITCHES = _lookup.switches()
"""The metric families a config or ``--enable`` / ``--disable`` switches (from the registry,
``qa_eval.vocabulary.registry.METRICS``)."""
GRAPHRAG_SWITCHES = tuple(s for s in SWITCHES if not _registry.METRICS[s].default)
"""The switches that are off unless a config or ``--enable`` switches them on."""
GROUPS = _lookup.groups()
"""Names that ``--enable`` expands: ``graphrag`` is every GraphRAG metric but BERTScore (which
needs PyTorch)."""
OFFLINE_SWITCHES = tuple(s for s in SWITCHES if _registry.METRICS[s].offline)
"""Metrics that need no judge."""


@dataclass(frozen=True)
class EvalConfig:
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

    def __post_init__(self) -> None:
        names = [d.name for d in self.custom_definitions]
        if names != [m.get("name") for m in self.custom_metrics]:  # built or replaced by hand
            parsed = tuple(
                parse_custom_metric(m, self.source, i) for i, m in enumerate(self.custom_metrics)
            )
            object.__setattr__(self, "custom_definitions", parsed)

    def enabled(self, switch: str) -> bool:
        """Whether a metric family is switched on (the original's are, the GraphRAG set is not,
        unless the config says otherwise)."""
        metric = _registry.METRICS.get(switch)
        return bool(self.metrics.get(switch, metric.default if metric is not None else True))

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


class _Reader:
    """Typed access to one mapping of the config, with errors that name the key."""

    def __init__(self, data: Any, source: str, where: str) -> None:
        if data is None:
            data = {}
        if not isinstance(data, Mapping):
            raise InputError(
                f"must be a mapping, not {type(data).__name__}", source=source, field=where or None
            )
        self.data = data
        self.source = source
        self.where = where

    def _fail(self, key: str, message: str) -> InputError:
        name = f"{self.where}.{key}" if self.where else key
        return InputError(message, source=self.source, field=name)

    def check_keys(self, allowed: tuple[str, ...]) -> None:
        for key in self.data:
            if key not in allowed:
                raise self._fail(str(key), f"unknown key (known: {', '.join(allowed)})")

    def str_(self, key: str, default: str | None = None) -> str | None:
        value = self.data.get(key, default)
        if value is None or isinstance(value, str):
            return value
        raise self._fail(key, f"must be a string, not {type(value).__name__}")

    def number(self, key: str, default: float | None, *, minimum: float = 0.0) -> float | None:
        value = self.data.get(key, default)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < minimum:
            raise self._fail(key, f"must be a number >= {minimum:g}, not {value!r}")
        return float(value)

    def integer(self, key: str, default: int | None, *, minimum: int = 1) -> int | None:
        value = self.data.get(key, default)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self._fail(key, f"must be a whole number >= {minimum}, not {value!r}")
        return value

    def sub(self, key: str) -> _Reader:
        name = f"{self.where}.{key}" if self.where else key
        return _Reader(self.data.get(key), self.source, name)


def _env(*names: str) -> str | None:
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


_GENERATION_KEYS = (
    "provider",
    "model",
    "temperature",
    "max_tokens",
    "base_url",
    "api_base",
    "api_key",
    "api_version",
)
_EMBEDDING_KEYS = ("provider", "model", "base_url", "api_base", "api_key", "api_version")


def _extra(r: _Reader, known: tuple[str, ...]) -> dict[str, Any]:
    """The keys a block has besides ``known``: passed on to the model call, as graphrag-eval
    does; their values must be plain JSON (they go into each request and its cache key)."""
    extra: dict[str, Any] = {}
    for key, value in r.data.items():
        if key in known:
            continue
        if not isinstance(key, str) or not key.isidentifier():
            raise r._fail(str(key), "must be a parameter name of letters, digits and underscores")
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.8)
        if close:  # a typo of a key qa-eval reads would otherwise be sent to the model
            raise r._fail(key, f"unknown key; did you mean {close[0]!r}?")
        try:
            orjson.dumps(value)
        except TypeError:
            raise r._fail(key, f"must be plain JSON data, not {type(value).__name__}") from None
        extra[key] = value
    return extra


def _generation(r: _Reader) -> GenerationConfig:
    provider = r.str_("provider", "openai") or "openai"
    base_url = r.str_("base_url") or r.str_("api_base")
    api_version: str | None
    if provider == "azure":
        api_key = r.str_("api_key") or _env("AZURE_OPENAI_API_KEY")
        base_url = base_url or _env("AZURE_OPENAI_ENDPOINT")
        api_version = r.str_("api_version") or _env("OPENAI_API_VERSION") or AZURE_API_VERSION
        if not base_url:
            raise r._fail(
                "base_url", "provider azure needs the endpoint (base_url, or AZURE_OPENAI_ENDPOINT)"
            )
    else:
        api_key = r.str_("api_key") or _env("OPENAI_API_KEY")
        base_url = base_url or _env("OPENAI_BASE_URL")
        api_version = r.str_("api_version")
    max_tokens = r.integer("max_tokens", None)
    temperature = r.number("temperature", 0.0) or 0.0
    if temperature > 2.0:
        raise r._fail("temperature", f"must be between 0 and 2, not {temperature:g}")
    return GenerationConfig(
        provider=provider,
        model=r.str_("model", DEFAULT_MODEL) or DEFAULT_MODEL,
        temperature=temperature,
        max_tokens=max_tokens,
        base_url=base_url,
        api_key=api_key,
        api_version=api_version,
        extra=_extra(r, _GENERATION_KEYS),
    )


def _embedding(r: _Reader, generation: GenerationConfig | None) -> EmbeddingConfig:
    if not r.data:
        return EmbeddingConfig()
    provider = r.str_("provider", "openai") or "openai"
    if not provider.strip():
        raise r._fail("provider", "must not be empty")
    # openai and azure go through the official SDK, offline is the bundled model; any other
    # provider name (ollama, cohere, ...) goes through litellm, as in graphrag-eval.
    if provider == "offline":
        return EmbeddingConfig()
    same = generation if generation and generation.provider == provider else None
    api_key = r.str_("api_key") or (same.api_key if same else None)
    if not api_key:
        api_key = _env("AZURE_OPENAI_API_KEY" if provider == "azure" else "OPENAI_API_KEY")
    api_version = r.str_("api_version") or (same.api_version if same else None)
    if provider == "azure" and not api_version:
        # the Azure client needs one; as for the judge, the environment's or the default
        api_version = _env("OPENAI_API_VERSION") or AZURE_API_VERSION
    return EmbeddingConfig(
        provider=provider,
        model=r.str_("model", "text-embedding-3-small") or "text-embedding-3-small",
        base_url=r.str_("base_url") or r.str_("api_base") or (same.base_url if same else None),
        api_key=api_key,
        api_version=api_version,
        extra=_extra(r, _EMBEDDING_KEYS),
    )


_PRICE_KEYS = ("input", "output", "cached_input", "batch_input", "batch_output")


def _prices(r: _Reader) -> dict[str, dict[str, float]]:
    prices: dict[str, dict[str, float]] = {}
    for model in r.data:
        entry = r.sub(str(model))
        entry.check_keys(_PRICE_KEYS)
        prices[str(model)] = {
            "input": entry.number("input", 0.0) or 0.0,
            "output": entry.number("output", 0.0) or 0.0,
        }
        for key in _PRICE_KEYS[2:]:  # optional rates: cached prompt tokens, batch API
            value = entry.number(key, None)
            if value is not None:
                prices[str(model)][key] = value
    return prices


def _switch(top: _Reader, key: str, extra: tuple[str, ...] = ()) -> tuple[bool | None, _Reader]:
    if isinstance(top.data.get(key), bool):  # the short form ``faithfulness: true``
        return top.data[key], _Reader(None, top.source, key)
    block = top.sub(key)
    block.check_keys(("enabled", *extra))
    return _flag(block, "enabled"), block


def _read_prompt(block: _Reader, source: str) -> str | None:
    prompt = block.str_("prompt")
    if prompt is not None and "\n" not in prompt and Path(prompt).suffix in (".md", ".txt"):
        path = (Path(source).parent if source not in ("config", "environment") else Path()) / prompt
        try:
            prompt = path.read_text(encoding="utf-8")
        except OSError as e:
            raise block._fail("prompt", f"cannot read {path}: {e.strerror}") from None
    if prompt is not None:
        try:
            check_prompt(prompt)
        except ValueError as e:
            raise block._fail("prompt", str(e)) from None
    return prompt


def _weights(block: _Reader, key: str) -> dict[str, float] | None:
    if block.data.get(key) is None:
        return None
    sub = block.sub(key)
    sub.check_keys(COMPONENTS)
    weights = {name: sub.number(name, 0.0) or 0.0 for name in sub.data}
    if not any(weights.values()):
        raise block._fail(key, "at least one weight must be > 0")
    return weights


def _weight_list(block: _Reader, key: str, value: Any, names: tuple[str, ...]) -> tuple[float, ...]:
    """``value`` as one weight per name: numbers >= 0, not all 0 (else the field's error)."""
    if (
        not isinstance(value, list)
        or len(value) != len(names)
        or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
        or any(v < 0 for v in value)
        or not any(v > 0 for v in value)
    ):
        raise block._fail(key, f"must be {len(names)} numbers >= 0 ({', '.join(names)}), not all 0")
    return tuple(float(v) for v in value)


def _criteria_weights(block: _Reader, key: str) -> tuple[float, float, float] | None:
    value = block.data.get(key)
    if value is None:
        return None
    names = ("correctness", "completeness", "consistency")
    if isinstance(value, Mapping):
        sub = block.sub(key)
        sub.check_keys(names)
        value = [sub.number(c, 0.0) for c in names]
    return _weight_list(block, key, value, names)  # type: ignore[return-value]


def _cutoffs(block: _Reader, key: str) -> dict[str, float] | None:
    if block.data.get(key) is None:
        return None
    sub = block.sub(key)
    cutoffs = {str(grade): sub.number(str(grade), 0.0) or 0.0 for grade in sub.data}
    if not cutoffs or any(v > 100 for v in cutoffs.values()):
        raise block._fail(key, "must map each grade to a cutoff on 0-100")
    return cutoffs


def _phrases(block: _Reader, key: str) -> tuple[str, ...] | None:
    value = block.data.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(p, str) and p.strip() for p in value):
        raise block._fail(key, "must be a list of non-empty strings")
    return tuple(value)


def _layer(block: _Reader, key: str) -> int | None:
    return block.integer(key, None)


def _flag(block: _Reader, key: str) -> bool | None:
    value = block.data.get(key)
    if value is not None and not isinstance(value, bool):
        raise block._fail(key, "must be true or false")
    return value


def _prompt(block: _Reader, key: str) -> str | None:
    return _read_prompt(block, block.source) if key == "prompt" else block.str_(key)


def _choice(*allowed: str) -> Any:
    """A reader of a string option that must be one of ``allowed``."""

    def read(block: _Reader, key: str) -> str | None:
        value = block.str_(key)
        if value is not None and value not in allowed:
            raise block._fail(key, f"must be one of {', '.join(allowed)}, not {value!r}")
        return value

    return read


def _beta(block: _Reader, key: str) -> float | None:
    value = block.number(key, None)
    if value == 0:
        raise block._fail(key, "must be a number > 0")
    return value


def _unit_interval(block: _Reader, key: str) -> float | None:
    value = block.number(key, None)
    if value is not None and value > 1:
        raise block._fail(key, f"must be a number between 0 and 1, not {value!r}")
    return value


def _two_weights(block: _Reader, key: str) -> tuple[float, float] | None:
    value = block.data.get(key)
    if value is None:
        return None
    return _weight_list(block, key, value, ("factuality", "similarity"))  # type: ignore[return-value]


def _rubrics(block: _Reader, key: str) -> dict[str, str] | None:
    value = block.data.get(key)
    if value is None:
        return None
    if (
        not isinstance(value, Mapping)
        or not value
        or not all(
            isinstance(k, str) and isinstance(v, str) and v.strip() for k, v in value.items()
        )
    ):
        raise block._fail(
            key, "must map each score<N>_description to its criterion (non-empty strings)"
        )
    return dict(value)


CHECKS: dict[str, Any] = {
    "flag": _flag,
    "str": _Reader.str_,
    "layer": _layer,
    "integer": _layer,
    "prompt": _prompt,
    "ragas_weights": _weights,
    "criteria_weights": _criteria_weights,
    "cutoffs": _cutoffs,
    "phrases": _phrases,
    "beta": _beta,
    "unit_interval": _unit_interval,
    "two_weights": _two_weights,
    "rubrics": _rubrics,
    "precision_recall_f1": _choice("precision", "recall", "f1"),
    "low_high": _choice("low", "high"),
    "relevant_irrelevant": _choice("relevant", "irrelevant"),
    "rows_columns": _choice("rows", "columns"),
}
"""The option readers a registry ``Option.check`` names: ``(block, key) -> value or None``."""


def _options() -> dict[str, dict[str, Any]]:
    """The settings each metric block takes besides ``enabled``, with their checks (from the
    registry)."""
    return {
        metric.name: {option.name: CHECKS[option.check] for option in metric.options}
        for metric in _registry.METRICS.values()
        if metric.options
    }


_LLM_KEYS = (
    "generation",
    "embedding",
    "concurrency",
    "timeout",
    "max_attempts",
    "retry_base",
    "prices",
    "relevance_questions",
    "repeats",
)
"""The keys of a config's ``llm`` section."""


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
    top = _Reader(data, source, "")
    blocks = tuple(s for s in SWITCHES if s != "custom")  # custom: ``custom_evaluations``
    top.check_keys(("llm", *blocks, "custom_evaluations"))
    data, examples = _all_examples(data, source)
    top = _Reader(data, source, "")
    llm = top.sub("llm")
    llm.check_keys(_LLM_KEYS)
    generation = _generation(llm.sub("generation")) if llm.data or not data else None
    switches, prompt, options = _metric_blocks(top, blocks)
    custom = _custom_entries(data, source)
    definitions = tuple(parse_custom_metric(entry, source, i) for i, entry in enumerate(custom))
    if data and not llm.data:
        _require_llm(custom, switches, source)
    return EvalConfig(
        generation=generation,
        embedding=_embedding(llm.sub("embedding"), generation),
        concurrency=llm.integer("concurrency", 8) or 8,
        timeout=llm.number("timeout", 60.0, minimum=0.001) or 60.0,
        max_attempts=llm.integer("max_attempts", 6) or 6,
        retry_base=llm.number("retry_base", 0.5) or 0.0,
        prices=_prices(llm.sub("prices")),
        metrics=switches,
        custom_metrics=tuple(dict(m) for m in custom),
        custom_definitions=definitions,
        answer_correctness_prompt=prompt,
        relevance_questions=llm.integer("relevance_questions", 3) or 3,
        repeats=_repeats(llm),
        options=options,
        source=source,
        examples=examples,
    )


EXAMPLE_KEYS = (
    "examples",
    "examples_from",
    "examples_count",
    "examples_pick",
    "examples_seed",
    "examples_metric",
)
"""The keys of a metric's few-shot examples (``answer_correctness`` and custom metrics)."""
EXAMPLE_METRICS = ("answer_correctness",)
"""The metric blocks whose prompt takes examples (besides every custom metric)."""


def _all_examples(data: Any, source: str) -> tuple[Any, dict[str, tuple[Example, ...]]]:
    """The config without its ``examples*`` keys, and the examples they name, by metric."""
    if not isinstance(data, Mapping):
        return data, {}
    found: dict[str, tuple[Example, ...]] = {}
    data = dict(data)
    for key in EXAMPLE_METRICS:
        block = data.get(key)
        if isinstance(block, Mapping) and any(k in block for k in EXAMPLE_KEYS):
            read = _examples(_Reader(block, source, key), source)
            if read:
                found[key] = read
            data[key] = {k: v for k, v in block.items() if k not in EXAMPLE_KEYS}
    custom = data.get("custom_evaluations")
    if isinstance(custom, list):
        entries = []
        for i, entry in enumerate(custom):
            if isinstance(entry, Mapping) and any(k in entry for k in EXAMPLE_KEYS):
                read = _examples(_Reader(entry, source, f"custom_evaluations[{i}]"), source)
                if read:
                    found[str(entry.get("name"))] = read
                entry = {k: v for k, v in entry.items() if k not in EXAMPLE_KEYS}
            entries.append(entry)
        data["custom_evaluations"] = entries
    return data, found


def _examples(block: _Reader, source: str) -> tuple[Example, ...]:
    """The examples one block names: ``examples`` (a labels file), ``examples_from`` (a results
    file, or [reference, responses]), ``examples_count`` (4), ``examples_pick`` (balanced),
    ``examples_seed`` (0), ``examples_metric`` (the only metric labelled)."""
    from .agreement.examples import PICKS, load_examples

    labels = block.str_("examples")
    if labels is None:
        raise block._fail("examples", "a labels file is required with the other examples_ keys")
    sources = block.data.get("examples_from")
    if isinstance(sources, str):
        sources = [sources]
    if (
        not isinstance(sources, list)
        or not 1 <= len(sources) <= 2
        or not all(isinstance(s, str) and s for s in sources)
    ):
        raise block._fail(
            "examples_from",
            "required: a results file, or [reference file, responses file] (the labelled texts)",
        )
    pick = block.str_("examples_pick", "balanced") or "balanced"
    if pick not in PICKS:
        raise block._fail("examples_pick", f"must be one of {', '.join(PICKS)}, not {pick!r}")
    count = block.integer("examples_count", 4)
    seed = block.integer("examples_seed", 0, minimum=0) if "examples_seed" in block.data else 0
    base = Path(source).parent if source not in ("config", "environment") else Path()
    try:
        return load_examples(
            labels,
            sources,
            metric=block.str_("examples_metric"),
            count=count or 4,
            pick=pick,
            seed=seed or 0,
            base=base,
        )
    except OSError as e:
        raise block._fail("examples", f"cannot read {e.filename}: {e.strerror}") from None


def _metric_blocks(
    top: _Reader, blocks: tuple[str, ...]
) -> tuple[dict[str, bool], str | None, dict[str, dict[str, Any]]]:
    """(the switches set, the ``answer_correctness`` prompt, the options set per metric) of a
    config's metric blocks."""
    switches: dict[str, bool] = {}
    prompt = None
    options: dict[str, dict[str, Any]] = {}
    all_options = _options()
    for key in blocks:
        checks = all_options.get(key, {})
        value, block = _switch(top, key, tuple(checks))
        if value is not None:
            switches[key] = value
        read = {name: check(block, name) for name, check in checks.items()}
        if key == "answer_correctness":  # kept apart: its text is not a signature option
            prompt = read.pop("prompt", None)
        chosen = {name: v for name, v in read.items() if v is not None}
        if chosen:
            options[key] = chosen
    return switches, prompt, options


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


MAX_REPEATS = 100
"""The most times a metric may be asked per question (``llm.repeats``)."""


def _repeats(llm: _Reader) -> int:
    repeats = llm.integer("repeats", 1) or 1
    if repeats > MAX_REPEATS:
        raise llm._fail("repeats", f"must be at most {MAX_REPEATS}, not {repeats}")
    return repeats


def default_config() -> EvalConfig:
    """No config file: the judge is gpt-4o-mini on OpenAI when ``OPENAI_API_KEY`` is set."""
    if _env("OPENAI_API_KEY"):
        return parse_config({}, "environment")
    return EvalConfig(source="environment")


def load_config(path: str | os.PathLike[str] | None) -> EvalConfig:
    """Read a YAML config file (or, without one, the environment)."""
    if path is None:
        return default_config()
    from .io.files import read_data

    return parse_config(read_data(path), str(path))


def as_config(config: EvalConfig | str | os.PathLike[str] | Mapping[str, Any] | None) -> EvalConfig:
    """The config a run uses: an ``EvalConfig`` as is, a mapping parsed, a path (or ``None``: the
    environment) loaded."""
    if isinstance(config, EvalConfig):
        return config
    if isinstance(config, Mapping):
        return parse_config(config)
    return load_config(config)
