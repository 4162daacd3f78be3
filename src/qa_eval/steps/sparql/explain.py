"""Why a SPARQL result does not match its reference, in one line (``steps.sparql``): the columns
that found no match, or the rows missing, extra or out of order under the best mapping.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Mapping
from collections.abc import Set as AbstractSet
from typing import Any, cast

from .match import SparqlReference, tolerant_columns
from .terms import BNODE, BOOLEAN, IRI, LITERAL, MIXED, NAN, NUMBER, UNBOUND, Table, Value

__all__ = ["Text", "explain_sparql_results", "select_bound", "sparql_explanation"]

_SHOWN_ROWS = 3


_SHOWN_CHARS = 60


def _shown(text: str) -> str:
    if (
        len(text) <= _SHOWN_CHARS
        and text.isprintable()
        and "  " not in text
        and (not text or (text[0] != " " and text[-1] != " "))
    ):
        # Already one line of single spaces (a printable text's only white space is " "),
        # short enough: what the split and join below would give.
        return text
    text = " ".join(text.split())  # one line
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 1] + "…"


def _show(kind: Hashable, value: Value) -> str:
    """A canonical value as a user reads it: <iri>, "text", "text"@en, 12.5, true."""
    if kind == IRI:  # (the two usual kinds first)
        return "<" + _shown(str(value)) + ">"
    if kind == LITERAL:
        return '"' + _shown(str(value)) + '"'
    if kind == MIXED:
        pair = cast(tuple[Hashable, Value], value)
        return _show(pair[0], pair[1])
    if kind == IRI:
        return "<" + _shown(str(value)) + ">"
    if kind == NUMBER:
        return "NaN" if value == NAN else repr(value)
    if kind == BOOLEAN:
        return "true" if value else "false"
    if kind == BNODE:
        return "_:blank"
    if kind == UNBOUND:
        return "(unbound)"
    text = '"' + _shown(str(value)) + '"'
    if isinstance(kind, tuple) and kind[0] == "lang":
        return f"{text}@{kind[1]}"
    if isinstance(kind, tuple):  # typed or ill-typed literal
        return f"{text}^^<{_shown(str(kind[1]))}>"
    return text


_Distinct = tuple[Hashable, AbstractSet[Any]]
"""A column's distinct terms: its kind and its set of values, or ``MIXED`` and its set of
(kind, value) pairs; the values are not paired with one kind, which every value shares."""


def _distinct(kind: Hashable, values: list[Value]) -> _Distinct:
    return kind, set(values)


def _shared(a: _Distinct, b: _Distinct) -> int:
    """How many distinct terms two columns have in common."""
    (kind_a, set_a), (kind_b, set_b) = a, b
    if kind_a == MIXED and kind_b == MIXED:
        return len(set_a & set_b)
    if kind_a == MIXED:
        return sum(1 for k, v in set_a if k == kind_b and v in set_b)
    if kind_b == MIXED:
        return sum(1 for k, v in set_b if k == kind_a and v in set_a)
    return len(set_a & set_b) if kind_a == kind_b else 0


def _rows_list(count: int, what: str) -> str:
    """``2 rows missing``, ``1 row missing``, ``1 extra row``."""
    return f"{count} {what}" if count != 1 else f"1 {what.replace('rows', 'row')}"


def _named(columns: list[str]) -> str:
    """``?a, ?b``: columns as a text names them."""
    return ", ".join(["?" + v for v in columns])


def explain_sparql_results(
    reference: SparqlReference,
    actual: Mapping[str, Any],
    ordered: bool = False,
    ignore_duplicates: bool = True,
    table: Table | None = None,
) -> tuple[float, str]:
    """Why a checked actual result does not match the reference, for a user: the required
    columns no actual column holds, rows missing and extra (the first few shown), order, ASK.
    Returns (closeness 0-1, to pick the closest of several candidates, the text). ``table``:
    the ``Table`` the comparison read ``actual``'s columns into, reused."""
    closeness, text = sparql_explanation(reference, actual, ordered, ignore_duplicates, table)
    return closeness, text if isinstance(text, str) else text()


Text = str | Callable[[], str]
"""An explanation's text, or what makes it when called."""


def sparql_explanation(
    reference: SparqlReference,
    actual: Mapping[str, Any],
    ordered: bool = False,
    ignore_duplicates: bool = True,
    table: Table | None = None,
) -> tuple[float, Text]:
    """``explain_sparql_results``, the text of a SELECT result left to be made when called:
    the closeness of several candidates is compared and only the text shown is made (its
    rows, the most costly part)."""
    if reference.boolean is not None:
        expected = "true" if reference.boolean else "false"
        if "boolean" not in actual:
            rows = len(actual.get("results", {}).get("bindings", []))
            return 0.0, f"expected an ASK result ({expected}), got a SELECT result ({rows} rows)"
        got = "true" if actual["boolean"] else "false"
        return 0.5, f"ASK result is {got}, expected {expected}"
    if "boolean" in actual:
        got = "true" if actual["boolean"] else "false"
        return 0.0, f"expected a SELECT result, got an ASK result ({got})"
    act_bindings = actual.get("results", {}).get("bindings", [])
    act_vars = list(dict.fromkeys(actual.get("head", {}).get("vars", [])))
    required = reference.required
    if not reference.rows and not act_bindings:
        return 0.5, (
            f"no rows on either side, but the actual result has {len(act_vars)} columns and "
            f"{len(required)} are required ({_named(required)})"
        )
    if not reference.rows:
        return 0.0, f"expected no rows, got {len(act_bindings)}"
    if not act_bindings:
        return 0.0, f"no rows returned, expected {reference.rows}"
    parts: list[str] = []
    if len(required) > len(act_vars):
        columns = ", ".join("?" + v for v in act_vars) or "none"
        parts.append(
            f"the actual result has {len(act_vars)} column{'s' if len(act_vars) != 1 else ''} "
            f"({columns}), "
            f"{len(required)} are required ({_named(required)})"
        )
    try:
        if table is None or table.bindings is not act_bindings:
            table = Table(act_bindings)
        return _explain_select(reference, table, act_vars, ordered, ignore_duplicates, parts)
    except TypeError:  # an unhashable 'value'
        return 0.0, "a term's 'value' is not a string"


def _explain_select(
    reference: SparqlReference,
    table: Table,
    act_vars: list[str],
    ordered: bool,
    ignore_duplicates: bool,
    parts: list[str],
) -> tuple[float, Text]:
    """(closeness, what makes the text) of a SELECT result: the reference's columns paired
    with the actual ones, the columns not found, then the rows that differ on the columns
    found. The closeness is worked out now, the texts when asked for."""
    ref_cols = reference.columns
    required = reference.required
    kinds = _bound_kinds(reference)
    if kinds is None:
        read = _columns_that_matter({kind for kind, _ in ref_cols}, table, act_vars, required)
        act_cols = {v: table.column(v) for v in read}
        tolerant = tolerant_columns(ref_cols, table, act_vars)
    else:  # (no column of numbers or of mixed kinds: no tolerance, the same terms)
        read = _columns_that_matter(kinds, table, act_vars, required)
        act_cols = {v: table.column(v) for v in read}
        tolerant = None
    if tolerant is None:
        # The distinct terms of each column, found once per reference and per result.
        ref_sets = cast(list[_Distinct], reference.distinct_terms())
        act_sets = {v: _distinct(*column) for v, column in act_cols.items()}
    else:
        ref_cols, table = tolerant
        act_cols = {v: table.column(v) for v in read}
        ref_sets = [_distinct(*column) for column in ref_cols]
        act_sets = {v: _distinct(*column) for v, column in act_cols.items()}
    paired, taken = _pair_sets(ref_sets, act_vars, act_sets, required)
    missing_cols = [required[i] for i in range(len(required)) if i not in paired]
    found = sorted(paired)
    closeness = 0.5 * len(found) / len(required)
    rows: _RowDifferences | None = None
    if found:
        rows = _RowDifferences(
            _projected(reference, found) if tolerant is None else None,
            [ref_cols[i] for i in found],
            [act_cols[paired[i]][1] for i in found],
            [required[i] for i in found],
            ordered,
            ignore_duplicates,
        )
        closeness += 0.5 * rows.common

    def text() -> str:
        texts = [*parts]
        texts.extend(
            _columns_not_found(missing_cols, ref_cols, required, act_vars, act_cols, taken)
        )
        if rows is not None:
            texts.extend(rows.texts(" on the columns found" if missing_cols else ""))
        if not texts:
            texts.append("the rows differ")  # not expected: the columns found hold the same rows
        return "; ".join(texts)

    if rows is not None and MIXED in rows.kinds:
        # Rows are shown with the reference column's kind, and an actual value that is no
        # (kind, value) pair fails to show (the caller's TypeError): made now, as before.
        return closeness, text()
    return closeness, text


def select_bound(
    reference: SparqlReference, table: Table, act_vars: list[str], rows: int
) -> tuple[int, float] | None:
    """Upper bounds of what ``_explain_select`` finds against a result of ``rows`` rows, from
    what is known of its columns without reading one: the columns it can pair, and the share
    of rows in common. A column pairs only with one sharing a term; the rows in common hold in a
    paired column only the ``shared`` terms of its ``distinct`` ones, so at least ``distinct -
    shared`` of the reference's rows are not in common. A column not read yet may share any
    term, unless it holds only numbers of a kind no reference column has (``_columns_that_matter``
    leaves it out). ``None`` when the tolerance for numbers may merge terms (a reference column
    of numbers or of mixed kinds)."""
    ref_kinds = _bound_kinds(reference)
    if ref_kinds is None:
        return None
    ref_sets = reference.distinct_terms()
    names = reference.required
    read = table.read
    act_sets = []
    unknown = 0  # (columns not read, which may share any term)
    for var in act_vars:
        column = read.get(var)
        if column is not None:
            act_sets.append((column[0], set(column[1])))  # (``_distinct``, written out)
        elif var in names:
            unknown += 1
        else:
            kinds = table.numbers_only(var)
            if kinds is None or not kinds.isdisjoint(ref_kinds):
                unknown += 1
    found = 0
    common = 0.0
    total = reference.rows
    sharing: set[int] = set()  # (the columns read sharing a term with some column)
    for ref_pair in ref_sets:
        kind, ref_set = ref_pair
        most = min(len(ref_set), rows) if unknown else 0
        for position, act_pair in enumerate(act_sets):
            if act_pair[0] == MIXED:
                shared = _shared(ref_pair, act_pair)
            else:
                shared = len(ref_set & act_pair[1]) if kind == act_pair[0] else 0
            if shared:
                sharing.add(position)
                if shared > most:
                    most = shared
        if most:
            found += 1
            common = max(common, (total - len(ref_set) + most) / total)
    return min(found, len(sharing) + unknown), common


_BOUND_KINDS = "bound kinds"


def _bound_kinds(reference: SparqlReference) -> set[Hashable] | None:
    """The kinds of the reference's columns, or ``None`` when one holds numbers or mixed
    kinds (the tolerance may merge terms: ``select_bound`` gives no bound), found once per
    reference."""
    derived = reference.derived
    kinds: set[Hashable] | None = derived.get(_BOUND_KINDS, derived)
    if kinds is derived:
        kinds = set()
        for kind, _ in reference.columns:
            if kind in (NUMBER, MIXED):
                kinds = None
                break
            kinds.add(kind)
        derived[_BOUND_KINDS] = kinds
    return kinds


def _projected(reference: SparqlReference, found: list[int]) -> dict[tuple[Value, ...], None]:
    """The reference's distinct rows (in order) projected on the columns at ``found``, found
    once per reference and columns."""
    key = tuple(found)
    derived = reference.derived
    rows: dict[tuple[Value, ...], None] | None = derived.get(key)
    if rows is None:
        columns = reference.columns
        rows = derived[key] = dict.fromkeys(zip(*[columns[i][1] for i in found]))
    return rows


def _columns_that_matter(
    ref_kinds: set[Hashable],
    table: Table,
    act_vars: list[str],
    required: list[str],
) -> list[str]:
    """The actual columns an explanation may read: all but the columns of numbers not read yet
    whose kinds no reference column has (they share no value with one, and a column not found
    is shown beside one of its own kind or name). ``ref_kinds``: the reference columns' kinds."""
    if MIXED in ref_kinds:
        return act_vars
    names = set(required)
    out = []
    numbers_only = table.numbers_only  # (a column left out shares no term, read or not)
    for var in act_vars:
        kinds = None if var in names else numbers_only(var)
        if kinds is None or not kinds.isdisjoint(ref_kinds):
            out.append(var)
    return out


def _pair_columns(
    ref_cols: list[tuple[Hashable, list[Value]]],
    act_vars: list[str],
    act_cols: Mapping[str, tuple[Hashable, list[Value]]],
    required: list[str],
) -> tuple[dict[int, str], set[str]]:
    """Each reference column (by position) paired with the actual column sharing most of its
    values, and the actual columns so taken."""
    act_sets = {v: _distinct(*column) for v, column in act_cols.items()}
    return _pair_sets([_distinct(*column) for column in ref_cols], act_vars, act_sets, required)


def _pair_sets(
    ref_sets: list[_Distinct],
    act_vars: list[str],
    act_sets: Mapping[str, _Distinct],
    required: list[str],
) -> tuple[dict[int, str], set[str]]:
    """``_pair_columns`` of the columns' distinct terms (``act_sets``: of the actual columns
    that may share a term with a reference column)."""
    ranked = []  # (share of the reference column's terms, other name, position, i, var)
    for i, ref_pair in enumerate(ref_sets):
        kind, ref_set = ref_pair
        size = len(ref_set)
        name = required[i]
        for position, var in enumerate(act_vars):
            act_pair = act_sets.get(var)
            if act_pair is None:  # a column that shares no value with a reference column
                continue
            if kind == MIXED or act_pair[0] == MIXED:
                shared = _shared(ref_pair, act_pair)
            else:  # one kind on each side (_shared inlined: this runs per pair of columns)
                shared = len(ref_set & act_pair[1]) if kind == act_pair[0] else 0
            if shared:
                ranked.append((-shared / size, var != name, position, i, var))
    ranked.sort()
    paired: dict[int, str] = {}
    taken: set[str] = set()
    for _, _, _, i, var in ranked:
        if i not in paired and var not in taken:
            paired[i] = var
            taken.add(var)
    return paired, taken


def _columns_not_found(
    missing_cols: list[str],
    ref_cols: list[tuple[Hashable, list[Value]]],
    required: list[str],
    act_vars: list[str],
    act_cols: Mapping[str, tuple[Hashable, list[Value]]],
    taken: set[str],
) -> list[str]:
    """One text per required column no actual column holds, showing what the actual column of
    the same name (else the first unpaired one of the same kind) holds instead."""
    texts = []
    for var in missing_cols:
        text = f"column ?{var} not found"
        kind, values = ref_cols[required.index(var)]
        free = [v for v in act_vars if v not in taken]
        like = [v for v in free if v == var] or [
            v for v in free if v in act_cols and act_cols[v][0] == kind
        ]
        if like:
            act_kind, act_values = act_cols[like[0]]
            text += (
                f" (the actual ?{like[0]} holds {_show(act_kind, act_values[0])} where the "
                f"reference has {_show(kind, values[0])})"
            )
            taken.add(like[0])
        texts.append(text)
    return texts


class _RowDifferences:
    """The rows projected on the columns found: the share in common found at once, the rows
    missing and extra when ``texts`` says what differs."""

    __slots__ = (
        "_act_set",
        "_diff",
        "act_found",
        "common",
        "ignore_duplicates",
        "kinds",
        "names",
        "ordered",
        "ref_distinct",
        "ref_found",
    )

    def __init__(
        self,
        ref_distinct: dict[tuple[Value, ...], None] | None,
        ref_found: list[tuple[Hashable, list[Value]]],
        act_found: list[list[Value]],
        names: list[str],
        ordered: bool,
        ignore_duplicates: bool,
    ) -> None:
        """``ref_distinct``: the reference's distinct rows on the columns found, if known."""
        self.ref_found = ref_found
        self.act_found = act_found
        self.kinds = [kind for kind, _ in ref_found]
        self.names = names
        self.ordered = ordered
        self.ignore_duplicates = ignore_duplicates
        self._diff: tuple[list[Any], list[Any], list[Any], list[Any]] | None = None
        if ignore_duplicates and not ordered:
            # As sets: the rows in common, counted in C; which rows differ, when shown.
            if ref_distinct is None:
                ref_distinct = dict.fromkeys(zip(*[values for _, values in ref_found]))
            self.ref_distinct = ref_distinct
            act_set = self._act_set = set(zip(*act_found))
            self.common = len(act_set.intersection(ref_distinct)) / max(
                len(ref_distinct), len(act_set)
            )
        else:
            ref_rows = list(zip(*[values for _, values in ref_found]))
            act_rows = list(zip(*act_found))
            missing, extra, self.common = _missing_and_extra(
                ref_rows, act_rows, ordered, ignore_duplicates
            )
            self._diff = (missing, extra, ref_rows, act_rows)

    def _differences(self) -> tuple[list[Any], list[Any], list[Any], list[Any]]:
        """(rows missing, extra rows, the reference's rows, the actual rows)."""
        if self._diff is None:
            ref_set, act_set = self.ref_distinct, self._act_set
            missing = [r for r in ref_set if r not in act_set]
            extra = [r for r in dict.fromkeys(zip(*self.act_found)) if r not in ref_set]
            self._diff = (missing, extra, [], [])  # (the rows are read only when ordered)
        return self._diff

    def texts(self, on: str) -> list[str]:
        """The rows missing and extra (the first few shown), else the order or the
        repetitions that differ."""
        missing, extra, ref_rows, act_rows = self._differences()
        names, kinds = self.names, self.kinds
        texts = []
        if missing:
            texts.append(_listing(missing, "rows missing", names, kinds, on))
        if extra:
            texts.append(_listing(extra, "extra rows", names, kinds, on))
        # The first row out of place, looked for only when the order is what differs.
        row = None
        if self.ordered and not missing and not extra:
            row = next((r for r, (a, b) in enumerate(zip(ref_rows, act_rows)) if a != b), None)
        if row is not None:
            texts.append(
                f"rows in another order (ordered): row {row + 1} is "
                f"{_show_row(act_rows[row], names, kinds)}, "
                f"expected {_show_row(ref_rows[row], names, kinds)}"
            )
        elif not self.ignore_duplicates and (missing or extra) and set(ref_rows) == set(act_rows):
            texts.append("the same rows, repeated a different number of times")
        return texts


def _show_row(row: tuple[Value, ...], names: list[str], kinds: list[Hashable]) -> str:
    """``name=value`` for each column found, as an explanation shows a row."""
    return " ".join([f"{n}={_show(k, v)}" for n, k, v in zip(names, kinds, row)])


def _listing(
    rows: list[tuple[Value, ...]], what: str, names: list[str], kinds: list[Hashable], on: str
) -> str:
    """``2 rows missing: ...``: the count and the first few rows."""
    shown = "; ".join([_show_row(r, names, kinds) for r in rows[:_SHOWN_ROWS]])
    more = f"; and {len(rows) - _SHOWN_ROWS} more" if len(rows) > _SHOWN_ROWS else ""
    return f"{_rows_list(len(rows), what)}{on}: {shown}{more}"


def _missing_and_extra(
    ref_rows: list[tuple[Value, ...]],
    act_rows: list[tuple[Value, ...]],
    ordered: bool,
    ignore_duplicates: bool,
) -> tuple[list[tuple[Value, ...]], list[tuple[Value, ...]], float]:
    """(rows missing, extra rows, share in common): as sets when duplicates are ignored and the
    order is not, else as multisets."""
    if ignore_duplicates and not ordered:
        # Each side's distinct rows, in order, hashed once; the rows in common are the distinct
        # reference rows not missing (row equality is an equivalence).
        ref_set, act_set = dict.fromkeys(ref_rows), dict.fromkeys(act_rows)
        missing = [r for r in ref_set if r not in act_set]
        extra = [r for r in act_set if r not in ref_set]
        return missing, extra, (len(ref_set) - len(missing)) / max(len(ref_set), len(act_set))
    ref_count, act_count = Counter(ref_rows), Counter(act_rows)
    missing = list((ref_count - act_count).elements())
    extra = list((act_count - ref_count).elements())
    return missing, extra, sum((ref_count & act_count).values()) / max(len(ref_rows), len(act_rows))
