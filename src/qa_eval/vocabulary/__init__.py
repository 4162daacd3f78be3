"""The metric vocabulary every layer reads: what a metric family is (``model``), the registry of
every family with its keys, directions and scales (``registry``), and what the registry answers
(``lookup``: a key's direction, error keys, the aggregated and headline keys, ``name@k``).

It imports nothing of qa-eval's. Modules inside qa-eval import a name from the module that defines
it; this face names them for users, each imported when first used.
"""

from typing import TYPE_CHECKING

from ..extras import lazy_face

if TYPE_CHECKING:
    from .lookup import (
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
    from .model import Key, Metric, Option
    from .registry import METRICS, RANKING

NAMES = {
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
"""Each name of the face -> its module in this package (the ``qa_eval.metrics`` face offers
the same names under their old path)."""

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

__getattr__, __dir__ = lazy_face(__name__, NAMES)
