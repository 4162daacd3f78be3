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
import math
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

import yaml

from ..aggregate import is_finite_number
from ..judge.repeats import SIGMAS
from ..redact import SECRET_MARKERS, known_secrets, redact
from . import figures
from .drill import drill_down, metric_rows
from .model import Metric, RunSummary, Verdict
from .questions import QuestionRef, paired_values

__all__ = ["render_page"]

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
    if not math.isfinite(value):
        return str(value)
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
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _signature(run: RunSummary) -> dict[str, Any]:
    sig = run.signature
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
    if metric is None or a is None or b is None or abs(b - a) <= 1e-12:
        return ""
    return "up" if (b > a) != metric.lower else "down"


def _question_row(
    question: QuestionRef,
    rank: int,
    primary: Metric | None,
    runs: Sequence[RunSummary],
    fail: bool,
) -> dict[str, Any]:
    scores: list[float | None] = []
    for result in question.results:
        value = result.get(primary.name) if (primary and result is not None) else None
        scores.append(float(value) if is_finite_number(value) else None)
    delta = None
    delta_class = ""
    if len(runs) >= 2 and primary is not None:
        a, b = paired_values(question.results[0], question.results[1], primary.name, fail)
        if a is not None and b is not None:
            delta = b - a
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
    from ..aggregate import is_error

    return is_error(result)


def render_page(
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
) -> str:
    """The page's HTML."""
    global _secrets
    _secrets = tuple(known_secrets())
    by_name = {m.name: m for m in metrics}
    primary = next((m for m in metrics if not m.lower and not m.step), None)
    fail = verdict is None or verdict.method.get("errors", "fail") != "exclude"
    visible = questions[:shown]
    rows = [_question_row(q, i + 1, primary, runs, fail) for i, q in enumerate(visible)]
    anchors = {q.anchor for q in visible}
    question_metrics = [m for m in metrics if not m.step]
    env = environment()
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
                d={"drill": drill_down(ref.results), "metrics": metric_values},
                runs=runs,
                colors=figures.RUN_COLORS,
            )
        )
    if verdict is not None:
        worse = [q for q in questions if q.worse]  # already worst first
        better = sum(1 for q in questions if q.better)
    else:  # one run: the questions at the top of the worst-first order that are not perfect
        worse = [q for q in visible[:10] if _is_weak(q, primary)]
        better = 0
    charts = {
        "templates": [c for m in metrics if (c := figures.template_bars(m, runs))],
        "histograms": [c for m in metrics if (c := figures.histogram(m, runs))],
        "labels": [
            c
            for key in dict.fromkeys(k for run in runs for k in run.labels)
            if (c := figures.label_bars(key, runs))
        ],
    }
    constant = []
    for metric in metrics:
        distinct = {v for run in runs for v in run.values.get(metric.name, ())}
        if len(distinct) == 1:
            constant.append((metric.name, distinct.pop()))
    strips = {}
    if verdict is not None:
        for compared in [*verdict.overall, *verdict.per_template]:
            strips[(compared.metric, compared.template)] = figures.ci_strip(compared)
    total = len(questions)
    usage_names = list(dict.fromkeys(name for run in runs for name, _ in run.judge_usage))
    judge_rows = [(name, [dict(run.judge_usage).get(name) for run in runs]) for name in usage_names]
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
    template_names = list(dict.fromkeys(g.name for run in runs for g in run.templates))
    template_rows = [
        (name, [(run, g) for run in runs for g in run.templates if g.name == name])
        for name in template_names
    ]
    subtitle = (
        f"{', '.join(run.label for run in runs) or 'no runs'} · "
        f"{sum(run.questions for run in runs)} results · "
        f"generated {datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
    )
    return str(
        env.get_template("page.html.j2").render(
            title=title,
            subtitle=subtitle,
            runs=runs,
            colors=figures.RUN_COLORS,
            metrics=metrics,
            headline=headline,
            primary=primary,
            verdict=verdict,
            comparison_note=comparison_note,
            worse=worse[:MAX_LISTED],
            worse_count=len(worse),
            better_count=better,
            anchors=anchors,
            rows=rows,
            drills=pack(drills),
            total_questions=total,
            max_questions=max_questions,
            charts=charts,
            constant=constant,
            strips=strips,
            signatures=[_signature(run) for run in runs],
            templates=list(dict.fromkeys(q.template for q in visible)),
            by_name=by_name,
            judge_rows=judge_rows,
            template_rows=template_rows,
            variance_runs=variance_runs,
            variance_metrics=variance_metrics,
            flip_keys=flip_keys,
            noise_sigmas=SIGMAS,
        )
    )


def _is_weak(question: QuestionRef, primary: Metric | None) -> bool:
    result = question.results[0]
    if result is None:
        return False
    if _is_error(result):
        return True
    if primary is None:
        return False
    value = result.get(primary.name)
    return is_finite_number(value) and value < 1.0 - 1e-12 if primary.unit else False
