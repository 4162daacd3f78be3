"""The viewer's pages: the report's jinja2 environment (autoescaping, its filters, its redaction
of API keys) with the viewer's templates in front of the report's, so a question, a verdict and
the agreement figures are drawn by the report's own components."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import yaml

from ..errors import InputError
from .diff import changes, compared
from .index import LOCK, load_result
from .labels import current_labels
from .query import PAGE_SIZES, TableView, failed_of, page_of, tags_of, templates_of, trials_of
from .queue import QUEUES, Item, item_at, next_item, pass_threshold, position_of
from .review import read_review
from .runs import Run, headline, usage

__all__ = [
    "MODES",
    "Settings",
    "compare_page",
    "environment",
    "label_page",
    "question_page",
    "question_parts",
    "reference_check",
    "render",
    "review_page",
    "runs_page",
    "table_page",
]

_USAGE_KEYS = ("cost", "llm_cost", "total_tokens", "input_tokens", "output_tokens", "elapsed")
MODES = ("pass/fail", "class", "number")


@dataclass
class Settings:
    """What the viewer was started with."""

    runs: list[Run]
    token: str
    labels: Path
    annotator: str
    review: Path | None = None
    reference: tuple[str, str] | None = None
    """(the reference dataset's file, its fingerprint), given with ``--reference``."""


@lru_cache(maxsize=1)
def environment() -> Any:
    """The report's environment with the viewer's templates first."""
    import jinja2

    from ..report.render import environment as report_environment

    loader = jinja2.ChoiceLoader(
        [
            jinja2.PackageLoader("qa_eval.view", "templates"),
            jinja2.PackageLoader("qa_eval.report", "templates"),
        ]
    )
    return report_environment().overlay(loader=loader)


def render(name: str, settings: Settings, **context: Any) -> str:
    """A page of the viewer."""
    base = {
        "runs": settings.runs,
        "token": settings.token,
        "review": settings.review is not None,
        "title": "qa-eval view",
    }
    return str(environment().get_template(name).render({**base, **context}))


def _markup(html: str) -> Any:
    """HTML the report's escaping templates produced, inserted as it is."""
    import markupsafe

    return markupsafe.Markup(html)


def runs_page(settings: Settings) -> str:
    """Every run: its signature, counts, usage and headline means."""
    from ..report.render import signature_view

    return render(
        "runs.html.j2",
        settings,
        signatures=[signature_view(run.signature) for run in settings.runs],
        headlines=[headline(run) for run in settings.runs],
        usages=[usage(run) for run in settings.runs],
        references=[reference_check(settings, run) for run in settings.runs],
    )


def _fingerprint(run: Run) -> str | None:
    reference = run.signature.get("reference") if run.signature else None
    value = reference.get("fingerprint") if isinstance(reference, Mapping) else None
    return value if isinstance(value, str) else None


def reference_check(settings: Settings, run: Run) -> str:
    """Whether ``run`` was evaluated on the ``--reference`` dataset ("" without one)."""
    if settings.reference is None:
        return ""
    name, fingerprint = settings.reference
    recorded = _fingerprint(run)
    if recorded is None:
        return f"not checked against {name}: the run's signature records no reference fingerprint"
    if recorded == fingerprint:
        return f"evaluated on {name} (same fingerprint)"
    return f"NOT evaluated on {name}: its reference's fingerprint differs"


def table_page(settings: Settings, number: int, params: Mapping[str, str]) -> str:
    """The questions table of run ``number`` as the URL's query asks."""
    run = settings.runs[number]
    view = TableView.from_query(params)
    page = page_of(run.index, view)
    return render(
        "table.html.j2",
        settings,
        title=run.label,
        run_number=number,
        view=view,
        page=page,
        total=run.index.count,
        templates=templates_of(run.index),
        tags=tags_of(run.index),
        failed=failed_of(run.index),
        trials=trials_of(run.index),
        sizes=PAGE_SIZES,
    )


def _key(result: Mapping[str, Any]) -> tuple[str, str, Any]:
    template = result.get("template_id")
    return (
        "" if template is None else str(template),
        str(result.get("question_id")),
        result.get("trial"),
    )


def _same_question(run: Run, result: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """``run``'s result of the same question (template, id and trial), if it has one."""
    tpl, qid, trial = _key(result)
    sql = "SELECT pos FROM q WHERE qid = ? AND tpl = ? AND trial IS ?"
    with LOCK:
        row = run.index.db.execute(sql, (qid, tpl, trial)).fetchone()
    return None if row is None else load_result(run.index, row[0])


def question_parts(
    settings: Settings, number: int, pos: int, others: Sequence[int]
) -> tuple[Mapping[str, Any], list[str], Any]:
    """(the result, the labels of the runs shown, the drill-down HTML) of one question of run
    ``number``, beside the same question in the runs ``others``."""
    from ..report.render import question_html

    result = load_result(settings.runs[number].index, pos)
    if result is None:
        raise InputError(f"run {settings.runs[number].label!r} has no result {pos + 1}")
    labels = [settings.runs[number].label]
    results: list[Mapping[str, Any] | None] = [result]
    for other in others:
        if other != number and 0 <= other < len(settings.runs):
            labels.append(settings.runs[other].label)
            results.append(_same_question(settings.runs[other], result))
    return result, labels, _markup(question_html(labels, results))


def question_page(settings: Settings, number: int, pos: int, others: Sequence[int]) -> str:
    """One question with the report's drill-down (side by side with ``others``)."""
    result, labels, drill = question_parts(settings, number, pos, others)
    trace = result.get("trace")
    traces = []
    if trace is not None:
        traces.append((labels[0], yaml.safe_dump(trace, allow_unicode=True, sort_keys=False)))
    usage_items = [
        (k, v) for k, v in result.items() if k in _USAGE_KEYS or k.endswith(("_cost", "_sd"))
    ]
    if "judge_repeats" in result:
        usage_items.append(("judge_repeats", result["judge_repeats"]))
    return render(
        "question.html.j2",
        settings,
        title=f"{settings.runs[number].label} · {result.get('question_id')}",
        run_number=number,
        pos=pos,
        question_id=str(result.get("question_id")),
        template=_key(result)[0],
        shown=labels,
        drill=drill,
        traces=traces,
        usage=[(labels[0], usage_items)] if usage_items else [],
    )


def compare_page(settings: Settings, params: Mapping[str, str]) -> str:
    """Two runs: the verdict of ``compare_runs`` on top, then one metric's changes."""
    try:
        a = int(params.get("a", "0"))
        b = int(params.get("b", "1"))
        page = int(params.get("page", "1"))
    except ValueError:
        raise InputError("a, b and page are numbers") from None
    count = len(settings.runs)
    if count < 2 or not (0 <= a < count and 0 <= b < count) or a == b or page < 1:
        raise InputError("compare needs two different runs (a, b) and a page of 1 or more")
    comparison, note = compared(settings.runs[a], settings.runs[b])
    prints = [_fingerprint(settings.runs[a]), _fingerprint(settings.runs[b])]
    if None not in prints and prints[0] != prints[1]:
        note = (note + " " if note else "") + (
            f"{settings.runs[a].label} and {settings.runs[b].label} were evaluated against "
            "different reference datasets (their signatures' fingerprints differ): their "
            "questions are paired by matching ids only."
        )
    metrics = [m for m in settings.runs[a].index.metrics if m in settings.runs[b].index.metrics]
    metric = params.get("metric") or next(iter(metrics), "")
    show = params.get("show", "")
    if show not in ("", "worse", "better"):
        raise InputError("show is worse, better or empty")
    listed = changes(settings.runs[a], settings.runs[b], metric, show, page) if metric else None
    context: dict[str, Any] = {"verdict": None}
    if comparison is not None:
        from ..report.render import verdict_context

        context = verdict_context(comparison)
    return render(
        "compare.html.j2",
        settings,
        title=f"{settings.runs[b].label} against {settings.runs[a].label}",
        a=a,
        b=b,
        metrics=metrics,
        metric=metric,
        show=show,
        page=page,
        changes=listed,
        direction=listed.direction if listed else "higher",
        comparison_note=note,
        **context,
    )


def label_page(settings: Settings, params: Mapping[str, str]) -> str:
    """The labelling mode: one question of the queue and the agreement panel."""
    from .agree import panel

    try:
        number = int(params.get("run", "0"))
        seed = int(params.get("seed", "0"))
        given = params.get("threshold") or None
        chosen = None if given is None else float(given)
        at = params.get("pos") or None
        again = None if at is None else int(at)
    except ValueError:
        raise InputError("run, seed, threshold and pos are numbers") from None
    if chosen is not None and not math.isfinite(chosen):
        raise InputError("threshold must be a finite number")
    if not 0 <= number < len(settings.runs):
        raise InputError(f"no run {number}")
    run = settings.runs[number]
    metrics = [m for m in run.index.metrics if not m.endswith(("_sd", "_flipped"))]
    metrics += [c for c in run.index.classes if c not in metrics]
    metric = params.get("metric") or next(iter(metrics), "")
    if metric and metric not in metrics:
        raise InputError(f"no metric {metric!r} in {run.label}")
    default_mode = (
        "class" if metric in run.index.classes and metric not in run.index.metrics else "pass/fail"
    )
    mode = params.get("mode") or default_mode
    queue = params.get("queue") or "sample"
    if mode not in MODES or queue not in QUEUES:
        raise InputError(f"mode is one of {', '.join(MODES)}; queue one of {', '.join(QUEUES)}")
    threshold, threshold_source = pass_threshold(metric, run.signature)
    if chosen is not None:
        threshold, threshold_source = chosen, "set here"
    held = current_labels(settings.labels, settings.annotator)
    runs = [r.index for r in settings.runs]
    item: Item | None = None
    if again is not None and metric:  # one question labelled again (or for the first time)
        item = item_at(runs, number, again, metric, set(held))
    else:
        item = (
            next_item(runs, number, metric, queue, set(held), seed, threshold) if metric else None
        )
    current = None if item is None else held.get((item.question_id, item.template_id, metric))
    base = {"run": str(number), "metric": metric, "mode": mode, "queue": queue, "seed": str(seed)}
    if given:
        base["threshold"] = given
    recent: list[tuple[str, Mapping[str, str], str]] = []
    for qid, tpl, name in reversed(list(held)):
        if name == metric and len(recent) < 10:
            pos = position_of(run.index, qid, tpl)
            if pos is not None:
                link = "/label?" + urlencode({**base, "pos": str(pos)})
                recent.append((qid, held[(qid, tpl, name)], link))
    drill = None
    if item is not None:
        drill = question_parts(settings, number, item.pos, [])[2]
    agreement, error = panel(settings, metric)
    return render(
        "label.html.j2",
        settings,
        title=f"Label {metric}",
        run_number=number,
        metrics=metrics,
        metric=metric,
        mode=mode,
        modes=MODES,
        queue=queue,
        queues=QUEUES,
        seed=seed,
        threshold=threshold,
        threshold_source=threshold_source,
        current=current,
        recent=recent,
        queue_url="/label?" + urlencode(base),
        threshold_given=given or "",
        classes=run.index.classes.get(metric, []),
        item=item,
        drill=drill,
        labels_path=settings.labels,
        annotator=settings.annotator,
        agreement=agreement,
        agreement_error=error,
    )


def review_page(settings: Settings) -> str:
    """The generated questions of the review file and their decisions."""
    if settings.review is None:
        raise InputError("no review file: start the viewer with --review FILE")
    rows = read_review(settings.review)
    return render(
        "review.html.j2",
        settings,
        title="Review generated questions",
        rows=rows,
        decided=sum(1 for r in rows if r.decision),
        review_path=settings.review,
    )
