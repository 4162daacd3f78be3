"""The matching of a SPARQL result against a reference (``steps.sparql`` describes it): the
reference's required columns prepared once, the injective mapping of them onto the actual
columns found by sampling, candidates and backtracking, and the tolerant second pass for numbers
that differ by less than the tolerance.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import math
from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from operator import itemgetter
from typing import Any, cast

from ...vocabulary.frozen import FACTORY, Mutable, slotted
from .terms import (
    MIXED,
    NUMBER,
    UNBOUND_PAIR,
    SparqlResultError,
    Table,
    Value,
    located_term,
    parse_sparql_json,
    read_columns,
)

__all__ = [
    "ABS_TOLERANCE",
    "REL_TOLERANCE",
    "SparqlReference",
    "boolean_score",
    "compare_sparql_results",
    "numbers_close",
    "prepare_reference",
    "select_score",
    "tolerant_columns",
]

ABS_TOLERANCE = 1e-8
"""Two numbers (not both integers) are equal when they differ by at most this much..."""
REL_TOLERANCE = 1e-15
"""... or by at most this share of the larger magnitude (beyond 10^7, where doubles are coarser
than 1e-8)."""


def _signature(values: list[Value], ordered: bool, ignore_duplicates: bool) -> Hashable:
    if ordered:
        return tuple(values)
    if ignore_duplicates:
        return frozenset(values)
    return frozenset(Counter(values).items())


def _rows(columns: Sequence[list[Value]], ordered: bool, ignore_duplicates: bool) -> Any:
    rows = zip(*columns)
    if ordered:
        return list(rows)
    if ignore_duplicates:
        return set(rows)
    return Counter(rows)


@slotted
class SparqlReference(Mutable):
    """A reference result reduced to what the comparison reads: the ASK boolean, or the number
    of rows and the required columns read once (kind and canonical values). The reference's
    parsed JSON need not be kept: a prepared dataset holds only these vectors."""

    boolean: bool | None
    rows: int
    required: list[str]
    columns: list[tuple[Hashable, list[Value]]]
    derived: dict[Hashable, Any] = dataclasses.field(
        default_factory=dict, repr=False, compare=False
    )
    """What explanations derive from the columns (their distinct terms, the rows projected on
    some of them), filled when first needed: a reference step is explained against several
    candidates, and its hint and bounds read the same."""

    def __init__(
        self,
        boolean: bool | None,
        rows: int,
        required: list[str],
        columns: list[tuple[Hashable, list[Value]]],
        derived: dict[Hashable, Any] = FACTORY,
    ) -> None:
        # The fields in order, as @dataclass would write it (see qa_eval.vocabulary.frozen).
        self.boolean = boolean
        self.rows = rows
        self.required = required
        self.columns = columns
        self.derived = {} if derived is FACTORY else derived

    def distinct_terms(self) -> list[tuple[Hashable, frozenset[Value]]]:
        """Each column's kind and distinct terms (its (kind, value) pairs when mixed), found
        once for the hints, bounds and explanations that read them."""
        derived = self.derived
        terms: list[tuple[Hashable, frozenset[Value]]] | None = derived.get(_TERMS)
        if terms is None:
            terms = derived[_TERMS] = [(kind, frozenset(values)) for kind, values in self.columns]
        return terms


_TERMS = "distinct terms"


def prepare_reference(
    reference: Mapping[str, Any], required_columns: Sequence[str]
) -> SparqlReference:
    """Read a checked reference result (see ``parse_sparql_json``) for comparisons;
    ``SparqlResultError`` when a required column holds a term that is not valid."""
    if len(required_columns) < 2:  # (none repeated: the copy made without a dict)
        required = [*required_columns]
    else:
        required = list(dict.fromkeys(required_columns))
    # The fields set here, as SparqlReference.__init__ sets them: a class's __init__ called
    # from C (type.__call__) cost a fifth of preparing a small reference (once per SPARQL step
    # of the reference dataset).
    prepared = _new(SparqlReference)
    prepared.required = required
    prepared.derived = {}
    if "boolean" in reference:
        prepared.boolean = reference["boolean"]
        prepared.rows = 0
        prepared.columns = []
        return prepared
    bindings = reference["results"]["bindings"]
    prepared.boolean = None
    prepared.rows = len(bindings)
    prepared.columns = read_columns(bindings, required) if bindings and required else []
    return prepared


_new = object.__new__


def compare_sparql_results(
    reference: Mapping[str, Any] | SparqlReference,
    actual: Mapping[str, Any],
    required_columns: Sequence[str] = (),
    ordered: bool = False,
    ignore_duplicates: bool = True,
    *,
    checked: bool = False,
    table: Table | None = None,
) -> float:
    """Score an actual SPARQL JSON result against the reference: 1.0 if they match, else 0.0.

    ``reference`` is a parsed result with ``required_columns``, or a ``SparqlReference``
    (which carries its required columns). ``SparqlResultError`` when a result is malformed;
    ``checked``: ``actual`` has passed ``parse_sparql_json`` already; ``table``: a ``Table``
    of ``actual``'s bindings whose columns this comparison reads and keeps (so that other
    comparisons and the explanation of the same result read each column once)."""
    if not checked:
        actual = parse_sparql_json(actual)
    # Reading columns allocates a value per cell and no cycles: with the collector paused a
    # 100k-row table compares about a quarter faster.
    collecting = gc.isenabled()
    gc.disable()
    try:
        if not isinstance(reference, SparqlReference):
            reference = prepare_reference(parse_sparql_json(reference), required_columns)
        decided = boolean_score(reference, actual)
        if decided is not None:
            return decided
        return select_score(reference, actual, ordered, ignore_duplicates, table)
    finally:
        if collecting:
            gc.enable()


def boolean_score(reference: SparqlReference, actual: Mapping[str, Any]) -> float | None:
    """The score of a checked result against a reference when either is an ASK result (its
    boolean decides, with no column read), else ``None``."""
    if reference.boolean is not None:
        return float("boolean" in actual and actual["boolean"] == reference.boolean)
    if "boolean" in actual:
        return 0.0
    return None


_NOTHING: Mapping[str, Any] = {}


def select_score(
    reference: SparqlReference,
    actual: Mapping[str, Any],
    ordered: bool,
    ignore_duplicates: bool,
    table: Table | None = None,
) -> float:
    """``compare_sparql_results`` of a checked SELECT result against a SELECT reference (neither
    is an ASK result: ``boolean_score`` is ``None``), the collector paused only while a result
    of more than ``_SAMPLE_ABOVE`` rows is compared."""
    ref_rows = reference.rows
    act_bindings = actual.get("results", _NOTHING).get("bindings", ())
    if table is None or table.bindings is not act_bindings:
        table = Table(act_bindings)
    act_vars = actual.get("head", _NOTHING).get("vars", ())
    if len(set(act_vars)) != len(act_vars):  # (a name repeated: counted once)
        act_vars = list(dict.fromkeys(act_vars))
    required = reference.required
    if not ref_rows and not act_bindings:
        return float(len(act_vars) >= len(required))
    if not ref_rows or not act_bindings:
        return 0.0
    if len(required) > len(act_vars):
        return 0.0
    if not required:
        return 1.0
    if ignore_duplicates is False and not ordered and ref_rows != len(act_bindings):
        return 0.0
    if ordered and ref_rows != len(act_bindings):
        return 0.0
    small = len(act_bindings) <= _SAMPLE_ABOVE
    if small:
        try:
            decided = _by_kinds(reference, table, act_vars, ordered, ignore_duplicates)
        except TypeError:  # an unhashable 'value' (a JSON array or object)
            raise SparqlResultError("a term's 'value' must be a string") from None
        if decided is not None:
            return decided
    collecting = not small and gc.isenabled()
    if collecting:
        gc.disable()  # (see compare_sparql_results)
    try:
        mapping = _find_mapping(
            reference.columns, required, table, act_vars, ordered, ignore_duplicates
        )
        if mapping is None:
            tolerant = tolerant_columns(reference.columns, table, act_vars)
            if tolerant is not None:
                ref_cols, table = tolerant
                mapping = _find_mapping(
                    ref_cols, required, table, act_vars, ordered, ignore_duplicates, sample=False
                )
    except TypeError:  # an unhashable 'value' (a JSON array or object)
        raise SparqlResultError("a term's 'value' must be a string") from None
    finally:
        if collecting:
            gc.enable()
    return float(mapping is not None)


def _by_kinds(
    reference: SparqlReference,
    act: Table,
    act_vars: list[str],
    ordered: bool,
    ignore_duplicates: bool,
) -> float | None:
    """``select_score``'s score of a result of at most ``_SAMPLE_ABOVE`` rows (whose columns the
    mapping tells apart by the kind of their first cell, without sampling) when the kinds
    decide it: some reference column's kind is no actual column's (no mapping), or each is
    exactly one actual column's (one projection decides). ``None`` otherwise (a reference
    column of mixed kinds, a kind several actual columns have, a miss the tolerance for numbers
    may turn into a match): the general path decides. The same cells are read, in the same
    order, as ``_find_mapping`` reads them, so the same term errors are raised."""
    ref_cols = reference.columns
    numbers = False
    for kind, _ in ref_cols:
        if kind == MIXED:
            return None  # (the general path reads no first cell then)
        if kind == NUMBER:
            numbers = True
    miss = None if numbers else 0.0  # (no close numbers without numbers)
    # (called from bytecode, not from ``map``: a Python call from C starts a new frame loop)
    kinds = [act.first_kind(var) for var in act_vars]
    picked = []
    for kind, _ in ref_cols:
        count = kinds.count(kind)
        if count != 1:
            if count or numbers:
                return None
            return 0.0  # no actual column of this kind: no mapping, and no close numbers
        picked.append(act_vars[kinds.index(kind)])
    if len(set(picked)) != len(picked):
        return None  # (two reference columns of one kind: the general path searches)
    columns = [act.column(var) for var in picked]
    for (act_kind, act_values), (ref_kind, ref_values) in zip(columns, ref_cols):
        # Equal rows (as lists, multisets or sets) have the same values in each column: a
        # first value missing on either side decides without the rows.
        if (
            act_kind != ref_kind
            or ref_values[0] not in act_values
            or act_values[0] not in ref_values
        ):
            return miss
    ref_lists = [values for _, values in ref_cols]
    act_lists = [values for _, values in columns]
    if ordered or not ignore_duplicates:
        same = _rows(ref_lists, ordered, ignore_duplicates) == _rows(
            act_lists, ordered, ignore_duplicates
        )
    else:  # (the usual rows compared as sets: ``_rows`` written out)
        same = set(zip(*ref_lists)) == set(zip(*act_lists))
    return 1.0 if same else miss


_NO_COLUMN: Any = object()  # (no actual column has the kind)


def numbers_close(a: Any, b: Any) -> bool:
    """Whether two numbers are equal under the tolerance (``ABS_TOLERANCE`` or
    ``REL_TOLERANCE``); two integers only when they are equal."""
    if a == b:
        return True
    if type(a) is int and type(b) is int:
        return False
    try:
        return bool(abs(a - b) <= max(ABS_TOLERANCE, REL_TOLERANCE * max(abs(a), abs(b))))
    except (OverflowError, TypeError):  # an integer beyond the float range; not a number
        return False


def _numbers(kind: Hashable, values: list[Value]) -> list[Value]:
    if kind == NUMBER:
        return values
    if kind == MIXED:
        return [v for k, v in cast(list[tuple[Hashable, Value]], values) if k == NUMBER]
    return []


def _chains(columns: Sequence[tuple[Hashable, list[Value]]]) -> dict[Value, Value]:
    """For each number of the columns that has a neighbour within the tolerance, the first
    number of its chain of close values (the numbers sorted); empty when no two are close."""
    numbers: set[Value] = set()
    for kind, values in columns:
        numbers.update(_numbers(kind, values))
    if float not in set(map(type, numbers)):
        return {}  # integers (and NaN, INF) compare exactly
    finite = sorted(v for v in numbers if type(v) is int or (type(v) is float and math.isfinite(v)))
    remap: dict[Value, Value] = {}
    previous: Any = None
    first: Any = None
    for value in finite:
        if previous is not None and numbers_close(previous, value):
            remap[previous] = first
            remap[value] = first
        else:
            first = value
        previous = value
    return remap


def _remapped(
    column: tuple[Hashable, list[Value]], remap: Mapping[Value, Value]
) -> tuple[Hashable, list[Value]]:
    kind, values = column
    get = remap.get
    if kind == NUMBER:
        return kind, [get(v, v) for v in values]
    if kind == MIXED:
        pairs = cast(list[tuple[Hashable, Value]], values)
        return kind, cast(
            list[Value], [(k, get(v, v)) if k == NUMBER else (k, v) for k, v in pairs]
        )
    return column


def tolerant_columns(
    ref_cols: list[tuple[Hashable, list[Value]]], act: Table, act_vars: list[str]
) -> tuple[list[tuple[Hashable, list[Value]]], Table] | None:
    """The reference columns and the actual table with every chain of close numbers replaced
    by one representative; ``None`` when that changes nothing (no two numbers are close)."""
    ref_kinds = {kind for kind, _ in ref_cols}
    if NUMBER not in ref_kinds and MIXED not in ref_kinds:
        return None
    if MIXED in ref_kinds:
        act_numeric = act_vars
    else:  # only a column of numbers can pair with a column of numbers
        act_numeric = [v for v in act_vars if act.first_kind(v) == NUMBER]
    act_cols = {v: act.column(v) for v in act_numeric}
    remap = _chains([*ref_cols, *act_cols.values()])
    if not remap:
        return None
    table = Table(act.bindings)
    table.read = {v: _remapped(column, remap) for v, column in act_cols.items()}
    return [_remapped(column, remap) for column in ref_cols], table


_SAMPLE = 16
"""Cells of an actual column read term by term to rule it out before it is read in full."""
_SAMPLE_ABOVE = 64
"""Results with at most this many rows are read whole: sampling would not save reading."""


def _sample_fits(
    ref_values: list[Value],
    members: Callable[[], frozenset[Value]],
    ref_kind: Hashable,
    sample: list[tuple[Hashable, Value]],
    ordered: bool,
) -> bool:
    """Whether the first cells of an actual column can belong to the reference column: a
    necessary condition for a match in every mode, since every actual value must occur in the
    reference column (at the same row, when ordered)."""
    if ref_kind == MIXED:
        if ordered:
            return all(pair == ref_values[i] for i, pair in enumerate(sample))
        found = members()
        return all(pair in found for pair in sample)
    if any(kind != ref_kind for kind, _ in sample):
        return False
    if ordered:
        return all(value == ref_values[i] for i, (_, value) in enumerate(sample))
    found = members()
    return all(value in found for _, value in sample)


def _sampled_candidates(
    ref_cols: list[tuple[Hashable, list[Value]]], act: Table, pool: list[str], ordered: bool
) -> list[list[str]] | None:
    """For each reference column, the actual columns whose first cells fit it; ``None`` when
    some reference column has none. A column of other values fails on its first cell, so only
    the columns that can match are read in full later."""
    head = act.bindings[:_SAMPLE]
    samples = {
        var: [
            UNBOUND_PAIR if (cell := b.get(var)) is None else located_term(cell, row, var)
            for row, b in enumerate(head)
        ]
        for var in pool
    }
    candidates: list[list[str]] = []
    for kind, values in ref_cols:
        members: Callable[[], frozenset[Value]] = functools.cache(  # built on first use
            functools.partial(frozenset, values)
        )
        fits = [v for v in pool if _sample_fits(values, members, kind, samples[v], ordered)]
        if not fits:
            return None
        candidates.append(fits)
    return candidates


def _shortlist(
    ref_cols: list[tuple[Hashable, list[Value]]],
    act: Table,
    pool: list[str],
    first: dict[str, Hashable],
    mixed: bool,
    ordered: bool,
    sample: bool,
) -> tuple[bool, list[list[str]] | None]:
    """(whether a match is still possible, the candidates per reference column or ``None`` when
    nothing narrowed them): by sampling first cells, else by the kind of each first cell."""
    if sample and len(act.bindings) > _SAMPLE_ABOVE:
        shortlist = _sampled_candidates(ref_cols, act, pool, ordered)
        return shortlist is not None, shortlist
    if not mixed:
        # A column of one kind can only be the column whose first cell has that kind.
        by_kind = [[v for v in pool if first[v] == kind] for kind, _ in ref_cols]
        return all(by_kind), by_kind
    return True, None


def _single_projection(
    ref_cols: list[tuple[Hashable, list[Value]]],
    act: Table,
    picked: list[str],
    rows: Callable[[Sequence[list[Value]]], Any],
) -> list[str] | None:
    """``picked`` when the actual columns it names hold the reference's rows, else ``None``."""
    columns = list(map(act.column, picked))
    for (act_kind, _), (ref_kind, _) in zip(columns, ref_cols):
        if act_kind != ref_kind:
            return None
    same = rows(list(map(_VALUES, ref_cols))) == rows(list(map(_VALUES, columns)))
    return picked if same else None


def _whole_column_candidates(
    ref_cols: list[tuple[Hashable, list[Value]]],
    ref_kinds: set[Hashable],
    act: Table,
    pool: list[str],
    shortlist: list[list[str]] | None,
    ordered: bool,
    ignore_duplicates: bool,
) -> list[list[str]] | None:
    """For each reference column, the actual columns whose whole column has its values (within
    the shortlist); ``None`` when some reference column has none."""
    by_signature: dict[tuple[Hashable, Hashable], list[str]] = {}
    for var in pool:
        kind, values = act.column(var)
        if kind in ref_kinds:  # a column of another kind can never match: skip its signature
            key = (kind, _signature(values, ordered, ignore_duplicates))
            by_signature.setdefault(key, []).append(var)
    candidates: list[list[str]] = []
    for i, (kind, values) in enumerate(ref_cols):
        found = by_signature.get((kind, _signature(values, ordered, ignore_duplicates)), [])
        if shortlist is not None:
            found = [v for v in found if v in shortlist[i]]
        if not found:
            return None
        candidates.append(found)
    return candidates


def _search_mapping(
    ref_cols: list[tuple[Hashable, list[Value]]],
    act: Table,
    candidates: list[list[str]],
    rows: Callable[[Sequence[list[Value]]], Any],
) -> list[str] | None:
    """The injective choice among ``candidates`` under which the projected rows are equal,
    found by backtracking (most constrained column first), or ``None``."""
    order = sorted(range(len(candidates)), key=lambda i: len(candidates[i]))
    chosen: list[str] = []
    used: set[str] = set()

    def extend(depth: int) -> bool:
        if depth == len(order):
            return True
        index = order[depth]
        for var in candidates[index]:
            if var in used:
                continue
            chosen.append(var)
            used.add(var)
            picked = order[: depth + 1]
            # Projections of equal results onto the same columns are equal: prune early. With a
            # single candidate per column only the full projection needs checking.
            must_check = depth + 1 == len(order) or len(candidates[index]) > 1
            consistent = not must_check or rows([ref_cols[i][1] for i in picked]) == rows(
                [act.column(chosen[k])[1] for k in range(depth + 1)]
            )
            if consistent and extend(depth + 1):
                return True
            chosen.pop()
            used.discard(var)
        return False

    if not extend(0):
        return None
    mapping = [""] * len(candidates)
    for position, index in enumerate(order):
        mapping[index] = chosen[position]
    return mapping


_ONE = frozenset((1,))
_FIRST = itemgetter(0)  # (a column's kind, a list's first item)
_VALUES = itemgetter(1)  # (a column's values)


def _find_mapping(
    ref_cols: list[tuple[Hashable, list[Value]]],
    ref_vars: list[str],
    act: Table,
    act_vars: list[str],
    ordered: bool,
    ignore_duplicates: bool,
    sample: bool = True,
) -> list[str] | None:
    """Return actual column names for ``ref_vars`` under which the results match, or None;
    ``sample``: rule columns out on their first cells as read from the bindings."""
    ref_kinds = set(map(_FIRST, ref_cols))
    mixed = MIXED in ref_kinds
    if mixed:
        first: dict[str, Hashable] = {}
        pool = act_vars
    else:
        first_kind = act.first_kind
        first = dict(zip(act_vars, map(first_kind, act_vars)))  # (in order: the same errors)
        pool = [v for v in act_vars if first[v] in ref_kinds]
    rows: Callable[[Sequence[list[Value]]], Any] = lambda cols: _rows(  # noqa: E731
        cols, ordered, ignore_duplicates
    )
    possible, shortlist = _shortlist(ref_cols, act, pool, first, mixed, ordered, sample)
    if not possible:
        return None
    if shortlist is not None:
        # The common case: one candidate per column, all different - one projection decides.
        if _ONE.issuperset(map(len, shortlist)):  # (every list has one name)
            picked = list(map(_FIRST, shortlist))
            if len(set(picked)) == len(ref_vars):
                return _single_projection(ref_cols, act, picked, rows)
        pool = list(dict.fromkeys(v for found in shortlist for v in found))
    candidates = _whole_column_candidates(
        ref_cols, ref_kinds, act, pool, shortlist, ordered, ignore_duplicates
    )
    if candidates is None:
        return None
    return _search_mapping(ref_cols, act, candidates, rows)


# Explanations: why a result does not match (read only for reference steps left unmatched).
