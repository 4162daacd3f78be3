"""A comparison (``compare.compare_runs``) shown: the console table, fitted to the terminal's
width, and the flat rows the HTML report lists.
"""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..io.numbers import format_number, scale_of
from .signflip import EXACT_MAX_N

__all__ = ["format_table", "report_rows", "verdict_lines"]

_OPTIONAL_COLUMNS = (("mean A", "mean B"), ("W/L/T",), ("p",))
"""Columns left out, in this order, while the names would get fewer than _MIN_NAME columns."""


_MIN_NAME = 14


_MIN_WIDTH = 20


_DEFAULT_WIDTH = 100  # when the output is not a terminal


def _p(value: float | None) -> str:
    """A p-value: three decimals, or <0.001 (``-`` for none)."""
    if value is None:
        return "-"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def _fewest_testable(alpha: float) -> int | None:
    """The fewest pairs whose exact test can reach p < alpha (None: only with Monte Carlo)."""
    for n in range(2, EXACT_MAX_N + 1):
        if 2.0 ** (1 - n) < alpha:
            return n
    return None


def _cells(row: Mapping[str, Any], scale: str | None, too_few: str) -> dict[str, str]:
    """A row's cells as text, by column name (``too_few`` in ``p`` when it cannot be tested)."""
    if row["ci_low"] is None or row["ci_high"] is None:
        ci = "-"
    else:
        low = format_number(row["ci_low"], scale, signed=True)
        ci = f"[{low}, {format_number(row['ci_high'], scale, signed=True)}]"
    testable = row["testable"]
    return {
        "n": str(row["n"]),
        "mean A": format_number(row["mean_a"], scale),
        "mean B": format_number(row["mean_b"], scale),
        "delta": format_number(row["delta"], scale, signed=True)
        + ("~" if row.get("within_judge_noise") else ""),
        "err A/B": f"{row['errors_a']}/{row['errors_b']}",
        "CI": ci,
        "p": _p(row["p_value"]) if testable else too_few,
        "p adj": _p(row["p_adjusted"]) if testable else "-",
        "better": (row["better"] or "").upper(),
        "W/L/T": f"{row['wins']}/{row['losses']}/{row['ties']}",
    }


def _wrap(text: str, width: int, indent: str = "") -> list[str]:
    """Text wrapped at ``width``, long words broken, never empty."""
    return textwrap.wrap(
        text, width, subsequent_indent=indent, break_long_words=True, break_on_hyphens=False
    ) or [""]


def _p_adj(row: Mapping[str, Any]) -> str:
    """A row's adjusted p as text."""
    return _p(row["p_adjusted"])


def _significant(row: Mapping[str, Any], alpha: float) -> bool:
    """A testable row whose adjusted p is below alpha (a count's too, which gets no mark)."""
    p = row.get("p_adjusted")
    return bool(row["testable"]) and p is not None and p < alpha


def _changes(entries: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]]) -> str:
    """``m1 -0.659, m2 -16 (p adj 0.010 each)``, or each with its own p adj when they differ."""
    items = []
    for entry, row in entries:
        delta = format_number(row["delta"], scale_of(str(entry["metric"])), signed=True)
        items.append(f"{entry['metric']} {delta}{'~' if row.get('within_judge_noise') else ''}")
    ps = {_p_adj(row) for _, row in entries}
    if len(ps) == 1:
        each = " each" if len(items) > 1 else ""
        return f"{', '.join(items)} (p adj {ps.pop()}{each})"
    return ", ".join(f"{item} (p adj {_p_adj(row)})" for item, (_, row) in zip(items, entries))


def verdict_lines(
    comparison: Mapping[str, Any], labels: tuple[str, str] | None = None
) -> list[str]:
    """What a comparison found, in two lines (unwrapped): the metrics on which B is
    significantly worse, better or (a count) different from A, with each delta and adjusted p;
    then the paired questions, each run's errors and how many rows were too few to test."""
    label_a, label_b = labels or (comparison["labels"]["a"], comparison["labels"]["b"])
    method = comparison["method"]
    alpha = float(method.get("alpha", 1.0 - method["confidence"]))
    fewest = _fewest_testable(alpha)
    too_few = f"n<{fewest}" if fewest is not None else "too few pairs"
    shown = [(e, e["overall"]) for e in comparison["metrics"] if e["overall"]["n"]]
    outcome = _outcome(shown, alpha, too_few)
    facts = _facts(comparison, shown, alpha, too_few)
    named_b = label_b if label_b == "B" else f"{label_b} (B)"
    named_a = label_a if label_a == "A" else f"{label_a} (A)"
    return [f"{named_b} against {named_a}: {outcome}", "; ".join(facts)]


_Shown = Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]]
"""(metric entry, overall row) of each metric with values."""


def _outcome(shown: _Shown, alpha: float, too_few: str) -> str:
    """The verdict: the metrics B is significantly worse, better or different on, or that no
    difference was significant, or that nothing could be tested."""
    groups: dict[str, list[tuple[Mapping[str, Any], Mapping[str, Any]]]] = {
        "a": [],
        "b": [],
        "none": [],
    }
    for entry, row in shown:
        if _significant(row, alpha):
            groups[row["better"] or "none"].append((entry, row))
    found = [
        f"{word} on {_changes(groups[key])}"
        for key, word in (("a", "worse"), ("b", "better"), ("none", "different"))
        if groups[key]
    ]
    tested = sum(1 for _, row in shown if row["testable"])
    if found:
        return "; ".join(found)
    if tested:
        metrics = "metric" if tested == 1 else f"{tested} metrics"
        return f"no significant difference (p adj >= {alpha:g} on the {metrics} tested)"
    return f"nothing could be tested: every metric has too few pairs ({too_few})"


def _facts(comparison: Mapping[str, Any], shown: _Shown, alpha: float, too_few: str) -> list[str]:
    """The second line's facts: the questions paired and left out, each run's errors, and the
    rows too few to test (overall, and per template when there are templates)."""
    q = comparison["questions"]
    unpaired = [f"only {k.upper()} {q[f'only_{k}']}" for k in "ab" if q[f"only_{k}"]]
    unpaired += [f"{q['excluded']} left out"] if q.get("excluded") else []
    facts = [
        f"{q['paired']} paired questions" + (f" ({', '.join(unpaired)})" if unpaired else ""),
        f"errors: A {q['errors_a']}, B {q['errors_b']}",
    ]
    tested = sum(1 for _, row in shown if row["testable"])
    untested = len(shown) - tested
    if untested and tested:
        facts.append(f"{untested} of {len(shown)} metrics too few to test ({too_few})")
    rows = [r for e in comparison["metrics"] for r in e["per_template"] if r["n"]]
    if len(comparison["templates"]) > 1 and rows:
        marked = sum(1 for r in rows if _significant(r, alpha))
        small = sum(1 for r in rows if not r["testable"])
        if small == len(rows):
            facts.append(f"per template: all {small} rows too few to test ({too_few})")
        else:
            text = f"per template: {marked} of {len(rows)} rows significant"
            facts.append(text + (f", {small} too few to test ({too_few})" if small else ""))
    return facts


def format_table(
    comparison: Mapping[str, Any],
    *,
    labels: tuple[str, str] | None = None,
    width: int | None = None,
    per_template: bool = False,
    explain: bool = False,
) -> str:
    """A comparison as text at most ``width`` columns wide (default: the terminal's): the
    verdict (:func:`verdict_lines`), the overall table, the per-template rows that could be
    tested (all of them with ``per_template``), and a short note on the method (the full one
    with ``explain``). Rows without values are left out."""
    if width is None:
        width = shutil.get_terminal_size((_DEFAULT_WIDTH, 24)).columns
    width = max(_MIN_WIDTH, int(width))
    method = comparison["method"]
    alpha = float(method.get("alpha", 1.0 - method["confidence"]))
    pct = f"{method['confidence'] * 100:g}"
    fewest = _fewest_testable(alpha)
    too_few = f"n<{fewest}" if fewest is not None else "too few"
    rows = _table_rows(comparison, per_template, too_few)
    layout = _layout(rows, width, pct)
    out = [line for text in verdict_lines(comparison, labels) for line in _wrap(text, width, "  ")]
    if rows.overall:
        out += ["", *_block("metric", rows.overall, layout)]
    if rows.per_template:
        out += ["", *_block("per template", rows.per_template, layout)]
    out.append("")
    for text in _notes(method, alpha, pct, too_few, rows, explain, layout):
        out += _wrap(text, width)
    return "\n".join(out)


_Row = tuple[str, dict[str, str] | None]
"""(name, cells) of a table line; cells None for a metric's heading in the per-template block."""


@dataclass
class _TableRows:
    """The lines of the two tables, and what the note under them mentions."""

    overall: list[_Row] = field(default_factory=list)
    per_template: list[_Row] = field(default_factory=list)
    untestable: int = 0
    """Rows with too few pairs to test (overall and per template, shown or not)."""
    hidden: int = 0
    """Per-template rows too few to test and left out (without ``per_template``)."""
    marks: set[str] = field(default_factory=set)
    """The directions of the metrics shown."""
    noisy: bool = False
    """Whether some row's delta is within the judge's noise."""


def _metric_name(entry: Mapping[str, Any]) -> str:
    """A metric's name with its direction's mark: ``(-)`` lower is better, ``(=)`` a count."""
    marks = {"lower": " (-)", "none": " (=)"}
    return str(entry["metric"]) + marks.get(entry["direction"], "")


def _table_rows(comparison: Mapping[str, Any], per_template: bool, too_few: str) -> _TableRows:
    """The rows with values, as table lines: every overall row, and the per-template rows that
    could be tested (all with ``per_template``) under their metric's heading."""
    rows = _TableRows()
    rows.noisy = any(
        row.get("within_judge_noise")
        for entry in comparison["metrics"]
        for row in (entry["overall"], *entry["per_template"])
    )
    for entry in comparison["metrics"]:
        scale = scale_of(str(entry["metric"]))
        if entry["overall"]["n"]:
            rows.overall.append((_metric_name(entry), _cells(entry["overall"], scale, too_few)))
            rows.untestable += not entry["overall"]["testable"]
            rows.marks.add(entry["direction"])
        if len(comparison["templates"]) < 2:
            continue
        valued = [r for r in entry["per_template"] if r["n"]]
        rows.untestable += sum(1 for r in valued if not r["testable"])
        kept = valued if per_template else [r for r in valued if r["testable"]]
        rows.hidden += len(valued) - len(kept)
        if kept:
            rows.per_template.append((_metric_name(entry), None))
            rows.marks.add(entry["direction"])
            for row in kept:
                rows.per_template.append((f"  {row['template_id']}", _cells(row, scale, too_few)))
    return rows


@dataclass(frozen=True)
class _Layout:
    """How the tables fit the width: the columns kept, their widths and the names' width; or
    one wrapped record per row when even the names do not fit beside the columns."""

    width: int
    headers: Mapping[str, str]
    columns: list[str]
    widths: Mapping[str, int]
    name_width: int
    tabular: bool


def _layout(rows: _TableRows, width: int, pct: str) -> _Layout:
    """Fit the tables to ``width``: leave out the optional columns, in order, while the names
    would get fewer than ``_MIN_NAME`` columns; too narrow still, one record per row."""
    headers = {"CI": f"{pct}% CI"}
    columns = ["n", "mean A", "mean B", "delta", "err A/B", "CI", "p", "p adj", "better", "W/L/T"]
    filled = [cells for _, cells in rows.overall + rows.per_template if cells is not None]
    widths = {
        c: max([len(headers.get(c, c)), *(len(cells[c]) for cells in filled)]) for c in columns
    }

    def name_room(kept: list[str]) -> int:
        return width - sum(widths[c] + 1 for c in kept)

    for group in _OPTIONAL_COLUMNS:
        if name_room(columns) >= _MIN_NAME:
            break
        columns = [c for c in columns if c not in group]
    names = [name for name, _ in rows.overall + rows.per_template] + ["per template"]
    name_width = min(max(len(name) for name in names), name_room(columns))
    tabular = name_width >= _MIN_NAME or name_room(columns) >= max(len(n) for n in names)
    if not tabular:  # records wrap, so they can hold every column
        columns = list(widths)
    return _Layout(width, headers, columns, widths, name_width, tabular)


def _block(title: str, rows: list[_Row], layout: _Layout) -> list[str]:
    """One table (its title line, a rule, its lines), or its records when not tabular."""
    if not layout.tabular:
        return _records(title, rows, layout)
    headers, columns, widths = layout.headers, layout.columns, layout.widths

    def line(name: str, values: Sequence[str]) -> str:
        parts = [
            name.ljust(layout.name_width),
            *(v.rjust(widths[c]) for c, v in zip(columns, values)),
        ]
        return " ".join(parts).rstrip()

    lines = [line(title, [headers.get(c, c) for c in columns])]
    lines.append("-" * len(lines[0]))
    for name, cells in rows:
        if cells is None or len(name) > layout.name_width:  # a heading or a long name: own line(s)
            lines += _wrap(name, layout.width, "  ")
            name = ""
        if cells is not None:
            lines.append(line(name, [cells[c] for c in columns]))
    return lines


def _records(title: str, rows: list[_Row], layout: _Layout) -> list[str]:
    """A table too narrow for columns: one record per row, wrapped."""
    width, headers = layout.width, layout.headers
    lines = [title, "-" * min(width, len(title))]
    for name, cells in rows:
        lines += _wrap(name, width, "    ")
        if cells is not None:
            fields = " · ".join(
                f"{headers.get(c, c)} {cells[c].replace(', ', ',') or '-'}" for c in layout.columns
            )
            lines += _wrap("    " + fields, width, "    ")
    return lines


def _notes(
    method: Mapping[str, Any],
    alpha: float,
    pct: str,
    too_few: str,
    rows: _TableRows,
    explain: bool,
    layout: _Layout,
) -> list[str]:
    """The note under the tables: the short one, or the method in full with ``explain``; and
    which columns were left out to fit."""
    shown_too_few = too_few if rows.untestable else None
    if explain:
        notes = _legend(method, alpha, pct, shown_too_few, rows.noisy)
        if rows.hidden:
            notes.append(f"--per-template lists the {_rows(rows.hidden)} too few to test.")
    else:
        notes = [_short_note(alpha, shown_too_few, rows.marks, rows.noisy, rows.hidden)]
    if len(layout.columns) < len(layout.widths):
        notes.append(
            f"Columns left out to fit {layout.width} characters; --format json has them all."
        )
    return notes


def _rows(count: int) -> str:
    """``1 per-template row``, ``2 per-template rows``."""
    return f"{count} per-template row" + ("" if count == 1 else "s")


def _short_note(
    alpha: float, too_few: str | None, marks: set[str], noisy: bool, hidden: int
) -> str:
    """The method in a sentence or two (``--explain`` prints :func:`_legend` instead)."""
    parts = ["delta = B - A", f"p adj: Holm-adjusted paired sign-flip test, better if < {alpha:g}"]
    if "lower" in marks:
        parts.append("(-) lower is better")
    if "none" in marks:
        parts.append("(=) a count, neither is better")
    if too_few is not None:
        parts.append(f"{too_few}: too few pairs to test")
    if noisy:
        parts.append("~: |delta| < 2 judge standard errors")
    more = "--explain (the method)"
    if hidden:
        more += f", --per-template ({hidden} more row{'' if hidden == 1 else 's'})"
    return "; ".join(parts) + f". More: {more}."


def _legend(
    method: Mapping[str, Any], alpha: float, pct: str, too_few: str | None, noisy: bool
) -> list[str]:
    """The full note on the method under the table (``--explain``)."""
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
    if too_few is not None:
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
    return legend


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
