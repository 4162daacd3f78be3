"""The drill-down of one question: its reference steps beside each run's calls.

A SPARQL result (or a list of records, such as retrieved documents) is shown as a table. The
actual result a reference step is shown beside is the call that matched it, or, when none did,
the closest call of the same name (the one with the fewest missing and extra rows). Its rows are
marked against the reference: an actual row whose values in the compared columns (the
reference's ``required_columns``, or all of its columns) are in no reference row is *extra*, and
a reference row found in no actual row is *missing* (shown in the actual table, struck through).
Columns are paired by name when the values agree, else by the actual column holding most of the
reference column's values (SPARQL terms compared as the comparator compares them: numbers by
value). This is for reading only: whether a step matched is what the evaluation recorded
(``matches``), and why not is its ``mismatch`` text when the results carry one.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..aggregate import as_float, is_error, is_finite_number
from ..steps.outputs import OutputParseError, loads
from ..steps.sparql.terms import SparqlResultError, read_term
from .text import clip, format_query, prefixes

__all__ = ["Cell", "Drill", "RefBlock", "RunAnswer", "StepView", "Table", "drill_down", "step_view"]

MAX_ROWS = 12
"""Rows shown per table (the rest are counted); rows marked missing or extra are shown first."""
MAX_CELL = 160
MAX_TEXT = 2000
MAX_OUTPUT = 1200
"""Characters shown of an output that is not a table."""
_MAX_MAPPING_ROWS = 500
_STEP_STRUCTURE = frozenset(
    {"name", "id", "args", "output", "status", "error", "output_media_type", "matches",
     "mismatch", "required_columns", "ordered", "ignore_duplicates"}
)  # fmt: skip
_TRAJECTORY_KEYS = frozenset(
    {"reference_trajectory", "trajectory_calls", "trajectory_error", "trajectory_reason"}
)
"""Shown in the trajectory part of the drill-down (``report.trajectory``), not repeated here."""
_TEXT_KEYS = frozenset(
    {"template_id", "question_id", "question_text", "reference_answer", "actual_answer",
     "status", "error", "reference_steps", "actual_steps"}
)  # fmt: skip


@dataclass(frozen=True)
class Cell:
    """A table cell: the shown text and, when shortened, the whole value (for its tooltip)."""

    text: str
    full: str = ""


@dataclass(frozen=True)
class Row:
    """A table row; ``mark`` is "", "missing" or "extra"."""

    cells: tuple[Cell, ...]
    mark: str = ""


@dataclass(frozen=True)
class Table:
    """A result as a table, possibly marked against the reference."""

    columns: tuple[str, ...]
    keys: tuple[str, ...]  # per column: the reference column it is compared as, or ""
    rows: tuple[Row, ...]
    total: int
    hidden: int = 0
    missing: int = 0
    extra: int = 0
    notes: tuple[str, ...] = ()
    sparql: bool = False  # column names are SPARQL variables


@dataclass(frozen=True)
class StepView:
    """One step (a reference step or an actual call) as shown."""

    sid: str
    name: str
    status: str
    error: str
    query: str
    args: tuple[tuple[str, str], ...]
    table: Table | None
    boolean: bool | None
    text: str
    metrics: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class RunStep:
    """A reference step in one run: matched or not, why, and the call shown beside it."""

    matched: bool
    match_id: str
    mismatch: str
    call: StepView | None
    closest: bool  # the call is the closest of that name, not a match


@dataclass(frozen=True)
class RefBlock:
    """A reference step, and per run what answered it."""

    group: int
    name: str
    reference: StepView
    runs: tuple[RunStep | None, ...]


@dataclass(frozen=True)
class RunAnswer:
    """One run's answer to the question, and its calls no reference step is shown beside."""

    status: str
    error: str
    is_error: bool
    answer: str
    other_calls: tuple[StepView, ...]
    lists: tuple[tuple[str, tuple[str, ...], tuple[tuple[str, ...], ...]], ...]
    reasons: tuple[tuple[str, str], ...]
    errors: tuple[tuple[str, str], ...]
    others: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Drill:
    """The drill-down of one question."""

    reference_answer: str
    blocks: tuple[RefBlock, ...]
    runs: tuple[RunAnswer | None, ...]


def _text(value: Any, limit: int = MAX_TEXT) -> str:
    return clip(value, limit)


def _cell(text: str, full: str = "") -> Cell:
    if len(text) > MAX_CELL:
        return Cell(text[:MAX_CELL] + "…", _text(full or text, MAX_CELL * 4))
    return Cell(text, full)


def _term_cell(term: Any, names: Sequence[tuple[str, str]]) -> Cell:
    if not isinstance(term, Mapping):
        return Cell("" if term is None else _text(term, MAX_CELL))
    value = str(term.get("value", ""))
    if term.get("type") == "uri":
        for namespace, name in names:
            local = value[len(namespace) :]
            if value.startswith(namespace) and local and re.fullmatch(r"[\w.-]+", local):
                return _cell(f"{name}:{local}", value)
        return _cell(value)
    if term.get("type") == "bnode":
        return Cell(f"_:{value}")
    lang = term.get("xml:lang")
    return _cell(f"{value}@{lang}" if lang else value)


def _canon(term: Any) -> Hashable:
    if term is None:
        return ("unbound",)
    try:
        return read_term(term)
    except (SparqlResultError, TypeError, ValueError):
        return ("invalid", repr(term))


# ------------------------------------------------------------------ outputs as tables


@dataclass(frozen=True)
class _Parsed:
    """An output read as rows (``columns`` and per row a list of terms), a boolean or text."""

    columns: tuple[str, ...] = ()
    rows: tuple[Mapping[str, Any], ...] = ()
    sparql: bool = False
    boolean: bool | None = None
    text: str = ""
    tabular: bool = False


def _parse(output: Any) -> _Parsed:
    data = output
    if isinstance(output, (str, bytes)):
        try:
            data = loads(output)
        except OutputParseError:
            return _Parsed(text=_text(output, MAX_OUTPUT))
    if isinstance(data, Mapping):
        if isinstance(data.get("boolean"), bool):
            return _Parsed(boolean=data["boolean"])
        results = data.get("results")
        bindings = results.get("bindings") if isinstance(results, Mapping) else None
        if isinstance(bindings, list) and all(isinstance(b, Mapping) for b in bindings):
            head = data.get("head")
            names = head.get("vars") if isinstance(head, Mapping) else None
            columns = [str(v) for v in names or () if isinstance(v, str)]
            for binding in bindings:
                columns.extend(str(k) for k in binding if str(k) not in columns)
            return _Parsed(tuple(columns), tuple(bindings), sparql=True, tabular=True)
    if isinstance(data, list) and data and all(isinstance(i, Mapping) for i in data):
        columns = list(dict.fromkeys(str(k) for item in data for k in item))
        return _Parsed(tuple(columns), tuple(data), tabular=True)
    if isinstance(data, list) and not data:
        return _Parsed((), (), tabular=True)
    return _Parsed(text=_text(data if not isinstance(output, str) else output, MAX_OUTPUT))


def _key(parsed: _Parsed, row: Mapping[str, Any], column: str | None) -> Hashable:
    if column is None:
        return ("unmapped",)
    value = row.get(column)
    if parsed.sparql:
        return _canon(value)
    try:
        return json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(value)


def _compared_columns(reference: _Parsed, step: Mapping[str, Any]) -> list[str]:
    required = step.get("required_columns")
    if isinstance(required, list) and required:
        return [str(c) for c in required if str(c) in reference.columns] or list(reference.columns)
    if not reference.sparql and "id" in reference.columns:
        return ["id"]  # retrieved documents are compared by id
    return list(reference.columns)


def _map_columns(
    ref: _Parsed, act: _Parsed, columns: Sequence[str], used: set[str] | None = None
) -> dict[str, str | None]:
    """Each reference column -> the actual column holding its values (or None); columns in
    ``used`` are taken already."""

    def values(parsed: _Parsed, column: str) -> set[Hashable]:
        return {_key(parsed, r, column) for r in parsed.rows[:_MAX_MAPPING_ROWS]}

    ref_values = {c: values(ref, c) for c in columns}
    act_values = {c: values(act, c) for c in act.columns}
    ranked = sorted(
        ((len(ref_values[c] & act_values[a]), c == a, c, a) for c in columns for a in act.columns),
        key=lambda t: (t[0], t[1]),
        reverse=True,
    )
    mapping: dict[str, str | None] = dict.fromkeys(columns)
    used = set() if used is None else set(used)
    for overlap, same, column, actual in ranked:
        if mapping[column] is None and actual not in used and (overlap or same):
            mapping[column] = actual
            used.add(actual)
    return mapping


def _table(parsed: _Parsed, names: Sequence[tuple[str, str]], keys: Sequence[str] = ()) -> Table:
    rows = tuple(
        Row(tuple(_row_cell(parsed, r.get(c), names) for c in parsed.columns))
        for r in parsed.rows[:MAX_ROWS]
    )
    marks = tuple(c if c in keys else "" for c in parsed.columns)
    hidden = max(0, len(parsed.rows) - MAX_ROWS)
    return Table(parsed.columns, marks, rows, len(parsed.rows), hidden, sparql=parsed.sparql)


def _row_cell(parsed: _Parsed, value: Any, names: Sequence[tuple[str, str]]) -> Cell:
    if parsed.sparql:
        return _term_cell(value, names)
    if isinstance(value, str):
        return _cell(value)
    return _cell("" if value is None else _text(value, MAX_CELL))


def _diff(
    ref: _Parsed, act: _Parsed, step: Mapping[str, Any], names: Sequence[tuple[str, str]]
) -> Table:
    """The actual table with extra rows marked and missing reference rows added."""
    columns = _compared_columns(ref, step)
    mapping = _map_columns(ref, act, columns)
    multiset = step.get("ignore_duplicates") is False
    ref_keys = [tuple(_key(ref, r, c) for c in columns) for r in ref.rows]
    act_keys = [tuple(_key(act, r, mapping[c]) for c in columns) for r in act.rows]
    if multiset:
        remaining = Counter(ref_keys)
        extra_flags = []
        for key in act_keys:
            if remaining[key] > 0:
                remaining[key] -= 1
                extra_flags.append(False)
            else:
                extra_flags.append(True)
        left = Counter(remaining)
        missing_rows = []
        for row, key in zip(ref.rows, ref_keys):
            if left[key] > 0:
                left[key] -= 1
                missing_rows.append(row)
    else:
        ref_set, act_set = set(ref_keys), set(act_keys)
        extra_flags = [key not in ref_set for key in act_keys]
        missing_rows = [row for row, key in zip(ref.rows, ref_keys) if key not in act_set]
    notes = []
    unmapped = [c for c in columns if mapping[c] is None]
    if unmapped:
        found = ", ".join(f"?{c}" if ref.sparql else c for c in unmapped)
        notes.append(f"no column of this result holds the values of {found}")
    elif step.get("ordered") and not any(extra_flags) and not missing_rows and act_keys != ref_keys:
        notes.append("the rows are in another order than the reference's (ordered: true)")
    # Optional reference columns are paired too, only to show a missing row's other values.
    optional = [c for c in ref.columns if c not in columns]
    shown_map = dict(mapping)
    if optional and not unmapped:
        taken = {a for a in mapping.values() if a is not None}
        shown_map.update(_map_columns(ref, act, optional, taken))
    reverse = {a: c for c, a in shown_map.items() if a is not None}
    missing_shown = [] if unmapped else missing_rows[: max(MAX_ROWS // 2, MAX_ROWS - len(act.rows))]
    budget = MAX_ROWS - len(missing_shown)
    marked = [i for i, extra in enumerate(extra_flags) if extra][:budget]
    plain = [i for i, extra in enumerate(extra_flags) if not extra][: budget - len(marked)]
    shown: list[Row] = []
    for i in sorted(marked + plain):
        cells = tuple(_row_cell(act, act.rows[i].get(c), names) for c in act.columns)
        shown.append(Row(cells, "extra" if extra_flags[i] else ""))
    for row in missing_shown:
        cells = tuple(
            _row_cell(ref, row.get(reverse[c]), names) if c in reverse else Cell("")
            for c in act.columns
        )
        shown.append(Row(cells, "missing"))
    keys = tuple(c if (c := reverse.get(a, "")) in columns else "" for a in act.columns)
    return Table(
        act.columns,
        keys,
        tuple(shown),
        len(act.rows),
        len(act.rows) + len(missing_rows) - len(shown),
        len(missing_rows),
        sum(extra_flags),
        tuple(notes),
        act.sparql,
    )


# ------------------------------------------------------------------ steps


def _args(args: Any) -> tuple[str, tuple[tuple[str, str], ...]]:
    """(the query, the other arguments as (name, text): strings as they are, else JSON)."""
    if isinstance(args, Mapping):
        query = args.get("query")
        rest = tuple(
            (str(k), v if isinstance(v, str) else _compact(v))
            for k, v in args.items()
            if k != "query" or not isinstance(query, str)
        )
        return (query if isinstance(query, str) else ""), tuple(
            (k, _text(v, MAX_CELL * 2)) for k, v in rest
        )
    if args is None:
        return "", ()
    return "", (("", _text(args if isinstance(args, str) else _compact(args), MAX_CELL * 2)),)


def _compact(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)
    except (TypeError, ValueError):
        return str(value)


def _view(
    step: Mapping[str, Any],
    names: Sequence[tuple[str, str]],
    table: Table | None = None,
    parsed: _Parsed | None = None,
) -> StepView:
    query, args = _args(step.get("args"))
    if parsed is None:
        parsed = _parse(step.get("output")) if "output" in step else _Parsed()
    if table is None and parsed.tabular:
        table = _table(parsed, names)
    metrics = tuple(
        (str(k), v)
        for k, v in step.items()
        if str(k) not in _STEP_STRUCTURE and (is_finite_number(v) or str(k).endswith("_error"))
    )
    return StepView(
        sid="" if step.get("id") is None else str(step["id"]),
        name=str(step.get("name")),
        status="" if step.get("status") is None else str(step["status"]),
        error=_text(step.get("error")) if step.get("error") else "",
        query=_text(format_query(query), MAX_TEXT * 2),
        args=args,
        table=table,
        boolean=parsed.boolean,
        text=parsed.text,
        metrics=metrics,
    )


def step_view(step: Mapping[str, Any], names: Sequence[tuple[str, str]] = ()) -> StepView:
    """A step as shown: its query, arguments, output (a table, a boolean or text), error and
    step metrics (``names``: the PREFIXes that shorten IRIs)."""
    return _view(step, names)


def _groups(result: Mapping[str, Any] | None) -> list[list[Mapping[str, Any]]]:
    groups = result.get("reference_steps") if result is not None else None
    out = []
    for group in groups if isinstance(groups, list) else ():
        items = group if isinstance(group, list) else [group]
        out.append([s for s in items if isinstance(s, Mapping)])
    return out


def _calls(result: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    steps = result.get("actual_steps") if result is not None else None
    return [s for s in steps if isinstance(s, Mapping)] if isinstance(steps, list) else []


def _run_step(
    ref_step: Mapping[str, Any],
    ref_parsed: _Parsed,
    own: Mapping[str, Any] | None,
    calls: Sequence[Mapping[str, Any]],
    taken: set[str],
    names: Sequence[tuple[str, str]],
) -> RunStep:
    """What a run did for one reference step (``own``: the run's copy of that step)."""
    match = (own or {}).get("matches")
    mismatch = (own or {}).get("mismatch")
    mismatch_text = _text(mismatch) if mismatch else ""
    by_id = {str(c.get("id")): c for c in calls if c.get("id") is not None}
    if match and str(match) in by_id:
        call = by_id[str(match)]
        return RunStep(
            True, str(match), mismatch_text, _beside(ref_step, ref_parsed, call, names), False
        )
    if match:
        return RunStep(True, str(match), mismatch_text, None, False)
    candidates = [
        c
        for c in calls
        if str(c.get("name")) == str(ref_step.get("name")) and str(c.get("id")) not in taken
    ]
    best: tuple[int, StepView] | None = None
    for call in candidates[:8]:
        view = _beside(ref_step, ref_parsed, call, names)
        cost = (view.table.missing + view.table.extra) if view.table else 1 << 30
        if best is None or cost < best[0]:
            best = (cost, view)
    return RunStep(False, "", mismatch_text, best[1] if best else None, best is not None)


def _beside(
    ref_step: Mapping[str, Any],
    ref_parsed: _Parsed,
    call: Mapping[str, Any],
    names: Sequence[tuple[str, str]],
) -> StepView:
    parsed = _parse(call.get("output")) if "output" in call else _Parsed()
    table = None
    if ref_parsed.tabular and parsed.tabular and ref_parsed.columns:
        table = _diff(ref_parsed, parsed, ref_step, names)
    return _view(call, names, table, parsed)


def _answer(result: Mapping[str, Any], other_calls: tuple[StepView, ...]) -> RunAnswer:
    shown = _TRAJECTORY_KEYS if result.get("reference_trajectory") is not None else frozenset()
    if shown:
        other_calls = ()  # every call is in the trajectory part, with its output
    lists = []
    for key, value in result.items():
        if key in ("actual_steps", "reference_steps") or not isinstance(value, list) or not value:
            continue
        if key in shown:
            continue
        if all(isinstance(i, Mapping) for i in value):
            columns = tuple(dict.fromkeys(str(c) for i in value for c in i))
            rows = tuple(tuple(_text(i.get(c), MAX_CELL * 3) for c in columns) for i in value[:50])
            lists.append((str(key), columns, rows))
        else:
            lists.append(
                (str(key), ("value",), tuple((_text(i, MAX_CELL * 3),) for i in value[:50]))
            )
    listed = {name for name, _, _ in lists}
    reasons = tuple(
        (str(k), _text(v))
        for k, v in result.items()
        if str(k).endswith("_reason") and v and k not in shown
    )
    errors = tuple(
        (str(k), _text(v))
        for k, v in result.items()
        if str(k).endswith("_error") and v and k != "error" and k not in shown
    )
    done = {*_TEXT_KEYS, *shown, *listed, *(k for k, _ in reasons), *(k for k, _ in errors)}
    others = tuple(
        (str(k), _text(v, MAX_CELL * 3))
        for k, v in result.items()
        if str(k) not in done and not is_finite_number(v) and v is not None and v != ""
    )
    return RunAnswer(
        status="" if result.get("status") is None else str(result["status"]),
        error=_text(result.get("error")) if result.get("error") else "",
        is_error=is_error(result),
        answer=_text(result.get("actual_answer"), MAX_TEXT * 2),
        other_calls=other_calls,
        lists=tuple(lists),
        reasons=reasons,
        errors=errors,
        others=others,
    )


def drill_down(results: Sequence[Mapping[str, Any] | None]) -> Drill:
    """The drill-down of one question from its result in each run (None where missing)."""
    first = next(r for r in results if r is not None)
    skeleton = next((_groups(r) for r in results if r is not None and _groups(r)), [])
    queries: list[str] = []
    for result in results:
        for step in [*(s for g in _groups(result) for s in g), *_calls(result)]:
            args = step.get("args")
            if isinstance(args, Mapping) and isinstance(args.get("query"), str):
                queries.append(args["query"])
    names = prefixes(*queries)
    per_run_groups = [_groups(r) for r in results]
    per_run_calls = [_calls(r) for r in results]
    taken: list[set[str]] = [
        {str(s.get("matches")) for g in groups for s in g if s.get("matches")}
        for groups in per_run_groups
    ]
    blocks = []
    for g, group in enumerate(skeleton):
        for j, ref_step in enumerate(group):
            ref_parsed = _parse(ref_step.get("output")) if "output" in ref_step else _Parsed()
            runs: list[RunStep | None] = []
            for index, result in enumerate(results):
                if result is None:
                    runs.append(None)
                    continue
                groups = per_run_groups[index]
                own = groups[g][j] if g < len(groups) and j < len(groups[g]) else None
                done = _run_step(
                    ref_step, ref_parsed, own, per_run_calls[index], taken[index], names
                )
                if done.closest and done.call is not None:
                    taken[index].add(done.call.sid)
                runs.append(done)
            keys = _compared_columns(ref_parsed, ref_step)
            table = _table(ref_parsed, names, keys) if ref_parsed.tabular else None
            reference = _view(ref_step, names, table, ref_parsed)
            blocks.append(RefBlock(g + 1, str(ref_step.get("name")), reference, tuple(runs)))
    answers: list[RunAnswer | None] = []
    for index, result in enumerate(results):
        if result is None:
            answers.append(None)
            continue
        shown = taken[index]
        other = tuple(
            _view(c, names) for c in per_run_calls[index] if str(c.get("id")) not in shown
        )
        answers.append(_answer(result, other))
    reference_answer = first.get("reference_answer")
    return Drill(_text(reference_answer, MAX_TEXT * 2), tuple(blocks), tuple(answers))


def metric_rows(
    results: Sequence[Mapping[str, Any] | None], names: Iterable[str]
) -> list[tuple[str, list[float | None]]]:
    """Per metric the question's value in each run (metrics no run has are left out)."""
    out = []
    for name in names:
        values = [as_float(r.get(name)) if r is not None else None for r in results]
        if any(v is not None for v in values):
            out.append((name, values))
    return out
