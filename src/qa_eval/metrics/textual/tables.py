"""Tables compared cell by cell, as ragas 0.4.3's ``DataCompyScore`` compares them.

``reference`` and ``response`` are CSV texts, read with ``pandas.read_csv`` (header row first)
and compared with datacompy's pandas ``Compare(reference, response, on_index=True)``: rows are
paired by their position, columns by their lower-cased name, values exactly (no tolerance, spaces
and case significant, two missing values equal).

* ``mode="rows"``: ``matched = compare.count_matching_rows()`` (paired rows equal in every shared
  column); ``recall = matched / reference rows``, ``precision = matched / response rows``.
* ``mode="columns"``: ``matched`` = shared columns with no unequal value over the paired rows;
  ``recall = matched / reference columns``, ``precision = matched / response columns``.
* Each ratio is 0 when its denominator is; ``metric`` picks ``precision``, ``recall`` or ``f1 =
  2PR / (P + R)`` (0 when ``P + R`` is 0).
* A text that pandas cannot read (an empty one included) gives NaN, as in ragas, with the parse
  error as the reason and in ``details["error"]``: the caller decides how to record it.

datacompy (before 1.0, which renamed ``Compare``; ragas 0.4.3 imports the old name) and pandas
come with the ``ragas-metrics`` extra and are imported when the function is called.
"""

from __future__ import annotations

import math
from io import StringIO
from typing import Any, Literal

from ...extras import require
from .strings import Scored

__all__ = ["datacompy_score"]


def _compare_class() -> Any:
    """datacompy's pandas ``Compare`` (``datacompy.core`` since 0.14, the package before)."""
    datacompy = require("datacompy", "DataCompyScore")
    try:
        return require("datacompy.core", "DataCompyScore").Compare
    except ImportError:
        return datacompy.Compare


def _ratio(matched: int, total: int) -> float:
    return matched / total if total > 0 else 0.0


def datacompy_score(
    reference: str,
    response: str,
    mode: Literal["rows", "columns"] = "rows",
    metric: Literal["precision", "recall", "f1"] = "f1",
) -> Scored:
    """ragas' ``DataCompyScore`` of a CSV ``response`` against a CSV ``reference``."""
    if mode not in ("rows", "columns"):
        raise ValueError("mode must be either 'rows' or 'columns'")
    if metric not in ("precision", "recall", "f1"):
        raise ValueError("metric must be either 'precision', 'recall', or 'f1'")
    if not isinstance(reference, str):
        raise ValueError("reference must be a CSV string")
    if not isinstance(response, str):
        raise ValueError("response must be a CSV string")
    pandas = require("pandas", "DataCompyScore")
    compare_class = _compare_class()
    try:
        expected = pandas.read_csv(StringIO(reference))
        actual = pandas.read_csv(StringIO(response))
    except Exception as error:  # whatever pandas raises on a bad CSV, as ragas catches it
        return Scored(math.nan, f"CSV parsing error: {error}", {"error": str(error)})
    compare = compare_class(expected, actual, on_index=True)
    if mode == "rows":
        matched = int(compare.count_matching_rows())
        recall = _ratio(matched, expected.shape[0])
        precision = _ratio(matched, actual.shape[0])
    else:
        matched = sum(1 for column in compare.column_stats if column["unequal_cnt"] == 0)
        recall = _ratio(matched, expected.shape[1])
        precision = _ratio(matched, actual.shape[1])
    if metric == "precision":
        value = precision
    elif metric == "recall":
        value = recall
    else:
        value = 0.0 if precision + recall == 0 else 2 * (precision * recall) / (precision + recall)
    return Scored(
        float(value),
        f"Mode: {mode}, Precision: {precision:.4f}, Recall: {recall:.4f}",
        {"matched": matched, "precision": precision, "recall": recall},
    )
