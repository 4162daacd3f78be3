"""Chart geometry for the report: small SVG charts computed here and drawn by the template.

Every chart shows one metric on its own axis (a 0-1 axis for scores, else a rounded range of the
metric's values), so a score never shares an axis with token counts. Histograms of several runs
share their bins (computed over all runs' values) and draw the runs side by side in each bin.
A chart is a list of primitives (rectangles, lines, texts) with coordinates in pixels; the
template writes them as SVG elements, so text is escaped like every other value.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction

from ..aggregate import as_float, mean_of
from .model import ComparisonRow, Group, Metric, RunSummary

__all__ = ["Chart", "ci_strip", "histogram", "label_bars", "nice_ticks", "template_bars"]

RUN_COLORS = ("#4c78a8", "#f58518", "#54a24b", "#b279a2", "#72b7b2", "#9d755d", "#ff9da6")
LABEL_COLORS = {
    "CORRECT": "#54a24b",
    "WRONG": "#e45756",
    "DON'T KNOW": "#9d9d9d",
    "A": "#1a9850",
    "B": "#91cf60",
    "C": "#fee08b",
    "D": "#fc8d59",
    "E": "#d73027",
}
GOOD, BAD, NEUTRAL = "#2e7d32", "#c62828", "#8a94a0"
WIDTH = 420
_LABEL_WIDTH = 176
_LABEL_CHARS = 26
_FLOAT_MAX = sys.float_info.max
_EXACT_INT = 2**53


@dataclass(frozen=True)
class Rect:
    x: float
    y: float
    w: float
    h: float
    fill: str
    title: str = ""


@dataclass(frozen=True)
class Line:
    x1: float
    y1: float
    x2: float
    y2: float
    cls: str = "axis"
    stroke: str = ""


@dataclass(frozen=True)
class Text:
    x: float
    y: float
    text: str
    anchor: str = "start"
    cls: str = ""
    title: str = ""


@dataclass(frozen=True)
class Chart:
    """One SVG chart: its size, a title for screen readers and its primitives."""

    title: str
    width: float
    height: float
    rects: list[Rect] = field(default_factory=list)
    lines: list[Line] = field(default_factory=list)
    texts: list[Text] = field(default_factory=list)
    legend: list[tuple[str, str]] = field(default_factory=list)


def fmt(value: float | None) -> str:
    """A number for a chart label or tooltip, to about four significant digits."""
    if value is None:
        return "–"
    if value == 0:
        return "0"
    if isinstance(value, int) and not -_FLOAT_MAX <= value <= _FLOAT_MAX:
        return f"{Decimal(value):,.0f}"  # beyond the float range: its digits
    if float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    magnitude = abs(value)
    if magnitude >= 1000:
        return f"{value:,.0f}"
    if magnitude >= 1:
        return f"{value:.4g}"
    return f"{value:.3g}"


def _r(value: float) -> float:
    return round(value, 1)


def _share(value: float, low: float, high: float) -> float:
    """Where ``value`` lies from ``low`` (0) to ``high`` (1), computed exactly when the float
    arithmetic would overflow (values near the float range, ticks past it)."""
    try:
        span = high - low
        share = (value - low) / span
    except OverflowError:  # an int beyond the float range
        span = share = math.inf
    if -math.inf < span < math.inf and -math.inf < share < math.inf:
        return share
    return float((Fraction(value) - Fraction(low)) / (Fraction(high) - Fraction(low)))


def _step(low: float, high: float, target: int) -> float:
    """A round step (1, 2, 2.5 or 5 times a power of ten) near ``(high - low) / target``; an
    exact int when it is beyond what a float holds exactly, so that ticks past the float range
    stay numbers."""
    raw = (high - low) / max(target, 1)
    if raw == math.inf:  # a span beyond the float range
        raw = high / max(target, 1) - low / max(target, 1)
    power = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    for factor in (1, 2, 2.5, 5, 10):
        if raw <= factor * power:
            return _exact_step(factor, power)
    return 10 * power


def _exact_step(factor: float, power: float) -> float:
    step = factor * power
    if isinstance(power, int) and step > _EXACT_INT:
        return int(Fraction(factor) * power)
    return step


def nice_ticks(low: float, high: float, target: int = 5) -> list[float]:
    """Round tick values covering [low, high] (at least two)."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return [0.0, 1.0]
    if high <= low:
        high = low + (abs(low) if low else 1.0)
    step = _step(low, high, target)
    start = math.floor(low / step + 1e-9) * step
    ticks: list[float] = []
    value = start
    while value < high + step * 0.999 and len(ticks) < 50:
        ticks.append(round(value, 12))
        if value >= high - 1e-12:
            break
        value += step
    return ticks if len(ticks) >= 2 else [start, start + step]


def _axis(metric: Metric, values: Sequence[float]) -> list[float]:
    if metric.unit:
        return [0.0, 0.25, 0.5, 0.75, 1.0]
    low = min([0.0, *values])
    high = max([0.0, *values])
    return nice_ticks(low, high)


def _short(text: str, limit: int = _LABEL_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _bar(mean: float | None, n: int) -> tuple[float, int] | None:
    """A bar of a mean and its count; none for a mean beyond the float range (null, or an int
    of more than 308 digits): no axis holds it."""
    value = as_float(mean)
    return None if value is None else (value, n)


def _first_of_each_name(run: RunSummary) -> dict[str, Group]:
    """A run's first template group of each name (ids 3 and "3" have one name)."""
    first: dict[str, Group] = {}
    for group in run.templates:
        first.setdefault(group.name, group)
    return first


def template_bars(metric: Metric, runs: Sequence[RunSummary]) -> Chart | None:
    """Mean of one metric per template, all questions (micro) and macro: horizontal bars, one per
    run in each row, on the metric's own axis."""
    rows: list[tuple[str, list[tuple[float, int] | None]]] = []
    names = list(dict.fromkeys(g.name for run in runs for g in run.templates))
    firsts = [_first_of_each_name(run) for run in runs]
    for name in names:
        cells: list[tuple[float, int] | None] = []
        for first in firsts:
            group = first.get(name)
            stat = group.stats.get(metric.name) if group else None
            cells.append(_bar(stat.mean, stat.n) if stat else None)
        rows.append((name, cells))
    if len(names) > 1:
        rows.append(
            (
                "all questions (micro)",
                [
                    _bar(s.mean, s.n) if (s := run.micro.stats.get(metric.name)) else None
                    for run in runs
                ],
            )
        )
        macro = [run.macro.get(metric.name) for run in runs]
        rows.append(("macro (mean of templates)", [_bar(*m) if m else None for m in macro]))
    rows = [(name, cells) for name, cells in rows if any(cells)]
    if not rows:
        return None
    values = [c[0] for _, cells in rows for c in cells if c]
    ticks = _axis(metric, values)
    low, high = ticks[0], ticks[-1]
    bar, gap, top = 11, 9, 22
    plot_w = WIDTH - _LABEL_WIDTH - 46
    height = top + len(rows) * (len(runs) * bar + gap) + 22

    def x(value: float) -> float:
        return _LABEL_WIDTH + _share(value, low, high) * plot_w

    chart = Chart(f"{metric.name}: mean per template", WIDTH, height)
    chart.texts.append(Text(4, 14, f"{metric.name}: mean per template", cls="ct"))
    bottom = height - 20
    for tick in ticks:
        chart.lines.append(Line(_r(x(tick)), top - 4, _r(x(tick)), bottom, "grid"))
        chart.texts.append(Text(_r(x(tick)), bottom + 13, fmt(tick), "middle", "tick"))
    zero = x(max(low, min(0.0, high)))
    y = top
    for name, cells in rows:
        chart.texts.append(
            Text(_LABEL_WIDTH - 6, y + len(runs) * bar / 2 + 4, _short(name), "end", "yl", name)
        )
        for index, cell in enumerate(cells):
            if cell is not None:
                value, n = cell
                left, right = sorted((zero, x(value)))
                tip = f"{runs[index].label} · {name}: mean {fmt(value)}, n={n}"
                chart.rects.append(
                    Rect(_r(left), y, _r(max(right - left, 1)), bar - 1, _color(index), tip)
                )
                chart.texts.append(Text(_r(right + 3), y + bar - 2, fmt(value), cls="val"))
            y += bar
        y += gap
    chart.lines.append(Line(_r(zero), top - 4, _r(zero), bottom))
    _legend(chart, runs)
    return chart


def _color(index: int) -> str:
    return RUN_COLORS[index % len(RUN_COLORS)]


def _legend(chart: Chart, runs: Sequence[RunSummary]) -> None:
    if len(runs) > 1:
        chart.legend.extend((run.label, _color(i)) for i, run in enumerate(runs))


def _bins(metric: Metric, values: Sequence[float]) -> list[float]:
    """Bin edges shared by every run: tenths of 0-1 for scores, else about 12 round bins."""
    if metric.unit:
        return [i / 10 for i in range(11)]
    low, high = min(values), max(values)
    integers = all(float(v).is_integer() for v in values)
    step = _step(low, high, 12)
    if integers:
        step = max(1.0, math.ceil(step))
    start = math.floor(low / step) * step
    edges = [start]
    while edges[-1] <= high and len(edges) < 60:
        edges.append(round(edges[-1] + step, 12))
    return edges


def _count(values: Sequence[float], edges: Sequence[float]) -> list[int]:
    counts = [0] * (len(edges) - 1)
    last = len(counts) - 1
    low, high = edges[0], edges[1]
    for v in values:
        counts[min(last, max(0, int(_share(v, low, high) + 1e-9)))] += 1
    return counts


def histogram(metric: Metric, runs: Sequence[RunSummary]) -> Chart | None:
    """How the values of one metric spread, with bins shared by all runs; a dashed line marks
    each run's mean. None when every value is the same (a histogram would say nothing)."""
    series = [list(run.values.get(metric.name, ())) for run in runs]
    every = [v for s in series for v in s]
    if len(set(every)) < 2:
        return None
    edges = _bins(metric, every)
    counts = [_count(s, edges) if s else [0] * (len(edges) - 1) for s in series]
    top, left, bottom_pad, height = 22, 40, 34, 190
    plot_w, plot_h = WIDTH - left - 12, height - top - bottom_pad
    peak = max(max(c) for c in counts)
    y_ticks = nice_ticks(0, peak, 4)
    y_max = y_ticks[-1]
    chart = Chart(f"{metric.name}: distribution", WIDTH, height)
    chart.texts.append(Text(4, 14, f"{metric.name}: distribution (questions per bin)", cls="ct"))
    if metric.step:
        chart.texts[-1] = Text(4, 14, f"{metric.name}: distribution (steps per bin)", cls="ct")

    def x(value: float) -> float:
        return left + _share(value, edges[0], edges[-1]) * plot_w

    def y(count: float) -> float:
        return top + plot_h - count / y_max * plot_h

    for tick in y_ticks:
        chart.lines.append(Line(left, _r(y(tick)), left + plot_w, _r(y(tick)), "grid"))
        chart.texts.append(Text(left - 4, _r(y(tick)) + 4, fmt(tick), "end", "tick"))
    bins = len(edges) - 1
    slot = plot_w / bins
    inner = max(slot - 2, 1) / max(len(runs), 1)
    for b in range(bins):
        for index, run_counts in enumerate(counts):
            count = run_counts[b]
            if not count:
                continue
            tip = (
                f"{runs[index].label}: {count} in [{fmt(edges[b])}, {fmt(edges[b + 1])}"
                f"{']' if b == bins - 1 else ')'}"
            )
            chart.rects.append(
                Rect(
                    _r(left + b * slot + 1 + index * inner),
                    _r(y(count)),
                    _r(max(inner - 0.5, 0.8)),
                    _r(top + plot_h - y(count)),
                    _color(index),
                    tip,
                )
            )
    step_label = max(1, math.ceil(bins / 6))
    for b in range(0, bins + 1, step_label):
        chart.texts.append(
            Text(_r(x(edges[b])), height - bottom_pad + 14, fmt(edges[b]), "middle", "tick")
        )
    chart.lines.append(Line(left, top + plot_h, left + plot_w, top + plot_h))
    for index, values in enumerate(series):
        if values:
            mean = mean_of(values) or 0.0  # the mean of floats is a float
            chart.lines.append(
                Line(_r(x(mean)), top, _r(x(mean)), top + plot_h, "mean", _color(index))
            )
    chart.texts.append(
        Text(
            left + plot_w,
            height - 6,
            "dashed: mean" + (" per run" if len(runs) > 1 else ""),
            "end",
            "note",
        )
    )
    _legend(chart, runs)
    return chart


def label_bars(key: str, runs: Sequence[RunSummary]) -> Chart | None:
    """Counts of a label (answer_class, factual_accuracy_grade): a stacked bar per run."""
    present = [(i, run.labels[key]) for i, run in enumerate(runs) if run.labels.get(key)]
    if not present:
        return None
    order = list(dict.fromkeys(v for _, counts in present for v in counts))
    bar, gap, top = 16, 8, 22
    height = top + len(present) * (bar + gap) + 22
    plot_w = WIDTH - 130 - 10
    chart = Chart(f"{key}: counts", WIDTH, height)
    chart.texts.append(Text(4, 14, f"{key}: answers per label", cls="ct"))
    y = top
    palette = ("#4c78a8", "#72b7b2", "#eeca3b", "#b279a2", "#9d755d", "#ff9da6")
    for index, counts in present:
        total = sum(counts.values()) or 1
        chart.texts.append(
            Text(124, y + bar - 4, _short(runs[index].label, 18), "end", "yl", runs[index].label)
        )
        x = 130.0
        for number, value in enumerate(order):
            count = counts.get(value, 0)
            if not count:
                continue
            width = count / total * plot_w
            color = LABEL_COLORS.get(value.strip().upper(), palette[number % len(palette)])
            tip = f"{runs[index].label} · {value}: {count} of {total}"
            chart.rects.append(Rect(_r(x), y, _r(width), bar, color, tip))
            if width > 34:
                chart.texts.append(
                    Text(
                        _r(x + 3),
                        y + bar - 4,
                        _short(f"{value} {count}", int(width / 7)),
                        cls="inbar",
                    )
                )
            x += width
        y += bar + gap
    for number, value in enumerate(order):
        chart.legend.append(
            (value, LABEL_COLORS.get(value.strip().upper(), palette[number % len(palette)]))
        )
    return chart


def ci_strip(row: ComparisonRow, width: int = 150, height: int = 18) -> Chart | None:
    """The delta and its confidence interval on the row's own scale (zero marked): green when
    B is significantly better in the metric's direction, red when worse, grey otherwise."""
    if row.delta is None:
        return None
    ends = [abs(row.delta)]
    bounded = row.ci_low is not None and row.ci_high is not None
    if bounded:
        ends += [abs(row.ci_low or 0.0), abs(row.ci_high or 0.0)]
    reach = min(max(ends) * 1.1, _FLOAT_MAX) or 1.0
    pad = 6

    def x(value: float) -> float:
        return pad + _share(value, -reach, reach) * (width - 2 * pad)

    color = {"better": GOOD, "worse": BAD}.get(row.outcome, NEUTRAL)
    mid = height / 2
    chart = Chart(f"{row.metric}: delta and interval", width, height)
    chart.lines.append(Line(_r(x(0)), 1, _r(x(0)), height - 1, "zero"))
    if bounded:
        chart.lines.append(
            Line(_r(x(row.ci_low or 0.0)), mid, _r(x(row.ci_high or 0.0)), mid, "ci", color)
        )
        tip = f"delta {fmt(row.delta)}, interval [{fmt(row.ci_low)}, {fmt(row.ci_high)}]"
    else:
        chart.lines.append(Line(pad, mid, width - pad, mid, "ci open", color))
        tip = f"delta {fmt(row.delta)}, interval unbounded (too few pairs)"
    chart.rects.append(Rect(_r(x(row.delta) - 3), mid - 3, 6, 6, color, tip))
    return chart
