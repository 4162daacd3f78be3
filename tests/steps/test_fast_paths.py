"""The fast paths of the comparisons give what the general path gives (issue 36)."""

from __future__ import annotations

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
