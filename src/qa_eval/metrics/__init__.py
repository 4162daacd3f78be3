"""What is measured: the metric families, each a set of pure functions with a thin async entry
point that ``run.score`` schedules from the registry (``qa_eval.vocabulary``).

One package per family: ``answer`` (the answer against the question and the reference answer),
``retrieval`` (the retrieved contexts and their ranking), ``agents`` (tool calls, trajectories,
conversations, repeated trials), ``ragas`` (ragas' LLM metrics and the registry's entry points of
ragas' metrics), ``textual`` (texts compared without a judge); ``output`` is the record they all
return, ``custom`` / ``definitions`` the config's custom metrics, ``collections`` ragas' API over
these engines.

The registry's names (``METRICS``, ``direction``, ``error_keys``, ...) live in
``qa_eval.vocabulary``, the layer every other layer reads; this face still offers them under
their old path for users' code, each imported when first used.
"""

from typing import TYPE_CHECKING

from ..extras import lazy_face

if TYPE_CHECKING:
    from ..vocabulary.lookup import (
        RECORD_FIELDS,
        aggregated_keys,
        always_present_keys,
        categories,
        describe_metrics,
        direction,
        error_keys,
        groups,
        headline_keys,
        key_info,
        parse_at_k,
        reserved,
        step_keys,
        switches,
    )
    from ..vocabulary.model import Key, Metric, Option
    from ..vocabulary.registry import METRICS, RANKING

_VOCABULARY = {
    "METRICS": "registry",
    "RANKING": "registry",
    "RECORD_FIELDS": "lookup",
    "Key": "model",
    "Metric": "model",
    "Option": "model",
    "aggregated_keys": "lookup",
    "always_present_keys": "lookup",
    "categories": "lookup",
    "describe_metrics": "lookup",
    "direction": "lookup",
    "error_keys": "lookup",
    "groups": "lookup",
    "headline_keys": "lookup",
    "key_info": "lookup",
    "parse_at_k": "lookup",
    "reserved": "lookup",
    "step_keys": "lookup",
    "switches": "lookup",
}

_NAMES = {name: f"qa_eval.vocabulary.{module}" for name, module in _VOCABULARY.items()}
"""Each name of the face -> the module that defines it."""

__all__ = [
    "METRICS",
    "RANKING",
    "RECORD_FIELDS",
    "Key",
    "Metric",
    "Option",
    "aggregated_keys",
    "always_present_keys",
    "categories",
    "describe_metrics",
    "direction",
    "error_keys",
    "groups",
    "headline_keys",
    "key_info",
    "parse_at_k",
    "reserved",
    "step_keys",
    "switches",
]

__getattr__, __dir__ = lazy_face(__name__, _NAMES)
