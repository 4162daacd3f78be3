"""SPARQL result comparison: hand-made tables, the original's bugs fixed, and properties."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qa_eval.steps.sparql.match import compare_sparql_results
from qa_eval.steps.sparql.terms import SparqlResultError, parse_sparql_json

XSD = "http://www.w3.org/2001/XMLSchema#"


def uri(v: str) -> dict:
    return {"type": "uri", "value": v}


def lit(v: str, datatype: str | None = None, lang: str | None = None) -> dict:
    term = {"type": "literal", "value": v}
    if datatype:
        term["datatype"] = XSD + datatype
    if lang:
        term["xml:lang"] = lang
    return term


def table(vars_: list[str], rows: list[list[dict | None]]) -> dict:
    bindings = [{v: t for v, t in zip(vars_, row) if t is not None} for row in rows]
    return {"head": {"vars": vars_}, "results": {"bindings": bindings}}


def cmp(ref: dict, act: dict, required: list[str], **options: bool) -> float:
    return compare_sparql_results(ref, act, required, **options)


REF = table(["s", "n"], [[uri("urn:a"), lit("A")], [uri("urn:b"), lit("B")]])


@pytest.mark.parametrize(
    ("actual", "required", "options", "expected"),
    [
        # same table
        (REF, ["s", "n"], {}, 1.0),
        # rows in another order, unordered comparison
        (
            table(["s", "n"], [[uri("urn:b"), lit("B")], [uri("urn:a"), lit("A")]]),
            ["s", "n"],
            {},
            1.0,
        ),
        # rows in another order, ordered comparison
        (
            table(["s", "n"], [[uri("urn:b"), lit("B")], [uri("urn:a"), lit("A")]]),
            ["s", "n"],
            {"ordered": True},
            0.0,
        ),
        # columns renamed, reordered, with an extra column
        (
            table(
                ["x", "name", "s2"],
                [[lit("zz"), lit("A"), uri("urn:a")], [lit("yy"), lit("B"), uri("urn:b")]],
            ),
            ["s", "n"],
            {},
            1.0,
        ),
        # only the required column has to match
        (table(["q"], [[uri("urn:a")], [uri("urn:b")]]), ["s"], {}, 1.0),
        # a missing row
        (table(["s", "n"], [[uri("urn:a"), lit("A")]]), ["s", "n"], {}, 0.0),
        # an extra row
        (
            table(
                ["s", "n"],
                [[uri("urn:a"), lit("A")], [uri("urn:b"), lit("B")], [uri("urn:c"), lit("C")]],
            ),
            ["s", "n"],
            {},
            0.0,
        ),
        # duplicates ignored by default, counted when asked
        (
            table(
                ["s", "n"],
                [[uri("urn:a"), lit("A")], [uri("urn:a"), lit("A")], [uri("urn:b"), lit("B")]],
            ),
            ["s", "n"],
            {},
            1.0,
        ),
        (
            table(
                ["s", "n"],
                [[uri("urn:a"), lit("A")], [uri("urn:a"), lit("A")], [uri("urn:b"), lit("B")]],
            ),
            ["s", "n"],
            {"ignore_duplicates": False},
            0.0,
        ),
        # an IRI is not a literal with the same text
        (
            table(["s", "n"], [[lit("urn:a"), lit("A")], [lit("urn:b"), lit("B")]]),
            ["s", "n"],
            {},
            0.0,
        ),
        # fewer columns than required
        (table(["s"], [[uri("urn:a")], [uri("urn:b")]]), ["s", "n"], {}, 0.0),
        # no required columns
        (table(["z"], [[lit("1")]]), [], {}, 1.0),
        # values swapped between rows: each column has the right set, the rows are wrong
        (
            table(["s", "n"], [[uri("urn:a"), lit("B")], [uri("urn:b"), lit("A")]]),
            ["s", "n"],
            {},
            0.0,
        ),
    ],
)
def test_table(actual: dict, required: list[str], options: dict, expected: float) -> None:
    assert cmp(REF, actual, required, **options) == expected


def test_rows_are_tuples_not_joined_strings() -> None:
    # The original joined ("ab", "c") and ("a", "bc") into the same row string "abc".
    ref = table(["x", "y"], [[lit("ab"), lit("c")]])
    act = table(["x", "y"], [[lit("a"), lit("bc")]])
    assert cmp(ref, act, ["x", "y"]) == 0.0


@pytest.mark.parametrize(
    ("ref_term", "act_term", "equal"),
    [
        (lit("1", "integer"), lit("1.0", "decimal"), True),
        (lit("1", "int"), lit("1E0", "double"), True),
        (lit("0.1", "decimal"), lit("0.100000001", "double"), True),  # within 1e-8
        (lit("0.1", "decimal"), lit("0.1000001", "double"), False),
        (lit("10", "integer"), lit("10", "long"), True),
        (lit("1", "integer"), lit("1"), False),  # a number is not a plain string
        (lit("INF", "double"), lit("INF", "float"), True),
        (lit("-INF", "double"), lit("INF", "double"), False),
        (lit("NaN", "double"), lit("NaN", "double"), True),
        (lit("NaN", "double"), lit("0", "double"), False),
        (lit("true", "boolean"), lit("1", "boolean"), True),
        (lit("true", "boolean"), lit("1", "integer"), False),
        (lit("abc"), lit("abc", "string"), True),
        (lit("abc", lang="en"), lit("abc", lang="EN"), True),
        (lit("abc", lang="en"), lit("abc"), False),
        (lit("2024-01-01", "date"), lit("2024-01-01", "date"), True),
        (lit("x1", "integer"), lit("x1", "integer"), True),  # ill-typed, compared as text
        ({"type": "bnode", "value": "b0"}, {"type": "bnode", "value": "b9"}, True),
        (uri("urn:a"), uri("urn:a"), True),
    ],
)
def test_term_equality(ref_term: dict, act_term: dict, equal: bool) -> None:
    ref = table(["v"], [[ref_term]])
    act = table(["v"], [[act_term]])
    assert cmp(ref, act, ["v"]) == float(equal)


def test_mixed_column_with_unbound_values() -> None:
    ref = table(["a", "b"], [[uri("urn:1"), None], [uri("urn:2"), lit("x")]])
    act = table(["b", "a"], [[lit("x"), uri("urn:2")], [None, uri("urn:1")]])
    assert cmp(ref, act, ["a", "b"]) == 1.0
    act2 = table(["b", "a"], [[None, uri("urn:2")], [lit("x"), uri("urn:1")]])
    assert cmp(ref, act2, ["a", "b"]) == 0.0


def test_identical_columns_need_the_right_pairing() -> None:
    # Two actual columns with the same value set but different alignment: only one mapping works.
    ref = table(["p", "q"], [[lit("1"), lit("2")], [lit("2"), lit("1")], [lit("3"), lit("3")]])
    act = table(["x", "y"], [[lit("2"), lit("1")], [lit("1"), lit("2")], [lit("3"), lit("3")]])
    assert cmp(ref, act, ["p", "q"]) == 1.0
    act_bad = table(["x", "y"], [[lit("1"), lit("1")], [lit("2"), lit("2")], [lit("3"), lit("3")]])
    assert cmp(ref, act_bad, ["p", "q"]) == 0.0


def test_ask_and_empty_results() -> None:
    assert cmp({"boolean": True}, {"boolean": True}, []) == 1.0
    assert cmp({"boolean": True}, {"boolean": False}, []) == 0.0
    assert cmp({"boolean": True}, table(["a"], []), []) == 0.0
    assert cmp(table(["a"], [[lit("1")]]), {"boolean": True}, ["a"]) == 0.0
    empty_ref, empty_act = table(["a", "b"], []), table(["x", "y"], [])
    assert cmp(empty_ref, empty_act, ["a", "b"]) == 1.0
    assert cmp(empty_ref, table(["x"], []), ["a", "b"]) == 0.0
    assert cmp(empty_ref, table(["a", "b"], [[lit("1"), lit("2")]]), ["a", "b"]) == 0.0
    assert cmp(table(["a"], [[lit("1")]]), table(["a"], []), ["a"]) == 0.0


def test_required_column_absent_from_reference_head_is_unbound() -> None:
    ref = table(["a"], [[lit("1")]])
    assert cmp(ref, table(["x", "y"], [[lit("1"), None]]), ["a", "b"]) == 1.0


@pytest.mark.parametrize(
    "bad",
    [
        [],
        "text",
        {"head": {}},
        {"results": {"bindings": {}}},
        {"boolean": "yes"},
        {"head": {"vars": "a"}, "results": {"bindings": []}},
    ],
)
def test_parse_rejects_malformed_results(bad: object) -> None:
    with pytest.raises(SparqlResultError):
        parse_sparql_json(bad)


def test_malformed_term_is_reported() -> None:
    ref = table(["a"], [[lit("1", "integer")]])
    act = {
        "head": {"vars": ["a"]},
        "results": {"bindings": [{"a": {"type": "weird", "value": "1"}}]},
    }
    with pytest.raises(SparqlResultError):
        cmp(ref, act, ["a"])


# Property-based: a random table compared with a shuffled copy.
_values = st.sampled_from(
    [uri("urn:a"), uri("urn:b"), lit("a"), lit("b"), lit("1", "integer"), lit("2", "decimal"), None]
)


@st.composite
def tables(draw: st.DrawFn) -> tuple[dict, list[str]]:
    n_cols = draw(st.integers(1, 4))
    vars_ = [f"v{i}" for i in range(n_cols)]
    rows = draw(
        st.lists(st.lists(_values, min_size=n_cols, max_size=n_cols), min_size=1, max_size=8)
    )
    return table(vars_, rows), vars_


def _permuted(tab: dict, seed: int, extra_column: bool = False) -> dict:
    rnd = random.Random(seed)
    vars_ = list(tab["head"]["vars"])
    bindings = [dict(b) for b in tab["results"]["bindings"]]
    rnd.shuffle(bindings)
    renamed = {v: f"c{i}" for i, v in enumerate(vars_)}
    new_bindings = [{renamed[k]: t for k, t in b.items()} for b in bindings]
    new_vars = [renamed[v] for v in vars_]
    if extra_column:
        for b in new_bindings:
            b["extra"] = lit(str(rnd.random()))
        new_vars.append("extra")
    rnd.shuffle(new_vars)
    return {"head": {"vars": new_vars}, "results": {"bindings": new_bindings}}


@settings(max_examples=200, deadline=None)
@given(tables(), st.integers(0, 10_000), st.booleans())
def test_permuting_rows_and_columns_never_changes_the_verdict(
    data: tuple[dict, list[str]], seed: int, ignore_duplicates: bool
) -> None:
    tab, vars_ = data
    assert cmp(tab, _permuted(tab, seed), vars_, ignore_duplicates=ignore_duplicates) == 1.0


@settings(max_examples=200, deadline=None)
@given(tables(), tables(), st.integers(0, 10_000))
def test_an_extra_actual_column_never_lowers_the_score(
    ref: tuple[dict, list[str]], act: tuple[dict, list[str]], seed: int
) -> None:
    ref_table, vars_ = ref
    act_table = act[0]
    before = cmp(ref_table, act_table, vars_)
    rnd = random.Random(seed)
    widened = {
        "head": {"vars": [*act_table["head"]["vars"], "extra"]},
        "results": {
            "bindings": [
                {**b, "extra": lit(str(rnd.randrange(3)))} for b in act_table["results"]["bindings"]
            ]
        },
    }
    assert cmp(ref_table, widened, vars_) >= before


@settings(max_examples=200, deadline=None)
@given(tables(), tables())
def test_agrees_with_brute_force(ref: tuple[dict, list[str]], act: tuple[dict, list[str]]) -> None:
    """Compare with a slow, obviously correct search over every column assignment."""
    import itertools
    from collections import Counter

    from qa_eval.steps.sparql.terms import read_term

    ref_table, ref_vars = ref
    act_table, act_vars = act

    def key(term: dict | None) -> object:
        return None if term is None else read_term(term)

    def rows(tab: dict, cols: tuple[str, ...]) -> Counter:
        return Counter(tuple(key(b.get(c)) for c in cols) for b in tab["results"]["bindings"])

    expected = 0.0
    if len(ref_vars) <= len(act_vars):
        ref_rows = set(rows(ref_table, tuple(ref_vars)))
        for cols in itertools.permutations(act_vars, len(ref_vars)):
            if set(rows(act_table, cols)) == ref_rows:
                expected = 1.0
                break
    assert cmp(ref_table, act_table, ref_vars) == expected


def test_unhashable_value_is_reported_not_raised_as_type_error() -> None:
    ref = table(["a"], [[uri("urn:a")], [uri("urn:b")]])
    act = {
        "head": {"vars": ["a"]},
        "results": {
            "bindings": [
                {"a": {"type": "uri", "value": "urn:a"}},
                {"a": {"type": "uri", "value": ["urn:b"]}},
            ]
        },
    }
    with pytest.raises(SparqlResultError):
        cmp(ref, act, ["a"])


def _brute_force(
    ref_table: dict, ref_vars: list[str], act_table: dict, ordered: bool, ignore_duplicates: bool
) -> float:
    """The definition, searched over every assignment of actual columns."""
    import itertools
    from collections import Counter

    from qa_eval.steps.sparql.terms import read_term

    def rows(tab: dict, cols: tuple[str, ...]) -> object:
        found = [
            tuple(None if b.get(c) is None else read_term(b[c]) for c in cols)
            for b in tab["results"]["bindings"]
        ]
        if ordered:
            return found
        return set(found) if ignore_duplicates else Counter(found)

    target = rows(ref_table, tuple(ref_vars))
    act_vars = act_table["head"]["vars"]
    return float(
        any(
            rows(act_table, cols) == target
            for cols in itertools.permutations(act_vars, len(ref_vars))
        )
    )


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, 10**6),
    st.integers(65, 90),
    st.integers(1, 3),
    st.booleans(),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)
def test_long_tables_whose_columns_differ_only_after_the_first_rows(
    seed: int,
    n_rows: int,
    n_cols: int,
    ordered: bool,
    ignore_duplicates: bool,
    shuffle: bool,
    decoy: bool,
) -> None:
    """Columns of results over 64 rows are ruled out on their first 16 cells before they are
    read in full: a column that agrees with a reference column on those cells and differs later
    must still be caught."""
    rnd = random.Random(seed)
    pool = [uri("urn:a"), uri("urn:b"), lit("a"), lit("1", "integer"), lit("1.0", "decimal")]
    vars_ = [f"v{i}" for i in range(n_cols)]
    ref_rows = [[rnd.choice(pool[:2]) for _ in vars_] for _ in range(n_rows)]
    ref_table = table(vars_, ref_rows)
    act_rows = [list(row) for row in ref_rows]
    act_vars = [f"a{i}" for i in range(n_cols)]
    if decoy:  # a copy of column 0: two candidates for it until a late change tells them apart
        act_vars.append("decoy")
        for row in act_rows:
            row.append(row[0])
    for _ in range(rnd.randrange(3)):  # late changes: a value, a kind, an unbound cell
        r, c = rnd.randrange(16, n_rows), rnd.randrange(len(act_vars))
        act_rows[r][c] = rnd.choice([*pool, None])
    if shuffle and not ordered:
        rnd.shuffle(act_rows)
    act_table = table(act_vars, act_rows)
    expected = _brute_force(ref_table, vars_, act_table, ordered, ignore_duplicates)
    got = cmp(ref_table, act_table, vars_, ordered=ordered, ignore_duplicates=ignore_duplicates)
    assert got == expected


# Malformed results: an actual one is that step's error, a reference one a located InputError.
def _one_row(term: object, var: str = "x", vars_: object = None) -> dict:
    return {
        "head": {"vars": [var] if vars_ is None else vars_},
        "results": {"bindings": [{var: term}]},
    }


MALFORMED = {
    "binding not an object": (
        {"head": {"vars": ["x"]}, "results": {"bindings": [0.5]}},
        "results.bindings[0]: a binding must be an object, got float",
    ),
    "variable not a string": (
        _one_row(uri("urn:a"), vars_=["x", 1]),
        "head.vars[1]: a variable name must be a string, got int",
    ),
    "variable a mapping": (
        _one_row(uri("urn:a"), vars_=[{"a": 1}]),
        "head.vars[0]: a variable name must be a string, got dict",
    ),
    "term not an object": (_one_row("urn:a"), "results.bindings[0].x: a term must be an object"),
    "type missing": (_one_row({"value": "a"}), "'type' must be a string, got null"),
    "type unknown": (_one_row({"type": "iri", "value": "a"}), "unknown term type 'iri'"),
    "type a list": (_one_row({"type": ["uri"], "value": "a"}), "'type' must be a string"),
    "value missing": (_one_row({"type": "uri"}), "'value' must be a string, got null"),
    "value a number": (_one_row({"type": "uri", "value": 1}), "'value' must be a string, got int"),
    "value a list": (
        _one_row({"type": "literal", "value": ["a"]}),
        "'value' must be a string, got list",
    ),
    "xml:lang a number": (
        _one_row({"type": "literal", "value": "a", "xml:lang": 5}),
        "'xml:lang' must be a string, got int",
    ),
    "datatype a list": (
        _one_row({"type": "literal", "value": "1", "datatype": ["x"]}),
        "'datatype' must be a string, got list",
    ),
    "datatype a mapping": (
        _one_row({"type": "typed-literal", "value": "1", "datatype": {}}),
        "'datatype' must be a string, got dict",
    ),
}


def _reference(output: object, required: list[str]) -> list[dict]:
    return [
        {
            "template_id": "t1",
            "questions": [
                {
                    "id": qid,
                    "question_text": "Which?",
                    "reference_steps": [
                        [
                            {
                                "name": "sparql_query",
                                "args": {"query": "SELECT"},
                                "output": output,
                                "output_media_type": "application/sparql-results+json",
                                "required_columns": required,
                            }
                        ]
                    ],
                }
                for qid in ("q1", "q2")
            ],
        }
    ]


def _response(qid: str, output: object) -> dict:
    step = {"name": "sparql_query", "id": "s", "status": "success", "output": output}
    return {"question_id": qid, "actual_steps": [step]}


@pytest.mark.parametrize("as_text", [True, False])
@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_actual_result_is_that_steps_error(case: str, as_text: bool) -> None:
    import json

    from qa_eval import run_evaluation

    bad, expected = MALFORMED[case]
    good = _one_row(uri("urn:a"))
    responses = [
        _response("q1", json.dumps(bad) if as_text else bad),
        _response("q2", json.dumps(good)),
    ]
    results = run_evaluation(_reference(json.dumps(good), ["x"]), responses)
    assert results[0]["steps_score"] == 0.0
    (error,) = results[0]["step_errors"]
    assert error.startswith("actual_steps[0] (id s): output: ") and expected in error
    assert results[1]["steps_score"] == 1.0 and "step_errors" not in results[1]


@pytest.mark.parametrize("rows", [3, 100])  # 100: the sampled path for large results
def test_bad_term_deep_in_a_large_actual_column(rows: int) -> None:
    from qa_eval import run_evaluation

    reference = table(["x"], [[uri(f"urn:{i}")] for i in range(rows)])
    actual = table(["y"], [[uri(f"urn:{i}")] for i in range(rows)])
    actual["results"]["bindings"][rows - 1]["y"] = {"type": "uri", "value": 7}
    results = run_evaluation(_reference(reference, ["x"]), [_response("q1", actual)])
    assert results[0]["steps_score"] == 0.0
    assert (
        f"results.bindings[{rows - 1}].y: a term's 'value' must be a string"
        in (results[0]["step_errors"][0])
    )


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_reference_result_names_file_question_step_and_field(case: str) -> None:
    from qa_eval import InputError, run_evaluation

    bad, expected = MALFORMED[case]
    with pytest.raises(InputError) as caught:
        run_evaluation(_reference(bad, ["x"]), [], reference_source="ref.yaml")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(
        "ref.yaml: template 't1' question 'q1': reference_steps[0][0].output: "
    ), message
    assert expected in message


def test_compare_checks_both_results() -> None:
    good = table(["x"], [[uri("urn:a")]])
    for bad, expected in MALFORMED.values():
        with pytest.raises(SparqlResultError, match=re.escape(expected)):
            compare_sparql_results(good, bad, ["x"])
        with pytest.raises(SparqlResultError, match=re.escape(expected)):
            compare_sparql_results(bad, good, ["x"])


def test_reference_columns_that_are_not_compared_are_not_read() -> None:
    # Only the required columns are read (when the dataset loads); the shape of the whole
    # result is checked, the terms of other columns are never looked at.
    from qa_eval import InputError, run_evaluation

    bad_term = table(["x", "y"], [[uri("urn:a"), {"type": "uri", "value": ["v"]}]])
    results = run_evaluation(
        _reference(bad_term, ["x"]), [_response("q1", table(["x"], [[uri("urn:a")]]))]
    )
    assert results[0]["steps_score"] == 1.0
    bad_shape = {"head": {"vars": ["x", 2]}, "results": {"bindings": [{"x": uri("urn:a")}]}}
    with pytest.raises(InputError, match=r"output: not a SPARQL JSON result: head\.vars\[1\]"):
        run_evaluation(_reference(bad_shape, ["x"]), [])


# Numbers within the tolerance (1e-8, or 1e-15 relative), also across the 8-decimal grid.


@pytest.mark.parametrize(
    ("ref_value", "act_value", "equal"),
    [
        ("80.123456789", "80.12345678", True),  # 9e-9 apart, different 8-decimal roundings
        ("80.1234567", "80.12345678", False),  # 8e-8 apart
        ("2", "2.00000001", True),  # an integer against a double 1e-8 away
        ("2", "2.0000001", False),
        ("123456789012.5", "123456789012.50003", True),  # relative 1e-15 * 1.2e11 = 1.2e-4
        ("123456789012.5", "123456789012.6", False),
        ("-0.000000004", "0.000000004", True),
    ],
)
def test_numbers_within_tolerance(ref_value: str, act_value: str, equal: bool) -> None:
    ref = table(["x"], [[lit(ref_value, "decimal")]])
    act = table(["y"], [[lit(act_value, "double")]])
    assert cmp(ref, act, ["x"]) == float(equal)


def test_integers_compare_exactly_however_large() -> None:
    big = 10**20
    ref = table(["x"], [[lit(str(big), "integer")]])
    assert cmp(ref, table(["x"], [[lit(str(big + 1), "integer")]]), ["x"]) == 0.0
    assert cmp(ref, table(["x"], [[lit(str(big), "integer")]]), ["x"]) == 1.0


@pytest.mark.parametrize("rows", [10, 300])  # both sides of the sampling shortcut (64 rows)
@pytest.mark.parametrize("mode", [{}, {"ordered": True}, {"ignore_duplicates": False}])
def test_tolerance_in_every_mode_and_size(rows: int, mode: dict) -> None:
    rnd = random.Random(rows)
    values = [rnd.uniform(-1000, 1000) for _ in range(rows)]
    ref = table(
        ["id", "v"], [[uri(f"urn:{i}"), lit(f"{v:.9f}", "decimal")] for i, v in enumerate(values)]
    )
    close = [[uri(f"urn:{i}"), lit(repr(v + 6e-9), "double")] for i, v in enumerate(values)]
    far = [[uri(f"urn:{i}"), lit(repr(v + 6e-8), "double")] for i, v in enumerate(values)]
    assert cmp(ref, table(["a", "b"], close), ["id", "v"], **mode) == 1.0
    assert cmp(ref, table(["a", "b"], far), ["id", "v"], **mode) == 0.0


def test_numbers_close_matches_a_direct_check() -> None:
    from qa_eval.steps.sparql.match import numbers_close

    rnd = random.Random(3)
    for _ in range(2000):
        a = rnd.choice([rnd.uniform(-10, 10), rnd.uniform(-1e12, 1e12)])
        b = a + rnd.uniform(-3e-8, 3e-8) * rnd.choice([1, 1e4])
        assert numbers_close(a, b) == (abs(a - b) <= max(1e-8, 1e-15 * max(abs(a), abs(b))))


# Explanations of a result that does not match.


def explain(ref: dict, act: dict, required: list[str], **options: bool) -> str:
    from qa_eval.steps.sparql.explain import explain_sparql_results
    from qa_eval.steps.sparql.match import prepare_reference

    assert cmp(ref, act, required, **options) == 0.0  # only mismatches are explained
    return explain_sparql_results(prepare_reference(ref, required), act, **options)[1]


OSLO = table(
    ["tr", "name", "mva"],
    [
        [uri("urn:t1"), lit("OSLO T1"), lit("1000", "decimal")],
        [uri("urn:t2"), lit("OSLO T2"), lit("1000", "decimal")],
        [uri("urn:t3"), lit("OSLO T3"), lit("450.5", "decimal")],
    ],
)


def test_explains_missing_and_extra_rows() -> None:
    act = table(["t", "label"], [[uri("urn:t2"), lit("OSLO T2")], [uri("urn:t1"), lit("OSLO T1")]])
    assert explain(OSLO, act, ["tr", "name"]) == '1 row missing: tr=<urn:t3> name="OSLO T3"'
    extra = table(
        ["t", "label"],
        [[uri(f"urn:t{i}"), lit(f"OSLO T{i}")] for i in range(1, 9)],
    )
    assert explain(OSLO, extra, ["tr", "name"]) == (
        '5 extra rows: tr=<urn:t4> name="OSLO T4"; tr=<urn:t5> name="OSLO T5"; '
        'tr=<urn:t6> name="OSLO T6"; and 2 more'
    )


def test_explains_a_column_not_found() -> None:
    act = table(
        ["tr", "name", "mva"],
        [[uri(f"urn:t{i}"), lit(f"OSLO T{i}"), lit("999", "integer")] for i in (1, 2, 3)],
    )
    assert explain(OSLO, act, ["tr", "name", "mva"]) == (
        "column ?mva not found (the actual ?mva holds 999 where the reference has 1000)"
    )
    narrow = table(["t"], [[uri(f"urn:t{i}")] for i in (1, 2)])
    assert explain(OSLO, narrow, ["tr", "name"]) == (
        "the actual result has 1 column (?t), 2 are required (?tr, ?name); column ?name not "
        "found; 1 row missing on the columns found: tr=<urn:t3>"
    )


def test_explains_order_duplicates_and_ask() -> None:
    act = table(["tr", "name"], [[uri(f"urn:t{i}"), lit(f"OSLO T{i}")] for i in (2, 1, 3)])
    assert explain(OSLO, act, ["tr", "name"], ordered=True) == (
        'rows in another order (ordered): row 1 is tr=<urn:t2> name="OSLO T2", expected '
        'tr=<urn:t1> name="OSLO T1"'
    )
    twice = table(["tr"], [[uri(f"urn:t{i}")] for i in (1, 2, 3, 3)])
    assert explain(OSLO, twice, ["tr"], ignore_duplicates=False) == (
        "1 extra row: tr=<urn:t3>; the same rows, repeated a different number of times"
    )
    ask = {"boolean": True}
    assert explain(ask, {"boolean": False}, []) == "ASK result is false, expected true"
    assert explain(ask, table(["x"], []), []) == (
        "expected an ASK result (true), got a SELECT result (0 rows)"
    )
    assert explain(OSLO, table(["x"], []), ["tr"]) == "no rows returned, expected 3"


def test_explanation_uses_the_tolerance_too() -> None:
    ref = table(["v"], [[lit("1.5", "decimal")], [lit("2.5", "decimal")]])
    act = table(["v"], [[lit("1.500000001", "double")], [lit("2.6", "double")]])
    assert explain(ref, act, ["v"]) == "1 row missing: v=2.5; 1 extra row: v=2.6"


def test_explanation_leaves_unread_a_column_of_numbers_no_reference_column_can_share() -> None:
    from qa_eval.steps.sparql import terms
    from qa_eval.steps.sparql.explain import explain_sparql_results
    from qa_eval.steps.sparql.match import prepare_reference

    rows = [[lit("7", "integer"), lit(f"OSLO T{i}"), uri(f"urn:t{i}")] for i in (2, 1)]
    act = table(["count", "label", "t"], rows)
    reference = prepare_reference(OSLO, ["tr", "name"])
    read = terms.Table(act["results"]["bindings"])
    assert explain_sparql_results(reference, act, table=read)[1] == (
        '1 row missing: tr=<urn:t3> name="OSLO T3"'
    )
    assert sorted(read.read) == ["label", "t"]
    # a column the reference has numbers in, or one named as a required column, is read
    assert explain(OSLO, act, ["tr", "mva"]).startswith("column ?mva not found")
    renamed = table(["count", "name", "t"], rows)
    assert explain(OSLO, renamed, ["tr", "name"]) == '1 row missing: tr=<urn:t3> name="OSLO T3"'


@pytest.mark.parametrize(
    "cell",
    [
        {"type": "literal", "datatype": XSD + "integer", "value": 7},
        {"type": "literal", "datatype": 7, "value": "7"},
        {"type": "number", "value": "7"},
    ],
)
def test_explanation_still_reports_a_bad_term_in_a_column_it_need_not_read(cell: dict) -> None:
    from qa_eval.steps.sparql.explain import explain_sparql_results
    from qa_eval.steps.sparql.match import prepare_reference

    bindings = [
        {
            "count": {"type": "literal", "datatype": XSD + "integer", "value": "1"},
            "t": uri("urn:t1"),
        },
        {"count": cell, "t": uri("urn:t2")},
    ]
    act = {"head": {"vars": ["count", "t"]}, "results": {"bindings": bindings}}
    with pytest.raises(SparqlResultError, match=r"results\.bindings\[1\]\.count"):
        explain_sparql_results(prepare_reference(OSLO, ["tr"]), act)
