"""The SPARQL closeness bound read from the columns' distinct terms (issue 36 section 6): never
below the closeness the explanation gives, whatever columns matching read before, and tight
enough that a candidate sharing no term, or fewer rows, is not explained in full."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from fakes import prepared_groups
from qa_eval.steps.compare import StepScorer

SPARQL_JSON = "application/sparql-results+json"
XSD = "http://www.w3.org/2001/XMLSchema#"


def _term(kind: str, i: int) -> dict[str, Any]:
    if kind == "iri":
        return {"type": "uri", "value": f"urn:x/{i}"}
    if kind == "literal":
        return {"type": "literal", "value": f"item {i}"}
    return {"type": "literal", "datatype": XSD + "integer", "value": str(i)}


def _result(columns: list[tuple[str, str]], rows: list[list[int]]) -> str:
    """A SELECT result: ``columns`` (name, kind), each row the numbers its terms are made of."""
    bindings = [{name: _term(kind, i) for (name, kind), i in zip(columns, row)} for row in rows]
    return json.dumps(
        {"head": {"vars": [n for n, _ in columns]}, "results": {"bindings": bindings}}
    )


_KIND = st.sampled_from(["iri", "literal", "number"])


@st.composite
def _case(draw: Any) -> tuple[dict[str, Any], list[str]]:
    """A reference of IRIs and literals (the tolerance for numbers does not apply) and a few
    candidates whose columns share some of its terms, rows or none."""
    width = draw(st.integers(1, 3))
    ref_columns = [(f"r{j}", draw(st.sampled_from(["iri", "literal"]))) for j in range(width)]
    value = st.integers(0, 6)
    ref_rows = draw(
        st.lists(st.lists(value, min_size=width, max_size=width), min_size=1, max_size=6)
    )
    required = [n for n, _ in ref_columns][: draw(st.integers(1, width))]
    reference = {
        "name": "sparql_query",
        "output": _result(ref_columns, ref_rows),
        "output_media_type": SPARQL_JSON,
        "required_columns": required,
        **draw(st.sampled_from([{}, {"ordered": True}, {"ignore_duplicates": False}])),
    }
    outputs = []
    for _ in range(draw(st.integers(1, 4))):
        act_width = draw(st.integers(1, 4))
        names = draw(
            st.lists(
                st.sampled_from(["r0", "r1", "r2", "a", "b", "c"]),
                min_size=act_width,
                max_size=act_width,
                unique=True,
            )
        )
        act_columns = [(n, draw(_KIND)) for n in names]
        rows = draw(
            st.lists(
                st.lists(value, min_size=act_width, max_size=act_width), min_size=1, max_size=7
            )
        )
        outputs.append(_result(act_columns, rows))
    return reference, outputs


@settings(max_examples=250, deadline=None)
@given(_case(), st.data())
def test_the_bound_from_distinct_terms_is_never_below_the_closeness(
    case: tuple[dict[str, Any], list[str]], data: Any
) -> None:
    reference, outputs = case
    ref = prepared_groups([[reference]])[0][0]
    steps = [{"name": "sparql_query", "status": "success", "output": o} for o in outputs]
    scorer = StepScorer(steps)
    for a in range(len(steps)):
        if data.draw(st.booleans()):  # matching compared it (and read some columns), or not
            scorer.score(ref, a)
    for a in range(len(steps)):
        if scorer.would_match(ref, a) > 0.0:
            continue  # (bounds are asked only of candidates that do not match)
        bound, exact = scorer.closeness_bound(ref, a)
        closeness, _ = StepScorer(steps).explain(ref, a)
        assert closeness <= bound
        if exact:
            assert closeness == bound


def _select_case(shift: int) -> tuple[Any, StepScorer]:
    columns = [("s", "iri"), ("label", "literal"), ("n", "number")]
    reference = {
        "name": "sparql_query",
        "output": _result(columns, [[i, i, i] for i in range(10)]),
        "output_media_type": SPARQL_JSON,
        "required_columns": ["s", "label"],
    }
    ref = prepared_groups([[reference]])[0][0]
    rows = [[i + shift] * 3 for i in range(10)]
    scorer = StepScorer(
        [{"name": "sparql_query", "status": "success", "output": _result(columns, rows)}]
    )
    assert scorer.score(ref, 0) == 0.0  # (matching reads the columns of the reference's kinds)
    return ref, scorer


def test_a_candidate_sharing_no_term_is_bounded_at_its_closeness_zero() -> None:
    ref, scorer = _select_case(shift=10)
    assert scorer.closeness_bound(ref, 0) == (0.0, True)  # before: (1.0, False)
    assert scorer.explain(ref, 0)[0] == 0.0


def test_the_rows_in_common_are_bounded_by_the_terms_shared() -> None:
    ref, scorer = _select_case(shift=7)  # 3 of 10 rows in common
    bound, exact = scorer.closeness_bound(ref, 0)
    assert not exact
    assert bound == 0.5 + 0.5 * 3 / 10  # before: 1.0
    assert scorer.explain(ref, 0)[0] == bound
