"""Reading SPARQL JSON results for comparison (``steps.sparql``): the shape the format requires
(:func:`parse_sparql_json`), each term's canonical value (typed: IRIs, literals with their
language, numbers of every XSD numeric type by value, booleans, blank nodes all alike), and the
columns of a result read at most once each into vectors of those values (:class:`Table`).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from itertools import repeat
from operator import itemgetter
from typing import Any, cast

from ...errors import short_repr

__all__ = [
    "BNODE",
    "BOOLEAN",
    "IRI",
    "LITERAL",
    "MIXED",
    "NAN",
    "NUMBER",
    "NUMERIC_TYPES",
    "UNBOUND",
    "UNBOUND_PAIR",
    "SparqlResultError",
    "Table",
    "Value",
    "located_term",
    "parse_sparql_json",
    "read_columns",
]

XSD = "http://www.w3.org/2001/XMLSchema#"
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
NUMERIC_TYPES = _INTEGER_TYPES | _REAL_TYPES
"""The XSD datatypes whose literals are numbers."""
_STRING_TYPE = XSD + "string"
_BOOLEAN_TYPE = XSD + "boolean"
NAN = ("NaN",)  # NaN is not equal to itself; this stand-in is.

# Column kinds. A column whose cells all share one kind keeps bare values; any other column
# keeps (kind, value) pairs per cell. Two columns can only be equal if their kinds are equal.
IRI = "iri"
LITERAL = "literal"
NUMBER = "number"
BOOLEAN = "boolean"
BNODE = "bnode"
UNBOUND = "unbound"
UNBOUND_PAIR = (UNBOUND, None)
MIXED = "mixed"
_VALUE = itemgetter("value")
_TYPE = itemgetter("type")
_DATATYPE = itemgetter("datatype")
_LITERAL_ONLY = {"literal"}
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
    if len(bindings) > _ONE_PASS_ROWS:
        every = all(map(isinstance, bindings, repeat(dict)))
    else:  # (one interpreted loop: faster than a C-level pass over a few)
        every = True
        for binding in bindings:
            if not isinstance(binding, dict):
                every = False
                break
    if not every:
        row = next(i for i, b in enumerate(bindings) if not isinstance(b, dict))
        raise SparqlResultError(
            f"results.bindings[{row}]: a binding must be an object, got {_type_name(bindings[row])}"
        )
    head = data.get("head", _NO_HEAD)
    names = head.get("vars", _NO_NAMES) if isinstance(head, dict) else None
    if not isinstance(names, list):
        raise SparqlResultError("'head.vars' must be a list")
    try:
        "".join(names)  # every name a string, checked in one C loop
    except TypeError:
        position = next(i for i, var in enumerate(names) if not isinstance(var, str))
        raise SparqlResultError(
            f"head.vars[{position}]: a variable name must be a string, "
            f"got {_type_name(names[position])}"
        ) from None
    return data


_NO_HEAD: Mapping[str, Any] = {}
_NO_NAMES: list[str] = []  # (read only)


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _real(text: str) -> Value:
    number = float(text)  # accepts INF, -INF, NaN as XSD writes them
    if math.isnan(number):
        return NAN
    if math.isinf(number):
        return number
    # An integral value is stored as int so that it equals and hashes like an xsd:integer.
    return int(number) if number.is_integer() else number


def read_term(term: Any) -> tuple[Hashable, Value]:
    """Return (kind, canonical value) of one SPARQL JSON term."""
    if not isinstance(term, dict):
        raise SparqlResultError(f"a term must be an object, got {_type_name(term)}")
    term_type = term.get("type")
    value = term.get("value")
    if not isinstance(value, str):
        raise SparqlResultError(f"a term's 'value' must be a string, got {_type_name(value)}")
    if term_type == "uri":
        return IRI, value
    if term_type == "bnode":
        return BNODE, ""
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
        return LITERAL, value
    try:
        if datatype in _INTEGER_TYPES:
            return NUMBER, int(value.strip())
        if datatype in _REAL_TYPES:
            return NUMBER, _real(value.strip())
    except ValueError:
        return ("ill-typed", datatype), value
    if datatype == _BOOLEAN_TYPE:
        text = value.strip()
        if text in ("true", "1"):
            return BOOLEAN, True
        if text in ("false", "0"):
            return BOOLEAN, False
        return ("ill-typed", datatype), value
    return ("typed", datatype), value


def located_term(term: Any, row: int, var: str) -> tuple[Hashable, Value]:
    """``read_term``, its error naming the row and the variable."""
    try:
        return read_term(term)
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
        datatypes = list(map(_DATATYPE, cells))
    except (KeyError, TypeError):
        return None
    datatype = datatypes[0]  # (the caller's cells are not empty)
    if datatypes.count(datatype) != len(datatypes):  # counted in C, no datatype hashed
        return None
    if not isinstance(datatype, str) or not _all_strings(values):
        return None
    return _typed_values(datatype, values)


def _typed_values(datatype: str, values: list[Any]) -> tuple[Hashable, list[Value]] | None:
    """The kind and values of a column of literals of ``datatype``, whose texts are
    ``values``; ``None`` when one is ill-typed, or for booleans (read term by term)."""
    try:
        if datatype in _INTEGER_TYPES:
            return NUMBER, list(map(int, values))  # int() ignores surrounding white space
        if datatype in _REAL_TYPES:
            return NUMBER, _reals(values)
    except ValueError:
        return None
    if datatype == _STRING_TYPE or not datatype:
        return LITERAL, values
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


_ONE_PASS_ROWS = 128
"""Up to this many rows, a column of one usual kind is read in one interpreted pass over its
cells (in ``_column``): 1.5-3 times faster than the C-level passes of ``_column_in_passes``,
which are faster from about 200 rows."""


def _column(bindings: Sequence[Mapping[str, Any]], var: str) -> tuple[Hashable, list[Value]]:
    """Read one column: its kind and the canonical value of every row."""
    if 0 < len(bindings) <= _ONE_PASS_ROWS:
        # A column whose cells are all IRIs, all plain literals (no key but type and value) or
        # all literals of the first cell's datatype, read in one pass (a column of any other
        # cells, a row without the variable, a cell that is not a mapping: read the long way,
        # which gives the same for these).
        try:
            first = bindings[0][var]
            term_type = first["type"]
            values: list[Any] = []
            append = values.append
            if term_type == "uri":
                for binding in bindings:
                    cell = binding[var]
                    value = cell["value"]
                    if cell["type"] != "uri" or type(value) is not str:
                        break
                    append(value)
                else:
                    return IRI, values
            elif term_type == "literal":
                if len(first) == 2:
                    for binding in bindings:
                        cell = binding[var]
                        value = cell["value"]
                        if cell["type"] != "literal" or len(cell) != 2 or type(value) is not str:
                            break
                        append(value)
                    else:
                        return LITERAL, values
                else:
                    datatype = first["datatype"]
                    if len(first) == 3 and type(datatype) is str:
                        typed = _literals_of(bindings, var, datatype)
                        read = None if typed is None else _typed_values(datatype, typed)
                        if read is not None:
                            return read
        except (KeyError, TypeError):
            pass
    return _column_in_passes(bindings, var)


def read_columns(
    bindings: Sequence[Mapping[str, Any]], names: Sequence[str]
) -> list[tuple[Hashable, list[Value]]]:
    """The kind and canonical values of each column named (names not repeated), read without
    a ``Table`` (a reference's required columns are read once, when the dataset loads)."""
    return [_column(bindings, var) for var in names]


def _literals_of(
    bindings: Sequence[Mapping[str, Any]], var: str, datatype: Any
) -> list[Any] | None:
    """The value texts of a column whose cells are all literals of ``datatype`` (no other key),
    read in one pass; None for any other column (``KeyError``/``TypeError`` for a missing cell
    or one that is not a mapping)."""
    values: list[Any] = []
    append = values.append
    for binding in bindings:
        cell = binding[var]
        value = cell["value"]
        if (
            cell["type"] != "literal"
            or len(cell) != 3
            or cell["datatype"] != datatype
            or type(value) is not str
        ):
            return None
        append(value)
    return values


def _column_in_passes(
    bindings: Sequence[Mapping[str, Any]], var: str
) -> tuple[Hashable, list[Value]]:
    """``_column`` read in C-level passes over the column (and term by term when it is not of
    one usual kind)."""
    try:
        cells = list(map(itemgetter(var), bindings))
    except KeyError:  # some rows leave the variable unbound
        cells = [b.get(var) for b in bindings]
    except TypeError:  # parse_sparql_json checks the bindings; this is for direct callers
        raise SparqlResultError("every binding must be an object") from None
    # Fast path, all in C-level passes: a column of IRIs (other keys do not matter), of plain
    # literals (no key but type and value) or of literals of one datatype. The terms' types are
    # counted, not collected: comparing each to "uri" costs less than hashing it.
    try:
        types = list(map(_TYPE, cells))
        values = list(map(_VALUE, cells))
    except (TypeError, KeyError):
        pass
    else:
        strings = _all_strings(values)
        rows = len(cells)
        if rows and types.count("uri") == rows and strings:
            return IRI, values
        if rows and types.count("literal") == rows:
            sizes = list(map(len, cells))
            if sizes.count(2) == rows and strings:
                return LITERAL, values
            if sizes.count(3) == rows:
                typed = _typed_column(cells, values)
                if typed is not None:
                    return typed
    kinds: set[Hashable] = set()
    pairs: list[tuple[Hashable, Value]] = []
    for row, cell in enumerate(cells):
        pair = UNBOUND_PAIR if cell is None else located_term(cell, row, var)
        kinds.add(pair[0])
        pairs.append(pair)
    if len(kinds) == 1:
        return kinds.pop(), [value for _, value in pairs]
    return MIXED, cast(list[Value], pairs)  # the (kind, value) pairs are the values


def _number_kinds_in_passes(
    bindings: Sequence[Mapping[str, Any]], var: str
) -> frozenset[Hashable] | None:
    """``Table.number_kinds`` found in C-level passes over the column."""
    try:
        cells = list(map(itemgetter(var), bindings))
        if set(map(_TYPE, cells)) != _LITERAL_ONLY or set(map(len, cells)) != _THREE:
            return None
        datatypes = set(map(_DATATYPE, cells))
        "".join(map(_VALUE, cells))  # every value is a string
    except (KeyError, TypeError):
        return None
    return _number_kinds(datatypes.pop() if len(datatypes) == 1 else None)


def _number_kinds(datatype: Any) -> frozenset[Hashable] | None:
    """``Table.number_kinds`` of a column of literals that all have ``datatype``."""
    if not isinstance(datatype, str):
        return None
    if datatype not in _INTEGER_TYPES and datatype not in _REAL_TYPES:
        return None
    return frozenset((NUMBER, ("ill-typed", datatype)))


class Table:
    """The columns of one result, read lazily and at most once each."""

    # (slots: an attribute set later on some tables only would turn their shared-key instance
    # dicts into dicts of their own, and every attribute read slower)
    __slots__ = ("_numbers", "bindings", "read")

    def __init__(self, bindings: Sequence[Mapping[str, Any]]) -> None:
        self.bindings = bindings
        self.read: dict[str, tuple[Hashable, list[Value]]] = {}
        """The columns read so far, by name (only read by others)."""
        self._numbers: dict[str, frozenset[Hashable] | None] | None = None  # see numbers_only

    def first_kind(self, var: str) -> Hashable:
        """The kind of the column's first cell (the column's kind unless it is mixed)."""
        column = self.read.get(var)
        if column is not None:
            return column[0]
        first = self.bindings[0].get(var) if self.bindings else None
        if first is None:
            return UNBOUND
        if type(first) is dict and type(first.get("value")) is str:
            # The usual terms, told apart without reading them (as read_term tells them): an
            # IRI, or a plain literal (no key but its type and its value).
            term_type = first.get("type")
            if term_type == "uri":
                return IRI
            if term_type == "literal":
                size = len(first)
                if size == 2:
                    return LITERAL
                datatype = first.get("datatype")
                if size == 3 and type(datatype) is str and datatype in _INTEGER_TYPES:
                    # An integer literal, as read_term reads it (or ill-typed).
                    try:
                        int(first["value"].strip())
                    except ValueError:
                        return ("ill-typed", datatype)
                    return NUMBER
        return located_term(first, 0, var)[0]

    def number_kinds(self, var: str) -> frozenset[Hashable] | None:
        """The kinds a column of numeric literals of one datatype can have (the number, or the
        datatype's ill-typed literal), found without converting a value, for a column not read
        yet whose reading raises no error; ``None`` for any other column."""
        if var in self.read:
            return None
        bindings = self.bindings
        if 0 < len(bindings) <= _ONE_PASS_ROWS:
            try:
                datatype = bindings[0][var]["datatype"]
                if _literals_of(bindings, var, datatype) is not None:  # in one pass
                    return _number_kinds(datatype)
            except (KeyError, TypeError):
                pass  # (the passes tell)
        return _number_kinds_in_passes(bindings, var)

    def column(self, var: str) -> tuple[Hashable, list[Value]]:
        """The column's kind and canonical values, read on first use."""
        column = self.read.get(var)
        if column is None:
            column = self.read[var] = _column(self.bindings, var)
        return column

    def numbers_only(self, var: str) -> frozenset[Hashable] | None:
        """``number_kinds`` as first found (a column read since keeps it): whether a column
        holds only numeric literals of one datatype, asked once for every reference step
        explained against this result."""
        known = self._numbers
        if known is None:
            known = self._numbers = {}
        found = known.get(var, self)
        if found is self:
            found = known[var] = self.number_kinds(var)
        return found  # type: ignore[return-value]

    def is_read(self, var: str) -> bool:
        """Whether the column has been read (its values are known at no cost)."""
        return var in self.read
