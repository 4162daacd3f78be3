"""Trace files in, responses out: :func:`read_traces` (and :func:`iter_responses`, which streams).

Each file is one JSON document or JSON Lines, gzip-compressed too (``.gz``), told apart by its
content whatever its name (``.jsonl`` and ``.ndjson`` are streamed, one record at a time, unless
their first line is not JSON on its own; any other file is read whole, as one document, else as
JSON Lines when its first line is a document on its own). Its format is detected on its first
record (``format`` forces one) and the format's module turns its records into
:class:`~qa_eval.traces.model.Trace` records, calls linked and losses counted. Each trace then
gets its question, in this order: an explicit id in the trace; else its first user message
matched to a reference question's text (whitespace and case normalised); else its trace id (a
warning). Each becomes one response (:func:`to_response`); the :class:`TraceReport` sums what was
read and lost.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any

from ..errors import InputError, QaEvalError, short_repr
from ..io.files import read_reference
from ..io.limits import one_line
from .files import is_binary, open_file, read_all, records_of, suffix_of
from .formats import FORMATS, detect_format, load
from .model import CONTENT, LOSSES, TRACE_LOSSES, Fidelity, ToolCall, Trace, capture_setting

__all__ = [
    "TraceLossError",
    "TraceReport",
    "is_trace_file",
    "iter_responses",
    "read_traces",
    "reference_dataset",
    "to_response",
]

PathArg = str | os.PathLike[str]
PER_TRACE_LIMIT = 1000
"""The lossy traces whose own report goes into a run's signature (the rest are counted)."""
_FIRST = 3
"""How many ids a one-line count names."""


TRIAL_ADVICE = {
    "otlp-json": "give each trace's root span a distinct qa_eval.trial attribute (OpenInference: "
    "a trial in its metadata; OpenLLMetry: the association property trial)",
    "langfuse": "give each trace a distinct trial in its metadata",
    "langsmith": "give each root run a distinct trial in its extra.metadata (metadata={'trial': "
    "N} in LangSmith's SDK)",
}
"""What a trace of each format needs to be one of several trials of a question (docs/traces.md,
*Which question*)."""
TRIAL_ADVICE["otlp-proto"] = TRIAL_ADVICE["otlp-json"]
_TRIAL_DEFAULT = "give each a distinct metadata.trial"


class TraceLossError(QaEvalError):
    """``strict``: the traces lost something (the message says what, in one line)."""


@dataclass
class TraceReport:
    """What reading traces found: the fidelity summed over every trace, the formats and files,
    how traces were matched to questions, and the traces and questions left without a match."""

    fidelity: Fidelity = field(default_factory=Fidelity)
    formats: Counter[str] = field(default_factory=Counter)
    files: list[str] = field(default_factory=list)
    matched: Counter[str] = field(default_factory=Counter)
    """Traces by how their question was found: ``id``, ``text``, ``trace id``."""
    by_trace_id: list[str] = field(default_factory=list)
    """The first traces that got their trace id as question id."""
    unmatched: list[Any] = field(default_factory=list)
    """The first question ids (with a reference) that are not in it."""
    unmatched_count: int = 0
    missing: list[Any] = field(default_factory=list)
    """The first reference questions with no trace."""
    missing_count: int = 0
    references: dict[Any, dict[str, Any]] | None = None
    """With ``collect_references``: the reference questions the traces carry, by question id."""
    per_trace: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Each lossy trace's own report, by question id (the first ``PER_TRACE_LIMIT``)."""
    lossy_traces: int = 0
    first_lossy: str | None = None
    """Where the first lossy trace was read (``FILE:record N``), for ``--strict``'s message."""
    keep: Counter[str] = field(default_factory=Counter)
    """The capture settings that would have kept the content lost, by the traces that lost some
    (see :func:`~qa_eval.traces.model.capture_setting`)."""

    def add(self, trace: Trace, question_id: Any) -> None:
        """Count one trace read and answered as ``question_id``."""
        self.fidelity.add(trace.fidelity)
        self.formats[trace.format] += 1
        if not trace.fidelity.lossless:
            self.lossy_traces += 1
            if self.first_lossy is None:
                self.first_lossy = trace.source
            setting = keep_setting(trace)
            if setting is not None:
                self.keep[setting] += 1
            if len(self.per_trace) < PER_TRACE_LIMIT:
                own = fidelity_dict(trace.fidelity)
                if setting is not None:
                    own["keep"] = setting
                self.per_trace[str(question_id)] = own

    def lines(self) -> list[str]:
        """The fidelity report, one line each."""
        f = self.fidelity
        formats = ", ".join(f"{name} {n}" for name, n in sorted(self.formats.items()))
        files = plural(len(self.files), "file")
        lines = [f"traces read: {f.traces} ({formats or 'none'}) from {files}"]
        lines += [f"  {LOSSES[name]}: {f.losses.get(name, 0)}" for name in TRACE_LOSSES]
        lines.append(f"tool calls: {f.tool_calls}")
        for name, words in LOSSES.items():
            if name != "unknown_attribute" and name not in TRACE_LOSSES:
                lines.append(f"  {words}: {f.losses.get(name, 0)}")
        for setting, n in sorted(self.keep.items()):
            lines.append(f"to keep what {plural(n, 'trace')} lost: {setting}")
        unknown = sum(f.unknown_attributes.values())
        shown = ", ".join(name for name, _ in f.unknown_attributes.most_common(_FIRST))
        lines.append(
            f"attributes of an unknown convention: {unknown}"
            + (f" (first: {shown})" if shown else "")
        )
        if f.conventions:
            seen = ", ".join(f"{name} ({n})" for name, n in sorted(f.conventions.items()))
            lines.append(f"conventions: {seen}")
        how = ", ".join(f"{n} by {way}" for way, n in sorted(self.matched.items()))
        lines.append(f"questions found: {how or 'none'}")
        if self.by_trace_id:
            lines.append(
                f"warning: {plural(self.matched['trace id'], 'trace')} with no question id "
                f"(nor a matching question text): the trace id is used (first: "
                f"{_ids(self.by_trace_id)})"
            )
        if self.unmatched_count:
            lines.append(
                f"traces with no question in the reference: {self.unmatched_count} (first: "
                f"{_ids(self.unmatched)})"
            )
        if self.missing_count:
            lines.append(
                f"questions with no trace: {self.missing_count} (first: {_ids(self.missing)})"
            )
        return lines

    def summary(self) -> str:
        """The report in one line: what was read, what was lost, what did not match."""
        f = self.fidelity
        formats = ", ".join(f"{name} {n}" for name, n in sorted(self.formats.items()))
        line = f"traces: {f.traces} read ({formats or 'none'}), {f.tool_calls} tool calls"
        lost = [f"{n} {LOSSES.get(name, name)}" for name, n in sorted(f.losses.items()) if n]
        unknown = sum(f.unknown_attributes.values())
        if unknown:
            lost.append(f"{unknown} attributes of an unknown convention")
        line += "; lost: " + ("; ".join(lost) if lost else "nothing")
        if self.keep:
            line += f" (to keep it: {self.keep.most_common(1)[0][0]})"
        if self.matched["trace id"]:
            line += f"; {plural(self.matched['trace id'], 'trace')} named by trace id"
        if self.unmatched_count:
            line += f"; {self.unmatched_count} with no question (first: {_ids(self.unmatched)})"
        if self.missing_count:
            missing = plural(self.missing_count, "question")
            line += f"; {missing} with no trace (first: {_ids(self.missing)})"
        return line

    def as_dict(self) -> dict[str, Any]:
        """The report as a run's signature records it."""
        report: dict[str, Any] = {
            "files": list(self.files),
            "formats": dict(sorted(self.formats.items())),
            **fidelity_dict(self.fidelity),
            "questions_found": dict(sorted(self.matched.items())),
        }
        if self.lossy_traces:
            report["lossy_traces"] = self.lossy_traces
            report["per_trace"] = dict(self.per_trace)
        if self.keep:
            report["keep"] = dict(sorted(self.keep.items()))
        return report

    def check_strict(self) -> None:
        """``TraceLossError`` when anything was lost."""
        f = self.fidelity
        if f.lossless:
            return
        parts = [f"{n} {LOSSES.get(name, name)}" for name, n in f.losses.items() if n]
        unknown = sum(f.unknown_attributes.values())
        if unknown:
            parts.append(f"{unknown} attributes of an unknown convention")
        first = next(iter(self.per_trace), None)
        place = [f"question {first}" if first is not None else "", f"in {self.first_lossy or ''}"]
        where = ", ".join(p for p in place if p not in ("", "in "))
        raise TraceLossError(
            "strict: the traces lost something: "
            + "; ".join(parts)
            + (f" (first trace: {where})" if where else "")
        )


def fidelity_dict(fidelity: Fidelity) -> dict[str, Any]:
    """A fidelity report as plain data (only the losses that happened)."""
    report: dict[str, Any] = {"traces": fidelity.traces, "tool_calls": fidelity.tool_calls}
    losses = {name: n for name, n in sorted(fidelity.losses.items()) if n}
    if losses:
        report["losses"] = losses
    if fidelity.unknown_attributes:
        report["unknown_attributes"] = dict(fidelity.unknown_attributes.most_common(20))
    if fidelity.conventions:
        report["conventions"] = dict(sorted(fidelity.conventions.items()))
    return report


def count_content(trace: Trace) -> None:
    """Count what a trace lost as a whole into its fidelity: its question, its answer, and the
    contexts of its ``retrieval`` calls (a call whose result was not recorded)."""
    for name in TRACE_LOSSES:
        if getattr(trace, name) is None:
            trace.fidelity.losses[name] += 1
    contexts = sum(1 for call in trace.calls if call.name == "retrieval" and "output" in call.lost)
    if contexts:
        trace.fidelity.losses["contexts"] += contexts


def keep_setting(trace: Trace) -> str | None:
    """The capture setting that would have kept the content this trace lost (None when it lost
    none, or when no setting would keep it)."""
    if not any(trace.fidelity.losses.get(name) for name in CONTENT):
        return None
    return capture_setting(trace.format, trace.fidelity.conventions)


def plural(n: int, word: str) -> str:
    """``1 file``, ``2 files``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _ids(ids: Sequence[Any]) -> str:
    return ", ".join(short_repr(i, 40) for i in ids[:_FIRST])


# Responses ------------------------------------------------------------------------------------
def to_response(trace: Trace, question_id: Any, trial: Any = None) -> dict[str, Any]:
    """The response a trace becomes (see docs/traces.md)."""
    response: dict[str, Any] = {"question_id": question_id}
    if trial is not None:
        response["trial"] = trial
    if trace.answer is not None:
        response["actual_answer"] = trace.answer
    response["actual_steps"] = [_step(call) for call in trace.calls]
    for key in ("input_tokens", "output_tokens", "total_tokens", "elapsed_sec"):
        value = getattr(trace, key)
        if value is not None:
            response[key] = value
    problems = [
        f"step {i} ({call.name}): {call.args_error}; raw text kept"
        for i, call in enumerate(trace.calls, start=1)
        if call.args_error is not None
    ]
    if problems:
        response["step_errors"] = problems
    response["trace"] = {
        "format": trace.format,
        "trace_id": trace.trace_id,
        "root_span_id": trace.root_span_id,
        "source": trace.source,
    }
    lost = [name for name in TRACE_LOSSES if getattr(trace, name) is None]
    if lost:  # what the metrics that need it report as not evaluable
        response["trace"]["lost"] = lost
        setting = keep_setting(trace)
        if setting is not None:
            response["trace"]["keep"] = setting
    return response


def _step(call: ToolCall) -> dict[str, Any]:
    step: dict[str, Any] = {"name": call.name}
    if call.args is not None:
        step["args"] = call.args
    if call.output is not None:
        step["output"] = call.output
    if call.status is not None:
        step["status"] = call.status
    if call.error is not None:
        step["error"] = call.error
    step_id = call.id if call.id is not None else call.record_id
    if step_id is not None:
        step["id"] = step_id
    if call.lost:
        step["lost"] = list(call.lost)
    return step


def read_file(path: PathArg, format: str = "auto") -> Iterator[Trace]:
    """The traces of one file, in the given ``format`` or the one its first record is in."""
    file = Path(path)
    source = str(path)
    if format != "auto":
        load(format)  # unknown or unavailable: one line
    if is_binary(file, format):
        module = load("otlp-proto")
        with open_file(file) as stream:
            data = read_all(stream, source)
        yield from _guarded(module.read_bytes(data, source), source, "otlp-proto")  # type: ignore[union-attr]
        return
    records = records_of(file, source)
    first = next(records, None)
    if first is None:
        return  # an empty file: no traces (the report says 0)
    name = format if format != "auto" else detect_format(first)
    if name is None:
        raise InputError(
            "not a trace file of a known format (give --format to name it; known: "
            + ", ".join(sorted(FORMATS))
            + ")",
            source=source,
        )
    module = load(name)
    yield from _guarded(module.read(chain([first], records), source), source, name)  # type: ignore[union-attr]


def _guarded(traces: Iterator[Trace], source: str, name: str) -> Iterator[Trace]:
    """A reader's traces; a reader tripping over a record it did not expect is one line."""
    try:
        yield from traces
    except QaEvalError:
        raise
    except (TypeError, ValueError, AttributeError, KeyError, IndexError, RecursionError) as e:
        reason = "nested too deeply" if isinstance(e, RecursionError) else one_line(str(e))
        raise InputError(
            f"cannot read as {name}: {type(e).__name__}: {reason[:200]}", source=source
        ) from None


def is_trace_file(path: PathArg) -> bool:
    """Whether a file's first record is a trace of a known format (cheap: one record is read;
    a file that cannot be read or parsed is not, and is left to the caller's own reader)."""
    file = Path(path)
    if suffix_of(file) in (".yaml", ".yml"):
        return False  # no trace format is YAML
    try:
        if not file.is_file():
            return False
        if is_binary(file, "auto"):
            return True
        first = next(records_of(file, str(path)), None)
    except (QaEvalError, OSError):
        return False
    return first is not None and detect_format(first) is not None


# Questions --------------------------------------------------------------------------------------
def _normal(text: str) -> str:
    return " ".join(text.split()).casefold()


@dataclass
class _Questions:
    ids: dict[str, Any] = field(default_factory=dict)
    """str(id) -> the reference's id (an integer id given as text matches)."""
    texts: dict[str, Any] = field(default_factory=dict)
    order: list[Any] = field(default_factory=list)


def _reference_questions(reference: Any) -> _Questions | None:
    if reference is None:
        return None
    data = read_reference(reference) if isinstance(reference, (str, os.PathLike)) else reference
    found = _Questions()
    for template in data if isinstance(data, list) else ():
        questions = template.get("questions") if isinstance(template, Mapping) else None
        for question in questions if isinstance(questions, list) else ():
            if not isinstance(question, Mapping):
                continue
            qid = question.get("id")
            if not isinstance(qid, (str, int)) or isinstance(qid, bool):
                continue
            found.ids.setdefault(str(qid), qid)
            found.order.append(qid)
            text = question.get("question_text")
            if isinstance(text, str):
                found.texts.setdefault(_normal(text), qid)
    return found


def iter_responses(
    paths: PathArg | Iterable[PathArg],
    reference: Any = None,
    format: str = "auto",
    report: TraceReport | None = None,
) -> Iterator[dict[str, Any]]:
    """The responses of the traces in ``paths``, one at a time, counted in ``report`` (complete
    when the iteration ends). ``reference``: a reference dataset file or its data, to match
    traces by question text and to count what matched."""
    files = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    report = report if report is not None else TraceReport()
    questions = _reference_questions(reference)
    seen: dict[Any, dict[Any, str]] = {}  # question id -> trial -> source
    answered: set[Any] = set()
    for path in files:
        report.files.append(str(path))
        for trace in read_file(path, format):
            qid = _question_of(trace, questions, report)
            trial = trace.metadata.get("trial") if isinstance(trace.metadata, dict) else None
            if not isinstance(trial, (str, int)) or isinstance(trial, bool):
                trial = None
            trials = seen.setdefault(qid, {})
            if trials and (trial is None or None in trials or trial in trials):
                earlier = (
                    next(iter(trials.values()))
                    if trial is None
                    else trials.get(trial, next(iter(trials.values())))
                )
                raise InputError(
                    f"question {short_repr(qid)} is answered by two traces, here and in "
                    f"{earlier} ({TRIAL_ADVICE.get(trace.format, _TRIAL_DEFAULT)}, or drop one)",
                    source=trace.source,
                )
            trials[trial] = trace.source
            if questions is not None:
                if str(qid) in questions.ids:
                    answered.add(questions.ids[str(qid)])
                else:
                    report.unmatched_count += 1
                    if len(report.unmatched) < _FIRST:
                        report.unmatched.append(qid)
            count_content(trace)
            report.add(trace, qid)
            if report.references is not None and trace.reference is not None:
                question = {"id": qid, "question_text": trace.question or "", **trace.reference}
                report.references.setdefault(qid, question)
            yield to_response(trace, qid, trial)
    if questions is not None:
        for qid in questions.order:
            if qid not in answered:
                report.missing_count += 1
                if len(report.missing) < _FIRST:
                    report.missing.append(qid)


def reference_dataset(report: TraceReport, template_id: str = "imported") -> list[dict[str, Any]]:
    """The reference questions the traces carried (``report.references``) as a reference
    dataset of one template; ``InputError`` when none did."""
    questions = list((report.references or {}).values())
    if not questions:
        raise InputError(
            "no trace carries a reference side (ragas samples' reference and "
            "reference_tool_calls do)",
            source=", ".join(report.files),
        )
    return [{"template_id": template_id, "questions": questions}]


def _question_of(trace: Trace, questions: _Questions | None, report: TraceReport) -> Any:
    """The question a trace answers: its explicit id, its question text's, else its trace id."""
    qid = trace.question_id
    if qid is not None:
        report.matched["id"] += 1
        if questions is not None:
            return questions.ids.get(str(qid), qid)
        return qid
    if questions is not None and trace.question:
        found = questions.texts.get(_normal(trace.question))
        if found is not None:
            report.matched["text"] += 1
            return found
    report.matched["trace id"] += 1
    qid = trace.trace_id if trace.trace_id is not None else trace.source
    if len(report.by_trace_id) < _FIRST:
        report.by_trace_id.append(qid)
    return qid


def read_traces(
    paths: PathArg | Iterable[PathArg],
    reference: Any = None,
    format: str = "auto",
    strict: bool = False,
) -> tuple[list[dict[str, Any]], TraceReport]:
    """The responses of the traces in ``paths`` and the report of what was read and lost;
    ``strict``: a :class:`TraceLossError` when anything was lost (see :func:`iter_responses`)."""
    report = TraceReport()
    responses = list(iter_responses(paths, reference, format, report))
    if strict:
        report.check_strict()
    return responses, report
