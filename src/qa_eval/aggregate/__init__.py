"""Aggregate per-question results: per template, micro (all questions), macro (mean of templates).

Definition (QA-evaluation README of graphrag-eval, "Aggregates Keys"): for each metric, ``sum``,
``mean``, ``median``, ``min`` and ``max`` over the questions that have a value; per template also
``number_of_error_samples`` / ``number_of_success_samples`` and the step counters ``total``,
``once_per_sample``, ``empty_results`` and ``errors`` per step name. ``macro`` is the mean of the
per-template means. The token and time metrics are always present (all zeros when no question has
them); other metrics only when some question has a value.

qa-eval adds ``n`` to every statistic: how many values it was computed from (``macro``: how many
templates). A value that is missing, not a number, NaN or infinite is left out instead of making
the statistic NaN; ``skipped`` counts the ones that were present but not finite numbers, and
``failed`` the questions (or steps) whose value could not be computed: they carry the metric's
error key (``answer_correctness_error`` for ``answer_f1``, ``retrieval_answer_recall_error`` for
``retrieval_answer_recall``, either of the recall and precision errors for an ``_f1``; a custom
output ``<name>_error``), from the registry's ``error_keys``. Both appear when not 0; a metric
every question failed has a block with ``n: 0`` and its ``failed``. As in the
original, ``steps_score`` of an error response (0.0) counts, tokens and time of an error response
are usually absent.

qa-eval also counts labels (``factual_accuracy_grade``, ``answer_class``: ``{counts, n}``) and
groups the questions by tags such as ``question_type`` (``per_tag``), with the same statistics.
For results scored with ``--repeats``, each metric block of a group also has the judge's own
noise beside the spread between questions (``judge_sd``, ``judge_se``, ``judge_n``, ``sd``) and the
group has ``label_flips`` (see ``judge.repeats``).

Pure functions over plain mappings; nothing here reads files or parses step outputs except to
confirm an empty SPARQL result, which a text scan finds first.

The package: ``keys`` (what is aggregated, from the registry), ``stats`` (what counts as a number,
``describe``), ``groups`` (one group's running totals) and ``compute`` (``compute_aggregates``).
"""

from typing import TYPE_CHECKING

from ..extras import lazy_face

if TYPE_CHECKING:
    from .compute import check_thresholds, compute_aggregates, custom_outputs, id_error
    from .groups import ALTERNATIVE_KEY, PASS_KEY, Group, empty_result, failure_map
    from .keys import (
        ALWAYS_PRESENT,
        CATEGORIES,
        DEFAULT_TAGS,
        METRICS,
        SCORES,
        STEP_ERRORS,
        STEP_METRICS,
    )
    from .stats import (
        Series,
        as_float,
        describe,
        describe_sorted,
        is_error,
        is_finite_number,
        is_number,
        mean_of,
    )

_NAMES = {
    "ALTERNATIVE_KEY": "groups",
    "ALWAYS_PRESENT": "keys",
    "CATEGORIES": "keys",
    "DEFAULT_TAGS": "keys",
    "Group": "groups",
    "METRICS": "keys",
    "PASS_KEY": "groups",
    "SCORES": "keys",
    "STEP_ERRORS": "keys",
    "STEP_METRICS": "keys",
    "Series": "stats",
    "as_float": "stats",
    "check_thresholds": "compute",
    "compute_aggregates": "compute",
    "custom_outputs": "compute",
    "describe": "stats",
    "describe_sorted": "stats",
    "empty_result": "groups",
    "failure_map": "groups",
    "id_error": "compute",
    "is_error": "stats",
    "is_finite_number": "stats",
    "is_number": "stats",
    "mean_of": "stats",
}

__all__ = [
    "ALTERNATIVE_KEY",
    "ALWAYS_PRESENT",
    "CATEGORIES",
    "DEFAULT_TAGS",
    "METRICS",
    "PASS_KEY",
    "SCORES",
    "STEP_ERRORS",
    "STEP_METRICS",
    "Group",
    "Series",
    "as_float",
    "check_thresholds",
    "compute_aggregates",
    "custom_outputs",
    "describe",
    "describe_sorted",
    "empty_result",
    "failure_map",
    "id_error",
    "is_error",
    "is_finite_number",
    "is_number",
    "mean_of",
]
__getattr__, __dir__ = lazy_face(__name__, _NAMES)
