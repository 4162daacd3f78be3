"""Re-running a reference dataset's SPARQL queries and writing changed outputs back: the refresh
itself (``reference``), what it finds (``changes``), the query runners (``runners``) and the
writer (``writer``).
"""

from typing import TYPE_CHECKING

from ..extras import lazy_face

if TYPE_CHECKING:
    from .changes import RefreshResult, StepChange, sparql_json_text
    from .reference import (
        DEFAULT_MAX_CHANGES,
        RefreshRefused,
        refresh_reference,
        refresh_reference_file,
    )
    from .runners import QueryRunner, SparqlRunError, endpoint_runner, load_store, store_runner
    from .writer import updated_text, write_reference

_NAMES = {
    "DEFAULT_MAX_CHANGES": "reference",
    "QueryRunner": "runners",
    "RefreshRefused": "reference",
    "RefreshResult": "changes",
    "SparqlRunError": "runners",
    "StepChange": "changes",
    "endpoint_runner": "runners",
    "load_store": "runners",
    "refresh_reference": "reference",
    "refresh_reference_file": "reference",
    "sparql_json_text": "changes",
    "store_runner": "runners",
    "updated_text": "writer",
    "write_reference": "writer",
}

__all__ = [
    "DEFAULT_MAX_CHANGES",
    "QueryRunner",
    "RefreshRefused",
    "RefreshResult",
    "SparqlRunError",
    "StepChange",
    "endpoint_runner",
    "load_store",
    "refresh_reference",
    "refresh_reference_file",
    "sparql_json_text",
    "store_runner",
    "updated_text",
    "write_reference",
]
__getattr__, __dir__ = lazy_face(__name__, _NAMES)
