"""The people against each other: Krippendorff's alpha among the annotators (nominal, ordinal or
interval) and each annotator against the others' majority or mean.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .figures import interval_of, point_of, seeded_rng
from .judges import Item
from .labels import Kind, Label, LabelValue, people_label, vote
from .stats import alpha_statistic, clopper_pearson, kappa_statistic, spearman_statistic

_ORDINAL_LEVELS = 10


def _alpha_level(labels: Sequence[Label], kind: Kind) -> str:
    """The level of measurement alpha uses for a metric's labels."""
    if kind != "continuous":
        return "nominal"
    values = {float(label.value) for label in labels}
    if all(v.is_integer() for v in values) and len(values) <= _ORDINAL_LEVELS:
        return "ordinal"
    return "interval"


def annotator_block(
    metric: str,
    kind: Kind,
    items: Mapping[Item, list[Label]],
    resamples: int,
    confidence: float,
    seed: int,
) -> dict[str, Any] | None:
    """Krippendorff's alpha among the people and each annotator against the others."""
    if not any(len(people) > 1 for people in items.values()):
        return None
    all_labels = [label for people in items.values() for label in people]
    level = _alpha_level(all_labels, kind)
    units = [
        [vote(p.value, kind) if kind != "continuous" else float(p.value) for p in people]
        for people in items.values()
    ]
    statistic = alpha_statistic(units, level)  # type: ignore[arg-type]
    n = sum(len(u) >= 2 for u in units)
    block: dict[str, Any] = {
        "metric": metric,
        "level": level,
        "n": n,
        "alpha": point_of(statistic, len(units)),
        "alpha_ci": interval_of(
            statistic, len(units), resamples, confidence, seeded_rng(seed, "alpha", metric)
        ),
        "raters": [],
    }
    names = list(dict.fromkeys(p.annotator for people in items.values() for p in people))
    for name in names:
        own: list[LabelValue] = []
        others: list[LabelValue] = []
        for people in items.values():
            mine = [p for p in people if p.annotator == name]
            rest = [p for p in people if p.annotator != name]
            if not mine or not rest:
                continue
            majority = people_label(rest, kind)
            if majority is None:
                continue
            own.append(vote(mine[0].value, kind) if kind != "continuous" else float(mine[0].value))
            others.append(majority)
        rater: dict[str, Any] = {"annotator": name, "n": len(own)}
        rng = seeded_rng(seed, "rater", metric, name)
        if len(own) >= 2:
            if kind == "continuous":
                rho = spearman_statistic([float(v) for v in own], [float(v) for v in others])
                rater["spearman"] = point_of(rho, len(own))
                rater["spearman_ci"] = interval_of(rho, len(own), resamples, confidence, rng)
            else:
                kappa = kappa_statistic(own, others)
                hits = sum(a == b for a, b in zip(own, others))
                rater["accuracy"] = hits / len(own)
                rater["accuracy_ci"] = clopper_pearson(hits, len(own), confidence).as_list()
                rater["kappa"] = point_of(kappa, len(own))
                rater["kappa_ci"] = interval_of(kappa, len(own), resamples, confidence, rng)
        block["raters"].append(rater)
    return block
