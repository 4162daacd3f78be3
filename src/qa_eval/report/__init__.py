"""A self-contained HTML report of one or more evaluation runs that leads with the verdict.

``build_report(runs)`` returns the text of one HTML file that opens offline and loads nothing:
the numbers come from :func:`qa_eval.aggregate.compute_aggregates` (per run) and
:func:`qa_eval.compare.compare_runs` (the first two runs), the charts are small SVG drawings
computed in Python, and the page is rendered by jinja2 templates with autoescaping on. Parts:
:mod:`.model` (the numbers), :mod:`.questions` (pairing, worst first), :mod:`.figures` (chart
geometry), :mod:`.drill` and :mod:`.text` (a question's steps beside the reference) and
:mod:`.render` (HTML).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .model import headline_metrics, metric_list, summarize_run, verdict_of
from .questions import collect_questions, order_questions, ordering
from .worth import MAX_TEMPLATE_ROWS

__all__ = [
    "DEFAULT_MAX_QUESTIONS",
    "DEFAULT_MAX_TEMPLATE_ROWS",
    "DEFAULT_TITLE",
    "Run",
    "build_report",
    "load_run",
    "run_labels",
    "system_name",
    "write_report",
]

DEFAULT_TITLE = "qa-eval report"
DEFAULT_MAX_QUESTIONS = 2000
"""The drill-down lists at most this many questions (worst first) unless told otherwise."""
DEFAULT_MAX_TEMPLATE_ROWS = MAX_TEMPLATE_ROWS
"""The per-template comparison lists at most this many rows (those most worth a look) unless
told otherwise."""


@dataclass(frozen=True)
class Run:
    """One evaluation run: a label, its per-question results and its signature (if known)."""

    label: str
    results: Sequence[Any]
    signature: Mapping[str, Any] | None = None

    @classmethod
    def of(cls, label: str, results: Sequence[Any]) -> Run:
        """A run from what ``run_evaluation`` returns (its ``signature`` attribute, if any)."""
        return cls(label, results, getattr(results, "signature", None))


RunLike = Run | Sequence[Any]


def run_labels(
    paths: Sequence[str | os.PathLike[str]],
    signatures: Sequence[Mapping[str, Any] | None] | None = None,
) -> list[str]:
    """A label per results file: the system name its signature records (``evaluate --system
    NAME=...``), else its name without extension; its path when two labels clash."""
    names = [
        system_name(sig) or Path(p).stem
        for p, sig in zip(paths, signatures if signatures is not None else [None] * len(paths))
    ]
    return [n if names.count(n) == 1 else str(p) for n, p in zip(names, paths)]


def system_name(signature: Mapping[str, Any] | None) -> str | None:
    """The system name a run's signature records (``evaluate --system NAME=...``), if any."""
    name = signature.get("system") if isinstance(signature, Mapping) else None
    return name if isinstance(name, str) and name else None


def load_run(path: str | os.PathLike[str], label: str | None = None) -> Run:
    """Read a results file and, when it is there, the ``.signature.yaml`` beside it; labelled
    ``label``, else by the system name the signature records, else by the file name."""
    from ..io.files import read_data, read_results, signature_path

    results = read_results(path)
    sig_file = signature_path(path)
    signature = read_data(sig_file) if sig_file.is_file() else None
    if signature is not None and not isinstance(signature, Mapping):
        signature = {"signature": signature}
    if label is None:
        label = system_name(signature) or Path(path).stem
    return Run(label, results, signature)


def write_report(
    paths: Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    *,
    labels: Sequence[str] | None = None,
    comparison: Mapping[str, Any] | bool | None = None,
    title: str = DEFAULT_TITLE,
    max_questions: int | None = DEFAULT_MAX_QUESTIONS,
    agreement_labels: Any = None,
) -> Path:
    """Read result files (each with its signature, if beside it) and write the HTML report
    (with ``agreement_labels``, a labels file: its agreement section, each run a judge).

    Runs are labelled by the system names their signatures record (``evaluate --system``), else
    by their file names without extension, or by their paths when two labels are the same, unless
    ``labels`` are given."""
    if labels is not None and len(labels) != len(paths):
        raise ValueError(f"{len(labels)} labels for {len(paths)} result files")
    given: Sequence[str | None] = labels if labels is not None else [None] * len(paths)
    runs = [load_run(p, label) for p, label in zip(paths, given)]
    if labels is None:
        named = run_labels(paths, [run.signature for run in runs])
        runs = [replace(run, label=label) for run, label in zip(runs, named)]
    target = Path(out)
    page = build_report(
        runs, comparison, title, max_questions=max_questions, labels=agreement_labels
    )
    target.write_text(page, encoding="utf-8")
    return target


def _as_run(value: RunLike, position: int) -> Run:
    if isinstance(value, Run):
        return value
    if isinstance(value, (list, tuple)) and len(value) in (2, 3) and isinstance(value[0], str):
        signature = value[2] if len(value) == 3 else getattr(value[1], "signature", None)
        return Run(value[0], value[1], signature)
    raise TypeError(f"run [{position}] must be a Run or (label, results[, signature])")


def build_report(
    runs: Sequence[RunLike],
    comparison: Mapping[str, Any] | bool | None = None,
    title: str = DEFAULT_TITLE,
    *,
    max_questions: int | None = DEFAULT_MAX_QUESTIONS,
    labels: Any = None,
    agreement: Any = None,
    threshold: float | Mapping[str, float] | None = None,
    max_template_rows: int | None = DEFAULT_MAX_TEMPLATE_ROWS,
) -> str:
    """The text of a self-contained HTML report of ``runs`` (each a :class:`Run` or a tuple
    ``(label, results[, signature])``).

    ``labels`` (a labels file, ``Labels`` or label rows) adds the agreement section: each run
    is a judge measured against the labels (:func:`qa_eval.agreement.agreement`); or pass
    ``agreement``, an ``AgreementReport`` or its ``to_dict()``, already computed; ``threshold``
    (a number or ``{metric: number}``) is the agreement's, else chosen on the labels.

    ``comparison`` is what :func:`qa_eval.compare.compare_runs` returned for the first two runs
    (B = the second); with ``None`` and two runs or more it is computed (errors count as failed
    answers), ``False`` leaves it out. The drill-down lists at most ``max_questions`` questions,
    worst first (``None``: all); the per-template comparison at most ``max_template_rows`` rows,
    those most worth a look (``None``: all), saying how many it left out."""
    from .render import environment, render_page

    environment()  # the jinja2 extra, before any work
    if max_questions is not None and (isinstance(max_questions, bool) or max_questions < 0):
        raise ValueError(f"max_questions must be a number >= 0 or None, got {max_questions!r}")
    all_runs = [_as_run(r, i) for i, r in enumerate(runs)]
    summaries = [summarize_run(r.label, r.results, r.signature) for r in all_runs]
    note = ""
    compared: Mapping[str, Any] | None = None
    if isinstance(comparison, Mapping):
        compared = comparison
    elif comparison is None and len(summaries) >= 2:
        compared, note = _compare(summaries[0].records, summaries[1].records, all_runs)
    elif comparison not in (None, False):
        raise TypeError("comparison must be compare_runs output, None or False")
    verdict = verdict_of(compared, max_template_rows) if compared is not None else None
    metrics = metric_list(summaries, verdict)
    by_template = verdict is not None and verdict.paired_by == "template_id+question_id"
    if verdict is None and len(summaries) >= 2:
        by_template = _repeats_ids(summaries)
    questions = collect_questions(summaries, by_template)
    primary, fail = ordering(metrics, verdict)
    ordered = order_questions(questions, metrics, primary, verdict is not None, fail)
    shown = len(ordered) if max_questions is None else min(max_questions, len(ordered))
    agreed = _agreement(all_runs, labels, agreement, threshold)
    return render_page(
        title=title,
        runs=summaries,
        metrics=metrics,
        headline=headline_metrics(metrics),
        verdict=verdict,
        comparison_note=note,
        questions=ordered,
        shown=shown,
        max_questions=max_questions,
        agreement=agreed,
    )


def _agreement(
    runs: Sequence[Run], labels: Any, report: Any, threshold: Any = None
) -> Mapping[str, Any] | None:
    """The agreement report (``to_dict()``) of the runs as judges, or the one given."""
    if report is not None:
        return report if isinstance(report, Mapping) else report.to_dict()  # type: ignore[no-any-return]
    if labels is None:
        return None
    from ..agreement.judges import Judge
    from ..agreement.measure import agreement

    judges = [Judge(r.label, r.results, _judge_model(r.signature), None) for r in runs]
    return agreement(judges, labels, threshold=threshold).to_dict()


def _judge_model(signature: Mapping[str, Any] | None) -> str | None:
    judge = signature.get("judge") if isinstance(signature, Mapping) else None
    model = judge.get("model") if isinstance(judge, Mapping) else None
    return model if isinstance(model, str) else None


def _compare(
    a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]], runs: Sequence[Run]
) -> tuple[Mapping[str, Any] | None, str]:
    from ..compare.runs import compare_runs

    try:
        return compare_runs(a, b, labels=(runs[0].label, runs[1].label)), ""
    except ValueError as e:
        return None, f"{runs[1].label} is not compared with {runs[0].label}: {e}"


def _repeats_ids(summaries: Sequence[Any]) -> bool:
    for summary in summaries:
        ids = [r.get("question_id") for r in summary.records]
        if len(set(map(repr, ids))) != len(ids):
            return True
    return False
