"""Partial aggregates: the running totals of any part of a run's results, which merge exactly.

A run spread over worker processes, shards or a cluster aggregates each part where it is scored;
:class:`PartialAggregates` holds what ``compute_aggregates`` needs of a part: per template and per
tag value the counts (error and success samples, step counters, labels, trials) and each metric's
values, kept compactly (an ``array`` of ints or floats, 8 bytes a value) with the position of the
result each came from. Merged in any order, parts give back the values of each group in the order
the whole would have had them, so :meth:`PartialAggregates.finish` summarises them with the very
code of ``compute_aggregates`` (``aggregate.compute.summarise``): the same sums, means, medians,
minima and maxima, bit for bit (the order only matters where values tie: ``1`` and ``1.0``, ``0.0``
and ``-0.0`` sort as they came), and the same key order (templates, tags, step names and labels in
order of first appearance).

A position is the result's place in the whole run (its index among all results, in reference
order); the parts of one run must not share one. A part is sent between processes by ``pickle``
(workers) and never read from a file.
"""

from __future__ import annotations

import itertools
from array import array
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from .compute import AggregateSpec, summarise, tag_groups, template_group
from .groups import Group, Shape, Trials
from .keys import CATEGORIES
from .micro import Micro, compact_values
from .spill import Spill, Spilled
from .stats import ArraySeries, Series

__all__ = ["PartialAggregates"]

_TRIAL_ORDER = 1 << 62
"""Order of a trial mean: after every value of a single result (``Group.finish`` appends them)."""


class Column:
    """One metric's values in a part of a group, each with the position of its result
    (``order``), or (``order`` None, :meth:`in_order`) in the order of their results, which
    lie between the positions ``span``."""

    __slots__ = ("failed", "order", "skipped", "span", "values")

    def __init__(
        self,
        values: array[Any] | list[Any] | Spilled,
        order: array[int] | None,
        skipped: int,
        failed: int,
    ) -> None:
        self.values = values
        self.order = order
        self.skipped = skipped
        self.failed = failed
        self.span = (-1, -1)

    def in_order(self) -> None:
        """Keep the values in the order of their results and let their positions go (8 bytes a
        value): parts merged into it after must come after it (:meth:`merge`)."""
        order = self.order
        if order is None:
            return
        values = self.values
        assert not isinstance(values, Spilled)  # (written only once kept in order)
        if len(order) and not _increasing(order):
            self.values = _in_order(values, order)
        self.span = (min(order), max(order)) if len(order) else (-1, -1)
        self.order = None

    def merge(self, other: Column) -> None:
        """Add another part's values (an array only while both are of one kind); to a column
        kept in order (:meth:`in_order`), a part whose results all come after its own."""
        if self.order is None:
            other.in_order()
            if other.span[0] >= 0:
                if other.span[0] < self.span[1]:
                    raise ValueError("a part merged in order came before the parts merged")
                self.span = (self.span[0] if self.span[0] >= 0 else other.span[0], other.span[1])
        elif other.order is None:
            raise ValueError("a part kept in order cannot be merged into one with positions")
        mine, theirs = self.values, other.values
        if isinstance(mine, Spilled) and isinstance(theirs, Spilled):
            if not len(mine):
                self.values = theirs
            elif len(theirs) and mine.typecode == theirs.typecode:
                mine.extend(theirs)
            elif len(theirs):  # ints and floats in one group (rare): in memory from now on
                self.values = [*mine.read(), *theirs.read()]
        else:
            self.values = _joined(
                mine.read() if isinstance(mine, Spilled) else mine,
                theirs.read() if isinstance(theirs, Spilled) else theirs,
            )
        if self.order is not None and other.order is not None:
            self.order.extend(other.order)
        self.skipped += other.skipped
        self.failed += other.failed

    def series(self, plain: bool = False) -> Series:
        """The group's ``Series``: the values in the order of their results (an
        :class:`ArraySeries` of an array, unless ``plain``: a list, which trials append to)."""
        values = self.values
        if isinstance(values, Spilled):
            if not plain:  # read when summarised (and for micro, once more with the others)
                return ArraySeries(values, self.skipped, self.failed)
            values = values.read()
        if self.order is not None and len(self.order) > 1 and not _increasing(self.order):
            values = _in_order(values, self.order)
        if isinstance(values, array) and not plain:
            return ArraySeries(values, self.skipped, self.failed)
        series = Series()
        series.values = values.tolist() if isinstance(values, array) else list(values)
        series.skipped = self.skipped
        series.failed = self.failed
        return series


def _joined(mine: array[Any] | list[Any], theirs: array[Any] | list[Any]) -> array[Any] | list[Any]:
    """Values followed by more: an array only while both are of one kind."""
    if not len(theirs):
        return mine
    if not len(mine):
        return theirs  # (an empty part is no reason to leave the arrays)
    if isinstance(mine, array) and isinstance(theirs, array) and mine.typecode == theirs.typecode:
        mine.extend(theirs)
        return mine
    return [*mine, *theirs]


def _increasing(order: array[int]) -> bool:
    """Whether positions never decrease."""
    import numpy as np  # (not for every run: only when parts are merged)

    positions = np.frombuffer(order, dtype=np.int64)
    return bool(np.all(positions[1:] >= positions[:-1]))


def _in_order(values: array[Any] | list[Any], order: array[int]) -> array[Any] | list[Any]:
    """The values sorted by their positions (stably: a result's values keep their order), an
    array of an array."""
    if len(order) < 2:
        return values
    import numpy as np

    sort = np.argsort(np.frombuffer(order, dtype=np.int64), kind="stable")
    if isinstance(values, array):
        kind = np.float64 if values.typecode == "d" else np.int64
        return array(values.typecode, np.frombuffer(values, dtype=kind)[sort].tobytes())
    return [values[i] for i in sort.tolist()]


Keyed = dict[Any, list[Any]]
"""A counter's keys in a part: key -> [count, position first seen, rank within that result]."""


def _keyed_merge(mine: Keyed, theirs: Keyed) -> None:
    for key, (count, first, rank) in theirs.items():
        held = mine.get(key)
        if held is None:
            mine[key] = [count, first, rank]
        else:
            held[0] += count
            held[1], held[2] = min((held[1], held[2]), (first, rank))


def _keyed_dict(keyed: Keyed) -> dict[Any, int]:
    """The counts in order of first appearance."""
    return {k: v[0] for k, v in sorted(keyed.items(), key=lambda item: (item[1][1], item[1][2]))}


class Part:
    """One group's totals over a part of the results (see the module docstring)."""

    def __init__(self, key: Any, first: int) -> None:
        self.key = key
        """The template id or tag value, as its first result has it (``1`` and ``1.0`` are one
        key)."""
        self.first = first
        """The position of the group's first result."""
        self.errors = 0
        self.successes = 0
        self.series: dict[str, Column] = {}
        self.steps: dict[str, Keyed] = {}
        self.labels: Keyed = {}
        """label key -> [{label: [count, first, rank]}, first, rank]"""
        self.spreads: dict[str, tuple[list[Any], array[int]]] = {}
        self.flips: dict[str, list[int]] = {}
        self.trials: dict[Any, tuple[int, Trials]] = {}

    def merge(self, other: Part) -> None:
        """Add another part of the same group (taken over: not to be used after)."""
        if other.first < self.first:
            self.key, self.first = other.key, other.first
        self.errors += other.errors
        self.successes += other.successes
        for metric, column in other.series.items():
            mine = self.series.get(metric)
            if mine is None:
                self.series[metric] = column
            else:
                mine.merge(column)
        for counter, keyed in other.steps.items():
            _keyed_merge(self.steps.setdefault(counter, {}), keyed)
        for key, (labels, first, rank) in other.labels.items():
            held = self.labels.get(key)
            if held is None:
                self.labels[key] = [labels, first, rank]
            else:
                _keyed_merge(held[0], labels)
                held[1], held[2] = min((held[1], held[2]), (first, rank))
        for key, (items, order) in other.spreads.items():
            if key in self.spreads:
                self.spreads[key][0].extend(items)
                self.spreads[key][1].extend(order)
            else:
                self.spreads[key] = (items, order)
        for key, (n, flipped) in other.flips.items():
            tally = self.flips.setdefault(key, [0, 0])
            tally[0] += n
            tally[1] += flipped
        for key, (first, trials) in other.trials.items():
            held_trials = self.trials.get(key)
            if held_trials is None:
                self.trials[key] = (first, trials)
            else:
                held_trials[1].extend(trials)
                if first < held_trials[0]:
                    self.trials[key] = (first, held_trials[1])

    def group(self, spec: AggregateSpec) -> Group:
        """The ``Group`` the whole's results would have made (not finished)."""
        group = spec.group()
        group.errors, group.successes = self.errors, self.successes
        plain = bool(self.trials)  # (Group.finish appends the trials' means to a list)
        group.series = {metric: c.series(plain) for metric, c in self.series.items()}
        for counter, keyed in self.steps.items():
            # (in place: the group's counters are its dicts; a new group's are empty)
            group.steps.setdefault(counter, {}).update(_keyed_dict(keyed))
        for key, (labels, _, _) in sorted(self.labels.items(), key=lambda i: (i[1][1], i[1][2])):
            counts = dict.fromkeys(CATEGORIES[key], 0)
            for label, count in _keyed_dict(labels).items():
                counts[label] = counts.get(label, 0) + count
            group.labels[key] = counts
        for key, (items, order) in self.spreads.items():
            group.judge.extend(key, list(_in_order(items, order)))
        for key, (n, flipped) in self.flips.items():
            group.judge.flips[key] = [n, flipped]
        group.trials = {  # copies: the group's finish empties them
            key: trials.copy()
            for key, (_, trials) in sorted(self.trials.items(), key=lambda i: i[1][0])
        }
        return group


class _Tracker:
    """What one group of a batch was given, position by position (see ``PartialAggregates.add``)."""

    __slots__ = ("first", "keys", "labels", "orders", "spreads", "steps", "trials")

    def __init__(self, first: int) -> None:
        self.first = first
        self.orders: dict[str, array[int]] = {}
        self.steps: dict[str, dict[Any, tuple[int, int]]] = {}
        self.keys: dict[Any, tuple[int, int]] = {}
        """Label key -> (position, rank) of its first label."""
        self.labels: dict[Any, tuple[int, int]] = {}
        """(label key, label) -> (position, rank) of its first count."""
        self.spreads: dict[str, array[int]] = {}
        self.trials: dict[Any, int] = {}

    def added(self, group: Group, position: int) -> None:
        """Note the position of what the last result added to the group."""
        # Once per result and group: only lengths are compared unless something was added.
        orders = self.orders
        for metric, series in group.series.items():
            order = orders.get(metric)
            if order is None:
                order = orders[metric] = array("q")
            grow = len(series.values) - len(order)
            if grow:
                order.extend([position] * grow)
        steps = self.steps
        for counter, counts in group.steps.items():
            firsts = steps.get(counter)
            if firsts is None:
                firsts = steps[counter] = {}
            if len(counts) != len(firsts):
                _note_new(counts, firsts, position)
        if group.labels:
            _note_new(group.labels, self.keys, position)
            for key, counts in group.labels.items():
                _note_new(counts, self.labels, position, key)
        if group.judge.spreads:
            for metric, spread in group.judge.spreads.items():
                order = self.spreads.setdefault(metric, array("q"))
                grow = len(spread.items) - len(order)
                if grow:
                    order.extend([position] * grow)
        if len(group.trials) != len(self.trials):
            for question in group.trials:
                self.trials.setdefault(question, position)

    def part(self, key: Any, group: Group) -> Part:
        """The group's totals as a mergeable part."""
        part = Part(key, self.first)
        part.errors, part.successes = group.errors, group.successes
        for metric, series in group.series.items():
            part.series[metric] = Column(
                compact_values(series.values),
                self.orders[metric],
                series.skipped,
                series.failed,
            )
        for counter, counts in group.steps.items():
            if counts:
                firsts = self.steps[counter]
                part.steps[counter] = {k: [c, *firsts[k]] for k, c in counts.items()}
        for key, counts in group.labels.items():
            listed = CATEGORIES[key]
            keyed = {
                label: [count, *self.labels.get((key, label), (-1, 0))]
                for label, count in counts.items()
                if label not in listed or count
            }
            part.labels[key] = [keyed, *self.keys[key]]
        for metric, spread in group.judge.spreads.items():
            part.spreads[metric] = (list(spread.items), self.spreads[metric])
        part.flips = {k: list(v) for k, v in group.judge.flips.items()}
        part.trials = {key: (self.trials[key], trials) for key, trials in group.trials.items()}
        return part


def _note_new(
    counts: Mapping[Any, Any], firsts: dict[Any, Any], position: int, key: Any = None
) -> None:
    """Give the keys ``counts`` gained with the last result (those ``firsts`` lacks) their
    position and rank (``key``: the labels of this label key, noted as ``(key, label)``)."""
    rank = 0
    for name in counts:
        note = name if key is None else (key, name)
        if note not in firsts:
            firsts[note] = (position, rank)
            rank += 1


class PartialAggregates:
    """Mergeable running totals of a part of a run's results (see the module docstring).

    ``add`` counts results with their positions; ``merge`` adds another part (of the same spec);
    ``finish`` gives what ``compute_aggregates`` gives for all the results merged."""

    def __init__(self, spec: AggregateSpec, in_order: bool = False) -> None:
        self.spec = spec
        self.in_order = in_order
        """Whether the parts merged come in the order of their results (each after every one
        merged before, as a run's batches do): then the values are kept without their positions
        and written to a temporary file (:class:`Spill`), read back one group at a time when
        they are summarised; a part merged out of order is a ``ValueError``."""
        self.spill = Spill() if in_order else None
        self.templates: dict[Any, Part] = {}
        self.cold: dict[Any, int] = {}
        """In order: the templates none of whose results were in the last part added or merged
        (a template's results are usually consecutive), each written to the spill file and let
        go (its number in ``cold_at``), and read back if more of its results come."""
        self.cold_at = array("q")
        """Where each cold template's part is in the spill file: offset, size, first position."""
        self.tagged: dict[str, dict[Any, Part]] = {tag: {} for tag in spec.tags}
        self.results = 0

    def add(
        self,
        results: Iterable[Mapping[str, Any]],
        positions: Iterable[int] | None = None,
    ) -> None:
        """Count results, each at its position in the whole run (``positions``, increasing;
        None: the results follow those added so far)."""
        spec = self.spec
        if positions is None:
            positions = itertools.count(self.results)
        metric_set = frozenset(spec.metrics)
        templates: dict[Any, Group] = {}
        tagged: dict[str, dict[Any, Group]] = {tag: {} for tag in spec.tags}
        trackers: dict[int, _Tracker] = {}
        shapes: dict[tuple[str, ...], Shape] = {}
        for position, result in zip(positions, results):
            groups = [template_group(templates, result, position, spec)]
            groups += tag_groups(tagged, result, spec)
            for group in groups:
                group.add(result, metric_set, shapes)
                tracker = trackers.get(id(group))
                if tracker is None:
                    tracker = trackers[id(group)] = _Tracker(position)
                tracker.added(group, position)
            self.results += 1
        for tid, template in templates.items():
            self._merge_template(trackers[id(template)].part(tid, template))
        for tag, values in tagged.items():
            for value, group in values.items():
                _merge_part(self.tagged[tag], trackers[id(group)].part(value, group), self.spill)
        self._cool(templates)

    def merge(self, other: PartialAggregates) -> None:
        """Add another part of the same run (taken over: not to be used after); ``ValueError`` for
        one aggregated otherwise."""
        if other.spec != self.spec:
            raise ValueError("partial aggregates of different specs cannot be merged")
        for part in other.templates.values():
            self._merge_template(part)
        for tag, groups in other.tagged.items():
            for part in groups.values():
                _merge_part(self.tagged[tag], part, self.spill)
        self.results += other.results
        self._cool(other.templates)

    def _merge_template(self, part: Part) -> None:
        """Add a template's part (its cold part read back first)."""
        if self.cold:
            number = self.cold.pop(part.key, None)
            if number is not None:
                at = 3 * number
                assert self.spill is not None  # (cold templates are in the spill file)
                held: Part = self.spill.load(self.cold_at[at], self.cold_at[at + 1])
                self.templates[held.key] = held
        _merge_part(self.templates, part, self.spill)

    def _cool(self, touched: Mapping[Any, Any]) -> None:
        """In order: write the parts of the templates not ``touched`` (those of the last part)
        to the spill file, and let them go (:attr:`cold`)."""
        spill = self.spill
        if spill is None or len(self.templates) <= len(touched):
            return
        for key in [key for key in self.templates if key not in touched]:
            part = self.templates.pop(key)
            self.cold[key] = len(self.cold_at) // 3
            self.cold_at.extend((*spill.keep(part), part.first))

    def _cold_parts(self) -> Iterator[Part]:
        """In order: every template's part, cold or not, by first position, each read back (and
        let go) as it is asked for."""
        import numpy as np

        self._cool({})
        numbers = np.fromiter(self.cold.values(), dtype=np.int64, count=len(self.cold))
        at = self.cold_at
        firsts = np.frombuffer(at, dtype=np.int64)[2::3][numbers]
        spill = self.spill
        assert spill is not None
        for number in numbers[np.argsort(firsts, kind="stable")].tolist():
            yield spill.load(at[3 * number], at[3 * number + 1])

    def finish(self) -> dict[str, Any]:
        """The aggregates of every result added and merged: ``compute_aggregates``' own. One
        group's values at a time are Python objects (micro's: one metric's at a time). In order
        (:attr:`in_order`), the templates' parts are read back from the spill file one at a
        time, and ``per_template`` is kept in a temporary file
        (``aggregate.summaries.TemplateSummaries``, a read-only mapping)."""
        spec = self.spec

        def groups(parts: dict[Any, Part]) -> Iterator[tuple[Any, Group]]:
            for part in sorted(parts.values(), key=lambda part: part.first):
                yield part.key, part.group(spec)

        tagged = {tag: groups(parts) for tag, parts in self.tagged.items()}
        overall = Micro(spec.failures, spec.thresholds)
        if not self.in_order:
            summary = summarise(groups(self.templates), tagged, spec, overall)
            return spec.project(summary)
        from .summaries import TemplateSummaries

        templates = ((part.key, part.group(spec)) for part in self._cold_parts())
        summary = summarise(templates, tagged, spec, overall, TemplateSummaries())
        return spec.project(summary)


def _merge_part(parts: dict[Any, Part], part: Part, spill: Spill | None = None) -> None:
    if spill is not None:  # in order: the values go to the file, their positions go
        for column in part.series.values():
            column.in_order()
            if isinstance(column.values, array):
                column.values = spill.put(column.values)
    held = parts.get(part.key)
    if held is None:
        parts[part.key] = part
    else:
        held.merge(part)
