"""Agent trajectories: the reference trajectory read, tool-call arguments compared, reference calls
matched optimally to the actual calls, and the mismatches explained (docs/metrics/trajectory.md)."""

from typing import TYPE_CHECKING

from ...extras import lazy_face

if TYPE_CHECKING:
    from .comparators.values import TrajectoryError
    from .match import evaluate_trajectory
    from .reference import Reference, parse_reference

_NAMES = {
    "Reference": "reference",
    "TrajectoryError": "comparators.values",
    "evaluate_trajectory": "match",
    "parse_reference": "reference",
}
__all__ = ["Reference", "TrajectoryError", "evaluate_trajectory", "parse_reference"]
__getattr__, __dir__ = lazy_face(__name__, _NAMES)
