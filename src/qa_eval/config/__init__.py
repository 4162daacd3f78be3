"""Judge and metric configuration: the original's YAML (``llm.generation``, ``llm.embedding``) plus
qa-eval's own keys (concurrency, retries, cache, prices, metric switches, custom metrics).

A config is plain data: loading it reads the file and the environment, and checks every key, but
creates no client. API keys are kept only in memory, never written anywhere; ``public()`` is the
form that goes into a run signature.

The package: ``model`` (``EvalConfig``, the switches), ``reader`` (typed access to a mapping),
``llm`` (the ``llm`` section), ``blocks`` (the metric blocks and their options), ``examples``
(few-shot examples) and ``load`` (``parse_config``, ``load_config``, ``as_config``).
"""

from typing import TYPE_CHECKING

from ..extras import lazy_face

if TYPE_CHECKING:
    from .blocks import CHECKS, metric_blocks
    from .examples import EXAMPLE_KEYS, EXAMPLE_METRICS, all_examples
    from .llm import (
        LLM_KEYS,
        MAX_REPEATS,
        read_embedding,
        read_generation,
        read_prices,
        read_repeats,
    )
    from .load import as_config, default_config, load_config, parse_config
    from .model import GRAPHRAG_SWITCHES, GROUPS, OFFLINE_SWITCHES, SWITCHES, EvalConfig
    from .reader import Reader, env

_NAMES = {
    "CHECKS": "blocks",
    "EXAMPLE_KEYS": "examples",
    "EXAMPLE_METRICS": "examples",
    "EvalConfig": "model",
    "GRAPHRAG_SWITCHES": "model",
    "GROUPS": "model",
    "LLM_KEYS": "llm",
    "MAX_REPEATS": "llm",
    "OFFLINE_SWITCHES": "model",
    "Reader": "reader",
    "SWITCHES": "model",
    "all_examples": "examples",
    "as_config": "load",
    "default_config": "load",
    "env": "reader",
    "load_config": "load",
    "metric_blocks": "blocks",
    "parse_config": "load",
    "read_embedding": "llm",
    "read_generation": "llm",
    "read_prices": "llm",
    "read_repeats": "llm",
}

__all__ = [
    "CHECKS",
    "EXAMPLE_KEYS",
    "EXAMPLE_METRICS",
    "GRAPHRAG_SWITCHES",
    "GROUPS",
    "LLM_KEYS",
    "MAX_REPEATS",
    "OFFLINE_SWITCHES",
    "SWITCHES",
    "EvalConfig",
    "Reader",
    "all_examples",
    "as_config",
    "default_config",
    "env",
    "load_config",
    "metric_blocks",
    "parse_config",
    "read_embedding",
    "read_generation",
    "read_prices",
    "read_repeats",
]
__getattr__, __dir__ = lazy_face(__name__, _NAMES)
