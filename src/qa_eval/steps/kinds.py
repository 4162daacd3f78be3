"""Step kinds: the media types a reference step's output is read by, how a reference step is
compared (one of the ``COMPARE_*`` names, chosen once when the dataset loads), and the prepared
reference step itself. A leaf of the ``steps`` package: the comparators import it, and so does
``run.prepare`` (which prepares the steps), so no module of ``steps`` imports ``run.prepare``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..vocabulary.frozen import Mutable, slotted

__all__ = [
    "APPLICATION_JSON",
    "COMPARE_ARGS",
    "COMPARE_DATA_POINTS",
    "COMPARE_IRI",
    "COMPARE_JSON",
    "COMPARE_RETRIEVAL",
    "COMPARE_SPARQL",
    "COMPARE_TEXT",
    "COMPARE_TIME_SERIES",
    "CONTEXT_ID_TYPES",
    "SPARQL_JSON",
    "ReferenceStep",
]

SPARQL_JSON = "application/sparql-results+json"
APPLICATION_JSON = "application/json"
# How a reference step is compared (see steps.compare), decided once when the dataset loads.
COMPARE_IRI = "iri_discovery"
COMPARE_SPARQL = "sparql"
COMPARE_RETRIEVAL = "retrieval"
COMPARE_TIME_SERIES = "time_series"
COMPARE_DATA_POINTS = "data_points"
COMPARE_JSON = "json"
COMPARE_ARGS = "args"
COMPARE_TEXT = "text"
CONTEXT_ID_TYPES = (str, int, float)
"""What a retrieval context's ``id`` may be: the ids are compared as sets."""


# Records are read-only by convention, not frozen: a run makes one per reference step, question
# and response, and a frozen dataclass is built three times slower (object.__setattr__ per field).
@slotted
class ReferenceStep(Mutable):
    """One reference step with its output parsed once (None when compared as text): a
    ``SparqlReference`` for SPARQL JSON, the context ids for retrieval, the JSON value for
    ``application/json``."""

    group: int
    index: int
    raw: Mapping[str, Any]
    name: str
    media_type: str | None
    parsed: Any = None
    kind: str = ""
    """How the step is compared: one of the ``COMPARE_*`` names, chosen once at load."""

    def __init__(
        self,
        group: int,
        index: int,
        raw: Mapping[str, Any],
        name: str,
        media_type: str | None,
        parsed: Any = None,
        kind: str = "",
    ) -> None:
        # The fields in order, as @dataclass would write it (see qa_eval.vocabulary.frozen).
        self.group = group
        self.index = index
        self.raw = raw
        self.name = name
        self.media_type = media_type
        self.parsed = parsed
        self.kind = kind
