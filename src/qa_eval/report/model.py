"""The numbers of the report, as small typed records built from what the library computes.

Per run the statistics are :func:`qa_eval.aggregate.compute_aggregates` (micro, macro, per
template, step counters, label counts) and the verdict of two runs is
:func:`qa_eval.compare.compare_runs` (paired sign-flip test, Holm-adjusted, direction per
metric). This module computes no statistic of its own: it reads those two outputs, takes each
metric's direction from the comparison (or the registry's :func:`qa_eval.metrics.direction`),
and keeps the per-question values the histograms need.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..aggregate import (
    METRICS,
    SCORES,
    STEP_METRICS,
    as_float,
    compute_aggregates,
    is_finite_number,
)
from ..compare.values import default_metrics
from ..errors import InputError
from ..judge.repeats import MARKER
from ..metrics.agents.trials import table_rows
from ..vocabulary.lookup import direction as metric_direction
from .runfacts import judge_usage, label_flips, trial_consistency
from .worth import MostWorth

__all__ = [
    "ComparisonRow",
    "Group",
    "Metric",
    "RunSummary",
    "Stat",
    "StepCount",
    "StepTally",
    "Verdict",
    "metric_list",
    "summarize_run",
    "verdict_of",
]

NO_TEMPLATE = "(no template)"
HEADLINE_USAGE = ("total_tokens", "elapsed_sec", "llm_cost")
"""Lower-is-better metrics shown in the headline beside the scores (when present)."""
STEP_METRIC_OWNER = {m: step for step, names in STEP_METRICS.items() for m in names}
_TIE = 1e-12  # differences within this are ties (as in compare)


@dataclass(frozen=True)
class Metric:
    """A metric shown in the report: its direction and whether its values are 0-1 scores."""

    name: str
    direction: str  # "higher", "lower" or "none" (a count or ratio: neither is better)
    unit: bool  # every value lies in [0, 1]: charts use a 0-1 axis
    step: bool = False  # one value per step (retrieval_*), not per question

    @property
    def lower(self) -> bool:
        """Whether smaller values are better."""
        return self.direction == "lower"

    @property
    def higher(self) -> bool:
        """Whether larger values are better (a score)."""
        return self.direction == "higher"


@dataclass(frozen=True)
class Stat:
    """``describe`` of one metric in one group, as compute_aggregates writes it."""

    mean: float
    median: float
    min: float
    max: float
    n: int
    sd: float | None = None
    """The sample standard deviation between questions (written when the run has repeats)."""
    judge_sd: float | None = None
    """The judge's noise on one call (``--repeats``: sqrt of the mean per-question variance)."""
    judge_se: float | None = None
    """The standard error of the mean that the judge's noise alone causes."""
    judge_n: int = 0
    """The questions with at least 2 repeated values."""


@dataclass(frozen=True)
class Group:
    """One template (or all questions) of one run."""

    name: str
    questions: int
    errors: int
    stats: Mapping[str, Stat]


@dataclass(frozen=True)
class StepCount:
    """Per step name: compute_aggregates' counters and the reference steps matched."""

    name: str
    total: int
    once_per_sample: int
    empty_results: int
    errors: int
    expected: int
    matched: int


@dataclass(frozen=True)
class RunSummary:
    """What the report shows of one run."""

    label: str
    records: Sequence[Mapping[str, Any]]
    signature: Mapping[str, Any] | None
    questions: int
    errors: int
    micro: Group
    macro: Mapping[str, tuple[float, int]]
    templates: Sequence[Group]
    labels: Mapping[str, Mapping[str, int]]
    steps: Sequence[StepCount]
    judge_usage: Sequence[tuple[str, Any]]
    values: Mapping[str, Sequence[float]] = field(default_factory=dict)
    repeats: int | None = None
    """``judge_repeats`` of the run (the most any result has), None without repeats."""
    trials: list[tuple[Any, ...]] = field(default_factory=list)
    """Repeated trials: the pass@k table's rows (``qa_eval.metrics.agents.trials.table_rows``)."""
    consistency: Mapping[str, tuple[float, int]] = field(default_factory=dict)
    """Repeated trials: per template (and "all questions") the aggregates'
    ``trajectory_consistency`` (mean share of trials choosing the most common acceptable
    trajectory, questions)."""
    label_flips: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """The aggregates' ``label_flips``: per label or verdict list, ``{n, flipped, share}``."""

    @property
    def judged_twice(self) -> bool:
        """Whether the run measured its judge's variance (some metric has a ``judge_sd``)."""
        return any(s.judge_sd is not None for s in self.micro.stats.values())


@dataclass(frozen=True)
class ComparisonRow:
    """One row of compare_runs (overall when ``template`` is None)."""

    metric: str
    template: str | None
    direction: str
    n: int
    mean_a: float | None
    mean_b: float | None
    delta: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    p_adjusted: float | None
    better: str | None
    testable: bool
    wins: int
    losses: int
    ties: int
    errors_a: int
    errors_b: int
    judge_se: float | None = None
    """The standard error of ``delta`` that the judge's own noise causes (runs with repeats)."""
    within_judge_noise: bool | None = None
    """``|delta| < 2 judge_se``: a difference the judge's noise alone could make."""

    @property
    def outcome(self) -> str:
        """B against A: "better", "worse", "same" (not significant) or "untestable"."""
        if self.better == "b":
            return "better"
        if self.better == "a":
            return "worse"
        return "same" if self.testable else "untestable"

    @property
    def trend(self) -> str:
        """Which way the delta points in the metric's direction: "up", "down" or "flat" (also
        for a metric with direction "none", where neither way is better)."""
        if self.delta is None or abs(self.delta) <= _TIE or self.direction == "none":
            return "flat"
        return "up" if (self.delta > 0) != (self.direction == "lower") else "down"


@dataclass(frozen=True)
class Verdict:
    """The comparison of the first two runs (B against A)."""

    label_a: str
    label_b: str
    overall: Sequence[ComparisonRow]
    per_template: Sequence[ComparisonRow]
    questions: Mapping[str, Any]
    method: Mapping[str, Any]
    paired_by: str  # "question_id" or "template_id+question_id"
    per_template_total: int | None = None
    """How many per-template rows the comparison has, when :attr:`per_template` holds only
    some of them (None: it holds all)."""
    noise_left_out: bool = False
    """Whether a per-template row left out carries the judge's noise."""

    @property
    def left_out(self) -> int:
        """How many per-template rows are not in :attr:`per_template`."""
        total = self.per_template_total
        return 0 if total is None else total - len(self.per_template)

    @property
    def alpha(self) -> float:
        """The significance level of the marks."""
        value = self.method.get("alpha")
        return float(value) if is_finite_number(value) else 0.05

    def rows(self, outcome: str) -> list[ComparisonRow]:
        """The overall rows with one outcome."""
        return [r for r in self.overall if r.outcome == outcome]

    @property
    def judge_noise(self) -> bool:
        """Whether any row carries the judge's noise (a run was scored with repeats)."""
        rows = (*self.overall, *self.per_template)
        return self.noise_left_out or any(r.judge_se is not None for r in rows)

    @property
    def within_noise(self) -> list[ComparisonRow]:
        """The overall rows whose delta is within the judge's own noise."""
        return [r for r in self.overall if r.within_judge_noise]


def _stat(value: Any) -> Stat | None:
    if not isinstance(value, Mapping) or "mean" not in value or not value.get("n"):
        return None
    judge_n = value.get("judge_n")
    return Stat(
        value["mean"],
        value["median"],
        value["min"],
        value["max"],
        int(value["n"]),
        sd=_number(value.get("sd")),
        judge_sd=_number(value.get("judge_sd")),
        judge_se=_number(value.get("judge_se")),
        judge_n=judge_n if isinstance(judge_n, int) and not isinstance(judge_n, bool) else 0,
    )


def _group(name: str, summary: Mapping[str, Any], metrics: Iterable[str]) -> Group:
    stats = {m: s for m in metrics if (s := _stat(summary.get(m))) is not None}
    errors = int(summary.get("number_of_error_samples", 0))
    return Group(name, errors + int(summary.get("number_of_success_samples", 0)), errors, stats)


def template_name(value: Any) -> str:
    """The shown name of a template id (None as "(no template)")."""
    return NO_TEMPLATE if value is None else str(value)


_SCALARS = (str, int, float, bool, type(None))


def _records(label: str, results: Iterable[Any]) -> list[Mapping[str, Any]]:
    """The results of a run, each checked (:func:`check_record`)."""
    out = []
    for position, result in enumerate(results):
        check_record(label, position, result)
        out.append(result)
    return out


def check_record(label: str, position: int, result: Any) -> None:
    """``InputError`` for a result of run ``label`` (at ``position``) whose shape the
    aggregates and the comparison rely on (everything else is only shown, whatever it holds)."""
    record = f"result [{position}]"
    if not isinstance(result, Mapping):
        raise InputError(
            f"must be a mapping, got {type(result).__name__}",
            source=f"run {label}",
            record=record,
        )
    if isinstance(result.get("question_id"), _SCALARS):
        record += f" (question {result.get('question_id')!r})"

    def bad(field: str, problem: str) -> InputError:
        return InputError(problem, source=f"run {label}", record=record, field=field)

    for key in ("question_id", "template_id"):
        if not isinstance(result.get(key), _SCALARS):
            raise bad(key, f"must be text or a number, got {type(result[key]).__name__}")
    steps = result.get("actual_steps")
    if steps is not None and not isinstance(steps, list):
        raise bad("actual_steps", f"must be a list, got {type(steps).__name__}")
    for index, step in enumerate(steps or ()):
        if not isinstance(step, Mapping) or not isinstance(step.get("name"), _SCALARS):
            raise bad(f"actual_steps[{index}]", "must be a mapping with a text name")
    groups = result.get("reference_steps")
    if groups is not None and not isinstance(groups, list):
        raise bad("reference_steps", f"must be a list, got {type(groups).__name__}")


def metric_names(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """The metrics of a run, as compare names them (aggregate.METRICS, step metrics, then any
    other numeric key such as a custom metric's outputs)."""
    return default_metrics(records)


def values_of(records: Sequence[Mapping[str, Any]], metric: str) -> list[float]:
    """Every finite value of a metric: one per question, or one per step for step metrics."""
    owner = STEP_METRIC_OWNER.get(metric)
    if owner is None:
        return [v for r in records if (v := as_float(r.get(metric))) is not None]
    out: list[float] = []
    for result in records:
        for step in result.get("actual_steps") or ():
            if isinstance(step, Mapping) and step.get("name") == owner:
                value = as_float(step.get(metric))
                if value is not None:
                    out.append(value)
    return out


def _reference_steps(result: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    groups = result.get("reference_steps")
    out: list[Mapping[str, Any]] = []
    for group in groups if isinstance(groups, list) else ():
        for step in group if isinstance(group, list) else [group]:
            if isinstance(step, Mapping):
                out.append(step)
    return out


def summarize_run(
    label: str, results: Sequence[Any], signature: Mapping[str, Any] | None
) -> RunSummary:
    """A run's summary from compute_aggregates (and the values its histograms need)."""
    records = _records(label, results)
    names = metric_names(records)
    aggregates = compute_aggregates(
        [r if isinstance(r, dict) else dict(r) for r in records],
        extra_metrics=extra_metrics(names),
        pass_thresholds=signature_thresholds(signature),
    )
    steps = StepTally()
    for result in records:
        steps.add(result)
    metrics = stat_metrics(aggregates)
    return summary_of(
        label,
        signature,
        aggregates,
        records=records,
        count=len(records),
        values={m: values_of(records, m) for m in metrics},
        steps=steps,
        repeats=_repeats(records),
    )


def extra_metrics(names: Iterable[str]) -> list[str]:
    """The metrics among ``names`` that compute_aggregates summarises only when asked."""
    return [m for m in names if m not in METRICS and m not in STEP_METRIC_OWNER]


def signature_thresholds(signature: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The pass thresholds a run's signature records (its options), if any."""
    options = (signature or {}).get("options")
    thresholds = options.get("pass_thresholds") if isinstance(options, Mapping) else None
    return thresholds if isinstance(thresholds, Mapping) else None


def stat_metrics(aggregates: Mapping[str, Any]) -> list[str]:
    """The metrics with statistics in the aggregates' micro block."""
    micro = aggregates["micro"]
    return [m for m in micro if _stat(micro.get(m)) is not None]


def summary_of(
    label: str,
    signature: Mapping[str, Any] | None,
    aggregates: Mapping[str, Any],
    *,
    records: Sequence[Mapping[str, Any]],
    count: int,
    values: Mapping[str, Sequence[float]],
    steps: StepTally,
    repeats: int | None,
) -> RunSummary:
    """A run's summary from its aggregates, its metrics' values (each metric of
    :func:`stat_metrics`) and its reference steps counted."""
    micro = aggregates["micro"]
    metrics = stat_metrics(aggregates)
    templates = [
        _group(template_name(tid), summary, metrics)
        for tid, summary in aggregates["per_template"].items()
    ]
    macro = {
        m: (v["mean"], int(v["n"]))
        for m, v in aggregates["macro"].items()
        if isinstance(v, Mapping) and v.get("n")
    }
    labels = {
        key: dict(value["counts"])
        for key, value in micro.items()
        if isinstance(value, Mapping) and "counts" in value and value.get("n")
    }
    return RunSummary(
        label=label,
        records=records,
        signature=signature,
        questions=count,
        errors=int(micro.get("number_of_error_samples", 0)),
        micro=_group("all questions", micro, metrics),
        macro=macro,
        templates=templates,
        labels=labels,
        steps=steps.counts(micro.get("steps") or {}),
        judge_usage=judge_usage(signature),
        values=values,
        repeats=repeats,
        label_flips=label_flips(micro.get("label_flips")),
        trials=table_rows(aggregates),
        consistency=trial_consistency(aggregates),
    )


def _repeats(records: Sequence[Mapping[str, Any]]) -> int | None:
    counts = [
        r[MARKER]
        for r in records
        if isinstance(r.get(MARKER), int) and not isinstance(r.get(MARKER), bool)
    ]
    return max(counts) if counts else None


class StepTally:
    """Per step name, the reference steps of the results and how many of them a call matched."""

    def __init__(self) -> None:
        self.expected: dict[str, int] = {}
        self.matched: dict[str, int] = {}

    def add(self, result: Mapping[str, Any]) -> None:
        """Count one result's reference steps."""
        for step in _reference_steps(result):
            name = str(step.get("name"))
            self.expected[name] = self.expected.get(name, 0) + 1
            if step.get("matches"):
                self.matched[name] = self.matched.get(name, 0) + 1

    def counts(self, counters: Mapping[str, Mapping[str, int]]) -> list[StepCount]:
        """Each step name's counts, with the aggregates' ``steps`` counters."""
        names = list(dict.fromkeys([*counters.get("total", {}), *self.expected]))
        return [
            StepCount(
                name,
                counters.get("total", {}).get(name, 0),
                counters.get("once_per_sample", {}).get(name, 0),
                counters.get("empty_results", {}).get(name, 0),
                counters.get("errors", {}).get(name, 0),
                self.expected.get(name, 0),
                self.matched.get(name, 0),
            )
            for name in names
        ]


def metric_list(runs: Sequence[RunSummary], verdict: Verdict | None) -> list[Metric]:
    """Every metric with a value in some run: scores first (aggregate.SCORES order), then other
    higher-is-better metrics, then those without a direction (counts, ratios), then
    lower-is-better ones; directions from the comparison, else the registry."""
    directions = {r.metric: r.direction for r in verdict.overall} if verdict else {}
    seen = list(dict.fromkeys(m for run in runs for m in run.micro.stats))
    out: list[Metric] = []
    for name in seen:
        direction = directions.get(name) or metric_direction(name)
        values = [v for run in runs for v in run.values.get(name, ())]
        unit = direction == "higher" and bool(values) and all(0.0 <= v <= 1.0 for v in values)
        out.append(Metric(name, direction, unit, name in STEP_METRIC_OWNER))
    rank = {name: i for i, name in enumerate(SCORES)}
    place = {"higher": 0, "none": 1, "lower": 2}
    return sorted(
        out,
        key=lambda m: (place[m.direction], rank.get(m.name, len(rank)), seen.index(m.name)),
    )


def headline_metrics(metrics: Sequence[Metric]) -> list[Metric]:
    """The headline: every higher-is-better metric, then total tokens, time and cost."""
    names = {m.name for m in metrics}
    usage = [u for u in HEADLINE_USAGE if u in names]
    if "total_tokens" not in names:
        usage = [u for u in ("input_tokens", "output_tokens") if u in names] + usage
    return [m for m in metrics if m.higher] + [m for m in metrics if m.name in usage]


# ------------------------------------------------------------------ the comparison


def _number(value: Any) -> float | None:
    return as_float(value)


def _row(
    metric: str, direction: str, template: str | None, row: Mapping[str, Any]
) -> ComparisonRow:
    ci = row.get("ci")
    low, high = row.get("ci_low"), row.get("ci_high")
    if isinstance(ci, (list, tuple)) and len(ci) == 2:
        low, high = ci
    testable = row.get("testable")
    if testable is None:
        testable = row.get("p_value") is not None
    better = row.get("better")
    return ComparisonRow(
        metric=str(metric),
        template=template,
        direction=direction,
        n=int(row.get("n") or 0),
        mean_a=_number(row.get("mean_a")),
        mean_b=_number(row.get("mean_b")),
        delta=_number(row.get("delta")),
        ci_low=_number(low),
        ci_high=_number(high),
        p_value=_number(row.get("p_value")),
        p_adjusted=_number(row.get("p_adjusted")),
        better=better if better in ("a", "b") else None,
        testable=bool(testable),
        wins=int(row.get("wins") or 0),
        losses=int(row.get("losses") or 0),
        ties=int(row.get("ties") or 0),
        errors_a=int(row.get("errors_a") or 0),
        errors_b=int(row.get("errors_b") or 0),
        judge_se=_number(row.get("judge_se")),
        within_judge_noise=_flag(row.get("within_judge_noise")),
    )


def _flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def verdict_of(comparison: Mapping[str, Any], max_template_rows: int | None = None) -> Verdict:
    """The verdict from ``compare_runs`` output (or from ``compare.report_rows`` of it: flat
    rows with ``metric`` and ``template``); with ``max_template_rows``, at most that many
    per-template rows: those most worth a look (significantly worse first, then significantly
    better, then by smallest adjusted p, smallest p and largest change), in the comparison's
    order, and how many there were (only these rows are ever held as records)."""
    if not isinstance(comparison, Mapping) or not isinstance(comparison.get("metrics"), list):
        raise TypeError("comparison must be what compare_runs returns (a mapping with 'metrics')")
    entries = [e for e in comparison["metrics"] if isinstance(e, Mapping)]
    overall: list[ComparisonRow] = []
    per_template: MostWorth[ComparisonRow] = MostWorth(max_template_rows)
    if all(isinstance(e.get("overall"), Mapping) for e in entries):  # compare_runs
        labels = comparison.get("labels") or {}
        for entry in entries:
            metric = str(entry.get("metric"))
            direction = entry.get("direction")
            if direction not in ("higher", "lower", "none"):
                direction = metric_direction(metric)
            overall.append(_row(metric, direction, None, entry["overall"]))
            for row in entry.get("per_template") or ():
                if isinstance(row, Mapping):
                    tid = template_name(row.get("template_id"))
                    per_template.add(_row(metric, direction, tid, row))
        method = comparison.get("method") or {}
        label_a, label_b = labels.get("a", "A"), labels.get("b", "B")
    else:  # report_rows: flat rows, no direction (the registry decides, as compare does)
        for row in entries:
            name = str(row.get("metric"))
            where = row.get("template")
            template = None if where in (None, "") else str(where)
            made = _row(name, metric_direction(name), template, row)
            if template is None:
                overall.append(made)
            else:
                per_template.add(made)
        method = {"errors": comparison.get("errors")}
        label_a, label_b = comparison.get("a", "A"), comparison.get("b", "B")
    questions = comparison.get("questions")
    return Verdict(
        label_a=str(label_a),
        label_b=str(label_b),
        overall=[r for r in overall if r.n],
        per_template=per_template.rows(),
        questions=questions if isinstance(questions, Mapping) else {},
        method=method if isinstance(method, Mapping) else {},
        paired_by=str((method or {}).get("paired_by") or "question_id"),
        per_template_total=per_template.total if per_template.left_out else None,
        noise_left_out=per_template.noise_left_out,
    )
