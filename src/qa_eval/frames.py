"""Results and aggregates as pandas DataFrames, and an HTML summary of results for Jupyter.

``results_to_pandas(results)``: one row per question. The columns are the identity of the
question (``template_id``, ``question_id``, ``question_text``, ``status``, ``error``), the
reference and actual answers, then one numeric column per metric that some question has (in the
order of ``qa_eval.aggregate.METRICS``: scores, costs, tokens, time), then the other keys in the
order they first appear (reasons, grades, custom metric outputs), and last the nested values
(``reference_steps``, ``actual_steps``, ``step_errors``, ...) as JSON text. A metric a question
does not have is NaN, pandas' marker of a missing value, so ``df["answer_f1"].mean()`` skips it
as the aggregates do. The run signature, when the results carry one, is in ``df.attrs``.

``aggregates_to_pandas(aggregates)``: one row per template, then ``micro`` and ``macro`` (and one
per tag value, e.g. each ``question_type``), indexed by (``group``, ``name``); the columns are
(metric, statistic) pairs: ``("steps_score", "mean")``, ``("steps_score", "n")``, ...,
``("samples", "errors")``, ``("samples", "successes")`` and the label counts such as
``("answer_class", "CORRECT")``. A statistic computed from no value (``n == 0``, which the
aggregates write as 0) is NaN here; the step counters are left out.

pandas is an optional extra (``pip install 'qa-eval[pandas]'``), imported only when a frame is
built. ``results_html`` (and ``ResultsSummary`` around it) needs nothing: it escapes every value
read from the results, which are untrusted text.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

from .aggregate import (
    CATEGORIES,
    METRICS,
    SCORES,
    as_float,
    compute_aggregates,
    is_error,
    is_number,
)
from .extras import require

__all__ = ["ResultsSummary", "aggregates_to_pandas", "results_html", "results_to_pandas"]

IDENTITY = ("template_id", "question_id", "question_text", "status", "error")
ANSWERS = ("reference_answer", "actual_answer")
STATISTICS = ("sum", "mean", "median", "min", "max", "n", "skipped")
_NAN = float("nan")


def _pandas(feature: str) -> Any:
    return require("pandas", feature)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _number(value: Any) -> float:
    """A number as a float, NaN (missing) for anything else and for an int beyond the float
    range."""
    if not is_number(value):
        return _NAN
    try:
        return float(value)
    except OverflowError:
        return _NAN


def result_columns(results: Iterable[Mapping[str, Any]]) -> tuple[list[str], list[str], set[str]]:
    """(all columns in order, the metric columns, the columns holding nested values)."""
    seen: dict[str, None] = {}
    nested: set[str] = set()
    for result in results:
        for key, value in result.items():
            seen.setdefault(key, None)
            if isinstance(value, (dict, list, tuple)):
                nested.add(key)
    metrics = [m for m in METRICS if m in seen and m not in nested]
    first = [k for k in (*IDENTITY, *ANSWERS) if k in seen and k not in nested]
    placed = {*first, *metrics}
    others = [k for k in seen if k not in placed and k not in nested]
    last = [k for k in seen if k in nested]
    return [*first, *metrics, *others, *last], metrics, nested


def results_to_pandas(results: Iterable[Mapping[str, Any]]) -> Any:
    """Per-question results as a DataFrame: one row per question, a numeric column per metric,
    nested values (steps) as JSON text."""
    pd = _pandas("results_to_pandas")
    rows = list(results)
    for position, result in enumerate(rows):
        if not isinstance(result, Mapping):
            raise TypeError(f"result [{position}] must be a mapping, got {type(result).__name__}")
    columns, metrics, nested = result_columns(rows)
    metric_set = set(metrics)
    data: dict[str, list[Any]] = {}
    for column in columns:
        if column in metric_set:
            data[column] = [_number(r.get(column)) for r in rows]
        elif column in nested:
            data[column] = [None if column not in r else _json(r[column]) for r in rows]
        else:
            data[column] = [r.get(column) for r in rows]
    frame = pd.DataFrame(data, columns=columns)
    signature = getattr(results, "signature", None)
    if isinstance(signature, Mapping):
        frame.attrs["signature"] = dict(signature)
    return frame


def _statistics(block: Mapping[str, Any]) -> dict[str, float]:
    n = block.get("n")
    out: dict[str, float] = {}
    for statistic in STATISTICS:
        if statistic not in block:
            continue
        value = block[statistic]
        if statistic not in ("n", "skipped") and n == 0:
            value = _NAN  # the aggregates write 0 for a statistic of no values
        out[statistic] = _number(value)
    return out


def _aggregate_row(summary: Mapping[str, Any]) -> dict[tuple[str, str], float]:
    row: dict[tuple[str, str], float] = {}
    if "number_of_error_samples" in summary:
        row["samples", "errors"] = _number(summary["number_of_error_samples"])
    if "number_of_success_samples" in summary:
        row["samples", "successes"] = _number(summary["number_of_success_samples"])
    for key, block in summary.items():
        if not isinstance(block, Mapping) or key == "steps":
            continue
        if key in CATEGORIES or isinstance(block.get("counts"), Mapping):
            for label, count in (block.get("counts") or {}).items():
                row[key, str(label)] = _number(count)
            row[key, "n"] = _number(block.get("n"))
            continue
        for statistic, value in _statistics(block).items():
            row[key, statistic] = value
    return row


def aggregates_to_pandas(aggregates: Mapping[str, Any], tags: bool = True) -> Any:
    """Aggregates as a DataFrame: rows per template, micro, macro (and per tag value), columns
    (metric, statistic)."""
    pd = _pandas("aggregates_to_pandas")
    if not isinstance(aggregates, Mapping) or not isinstance(aggregates.get("micro"), Mapping):
        raise TypeError("aggregates must be the mapping compute_aggregates returns")
    index: list[tuple[str, Any]] = []
    rows: list[dict[tuple[str, str], float]] = []
    for template_id, summary in (aggregates.get("per_template") or {}).items():
        index.append(("template", template_id))
        rows.append(_aggregate_row(summary))
    index.append(("micro", "all"))
    rows.append(_aggregate_row(aggregates["micro"]))
    index.append(("macro", "all"))
    rows.append(_aggregate_row(aggregates.get("macro") or {}))
    if tags:
        for tag, groups in (aggregates.get("per_tag") or {}).items():
            for value, summary in groups.items():
                index.append((f"tag:{tag}", value))
                rows.append(_aggregate_row(summary))
    columns: dict[tuple[str, str], None] = {}
    for row in rows:
        columns.update(dict.fromkeys(row))
    order = {name: i for i, name in enumerate(("samples", *METRICS))}
    seen = {column: i for i, column in enumerate(columns)}
    ranked = sorted(columns, key=lambda c: (order.get(c[0], len(order)), seen[c]))
    frame = pd.DataFrame(
        [[row.get(c, _NAN) for c in ranked] for row in rows],
        index=pd.MultiIndex.from_tuples(index, names=["group", "name"]),
        columns=pd.MultiIndex.from_tuples(ranked, names=["metric", "statistic"]),
    )
    return frame


# --- HTML for Jupyter ------------------------------------------------------------------------


def _cell(value: Any, limit: int = 80) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        text = "" if math.isnan(value) else f"{value:.4g}"
    elif isinstance(value, (dict, list)):
        text = _json(value)
    else:
        text = str(value)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return html.escape(text)


def results_html(results: Iterable[Mapping[str, Any]], max_rows: int = 20) -> str:
    """An HTML summary of results: counts, the micro and macro means of the scores, and the
    first ``max_rows`` questions with their scores; every value is escaped."""
    rows = [r for r in results if isinstance(r, Mapping)]
    aggregates = compute_aggregates(rows) if rows else {"micro": {}, "macro": {}}
    micro, macro = aggregates["micro"], aggregates["macro"]
    errors = sum(1 for r in rows if is_error(r))
    scores = [m for m in SCORES if isinstance(micro.get(m), Mapping) and micro[m].get("n")]
    extra = [m for m in ("total_tokens", "elapsed_sec") if any(m in r for r in rows)]
    parts = [
        '<div class="qa-eval-results">',
        f"<p><b>{len(rows)} question{'s' if len(rows) != 1 else ''}</b>, "
        f"{errors} error{'s' if errors != 1 else ''}</p>",
    ]
    if scores:
        parts.append("<table><thead><tr><th>metric</th><th>micro mean</th><th>n</th>"
                     "<th>macro mean</th></tr></thead><tbody>")  # fmt: skip
        for metric in scores:
            macro_mean = (macro.get(metric) or {}).get("mean")
            parts.append(
                f"<tr><td>{_cell(metric)}</td><td>{_cell(as_float(micro[metric]['mean']))}</td>"
                f"<td>{_cell(micro[metric]['n'])}</td>"
                f"<td>{_cell(as_float(macro_mean))}</td></tr>"
            )
        parts.append("</tbody></table>")
    columns = ["template_id", "question_id", "status", *scores, *extra]
    parts.append("<table><thead><tr>")
    parts += [f"<th>{_cell(c)}</th>" for c in columns]
    parts.append("</tr></thead><tbody>")
    for result in rows[:max_rows]:
        cells = []
        for column in columns:
            value = result.get(column)
            if column == "status" and is_error(result):
                value = f"error: {result.get('error', '')}"
            cells.append(f"<td>{_cell(value)}</td>")
        parts.append("<tr>" + "".join(cells) + "</tr>")
    parts.append("</tbody></table>")
    if len(rows) > max_rows:
        parts.append(
            f"<p>… and {len(rows) - max_rows} more; <code>qa_eval.frames.results_to_pandas"
            "(results)</code> has every question.</p>"
        )
    parts.append("</div>")
    return "".join(parts)


class ResultsSummary:
    """Results shown as an HTML summary in Jupyter (``ResultsSummary(results)`` as the last
    expression of a cell), and as a DataFrame with ``to_pandas()``."""

    def __init__(self, results: Iterable[Mapping[str, Any]], max_rows: int = 20) -> None:
        self.results = list(results)
        self.signature = getattr(results, "signature", None)
        self.max_rows = max_rows

    def _repr_html_(self) -> str:
        return results_html(self.results, self.max_rows)

    def __repr__(self) -> str:
        errors = sum(1 for r in self.results if is_error(r))
        count = len(self.results)
        return (
            f"<ResultsSummary: {count} question{'' if count == 1 else 's'}, "
            f"{errors} error{'' if errors == 1 else 's'}>"
        )

    def to_pandas(self) -> Any:
        """One row per question (``results_to_pandas``)."""
        frame = results_to_pandas(self.results)
        if isinstance(self.signature, Mapping):
            frame.attrs["signature"] = dict(self.signature)
        return frame
