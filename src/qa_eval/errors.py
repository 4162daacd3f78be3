"""The user-facing error hierarchy: every message names the file, the record and the field."""

from __future__ import annotations


class QaEvalError(Exception):
    """Base class of the errors the CLI reports as one line (exit code 2)."""


class InputError(QaEvalError, ValueError):
    """Bad input data: names where it is (file, record, field) and what is wrong.

    A ``ValueError`` too, as graphrag-eval's config and input errors are, so callers'
    ``except ValueError`` keeps working."""

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        record: str | None = None,
        field: str | None = None,
    ) -> None:
        self.source = source
        self.record = record
        self.field = field
        self.problem = message
        super().__init__(format_location(source, record, field, message))


def format_location(source: str | None, record: str | None, field: str | None, message: str) -> str:
    """Join a location and a problem into one line: ``file: record: field: problem``."""
    parts = [p for p in (source, record, field) if p]
    return ": ".join([*parts, message])
