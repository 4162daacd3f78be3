"""OpenTelemetry traces (``otlp-json``, ``otlp-proto``) read into one :class:`Trace` per trace id
(docs/traces.md): the OTLP/JSON request as the specification defines it (``records``), the same as
protobuf (``protobuf``, the ``otlp`` extra), what a span says by the GenAI, OpenLLMetry and
OpenInference conventions (``conventions``), one trace assembled from its spans (``assembly``), and
the file read trace by trace in bounded memory (``stream``).
"""

from typing import TYPE_CHECKING

from ...extras import lazy_face

if TYPE_CHECKING:
    from .protobuf import looks_binary, read_bytes
    from .records import detect
    from .stream import HOLD, read

_NAMES = {
    "HOLD": "stream",
    "detect": "records",
    "looks_binary": "protobuf",
    "read": "stream",
    "read_bytes": "protobuf",
}

__all__ = ["HOLD", "detect", "looks_binary", "read", "read_bytes"]

__getattr__, __dir__ = lazy_face(__name__, _NAMES)
