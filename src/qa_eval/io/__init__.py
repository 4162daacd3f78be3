"""Files in and out: reading and writing YAML, JSON and JSON Lines with the limits every reader
checks (``files``, ``limits``), the flat per-question rows of ragas and the GraphRAG document
(``flat``), and what kind of qa-eval file a document is (``kinds``).
"""

from typing import TYPE_CHECKING

from ..extras import lazy_face

if TYPE_CHECKING:
    from .files import read_data, read_reference, read_responses, read_results, write_data
    from .flat import flat_to_dataset, read_flat, read_flat_rows
    from .kinds import FileKind, detect
    from .limits import MAX_DEPTH, check_writable, dump_json, one_line

_NAMES = {
    "FileKind": "kinds",
    "MAX_DEPTH": "limits",
    "check_writable": "limits",
    "detect": "kinds",
    "dump_json": "limits",
    "flat_to_dataset": "flat",
    "one_line": "limits",
    "read_data": "files",
    "read_flat": "flat",
    "read_flat_rows": "flat",
    "read_reference": "files",
    "read_responses": "files",
    "read_results": "files",
    "write_data": "files",
}

__all__ = [
    "MAX_DEPTH",
    "FileKind",
    "check_writable",
    "detect",
    "dump_json",
    "flat_to_dataset",
    "one_line",
    "read_data",
    "read_flat",
    "read_flat_rows",
    "read_reference",
    "read_responses",
    "read_results",
    "write_data",
]
__getattr__, __dir__ = lazy_face(__name__, _NAMES)
