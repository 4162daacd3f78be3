"""A SPARQL column of up to 128 rows read in one pass (in ``terms._column``) gives what reading
it in C-level passes and term by term gives: the same kind and values, or the same error."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qa_eval.steps.sparql import terms
from qa_eval.steps.sparql.terms import SparqlResultError

XSD = "http://www.w3.org/2001/XMLSchema#"
_DATATYPES = [
    XSD + "integer",
    XSD + "int",
    XSD + "decimal",
    XSD + "double",
    XSD + "boolean",
    XSD + "string",
    "urn:custom",
    "",
]
_VALUES = ["x", "12", " 7 ", "1_000", "1.5", "-0.0", "NaN", "INF", "1e400", "true", "", "ab c"]
# The usual cells, of which a column is mostly made...
_USUAL = st.one_of(
    st.builds(lambda v: {"type": "uri", "value": v}, st.sampled_from(_VALUES)),
    st.builds(lambda v: {"type": "literal", "value": v}, st.sampled_from(_VALUES)),
    st.builds(
        lambda v, d: {"type": "literal", "datatype": d, "value": v},
        st.sampled_from(_VALUES),
        st.sampled_from(_DATATYPES),
    ),
)
# ... and cells that are not usual (or not terms at all), one of which may sit anywhere.
_ODD = st.one_of(
    st.sampled_from([None, 3, "x", ["uri"], {}]),
    st.fixed_dictionaries(
        {},
        optional={
            "type": st.sampled_from(["uri", "literal", "bnode", "typed-literal", "x", 1, ["uri"]]),
            "value": st.sampled_from(["x", "12", None, 7, ["x"]]),
            "datatype": st.sampled_from([XSD + "integer", XSD + "double", "", 5, [XSD]]),
            "xml:lang": st.sampled_from(["en", "", None]),
            "other": st.just("o"),
        },
    ),
)
_UNBOUND = object()


@st.composite
def _columns(draw: Any) -> list[dict[str, Any]]:
    """Rows of one variable ``v``: cells like a first usual cell (same kind, datatype), with
    now and then one with a key more or less, another usual cell, an odd one, or none (the
    variable unbound)."""
    first = draw(_USUAL)
    rows = []
    for _ in range(draw(st.integers(1, 8))):
        pick = draw(st.integers(0, 19))
        if pick < 9:
            cell: Any = {**first, "value": draw(st.sampled_from(_VALUES))}
        elif pick < 11:  # like the first, with a key more or less
            cell = {**first, draw(st.sampled_from(["other", "xml:lang"])): "en"}
            if draw(st.booleans()):
                cell.pop(draw(st.sampled_from(sorted(cell))))
        elif pick < 16:
            cell = draw(_USUAL)
        elif pick < 19:
            cell = draw(_ODD)
        else:
            cell = _UNBOUND
        rows.append({} if cell is _UNBOUND else {"v": cell})
    return rows


def _read(read: Any, rows: list[Any]) -> Any:
    """What a reader gives for column ``v`` (its repr: 1 and 1.0 told apart), or its error."""
    try:
        return repr(read(rows, "v"))
    except SparqlResultError as e:
        return "error", str(e)


@settings(max_examples=600, deadline=None)
@given(_columns())
def test_one_pass_gives_what_the_passes_give(rows: list[dict[str, Any]]) -> None:
    assert _read(terms._column, rows) == _read(terms._column_in_passes, rows)


@pytest.mark.parametrize("size", [1, 2, 128, 129, 300])
@pytest.mark.parametrize(
    "cell",
    [
        {"type": "uri", "value": "urn:a"},
        {"type": "literal", "value": "a"},
        {"type": "literal", "datatype": XSD + "integer", "value": " 12 "},
        {"type": "literal", "datatype": XSD + "double", "value": "2.0"},
    ],
)
def test_either_side_of_the_one_pass_limit(size: int, cell: dict[str, Any]) -> None:
    """Columns of each usual kind, below and above ``_ONE_PASS_ROWS``, with a bad last cell."""
    rows = [{"v": dict(cell)} for _ in range(size)]
    expected = _read(terms._column_in_passes, rows)
    assert _read(terms._column, rows) == expected
    assert expected[0] != "e"  # (read, not an error)
    rows[-1] = {"v": {**cell, "value": 5}}
    bad = _read(terms._column, rows)
    assert bad == _read(terms._column_in_passes, rows)
    assert bad == (
        "error",
        f"results.bindings[{size - 1}].v: a term's 'value' must be a string, got int",
    )


def test_not_bindings() -> None:
    """A binding that is not an object: the error of the passes."""
    with pytest.raises(SparqlResultError, match=re.escape("every binding must be an object")):
        terms._column([["x"]], "v")


@pytest.mark.parametrize("size", [1, 5, 128, 129, 300])
def test_bindings_and_vars_checked_either_side_of_the_limit(size: int) -> None:
    """``parse_sparql_json`` finds a binding that is not an object, or a variable name that is
    not a string, at any row, below and above the one-pass limit."""
    rows: list[Any] = [{"v": {"type": "uri", "value": "urn:a"}} for _ in range(size)]
    names: list[Any] = ["v"] * size
    result = {"head": {"vars": names}, "results": {"bindings": rows}}
    assert terms.parse_sparql_json(result) is result
    rows[-1] = ["v"]
    message = f"results.bindings[{size - 1}]: a binding must be an object, got list"
    with pytest.raises(SparqlResultError, match=re.escape(message)):
        terms.parse_sparql_json(result)
    rows[-1] = {}
    names[-1] = 3
    message = f"head.vars[{size - 1}]: a variable name must be a string, got int"
    with pytest.raises(SparqlResultError, match=re.escape(message)):
        terms.parse_sparql_json(result)


@settings(max_examples=600, deadline=None)
@given(_columns())
def test_number_kinds_in_one_pass_are_those_of_the_passes(rows: list[dict[str, Any]]) -> None:
    """``Table.number_kinds`` (one pass up to 128 rows) against its C-level passes."""
    assert terms.Table(rows).number_kinds("v") == terms._number_kinds_in_passes(rows, "v")


@pytest.mark.parametrize("size", [2, 128, 129])
def test_number_kinds_either_side_of_the_limit(size: int) -> None:
    cell = {"type": "literal", "datatype": XSD + "integer", "value": "1"}
    rows: list[Any] = [{"v": dict(cell)} for _ in range(size)]
    assert terms.Table(rows).number_kinds("v") == frozenset(
        ("number", ("ill-typed", XSD + "integer"))
    )
    rows[-1] = {"v": {**cell, "datatype": XSD + "decimal"}}
    assert terms.Table(rows).number_kinds("v") is None
