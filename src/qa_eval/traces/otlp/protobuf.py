"""OTLP as protobuf (the ``otlp`` extra): one ``ExportTraceServiceRequest`` (or logs request) or
several, each prefixed by its length, decoded to the OTLP/JSON shape and read as such.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...errors import InputError
from ...extras import MissingExtra, require
from ..model import Trace
from .records import HEX, request_logs, request_spans
from .stream import read_records


def looks_binary(head: bytes) -> bool:
    """Whether a file's first bytes are protobuf rather than JSON."""
    stripped = head.lstrip()
    if not stripped:
        return False
    if stripped[:1] in (b"{", b"["):
        return False
    return head[:1] in (b"\x0a", b"\x00")


def read_bytes(data: bytes, source: str) -> Iterator[Trace]:
    """The traces of an OTLP protobuf file: one ``ExportTraceServiceRequest`` (or logs request),
    or several each prefixed by its length (4 bytes, big-endian), as the collector's file exporter
    writes them."""
    try:
        trace_service = require(
            "opentelemetry.proto.collector.trace.v1.trace_service_pb2", "reading OTLP protobuf"
        )
    except ImportError:  # the opentelemetry namespace without opentelemetry-proto in it
        raise MissingExtra(
            "reading OTLP protobuf needs the optional package 'opentelemetry-proto': "
            "pip install 'qa-eval[otlp]'"
        ) from None
    from google.protobuf.json_format import MessageToDict
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    ExportTraceServiceRequest = trace_service.ExportTraceServiceRequest

    def messages() -> Iterator[dict[str, Any]]:
        for number, chunk in enumerate(_chunks(data, source), 1):
            problem = None
            found: dict[str, Any] = {}
            # protobuf names no type: a logs request may parse as a trace request of nonsense
            for kind in (ExportTraceServiceRequest, ExportLogsServiceRequest):
                message = kind()
                try:
                    message.ParseFromString(chunk)
                except (DecodeError, RuntimeError, ValueError) as error:
                    problem = problem or str(error)
                    continue
                found = MessageToDict(message)
                if _plausible(found):
                    break
            else:
                if problem is not None and not _plausible(found):
                    raise InputError(
                        f"not an OTLP protobuf message ({problem})",
                        source=source,
                        record=f"message {number}",
                    )
            yield found

    yield from read_records(messages(), source, "otlp-proto")


def _plausible(request: dict[str, Any]) -> bool:
    """Whether a decoded request holds spans or log records with ids of the right size."""
    for span in request_spans(request, [0]):
        return HEX.issuperset(span.trace_id + span.span_id) and len(span.span_id) == 16
    for trace_id, _, _ in request_logs(request):
        return HEX.issuperset(trace_id) and len(trace_id) == 32
    return False


def _chunks(data: bytes, source: str) -> list[bytes]:
    if data[:1] != b"\x00":
        return [data]
    chunks = []
    offset = 0
    while offset < len(data):
        if offset + 4 > len(data):
            raise InputError("truncated length prefix", source=source, record=f"byte {offset}")
        size = int.from_bytes(data[offset : offset + 4], "big")
        if offset + 4 + size > len(data):
            raise InputError(
                f"message of {size} bytes cut short", source=source, record=f"byte {offset}"
            )
        chunks.append(data[offset + 4 : offset + 4 + size])
        offset += 4 + size
    return chunks
