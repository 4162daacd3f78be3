"""Which keys a run writes: qa-eval's set (the default) or graphrag-eval 6.6.1's.

``keys="graphrag-eval"`` (``--keys graphrag-eval``) writes exactly the keys 6.6.1 writes for the
same input, so golden files and ``==`` tests written against 6.6.1 keep passing after the import
changes; the values stay qa-eval's (docs/compatibility.md says where they differ). It is a
projection of finished results and aggregates, built when first used from one table:

- the metric registry (``vocabulary.registry``): a key marked ``own``, or any key of a family
  marked ``own``, is qa-eval's; every other registered key is one 6.6.1 writes too;
- :data:`RECORD`: the fields of a result that are not a metric's and that 6.6.1 writes;
- :data:`OWN`: the keys qa-eval writes that are not a metric's, with where they appear.

A result keeps :data:`RECORD`, the registry's 6.6.1 keys and the config's custom outputs (and
``<name>_error``); its steps lose the registry's own step keys and the judge-variance keys of
step metrics, its reference steps lose ``mismatch``. Aggregates keep ``per_template``, ``micro``
and ``macro``, the 6.6.1 metrics in them with ``sum``, ``mean``, ``median``, ``min`` and ``max``
(``macro``: ``mean``), and, per template, the retrieval step metrics under ``steps`` where 6.6.1
puts them. The default set costs nothing: the projection runs only when asked for.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any, TypeAlias

from ..errors import QaEvalError

__all__ = [
    "KEY_SETS",
    "OWN",
    "RECORD",
    "TRIAL_KEY",
    "check_keys",
    "custom_keys",
    "original_aggregates",
    "original_result",
    "own_keys",
]

TRIAL_KEY = "trial"
"""The key of a response (and its result) naming its trial (``metrics.agents.trials`` offers it
too; a run reads it from here, without the metrics)."""

KEY_SETS = ("qa-eval", "graphrag-eval")
"""The names ``keys`` takes: every key qa-eval writes, or only those graphrag-eval 6.6.1 writes."""

RECORD = (
    "template_id",
    "question_id",
    "question_text",
    "reference_answer",
    "reference_steps",
    "status",
    "error",
    "actual_answer",
    "actual_steps",
)
"""The fields of a 6.6.1 result that are not a metric's (the metrics' come from the registry)."""

REPEAT_SUFFIXES = ("_sd", "_repeats", "_flipped")
"""What ``--repeats`` adds after a metric key (``qa_eval.judge.repeats``)."""

OWN: tuple[tuple[str, str], ...] = (
    ("question_type", "result: copied from the reference question, for the per_tag aggregates"),
    ("reference_goal", "result: copied from the reference question, for goal_accuracy"),
    ("reference_topics", "result: copied from the reference question, for topic_adherence"),
    (
        "reference_trajectory",
        "result: the question's, its chosen calls marked matches / mismatch (agent metrics)",
    ),
    (
        "reference_contexts",
        "result: copied from the reference question (sql_semantic_equivalence's schema)",
    ),
    (
        "reference_tool_calls",
        "result: copied from the reference question (tool_call_accuracy, tool_call_f1)",
    ),
    ("rubrics", "result: copied from the reference question (instance_specific_rubrics)"),
    ("<tag>", "result file of evaluate --by KEY: the reference question's KEY, copied"),
    ("trace", "result: the trace its response was imported from (format, trace_id, root_span_id)"),
    ("judge_repeats", "result: how often each LLM metric was asked (--repeats)"),
    ("<key>_sd", "result, actual step: sd of a metric over the repeats (--repeats)"),
    ("<key>_repeats", "result, actual step: each repeat's value or error (--repeats)"),
    ("<key>_flipped", "result: whether a label or verdicts differ between repeats (--repeats)"),
    ("<name>_reason", "result: a custom metric's reason"),
    ("<name>_cost", "result: a custom metric's cost"),
    ("mismatch", "reference step: why it matched no actual step"),
    ("trial", "response, result: which of a question's repeated trials it is"),
    ("trials", "aggregates, a group with trials: pass@k, pass^k, trajectory consistency"),
    ("n", "aggregates, every statistic (macro too): the values it was computed from"),
    ("skipped", "aggregates, a statistic: values present but not finite numbers"),
    ("failed", "aggregates, a statistic: questions or steps whose value could not be computed"),
    ("counts", "aggregates, a label metric (answer_class, factual_accuracy_grade)"),
    ("sd", "aggregates, a statistic with repeats: sd between questions"),
    ("judge_sd", "aggregates, a statistic with repeats: the judge's own noise"),
    ("judge_se", "aggregates, a statistic with repeats: standard error due to the judge"),
    ("judge_n", "aggregates, a statistic with repeats: questions with 2 values or more"),
    ("label_flips", "aggregates, a group with repeats: labels that flipped"),
    ("per_tag", "aggregates, top level: the groups per tag (question_type, --by)"),
    ("signature", "aggregates file of evaluate, top level: the run signature"),
    ("system", "aggregates file of evaluate --system, top level: the system's name"),
)
"""The keys qa-eval writes that are neither a metric's nor 6.6.1's, and where they appear."""

_STATISTICS = ("sum", "mean", "median", "min", "max")
_GROUP_FIELDS = ("number_of_error_samples", "number_of_success_samples")


_Tables: TypeAlias = (
    "tuple[frozenset[str], frozenset[str], frozenset[str], frozenset[str], frozenset[str]]"
)


@functools.cache
def _tables() -> _Tables:
    """(6.6.1's result keys, the keys its actual steps do not get, its aggregated result
    metrics, its aggregated step metrics, the keys aggregated even when no question has them),
    from the registry, built when first asked for: a run with qa-eval's own keys (the default)
    neither builds them nor imports the registry for them."""
    from ..vocabulary.registry import METRICS

    result = set(RECORD)
    step_drop: set[str] = set()
    aggregated: set[str] = set()
    step_metrics: set[str] = set()
    for metric in METRICS.values():
        for key in metric.keys:
            own = key.own or metric.own
            if metric.step is not None:
                step_drop.update(key.name + s for s in REPEAT_SUFFIXES)
                if own:
                    step_drop.add(key.name)
                elif key.scale == "0-1" and key.direction == "higher":
                    step_metrics.add(key.name)
            elif not own:
                result.add(key.name)
                if key.aggregate:
                    aggregated.add(key.name)
    always = frozenset(key.name for metric in METRICS.values() for key in metric.keys if key.always)
    return (
        frozenset(result),
        frozenset(step_drop),
        frozenset(aggregated),
        frozenset(step_metrics),
        always,
    )


def own_keys() -> list[tuple[str, str]]:
    """Every key qa-eval writes that graphrag-eval 6.6.1 does not, with where it appears: the
    registry's own keys (of a result, or of an actual step) and :data:`OWN`."""
    from ..vocabulary.registry import METRICS

    out: list[tuple[str, str]] = []
    for metric in METRICS.values():
        where = f"actual step ({metric.step})" if metric.step is not None else "result"
        for key in metric.keys:
            if key.own or metric.own:
                aggregated = (
                    key.aggregate or bool(key.labels) or (metric.step and key.scale == "0-1")
                )
                out.append((key.name, where + (", aggregates" if aggregated else "")))
    return [*out, *OWN]


def check_keys(keys: Any) -> bool:
    """Whether ``keys`` asks for graphrag-eval 6.6.1's key set; ``QaEvalError`` (one line) for a
    value that is not one of :data:`KEY_SETS`."""
    if keys == "qa-eval":
        return False
    if keys == "graphrag-eval":
        return True
    raise QaEvalError(f"keys must be one of {', '.join(map(repr, KEY_SETS))}, not {keys!r:.60}")


def custom_keys(config: Any) -> frozenset[str]:
    """The result keys a config's custom metrics write that 6.6.1 writes too: each output and
    ``<name>_error`` (``config``: an EvalConfig; None: none)."""
    definitions = getattr(config, "custom_definitions", None) or ()
    return frozenset(key for m in definitions for key in (*m.outputs, f"{m.name}_error"))


def _without(record: Any, drop: frozenset[str]) -> Any:
    """The mapping without the keys of ``drop``: itself when it has none of them (the caller's
    step dicts are shared, never changed)."""
    if not isinstance(record, dict) or drop.isdisjoint(record):
        return record
    return {k: v for k, v in record.items() if k not in drop}


_MISMATCH = frozenset({"mismatch"})


def original_result(result: Mapping[str, Any], custom: Iterable[str] = ()) -> dict[str, Any]:
    """One result with only the keys 6.6.1 writes (``custom``: the config's custom output and
    error keys, see :func:`custom_keys`); a new dict, ``result`` is not changed."""
    keep, step_drop = _tables()[:2]
    allowed = keep.union(custom) if custom else keep
    out = {k: v for k, v in result.items() if k in allowed}
    steps = out.get("actual_steps")
    if isinstance(steps, list):
        out["actual_steps"] = [_without(step, step_drop) for step in steps]
    groups = out.get("reference_steps")
    if isinstance(groups, list):
        out["reference_steps"] = [
            [_without(step, _MISMATCH) for step in group] if isinstance(group, list) else group
            for group in groups
        ]
    return out


def _kept(metric: str, block: Any, always: frozenset[str]) -> bool:
    """Whether 6.6.1 would write this statistic: it has values (or values 6.6.1 counts and
    qa-eval skips, NaN and booleans), or it is a token or time metric (``always`` written)."""
    if not isinstance(block, Mapping):
        return False
    return metric in always or bool(block.get("n")) or bool(block.get("skipped"))


def _group(group: Mapping[str, Any], allowed: frozenset[str], nest_steps: bool) -> dict[str, Any]:
    step_metrics, always = _tables()[3:]
    out: dict[str, Any] = {k: group[k] for k in _GROUP_FIELDS if k in group}
    steps = group.get("steps")
    if isinstance(steps, Mapping):
        out["steps"] = dict(steps)
    for metric, block in group.items():
        if metric not in allowed or not _kept(metric, block, always):
            continue
        stats = {s: block[s] for s in _STATISTICS if s in block}
        if nest_steps and metric in step_metrics:
            out.setdefault("steps", {})[metric] = stats
        else:
            out[metric] = stats
    return out


def original_aggregates(
    aggregates: Mapping[str, Any], custom: Iterable[str] = ()
) -> dict[str, Any]:
    """Aggregates with only the keys 6.6.1 writes (``custom``: the custom output names the
    aggregates summarise); a new dict."""
    aggregated, step_metrics, always = _tables()[2:]
    allowed = aggregated | step_metrics | frozenset(custom)
    per_template = {
        template: _group(group, allowed, nest_steps=True)
        for template, group in (aggregates.get("per_template") or {}).items()
    }
    macro = {
        metric: {"mean": block.get("mean")}
        for metric, block in (aggregates.get("macro") or {}).items()
        if metric in allowed and _kept(metric, block, always)
    }
    return {
        "per_template": per_template,
        "micro": _group(aggregates.get("micro") or {}, allowed, nest_steps=False),
        "macro": macro,
    }
