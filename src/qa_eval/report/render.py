"""HTML of the report: the jinja2 templates in ``templates/`` with autoescaping on.

Every value reaches the page through a ``{{ ... }}`` expression of a template, which jinja2
escapes (text, attribute values and SVG text alike); the templates never mark a value safe and
the page's script reads no data but the DOM. Before escaping, each string goes through
:func:`qa_eval.redact.redact`, so no API key reaches the page.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from functools import lru_cache
from typing import Any

import yaml

from ..aggregate import as_float, is_finite_number
from ..judge.repeats import SIGMAS
from ..redact import SECRET_MARKERS, known_secrets, redact
from . import figures
from .drill import drill_down, metric_rows
from .model import Metric, RunSummary, Verdict
from .questions import QuestionRef, paired_values
from .trajectory import trajectory_views

__all__ = ["question_html", "render_page", "signature_view", "verdict_context"]

_REDACT_MIN = 6  # no pattern or registered secret fits in fewer characters
MAX_LISTED = 100
"""Questions that got worse listed by name in the verdict (all are counted)."""


@lru_cache(maxsize=1)
def environment() -> Any:
    """The templates' jinja2 environment (autoescaping on); needs the ``report`` extra."""
    from ..extras import require

    jinja2 = require("jinja2", "the HTML report")
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("qa_eval.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=_finalize,
    )
    env.filters.update(num=num, signed=signed, pvalue=pvalue)
    return env


def pack(documents: Sequence[str]) -> str:
    """The drill-downs as one payload: a JSON list of their HTML, gzip-compressed, base64.

    The page decompresses it (``DecompressionStream``) when a question is first opened or
    searched, so a large report loads and parses a fraction of its text; base64 holds no
    ``<``, so the payload cannot end its script element."""
    data = json.dumps(list(documents), ensure_ascii=False, separators=(",", ":"))
    return base64.b64encode(gzip.compress(data.encode("utf-8"), 6, mtime=0)).decode("ascii")


# What a text must contain for redact() to change it: one of its trigger words or a known
# secret (read once per page: redact() itself reads the environment on every call).
_TRIGGER = re.compile("|".join(re.escape(word) for word in SECRET_MARKERS))  # lower-case words
_secrets: tuple[str, ...] = ()


def _finalize(value: Any) -> Any:
    """Every value a template prints: redacted when it may hold a secret, None as nothing."""
    if type(value) is str:
        if len(value) >= _REDACT_MIN and (
            _TRIGGER.search(value.lower()) or any(s in value for s in _secrets)
        ):
            return redact(value)
        return value
    return "" if value is None else value


def num(value: Any) -> str:
    """A number for a table: integers as they are, floats to about three decimals."""
    if value is None or value == "":
        return "–"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if as_float(value) is None:  # NaN, infinite, or an int beyond the float range
        return f"{Decimal(value):,.1f}" if isinstance(value, int) else str(value)
    if value == 0:
        return "0"
    if float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:,.1f}"
    if magnitude >= 1:
        return f"{value:.3f}".rstrip("0").rstrip(".")
    return f"{value:.3f}" if magnitude >= 0.001 else f"{value:.3g}"


def signed(value: Any) -> str:
    """A difference with its sign (− for a fall)."""
    if not is_finite_number(value):
        return "–"
    text = num(abs(value))
    return "0" if value == 0 else ("+" if value > 0 else "−") + text


def pvalue(value: Any) -> str:
    """A p-value: three decimals, or < 0.001."""
    if not is_finite_number(value):
        return "–"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def _plain(value: Any) -> Any:
    """A value as plain YAML data: mappings, lists and scalars; anything else as its text."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def signature_view(sig: Mapping[str, Any] | None) -> dict[str, Any]:
    """A run's signature: the facts shown first, and all of it as YAML."""
    if not sig:
        return {"facts": [], "yaml": ""}
    judge = sig.get("judge") if isinstance(sig.get("judge"), Mapping) else None
    options = sig.get("options") if isinstance(sig.get("options"), Mapping) else {}
    enabled = options.get("metrics") if isinstance(options, Mapping) else None
    facts: list[tuple[str, Any]] = [
        ("qa-eval version", sig.get("qa_eval_version")),
        ("judge", judge.get("model") if judge else "none"),
        ("judge provider", judge.get("provider") if judge else None),
        ("embedding", sig.get("embedding")),
    ]
    if isinstance(enabled, Mapping):
        facts.append(("metrics on", ", ".join(str(k) for k, v in enabled.items() if v)))
    reference = sig.get("reference")
    if isinstance(reference, Mapping) and reference.get("fingerprint"):
        facts.append(("reference", reference.get("fingerprint")))
    if sig.get("llm_metrics"):
        facts.append(("note", sig.get("llm_metrics")))
    dump = yaml.safe_dump(_plain(sig), sort_keys=False, allow_unicode=True, width=100)
    return {"facts": [(k, v) for k, v in facts if v not in (None, "")], "yaml": dump}


def _delta_class(metric: Metric | None, a: float | None, b: float | None) -> str:
    """``up`` when B is better than A on the metric, ``down`` when worse, else empty."""
    if metric is None or metric.direction == "none" or a is None or b is None:
        return ""
    if abs(b - a) <= 1e-12:
        return ""
    return "up" if (b > a) != metric.lower else "down"


def _question_row(
    question: QuestionRef,
    rank: int,
    primary: Metric | None,
    runs: Sequence[RunSummary],
    fail: bool,
) -> dict[str, Any]:
    """A question's row in the list: its scores, the delta of the first two runs, errors."""
    scores: list[float | None] = []
    for result in question.results:
        value = result.get(primary.name) if (primary and result is not None) else None
        scores.append(as_float(value))
    delta = None
    delta_class = ""
    if len(runs) >= 2 and primary is not None:
        a, b = paired_values(question.results[0], question.results[1], primary.name, fail)
        if a is not None and b is not None:
            delta = as_float(b - a)  # None beyond the float range
            delta_class = _delta_class(primary, a, b)
    return {
        "ref": question,
        "rank": rank,
        "scores": scores,
        "delta": delta,
        "delta_class": delta_class,
        "errors": [r is not None and _is_error(r) for r in question.results],
    }


def _is_error(result: Mapping[str, Any]) -> bool:
    """Whether a result is an error response."""
    from ..aggregate import is_error

    return is_error(result)


def render_page(**page: Any) -> str:
    """The page's HTML, whole (:func:`page_pieces`' arguments)."""
    return "".join(page_pieces(**page))


def page_pieces(
    *,
    title: str,
    runs: Sequence[RunSummary],
    metrics: Sequence[Metric],
    headline: Sequence[Metric],
    verdict: Verdict | None,
    comparison_note: str,
    questions: Sequence[QuestionRef],
    shown: int,
    max_questions: int | None,
    agreement: Mapping[str, Any] | None = None,
    counts: tuple[int, int, int] | None = None,
) -> Iterator[str]:
    """The page's HTML in the pieces the template makes them, drawn as they are read
    (``agreement``: an agreement report's ``to_dict()``, its section); a page of a million
    results is about 80 MB, held whole three times over by a join and its UTF-8 bytes.

    ``questions`` are all the questions, worst first; or, with ``counts`` (all the questions,
    those that got worse, those that got better), the first of them: at least ``shown`` and
    the worse ones the verdict names."""
    global _secrets
    _secrets = tuple(known_secrets())
    by_name = {m.name: m for m in metrics}
    primary = next((m for m in metrics if m.higher and not m.step), None)
    fail = verdict is None or verdict.method.get("errors", "fail") != "exclude"
    visible = questions[:shown]
    rows = [_question_row(q, i + 1, primary, runs, fail) for i, q in enumerate(visible)]
    env = environment()
    drills = _drills(env, rows, [m for m in metrics if not m.step], by_name, runs)
    worse, better = _worse_and_better(questions, visible, verdict, primary)
    total, worse_count = len(questions), len(worse)
    if counts is not None:
        total, worse_count, better = counts
    variance_runs, variance_metrics, flip_keys = _variance(runs, metrics)
    return iter(
        env.get_template("page.html.j2").generate(
            title=title,
            subtitle=_subtitle(runs),
            runs=runs,
            colors=figures.RUN_COLORS,
            metrics=metrics,
            headline=headline,
            primary=primary,
            verdict=verdict,
            comparison_note=comparison_note,
            worse=worse[:MAX_LISTED],
            worse_count=worse_count,
            better_count=better,
            anchors={q.anchor for q in visible},
            rows=rows,
            drills=pack(drills),
            total_questions=total,
            max_questions=max_questions,
            charts=_charts(runs, metrics),
            constant=_constant(runs, metrics),
            strips=_strips(verdict),
            signatures=[signature_view(run.signature) for run in runs],
            templates=list(dict.fromkeys(q.template for q in visible)),
            by_name=by_name,
            judge_rows=_judge_rows(runs),
            template_rows=_template_rows(runs),
            variance_runs=variance_runs,
            variance_metrics=variance_metrics,
            flip_keys=flip_keys,
            noise_sigmas=SIGMAS,
            agreement=agreement,
        )
    )


def _drills(
    env: Any,
    rows: Sequence[Mapping[str, Any]],
    question_metrics: Sequence[Metric],
    by_name: Mapping[str, Metric],
    runs: Sequence[RunSummary],
) -> list[str]:
    """The drill-down HTML of each listed question (packed into the page by :func:`pack`)."""
    drill_template = env.get_template("drill.html.j2")
    drills = []
    for row in rows:
        ref: QuestionRef = row["ref"]
        values = metric_rows(ref.results, [m.name for m in question_metrics])
        metric_values = [
            (
                by_name[name],
                vals,
                _delta_class(by_name[name], vals[0], vals[1]) if len(vals) > 1 else "",
            )
            for name, vals in values
        ]
        drills.append(
            drill_template.render(
                q=ref,
                d={
                    "drill": drill_down(ref.results),
                    "metrics": metric_values,
                    "trajectory": trajectory_views(ref.results),
                },
                runs=runs,
                colors=figures.RUN_COLORS,
            )
        )
    return drills


def _worse_and_better(
    questions: Sequence[QuestionRef],
    visible: Sequence[QuestionRef],
    verdict: Verdict | None,
    primary: Metric | None,
) -> tuple[list[QuestionRef], int]:
    """(the questions the verdict lists as worse, how many got better); with one run, the weak
    questions at the top of the worst-first order and 0."""
    if verdict is not None:
        worse = [q for q in questions if q.worse]  # already worst first
        return worse, sum(1 for q in questions if q.better)
    return [q for q in visible[:10] if _is_weak(q, primary)], 0


def _charts(runs: Sequence[RunSummary], metrics: Sequence[Metric]) -> dict[str, list[Any]]:
    """The charts: per-template bars and a histogram per metric, and bars per label key."""
    return {
        "templates": [c for m in metrics if (c := figures.template_bars(m, runs))],
        "histograms": [c for m in metrics if (c := figures.histogram(m, runs))],
        "labels": [
            c
            for key in dict.fromkeys(k for run in runs for k in run.labels)
            if (c := figures.label_bars(key, runs))
        ],
    }


def _constant(runs: Sequence[RunSummary], metrics: Sequence[Metric]) -> list[tuple[str, Any]]:
    """(metric, value) of each metric with one value over every run (shown without a chart)."""
    constant = []
    for metric in metrics:
        distinct = {v for run in runs for v in run.values.get(metric.name, ())}
        if len(distinct) == 1:
            constant.append((metric.name, distinct.pop()))
    return constant


def _strips(verdict: Verdict | None) -> dict[tuple[str, Any], Any]:
    """The confidence-interval strip of each compared row, by (metric, template)."""
    strips = {}
    if verdict is not None:
        for compared in [*verdict.overall, *verdict.per_template]:
            strips[(compared.metric, compared.template)] = figures.ci_strip(compared)
    return strips


def _judge_rows(runs: Sequence[RunSummary]) -> list[tuple[str, list[Any]]]:
    """The judge's usage: per counter, its value in each run."""
    usage_names = list(dict.fromkeys(name for run in runs for name, _ in run.judge_usage))
    return [(name, [dict(run.judge_usage).get(name) for run in runs]) for name in usage_names]


def _variance(
    runs: Sequence[RunSummary], metrics: Sequence[Metric]
) -> tuple[list[RunSummary], list[str], list[str]]:
    """The judge's own noise: the runs that measured it, the metrics with a judge sd in one of
    them, and the label keys whose labels flipped."""
    variance_runs = [run for run in runs if run.judged_twice or run.label_flips]
    variance_metrics = [
        m.name
        for m in metrics
        if any(
            (s := run.micro.stats.get(m.name)) is not None and s.judge_sd is not None
            for run in variance_runs
        )
    ]
    flip_keys = sorted({key for run in variance_runs for key in run.label_flips})
    return variance_runs, variance_metrics, flip_keys


def _template_rows(runs: Sequence[RunSummary]) -> list[tuple[str, list[tuple[RunSummary, Any]]]]:
    """Per template name (in the order first seen): each run's group of that template."""
    rows: dict[str, list[tuple[RunSummary, Any]]] = {}
    for run in runs:  # (one pass: a million results have tens of thousands of templates)
        for g in run.templates:
            rows.setdefault(g.name, []).append((run, g))
    return list(rows.items())


def _subtitle(runs: Sequence[RunSummary]) -> str:
    """The line under the title: the runs, their results and when the page was made."""
    return (
        f"{', '.join(run.label for run in runs) or 'no runs'} · "
        f"{sum(run.questions for run in runs)} results · "
        f"generated {datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
    )


def _is_weak(question: QuestionRef, primary: Metric | None) -> bool:
    """Whether the first run's result is an error or below full marks on the primary metric."""
    result = question.results[0]
    if result is None:
        return False
    if _is_error(result):
        return True
    if primary is None:
        return False
    value = result.get(primary.name)
    return is_finite_number(value) and value < 1.0 - 1e-12 if primary.unit else False


def verdict_context(comparison: Mapping[str, Any]) -> dict[str, Any]:
    """What ``verdict.html.j2`` (the verdict card's body) needs for ``compare_runs`` output."""
    from .model import verdict_of

    # the card shows the overall rows only: no per-template row is kept (nor drawn), while the
    # verdict still knows whether any carried the judge's noise
    verdict = verdict_of(comparison, 0)
    return {"verdict": verdict, "strips": _strips(verdict), "noise_sigmas": SIGMAS}


def question_html(labels: Sequence[str], results: Sequence[Mapping[str, Any] | None]) -> str:
    """The report's drill-down of one question: ``results[i]`` is run ``labels[i]``'s result
    (None where that run lacks the question)."""
    from .model import metric_list, summarize_run, template_name

    global _secrets
    _secrets = tuple(known_secrets())
    summaries = [
        summarize_run(label, [] if result is None else [result], None)
        for label, result in zip(labels, results)
    ]
    metrics = metric_list(summaries, None)
    first = next(r for r in results if r is not None)
    qid, text = first.get("question_id"), first.get("question_text")
    ref = QuestionRef(
        key=qid,
        anchor="q-1",
        template=template_name(first.get("template_id")),
        question_id="" if qid is None else str(qid),
        text="" if text is None else str(text),
        results=tuple(results),
    )
    by_name = {m.name: m for m in metrics}
    env = environment()
    return _drills(env, [{"ref": ref}], [m for m in metrics if not m.step], by_name, summaries)[0]
