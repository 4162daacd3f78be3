"""A self-contained HTML report of one or more evaluation runs.

``build_report(runs)`` returns the text of one HTML file that opens offline: plotly.js (from the
``plotly`` package) is inlined once, every figure is built with ``plotly.graph_objects`` and drawn
with ``Plotly.newPlot``; a few lines of plain JavaScript filter and sort the per-question table.
Nothing is loaded from the network.

The report is generic: every numeric per-question key (and every numeric key of an actual step)
is a metric, every list of mappings in a result (``faithfulness_statements`` and the like) is
shown as a table of claims and verdicts, every ``*_reason`` as a judge reason, every ``*_error``
as an error, and a string key with few distinct short values (``answer_class``,
``factual_accuracy_grade``, ``status``) as a label whose counts are charted.

All text from results, signatures and comparisons is untrusted: it is HTML-escaped where it goes
into the page, escaped again before plotly (which reads a few HTML tags in labels) sees it, and
the data given to the page's script is JSON with ``<``, ``>``, ``&``, U+2028 and U+2029 escaped,
so that no value can end the ``<script>`` element.
"""

from __future__ import annotations

import html
import json
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from .aggregate import SCORES, describe, empty_result, is_error
from .aggregate import is_finite_number as _is_number
from .extras import require

__all__ = ["Run", "build_report", "load_run", "run_labels", "write_report"]

DEFAULT_TITLE = "qa-eval report"

# Keys that are numbers but not metrics, or that the report shows in their own place.
_NOT_METRICS = frozenset({"template_id", "question_id"})

_TEXT_KEYS = (
    "template_id",
    "question_id",
    "question_text",
    "reference_answer",
    "actual_answer",
    "status",
    "error",
    "reference_steps",
    "actual_steps",
)
_STEP_STRUCTURE = frozenset({"name", "id", "args", "output", "status", "error"})
# Shown first, in this order, when present; other metrics follow in order of first appearance.
_PREFERRED = SCORES
_USAGE_ORDER = ("input_tokens", "output_tokens", "total_tokens", "elapsed_sec", "llm_cost")
# Costs, token counts, times and counts: charted, but not scores (no 0-1 histogram range).
_USAGE = re.compile(r"(cost|tokens|_sec|_seconds|_ms|_count|_calls)$")
# A label: a string key with at most this many distinct values, each at most this long.
_LABEL_MAX_VALUES = 12
_LABEL_MAX_LENGTH = 40
_TRUNCATE = 2000
# Colours of common labels (answer_class, status), so that they read the same in every chart.
_LABEL_COLORS = {
    "CORRECT": "#54a24b",
    "SUCCESS": "#54a24b",
    "WRONG": "#e45756",
    "ERROR": "#e45756",
    "DON'T KNOW": "#9d9d9d",
}
_COLORS = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#ff9da6")


@dataclass(frozen=True)
class Run:
    """One evaluation run: a label, its per-question results and its signature (if known)."""

    label: str
    results: Sequence[Any]
    signature: Mapping[str, Any] | None = None

    @classmethod
    def of(cls, label: str, results: Sequence[Any]) -> Run:
        """A run from what ``run_evaluation`` returns (its ``signature`` attribute, if any)."""
        return cls(label, results, getattr(results, "signature", None))


RunLike = Run | Sequence[Any]


def run_labels(paths: Sequence[str | os.PathLike[str]]) -> list[str]:
    """A label per results file: its name without extension, or its path when two names clash."""
    stems = [Path(p).stem for p in paths]
    return [s if stems.count(s) == 1 else str(p) for s, p in zip(stems, paths)]


def load_run(path: str | os.PathLike[str], label: str | None = None) -> Run:
    """Read a results file and, when it is there, the ``.signature.yaml`` beside it."""
    from .io import read_data, read_results, signature_path

    results = read_results(path)
    sig_file = signature_path(path)
    signature = read_data(sig_file) if sig_file.is_file() else None
    if signature is not None and not isinstance(signature, Mapping):
        signature = {"signature": signature}
    return Run(label if label is not None else Path(path).stem, results, signature)


def write_report(
    paths: Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    *,
    labels: Sequence[str] | None = None,
    comparison: Mapping[str, Any] | None = None,
    title: str = DEFAULT_TITLE,
) -> Path:
    """Read result files (each with its signature, if beside it) and write the HTML report.

    Runs are labelled by their file names without extension, or by their paths when two names
    are the same, unless ``labels`` are given.
    """
    if labels is not None and len(labels) != len(paths):
        raise ValueError(f"{len(labels)} labels for {len(paths)} result files")
    if labels is None:
        labels = run_labels(paths)
    runs = [load_run(p, label) for p, label in zip(paths, labels)]
    target = Path(out)
    target.write_text(build_report(runs, comparison, title), encoding="utf-8")
    return target


# ---------------------------------------------------------------------------------------------
# Formatting and escaping


def _e(value: Any) -> str:
    """HTML-escaped text of any value (None as an empty string)."""
    return html.escape("" if value is None else str(value), quote=True)


def _fmt(value: Any) -> str:
    """A number for a table: integers as they are, floats to about three significant digits."""
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}" if abs(value) >= 10_000 else str(value)
    if not math.isfinite(value):
        return str(value)
    if value == 0:
        return "0"
    if value.is_integer() and abs(value) < 1e15:
        return f"{int(value):,}" if abs(value) >= 10_000 else str(int(value))
    if abs(value) >= 100:
        return f"{value:,.1f}"
    if abs(value) >= 1:
        return f"{value:.3f}".rstrip("0").rstrip(".")
    return f"{value:.3g}"


def _truncate(text: str, limit: int = _TRUNCATE) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def script_json(data: Any) -> str:
    """JSON that is safe inside a ``<script>`` element: ``<``, ``>``, ``&``, U+2028 and U+2029
    are written as ``\\uXXXX`` escapes (valid JSON, and no ``</script>`` or ``<!--`` can form)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return (
        text.replace("&", "\\u0026")
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _plot_text(value: Any) -> str:
    """Text for plotly labels: plotly reads some HTML tags (``<a href>``, ``<b>``) in labels
    and decodes entities, so escaping shows the text as it is and makes no tag or link."""
    return html.escape(str(value), quote=False)


# ---------------------------------------------------------------------------------------------
# Collecting metrics from results


def _is_usage(metric: str) -> bool:
    return bool(_USAGE.search(metric))


def _records(results: Iterable[Any]) -> list[Mapping[str, Any]]:
    return [r for r in results if isinstance(r, Mapping)]


def _template(result: Mapping[str, Any]) -> str:
    value = result.get("template_id")
    return "(no template)" if value is None else str(value)


def _actual_steps(result: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    steps = result.get("actual_steps")
    if not isinstance(steps, list):
        return []
    return [s for s in steps if isinstance(s, Mapping)]


def _reference_steps(result: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The reference steps, flattened over their groups."""
    groups = result.get("reference_steps")
    out: list[Mapping[str, Any]] = []
    if not isinstance(groups, list):
        return out
    for group in groups:
        items = group if isinstance(group, list) else [group]
        out.extend(s for s in items if isinstance(s, Mapping))
    return out


def _question_metrics(result: Mapping[str, Any]) -> dict[str, float]:
    return {
        k: v
        for k, v in result.items()
        if isinstance(k, str) and k not in _NOT_METRICS and _is_number(v)
    }


def _step_metric_name(key: str, top_level: set[str]) -> str:
    return f"step.{key}" if key in top_level else key


@dataclass
class _RunStats:
    """What the report needs of one run, computed once."""

    run: Run
    records: list[Mapping[str, Any]]
    by_template: dict[str, list[Mapping[str, Any]]]  # in the order templates first appear
    # metric -> template -> values; "" is every question of the run
    values: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    step_metrics: set[str] = field(default_factory=set)

    def add(self, metric: str, template: str, value: float) -> None:
        per_template = self.values.setdefault(metric, {})
        per_template.setdefault(template, []).append(value)
        per_template.setdefault("", []).append(value)


def _collect(run: Run) -> _RunStats:
    records = _records(run.results)
    by_template: dict[str, list[Mapping[str, Any]]] = {}
    for result in records:
        by_template.setdefault(_template(result), []).append(result)
    stats = _RunStats(run, records, by_template)
    metrics = [_question_metrics(r) for r in records]
    top_level = {k for found in metrics for k in found}
    for result, found in zip(records, metrics):
        template = _template(result)
        for metric, value in found.items():
            stats.add(metric, template, value)
        for step in _actual_steps(result):
            for key, value in step.items():
                if isinstance(key, str) and key not in _STEP_STRUCTURE and _is_number(value):
                    name = _step_metric_name(key, top_level)
                    stats.step_metrics.add(name)
                    stats.add(name, template, value)
    return stats


def _order_metrics(names: Iterable[str]) -> list[str]:
    seen = list(dict.fromkeys(names))
    preferred = [m for m in _PREFERRED if m in seen]
    usage_known = [m for m in _USAGE_ORDER if m in seen]
    rest = [m for m in seen if m not in preferred and m not in usage_known]
    scores = [m for m in rest if not _is_usage(m)]
    usage = [m for m in rest if _is_usage(m)]
    return [*preferred, *scores, *usage_known, *usage]


def _labels(records: Iterable[Mapping[str, Any]]) -> list[str]:
    """String keys with few distinct short values: answer_class, grades, status."""
    values: dict[str, set[str]] = {}
    rejected: set[str] = set()
    for result in records:
        for key, value in result.items():
            if not isinstance(key, str) or key in rejected:
                continue
            if key in _TEXT_KEYS and key != "status":
                continue
            if key.endswith(("_reason", "_error", "_phrase")) or key in _NOT_METRICS:
                continue
            if not isinstance(value, str) or len(value) > _LABEL_MAX_LENGTH:
                rejected.add(key)
                values.pop(key, None)
                continue
            seen = values.setdefault(key, set())
            seen.add(value)
            if len(seen) > _LABEL_MAX_VALUES:
                rejected.add(key)
                values.pop(key, None)
    return [k for k in values if k not in rejected]


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def _describe(values: Sequence[float]) -> dict[str, Any]:
    return describe(list(values))


# ---------------------------------------------------------------------------------------------
# Figures


class _Figures:
    """Plotly figures built with plotly.graph_objects, kept as plain JSON for the page."""

    def __init__(self) -> None:
        import plotly.io as pio

        self.figures: dict[str, Any] = {}
        # One template for every figure, set by the page: a template in each figure would add
        # about 10 kB to each, and applying it to each in Python is slow.
        self.template: Any = json.loads(pio.json.to_json_plotly(pio.templates["plotly_white"]))

    def add(self, fig: Any) -> str:
        data = json.loads(fig.to_json())
        data.get("layout", {}).pop("template", None)
        chart_id = f"chart-{len(self.figures) + 1}"
        self.figures[chart_id] = data
        return (
            f'<div class="chart" id="{chart_id}" data-chart="{chart_id}" role="img" '
            f'aria-label="chart"></div>'
        )


def _layout(title: str, **extra: Any) -> dict[str, Any]:
    layout: dict[str, Any] = {
        "title": {"text": _plot_text(title), "font": {"size": 14}},
        "template": {},  # the page applies one shared template (see _Figures)
        "height": 320,
        "margin": {"l": 55, "r": 20, "t": 60, "b": 50},
        "legend": {"orientation": "h", "x": 1, "xanchor": "right", "y": 1.02, "yanchor": "bottom"},
        "colorway": list(_COLORS),
    }
    layout.update(extra)
    return layout


def _bar_figure(go: Any, metric: str, stats: Sequence[_RunStats], templates: Sequence[str]) -> Any:
    fig = go.Figure(layout=_layout(f"{metric}: mean per template", barmode="group"))
    categories = [*templates, ""]
    for st in stats:
        per_template = st.values.get(metric, {})
        xs, ys, texts = [], [], []
        for template in categories:
            values = per_template.get(template)
            if not values:
                continue
            xs.append(_plot_text(template or "all questions"))
            ys.append(_mean(values))
            texts.append(f"n={len(values)}")
        fig.add_trace(
            go.Bar(
                x=xs,
                y=ys,
                name=_plot_text(st.run.label),
                hovertext=texts,
                hovertemplate=(
                    "%{x}<br>mean %{y:.4g}<br>%{hovertext}<extra>%{fullData.name}</extra>"
                ),
            )
        )
    fig.update_layout(showlegend=len(stats) > 1)
    return fig


def _histogram_figure(go: Any, metric: str, stats: Sequence[_RunStats]) -> Any:
    fig = go.Figure(layout=_layout(f"{metric}: distribution", barmode="overlay"))
    score = not _is_usage(metric) and all(
        0 <= v <= 1 for st in stats for v in st.values.get(metric, {}).get("", [])
    )
    for st in stats:
        values = st.values.get(metric, {}).get("", [])
        if not values:
            continue
        trace: dict[str, Any] = {"x": values, "name": _plot_text(st.run.label)}
        if score:
            trace["xbins"] = {"start": -0.05, "end": 1.05, "size": 0.1}
        fig.add_trace(go.Histogram(**trace, opacity=0.75 if len(stats) > 1 else 1))
    fig.update_layout(
        showlegend=len(stats) > 1, xaxis={"title": {"text": "value"}}, yaxis={"title": "questions"}
    )
    if score:
        fig.update_xaxes(range=[-0.05, 1.05])
    return fig


def _box_figure(go: Any, metrics: Sequence[str], stats: Sequence[_RunStats]) -> Any:
    fig = go.Figure(layout=_layout("scores: spread per metric", boxmode="group", height=380))
    for st in stats:
        xs: list[str] = []
        ys: list[float] = []
        for metric in metrics:
            values = st.values.get(metric, {}).get("", [])
            xs.extend([_plot_text(metric)] * len(values))
            ys.extend(values)
        fig.add_trace(go.Box(x=xs, y=ys, name=_plot_text(st.run.label), boxmean=True))
    fig.update_layout(showlegend=len(stats) > 1)
    return fig


def _label_figure(
    go: Any, key: str, counts: Mapping[tuple[str, str], Mapping[str, int]], values: Sequence[str]
) -> Any:
    fig = go.Figure(layout=_layout(f"{key}: count per template", barmode="stack"))
    groups = list(counts)
    runs = list(dict.fromkeys(r for r, _ in groups))
    if len(runs) > 1:  # templates, and the runs within each
        templates = list(dict.fromkeys(t for _, t in groups))
        groups = [(r, t) for t in templates for r in runs if (r, t) in counts]
        xs: Any = [[_plot_text(t) for _, t in groups], [_plot_text(r) for r, _ in groups]]
    else:
        xs = [_plot_text(t) for _, t in groups]
    for value in values:
        color = _LABEL_COLORS.get(value.strip().upper())
        fig.add_trace(
            go.Bar(
                x=xs,
                y=[counts[g].get(value, 0) for g in groups],
                name=_plot_text(value),
                marker={"color": color} if color else None,
            )
        )
    return fig


def _comparison_figure(go: Any, rows: Sequence[Mapping[str, Any]]) -> Any | None:
    points = [
        r
        for r in rows
        if isinstance(r, Mapping) and _is_number(r.get("delta")) and r.get("metric") is not None
    ]
    if not points:
        return None
    ys = [
        _plot_text(f"{p.get('metric')} · {p.get('template')}" if p.get("template") else p["metric"])
        for p in points
    ]
    xs = [p["delta"] for p in points]
    plus, minus = [], []
    for p in points:
        ci = p.get("ci")
        if isinstance(ci, (list, tuple)) and len(ci) == 2 and all(_is_number(c) for c in ci):
            plus.append(max(ci[1] - p["delta"], 0))
            minus.append(max(p["delta"] - ci[0], 0))
        else:
            plus.append(0)
            minus.append(0)
    fig = go.Figure(
        layout=_layout(
            "difference b − a with confidence interval",
            height=max(260, 40 + 26 * len(points)),
            margin={"l": 220, "r": 20, "t": 45, "b": 40},
        )
    )
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=ys,
            mode="markers",
            error_x={"type": "data", "symmetric": False, "array": plus, "arrayminus": minus},
            name="delta",
        )
    )
    fig.add_vline(x=0, line_dash="dot", line_color="#888")
    fig.update_layout(showlegend=False, yaxis={"autorange": "reversed", "type": "category"})
    return fig


# ---------------------------------------------------------------------------------------------
# HTML sections


def _table(headers: Sequence[str], rows: Iterable[Sequence[str]], cls: str = "") -> str:
    """A table from already-escaped header and cell HTML."""
    head = "".join(f"<th>{h}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return (
        f'<div class="scroll"><table class="{cls}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


def _num_cell(value: Any) -> str:
    return f'<span class="num">{_e(_fmt(value))}</span>'


def _signature_section(stats: Sequence[_RunStats]) -> str:
    parts = ['<section id="signature"><h2>Run signature</h2>']
    for st in stats:
        sig = st.run.signature
        parts.append(f"<h3>{_e(st.run.label)}</h3>")
        if not sig:
            parts.append('<p class="muted">No signature (no <code>.signature.yaml</code>).</p>')
            continue
        judge = sig.get("judge") if isinstance(sig.get("judge"), Mapping) else None
        options = sig.get("options") if isinstance(sig.get("options"), Mapping) else {}
        enabled = options.get("metrics") if isinstance(options, Mapping) else None
        facts = [
            ("qa-eval version", sig.get("qa_eval_version")),
            ("judge", (judge or {}).get("model") if judge else "none"),
            ("judge provider", (judge or {}).get("provider") if judge else None),
            ("embedding", sig.get("embedding")),
        ]
        if isinstance(enabled, Mapping):
            facts.append(("metrics on", ", ".join(str(k) for k, v in enabled.items() if v)))
        if sig.get("llm_metrics"):
            facts.append(("note", sig.get("llm_metrics")))
        items = "".join(
            f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in facts if v not in (None, "")
        )
        dump = yaml.safe_dump(_plain(sig), sort_keys=False, allow_unicode=True, width=100)
        parts.append(
            f'<dl class="facts">{items}</dl><details><summary>full signature</summary>'
            f"<pre>{_e(dump)}</pre></details>"
        )
    parts.append("</section>")
    return "".join(parts)


def _plain(value: Any) -> Any:
    """Plain data for yaml.safe_dump (mappings, lists, scalars; anything else as text)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _usage_total(run: Run) -> Mapping[str, Any]:
    sig = run.signature or {}
    usage = sig.get("usage") if isinstance(sig, Mapping) else None
    total = usage.get("total") if isinstance(usage, Mapping) else None
    return total if isinstance(total, Mapping) else {}


def _totals_section(stats: Sequence[_RunStats]) -> str:
    def total(st: _RunStats, metric: str) -> float | None:
        values = st.values.get(metric, {}).get("", [])
        return math.fsum(values) if values else None

    rows: list[tuple[str, list[Any]]] = [
        ("questions", [len(st.records) for st in stats]),
        ("templates", [len(st.by_template) for st in stats]),
        ("successful answers", [sum(not is_error(r) for r in st.records) for st in stats]),
        ("error answers", [sum(is_error(r) for r in st.records) for st in stats]),
        (
            "questions with a metric error",
            [
                sum(any(_metric_errors(m) for m in (r, *_actual_steps(r))) for r in st.records)
                for st in stats
            ],
        ),
        ("agent input tokens", [total(st, "input_tokens") for st in stats]),
        ("agent output tokens", [total(st, "output_tokens") for st in stats]),
        ("agent elapsed seconds (sum)", [total(st, "elapsed_sec") for st in stats]),
        (
            "agent elapsed seconds (mean)",
            [_mean(st.values.get("elapsed_sec", {}).get("", [])) for st in stats],
        ),
        ("LLM cost of metrics (sum of llm_cost)", [total(st, "llm_cost") for st in stats]),
    ]
    judge_keys = (
        ("judge calls", "calls"),
        ("judge calls from the cache", "cached"),
        ("judge retries", "retries"),
        ("judge failures", "failures"),
        ("judge prompt tokens", "prompt_tokens"),
        ("judge prompt tokens cached by the provider", "cached_prompt_tokens"),
        ("judge prompt cache hit share", "cached_prompt_share"),
        ("judge completion tokens", "completion_tokens"),
        ("judge cost (USD)", "cost"),
    )
    for name, key in judge_keys:
        values = [_usage_total(st.run).get(key) for st in stats]
        if any(v is not None for v in values):
            rows.append((name, values))
    rows = [(name, values) for name, values in rows if any(v is not None for v in values)]
    headers = ["", *(_e(st.run.label) for st in stats)]
    body = [[_e(name), *(_num_cell(v) if v is not None else "–" for v in vs)] for name, vs in rows]
    return f'<section id="totals"><h2>Totals</h2>{_table(headers, body, "totals")}</section>'


def _templates_section(
    go: Any, figures: _Figures, stats: Sequence[_RunStats], metrics: Sequence[str]
) -> str:
    templates = list(dict.fromkeys(t for st in stats for t in st.by_template))
    several = len(stats) > 1
    headers = [
        "template",
        *(["run"] if several else []),
        "questions",
        "errors",
        *(_e(m) for m in metrics),
    ]
    rows = []
    for template in [*templates, ""]:
        for st in stats:
            records = st.by_template.get(template, []) if template else st.records
            if template and not records:
                continue
            cells = [
                _e(template) if template else "<b>all questions</b>",
                *([_e(st.run.label)] if several else []),
                _num_cell(len(records)),
                _num_cell(sum(is_error(r) for r in records)),
            ]
            for metric in metrics:
                values = st.values.get(metric, {}).get(template, [])
                if values:
                    d = _describe(values)
                    title = _e(
                        f"mean {_fmt(d['mean'])}, median {_fmt(d['median'])}, "
                        f"min {_fmt(d['min'])}, max {_fmt(d['max'])}, n {d['n']}"
                    )
                    cells.append(
                        f'<span class="num" title="{title}">{_e(_fmt(d["mean"]))}</span>'
                        f' <span class="n">n={len(values)}</span>'
                    )
                else:
                    cells.append('<span class="muted">–</span>')
            rows.append(cells)
    charts = "".join(figures.add(_bar_figure(go, m, stats, templates)) for m in metrics)
    if not metrics:
        charts = '<p class="muted">No numeric metric in the results.</p>'
    return (
        '<section id="templates"><h2>Metrics per template</h2>'
        '<p class="muted">Mean of each metric over the questions that have it; n is how many '
        "values (for step metrics: steps). Hover a mean for median, min and max.</p>"
        f'{_table(headers, rows, "metrics sticky")}<div class="charts">{charts}</div></section>'
    )


def _distributions_section(
    go: Any, figures: _Figures, stats: Sequence[_RunStats], metrics: Sequence[str]
) -> str:
    scores = [m for m in metrics if not _is_usage(m)]
    charts = []
    if scores:
        charts.append(figures.add(_box_figure(go, scores, stats)))
    constant: dict[str, float] = {}
    for metric in metrics:
        values = {v for st in stats for v in st.values.get(metric, {}).get("", [])}
        if len(values) == 1:  # a histogram of one value says nothing
            constant[metric] = values.pop()
        else:
            charts.append(figures.add(_histogram_figure(go, metric, stats)))
    if not charts:
        return ""
    note = ""
    if constant:
        items = ", ".join(f"<code>{_e(m)}</code> = {_e(_fmt(v))}" for m, v in constant.items())
        note = f'<p class="muted">One value for every question (no histogram): {items}.</p>'
    return (
        '<section id="distributions"><h2>Score distributions</h2>'
        '<p class="muted">Spread of each score over all questions (box: quartiles, whiskers, '
        "mean dashed), and a histogram of every metric, one colour per run.</p>"
        f'{note}<div class="charts">{"".join(charts)}</div></section>'
    )


def _labels_section(go: Any, figures: _Figures, stats: Sequence[_RunStats]) -> str:
    keys = list(dict.fromkeys(k for st in stats for k in _labels(st.records)))
    if not keys:
        return ""
    parts = ['<section id="labels"><h2>Labels</h2>']
    for key in keys:
        counts: dict[tuple[str, str], dict[str, int]] = {}
        values: list[str] = []
        for st in stats:
            for result in st.records:
                value = result.get(key)
                if not isinstance(value, str):
                    continue
                values.append(value)
                group = counts.setdefault((st.run.label, _template(result)), {})
                group[value] = group.get(value, 0) + 1
        distinct = sorted(set(values))
        several = len(stats) > 1
        headers = ["template", *(["run"] if several else []), *(_e(v) for v in distinct)]
        rows = [
            [_e(t), *([_e(r)] if several else []), *(_num_cell(c.get(v, 0)) for v in distinct)]
            for (r, t), c in counts.items()
        ]
        parts.append(
            f"<h3>{_e(key)}</h3>{_table(headers, rows)}"
            f'<div class="charts">{figures.add(_label_figure(go, key, counts, distinct))}</div>'
        )
    parts.append("</section>")
    return "".join(parts)


_EMPTY_LIST = re.compile(r"\s*\[\s*\]\s*")


def _empty_output(output: Any) -> bool:
    """A SPARQL JSON result with no rows (found as the aggregates find it, without parsing every
    output), or an empty list (nothing retrieved)."""
    if isinstance(output, list):
        return not output
    if isinstance(output, str) and _EMPTY_LIST.fullmatch(output):
        return True
    return empty_result(output)


def _metric_errors(step: Mapping[str, Any]) -> int:
    return sum(1 for k, v in step.items() if isinstance(k, str) and k.endswith("_error") and v)


def _steps_section(stats: Sequence[_RunStats]) -> str:
    several = len(stats) > 1
    headers = [
        "step",
        *(["run"] if several else []),
        "calls",
        "matched",
        "failed (status error)",
        "empty results",
        "metric errors",
        "in reference",
        "reference matched",
    ]
    rows = []
    for st in stats:
        table: dict[str, dict[str, int]] = {}

        def row(name: str, table: dict[str, dict[str, int]] = table) -> dict[str, int]:
            return table.setdefault(
                name,
                dict.fromkeys(
                    ("calls", "matched", "failed", "empty", "errors", "expected", "found"), 0
                ),
            )

        for result in st.records:
            matched_ids = {
                str(s.get("matches")) for s in _reference_steps(result) if s.get("matches")
            }
            for step in _actual_steps(result):
                r = row(str(step.get("name")))
                r["calls"] += 1
                if step.get("id") is not None and str(step.get("id")) in matched_ids:
                    r["matched"] += 1
                if step.get("status") == "error":
                    r["failed"] += 1
                elif _empty_output(step.get("output")):
                    r["empty"] += 1
                r["errors"] += _metric_errors(step)
            for step in _reference_steps(result):
                r = row(str(step.get("name")))
                r["expected"] += 1
                if step.get("matches"):
                    r["found"] += 1
        for name, c in table.items():
            rows.append(
                [
                    _e(name),
                    *([_e(st.run.label)] if several else []),
                    *(
                        _num_cell(c[k])
                        for k in ("calls", "matched", "failed", "empty", "errors", "expected")
                    ),
                    _num_cell(c["found"]),
                ]
            )
    body = _table(headers, rows) if rows else '<p class="muted">No steps in the results.</p>'
    return (
        '<section id="steps"><h2>Steps</h2><p class="muted">Per step name: calls the system made, '
        "how many of them a reference step matched, failed calls, calls with an empty result, "
        "metric errors on the calls, and reference steps with that name and how many were "
        f"matched.</p>{body}</section>"
    )


def _pre(value: Any) -> str:
    return f"<pre>{_e(_truncate(_as_text(value)))}</pre>"


def _steps_detail(result: Mapping[str, Any]) -> str:
    reference = _reference_steps(result)
    actual = _actual_steps(result)
    matched_ids = {str(s.get("matches")) for s in reference if s.get("matches")}
    parts = []
    if reference:
        items = []
        for step in reference:
            match = step.get("matches")
            mark = (
                f'<span class="ok">✓ matched</span> by <code>{_e(match)}</code>'
                if match
                else '<span class="bad">✗ not matched</span>'
            )
            items.append(f"<li><b>{_e(step.get('name'))}</b> {mark}</li>")
        parts.append(f"<h4>Reference steps</h4><ul>{''.join(items)}</ul>")
    if actual:
        rows = []
        for step in actual:
            sid = step.get("id")
            matched = sid is not None and str(sid) in matched_ids
            extra = {
                k: v
                for k, v in step.items()
                if k not in _STEP_STRUCTURE and k not in ("output_media_type",)
            }
            metrics = "".join(
                f"<div><code>{_e(k)}</code>: {_e(_fmt(v) if _is_number(v) else _as_text(v))}</div>"
                for k, v in extra.items()
            )
            rows.append(
                [
                    f"<code>{_e(sid)}</code>",
                    f"<b>{_e(step.get('name'))}</b>",
                    '<span class="ok">matched</span>' if matched else "unmatched",
                    _e(step.get("status")),
                    f'<span class="bad">{_e(step.get("error"))}</span>'
                    if step.get("error")
                    else "",
                    metrics,
                    _pre(step.get("args")) if step.get("args") is not None else "",
                    _pre(step.get("output")) if step.get("output") is not None else "",
                ]
            )
        parts.append(
            "<h4>Actual steps</h4>"
            + _table(
                ["id", "name", "reference", "status", "error", "metrics", "args", "output"],
                rows,
                "inner",
            )
        )
    return "".join(parts)


def _details(result: Mapping[str, Any], shown: set[str]) -> str:
    parts = [_steps_detail(result)]
    lists = {
        k: v
        for k, v in result.items()
        if isinstance(k, str)
        and k not in ("actual_steps", "reference_steps")
        and isinstance(v, list)
        and v
    }
    for key, items in lists.items():
        if all(isinstance(i, Mapping) for i in items):
            columns = list(dict.fromkeys(str(c) for i in items for c in i))
            rows = [
                [
                    _e(_as_text(i.get(c, "")) if not isinstance(i.get(c), str) else i[c])
                    for c in columns
                ]
                for i in items
            ]
            parts.append(f"<h4>{_e(key)}</h4>{_table([_e(c) for c in columns], rows, 'inner')}")
        else:
            lis = "".join(f"<li>{_e(_as_text(i))}</li>" for i in items)
            parts.append(f"<h4>{_e(key)}</h4><ul>{lis}</ul>")
    reasons = {
        k: v for k, v in result.items() if isinstance(k, str) and k.endswith("_reason") and v
    }
    if reasons:
        facts = "".join(f"<dt>{_e(k)}</dt><dd>{_e(_as_text(v))}</dd>" for k, v in reasons.items())
        parts.append(f'<h4>Judge reasons</h4><dl class="facts">{facts}</dl>')
    errors = {
        k: v
        for k, v in result.items()
        if isinstance(k, str) and (k == "error" or k.endswith("_error")) and v
    }
    if errors:
        facts = "".join(
            f'<dt>{_e(k)}</dt><dd class="bad">{_e(_as_text(v))}</dd>' for k, v in errors.items()
        )
        parts.append(f'<h4>Errors</h4><dl class="facts">{facts}</dl>')
    rest = {
        k: v
        for k, v in result.items()
        if isinstance(k, str)
        and k not in shown
        and k not in lists
        and k not in reasons
        and k not in errors
        and k not in _TEXT_KEYS
    }
    if rest:
        facts = "".join(
            f"<dt>{_e(k)}</dt><dd>{_e(_fmt(v) if _is_number(v) else _truncate(_as_text(v)))}</dd>"
            for k, v in rest.items()
        )
        parts.append(f'<h4>Other values</h4><dl class="facts">{facts}</dl>')
    return "".join(parts)


def _questions_section(stats: Sequence[_RunStats], metrics: Sequence[str]) -> str:
    several = len(stats) > 1
    top_level = [
        m for m in metrics if not _is_usage(m) and any(m in r for st in stats for r in st.records)
    ]
    shown = {*top_level, *_TEXT_KEYS}
    headers = [
        "",
        *(["run"] if several else []),
        "template",
        "question",
        "reference answer",
        "actual answer",
        "status",
        "steps matched",
        *top_level,
    ]
    head = "".join(
        f'<th title="sort">{_e(h)}</th>' if i else '<th class="nosort"></th>'
        for i, h in enumerate(headers)
    )
    rows = []
    for st in stats:
        for result in st.records:
            reference = _reference_steps(result)
            matched = sum(1 for s in reference if s.get("matches"))
            question = (
                f'<div class="qid">{_e(result.get("question_id"))}</div>'
                f'<div class="question">{_e(result.get("question_text"))}</div>'
            )
            status = _e(result.get("status"))
            if result.get("error"):
                status += f'<div class="bad">{_e(result.get("error"))}</div>'
            cells = [
                (
                    '<button type="button" class="toggle" aria-expanded="false" '
                    'title="steps, claims, reasons, errors">▸</button>',
                    None,
                ),
                *([(_e(st.run.label), _e(st.run.label))] if several else []),
                (_e(_template(result)), _e(_template(result))),
                (question, _e(result.get("question_id"))),
                (f'<div class="text">{_e(result.get("reference_answer"))}</div>', None),
                (f'<div class="text">{_e(result.get("actual_answer"))}</div>', None),
                (status, _e(result.get("status"))),
                (
                    f"{matched}/{len(reference)}" if reference else "–",
                    str(matched / len(reference)) if reference else "",
                ),
            ]
            for metric in top_level:
                value = result.get(metric)
                if _is_number(value):
                    cells.append((_num_cell(value), repr(float(value))))
                else:
                    cells.append(('<span class="muted">–</span>', ""))
            tds = "".join(
                f"<td>{c}</td>" if key is None else f'<td data-sort="{key}">{c}</td>'
                for c, key in cells
            )
            css = "q-row error-row" if is_error(result) else "q-row"
            rows.append(
                f'<tr class="{css}" data-run="{_e(st.run.label)}" '
                f'data-template="{_e(_template(result))}">{tds}</tr>'
                f'<tr class="q-detail" hidden><td colspan="{len(headers)}"><div class="detail">'
                f"{_details(result, shown)}</div></td></tr>"
            )
    templates = list(dict.fromkeys(t for st in stats for t in st.by_template))
    template_options = "".join(f'<option value="{_e(t)}">{_e(t)}</option>' for t in templates)
    run_select = ""
    if several:
        options = "".join(
            f'<option value="{_e(st.run.label)}">{_e(st.run.label)}</option>' for st in stats
        )
        run_select = (
            '<label>run <select id="q-run"><option value="">all runs</option>'
            f"{options}</select></label>"
        )
    controls = (
        '<div class="controls"><label>filter <input id="q-filter" type="search" '
        'placeholder="text in any column"></label>'
        '<label>template <select id="q-template"><option value="">all templates</option>'
        f"{template_options}</select></label>{run_select}"
        '<label><input id="q-errors" type="checkbox"> errors only</label>'
        '<span id="q-count" class="muted"></span></div>'
    )
    empty = "" if rows else '<p class="muted">No questions.</p>'
    return (
        '<section id="questions"><h2>Questions</h2>'
        '<p class="muted">Click a column header to sort, type to filter (the text of the details '
        "too); ▸ opens a question's steps, claims and verdicts, judge reasons and errors.</p>"
        f'{controls}<div class="scroll"><table id="q-table" class="questions">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>{empty}"
        "</section>"
    )


_COMPARISON_ORDER = (
    "metric",
    "template",
    "n",
    "mean_a",
    "mean_b",
    "delta",
    "errors_a",
    "errors_b",
    "ci",
    "p_value",
    "p_adjusted",
    "better",
    "wins",
    "losses",
    "ties",
)


def _cell(value: Any) -> str:
    if _is_number(value):
        return _num_cell(value)
    if isinstance(value, (list, tuple)) and all(_is_number(v) for v in value):
        return _e("[" + ", ".join(_fmt(v) for v in value) + "]")
    if value is None:
        return '<span class="muted">–</span>'
    return _e(_as_text(value))


def _mapping_table(rows: Sequence[Mapping[str, Any]]) -> str:
    keys = list(dict.fromkeys(str(k) for r in rows for k in r))
    columns = [k for k in _COMPARISON_ORDER if k in keys] + [
        k for k in keys if k not in _COMPARISON_ORDER
    ]
    body = []
    for r in rows:
        cells = []
        for c in columns:
            text = _cell(r.get(c))
            if c == "delta" and _is_number(r.get(c)) and r[c] != 0:
                text = f'<span class="{"ok" if r[c] > 0 else "bad"}">{text}</span>'
            cells.append(text)
        body.append(cells)
    return _table([_e(c) for c in columns], body, "comparison")


def _comparison_section(go: Any, figures: _Figures, comparison: Mapping[str, Any]) -> str:
    parts = ['<section id="comparison"><h2>Comparison</h2>']
    scalars = {k: v for k, v in comparison.items() if not isinstance(v, (list, Mapping))}
    if scalars:
        items = "".join(f"<dt>{_e(k)}</dt><dd>{_cell(v)}</dd>" for k, v in scalars.items())
        parts.append(f'<dl class="facts">{items}</dl>')
    for key, value in comparison.items():
        if isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
            parts.append(f"<h3>{_e(key)}</h3>{_mapping_table(value)}")
            fig = _comparison_figure(go, value) if key == "metrics" else None
            if fig is not None:
                parts.append(f'<div class="charts wide">{figures.add(fig)}</div>')
        elif isinstance(value, (list, Mapping)):
            dump = yaml.safe_dump(_plain(value), sort_keys=False, allow_unicode=True, width=100)
            parts.append(f"<h3>{_e(key)}</h3><pre>{_e(dump)}</pre>")
    parts.append("</section>")
    return "".join(parts)


# ---------------------------------------------------------------------------------------------


def _as_run(value: RunLike, position: int) -> Run:
    if isinstance(value, Run):
        return value
    if isinstance(value, (list, tuple)) and len(value) in (2, 3) and isinstance(value[0], str):
        signature = value[2] if len(value) == 3 else getattr(value[1], "signature", None)
        return Run(value[0], value[1], signature)
    raise TypeError(f"run [{position}] must be a Run or (label, results[, signature])")


def _template_text() -> str:
    return resources.files("qa_eval").joinpath("report_template.html").read_text("utf-8")


def _plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    js = get_plotlyjs()
    # Inlined as is; make sure nothing in it can close the <script> element early.
    return re.sub(r"</(script)", r"<\\/\1", js, flags=re.IGNORECASE)


def build_report(
    runs: Sequence[RunLike],
    comparison: Mapping[str, Any] | None = None,
    title: str = DEFAULT_TITLE,
) -> str:
    """The text of a self-contained HTML report of ``runs`` (each a :class:`Run` or a tuple
    ``(label, results, signature)``), with a comparison section when ``comparison`` is given."""
    go = require("plotly.graph_objects", "the HTML report")
    all_runs = [_as_run(r, i) for i, r in enumerate(runs)]
    stats = [_collect(run) for run in all_runs]
    metrics = _order_metrics(m for st in stats for m in st.values)
    figures = _Figures()
    nav = [
        ("signature", "Signature"),
        ("totals", "Totals"),
        ("templates", "Per template"),
        ("distributions", "Distributions"),
        ("labels", "Labels"),
        ("steps", "Steps"),
        ("questions", "Questions"),
    ]
    sections = [
        _signature_section(stats),
        _totals_section(stats),
        _templates_section(go, figures, stats, metrics),
        _distributions_section(go, figures, stats, metrics),
        _labels_section(go, figures, stats),
        _steps_section(stats),
    ]
    if comparison is not None:
        sections.append(_comparison_section(go, figures, comparison))
        nav.insert(-1, ("comparison", "Comparison"))
    sections.append(_questions_section(stats, metrics))
    body = "".join(sections)
    present = {m.group(1) for m in re.finditer(r'<section id="(\w+)"', body)}
    nav_html = "".join(f'<a href="#{key}">{text}</a>' for key, text in nav if key in present)
    runs_text = ", ".join(run.label for run in all_runs) or "no runs"
    values = {
        "TITLE": _e(title),
        "SUBTITLE": _e(
            f"{runs_text} · {sum(len(st.records) for st in stats)} questions · "
            f"generated {datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
        ),
        "NAV": nav_html,
        "BODY": body,
        "DATA": script_json({"figures": figures.figures, "template": figures.template}),
        "PLOTLY_JS": _plotly_js(),
    }
    from .redact import redact

    for name in ("TITLE", "SUBTITLE", "BODY", "DATA"):  # no API key reaches the page
        values[name] = redact(values[name])
    # One pass: text put in is never scanned for placeholders again.
    return re.sub(r"\{\{([A-Z_]+)\}\}", lambda m: values[m.group(1)], _template_text())
