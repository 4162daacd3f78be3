"""Quality gates for CI, and the files a CI job shows: JUnit XML and a Markdown summary.

Gates (each passes or fails; the CLI exits 3 when one fails, see docs/ci.md):

- ``fail-under METRIC=VALUE``: the micro mean of METRIC (over every question with a value, as the
  summary shows it) is at least VALUE. A metric with no value at all fails.
- ``fail-on-regression METRIC[:MARGIN]``: fails when the comparison's overall row says A is
  significantly better than B (``better == "a"``) and B is worse by more than MARGIN
  (``|delta| > MARGIN``, default 0). A metric with no paired values fails: nothing shows B is not
  worse.
- ``strict``: fails when the run is incomplete: a metric value could not be computed (a
  ``*_error`` key in a result, or a retrieval metric's on a step: judge failures, budget skips,
  parse errors), a step could not be compared (``step_errors``), or a question had no response.

Everything read from results (ids, answers, error messages, metric names) is untrusted text: the
XML writer drops nothing and escapes everything (characters XML 1.0 cannot hold are written as
``\\uXXXX``), the Markdown writer escapes Markdown and HTML and keeps each value on one line.
"""

from __future__ import annotations

import html
import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..aggregate import SCORES, STEP_METRICS, is_error, is_finite_number, is_number
from ..errors import QaEvalError
from ..run.question import NO_RESPONSE

__all__ = [
    "Gate",
    "Problems",
    "fail_under_gates",
    "junit_xml",
    "markdown_compare",
    "markdown_evaluate",
    "md",
    "parse_bars",
    "parse_regressions",
    "problems_of",
    "question_checks",
    "regression_gates",
    "strict_gate",
    "xml_safe",
]

_STEP_METRIC_NAMES = frozenset(m for names in STEP_METRICS.values() for m in names)
_COPIED_ERROR = "answer_eval_error"
"""graphrag-eval's name for ``answer_correctness_error``; qa-eval writes both: counted once."""


@dataclass
class Gate:
    """One quality gate and its outcome."""

    kind: str
    """``fail-under``, ``fail-on-regression`` or ``strict``."""
    target: str
    """What is checked, e.g. ``answer_f1 >= 0.7``."""
    passed: bool
    detail: str
    """One line: the value found and why the gate passed or failed."""
    system: str | None = None
    """The system (``evaluate --system``) or ``A vs B`` (comparisons) the gate is about."""

    @property
    def name(self) -> str:
        """``kind target [system]``: the gate's name in messages and in the JUnit file."""
        where = f" [{self.system}]" if self.system is not None else ""
        return f"{self.kind} {self.target}{where}"

    def line(self) -> str:
        """One line for the terminal: ``gate FAILED: fail-under ...: detail``."""
        return f"gate {'passed' if self.passed else 'FAILED'}: {self.name}: {self.detail}"


# ------------------------------------------------------------------------------- parsing


def _number(text: str, option: str, item: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise QaEvalError(f"{option} {item!r}: {text!r} is not a number") from None
    if not math.isfinite(value):
        raise QaEvalError(f"{option} {item!r}: the value must be a finite number")
    return value


def parse_bars(items: Iterable[str]) -> list[tuple[str, float]]:
    """``METRIC=VALUE`` items of ``--fail-under`` as (metric, bar); ``QaEvalError`` when bad."""
    bars: dict[str, float] = {}
    for item in items:
        metric, sep, value = item.partition("=")
        metric = metric.strip()
        if not sep or not metric or not value.strip():
            raise QaEvalError(f"--fail-under takes METRIC=VALUE, not {item!r}")
        if metric in bars:
            raise QaEvalError(f"--fail-under {metric} is given twice")
        bars[metric] = _number(value.strip(), "--fail-under", item)
    return list(bars.items())


def parse_regressions(items: Iterable[str]) -> list[tuple[str, float]]:
    """``METRIC`` or ``METRIC:MARGIN`` items of ``--fail-on-regression`` as (metric, margin)."""
    specs: dict[str, float] = {}
    for item in items:
        metric, sep, margin_text = item.partition(":")
        metric = metric.strip()
        if not metric or (sep and not margin_text.strip()):
            raise QaEvalError(f"--fail-on-regression takes METRIC or METRIC:MARGIN, not {item!r}")
        margin = _number(margin_text.strip(), "--fail-on-regression", item) if sep else 0.0
        if margin < 0:
            raise QaEvalError(f"--fail-on-regression {item!r}: the margin must not be negative")
        if metric in specs:
            raise QaEvalError(f"--fail-on-regression {metric} is given twice")
        specs[metric] = margin
    return list(specs.items())


# ------------------------------------------------------------------------------- the gates


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _micro(
    aggregates: Mapping[str, Any], results: Sequence[Mapping[str, Any]], metric: str
) -> tuple[float | None, int]:
    """(micro mean, n) from the aggregates, or from the results for keys they do not aggregate
    (custom metric outputs)."""
    block = aggregates.get("micro", {}).get(metric)
    if isinstance(block, Mapping) and "n" in block:
        n = int(block.get("n") or 0)
        return (float(block["mean"]) if n else None), n
    values = [float(r[metric]) for r in results if is_finite_number(r.get(metric))]
    if not values:
        return None, 0
    return math.fsum(values) / len(values), len(values)


def fail_under_gates(
    aggregates: Mapping[str, Any],
    results: Sequence[Mapping[str, Any]],
    bars: Sequence[tuple[str, float]],
    system: str | None = None,
) -> list[Gate]:
    """One ``fail-under`` gate per (metric, bar): passes when the micro mean is at least the bar."""
    gates = []
    for metric, bar in bars:
        mean, n = _micro(aggregates, results, metric)
        target = f"{metric} >= {_fmt(bar)}"
        if mean is None:
            detail = f"no question has a value of {metric}: it was not computed in this run"
            gates.append(Gate("fail-under", target, False, detail, system))
            continue
        passed = mean >= bar
        relation = ">=" if passed else "<"
        detail = f"micro mean {mean:.4f} {relation} {_fmt(bar)} (n = {n})"
        gates.append(Gate("fail-under", target, passed, detail, system))
    return gates


def regression_gates(
    comparison: Mapping[str, Any],
    specs: Sequence[tuple[str, float]],
    system: str | None = None,
) -> list[Gate]:
    """One ``fail-on-regression`` gate per (metric, margin) of a ``compare_runs`` result."""
    labels = comparison.get("labels", {})
    label_a, label_b = labels.get("a", "A"), labels.get("b", "B")
    where = system if system is not None else f"{label_a} vs {label_b}"
    entries = {e.get("metric"): e for e in comparison.get("metrics", [])}
    gates = []
    for metric, margin in specs:
        target = metric + (f" (margin {_fmt(margin)})" if margin else "")
        entry = entries.get(metric)
        overall: Mapping[str, Any] = entry.get("overall", {}) if entry else {}
        delta, n = overall.get("delta"), overall.get("n") or 0
        if entry is None or delta is None or not n:
            detail = f"no question has a value of {metric} in both runs: nothing to compare"
            gates.append(Gate("fail-on-regression", target, False, detail, where))
            continue
        p = overall.get("p_adjusted", overall.get("p_value"))
        p_name = "adjusted p" if "p_adjusted" in overall else "p"
        p_text = f", {p_name} {p:.3g}" if is_number(p) else ""
        means = (
            f"mean {label_a} {_fmt(overall.get('mean_a'))}, mean {label_b} "
            f"{_fmt(overall.get('mean_b'))}, delta {delta:+.4f}{p_text}, n = {n}"
        )
        if overall.get("better") == "a":
            if abs(delta) > margin:
                detail = f"{label_b} is significantly worse than {label_a}: {means}"
                if margin:
                    detail += f"; beyond the margin {_fmt(margin)}"
                gates.append(Gate("fail-on-regression", target, False, detail, where))
                continue
            detail = f"significantly worse, within the margin {_fmt(margin)}: {means}"
        else:
            detail = f"no significant regression: {means}"
        gates.append(Gate("fail-on-regression", target, True, detail, where))
    return gates


@dataclass
class Problems:
    """What kept a run from being complete, question by question."""

    questions: int = 0
    no_response: list[Any] = field(default_factory=list)
    """Question ids without a response."""
    error_responses: int = 0
    """Error responses of the system (not counted by ``--strict``: they are scored failures)."""
    metric_errors: dict[str, list[tuple[Any, str]]] = field(default_factory=dict)
    """``*_error`` key -> (question id, message) of every value that could not be computed."""
    step_errors: list[tuple[Any, str]] = field(default_factory=list)
    """(question id, first problem) of each question with ``step_errors``."""
    ignored_responses: int = 0
    """Responses for question ids not in the reference, left out of the run (its signature's
    ``ignored_responses``)."""

    @property
    def metric_error_count(self) -> int:
        """How many metric values could not be computed."""
        return sum(len(v) for v in self.metric_errors.values())

    def incomplete(self) -> bool:
        """Whether ``--strict`` fails on these problems."""
        return bool(
            self.no_response or self.metric_errors or self.step_errors or self.ignored_responses
        )


def metric_errors_of(result: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(``*_error`` key, message) of every metric value of one result that was not computed:
    the result's own ``*_error`` keys and the retrieval metrics' on its steps."""
    found = []
    copy = "answer_correctness_error" in result
    for key, value in result.items():
        if key.endswith("_error") and value and not (copy and key == _COPIED_ERROR):
            found.append((key, str(value)))
    for step in result.get("actual_steps") or ():
        if not isinstance(step, Mapping):
            continue
        for key, value in step.items():
            if value and key.endswith("_error") and key[: -len("_error")] in _STEP_METRIC_NAMES:
                found.append((key, str(value)))
    return found


def problems_of(results: Iterable[Mapping[str, Any]]) -> Problems:
    """Count what could not be evaluated: no responses, metric errors, uncomparable steps."""
    found = Problems()
    signature = getattr(results, "signature", None)
    if isinstance(signature, Mapping):
        ignored = signature.get("ignored_responses")
        if isinstance(ignored, Mapping) and isinstance(ignored.get("count"), int):
            found.ignored_responses = ignored["count"]
    for result in results:
        found.questions += 1
        qid = result.get("question_id")
        if is_error(result):
            if result.get("error") == NO_RESPONSE:
                found.no_response.append(qid)
            else:
                found.error_responses += 1
        for key, message in metric_errors_of(result):
            found.metric_errors.setdefault(key, []).append((qid, message))
        step_errors = result.get("step_errors")
        if step_errors:
            first = step_errors[0] if isinstance(step_errors, list) else step_errors
            found.step_errors.append((qid, str(first)))
    return found


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def strict_gate(problems: Problems, system: str | None = None) -> Gate:
    """The ``--strict`` gate: passes when every question was evaluated completely."""
    parts = []
    if problems.metric_errors:
        keys = sorted(problems.metric_errors.items(), key=lambda kv: -len(kv[1]))
        counts = ", ".join(f"{key} {len(v)}" for key, v in keys)
        first_key, first = keys[0][0], keys[0][1][0]
        parts.append(
            f"{_plural(problems.metric_error_count, 'metric value')} not computed ({counts}; "
            f"e.g. question {first[0]!r}: {first_key}: {_short(first[1])})"
        )
    if problems.no_response:
        shown = ", ".join(repr(q) for q in problems.no_response[:3])
        more = "" if len(problems.no_response) <= 3 else ", ..."
        parts.append(
            f"{_plural(len(problems.no_response), 'question')} with no response ({shown}{more})"
        )
    if problems.step_errors:
        qid, message = problems.step_errors[0]
        parts.append(
            f"{_plural(len(problems.step_errors), 'question')} with steps that could not be "
            f"compared (e.g. question {qid!r}: {_short(message)})"
        )
    if problems.ignored_responses:
        parts.append(
            f"{_plural(problems.ignored_responses, 'response')} for question ids not in the "
            "reference ignored"
        )
    target = f"(all {problems.questions} questions evaluated completely)"
    if not parts:
        detail = "every metric computed, every step compared, every question answered"
        return Gate("strict", target, True, detail, system)
    return Gate("strict", target, False, "; ".join(parts), system)


def _short(text: str, limit: int = 120) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def question_checks(result: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(errors, failures) of one question, for its JUnit test case.

    Errors (the evaluation is incomplete): metric values not computed, steps not compared.
    Failures (the system fell short): no response, an error response, ``steps_score`` below 1."""
    errors = [f"{key}: {message}" for key, message in metric_errors_of(result)]
    step_errors = result.get("step_errors")
    if step_errors:
        for problem in step_errors if isinstance(step_errors, list) else [step_errors]:
            errors.append(f"step not compared: {problem}")
    failures = []
    if is_error(result):
        message = result.get("error")
        if message == NO_RESPONSE:
            failures.append(NO_RESPONSE)
        else:
            failures.append(f"error response: {message}" if message else "error response")
    score = result.get("steps_score")
    if is_finite_number(score) and score < 1:
        failures.append(f"steps_score {score:.4g} < 1")
    return errors, failures


# ------------------------------------------------------------------------------- JUnit XML

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_safe(value: Any) -> str:
    """Text that XML 1.0 can hold: characters it cannot (controls, lone surrogates, U+FFFE/F)
    are written as ``\\uXXXX``. ElementTree escapes ``& < > "`` itself."""
    return _NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", str(value))


def _case(
    suite: ET.Element, classname: str, name: str, errors: list[str], failures: list[str]
) -> tuple[int, int]:
    case = ET.SubElement(suite, "testcase", classname=xml_safe(classname), name=xml_safe(name))
    checks = errors + failures
    if not checks:
        return 0, 0
    tag = "error" if errors else "failure"
    message = checks[0] if len(checks) == 1 else f"{checks[0]} (and {len(checks) - 1} more)"
    element = ET.SubElement(case, tag, message=xml_safe(_short(message, 500)))
    element.set("type", "incomplete" if errors else "quality")
    element.text = xml_safe("\n".join(checks))
    return (1, 0) if errors else (0, 1)


def _suite(parent: ET.Element, name: str) -> ET.Element:
    return ET.SubElement(parent, "testsuite", name=xml_safe(name))


def _counts(element: ET.Element, tests: int, errors: int, failures: int) -> None:
    element.set("tests", str(tests))
    element.set("errors", str(errors))
    element.set("failures", str(failures))


def junit_xml(
    gates: Sequence[Gate],
    runs: Sequence[tuple[str | None, Sequence[Mapping[str, Any]]]] = (),
    name: str = "qa-eval",
) -> bytes:
    """A JUnit XML document: a ``gates`` suite (one test case per gate) and, for each run, a
    suite with one test case per question (class name: its template) and its failed checks."""
    root = ET.Element("testsuites", name=xml_safe(name))
    gate_suite = _suite(root, f"{name} gates")
    failed = 0
    for gate in gates:
        detail = [] if gate.passed else [gate.detail]
        failed += _case(gate_suite, f"{name}.gates", gate.name, [], detail)[1]
    _counts(gate_suite, len(gates), 0, failed)
    gate_suite.set("skipped", "0")
    totals = [len(gates), 0, failed]
    for system, results in runs:
        suite_name = f"{name} questions" + (f" [{system}]" if system is not None else "")
        suite = _suite(root, suite_name)
        counts = [0, 0, 0]
        for result in results:
            errors, failures = question_checks(result)
            template = result.get("template_id")
            classname = str(template) if template is not None else "questions"
            e, f = _case(suite, classname, str(result.get("question_id")), errors, failures)
            counts = [counts[0] + 1, counts[1] + e, counts[2] + f]
        _counts(suite, *counts)
        suite.set("skipped", "0")
        totals = [t + c for t, c in zip(totals, counts)]
    _counts(root, *totals)
    ET.indent(root)
    text = ET.tostring(root, encoding="unicode")
    return ('<?xml version="1.0" encoding="UTF-8"?>\n' + text + "\n").encode("utf-8")


# ------------------------------------------------------------------------------- Markdown

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~:@])")


def md(value: Any, limit: int = 200) -> str:
    """Untrusted text for a Markdown table cell or line: one line, at most ``limit`` characters,
    HTML escaped and every Markdown punctuation backslash-escaped."""
    text = _NOT_XML.sub(" ", " ".join(str(value).split()))
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    text = html.escape(text, quote=True)
    return _MD_SPECIAL.sub(r"\\\1", text)


def _num(value: Any, digits: int = 4) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}" if abs(value) < 1e5 else f"{value:.4g}"
    return md(value)


def _p(value: Any) -> str:
    if not is_finite_number(value):
        return "–"
    return "&lt;0\\.001" if value < 0.001 else f"{value:.3f}"


def _gate_lines(gates: Sequence[Gate]) -> list[str]:
    if not gates:
        return ["No gates were set."]
    lines = ["| gate | outcome | detail |", "|---|---|---|"]
    for gate in gates:
        outcome = "✅ passed" if gate.passed else "❌ **failed**"
        lines.append(f"| {md(gate.name)} | {outcome} | {md(gate.detail, 400)} |")
    return lines


def _headline(gates: Sequence[Gate]) -> str:
    failed = [g for g in gates if not g.passed]
    if not gates:
        return "no gates"
    if failed:
        return f"❌ {len(failed)} of {len(gates)} gates failed"
    return f"✅ all {len(gates)} gates passed"


def _problem_lines(problems: Problems) -> list[str]:
    lines = []
    if problems.no_response:
        shown = ", ".join(f"`{md(q, 60)}`" for q in problems.no_response[:5])
        more = " …" if len(problems.no_response) > 5 else ""
        lines.append(
            f"- {_plural(len(problems.no_response), 'question')} had no response: {shown}{more}"
        )
    if problems.error_responses:
        lines.append(
            f"- {_plural(problems.error_responses, 'error response')} of the system "
            "(scored as failures)"
        )
    for key, items in sorted(problems.metric_errors.items(), key=lambda kv: -len(kv[1])):
        qid, message = items[0]
        lines.append(
            f"- {md(key)}: {_plural(len(items), 'value')} not computed; e.g. question "
            f"{md(qid, 60)}: {md(message)}"
        )
    if problems.step_errors:
        qid, message = problems.step_errors[0]
        lines.append(
            f"- {_plural(len(problems.step_errors), 'question')} with steps that could not be "
            f"compared; e.g. question {md(qid, 60)}: {md(message)}"
        )
    return lines or ["None: every question answered, every metric computed, every step compared."]


def _headline_metrics(aggregates: Mapping[str, Any]) -> list[str]:
    micro, macro = aggregates.get("micro", {}), aggregates.get("macro", {})
    names = [*SCORES, *sorted(_STEP_METRIC_NAMES), "llm_cost"]
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
        problems = problems_of(results)
        micro = aggregates.get("micro", {})
        errors = micro.get("number_of_error_samples", 0)
        title = f"### System {md(system)}" if system is not None else "### Results"
        templates = len(aggregates.get("per_template", {}))
        out += [
            title,
            "",
            f"{_plural(problems.questions, 'question')} in {_plural(templates, 'template')}, "
            f"{_plural(errors, 'error')}.",
            "",
            *_headline_metrics(aggregates),
            "",
            "#### Problems",
            "",
            *_problem_lines(problems),
            "",
        ]
    out += ["### Gates", "", *_gate_lines(gates), ""]
    return "\n".join(out)


def _verdict(row: Mapping[str, Any], label_a: str, label_b: str) -> str:
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
    ]
    entries = comparison.get("metrics", [])
    has_adjusted = any("p_adjusted" in e.get("overall", {}) for e in entries)
    header = "| metric | n | mean A | mean B | delta | p |"
    rule = "|---|---:|---:|---:|---:|---:|"
    if has_adjusted:
        header, rule = header + " adjusted p |", rule + "---:|"
    out += [header + " verdict |", rule + "---|"]
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
    out += ["", "### Gates", "", *_gate_lines(gates), ""]
    if notes:
        out += ["### Notes", "", *(f"- {md(n, 400)}" for n in notes), ""]
    return "\n".join(out)
