"""Quality gates for CI: what passes, what fails, and what kept a run from being complete.

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

The files a CI job shows are written from these decisions: :mod:`qa_eval.cli.junit` (JUnit XML)
and :mod:`qa_eval.cli.summary` (the Markdown summary).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..aggregate import STEP_METRICS, as_float, is_error, is_finite_number, is_number, mean_of
from ..errors import QaEvalError
from ..run.question import NO_RESPONSE

__all__ = [
    "AGREEMENT_FIGURES",
    "Gate",
    "Problems",
    "agreement_gates",
    "check_names",
    "fail_under_gates",
    "known_metrics",
    "metric_errors_of",
    "parse_bars",
    "parse_label_thresholds",
    "parse_pass_thresholds",
    "parse_regressions",
    "problems_of",
    "question_checks",
    "regression_gates",
    "strict_gate",
]

STEP_METRIC_NAMES = frozenset(m for names in STEP_METRICS.values() for m in names)
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


def _assignments(items: Iterable[str], option: str, form: str) -> dict[str, float]:
    """``NAME=VALUE`` items of ``option`` (``form`` names them in the error) as name -> value."""
    values: dict[str, float] = {}
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name or not value.strip():
            raise QaEvalError(f"{option} takes {form}, not {item!r}")
        if name in values:
            raise QaEvalError(f"{option} {name} is given twice")
        values[name] = _number(value.strip(), option, item)
    return values


def known_metrics(config: Any = None, results: Iterable[Any] = ()) -> list[str]:
    """The metric names an option may name: every key the registry aggregates, the step
    metrics, the outputs of ``config``'s custom metrics, and the numeric keys of ``results``."""
    from ..aggregate import METRICS

    custom = [o for m in getattr(config, "custom_definitions", ()) for o in m.outputs]
    present = [
        k
        for r in results
        if isinstance(r, Mapping)
        for k, v in r.items()
        if is_number(v) and not isinstance(v, bool)
    ]
    return list(dict.fromkeys([*METRICS, *sorted(STEP_METRIC_NAMES), *custom, *present]))


def check_result_keys(option: str, names: Sequence[str], results: Iterable[Any]) -> None:
    """A ``QaEvalError`` (exit code 2) for a key of ``names`` that no metric family writes and no
    result has: a typo, never a silent skip (the nearest keys named)."""
    if not names:
        return
    from ..vocabulary.lookup import key_info

    present = {k for r in results if isinstance(r, Mapping) for k in r}
    check_names(option, names, sorted(present | {m for m in names if key_info(m)}), "key")


def check_names(option: str, names: Iterable[str], known: Sequence[str], what: str) -> None:
    """A ``QaEvalError`` (exit code 2) for the first of ``names`` not in ``known``, naming the
    nearest known names (``what``: the kind of name, e.g. ``metric``)."""
    for name in names:
        if name in known:
            continue
        import difflib

        nearest = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
        if len(known) <= 12:
            hint = f" (known: {', '.join(known) or 'none'})"
        else:
            hint = " ('qa-eval metrics' lists them)"
        if nearest:
            hint = f"; did you mean {', '.join(nearest)}?" + hint
        raise QaEvalError(f"{option} {name}: unknown {what}{hint}")


def parse_bars(items: Iterable[str]) -> list[tuple[str, float]]:
    """``METRIC=VALUE`` items of ``--fail-under`` as (metric, bar); ``QaEvalError`` when bad."""
    return list(_assignments(items, "--fail-under", "METRIC=VALUE").items())


def parse_pass_thresholds(items: Iterable[str]) -> dict[str, float]:
    """``KEY=VALUE`` items of ``--pass-threshold`` as metric -> value; ``QaEvalError`` when
    bad."""
    return _assignments(items, "--pass-threshold", "KEY=VALUE")


def parse_label_thresholds(items: Iterable[str]) -> dict[str, float]:
    """``METRIC=VALUE`` items of ``--threshold`` (agreement, report) as metric -> value."""
    return _assignments(items, "--threshold", "METRIC=VALUE")


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
        return (as_float(block["mean"]) if n else None), n
    values = [v for r in results if (v := as_float(r.get(metric))) is not None]
    if not values:
        return None, 0
    return mean_of(values), len(values)


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
            if n:
                detail = f"the micro mean of {metric} is beyond the float range (n = {n})"
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
            if entry is not None and n:
                detail = f"the delta of {metric} is beyond the float range (n = {n})"
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


AGREEMENT_FIGURES = ("accuracy", "kappa", "auc", "spearman", "kendall")
"""The figures of an agreement report that ``agreement --fail-under`` can gate on."""


def agreement_gates(report: Mapping[str, Any], bars: Sequence[tuple[str, float]]) -> list[Gate]:
    """One ``fail-under`` gate per (figure, bar) and judge: passes when the judge's figure on
    every measured metric that has it is at least the bar (the point estimate, as
    ``evaluate --fail-under`` gates the mean); a figure no metric has fails."""
    gates = []
    for figure, bar in bars:
        if figure not in AGREEMENT_FIGURES:
            raise QaEvalError(
                f"--fail-under {figure}: an agreement gate is one of {', '.join(AGREEMENT_FIGURES)}"
            )
        for judge in report.get("judges", []):
            rows = [m for m in judge.get("metrics", []) if figure in m]
            target = f"{figure} >= {_fmt(bar)}"
            if not rows:
                detail = f"no measured metric has a {figure} (see docs/agreement.md)"
                gates.append(Gate("fail-under", target, False, detail, judge.get("label")))
                continue
            for row in rows:
                value, n = row.get(figure), row.get("n")
                where = f"{judge.get('label')}, {row['metric']}"
                if value is None:
                    detail = f"{figure} is undefined (n = {n}: one class only?)"
                    gates.append(Gate("fail-under", target, False, detail, where))
                    continue
                passed = value >= bar
                relation = ">=" if passed else "<"
                interval = row.get(f"{figure}_ci") or [None, None]
                shown = (
                    f", 95% interval [{interval[0]:.3f}, {interval[1]:.3f}]"
                    if interval[0] is not None and interval[1] is not None
                    else ""
                )
                detail = f"{figure} {value:.4f} {relation} {_fmt(bar)}{shown} (n = {n})"
                gates.append(Gate("fail-under", target, passed, detail, where))
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
            if value and key.endswith("_error") and key[: -len("_error")] in STEP_METRIC_NAMES:
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


def plural(n: int, word: str) -> str:
    """``1 question``, ``2 questions``: a count with its noun."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def strict_gate(problems: Problems, system: str | None = None) -> Gate:
    """The ``--strict`` gate: passes when every question was evaluated completely."""
    parts = []
    if problems.metric_errors:
        keys = sorted(problems.metric_errors.items(), key=lambda kv: -len(kv[1]))
        counts = ", ".join(f"{key} {len(v)}" for key, v in keys)
        first_key, first = keys[0][0], keys[0][1][0]
        parts.append(
            f"{plural(problems.metric_error_count, 'metric value')} not computed ({counts}; "
            f"e.g. question {first[0]!r}: {first_key}: {short(first[1])})"
        )
    if problems.no_response:
        shown = ", ".join(repr(q) for q in problems.no_response[:3])
        more = "" if len(problems.no_response) <= 3 else ", ..."
        parts.append(
            f"{plural(len(problems.no_response), 'question')} with no response ({shown}{more})"
        )
    if problems.step_errors:
        qid, message = problems.step_errors[0]
        parts.append(
            f"{plural(len(problems.step_errors), 'question')} with steps that could not be "
            f"compared (e.g. question {qid!r}: {short(message)})"
        )
    if problems.ignored_responses:
        parts.append(
            f"{plural(problems.ignored_responses, 'response')} for question ids not in the "
            "reference ignored"
        )
    target = f"(all {problems.questions} questions evaluated completely)"
    if not parts:
        detail = "every metric computed, every step compared, every question answered"
        return Gate("strict", target, True, detail, system)
    return Gate("strict", target, False, "; ".join(parts), system)


def short(text: str, limit: int = 120) -> str:
    """Text on one line, cut to ``limit`` characters with an ellipsis."""
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
