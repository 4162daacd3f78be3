"""A comparison (``compare.compare_runs``) shown: the console table, fitted to the terminal's
width, and the flat rows the HTML report lists.
"""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Mapping, Sequence
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
    return textwrap.wrap(
        text, width, subsequent_indent=indent, break_long_words=True, break_on_hyphens=False
    ) or [""]


def _p_adj(row: Mapping[str, Any]) -> str:
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
        outcome = "; ".join(found)
    elif tested:
        metrics = "metric" if tested == 1 else f"{tested} metrics"
        outcome = f"no significant difference (p adj >= {alpha:g} on the {metrics} tested)"
    else:
        outcome = f"nothing could be tested: every metric has too few pairs ({too_few})"
    q = comparison["questions"]
    unpaired = [f"only {k.upper()} {q[f'only_{k}']}" for k in "ab" if q[f"only_{k}"]]
    unpaired += [f"{q['excluded']} left out"] if q.get("excluded") else []
    facts = [
        f"{q['paired']} paired questions" + (f" ({', '.join(unpaired)})" if unpaired else ""),
        f"errors: A {q['errors_a']}, B {q['errors_b']}",
    ]
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
    named_b = label_b if label_b == "B" else f"{label_b} (B)"
    named_a = label_a if label_a == "A" else f"{label_a} (A)"
    return [f"{named_b} against {named_a}: {outcome}", "; ".join(facts)]


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

    def metric_name(entry: Mapping[str, Any]) -> str:
        marks = {"lower": " (-)", "none": " (=)"}
        return str(entry["metric"]) + marks.get(entry["direction"], "")

    # (name, cells): cells None for a metric heading in the per-template block
    overall_rows: list[tuple[str, dict[str, str] | None]] = []
    template_rows: list[tuple[str, dict[str, str] | None]] = []
    untestable = hidden = 0
    marks: set[str] = set()  # the directions of the metrics shown
    noisy = any(
        row.get("within_judge_noise")
        for entry in comparison["metrics"]
        for row in (entry["overall"], *entry["per_template"])
    )
    for entry in comparison["metrics"]:
        scale = scale_of(str(entry["metric"]))
        if entry["overall"]["n"]:
            overall_rows.append((metric_name(entry), _cells(entry["overall"], scale, too_few)))
            untestable += not entry["overall"]["testable"]
            marks.add(entry["direction"])
        if len(comparison["templates"]) < 2:
            continue
        rows = [r for r in entry["per_template"] if r["n"]]
        untestable += sum(1 for r in rows if not r["testable"])
        kept = rows if per_template else [r for r in rows if r["testable"]]
        hidden += len(rows) - len(kept)
        if kept:
            template_rows.append((metric_name(entry), None))
            marks.add(entry["direction"])
            for row in kept:
                template_rows.append((f"  {row['template_id']}", _cells(row, scale, too_few)))

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

    out = [line for text in verdict_lines(comparison, labels) for line in _wrap(text, width, "  ")]
    if overall_rows:
        out += ["", *block("metric", overall_rows)]
    if template_rows:
        out += ["", *block("per template", template_rows)]
    if explain:
        notes = _legend(method, alpha, pct, too_few if untestable else None, noisy)
        if hidden:
            notes.append(f"--per-template lists the {_rows(hidden)} too few to test.")
    else:
        notes = [_short_note(alpha, too_few if untestable else None, marks, noisy, hidden)]
    if len(columns) < len(widths):
        notes.append(f"Columns left out to fit {width} characters; --format json has them all.")
    out.append("")
    for text in notes:
        out += _wrap(text, width)
    return "\n".join(out)


def _rows(count: int) -> str:
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
