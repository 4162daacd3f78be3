"""The flat per-question format of ragas and of the GraphRAG metrics document, read from JSONL or
CSV and turned into a reference dataset and responses in qa-eval's own format.

One row per question. The fields and the column names recognised for them (first found wins; a
``mapping`` such as ``{"question": "prompt"}`` names other columns):

    question_id     id, question_id                         (else the row's line number)
    question        question, user_input, question_text     (required)
    answer          answer, response, actual_answer
    contexts        contexts, retrieved_contexts            (a list of strings)
    ground_truth    ground_truth, reference, reference_answer, ground_truths
    question_type   question_type
    template_id     template_id                             (else question_type, else "all")
    reference_tool_calls  reference_tool_calls              (ragas: a list of {name, args})

In CSV a list cell is JSON (``["a", "b"]``) or a Python-style list of string literals
(``['a', 'b']``, as pandas writes them), read with ``ast.literal_eval`` (literals only, never
code); any other text is one context. A list of ground truths is joined with newlines.

The contexts become one ``retrieval`` step whose output is the chunk list, which is where the
metrics read contexts from in qa-eval's format; a row without a contexts column has no retrieval
step, so faithfulness and the context metrics do not apply to it. The made-up step is marked
``"flat_contexts": true``: the retrieval step metrics (``retrieval_answer_*``,
``retrieval_context_*``) skip it unless explicitly enabled, as they would only repeat context
precision and recall (the same in ``run_evaluation`` and ``qa-eval evaluate-flat``). A row
without an answer is an error response ("no answer"), evaluated as such while the other rows are
scored.

Agent rows (ragas' ``MultiTurnSample``): ``reference_tool_calls`` becomes the question's
``reference_trajectory`` in the list form, so with its defaults (``superset`` matching, ``exact``
arguments; docs/metrics/trajectory.md). A ``user_input`` that is a list of messages (``type``
``human`` / ``ai`` / ``tool``, or ``role`` ``user`` / ``assistant`` / ``tool``) gives the question
(the first human message), the actual steps (the AI messages' ``tool_calls``, in order, each with
the output of the tool message answering it: by ``tool_call_id`` where both have one, else in
order) and, without an answer column, the answer (the last AI message's text). In CSV these
cells are JSON.
"""

from __future__ import annotations

import ast
import csv
import io
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from ..errors import InputError, short_repr
from .files import numbered_lines, parse_json, read_text

__all__ = ["FIELDS", "FLAT_MARK", "flat_to_dataset", "read_flat", "read_flat_rows"]

FLAT_MARK = "flat_contexts"
"""The key set (to ``true``) on the made-up retrieval step of a flat row (see ``run.score``)."""

FIELDS: dict[str, tuple[str, ...]] = {
    "question_id": ("id", "question_id"),
    "question": ("question", "user_input", "question_text"),
    "answer": ("answer", "response", "actual_answer"),
    "contexts": ("contexts", "retrieved_contexts"),
    "ground_truth": ("ground_truth", "reference", "reference_answer", "ground_truths"),
    "question_type": ("question_type",),
    "template_id": ("template_id",),
    "reference_tool_calls": ("reference_tool_calls",),
}


def read_flat_rows(path: str | os.PathLike[str]) -> list[tuple[int, dict[str, Any]]]:
    """The rows of a JSONL or CSV file with their line numbers (by extension: .csv is CSV)."""
    source = str(path)
    text = read_text(Path(path))
    rows: list[tuple[int, dict[str, Any]]] = []
    if Path(path).suffix.lower() in (".csv", ".tsv"):
        delimiter = "\t" if Path(path).suffix.lower() == ".tsv" else ","
        return _csv_rows(text, delimiter, source)
    for number, line in numbered_lines(text):
        if not line.strip():
            continue
        row = parse_json(line, source, f"line {number}")
        if not isinstance(row, dict):
            raise InputError(
                f"must be a JSON object, not {type(row).__name__}",
                source=source,
                record=f"line {number}",
            )
        rows.append((number, row))
    return rows


def _csv_rows(text: str, delimiter: str, source: str) -> list[tuple[int, dict[str, Any]]]:
    """The rows of CSV text by line number; a cell may be as long as the file (the csv
    module's own limit, 131,072 characters, is lifted while it is read)."""
    rows: list[tuple[int, dict[str, Any]]] = []
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter)
    limit = csv.field_size_limit()
    csv.field_size_limit(max(limit, len(text)))
    try:
        header = reader.fieldnames or []
        seen: set[str] = set()
        for name in header:
            if name in seen:
                raise InputError(
                    f"the column {short_repr(name)} appears twice in the header",
                    source=source,
                    record="line 1",
                )
            seen.add(name)
        for row in reader:
            rows.append((reader.line_num, {k: v for k, v in row.items() if k is not None}))
    except csv.Error as e:
        raise InputError(
            f"CSV does not parse: {e}", source=source, record=f"line {reader.line_num}"
        ) from None
    finally:
        csv.field_size_limit(limit)
    return rows


def _columns(
    header: Sequence[str], mapping: Mapping[str, str], source: str
) -> dict[str, str | None]:
    unknown = set(mapping) - set(FIELDS)
    if unknown:
        raise InputError(
            f"unknown field(s) in the column mapping: {', '.join(sorted(unknown))} "
            f"(known: {', '.join(FIELDS)})",
            source=source,
        )
    chosen: dict[str, str | None] = {}
    for name, candidates in FIELDS.items():
        if name in mapping:
            chosen[name] = mapping[name]
            continue
        chosen[name] = next((c for c in candidates if c in header), None)
    return chosen


def _as_list(value: Any, where: str, source: str, record: str) -> list[str]:
    if isinstance(value, str):
        stripped = value.strip()
        if stripped.startswith("["):
            try:
                value = orjson.loads(stripped)
            except orjson.JSONDecodeError:
                try:
                    value = ast.literal_eval(stripped)
                except (ValueError, SyntaxError, MemoryError, RecursionError):
                    value = [value]
        else:
            value = [value] if stripped else []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError("must be a list of strings", source=source, record=record, field=where)
    return value


def flat_to_dataset(
    rows: Sequence[tuple[int, Mapping[str, Any]]],
    mapping: Mapping[str, str] | None = None,
    source: str = "input",
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(reference dataset, responses) in qa-eval's format from flat rows."""
    header: list[str] = []
    for _, row in rows:
        header.extend(k for k in row if k not in header)
    columns = _columns(header, mapping or {}, source)
    if columns["question"] is None or columns["question"] not in header:
        raise InputError(
            f"no question column (looked for {', '.join(FIELDS['question'])}; "
            "name it with a column mapping)",
            source=source,
        )
    templates: dict[str, list[dict[str, Any]]] = {}
    responses: list[dict[str, Any]] = []
    seen: dict[str, str] = {}
    for line, row in rows:
        record = f"line {line}"
        cells = _Cells(row, columns, source, record)
        template_id, entry = _flat_question(cells, line, seen)
        templates.setdefault(template_id, []).append(entry)
        responses.append(_flat_response(cells, entry["id"]))
    reference = [{"template_id": t, "questions": qs} for t, qs in templates.items()]
    return reference, responses


@dataclass(frozen=True)
class _Cells:
    """One flat row read through the column mapping, with where it is for a message."""

    row: Mapping[str, Any]
    columns: dict[str, str | None]
    source: str
    record: str

    def get(self, name: str) -> Any:
        """The row's value of a field (an empty cell is ``None``, except an empty answer)."""
        column = self.columns[name]
        value = self.row.get(column) if column is not None else None
        return None if value == "" and name not in ("answer",) else value

    def fail(self, message: str, name: str) -> InputError:
        """An ``InputError`` about the row's column of a field."""
        return InputError(message, source=self.source, record=self.record, field=self.columns[name])

    def strings(self, value: Any, name: str) -> list[str]:
        """A list cell of the row as a list of strings."""
        return _as_list(value, str(self.columns[name]), self.source, self.record)


def _flat_question(cells: _Cells, line: int, seen: dict[str, str]) -> tuple[str, dict[str, Any]]:
    """(template id, reference question) of a row; ``seen``: the ids so far, with their rows."""
    question = cells.get("question")
    messages = _messages(cells, question)
    if messages is not None:
        question = next((_text(m) for m in messages if _role(m) == "human"), None)
    if not isinstance(question, str) or not question.strip():
        raise cells.fail("must be a non-empty string", "question")
    raw_id = cells.get("question_id")
    qid = str(raw_id) if raw_id is not None else f"row-{line}"
    if qid in seen:
        raise cells.fail(
            f"duplicate question id {short_repr(qid)} (first at {seen[qid]})", "question_id"
        )
    seen[qid] = cells.record
    entry: dict[str, Any] = {"id": qid, "question_text": question}
    truth = cells.get("ground_truth")
    if truth is not None:
        entry["reference_answer"] = "\n".join(cells.strings(truth, "ground_truth"))
    question_type = cells.get("question_type")
    if question_type is not None:
        entry["question_type"] = question_type
    calls = cells.get("reference_tool_calls")
    if calls is not None:
        if isinstance(calls, str):
            calls = _json_cell(cells, calls, "reference_tool_calls")
        if not isinstance(calls, list):
            raise cells.fail("must be a list of {name, args} calls", "reference_tool_calls")
        entry["reference_trajectory"] = [dict(c) if isinstance(c, Mapping) else c for c in calls]
    template = cells.get("template_id")
    return str(template if template is not None else question_type or "all"), entry


def _json_cell(cells: _Cells, text: str, name: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as e:
        raise cells.fail(f"not JSON ({e})", name) from None


def _role(message: Any) -> str | None:
    kind = message.get("type", message.get("role")) if isinstance(message, Mapping) else None
    return {"user": "human", "assistant": "ai"}.get(kind, kind)  # type: ignore[arg-type]


def _text(message: Mapping[str, Any]) -> Any:
    return message.get("content")


def _messages(cells: _Cells, question: Any) -> list[Mapping[str, Any]] | None:
    """The messages of a multi-turn ``user_input`` (None for a question text)."""
    if isinstance(question, str) and question.lstrip().startswith("[{"):
        try:
            question = orjson.loads(question)
        except orjson.JSONDecodeError:
            return None
    if not isinstance(question, list):
        return None
    if not all(isinstance(m, Mapping) and _role(m) is not None for m in question):
        raise cells.fail("a list of messages must give each a type or role", "question")
    return question


def _agent_steps(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The tool calls of the AI messages as actual steps, with their tool messages' outputs."""
    steps: list[dict[str, Any]] = []
    waiting: list[dict[str, Any]] = []
    for message in messages:
        role = _role(message)
        if role == "ai":
            waiting = []
            for call in message.get("tool_calls") or []:
                if not isinstance(call, Mapping):
                    continue
                function = call.get("function")
                if isinstance(function, Mapping):  # OpenAI's shape
                    call = {"name": function.get("name"), "args": function.get("arguments"),
                            "id": call.get("id")}  # fmt: skip
                step = {"name": str(call.get("name")), "args": call.get("args"),
                        "status": "success"}  # fmt: skip
                if call.get("id") is not None:
                    step["id"] = call["id"]
                steps.append(step)
                waiting.append(step)
        elif role == "tool" and waiting:
            wanted = message.get("tool_call_id")
            found = next((s for s in waiting if wanted is not None and s.get("id") == wanted), None)
            step = found if found is not None else waiting[0]
            waiting.remove(step)
            step["output"] = _text(message)
    return steps


def _flat_response(cells: _Cells, qid: str) -> dict[str, Any]:
    """The response of a row: its answer and a retrieval step of its contexts, or an error
    response when it has no answer."""
    answer = cells.get("answer")
    response: dict[str, Any] = {"question_id": qid}
    messages = _messages(cells, cells.get("question"))
    if messages is not None:
        response["actual_steps"] = _agent_steps(messages)
        if answer is None:
            texts = [_text(m) for m in messages if _role(m) == "ai" and _text(m)]
            answer = texts[-1] if texts else None
    if answer is None:
        response.update(status="error", error="no answer")
        return response
    if not isinstance(answer, str):
        raise cells.fail(f"must be a string, not {type(answer).__name__}", "answer")
    response["actual_answer"] = answer
    contexts = cells.get("contexts")
    if contexts is not None:
        texts = cells.strings(contexts, "contexts")
        chunks = [{"id": str(i), "text": t} for i, t in enumerate(texts, 1)]
        response["actual_steps"] = [
            *response.get("actual_steps", []),
            {
                "name": "retrieval",
                "args": {},
                "status": "success",
                "output": orjson.dumps(chunks).decode(),
                FLAT_MARK: True,
            },
        ]
    return response


def read_flat(
    path: str | os.PathLike[str], mapping: Mapping[str, str] | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(reference dataset, responses) in qa-eval's format from a flat JSONL or CSV file."""
    return flat_to_dataset(read_flat_rows(path), mapping, str(path))
