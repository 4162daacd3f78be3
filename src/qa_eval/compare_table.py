"""A comparison (``compare.compare_runs``) shown: the console table, fitted to the terminal's
width, and the flat rows the HTML report lists.
"""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from .signflip import EXACT_MAX_N

__all__ = ["format_table", "report_rows"]

_OPTIONAL_COLUMNS = (("mean A", "mean B"), ("W/L/T",), ("p",))
"""Columns left out, in this order, while the names would get fewer than _MIN_NAME columns."""


_MIN_NAME = 14


_MIN_WIDTH = 20


_DEFAULT_WIDTH = 100  # when the output is not a terminal


def _decimals(entry: Mapping[str, Any]) -> int | None:
    """Decimals for one metric's numbers, from the size of its means (None: 3 significant)."""
    rows = [entry["overall"], *entry["per_template"]]
    scale = max(
        (abs(row[k]) for row in rows for k in ("mean_a", "mean_b") if row[k] is not None),
        default=0.0,
    )
    if scale >= 1e7:
        return None
    if scale >= 1e5:
        return 0
    if scale >= 100:
        return 1
    if scale >= 0.01 or scale == 0:
        return 4
    return 6


def _num(value: float | None, decimals: int | None, signed: bool = False) -> str:
    if value is None:
        return "-"
    sign = "+" if signed else ""
    if decimals is None:
        return f"{value:{sign}.3g}"
    return f"{value:{sign}.{decimals}f}"


def _p(value: float | None) -> str:
    if value is None:
        return "-"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def _fewest_testable(alpha: float) -> int | None:
    """The fewest pairs whose exact test can reach p < alpha (None: only with Monte Carlo)."""
    for n in range(2, EXACT_MAX_N + 1):
        if 2.0 ** (1 - n) < alpha:
            return n
    return None


def _cells(row: Mapping[str, Any], decimals: int | None, too_few: str) -> dict[str, str]:
    if row["ci_low"] is None or row["ci_high"] is None:
        ci = "-"
    else:
        low, high = _num(row["ci_low"], decimals, True), _num(row["ci_high"], decimals, True)
        ci = f"[{low}, {high}]"
    testable = row["testable"]
    return {
        "n": str(row["n"]),
        "mean A": _num(row["mean_a"], decimals),
        "mean B": _num(row["mean_b"], decimals),
        "delta": _num(row["delta"], decimals, True)
        + ("~" if row.get("within_judge_noise") else ""),
        "err A/B": f"{row['errors_a']}/{row['errors_b']}",
        "CI": ci,
        "p": _p(row["p_value"]) if testable else too_few,
        "p adj": _p(row["p_adjusted"]) if testable else "-",
        "better": (row["better"] or "").upper(),
        "W/L/T": f"{row['wins']}/{row['losses']}/{row['ties']}",
    }


def _wrap(text: str, width: int, indent: str = "") -> list[str]:
    return textwrap.wrap(
        text, width, subsequent_indent=indent, break_long_words=True, break_on_hyphens=False
    ) or [""]


def format_table(
    comparison: Mapping[str, Any],
    *,
    labels: tuple[str, str] | None = None,
    width: int | None = None,
) -> str:
    """A text table of a :func:`compare_runs` result, at most ``width`` columns (default: the
    terminal's): overall rows, then per template; rows without values are left out."""
    if width is None:
        width = shutil.get_terminal_size((_DEFAULT_WIDTH, 24)).columns
    width = max(_MIN_WIDTH, int(width))
    label_a, label_b = labels or (comparison["labels"]["a"], comparison["labels"]["b"])
    method = comparison["method"]
    q = comparison["questions"]
    alpha = float(method.get("alpha", 1.0 - method["confidence"]))
    pct = f"{method['confidence'] * 100:g}"
    fewest = _fewest_testable(alpha)
    too_few = f"n<{fewest}" if fewest is not None else "too few"

    def metric_name(entry: Mapping[str, Any]) -> str:
        marks = {"lower": " (-)", "none": " (=)"}
        return str(entry["metric"]) + marks.get(entry["direction"], "")

    # (name, cells): cells None for a metric heading in the per-template block
    overall_rows: list[tuple[str, dict[str, str] | None]] = []
    template_rows: list[tuple[str, dict[str, str] | None]] = []
    untestable = False
    noisy = any(
        row.get("within_judge_noise")
        for entry in comparison["metrics"]
        for row in (entry["overall"], *entry["per_template"])
    )
    for entry in comparison["metrics"]:
        decimals = _decimals(entry)
        if entry["overall"]["n"]:
            overall_rows.append((metric_name(entry), _cells(entry["overall"], decimals, too_few)))
            untestable |= not entry["overall"]["testable"]
        rows = [r for r in entry["per_template"] if r["n"]]
        if len(comparison["templates"]) > 1 and rows:
            template_rows.append((metric_name(entry), None))
            for row in rows:
                template_rows.append((f"  {row['template_id']}", _cells(row, decimals, too_few)))
                untestable |= not row["testable"]

    headers = {"CI": f"{pct}% CI"}
    columns = ["n", "mean A", "mean B", "delta", "err A/B", "CI", "p", "p adj", "better", "W/L/T"]
    filled = [cells for _, cells in overall_rows + template_rows if cells is not None]
    widths = {
        c: max([len(headers.get(c, c)), *(len(cells[c]) for cells in filled)]) for c in columns
    }

    def name_room(kept: list[str]) -> int:
        return width - sum(widths[c] + 1 for c in kept)

    for group in _OPTIONAL_COLUMNS:
        if name_room(columns) >= _MIN_NAME:
            break
        columns = [c for c in columns if c not in group]
    names = [name for name, _ in overall_rows + template_rows] + ["per template"]
    name_width = min(max(len(name) for name in names), name_room(columns))
    tabular = name_width >= _MIN_NAME or name_room(columns) >= max(len(n) for n in names)
    if not tabular:  # records wrap, so they can hold every column
        columns = list(widths)

    def block(title: str, rows: list[tuple[str, dict[str, str] | None]]) -> list[str]:
        if not tabular:  # too narrow for columns: one record per row, wrapped
            lines = [title, "-" * min(width, len(title))]
            for name, cells in rows:
                lines += _wrap(name, width, "    ")
                if cells is not None:
                    fields = " · ".join(
                        f"{headers.get(c, c)} {cells[c].replace(', ', ',') or '-'}" for c in columns
                    )
                    lines += _wrap("    " + fields, width, "    ")
            return lines

        def line(name: str, values: Sequence[str]) -> str:
            parts = [name.ljust(name_width), *(v.rjust(widths[c]) for c, v in zip(columns, values))]
            return " ".join(parts).rstrip()

        lines = [line(title, [headers.get(c, c) for c in columns])]
        lines.append("-" * len(lines[0]))
        for name, cells in rows:
            if cells is None or len(name) > name_width:  # a heading or a long name: own line(s)
                lines += _wrap(name, width, "  ")
                name = ""
            if cells is not None:
                lines.append(line(name, [cells[c] for c in columns]))
        return lines

    excluded = f"; {q['excluded']} left out" if q.get("excluded") else ""
    out = [
        *_wrap(f"A = {label_a}", width, "    "),
        *_wrap(f"B = {label_b}", width, "    "),
        *_wrap(
            f"questions: A {q['a']}, B {q['b']}, paired {q['paired']} (only A {q['only_a']}, "
            f"only B {q['only_b']}); errors among the paired: A {q['errors_a']}, "
            f"B {q['errors_b']}{excluded}",
            width,
            "  ",
        ),
    ]
    if overall_rows:
        out += ["", *block("metric", overall_rows)]
    if template_rows:
        out += ["", *block("per template", template_rows)]
    errors_text = {
        "fail": "scored as failed answers (0 on higher-is-better metrics)",
        "exclude": "left out (exclude errors)",
        "include": "counted with the values they carry",
    }.get(str(method.get("errors")), "")
    legend = [
        f"delta = mean B - mean A over the paired questions; err A/B: error results among "
        f"them, {errors_text}.",
        f"p: two-sided paired sign-flip permutation test of the mean difference (exact up to "
        f"{EXACT_MAX_N} pairs, else {method['resamples']:,} random sign flips, seed "
        f"{method['seed']}); {pct}% CI: the shifts that test does not reject.",
        f"p adj: Holm-adjusted within each table (overall rows one family, per-template rows "
        f"another); better: the run that is significantly better (p adj < {alpha:g}); blank: "
        "no significant difference.",
    ]
    if untestable:
        legend.append(
            f"{too_few}: too few pairs for any p < {alpha:g} (with n pairs the smallest p is "
            "2^(1-n)): not tested, no CI."
        )
    legend.append(
        "W/L/T: questions where B is better / worse / tied; (-) lower is better; (=) a count, "
        "neither direction is better (W/L: B higher / lower)."
    )
    if noisy:
        legend.append(
            "~: |delta| is less than 2 judge standard errors: the judge's own noise (measured "
            "with --repeats) could make a difference this large."
        )
    if len(columns) < len(widths):
        legend.append(f"Columns left out to fit {width} characters; --format json has them all.")
    out.append("")
    for text in legend:
        out += _wrap(text, width)
    return "\n".join(out)


def report_rows(comparison: Mapping[str, Any]) -> dict[str, Any]:
    """The comparison as flat rows (overall first, then per template) for the HTML report."""
    labels = comparison.get("labels", {})
    method = comparison.get("method", {})
    rows: list[dict[str, Any]] = []
    for entry in comparison.get("metrics", []):
        parts = [("", entry["overall"])]
        parts += [(str(r["template_id"]), r) for r in entry.get("per_template", [])]
        for template, row in parts:
            if not row["n"]:
                continue
            rows.append(
                {
                    "metric": entry["metric"],
                    "template": template or None,
                    "n": row["n"],
                    "mean_a": row["mean_a"],
                    "mean_b": row["mean_b"],
                    "delta": row["delta"],
                    "errors_a": row.get("errors_a"),
                    "errors_b": row.get("errors_b"),
                    "ci": [row["ci_low"], row["ci_high"]]
                    if row["ci_low"] is not None and row["ci_high"] is not None
                    else None,
                    "p_value": row["p_value"],
                    "p_adjusted": row.get("p_adjusted"),
                    "testable": row.get("testable"),
                    "better": row["better"],
                    "wins": row["wins"],
                    "losses": row["losses"],
                    "ties": row["ties"],
                    **{k: row[k] for k in ("judge_se", "within_judge_noise") if k in row},
                }
            )
    alpha = method.get("alpha")
    return {
        "a": labels.get("a"),
        "b": labels.get("b"),
        "delta": "mean b - mean a over the questions both answered",
        "method": "paired sign-flip permutation test; p_adjusted: Holm within the overall rows "
        "and within the per-template rows; better: p_adjusted < alpha"
        + (f" ({alpha:g})" if isinstance(alpha, float) else ""),
        "errors": method.get("errors"),
        "metrics": rows,
    }
