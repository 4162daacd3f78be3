"""Recognise what kind of qa-eval file a parsed document is, so a command given the wrong file
refuses it with one line instead of computing numbers from it.

The kinds and what marks them (checked on every record; a record is a mapping):

- **reference dataset**: a list of templates, records with ``template_id`` and a ``questions``
  list (and no ``question_id``).
- **results** (``qa-eval evaluate -o``, graphrag-eval's ``run_evaluation``): records with a
  ``question_id`` and a key only an evaluation writes: ``steps_score``, ``reference_steps``,
  ``step_errors`` or a metric value (``answer_f1``, ``answer_relevance``, ...): *strong* evidence.
  Records with ``question_id``, ``template_id`` and ``question_text`` but none of those keys (a run
  with no reference steps and no judge) are results too, but only *weak* evidence: a responses
  file may carry the same keys.
- **responses**: records with a ``question_id`` and ``actual_answer``, ``actual_steps``,
  ``error``, ``status`` or token counts, and none of the marks of results; or a mapping by question
  id whose values are such records (their ``question_id`` may be left out).
- **aggregates**: a mapping with ``per_template``, or with ``micro`` and ``macro``; also what
  ``evaluate --format json`` prints for several systems (``systems`` of aggregates).
- **comparison** (``qa-eval compare -o``): a mapping with ``labels``, ``method`` and ``metrics``.
- **run signature** (``RESULTS.signature.yaml``): a mapping with ``qa_eval_version``.
- **labels** (``qa-eval agreement --labels``): records with ``question_id``, ``metric`` and
  ``label`` and no mark of results; or CSV text whose header names those three columns.
- **flat rows** (``evaluate-flat`` input): records with ``question`` or ``user_input`` and no
  ``question_id``.
- **agent traces** (``qa-eval import`` input, which ``evaluate`` converts on the fly): a document
  whose first record a trace format of ``qa_eval.traces`` recognises (chat messages, Responses
  items, ...). A response imported from a trace (it has a ``trace`` mapping) may carry
  ``step_errors`` (arguments that are not valid JSON): there they are no mark of results.

An empty document (nothing, ``[]``, ``{}``) is **empty** and anything else **unknown**: both are
let through, so the command's own validation reports what is wrong, and no legitimate input is
refused on a guess. Pure functions over parsed data.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from ..traces.formats import detect_format
from ..vocabulary import lookup as _registry

__all__ = [
    "AGGREGATES",
    "COMPARISON",
    "EMPTY",
    "FLAT",
    "LABELS",
    "REFERENCE",
    "RESPONSES",
    "RESULTS",
    "SIGNATURE",
    "TRACES",
    "UNKNOWN",
    "FileKind",
    "detect",
    "require",
]

REFERENCE = "reference dataset"
RESULTS = "results"
RESPONSES = "responses"
AGGREGATES = "aggregates"
COMPARISON = "comparison"
SIGNATURE = "run signature"
FLAT = "flat rows"
TRACES = "agent traces"
LABELS = "labels"
EMPTY = "empty"
UNKNOWN = "unknown"

_ARTICLE = {
    REFERENCE: "a reference dataset",
    RESULTS: "evaluation results",
    RESPONSES: "responses",
    AGGREGATES: "aggregates",
    COMPARISON: "a comparison (qa-eval compare -o)",
    SIGNATURE: "a run signature",
    FLAT: "flat per-question rows (qa-eval evaluate-flat input)",
    TRACES: "agent traces (qa-eval import input)",
    LABELS: "people's labels (qa-eval agreement --labels)",
}

METRICS = _registry.aggregated_keys()
STEP_METRICS = _registry.step_keys()
ALWAYS_PRESENT = _registry.always_present_keys()
_STEP_METRIC_NAMES = frozenset(m for names in STEP_METRICS.values() for m in names)
_RESULT_KEYS = frozenset(
    {"steps_score", "reference_steps", "step_errors", "answer_eval_error"}
    | (set(METRICS) - set(ALWAYS_PRESENT))
    | _STEP_METRIC_NAMES
)
"""Keys only an evaluation writes into a per-question record."""
_RESPONSE_KEYS = ("actual_answer", "actual_steps", "error", "status", *ALWAYS_PRESENT)
"""Keys of a response, the telling ones first (the reason a message gives)."""
_FLAT_QUESTION_KEYS = ("question", "user_input")


@dataclass(frozen=True)
class FileKind:
    """What a document looks like: one of the kind names, why, and (for results) how sure."""

    kind: str
    reason: str = ""
    strong: bool = True
    """False for results recognised only by ``template_id`` + ``question_text``."""

    def describe(self) -> str:
        """The kind in words, with its reason: ``a reference dataset (templates with ...)``."""
        words = _ARTICLE.get(self.kind, self.kind)
        return f"{words} ({self.reason})" if self.reason else words


def _first(keys: Iterable[str], among: frozenset[str]) -> str | None:
    for key in keys:
        if key in among:
            return key
    return None


def _records(records: Iterable[Any], implied_id: bool = False) -> FileKind:
    """The kind of a sequence of records (``implied_id``: values of a mapping by question id)."""
    templates = strong = weak = responses = flat = with_id = labels = 0
    strong_key = response_key = None
    for record in records:
        if not isinstance(record, Mapping):
            continue
        has_id = implied_id or "question_id" in record
        if not has_id:
            if "template_id" in record and isinstance(record.get("questions"), list):
                templates += 1
            elif any(k in record for k in _FLAT_QUESTION_KEYS):
                flat += 1
            continue
        with_id += 1
        imported = isinstance(record.get("trace"), Mapping) and "steps_score" not in record
        key = _first((k for k in record if not (imported and k == "step_errors")), _RESULT_KEYS)
        if key is None and isinstance(record.get("actual_steps"), list):
            # Step metrics live on the actual steps of a result (retrieval steps).
            for step in record["actual_steps"]:
                name = step.get("name") if isinstance(step, Mapping) else None
                if isinstance(name, str) and name in STEP_METRICS:
                    key = _first(step, _STEP_METRIC_NAMES)
                    if key is not None:
                        break
        if key is not None:
            strong += 1
            strong_key = strong_key or key
        elif "metric" in record and "label" in record:
            labels += 1
        elif "template_id" in record and "question_text" in record:
            weak += 1
        else:
            found = next((k for k in _RESPONSE_KEYS if k in record), None)
            if found is not None:
                responses += 1
                response_key = response_key or found
    if templates and templates >= with_id:
        return FileKind(REFERENCE, "templates with template_id and questions")
    if strong:
        return FileKind(RESULTS, f"records with {strong_key}")
    if labels and labels >= with_id:
        return FileKind(LABELS, "records with question_id, metric and label")
    if weak and not responses:
        return FileKind(RESULTS, "records with template_id, question_id and question_text", False)
    if responses and not weak:
        return FileKind(RESPONSES, f"records with question_id and {response_key}")
    if flat and not with_id:
        return FileKind(FLAT, "records with question and no question_id")
    return FileKind(UNKNOWN)


def _trace_format(data: Any) -> str | None:
    """The trace format of a document (itself, or its first record), or None."""
    found = detect_format(data)
    if found is None and isinstance(data, list) and data:
        found = detect_format(data[0])
    return found


_LABEL_COLUMNS = frozenset(("question_id", "metric", "label"))


_LABEL_FIELDS = frozenset((*_LABEL_COLUMNS, "annotator", "template_id"))


def _csv_header(text: str) -> set[str]:
    """The labels-file column names a text starts with: a CSV file read as YAML is one string
    (its lines folded into one), so the header is the leading run of such names."""
    names: set[str] = set()
    for token in text.lstrip("\ufeff").replace(",", " ").split():
        name = token.strip('"')
        if name not in _LABEL_FIELDS:
            break
        names.add(name)
    return names


def detect(data: Any) -> FileKind:
    """The kind of a parsed YAML / JSON / JSON Lines document (see the module docstring)."""
    if data is None or (isinstance(data, (list, dict)) and not data):
        return FileKind(EMPTY)
    trace_format = _trace_format(data)
    if trace_format is not None:
        return FileKind(TRACES, trace_format)
    if isinstance(data, list):
        return _records(data)
    if isinstance(data, str) and _csv_header(data) >= _LABEL_COLUMNS:
        return FileKind(LABELS, "CSV with question_id, metric and label columns")
    if not isinstance(data, Mapping):
        return FileKind(UNKNOWN)
    keys = set(data)
    if "per_template" in keys or {"micro", "macro"} <= keys:
        return FileKind(AGGREGATES, "per_template, micro and macro")
    systems = data.get("systems")
    if (
        isinstance(systems, Mapping)
        and systems
        and all(isinstance(v, Mapping) and "micro" in v for v in systems.values())
    ):
        return FileKind(AGGREGATES, "aggregates per system")
    if {"labels", "method", "metrics"} <= keys:
        return FileKind(COMPARISON, "labels, method and metrics")
    if "qa_eval_version" in keys:
        return FileKind(SIGNATURE, "qa_eval_version")
    if all(isinstance(v, Mapping) for v in data.values()):
        kind = _records(data.values(), implied_id=True)
        if kind.kind in (RESULTS, RESPONSES):
            return kind
    return FileKind(UNKNOWN)


def require(
    data: Any,
    source: str,
    accept: Iterable[str],
    expected: str,
    *,
    weak_results_ok: bool = False,
) -> FileKind:
    """Raise a one-line ``InputError`` when ``data`` looks like another kind of file than one of
    ``accept``; empty and unrecognised documents pass. ``expected`` ends the message, e.g.
    ``"`qa-eval aggregate` expects results written by `qa-eval evaluate -o`"``.
    ``weak_results_ok`` lets through results recognised only by their ids and question text."""
    return _accepted(detect(data), source, accept, expected, weak_results_ok)


def require_records(
    records: Iterable[Any],
    source: str,
    accept: Iterable[str],
    expected: str,
    *,
    weak_results_ok: bool = False,
) -> FileKind:
    """:func:`require` for a JSON Lines document read one record at a time: ``records`` (e.g.
    a generator that also hands each record on as it passes) is read through once, so the
    document is never held whole; the same kinds pass and the same message refuses."""
    iterator = iter(records)
    first = next(iterator, _END)
    if first is _END:
        found = FileKind(EMPTY)
    else:
        trace_format = detect_format(first)
        found = (
            FileKind(TRACES, trace_format)
            if trace_format is not None
            else _records(itertools.chain([first], iterator))
        )
    return _accepted(found, source, accept, expected, weak_results_ok)


_END = object()


def _accepted(
    found: FileKind, source: str, accept: Iterable[str], expected: str, weak_results_ok: bool
) -> FileKind:
    """``found`` when it is one of ``accept`` (or empty, or unknown); else the ``InputError``."""
    if found.kind in set(accept) or found.kind in (EMPTY, UNKNOWN):
        return found
    if found.kind == RESULTS and not found.strong and weak_results_ok:
        return found
    raise InputError(f"looks like {found.describe()}; {expected}", source=source)


def read_results_lines(
    path: str | os.PathLike[str], command: str, each: Callable[[dict[str, Any]], None]
) -> FileKind:
    """Read a JSON Lines results file once, a line at a time, handing each result to ``each``;
    ``InputError``, as when the file is read whole and checked (``require`` then
    ``check_results``), for a file that is not results or a result of the wrong shape (the
    first one; ``each`` sees none after it)."""
    from .files import check_result, json_lines

    source = str(path)
    problem: list[InputError] = []

    def records() -> Iterator[Any]:
        for number, result in json_lines(path):
            if not problem:
                try:
                    check_result(result, source, f"line {number}")
                except InputError as e:
                    problem.append(e)  # raised once the file is known to be results
                else:
                    each(result)
            yield result

    expected = f"`qa-eval {command}` expects results written by `qa-eval evaluate -o`"
    found = require_records(records(), source, (RESULTS,), expected)
    if problem:
        raise problem[0]
    return found
