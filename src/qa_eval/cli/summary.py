"""The Markdown summary of a CI job (``--summary-md``, e.g. ``$GITHUB_STEP_SUMMARY``): the
headline metrics, the problems of each run, the comparison's overall rows and the gates.

Everything read from results (ids, answers, error messages, metric names) is untrusted text: the
writer escapes Markdown and HTML and keeps each value on one line. What passes and what fails is
decided in :mod:`qa_eval.cli.gates`.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..aggregate import SCORES, is_finite_number
from .gates import STEP_METRIC_NAMES, Gate, Problems, plural, problems_of
from .junit import NOT_XML

__all__ = ["markdown_compare", "markdown_evaluate", "md"]

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~:@])")


def md(value: Any, limit: int = 200) -> str:
    """Untrusted text for a Markdown table cell or line: one line, at most ``limit`` characters,
    HTML escaped and every Markdown punctuation backslash-escaped."""
    text = NOT_XML.sub(" ", " ".join(str(value).split()))
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    text = html.escape(text, quote=True)
    return _MD_SPECIAL.sub(r"\\\1", text)


def _num(value: Any, digits: int = 4) -> str:
    """A number for a table cell (``–`` for none)."""
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}" if abs(value) < 1e5 else f"{value:.4g}"
    return md(value)


def _p(value: Any) -> str:
    """A p-value for a table cell: three decimals, or <0.001."""
    if not is_finite_number(value):
        return "–"
    return "&lt;0\\.001" if value < 0.001 else f"{value:.3f}"


def _gate_lines(gates: Sequence[Gate]) -> list[str]:
    """The gates as a Markdown table, one row each."""
    if not gates:
        return ["No gates were set."]
    lines = ["| gate | outcome | detail |", "|---|---|---|"]
    for gate in gates:
        outcome = "✅ passed" if gate.passed else "❌ **failed**"
        lines.append(f"| {md(gate.name)} | {outcome} | {md(gate.detail, 400)} |")
    return lines


def _headline(gates: Sequence[Gate]) -> str:
    """The title's verdict: how many gates failed, or that all passed."""
    failed = [g for g in gates if not g.passed]
    if not gates:
        return "no gates"
    if failed:
        return f"❌ {len(failed)} of {len(gates)} gates failed"
    return f"✅ all {len(gates)} gates passed"


def _problem_lines(problems: Problems) -> list[str]:
    """What kept a run from being complete, as a Markdown list."""
    lines = []
    if problems.no_response:
        shown = ", ".join(f"`{md(q, 60)}`" for q in problems.no_response[:5])
        more = " …" if len(problems.no_response) > 5 else ""
        lines.append(
            f"- {plural(len(problems.no_response), 'question')} had no response: {shown}{more}"
        )
    if problems.error_responses:
        lines.append(
            f"- {plural(problems.error_responses, 'error response')} of the system "
            "(scored as failures)"
        )
    for key, items in sorted(problems.metric_errors.items(), key=lambda kv: -len(kv[1])):
        qid, message = items[0]
        lines.append(
            f"- {md(key)}: {plural(len(items), 'value')} not computed; e.g. question "
            f"{md(qid, 60)}: {md(message)}"
        )
    if problems.step_errors:
        qid, message = problems.step_errors[0]
        lines.append(
            f"- {plural(len(problems.step_errors), 'question')} with steps that could not be "
            f"compared; e.g. question {md(qid, 60)}: {md(message)}"
        )
    return lines or ["None: every question answered, every metric computed, every step compared."]


def _headline_metrics(aggregates: Mapping[str, Any]) -> list[str]:
    """The micro and macro means of the headline metrics, as a Markdown table."""
    micro, macro = aggregates.get("micro", {}), aggregates.get("macro", {})
    names = [*SCORES, *sorted(STEP_METRIC_NAMES), "llm_cost"]
    rows = []
    for metric in names:
        block = micro.get(metric)
        if not isinstance(block, Mapping) or not block.get("n"):
            continue
        macro_mean = macro.get(metric, {}).get("mean") if macro.get(metric, {}).get("n") else None
        rows.append(
            f"| {md(metric)} | {_num(block.get('mean'))} | {_num(macro_mean)} | {block['n']} |"
        )
    if not rows:
        return ["No metric has a value."]
    return ["| metric | micro mean | macro mean | n |", "|---|---:|---:|---:|", *rows]


def markdown_evaluate(
    runs: Sequence[tuple[str | None, Sequence[Mapping[str, Any]], Mapping[str, Any]]],
    gates: Sequence[Gate],
) -> str:
    """A Markdown summary of an evaluation (each run: system name, results, aggregates) and its
    gates, for a CI job page (e.g. ``$GITHUB_STEP_SUMMARY``)."""
    out = [f"## qa-eval evaluate: {_headline(gates)}", ""]
    for system, results, aggregates in runs:
        out += _run_section(system, results, aggregates)
    out += ["### Gates", "", *_gate_lines(gates), ""]
    return "\n".join(out)


def _run_section(
    system: str | None, results: Sequence[Mapping[str, Any]], aggregates: Mapping[str, Any]
) -> list[str]:
    """One run's section: its counts, headline metrics and problems."""
    problems = problems_of(results)
    micro = aggregates.get("micro", {})
    errors = micro.get("number_of_error_samples", 0)
    title = f"### System {md(system)}" if system is not None else "### Results"
    templates = len(aggregates.get("per_template", {}))
    return [
        title,
        "",
        f"{plural(problems.questions, 'question')} in {plural(templates, 'template')}, "
        f"{plural(errors, 'error')}.",
        "",
        *_headline_metrics(aggregates),
        "",
        "#### Problems",
        "",
        *_problem_lines(problems),
        "",
    ]


def _verdict(row: Mapping[str, Any], label_a: str, label_b: str) -> str:
    """The verdict cell of an overall row: which run is better, or why none is."""
    better = row.get("better")
    if better == "b":
        return f"{md(label_b)} better"
    if better == "a":
        return f"**{md(label_b)} worse**"
    if row.get("testable") is False:
        return "too few questions to test"
    if row.get("n"):
        return "no significant difference"
    return "no pairs"


def markdown_compare(
    comparison: Mapping[str, Any], gates: Sequence[Gate], notes: Sequence[str] = ()
) -> str:
    """A Markdown summary of a ``compare_runs`` result (overall rows) and its gates."""
    labels = comparison.get("labels", {})
    label_a, label_b = str(labels.get("a", "A")), str(labels.get("b", "B"))
    q = comparison.get("questions", {})
    out = [
        f"## qa-eval compare: {_headline(gates)}",
        "",
        f"A = {md(label_a)}, B = {md(label_b)}; questions: A {_num(q.get('a'))}, B "
        f"{_num(q.get('b'))}, paired {_num(q.get('paired'))}; errors: A {_num(q.get('errors_a'))}"
        f", B {_num(q.get('errors_b'))}.",
        "",
        *_overall_table(comparison.get("metrics", []), label_a, label_b),
    ]
    out += ["", "### Gates", "", *_gate_lines(gates), ""]
    if notes:
        out += ["### Notes", "", *(f"- {md(n, 400)}" for n in notes), ""]
    return "\n".join(out)


def _overall_table(entries: Sequence[Mapping[str, Any]], label_a: str, label_b: str) -> list[str]:
    """The overall row of each metric compared, as a Markdown table with a verdict column."""
    has_adjusted = any("p_adjusted" in e.get("overall", {}) for e in entries)
    header = "| metric | n | mean A | mean B | delta | p |"
    rule = "|---|---:|---:|---:|---:|---:|"
    if has_adjusted:
        header, rule = header + " adjusted p |", rule + "---:|"
    out = [header + " verdict |", rule + "---|"]
    for entry in entries:
        row = entry.get("overall", {})
        name = md(entry.get("metric")) + (
            " (lower is better)" if entry.get("direction") == "lower" else ""
        )
        delta = row.get("delta")
        cells = [
            name,
            _num(row.get("n")),
            _num(row.get("mean_a")),
            _num(row.get("mean_b")),
            f"{delta:+.4f}" if isinstance(delta, (int, float)) else "–",
            _p(row.get("p_value")),
        ]
        if has_adjusted:
            cells.append(_p(row.get("p_adjusted")))
        cells.append(_verdict(row, label_a, label_b))
        out.append("| " + " | ".join(cells) + " |")
    return out
