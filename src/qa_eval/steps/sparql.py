"""Compare SPARQL SELECT / ASK results (application/sparql-results+json).

Definition (QA-evaluation README of graphrag-eval, "SPARQL queries comparison"): the actual result
matches the reference when some injective mapping of the reference's ``required_columns`` onto the
actual result's columns makes the projected rows equal:

* ``ordered: true``  - the row sequences are equal;
* ``ordered: false`` and ``ignore_duplicates: true`` (default) - the row sets are equal;
* ``ordered: false`` and ``ignore_duplicates: false`` - the row multisets are equal.

Reference columns not listed in ``required_columns`` are optional and ignored; extra actual columns
are ignored. ASK results match when both booleans are equal. Edge cases follow the original: both
results empty -> 1.0 when the actual result has at least as many columns as are required; one of
them empty -> 0.0; no required columns -> 1.0. The score is 1.0 or 0.0.

Where qa-eval is stricter or more exact than the original (see docs/compatibility.md):

* A row is a tuple of RDF terms, not the concatenation of their strings, so ("ab", "c") and
  ("a", "bc") are different rows.
* Terms are typed: an IRI never equals a literal with the same text; a language-tagged literal
  equals only a literal with the same (case-insensitive) tag; a plain literal equals an
  ``xsd:string`` literal (RDF 1.1).
* Numeric literals of every XSD numeric type compare by value, so ``1``^^xsd:integer equals
  ``1.0``^^xsd:decimal. A decimal, double or float value equals another number when they differ
  by at most 1e-8 (the README's precision), or by at most 1e-15 of the larger magnitude, where
  doubles cannot resolve 1e-8 (beyond 10^7); two integers compare exactly. Values closer than
  that are chained within a column (single linkage), so equality stays an equivalence. ``INF``,
  ``-INF`` and ``NaN`` are values like any other: NaN equals NaN here, since the two results hold
  the same term.
* Blank nodes are scoped to one result, so any blank node equals any other.

Algorithm: each column is read at most once into a vector of canonical values; a reference's
required columns are read when the dataset loads (``prepare_reference``). In a result of more than
64 rows an actual column is first tried on its first 16 cells: each must have the reference
column's kind (IRI, number, ...) and occur in the reference column (at the same row, when
ordered), or the column cannot match and is never read in full. In a smaller result the
candidates for a reference column are the actual columns whose first cell has its kind. When that
leaves one candidate per reference column, all different (the common case), one projection of
the candidates decides. Otherwise a reference column can only map
to a candidate whose whole column has the same sequence (ordered), set (set semantics) or multiset
(bag semantics) of values, and the mapping is found by backtracking over those, checking the
partial projection after each step: O(rows x columns) overall, instead of the original's
enumeration of every permutation of every column subset.

Numbers are hashed by their exact value, so the search above is exact-value equality. Only when
it finds no mapping and some non-integer number has a neighbour within the tolerance (one sort of
the distinct numbers of both results) are the numbers of each chain of close values replaced by
one representative and the search run again, without the sampling shortcut.
"""

from __future__ import annotations

import functools
import gc
import math
from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import itemgetter
from typing import Any, cast

from ..errors import short_repr

__all__ = [
    "ABS_TOLERANCE",
    "REL_TOLERANCE",
    "SparqlReference",
    "SparqlResultError",
    "compare_sparql_results",
    "explain_sparql_results",
    "numbers_close",
    "parse_sparql_json",
    "prepare_reference",
]

XSD = "http://www.w3.org/2001/XMLSchema#"
ABS_TOLERANCE = 1e-8
"""Two numbers (not both integers) are equal when they differ by at most this much..."""
REL_TOLERANCE = 1e-15
"""... or by at most this share of the larger magnitude (beyond 10^7, where doubles are coarser
than 1e-8)."""

_INTEGER_TYPES = frozenset(
    XSD + t
    for t in (
        "integer",
        "int",
        "long",
        "short",
        "byte",
        "nonNegativeInteger",
        "positiveInteger",
        "nonPositiveInteger",
        "negativeInteger",
        "unsignedLong",
        "unsignedInt",
        "unsignedShort",
        "unsignedByte",
    )
)
_REAL_TYPES = frozenset(XSD + t for t in ("decimal", "double", "float"))
_STRING_TYPE = XSD + "string"
_BOOLEAN_TYPE = XSD + "boolean"
_NAN = ("NaN",)  # NaN is not equal to itself; this stand-in is.

# Column kinds. A column whose cells all share one kind keeps bare values; any other column
# keeps (kind, value) pairs per cell. Two columns can only be equal if their kinds are equal.
_IRI = "iri"
_LITERAL = "literal"
_NUMBER = "number"
_BOOLEAN = "boolean"
_BNODE = "bnode"
_UNBOUND = "unbound"
_UNBOUND_PAIR = (_UNBOUND, None)
_MIXED = "mixed"
_VALUE = itemgetter("value")
_TYPE = itemgetter("type")
_DATATYPE = itemgetter("datatype")
_URI_ONLY = {"uri"}
_LITERAL_ONLY = {"literal"}
_TWO = {2}
_THREE = {3}

Value = Hashable


class SparqlResultError(ValueError):
    """A SPARQL JSON result that does not have the shape the format requires."""


def parse_sparql_json(data: Any) -> dict[str, Any]:
    """Check that ``data`` is a SPARQL JSON result (SELECT or ASK) and return it: a ``boolean``,
    or ``results.bindings``, a list of objects, with ``head.vars``, if given, a list of strings.
    The terms are checked when their columns are read (``SparqlResultError`` then)."""
    if not isinstance(data, dict):
        raise SparqlResultError(f"expected a JSON object, got {_type_name(data)}")
    if "boolean" in data:
        if not isinstance(data["boolean"], bool):
            raise SparqlResultError("'boolean' must be true or false")
        return data
    results = data.get("results")
    if not isinstance(results, dict) or not isinstance(results.get("bindings"), list):
        raise SparqlResultError("missing 'results.bindings' list (and no 'boolean')")
    bindings = results["bindings"]
    if not all(map(isinstance, bindings, repeat(dict))):
        row = next(i for i, b in enumerate(bindings) if not isinstance(b, dict))
        raise SparqlResultError(
            f"results.bindings[{row}]: a binding must be an object, got {_type_name(bindings[row])}"
        )
    head = data.get("head", {})
    if not isinstance(head, dict) or not isinstance(head.get("vars", []), list):
        raise SparqlResultError("'head.vars' must be a list")
    for position, var in enumerate(head.get("vars", ())):
        if not isinstance(var, str):
            raise SparqlResultError(
                f"head.vars[{position}]: a variable name must be a string, got {_type_name(var)}"
            )
    return data


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _real(text: str) -> Value:
    number = float(text)  # accepts INF, -INF, NaN as XSD writes them
    if math.isnan(number):
        return _NAN
    if math.isinf(number):
        return number
    # An integral value is stored as int so that it equals and hashes like an xsd:integer.
    return int(number) if number.is_integer() else number


def _term(term: Any) -> tuple[Hashable, Value]:
    """Return (kind, canonical value) of one SPARQL JSON term."""
    if not isinstance(term, dict):
        raise SparqlResultError(f"a term must be an object, got {_type_name(term)}")
    term_type = term.get("type")
    value = term.get("value")
    if not isinstance(value, str):
        raise SparqlResultError(f"a term's 'value' must be a string, got {_type_name(value)}")
    if term_type == "uri":
        return _IRI, value
    if term_type == "bnode":
        return _BNODE, ""
    if term_type not in ("literal", "typed-literal"):
        if not isinstance(term_type, str):
            raise SparqlResultError(
                f"a term's 'type' must be a string, got {_type_name(term_type)}"
            )
        raise SparqlResultError(f"unknown term type {short_repr(term_type)}")
    lang = term.get("xml:lang")
    if lang is not None and not isinstance(lang, str):
        raise SparqlResultError(f"a term's 'xml:lang' must be a string, got {_type_name(lang)}")
    datatype = term.get("datatype")
    if datatype is not None and not isinstance(datatype, str):
        raise SparqlResultError(f"a term's 'datatype' must be a string, got {_type_name(datatype)}")
    if lang:
        return ("lang", lang.lower()), value
    if not datatype or datatype == _STRING_TYPE:
        return _LITERAL, value
    try:
        if datatype in _INTEGER_TYPES:
            return _NUMBER, int(value.strip())
        if datatype in _REAL_TYPES:
            return _NUMBER, _real(value.strip())
    except ValueError:
        return ("ill-typed", datatype), value
    if datatype == _BOOLEAN_TYPE:
        text = value.strip()
        if text in ("true", "1"):
            return _BOOLEAN, True
        if text in ("false", "0"):
            return _BOOLEAN, False
        return ("ill-typed", datatype), value
    return ("typed", datatype), value


def _located_term(term: Any, row: int, var: str) -> tuple[Hashable, Value]:
    """``_term``, its error naming the row and the variable."""
    try:
        return _term(term)
    except SparqlResultError as e:
        raise SparqlResultError(f"results.bindings[{row}].{var}: {e}") from None


def _reals(texts: list[str]) -> list[Value]:
    """``_real`` of every text, in C-level passes when no value is NaN or infinite."""
    numbers = list(map(float, texts))
    if not all(map(math.isfinite, numbers)):
        return list(map(_real, texts))
    return [int(n) if n.is_integer() else n for n in numbers]


def _typed_column(cells: list[Any], values: list[Any]) -> tuple[Hashable, list[Value]] | None:
    """A column of literals that all have the same datatype, read in bulk; ``None`` when it
    is not one (a language tag, mixed datatypes, an ill-typed value): the caller reads it term
    by term."""
    try:
        datatypes = set(map(_DATATYPE, cells))
    except (KeyError, TypeError):  # TypeError: an unhashable datatype, reported term by term
        return None
    if len(datatypes) != 1:
        return None
    datatype = datatypes.pop()
    if not isinstance(datatype, str) or not _all_strings(values):
        return None
    try:
        if datatype in _INTEGER_TYPES:
            return _NUMBER, list(map(int, values))  # int() ignores surrounding white space
        if datatype in _REAL_TYPES:
            return _NUMBER, _reals(values)
    except ValueError:
        return None
    if datatype == _STRING_TYPE or not datatype:
        return _LITERAL, values
    if datatype == _BOOLEAN_TYPE:
        return None
    return ("typed", datatype), values


def _all_strings(values: list[Any]) -> bool:
    """Whether every value is a string: ``str.join`` checks them in one C loop, three times
    faster than collecting their types."""
    try:
        "".join(values)
    except TypeError:
        return False
    return True


def _column(bindings: Sequence[Mapping[str, Any]], var: str) -> tuple[Hashable, list[Value]]:
    """Read one column: its kind and the canonical value of every row."""
    try:
        cells = list(map(itemgetter(var), bindings))
    except KeyError:  # some rows leave the variable unbound
        cells = [b.get(var) for b in bindings]
    except TypeError:  # parse_sparql_json checks the bindings; this is for direct callers
        raise SparqlResultError("every binding must be an object") from None
    # Fast path, all in C-level passes: a column of IRIs (other keys do not matter), of plain
    # literals (no key but type and value) or of literals of one datatype.
    try:
        types = set(map(_TYPE, cells))
        values = list(map(_VALUE, cells))
    except (TypeError, KeyError):
        pass
    else:
        strings = _all_strings(values)
        if types == _URI_ONLY and strings:
            return _IRI, values
        if types == _LITERAL_ONLY:
            sizes = set(map(len, cells))
            if sizes == _TWO and strings:
                return _LITERAL, values
            if sizes == _THREE:
                typed = _typed_column(cells, values)
                if typed is not None:
                    return typed
    kinds: set[Hashable] = set()
    pairs: list[tuple[Hashable, Value]] = []
    for row, cell in enumerate(cells):
        pair = _UNBOUND_PAIR if cell is None else _located_term(cell, row, var)
        kinds.add(pair[0])
        pairs.append(pair)
    if len(kinds) == 1:
        return kinds.pop(), [value for _, value in pairs]
    return _MIXED, cast(list[Value], pairs)  # the (kind, value) pairs are the values


class _Table:
    """The columns of one result, read lazily and at most once each."""

    def __init__(self, bindings: Sequence[Mapping[str, Any]]) -> None:
        self.bindings = bindings
        self._columns: dict[str, tuple[Hashable, list[Value]]] = {}

    def first_kind(self, var: str) -> Hashable:
        """The kind of the column's first cell (the column's kind unless it is mixed)."""
        if var in self._columns:
            return self._columns[var][0]
        first = self.bindings[0].get(var) if self.bindings else None
        return _UNBOUND if first is None else _located_term(first, 0, var)[0]

    def column(self, var: str) -> tuple[Hashable, list[Value]]:
        if var not in self._columns:
            self._columns[var] = _column(self.bindings, var)
        return self._columns[var]


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


@dataclass(slots=True)
class SparqlReference:
    """A reference result reduced to what the comparison reads: the ASK boolean, or the number
    of rows and the required columns read once (kind and canonical values). The reference's
    parsed JSON need not be kept: a prepared dataset holds only these vectors."""

    boolean: bool | None
    rows: int
    required: list[str]
    columns: list[tuple[Hashable, list[Value]]]


def prepare_reference(
    reference: Mapping[str, Any], required_columns: Sequence[str]
) -> SparqlReference:
    """Read a checked reference result (see ``parse_sparql_json``) for comparisons;
    ``SparqlResultError`` when a required column holds a term that is not valid."""
    required = list(dict.fromkeys(required_columns))
    if "boolean" in reference:
        return SparqlReference(reference["boolean"], 0, required, [])
    bindings = reference["results"]["bindings"]
    table = _Table(bindings)
    columns = [table.column(v) for v in required] if bindings and required else []
    return SparqlReference(None, len(bindings), required, columns)


def compare_sparql_results(
    reference: Mapping[str, Any] | SparqlReference,
    actual: Mapping[str, Any],
    required_columns: Sequence[str] = (),
    ordered: bool = False,
    ignore_duplicates: bool = True,
    *,
    checked: bool = False,
) -> float:
    """Score an actual SPARQL JSON result against the reference: 1.0 if they match, else 0.0.

    ``reference`` is a parsed result with ``required_columns``, or a ``SparqlReference``
    (which carries its required columns). ``SparqlResultError`` when a result is malformed;
    ``checked``: ``actual`` has passed ``parse_sparql_json`` already."""
    if not checked:
        actual = parse_sparql_json(actual)
    # Reading columns allocates a value per cell and no cycles: with the collector paused a
    # 100k-row table compares about a quarter faster.
    collecting = gc.isenabled()
    gc.disable()
    try:
        if not isinstance(reference, SparqlReference):
            reference = prepare_reference(parse_sparql_json(reference), required_columns)
        return _compare(reference, actual, ordered, ignore_duplicates)
    finally:
        if collecting:
            gc.enable()


def _compare(
    reference: SparqlReference,
    actual: Mapping[str, Any],
    ordered: bool,
    ignore_duplicates: bool,
) -> float:
    if reference.boolean is not None:
        return float("boolean" in actual and actual["boolean"] == reference.boolean)
    if "boolean" in actual:
        return 0.0
    ref_rows = reference.rows
    act_bindings = actual.get("results", {}).get("bindings", [])
    act_vars = list(dict.fromkeys(actual.get("head", {}).get("vars", [])))
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
    try:
        table = _Table(act_bindings)
        mapping = _find_mapping(
            reference.columns, required, table, act_vars, ordered, ignore_duplicates
        )
        if mapping is None:
            tolerant = _tolerant(reference.columns, table, act_vars)
            if tolerant is not None:
                ref_cols, table = tolerant
                mapping = _find_mapping(
                    ref_cols, required, table, act_vars, ordered, ignore_duplicates, sample=False
                )
    except TypeError:  # an unhashable 'value' (a JSON array or object)
        raise SparqlResultError("a term's 'value' must be a string") from None
    return float(mapping is not None)


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
    if kind == _NUMBER:
        return values
    if kind == _MIXED:
        return [v for k, v in cast(list[tuple[Hashable, Value]], values) if k == _NUMBER]
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
    if kind == _NUMBER:
        return kind, [get(v, v) for v in values]
    if kind == _MIXED:
        pairs = cast(list[tuple[Hashable, Value]], values)
        return kind, cast(
            list[Value], [(k, get(v, v)) if k == _NUMBER else (k, v) for k, v in pairs]
        )
    return column


def _tolerant(
    ref_cols: list[tuple[Hashable, list[Value]]], act: _Table, act_vars: list[str]
) -> tuple[list[tuple[Hashable, list[Value]]], _Table] | None:
    """The reference columns and the actual table with every chain of close numbers replaced
    by one representative; ``None`` when that changes nothing (no two numbers are close)."""
    ref_kinds = {kind for kind, _ in ref_cols}
    if _NUMBER not in ref_kinds and _MIXED not in ref_kinds:
        return None
    if _MIXED in ref_kinds:
        act_numeric = act_vars
    else:  # only a column of numbers can pair with a column of numbers
        act_numeric = [v for v in act_vars if act.first_kind(v) == _NUMBER]
    act_cols = {v: act.column(v) for v in act_numeric}
    remap = _chains([*ref_cols, *act_cols.values()])
    if not remap:
        return None
    table = _Table(act.bindings)
    table._columns = {v: _remapped(column, remap) for v, column in act_cols.items()}
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
    if ref_kind == _MIXED:
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
    ref_cols: list[tuple[Hashable, list[Value]]], act: _Table, pool: list[str], ordered: bool
) -> list[list[str]] | None:
    """For each reference column, the actual columns whose first cells fit it; ``None`` when
    some reference column has none. A column of other values fails on its first cell, so only
    the columns that can match are read in full later."""
    head = act.bindings[:_SAMPLE]
    samples = {
        var: [
            _UNBOUND_PAIR if (cell := b.get(var)) is None else _located_term(cell, row, var)
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


def _find_mapping(
    ref_cols: list[tuple[Hashable, list[Value]]],
    ref_vars: list[str],
    act: _Table,
    act_vars: list[str],
    ordered: bool,
    ignore_duplicates: bool,
    sample: bool = True,
) -> list[str] | None:
    """Return actual column names for ``ref_vars`` under which the results match, or None;
    ``sample``: rule columns out on their first cells as read from the bindings."""
    ref_kinds = {kind for kind, _ in ref_cols}
    mixed = _MIXED in ref_kinds
    first = {} if mixed else {v: act.first_kind(v) for v in act_vars}
    pool = act_vars if mixed else [v for v in act_vars if first[v] in ref_kinds]
    rows: Callable[[Sequence[list[Value]]], Any] = lambda cols: _rows(  # noqa: E731
        cols, ordered, ignore_duplicates
    )
    shortlist: list[list[str]] | None = None  # candidates per reference column
    if sample and len(act.bindings) > _SAMPLE_ABOVE:
        shortlist = _sampled_candidates(ref_cols, act, pool, ordered)
        if shortlist is None:
            return None
    elif not mixed:
        # A column of one kind can only be the column whose first cell has that kind.
        shortlist = [[v for v in pool if first[v] == kind] for kind, _ in ref_cols]
        if not all(shortlist):
            return None
    if shortlist is not None:
        # The common case: one candidate per column, all different - one projection decides.
        if all(len(c) == 1 for c in shortlist) and len({c[0] for c in shortlist}) == len(ref_vars):
            picked = [c[0] for c in shortlist]
            columns = [act.column(v) for v in picked]
            if any(a[0] != r[0] for a, r in zip(columns, ref_cols)):
                return None
            same = rows([values for _, values in ref_cols]) == rows([v for _, v in columns])
            return picked if same else None
        pool = list(dict.fromkeys(v for found in shortlist for v in found))
    # Keep the candidates whose whole column has the reference column's values.
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
    # Most constrained column first keeps the search small.
    order = sorted(range(len(ref_vars)), key=lambda i: len(candidates[i]))
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
    mapping = [""] * len(ref_vars)
    for position, index in enumerate(order):
        mapping[index] = chosen[position]
    return mapping


# Explanations: why a result does not match (read only for reference steps left unmatched).

_SHOWN_ROWS = 3
_SHOWN_CHARS = 60


def _shown(text: str) -> str:
    text = " ".join(text.split())  # one line
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 1] + "…"


def _show(kind: Hashable, value: Value) -> str:
    """A canonical value as a user reads it: <iri>, "text", "text"@en, 12.5, true."""
    if kind == _MIXED:
        pair = cast(tuple[Hashable, Value], value)
        return _show(pair[0], pair[1])
    if kind == _IRI:
        return "<" + _shown(str(value)) + ">"
    if kind == _NUMBER:
        return "NaN" if value == _NAN else repr(value)
    if kind == _BOOLEAN:
        return "true" if value else "false"
    if kind == _BNODE:
        return "_:blank"
    if kind == _UNBOUND:
        return "(unbound)"
    text = '"' + _shown(str(value)) + '"'
    if isinstance(kind, tuple) and kind[0] == "lang":
        return f"{text}@{kind[1]}"
    if isinstance(kind, tuple):  # typed or ill-typed literal
        return f"{text}^^<{_shown(str(kind[1]))}>"
    return text


def _pairs(kind: Hashable, values: list[Value]) -> set[tuple[Hashable, Value]]:
    if kind == _MIXED:
        return set(cast(list[tuple[Hashable, Value]], values))
    return {(kind, v) for v in set(values)}


def _rows_list(count: int, what: str) -> str:
    """``2 rows missing``, ``1 row missing``, ``1 extra row``."""
    return f"{count} {what}" if count != 1 else f"1 {what.replace('rows', 'row')}"


def explain_sparql_results(
    reference: SparqlReference,
    actual: Mapping[str, Any],
    ordered: bool = False,
    ignore_duplicates: bool = True,
) -> tuple[float, str]:
    """Why a checked actual result does not match the reference, for a user: the required
    columns no actual column holds, rows missing and extra (the first few shown), order, ASK.
    Returns (closeness 0-1, to pick the closest of several candidates, the text)."""
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
    named = ", ".join("?" + v for v in required)
    if not reference.rows and not act_bindings:
        return 0.5, (
            f"no rows on either side, but the actual result has {len(act_vars)} columns and "
            f"{len(required)} are required ({named})"
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
            f"{len(required)} are required ({named})"
        )
    try:
        return _explain_select(reference, act_bindings, act_vars, ordered, ignore_duplicates, parts)
    except TypeError:  # an unhashable 'value'
        return 0.0, "a term's 'value' is not a string"


def _explain_select(
    reference: SparqlReference,
    act_bindings: Sequence[Mapping[str, Any]],
    act_vars: list[str],
    ordered: bool,
    ignore_duplicates: bool,
    parts: list[str],
) -> tuple[float, str]:
    table = _Table(act_bindings)
    ref_cols = reference.columns
    act_cols = {v: table.column(v) for v in act_vars}
    tolerant = _tolerant(ref_cols, table, act_vars)
    if tolerant is not None:
        ref_cols, table = tolerant
        act_cols = {v: table.column(v) for v in act_vars}
    required = reference.required
    # Pair each reference column with the actual column sharing most of its values.
    act_pairs = {v: _pairs(*column) for v, column in act_cols.items()}
    ranked = sorted(
        (share, same, position, i, var)
        for i, column in enumerate(ref_cols)
        for share, same, position, var in _options_for(i, column, act_vars, act_pairs, required)
    )
    paired: dict[int, str] = {}
    taken: set[str] = set()
    for _, _, _, i, var in ranked:
        if i not in paired and var not in taken:
            paired[i] = var
            taken.add(var)
    missing_cols = [required[i] for i in range(len(required)) if i not in paired]
    if missing_cols:
        for var in missing_cols:
            text = f"column ?{var} not found"
            kind, values = ref_cols[required.index(var)]
            # The actual column of the same name, else the first unpaired one of the same kind.
            free = [v for v in act_vars if v not in taken]
            like = [v for v in free if v == var] or [v for v in free if act_cols[v][0] == kind]
            if like:
                act_kind, act_values = act_cols[like[0]]
                text += (
                    f" (the actual ?{like[0]} holds {_show(act_kind, act_values[0])} where the "
                    f"reference has {_show(kind, values[0])})"
                )
                taken.add(like[0])
            parts.append(text)
    found = sorted(paired)
    closeness = 0.5 * len(found) / len(required)
    if found:
        ref_rows = list(zip(*(ref_cols[i][1] for i in found)))
        act_rows = list(zip(*(act_cols[paired[i]][1] for i in found)))
        kinds = [ref_cols[i][0] for i in found]
        names = [required[i] for i in found]

        def show_row(row: tuple[Value, ...]) -> str:
            return " ".join(f"{n}={_show(k, v)}" for n, k, v in zip(names, kinds, row))

        on = " on the columns found" if missing_cols else ""

        def listing(rows: list[tuple[Value, ...]], what: str) -> str:
            shown = "; ".join(show_row(r) for r in rows[:_SHOWN_ROWS])
            more = f"; and {len(rows) - _SHOWN_ROWS} more" if len(rows) > _SHOWN_ROWS else ""
            return f"{_rows_list(len(rows), what)}{on}: {shown}{more}"

        if ignore_duplicates and not ordered:
            ref_set, act_set = set(ref_rows), set(act_rows)
            missing = [r for r in dict.fromkeys(ref_rows) if r not in act_set]
            extra = [r for r in dict.fromkeys(act_rows) if r not in ref_set]
            common = len(ref_set & act_set) / max(len(ref_set), len(act_set))
        else:
            ref_count, act_count = Counter(ref_rows), Counter(act_rows)
            missing = list((ref_count - act_count).elements())
            extra = list((act_count - ref_count).elements())
            common = sum((ref_count & act_count).values()) / max(len(ref_rows), len(act_rows))
        closeness += 0.5 * common
        if missing:
            parts.append(listing(missing, "rows missing"))
        if extra:
            parts.append(listing(extra, "extra rows"))
        row = next((r for r, (a, b) in enumerate(zip(ref_rows, act_rows)) if a != b), None)
        if ordered and not missing and not extra and row is not None:
            parts.append(
                f"rows in another order (ordered): row {row + 1} is {show_row(act_rows[row])}, "
                f"expected {show_row(ref_rows[row])}"
            )
        elif not ignore_duplicates and (missing or extra) and set(ref_rows) == set(act_rows):
            parts.append("the same rows, repeated a different number of times")
    if not parts:
        parts.append("the rows differ")  # not expected: the columns found hold the same rows
    return closeness, "; ".join(parts)


def _options_for(
    i: int,
    column: tuple[Hashable, list[Value]],
    act_vars: list[str],
    act_pairs: Mapping[str, set[tuple[Hashable, Value]]],
    required: list[str],
) -> list[tuple[float, bool, int, str]]:
    ref_pairs = _pairs(*column)
    options = []
    for position, var in enumerate(act_vars):
        shared = len(ref_pairs & act_pairs[var])
        if shared:
            options.append((-shared / len(ref_pairs), var != required[i], position, var))
    return options
