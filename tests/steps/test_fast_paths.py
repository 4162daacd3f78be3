"""The fast paths of the comparisons give what the general path gives (issue 36)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import example, given, settings
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


# A SELECT result decided by the kinds of its first cells (``sparql.match._by_kinds``) against
# the mapping search it stands in for (issue 36): the same score, or the same term error.

_VALUES = ["x", "y", "1", "2.0", "2.5", "2.000000001"]  # (the last: close to 2)


def _cell(data: Any, value: str) -> Any:
    """A term holding ``value``: an IRI, a plain literal, a number or, rarely, something odd."""
    kind = data.draw(st.sampled_from(["uri", "literal", "integer", "decimal", "odd"]))
    if kind == "uri":
        return {"type": "uri", "value": f"urn:{value}"}
    if kind == "literal":
        return {"type": "literal", "value": value}
    if kind in ("integer", "decimal"):
        number = value if kind == "decimal" or "." not in value else value.split(".")[0]
        return {"type": "literal", "datatype": XSD + kind, "value": number}
    return data.draw(st.sampled_from([None, 3, {"type": "uri"}, {"type": "x", "value": "v"}]))


def _column_terms(data: Any, rows: int, steady: bool) -> list[Any]:
    """A column's cells: of one kind (``steady``) or each drawn on its own."""
    if steady:
        kind = data.draw(st.sampled_from(["uri", "literal", "integer", "decimal"]))
        values = data.draw(st.lists(st.sampled_from(_VALUES), min_size=rows, max_size=rows))
        made = []
        for value in values:
            if kind == "uri":
                made.append({"type": "uri", "value": f"urn:{value}"})
            elif kind == "literal":
                made.append({"type": "literal", "value": value})
            else:
                number = value if kind == "decimal" or "." not in value else value[0]
                made.append({"type": "literal", "datatype": XSD + kind, "value": number})
        return made
    return [_cell(data, data.draw(st.sampled_from(_VALUES))) for _ in range(rows)]


@settings(max_examples=600, deadline=None)
@given(st.data())
def test_a_result_decided_by_its_first_kinds_scores_as_the_mapping_search(data: Any) -> None:
    from qa_eval.steps.sparql import match
    from qa_eval.steps.sparql.terms import parse_sparql_json

    names = ["a", "b", "c"]
    ref_rows = data.draw(st.integers(1, 4))
    ref_vars = names[: data.draw(st.integers(1, 3))]
    ref_columns = {
        v: _column_terms(data, ref_rows, steady=data.draw(st.booleans())) for v in ref_vars
    }
    ref_columns = {
        v: [c if isinstance(c, dict) and isinstance(c.get("value"), str) else None for c in cells]
        for v, cells in ref_columns.items()
    }
    ref_bindings = [
        {v: cells[i] for v, cells in ref_columns.items() if cells[i] is not None}
        for i in range(ref_rows)
    ]
    required = data.draw(st.lists(st.sampled_from(ref_vars), min_size=1, max_size=3))
    try:
        reference = match.prepare_reference(
            parse_sparql_json({"head": {"vars": ref_vars}, "results": {"bindings": ref_bindings}}),
            required,
        )
    except SparqlResultError:
        return  # (a reference is checked when it is loaded)
    # The actual result: the reference's columns renamed and rows shuffled, or drawn anew.
    act_vars = data.draw(st.permutations(["p", "q", "r", "s"][: data.draw(st.integers(1, 4))]))
    if data.draw(st.booleans()):
        rows = data.draw(st.permutations(range(ref_rows)))
        rows = rows[: data.draw(st.integers(1, ref_rows))] + rows[: data.draw(st.integers(0, 1))]
        sources = data.draw(
            st.lists(st.sampled_from(ref_vars), min_size=len(act_vars), max_size=len(act_vars))
        )
        act_columns = {v: [ref_columns[src][i] for i in rows] for v, src in zip(act_vars, sources)}
        if data.draw(st.booleans()):  # one cell changed
            var = data.draw(st.sampled_from(act_vars))
            act_columns[var][data.draw(st.integers(0, len(rows) - 1))] = _cell(data, "y")
        size = len(rows)
    else:
        size = data.draw(st.integers(1, 5))
        act_columns = {v: _column_terms(data, size, data.draw(st.booleans())) for v in act_vars}
    bindings = [
        {v: cells[i] for v, cells in act_columns.items() if cells[i] is not None}
        for i in range(size)
    ]
    actual = {"head": {"vars": list(act_vars)}, "results": {"bindings": bindings}}
    ordered, ignore_duplicates = data.draw(st.booleans()), data.draw(st.booleans())

    def outcome(quick: bool) -> Any:
        original = match._by_kinds
        if not quick:
            match._by_kinds = lambda *_: None  # type: ignore[assignment]
        try:
            return match.select_score(
                reference, actual, ordered, ignore_duplicates, Table(bindings)
            )
        except SparqlResultError as e:
            return f"error: {e}"
        finally:
            match._by_kinds = original

    assert outcome(quick=True) == outcome(quick=False)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        _JSON.map(json.dumps),  # (Python's json writes NaN and Infinity, which orjson refuses)
        st.text(max_size=12),
        st.binary(max_size=8),
        _JSON,
    )
)
@example("[NaN, -Infinity]")  # (read by json when orjson refuses them)
@example(b"{}")
@example("{not json")
def test_an_output_is_parsed_as_loads_parses_it(output: Any) -> None:
    from qa_eval.steps.compare import StepScorer
    from qa_eval.steps.outputs import OutputParseError, loads

    try:
        expected: Any = output if isinstance(output, (dict, list)) else loads(output)
    except OutputParseError as e:
        expected = f"error: {e}"
    got = StepScorer([])._parse(0, output)
    got = f"error: {got}" if isinstance(got, OutputParseError) else got
    assert json.dumps(got, sort_keys=True) == json.dumps(expected, sort_keys=True)


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
