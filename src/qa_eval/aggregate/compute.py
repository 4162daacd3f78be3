"""``compute_aggregates``: results in, ``per_template``, ``micro``, ``macro`` and ``per_tag`` out
(see the package's docstring for the keys); the pass thresholds and custom outputs it takes."""

from __future__ import annotations

import gc
import os
from array import array
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import InputError, QaEvalError, short_repr
from ..io.keysets import check_keys, original_aggregates
from ..vocabulary import lookup as _registry
from .groups import Group, Shape, failure_map
from .keys import ALWAYS_PRESENT, DEFAULT_TAGS, STEP_METRICS
from .stats import as_float, describe


def id_error(
    result: Mapping[str, Any],
    position: int,
    field: str,
    value: Any,
    run: str | None = None,
) -> InputError:
    """The ``InputError`` for an id ``value`` of a result (its ``field``) that cannot key a
    group or a pair (a list, a mapping, ...): names the run (``run``), the result by position
    (and question id when it has a usable one) and the field."""
    record = f"result [{position}]"
    question = result.get("question_id")
    if field != "question_id" and isinstance(question, (str, int)):
        record += f" (question_id {short_repr(question)})"
    return InputError(
        f"must be a string or a number, got {type(value).__name__} {short_repr(value)}",
        source=None if run is None else f"run {run}",
        record=record,
        field=field,
    )


def check_thresholds(thresholds: Mapping[str, float] | None) -> dict[str, float]:
    """The pass thresholds as metric -> float; ``QaEvalError`` for a name that is not text or
    a value that is not a finite number."""
    out: dict[str, float] = {}
    for metric, value in (thresholds or {}).items():
        if not isinstance(metric, str) or not metric:
            raise QaEvalError(f"a pass threshold's metric must be a name, got {short_repr(metric)}")
        number = as_float(value)
        if number is None:
            raise QaEvalError(
                f"the pass threshold of {metric} must be a finite number, got {short_repr(value)}"
            )
        out[metric] = number
    return out


def custom_outputs(config: Any) -> dict[str, str]:
    """The output names of a config's custom metrics (a YAML path, a mapping or an
    EvalConfig), each with the name of its metric (whose ``<name>_error`` fails it)."""
    from ..config import as_config

    if config is None:
        return {}
    return {name: m.name for m in as_config(config).custom_definitions for name in m.outputs}


def compute_aggregates(
    results: Iterable[Mapping[str, Any]],
    config_file_path: Any = None,
    by: Iterable[str] = DEFAULT_TAGS,
    *,
    extra_metrics: Iterable[str] = (),
    keys: str = "qa-eval",
    pass_thresholds: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """Aggregate per-question results into ``per_template``, ``micro`` and ``macro``, and
    ``per_tag`` for each key of ``by`` (e.g. ``question_type``) that some result has.

    ``config_file_path`` (the original's second argument: a YAML path, or a mapping or
    EvalConfig) adds its custom metrics' numeric outputs; a list of names adds those names.
    ``keys="graphrag-eval"``: only the keys graphrag-eval 6.6.1 writes (no ``n``, ``skipped``,
    ``failed``, ``per_tag``, costs; retrieval step metrics per template under ``steps``).

    Results with a ``trial`` (repeated trials of a question): each metric's statistics take one
    value per question, the mean over its trials, and each group gets ``trials``: pass@k and
    pass^k of ``trajectory_match`` and of each metric of ``pass_thresholds`` (metric -> the value
    a trial must reach), see ``qa_eval.metrics.agents.trials``."""
    spec = AggregateSpec.of(config_file_path, by, extra_metrics, keys, pass_thresholds)
    # Aggregating allocates only acyclic data (groups, value lists, summary dicts), which
    # reference counting frees: the collector is paused meanwhile, as during a run
    # (run.execute.Collector), so that the allocations of thousands of groups do not set off
    # its full scans of every result held in memory (5,000 templates: ~2.5x less CPU). Only
    # for results already made (a list or a tuple): results made as they are read (a
    # generator, ``iter_evaluation``) may come from a long judged run, whose HTTP stack makes
    # cycles the collector must see meanwhile.
    collecting = gc.isenabled() and isinstance(results, (list, tuple))
    if collecting:
        gc.disable()
    try:
        templates, tagged = grouped(results, spec)
        out = summarise(
            templates.items(), {tag: groups.items() for tag, groups in tagged.items()}, spec
        )
    finally:
        if collecting:
            gc.enable()
    return spec.project(out)


@dataclass(frozen=True)
class AggregateSpec:
    """What ``compute_aggregates`` is asked for, resolved once (picklable: a worker process or
    a merge aggregates with the same): the metrics summarised (``numeric_only``: the custom
    outputs, left out when none of their values is a number), the tags grouped by, the pass
    thresholds, the error keys that fail each metric, and the key set written."""

    metrics: tuple[str, ...]
    numeric_only: frozenset[str]
    tags: tuple[str, ...]
    thresholds: Mapping[str, float]
    failures: Mapping[str, tuple[str, ...]]
    extra_metrics: tuple[str, ...] = ()
    custom: Mapping[str, str] = field(default_factory=dict)
    keys: str = "qa-eval"

    @classmethod
    def of(
        cls,
        config_file_path: Any = None,
        by: Iterable[str] = DEFAULT_TAGS,
        extra_metrics: Iterable[str] = (),
        keys: str = "qa-eval",
        pass_thresholds: Mapping[str, float] | None = None,
    ) -> AggregateSpec:
        """The spec of ``compute_aggregates``' arguments (checked: ``QaEvalError``)."""
        original = check_keys(keys)
        thresholds = check_thresholds(pass_thresholds)
        if original:
            by = ()  # per_tag is not written: not computed either
        extra, custom = _extra_metrics(config_file_path, list(extra_metrics))
        registered = _registry.aggregated_keys()  # read now: the registry as it is at this call
        step_metrics = [m for names in STEP_METRICS.values() for m in names]
        metrics = tuple(dict.fromkeys([*registered, *step_metrics, *extra]))
        return cls(
            metrics,
            frozenset(extra) - frozenset(registered),
            tuple(dict.fromkeys(by)),
            thresholds,
            failure_map(metrics, custom),
            tuple(extra),
            custom,
            keys,
        )

    def group(self, deferred: bool = False) -> Group:
        """A new, empty group (``deferred``: see ``Group``)."""
        return Group(self.failures, self.thresholds, deferred)

    def project(self, out: dict[str, Any]) -> dict[str, Any]:
        """The aggregates in the spec's key set."""
        if self.keys == "graphrag-eval":
            return original_aggregates(out, list(self.extra_metrics))
        return out


class Summaries(Protocol):
    """Where ``summarise`` puts each template's summary: a dict, or a ``TemplateSummaries``."""

    def __setitem__(self, template: Any, summary: dict[str, Any], /) -> None:
        """Keep a template's summary."""


def summarise(
    templates: Iterable[tuple[Any, Group]],
    tagged: Mapping[str, Iterable[tuple[Any, Group]]],
    spec: AggregateSpec,
    overall: Group | None = None,
    per_template: Summaries | None = None,
) -> dict[str, Any]:
    """``per_template``, ``micro``, ``macro`` and ``per_tag`` of the groups the results were
    added to (templates and tag values in order of first appearance, each group read once; see
    ``compute_aggregates``); ``overall`` gathers the templates into micro (a new group by
    default), ``per_template`` the templates' summaries (a new dict by default; each is set
    once, then only its mean is kept for macro: a group and its summary can go as soon as the
    next template is summarised)."""
    metrics, numeric_only = list(spec.metrics), spec.numeric_only
    if overall is None:
        overall = spec.group()
    if per_template is None:
        per_template = {}
    macro = Macro(metrics)
    for tid, group in templates:
        group.finish()
        # The template's summary first: it sorts each series, and the merge reuses the sorts.
        summary = group.summary(metrics, numeric_only)
        per_template[tid] = summary
        macro.add(summary)
        overall.merge(group)
    out: dict[str, Any] = {
        "per_template": per_template,
        "micro": overall.summary(metrics, numeric_only),
        "macro": macro.result(),
    }
    per_tag = {}
    for tag, groups in tagged.items():
        summaries = {}
        for value, group in groups:
            group.finish()
            summaries[value] = group.summary(metrics, numeric_only)
        if summaries:
            per_tag[tag] = summaries
    if per_tag:
        out["per_tag"] = per_tag
    return out


def _extra_metrics(
    config_file_path: Any, extra_metrics: list[str]
) -> tuple[list[str], dict[str, str]]:
    """(the metrics aggregated besides the registry's, the custom outputs with their metric)
    from ``compute_aggregates``' second argument: a config, or a list of names."""
    if isinstance(config_file_path, (str, os.PathLike, Mapping)) or hasattr(
        config_file_path, "custom_metrics"
    ):
        custom = custom_outputs(config_file_path)
        return [*extra_metrics, *custom], custom
    if config_file_path is not None:
        return [*extra_metrics, *(str(m) for m in config_file_path)], {}
    return extra_metrics, {}


def grouped(
    results: Iterable[Mapping[str, Any]], spec: AggregateSpec
) -> tuple[dict[Any, Group], dict[str, dict[Any, Group]]]:
    """The results added up per template, and per value of each tag (deferred groups: their
    series are read after ``Group.finish``)."""
    templates: dict[Any, Group] = {}
    tagged: dict[str, dict[Any, Group]] = {tag: {} for tag in spec.tags}
    metric_set = frozenset(spec.metrics)
    shapes: dict[tuple[str, ...], Shape] = {}
    tags = frozenset(spec.tags)
    # (one tag, as by default: one dict lookup per result; isdisjoint reads each of its keys)
    tag = spec.tags[0] if len(spec.tags) == 1 else None
    for position, result in enumerate(results):
        # (the usual result: a dict whose template's group exists; any other goes the long way)
        try:
            group = templates.get(result.get("template_id")) if type(result) is dict else None
        except TypeError:  # an unhashable template id: template_group says so
            group = None
        if group is None:
            group = template_group(templates, result, position, spec, True)
        group.add(result, metric_set, shapes)
        # (most results have no tag: one C test)
        if (tag in result) if tag is not None else not tags.isdisjoint(result):
            for group in tag_groups(tagged, result, spec, True):
                group.add(result, metric_set, shapes)
    return templates, tagged


def template_group(
    templates: dict[Any, Group],
    result: Any,
    position: int,
    spec: AggregateSpec,
    deferred: bool = False,
) -> Group:
    """The group of a result's template (made when new, ``deferred`` or not: see ``Group``);
    ``TypeError`` for a result that is not a mapping, ``InputError`` for a template id that
    cannot key a group."""
    if not isinstance(result, dict):
        raise TypeError(f"result [{position}] must be a mapping, got {type(result).__name__}")
    template_id = result.get("template_id")
    try:
        group = templates.get(template_id)
    except TypeError:  # unhashable: a list, a mapping, ...
        raise id_error(result, position, "template_id", template_id) from None
    if group is None:
        group = templates[template_id] = spec.group(deferred)
    return group


def tag_groups(
    tagged: dict[str, dict[Any, Group]],
    result: Mapping[str, Any],
    spec: AggregateSpec,
    deferred: bool = False,
) -> list[Group]:
    """The groups of a result's tag values (made when new, ``deferred`` or not: see ``Group``):
    one per tag it has a value of."""
    found = []
    for tag in spec.tags:
        value = result.get(tag)
        if value is None or isinstance(value, (dict, list)):
            continue
        groups = tagged[tag]
        try:
            group = groups.get(value)
        except TypeError:  # an unhashable tag value (a set, ...) is no group, as a list
            continue
        if group is None:
            group = groups[value] = spec.group(deferred)
        found.append(group)
    return found


class Macro:
    """``macro``: the mean of the per-template means of each metric, with how many templates
    have one (a mean beyond the float range, null, is not one), from the summaries given one
    at a time (:meth:`add`). Only the means are kept, compactly: 9 bytes a template and metric
    (a float, and whether the mean was an int), not the summaries."""

    def __init__(self, metrics: Iterable[str]) -> None:
        self.metrics = list(metrics)
        self.means: dict[str, _Means] = {metric: _Means() for metric in self.metrics}
        self.gathered: set[str] = set()
        """The metrics some template has a block of (a mean or not)."""

    def add(self, summary: Mapping[str, Any]) -> None:
        """Count one template's summary."""
        # One pass over the template's keys (a template has far fewer than there are metrics).
        means = self.means
        for key, block in summary.items():
            kept = means.get(key)
            if kept is not None:
                self.gathered.add(key)
                if block.get("n") and block["mean"] is not None:
                    kept.append(block["mean"])

    def result(self) -> dict[str, Any]:
        """The ``macro`` block."""
        macro: dict[str, Any] = {}
        for metric in self.metrics:
            means = self.means[metric].values()
            if means:
                macro[metric] = {"mean": describe(means)["mean"], "n": len(means)}
            elif metric in ALWAYS_PRESENT:
                macro[metric] = {"mean": 0, "n": 0}  # as the original writes it
            elif metric in self.gathered:
                macro[metric] = {"mean": None, "n": 0}
        return macro


class _Means:
    """Templates' means of one metric, in order: as floats (an int mean marked as one; one
    that no float holds exactly kept apart), given back as the very values."""

    __slots__ = ("exact", "floats", "ints")

    def __init__(self) -> None:
        self.floats = array("d")
        self.ints = bytearray()
        self.exact: dict[int, Any] = {}

    def append(self, mean: Any) -> None:
        if type(mean) is float:
            self.floats.append(mean)
            self.ints.append(0)
            return
        at = len(self.floats)
        try:
            held = float(mean)
        except (OverflowError, TypeError, ValueError):
            held = 0.0
        if type(mean) is not int or int(held) != mean:
            self.exact[at] = mean  # (an int beyond 2**53, or not a plain number)
        self.floats.append(held)
        self.ints.append(1)

    def values(self) -> list[Any]:
        """The means given, as they were given."""
        out: list[Any] = self.floats.tolist()
        if any(self.ints):
            for at, kind in enumerate(self.ints):
                if kind:
                    out[at] = int(out[at])
            for at, mean in self.exact.items():
                out[at] = mean
        return out
