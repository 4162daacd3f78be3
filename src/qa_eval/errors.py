"""The user-facing error hierarchy: every message names the file, the record and the field.

``QaEvalError`` is the base. Here: ``InputError`` (bad input), ``SetupError`` (the per-sample API
given what it cannot use), ``JudgeUnavailable`` (the judge
refuses every call: the run stops) and ``JudgeError`` (one metric of one question could not be
judged, caught where the metric is scored; ``BudgetExceeded``, ``DryRunSkip`` and ``Deferred`` are
its skips), which the judge's face names too; other modules add their own (``CacheError``, ...)."""

from __future__ import annotations

import reprlib
from typing import Any

from .redact import redact


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


class SetupError(QaEvalError, ValueError):
    """A per-sample metric, judge or embedding model given what it cannot use (no LLM, one not
    from ``llm_factory``, an empty model name, embeddings of another kind, an argument of the
    wrong type): a ``ValueError`` too, where ragas raises one, so callers' ``except ValueError``
    keeps working."""


class JudgeError(QaEvalError):
    """The judge could not give a usable reply for one metric of one question (the message is
    redacted of API keys: it goes into results). Caught where the metric is scored: it becomes
    that metric's ``<metric>_error`` (or, for a budget or dry-run skip, its skip note), never a
    failed run."""

    def __init__(self, message: str = "") -> None:
        super().__init__(redact(message))


class BudgetExceeded(JudgeError):
    """``--max-cost`` was reached before this call started."""

    def __init__(self) -> None:
        super().__init__("budget exceeded")


class DryRunSkip(JudgeError):
    """A dry run counts the call instead of making it."""

    def __init__(self) -> None:
        super().__init__("not computed (dry run)")


class Deferred(DryRunSkip):
    """A batch planning pass records the request for a batch instead of making it
    (``batch.py``); like a dry run's skip, it is not a failure of the judge."""


class JudgeUnavailable(QaEvalError):
    """The endpoint refuses every call (bad key, unknown model, wrong URL): the run stops."""

    def __init__(self, message: str = "") -> None:
        super().__init__(redact(message))


class UnknownResponsesWarning(UserWarning):
    """Responses for question ids that are not in the reference dataset were left out of a
    run (graphrag-eval ignores them silently; ``--strict`` makes them a failure)."""


def format_location(source: str | None, record: str | None, field: str | None, message: str) -> str:
    """Join a location and a problem into one line: ``file: record: field: problem``."""
    parts = [p for p in (source, record, field) if p]
    return ": ".join([*parts, message])


_REPR_LIMIT = 80


class _ShortRepr(reprlib.Repr):
    """``reprlib`` with room for ids and short texts; a huge integer is described, not written
    out (its digits alone can take seconds, or exceed Python's limit on integer text)."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel = 3
        self.maxstring = self.maxother = self.maxlong = _REPR_LIMIT
        self.maxdict = self.maxlist = self.maxtuple = self.maxset = self.maxfrozenset = 6

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > 256:
            return f"<integer of {x.bit_length()} bits>"
        return super().repr_int(x, level)


_SHORT = _ShortRepr()


def short_repr(value: Any, limit: int = _REPR_LIMIT) -> str:
    """``repr()`` of a value for a message, at most about ``limit`` characters: large, deep or
    shared (YAML alias) structures are cut off before they are written out, never expanded."""
    kind = type(value)
    if (kind is str and len(value) <= limit) or (kind is int and value.bit_length() < 64):
        text = repr(value)  # the common case, an id: quick
        if len(text) <= limit:
            return text
    try:
        text = _SHORT.repr(value)
    except Exception:  # a value whose repr fails (a user-defined type given to the API)
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 1] + "…"
