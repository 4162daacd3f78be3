"""Scores back where the traces live: OpenTelemetry ``gen_ai.evaluation.result`` events (OTLP/JSON
logs, to a file or over OTLP/HTTP) and Langfuse scores.

A result evaluated from an imported trace carries ``trace`` (``format``, ``trace_id``,
``root_span_id``). Each exported metric value of such a result becomes one event:

- OpenTelemetry (semantic conventions for GenAI, ``gen_ai.evaluation.result``, an event of the
  Logs API): a log record with ``eventName`` ``gen_ai.evaluation.result`` (and the attribute
  ``event.name`` for receivers older than the field), the evaluated trace's ``traceId`` and its
  root span as ``spanId`` (the event is parented to the span it evaluates), and the attributes
  ``gen_ai.evaluation.name``, ``gen_ai.evaluation.score.value`` (numbers),
  ``gen_ai.evaluation.score.label`` (labels and booleans), ``gen_ai.evaluation.explanation``
  (the metric's reason), and ``error.type`` when the metric failed for that question (its error
  text is then the explanation).
- Langfuse: ``POST /api/public/scores`` per value, to the trace id, with an id derived from the
  trace and the metric, so sending the same results twice updates the scores instead of adding
  copies.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlparse

from ..errors import QaEvalError
from ..redact import public_url, redact, register_secret
from ..vocabulary import lookup, registry

__all__ = [
    "EVENT_NAME",
    "ExportError",
    "ScoreEvent",
    "Selection",
    "evaluation_events",
    "langfuse_scores",
    "otlp_logs",
    "send_langfuse",
    "send_otlp",
]

EVENT_NAME = "gen_ai.evaluation.result"
_HEX32 = re.compile(r"^[0-9a-f]{32}$")
_HEX16 = re.compile(r"^[0-9a-f]{16}$")
_EXPORTED_SCALES = ("0-1", "cosine", "label")
"""The scales exported by default: scores on 0-1, cosines (-1 to 1: ``answer_relevance``) and
labels; not ``ratio`` keys such as ``tool_calls_ratio``, which can exceed 1 (``--metric`` names
any key)."""
_MAX_TEXT = 4_000
_BATCH = 500
_RETRIES = 3


class ExportError(QaEvalError):
    """Scores could not be written back (a bad option, or a receiver that refused them)."""


@dataclass(frozen=True)
class ScoreEvent:
    """One metric value of one evaluated trace."""

    question_id: str
    trace_id: str
    span_id: str | None
    name: str
    value: float | None = None
    label: str | None = None
    explanation: str | None = None
    error: bool = False
    trace_format: str | None = None


@dataclass
class Selection:
    """The events of a results file and what was left out, with why (counted, first ids kept)."""

    events: list[ScoreEvent] = field(default_factory=list)
    without_trace: list[str] = field(default_factory=list)
    """Question ids of results that carry no trace id (not evaluated from imported traces)."""
    metrics: list[str] = field(default_factory=list)

    def nothing(self, results: int) -> str | None:
        """Why there is nothing to export, in one line (None when there is something)."""
        if self.events:
            return None
        if results and len(self.without_trace) == results:
            return (
                f"nothing to export: none of the {results} result(s) carries a trace id (they "
                "were not evaluated from traces: evaluate the trace files, or responses written "
                "by qa-eval import)"
            )
        if not results:
            return "nothing to export: the file holds no results"
        names = ", ".join(self.metrics) if self.metrics else "no score or label key"
        return f"nothing to export: the results evaluated from traces have no value of {names}"

    def notes(self) -> list[str]:
        """One line per thing left out, for the terminal."""
        if not self.without_trace:
            return []
        first = ", ".join(self.without_trace[:3])
        more = "" if len(self.without_trace) <= 3 else ", ..."
        return [
            f"{len(self.without_trace)} result(s) carry no trace id and were not exported "
            f"(evaluate imported traces to get one): {first}{more}"
        ]


def _default_metrics(results: Sequence[Mapping[str, Any]]) -> list[str]:
    """The registered score and label keys present in the results, or failed in them (their
    error key present: sent as failures), in registry order."""
    present: set[str] = set()
    for result in results:
        present.update(result)
    keys: list[str] = []
    for family in registry.METRICS.values():
        for key in family.keys:
            if key.scale not in _EXPORTED_SCALES or key.name in keys:
                continue
            errors = lookup.error_keys(key.name) or (f"{key.name}_error",)
            if key.name in present or any(error in present for error in errors):
                keys.append(key.name)
    return keys


def _reason_and_error(result: Mapping[str, Any], key: str) -> tuple[str | None, str | None]:
    """The reason text and the error text of a metric key in a result, if any."""
    family = lookup.key_info(key)
    reasons = [f"{key}_reason"]
    errors = list(lookup.error_keys(key)) or [f"{key}_error"]
    if family is not None:
        reasons.append(f"{family[0].name}_reason")
    reason = next((result[r] for r in reasons if isinstance(result.get(r), str)), None)
    error = next((result[e] for e in errors if result.get(e)), None)
    return reason, (str(error) if error is not None else None)


def _text(value: str | None) -> str | None:
    """Untrusted text as it is sent: redacted, bounded."""
    if value is None:
        return None
    value = redact(value)
    return value if len(value) <= _MAX_TEXT else value[: _MAX_TEXT - 1] + "…"


def evaluation_events(
    results: Iterable[Mapping[str, Any]], metrics: Sequence[str] | None = None
) -> Selection:
    """The score events of the results evaluated from traces (``metrics``: the keys to export;
    default: every registered 0-1 score and label present)."""
    rows = list(results)
    chosen = list(metrics) if metrics else _default_metrics(rows)
    selection = Selection(metrics=chosen)
    for result in rows:
        trace = result.get("trace")
        qid = str(result.get("question_id"))
        trace_id = trace.get("trace_id") if isinstance(trace, Mapping) else None
        if not trace_id:
            selection.without_trace.append(qid)
            continue
        span = trace.get("root_span_id") if isinstance(trace, Mapping) else None
        fmt = trace.get("format") if isinstance(trace, Mapping) else None
        for key in chosen:
            reason, error = _reason_and_error(result, key)
            value = result.get(key)
            if key not in result and error is None:
                continue
            number: float | None = None
            label: str | None = None
            if isinstance(value, bool):
                label = "true" if value else "false"
                number = float(value)
            elif isinstance(value, int | float):
                number = float(value) if math.isfinite(value) else None
            elif isinstance(value, str):
                label = value
            if number is None and label is None and error is None:
                continue
            selection.events.append(
                ScoreEvent(
                    question_id=qid,
                    trace_id=str(trace_id),
                    span_id=str(span) if span else None,
                    name=key,
                    value=number,
                    label=label,
                    explanation=_text(error if number is None and label is None else reason),
                    error=number is None and label is None,
                    trace_format=str(fmt) if fmt else None,
                )
            )
    return selection


def _otlp_id(value: str | None, pattern: re.Pattern[str], size: int) -> str | None:
    """A trace or span id as OTLP/JSON writes it (lowercase hex), or ``None`` if it is not one:
    hex as is, a UUID without its dashes, base64 of the right number of bytes as hex."""
    if not value:
        return None
    text = value.strip().lower().replace("-", "")
    if pattern.match(text):
        return text
    try:
        raw = base64.b64decode(value, validate=True)
    except ValueError:
        return None
    return raw.hex() if len(raw) == size else None


def _attribute(key: str, value: Any) -> dict[str, Any]:
    """One OTLP ``KeyValue``."""
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": str(value)}}


def otlp_logs(
    events: Sequence[ScoreEvent], service_name: str = "qa-eval", now_ns: int | None = None
) -> tuple[dict[str, Any], int]:
    """An OTLP/JSON ``ExportLogsServiceRequest`` of the events, and how many were left out
    because their trace id is not an OpenTelemetry trace id."""
    from .._version import __version__

    stamp = str(now_ns if now_ns is not None else time.time_ns())
    records: list[dict[str, Any]] = []
    skipped = 0
    for event in events:
        trace_id = _otlp_id(event.trace_id, _HEX32, 16)
        if trace_id is None:
            skipped += 1
            continue
        attributes = [
            _attribute("event.name", EVENT_NAME),
            _attribute("gen_ai.evaluation.name", event.name),
        ]
        if event.value is not None:
            attributes.append(_attribute("gen_ai.evaluation.score.value", event.value))
        if event.label is not None:
            attributes.append(_attribute("gen_ai.evaluation.score.label", event.label))
        if event.explanation:
            attributes.append(_attribute("gen_ai.evaluation.explanation", event.explanation))
        if event.error:
            attributes.append(_attribute("error.type", "qa_eval.metric_error"))
        attributes.append(_attribute("qa_eval.question_id", event.question_id))
        record: dict[str, Any] = {
            "timeUnixNano": stamp,
            "observedTimeUnixNano": stamp,
            "severityNumber": 9,
            "severityText": "INFO",
            "eventName": EVENT_NAME,
            "traceId": trace_id,
            "attributes": attributes,
        }
        span_id = _otlp_id(event.span_id, _HEX16, 8)
        if span_id is not None:
            record["spanId"] = span_id
        records.append(record)
    payload = {
        "resourceLogs": [
            {
                "resource": {"attributes": [_attribute("service.name", service_name)]},
                "scopeLogs": [
                    {"scope": {"name": "qa-eval", "version": __version__}, "logRecords": records}
                ],
            }
        ]
    }
    return payload, skipped


def _post(url: str, body: bytes, headers: Mapping[str, str], what: str) -> None:
    """POST with a few retries on 429 and 5xx; a refusal becomes one redacted line."""
    request_headers = {"Content-Type": "application/json", **headers}
    for attempt in range(_RETRIES):
        request = urllib.request.Request(url, data=body, headers=request_headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                response.read()
            return
        except urllib.error.HTTPError as e:
            detail = e.read(500).decode("utf-8", "replace")
            retry = e.code == 429 or e.code >= 500
            if not retry or attempt == _RETRIES - 1:
                raise ExportError(
                    redact(
                        f"{what}: {public_url(url)} answered {e.code}: {' '.join(detail.split())}"
                    )
                ) from None
        except (urllib.error.URLError, OSError) as e:
            if attempt == _RETRIES - 1:
                reason = getattr(e, "reason", e)
                raise ExportError(redact(f"{what}: {public_url(url)}: {reason}")) from None
        time.sleep(0.2 * 2**attempt)


def _otlp_headers() -> dict[str, str]:
    """``OTEL_EXPORTER_OTLP_HEADERS`` / ``..._LOGS_HEADERS`` (``k=v,k2=v2``), values registered
    as secrets so no message shows them."""
    text = os.environ.get("OTEL_EXPORTER_OTLP_LOGS_HEADERS") or os.environ.get(
        "OTEL_EXPORTER_OTLP_HEADERS", ""
    )
    headers: dict[str, str] = {}
    for part in text.split(","):
        name, sep, value = part.partition("=")
        if sep and name.strip():
            value = unquote(value.strip())
            register_secret(value)
            headers[name.strip()] = value
    return headers


def _logs_url(url: str) -> str:
    """The OTLP/HTTP logs URL: an endpoint with no path gets ``/v1/logs``, as OTel SDKs do."""
    parts = urlparse(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ExportError(f"--otlp-endpoint must be an http(s) URL, got {public_url(url)!r}")
    return url.rstrip("/") + "/v1/logs" if parts.path in ("", "/") else url


def send_otlp(events: Sequence[ScoreEvent], endpoint: str) -> tuple[int, int]:
    """Send the events over OTLP/HTTP (JSON encoding), in batches; returns (sent, skipped)."""
    url = _logs_url(endpoint)
    headers = _otlp_headers()
    sent = skipped = 0
    for start in range(0, len(events), _BATCH):
        payload, left_out = otlp_logs(events[start : start + _BATCH])
        skipped += left_out
        records = payload["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
        if records:
            _post(url, json.dumps(payload).encode(), headers, "OTLP export")
            sent += len(records)
    return sent, skipped


def langfuse_scores(events: Sequence[ScoreEvent]) -> list[dict[str, Any]]:
    """The Langfuse score bodies of the events (``POST /api/public/scores``)."""
    bodies = []
    for event in events:
        digest = hashlib.sha256(f"{event.trace_id}\x00{event.name}".encode()).hexdigest()[:32]
        body: dict[str, Any] = {"id": f"qa-eval-{digest}", "traceId": event.trace_id}
        body["name"] = event.name
        if event.value is not None and event.label is None:
            body["value"] = event.value
            body["dataType"] = "NUMERIC"
        elif event.label is not None:
            body["value"] = event.label
            body["dataType"] = "CATEGORICAL"
        else:
            continue  # a failed metric has no value; Langfuse scores need one
        if event.explanation:
            body["comment"] = event.explanation
        bodies.append(body)
    return bodies


def send_langfuse(events: Sequence[ScoreEvent], environ: Mapping[str, str] | None = None) -> int:
    """Post the events as Langfuse scores (keys and host from the environment:
    ``LANGFUSE_PUBLIC_KEY``, ``LANGFUSE_SECRET_KEY``, ``LANGFUSE_HOST`` or
    ``LANGFUSE_BASE_URL``); returns how many were sent."""
    env = os.environ if environ is None else environ
    public, secret = env.get("LANGFUSE_PUBLIC_KEY"), env.get("LANGFUSE_SECRET_KEY")
    if not public or not secret:
        raise ExportError(
            "--langfuse needs LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY in the environment"
        )
    register_secret(secret)
    register_secret(public)
    host = env.get("LANGFUSE_HOST") or env.get("LANGFUSE_BASE_URL") or "https://cloud.langfuse.com"
    if urlparse(host).scheme not in ("http", "https"):
        raise ExportError(f"LANGFUSE_HOST must be an http(s) URL, got {public_url(host)!r}")
    token = base64.b64encode(f"{public}:{secret}".encode()).decode()
    headers = {"Authorization": f"Basic {token}"}
    register_secret(token)
    url = host.rstrip("/") + "/api/public/scores"
    sent = 0
    for body in langfuse_scores(events):
        try:
            _post(url, json.dumps(body).encode(), headers, "Langfuse export")
        except ExportError as e:
            raise ExportError(f"{e} (after {sent} score(s) sent; sending again is safe)") from None
        sent += 1
    return sent
