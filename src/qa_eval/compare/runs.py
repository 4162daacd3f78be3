"""Compare two runs question by question: paired sign-flip permutation tests, Holm-adjusted.

Method (paired design; the one-sample permutation test of Fisher 1935, *The Design of
Experiments*, §21, in its Monte Carlo form per Phipson & Smyth 2010, *Stat. Appl. Genet. Mol.
Biol.* 9(1):39; interval by test inversion, Lehmann & Romano 2005, *Testing Statistical
Hypotheses*, §3.5; multiplicity by Holm 1979, *Scand. J. Statist.* 6:65-70):

- The two runs are paired by question: by ``question_id`` (unique in a reference dataset), or by
  ``(template_id, question_id)`` when a run repeats a question id across templates. For a metric,
  a pair counts when both results carry a finite number; ``d_i = B_i - A_i``.
- ``delta`` is the mean of ``d`` (= mean B - mean A over the same questions).
- p-value (two-sided, "mean difference = 0"): under the null each ``d_i`` is as likely to be
  ``-d_i`` (A and B exchangeable within a question), so the statistic ``|sum d_i|`` is compared
  with ``|sum s_i d_i|`` over sign vectors ``s``: all ``2**n`` of them when ``n <= 16`` (exact),
  else ``resamples`` random ones plus the observed one, ``p = (1 + #extreme) / (resamples + 1)``.
  Ties up to rounding (``1e-9`` times the largest ``|d_i|``) count as extreme; differences
  within ``1e-12`` count as 0.
- Confidence interval: every shift ``theta`` that the same test, applied to ``d - theta``, does
  not reject at ``alpha = 1 - confidence`` (an interval, so it contains 0 exactly when
  ``p >= alpha``); when no ``theta`` can be rejected (small ``n``) it is unbounded (``None``).
- Holm's step-down adjustment over a family of rows: the overall rows (one per metric) are one
  family, the per-template rows (metrics x templates) another. A row is ``testable`` when some
  outcome of ``n`` pairs could reach ``p < alpha`` (``2**(1 - n) < alpha`` when exact); other
  rows cannot be rejected and are left out of the family (``p_adjusted`` None).
- ``better`` is ``"a"`` or ``"b"`` exactly when ``p_adjusted < alpha``: the run the delta favours
  in the metric's direction, as the metric registry declares it (``qa_eval.metrics.direction``:
  "lower is better" for costs, tokens and times; ``none`` for counts such as the claim counts,
  which get a delta and a p-value but no ``better``).
- wins / losses / ties count the questions where B is better / worse / equal (``|d| <= 1e-12``).
- Repeated trials (results with a ``trial``): each side's value of a question is the mean over
  its trials (an error trial counts as the errors mode says: 0, left out, or its own values), so
  a question is still one pair and the questions stay independent: the test's exchangeability
  holds for the means as it does for single values. A question is an error only when every
  trial is; judge noise (``--repeats``) is not estimated through trial means.

Errors (``errors=``): ``"fail"`` (default) scores an error result as a failed answer, 0 on every
higher-is-better metric, and keeps the values it carries for the others (tokens, cost, time,
counts); ``"exclude"`` leaves out questions that are an error in either run; ``"include"`` uses the
values error results carry. Every row counts the errors among its questions (``errors_a``,
``errors_b``). When either run was scored with ``--repeats``, a row of a judged metric also has
``judge_se`` (the standard error of ``delta`` that the judge's own noise causes) and
``within_judge_noise`` (``|delta| < 2 judge_se``; see ``judge.repeats``). Everything returned
is plain JSON data (dicts, lists, str, int, float, bool, None).

The test itself is ``compare.signflip``; the console table and the report's rows are
``compare.table``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..judge.repeats import MARKER
from ..metrics.agents.trials import TRIAL_KEY
from ..vocabulary.lookup import direction
from .pairing import (
    common_keys,
    index_run,
    jsonable_id,
    metric_names,
    pair_by_template,
    pair_questions,
    paired_values,
)
from .rows import adjust_and_mark, holm, metric_rows
from .signflip import EXACT_MAX_N, TIE_TOLERANCE, alpha_of, check_options
from .trials import collapse_trials
from .values import ErrorMode, default_metrics, lower_is_better

# defined in .trials, .values and .rows; offered here as before
__all__ = ["collapse_trials", "compare_runs", "default_metrics", "holm", "lower_is_better"]


_ERROR_MODES = ("fail", "exclude", "include")


def check_compare_options(resamples: int, confidence: float, errors: str) -> None:
    """``ValueError`` for options ``compare_runs`` does not take."""
    check_options(resamples, confidence)
    if errors not in _ERROR_MODES:
        raise ValueError(f"errors must be 'fail', 'exclude' or 'include', got {errors!r}")


def compare_runs(
    a: Sequence[Mapping[str, Any]],
    b: Sequence[Mapping[str, Any]],
    *,
    metrics: Sequence[str] | None = None,
    resamples: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
    labels: tuple[str, str] = ("A", "B"),
    errors: ErrorMode = "fail",
    lower_better: Iterable[str] = (),
) -> dict[str, Any]:
    """Compare run B with run A on the questions both answered; JSON-ready dict (see docs)."""
    check_compare_options(resamples, confidence, errors)
    lower_names = set(lower_better)
    if any(isinstance(r, Mapping) and TRIAL_KEY in r for run in (a, b) for r in run):
        wanted = default_metrics(a, b, labels=labels) if metrics is None else metrics
        ways = {m: "lower" if m in lower_names else direction(m) for m in wanted}
        a, b = collapse_trials(a, ways, errors), collapse_trials(b, ways, errors)
    by_template = pair_by_template(a, b, labels)
    index_a = index_run(a, labels[0], by_template)
    index_b = index_run(b, labels[1], by_template)
    common = common_keys(index_a, index_b, labels, by_template)
    names = metric_names(a, b, metrics, labels)
    questions, used, error_counts = pair_questions(index_a, index_b, common, errors, labels)
    alpha = alpha_of(confidence)
    repeated = any(MARKER in r for _, ra, rb in used for r in (ra, rb))
    out_metrics: list[dict[str, Any]] = []
    for metric in names:
        way = "lower" if metric in lower_names else direction(metric)
        groups, noise = paired_values(metric, way, used, error_counts, errors, repeated)
        overall, per_template = metric_rows(
            metric, groups, noise if repeated else None, way == "lower", resamples, confidence, seed
        )
        out_metrics.append(
            {
                "metric": metric,
                "direction": way,
                "overall": overall,
                "per_template": per_template,
            }
        )
    adjust_and_mark(out_metrics, alpha)
    return {
        "labels": {"a": str(labels[0]), "b": str(labels[1])},
        "method": method_of(by_template, alpha, resamples, seed, confidence, errors),
        "questions": questions,
        "templates": [jsonable_id(t) for t in error_counts],
        "metrics": out_metrics,
    }


def method_of(
    by_template: bool,
    alpha: float,
    resamples: int,
    seed: int,
    confidence: float,
    errors: ErrorMode,
) -> dict[str, Any]:
    """The comparison's ``method``: how it paired, tested, adjusted and scored errors."""
    return {
        "design": "paired",
        "paired_by": "template_id+question_id" if by_template else "question_id",
        "statistic": "mean difference B - A",
        "p_value": "two-sided paired sign-flip permutation test",
        "exact_max_n": EXACT_MAX_N,
        "ci": "inverted sign-flip test",
        "adjustment": "holm",
        "families": ["overall", "per_template"],
        "alpha": alpha,
        "resamples": resamples,
        "seed": seed,
        "confidence": confidence,
        "tie_tolerance": TIE_TOLERANCE,
        "errors": errors,
    }
