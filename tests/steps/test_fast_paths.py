"""The fast paths of the comparisons give what the general path gives (issue 36)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qa_eval.steps.sparql.terms import SparqlResultError, Table, located_term

XSD = "http://www.w3.org/2001/XMLSchema#"
_TERM = st.one_of(
    st.none(),
    st.sampled_from([3, "x", ["uri"]]),
    st.fixed_dictionaries(
        {},
        optional={
            "type": st.sampled_from(["uri", "literal", "bnode", "typed-literal", "x", 1]),
            "value": st.sampled_from(["x", "12", " 1.5 ", "true", "", None, 7]),
            "datatype": st.sampled_from(
                [XSD + "integer", XSD + "decimal", XSD + "boolean", XSD + "string", "", 5, [XSD]]
            ),
            "xml:lang": st.sampled_from(["en", "", None]),
            "other": st.just("o"),
        },
    ),
)


@settings(max_examples=300)
@given(_TERM)
def test_the_kind_of_a_first_cell_is_that_of_reading_it(term: Any) -> None:
    table = Table([{"v": term}] if term is not None else [{}])
    try:
        expected: Any = "unbound" if term is None else located_term(term, 0, "v")[0]
    except SparqlResultError as e:
        with pytest.raises(SparqlResultError, match=re.escape(str(e))):
            table.first_kind("v")
        return
    assert table.first_kind("v") == expected


_CONTEXT = st.one_of(
    st.fixed_dictionaries(
        {}, optional={"id": st.sampled_from(["d1", 2, 2.5, True, None, ["d"], {"d": 1}])}
    ),
    st.sampled_from([None, "d1", 3, ["d1"]]),
)


@settings(max_examples=300)
@given(st.one_of(st.lists(_CONTEXT, max_size=4), st.sampled_from([{"id": "d1"}, "d1", 3])))
def test_a_retrieval_output_is_checked_as_context_by_context(output: Any) -> None:
    from fakes import prepared_groups
    from qa_eval.steps.compare import StepScorer
    from qa_eval.steps.kinds import CONTEXT_ID_TYPES

    ref = prepared_groups([[{"name": "retrieval", "output": '[{"id": "d1"}]'}]])[0][0]
    scorer = StepScorer([{"name": "retrieval", "args": {"k": 2}, "output": json.dumps(output)}])
    score = scorer.score(ref, 0)
    readable = isinstance(output, list) and all(
        isinstance(c, dict) and isinstance(c.get("id"), CONTEXT_ID_TYPES) for c in output
    )
    if readable:
        assert scorer.problems == {}
        ids = [c["id"] for c in output][:2]
        assert score == (1.0 if "d1" in ids else 0.0)
    else:
        assert score == 0.0
        assert "a retrieval output must be a JSON list of objects" in scorer.problems[0]


def test_an_ask_reference_or_result_is_decided_by_its_boolean() -> None:
    from fakes import prepared_groups
    from qa_eval.steps.compare import StepScorer

    def sparql(result: dict) -> str:
        return json.dumps({"head": {"vars": ["v"]}, **result})

    select = {"results": {"bindings": [{"v": {"type": "literal", "value": "a"}}]}}
    outputs = [sparql({"boolean": True}), sparql({"boolean": False}), sparql(select)]
    steps = [{"name": "sparql_query", "output": o} for o in outputs]
    media = "application/sparql-results+json"
    refs = [
        prepared_groups(
            [[{"name": "sparql_query", "output": o, "output_media_type": media, **extra}]]
        )[0][0]
        for o, extra in zip(outputs, [{"required_columns": []}] * 2 + [{"required_columns": ["v"]}])
    ]
    scores = [[StepScorer(steps).score(ref, a) for a in range(3)] for ref in refs]
    assert scores == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]


def _uniform(kind: str) -> Any:
    """A term of one family, so that a column of them takes ``Table.column``'s fast paths."""
    if kind == "uri":
        return st.builds(lambda v: {"type": "uri", "value": v}, st.sampled_from(["a", "b", ""]))
    if kind == "literal":
        return st.builds(lambda v: {"type": "literal", "value": v}, st.sampled_from(["a", "12"]))
    datatype = XSD + kind
    values = {"integer": [" 12", "-3", "1.5"], "decimal": ["1.0", "NaN", "2.5", "INF"]}
    return st.builds(
        lambda v: {"type": "literal", "datatype": datatype, "value": v},
        st.sampled_from(values.get(kind, ["x"])),
    )


_COLUMN = st.one_of(
    st.lists(_TERM, max_size=5),
    st.sampled_from(["uri", "literal", "integer", "decimal", "date"])
    .flatmap(
        lambda kind: st.tuples(
            st.lists(_uniform(kind), min_size=1, max_size=5), st.lists(_TERM, max_size=1)
        )
    )
    .map(lambda parts: [*parts[0], *parts[1]]),
)


def _term_by_term(cells: list[Any]) -> tuple[Any, list[Any]]:
    """A column read one term at a time (``Table.column``'s general path)."""
    kinds, pairs = set(), []
    for row, cell in enumerate(cells):
        pair = ("unbound", None) if cell is None else located_term(cell, row, "v")
        kinds.add(pair[0])
        pairs.append(pair)
    if len(kinds) == 1:
        return kinds.pop(), [value for _, value in pairs]
    return "mixed", pairs


@settings(max_examples=400)
@given(_COLUMN)
def test_a_column_read_in_bulk_is_the_column_read_term_by_term(cells: list[Any]) -> None:
    """IRIs, plain literals and literals of one datatype are read in C-level passes (their
    types and datatypes counted, not collected): the same kind, values and errors as reading
    every term."""
    bindings = [{} if cell is None else {"v": cell} for cell in cells]
    try:
        expected = _term_by_term(cells)
    except SparqlResultError as e:
        with pytest.raises(SparqlResultError, match=re.escape(str(e))):
            Table(bindings).column("v")
        return
    kind, values = Table(bindings).column("v")
    assert (kind, values) == expected
    assert [type(v) for v in values] == [type(v) for v in expected[1]]  # 1 is not 1.0 here
