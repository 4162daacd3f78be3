"""The two runs paired by question (by ``question_id``, or by ``(template_id, question_id)`` when a
run repeats an id): the questions in both, counted, and one metric's value pairs per template.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping, Sequence
from typing import Any

from ..aggregate import id_error, is_error
from .values import ErrorMode, default_metrics, judge_variance, side_values


def index_run(run: Sequence[Mapping[str, Any]], name: str, by_template: bool) -> dict[Any, Any]:
    """One run's results by pair key; refuses a result that is not a mapping, has no id or
    repeats one."""
    keyed: dict[Any, Any] = {}
    for position, result in enumerate(run):
        if not isinstance(result, Mapping):
            kind = type(result).__name__
            raise TypeError(f"run {name}: result [{position}] must be a mapping, got {kind}")
        if result.get("question_id") is None:
            raise ValueError(f"run {name}: result [{position}] has no question_id")
        qid = result["question_id"]
        template = result.get("template_id")
        for field, value in (("question_id", qid), ("template_id", template)):
            try:
                hash(value)  # both key pairs and per-template groups
            except TypeError:  # unhashable: a list, a mapping, ...
                raise id_error(result, position, field, value, name) from None
        key = (template, qid) if by_template else qid
        if key in keyed:
            where = f"template {key[0]!r} " if by_template else ""
            raise ValueError(f"run {name}: {where}question {qid!r} appears more than once")
        keyed[key] = result
    return keyed


def pair_by_template(
    a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]], labels: Sequence[str]
) -> bool:
    """True when pairs need (template_id, question_id): some run repeats a question id."""
    for run, label in zip((a, b), labels):
        ids = [r.get("question_id") for r in run if isinstance(r, Mapping)]
        try:
            distinct = len(set(ids))
        except TypeError:  # an unhashable id (a list, a mapping, ...): say which
            for position, result in enumerate(run):
                qid = result.get("question_id") if isinstance(result, Mapping) else None
                try:
                    hash(qid)
                except TypeError:
                    raise id_error(result, position, "question_id", qid, label) from None
            raise
        if distinct != len(ids):
            return True
    return False


def jsonable_id(value: Any) -> Any:
    """An id as JSON can hold it: scalars as they are, anything else as its text."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def common_keys(
    index_a: Mapping[Any, Any], index_b: Mapping[Any, Any], labels: Sequence[str], by_template: bool
) -> list[Any]:
    """The pair keys of the questions in both runs, in A's order; none is a ``ValueError``."""
    common = [key for key in index_a if key in index_b]
    if not common:
        raise ValueError(
            f"no question is in both runs ({labels[0]}: {len(index_a)} questions, "
            f"{labels[1]}: {len(index_b)}; paired by "
            f"{'template_id and question_id' if by_template else 'question_id'})"
        )
    return common


def metric_names(
    a: Sequence[Mapping[str, Any]],
    b: Sequence[Mapping[str, Any]],
    metrics: Sequence[str] | None,
    labels: Sequence[str],
) -> list[str]:
    """The metrics to compare: those asked for (each one the runs have), else all they have."""
    available = default_metrics(a, b, labels=labels)
    if metrics is not None:
        unknown = [m for m in metrics if m not in available]
        if unknown:
            raise ValueError(
                f"unknown metric{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}"
                f"; the runs have: {', '.join(available) or 'no numeric metric'}"
            )
    names = list(dict.fromkeys(metrics)) if metrics is not None else available
    if not names:
        raise ValueError("nothing to compare: the runs have no numeric metric")
    return names


_Paired = list[tuple[Any, Mapping[str, Any], Mapping[str, Any]]]
"""(template, result A, result B) of each question compared."""


def pair_questions(
    index_a: Mapping[Any, Mapping[str, Any]],
    index_b: Mapping[Any, Mapping[str, Any]],
    common: Sequence[Any],
    errors: ErrorMode,
    labels: Sequence[str],
) -> tuple[dict[str, int], _Paired, dict[Any, list[int]]]:
    """The questions compared, counted: (the ``questions`` counts, the pairs used, the errors
    of A and B per template in the order the templates first appear)."""
    questions = {
        "a": len(index_a),
        "b": len(index_b),
        "paired": len(common),
        "only_a": len(index_a) - len(common),
        "only_b": len(index_b) - len(common),
        "errors_a": 0,
        "errors_b": 0,
        "excluded": 0,
        "template_mismatch": 0,
    }
    used: _Paired = []
    error_counts: dict[Any, list[int]] = {}
    for key in common:
        ra, rb = index_a[key], index_b[key]
        err_a, err_b = is_error(ra), is_error(rb)
        template = ra.get("template_id")
        tally = error_counts.setdefault(template, [0, 0])
        tally[0] += err_a
        tally[1] += err_b
        questions["errors_a"] += err_a
        questions["errors_b"] += err_b
        if template != rb.get("template_id"):
            questions["template_mismatch"] += 1
        if errors == "exclude" and (err_a or err_b):
            questions["excluded"] += 1
            continue
        used.append((template, ra, rb))
    if not used:
        raise ValueError(
            f"all {len(common)} paired questions are an error in {labels[0]} or {labels[1]}; "
            "without errors='exclude' (--exclude-errors) they count as failed answers"
        )
    return questions, used, error_counts


Pairs = tuple["array[float]", "array[float]"]
"""One metric's paired values: A's and B's, as arrays of doubles (8 bytes a value)."""
Groups = dict[Any, tuple[Pairs, dict[str, int]]]
"""Per template: the (A, B) value pairs of one metric and the counts of its row."""


def no_pairs() -> Pairs:
    """Two empty arrays of doubles."""
    return array("d"), array("d")


def paired_values(
    metric: str,
    way: str,
    used: _Paired,
    error_counts: Mapping[Any, list[int]],
    errors: ErrorMode,
    repeated: bool,
) -> tuple[Groups, dict[Any, list[Any]]]:
    """One metric's value pairs and counts per template, and (when a run was scored with
    repeats) each pair's judge variances."""
    groups: Groups = {t: (no_pairs(), zero_counts(*counts)) for t, counts in error_counts.items()}
    noise: dict[Any, list[Any]] = {t: [] for t in error_counts}
    for template, ra, rb in used:
        pairs, counts = groups[template]
        counts["questions"] += 1
        # errors=fail: an error becomes 0 only for a higher-is-better metric
        (kind_a, value_a), (kind_b, value_b) = side_values(ra, rb, metric, way != "higher", errors)
        if kind_a != "ok":
            counts[f"{kind_a}_a"] += 1
        if kind_b != "ok":
            counts[f"{kind_b}_b"] += 1
        if kind_a == "ok" and kind_b == "ok":
            pairs[0].append(value_a)
            pairs[1].append(value_b)
            if repeated:
                noise[template].append((judge_variance(ra, metric), judge_variance(rb, metric)))
    return groups, noise


def zero_counts(errors_a: int = 0, errors_b: int = 0) -> dict[str, int]:
    """The counters of a row, all 0 but the errors given."""
    return {
        "errors_a": errors_a,
        "errors_b": errors_b,
        "questions": 0,
        "missing_a": 0,
        "missing_b": 0,
        "skipped_a": 0,
        "skipped_b": 0,
    }
