"""The explanations' cheap signatures never hide what the full comparison would find (issue 36).

``StepScorer.may_match`` rules a candidate out before the "on its own this step would match" hint
compares it in full (SPARQL: the first row's values in the text, an ASK result, fewer rows than
a required column has distinct values; retrieval: no reference id in the text; the other kinds:
test_may_match_kinds.py): whenever it says no, the full comparison scores 0. ``_closest``
compares candidates in the order of their cheap
bounds (``closeness_bound``: never below the closeness ``explain`` gives, equal to it when it
says so) and explains only those that can still be the closest: it shows the candidate, and the
text, that explaining every candidate in full shows."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from fakes import prepared_groups
from qa_eval import run_evaluation
from qa_eval.steps import explain as explain_module
from qa_eval.steps.compare import StepScorer
from qa_eval.steps.sparql import explain as sparql_explain
from qa_eval.steps.sparql import terms as sparql_terms
from qa_eval.steps.sparql.explain import sparql_explanation
from qa_eval.steps.sparql.match import tolerant_columns
from qa_eval.steps.sparql.terms import SparqlResultError, Table, parse_sparql_json

SPARQL_JSON = "application/sparql-results+json"
VARS = ["a", "b", "c"]
XSD = "http://www.w3.org/2001/XMLSchema#"

_KINDS = [
    st.builds(lambda v: {"type": "uri", "value": f"urn:{v}"}, st.sampled_from("xyz")),
    st.builds(lambda v: {"type": "literal", "value": v}, st.sampled_from(["x", "y", "urn:x"])),
    st.builds(
        lambda v: {"type": "literal", "datatype": XSD + "integer", "value": v},
        st.sampled_from(["1", "2", "1.0"]),
    ),
    st.builds(
        lambda v: {"type": "literal", "datatype": XSD + "decimal", "value": v},
        st.sampled_from(["1.0", "1.000000000001", "2.5"]),
    ),
]
_TERMS = st.one_of(
    *_KINDS,
    st.just({"type": "literal", "value": 3}),  # not a string: an error when its column is read
    st.just({"type": "nonsense", "value": "x"}),
)


@st.composite
def _select(draw: Any, min_rows: int = 0, valid: bool = False) -> dict[str, Any]:
    """A SELECT result: each column of one kind of term (or, unless ``valid``, of any)."""
    vars_ = draw(st.lists(st.sampled_from(VARS), min_size=1, max_size=3, unique=True))
    terms = {v: draw(st.sampled_from(_KINDS if valid else [*_KINDS, _TERMS])) for v in vars_}
    rows = draw(st.lists(st.fixed_dictionaries(terms), min_size=min_rows, max_size=6))
    return {"head": {"vars": vars_}, "results": {"bindings": rows}}


_OUTPUTS = st.one_of(
    _select().map(json.dumps),
    _select().map(lambda r: json.dumps(r, indent=2)),
    _select().map(lambda r: json.dumps(r).replace("urn:", "urn\\u003a")),  # with escapes
    st.sampled_from(['{"head": {}, "boolean": true}', "not json", '{"results": 3}']),
)


@st.composite
def _sparql_reference(draw: Any) -> dict[str, Any]:
    result = draw(_select(min_rows=1, valid=True))
    required = draw(st.lists(st.sampled_from(result["head"]["vars"]), min_size=1, unique=True))
    step = {
        "name": "sparql_query",
        "output": json.dumps(result),
        "output_media_type": SPARQL_JSON,
        "required_columns": required,
    }
    flags = draw(st.sampled_from([{}, {"ordered": True}, {"ignore_duplicates": False}]))
    return {**step, **flags}


def _like(reference: dict[str, Any], data: Any) -> str:
    """An actual result made from the reference's: rows dropped or repeated, columns reversed
    and renamed, numbers moved within or beyond the tolerance."""
    result = json.loads(reference["output"])
    rows = result["results"]["bindings"]
    picked = data.draw(st.lists(st.sampled_from(range(len(rows))), max_size=len(rows) + 2))
    nudge = data.draw(st.sampled_from(["", "000000001", "1"]))

    def moved(term: dict[str, Any]) -> dict[str, Any]:
        if "datatype" in term and "." in term["value"]:
            return {**term, "value": term["value"] + nudge}
        return term

    vars_ = result["head"]["vars"][::-1]
    new_rows = [{f"x{v}": moved(rows[i][v]) for v in vars_} for i in picked]
    return json.dumps(
        {"head": {"vars": [f"x{v}" for v in vars_]}, "results": {"bindings": new_rows}}
    )


def _case(reference: dict[str, Any], output: str, data: Any) -> tuple[Any, list[dict[str, Any]]]:
    """The prepared reference step and one actual step: ``output``, or one like the
    reference's (drawn from ``data``)."""
    ref = prepared_groups([[reference]])[0][0]
    if data.draw(st.booleans()):
        output = _like(reference, data)
    return ref, [{"name": "sparql_query", "status": "success", "output": output}]


@settings(max_examples=300, deadline=None)
@given(_sparql_reference(), _OUTPUTS, st.data())
def test_a_sparql_step_ruled_out_by_its_signature_never_matches(
    reference: dict[str, Any], output: str, data: Any
) -> None:
    ref, steps = _case(reference, output, data)
    scorer = StepScorer(steps)
    if data.draw(st.booleans()):
        # The output parsed already (as a comparison with another reference step leaves it):
        # the text is read all the same.
        scorer.score(_ask_reference(True), 0)
    if not scorer.may_match(ref, 0):
        assert StepScorer(steps).score(ref, 0) == 0.0


@settings(max_examples=300, deadline=None)
@given(_sparql_reference(), _OUTPUTS, st.data())
def test_the_closeness_bound_is_never_below_the_closeness(
    reference: dict[str, Any], output: str, data: Any
) -> None:
    ref, steps = _case(reference, output, data)
    scorer = StepScorer(steps)
    if scorer.would_match(ref, 0) > 0.0:
        return  # (bounds are asked only of candidates that do not match)
    bound, exact = scorer.closeness_bound(ref, 0)
    closeness, _ = StepScorer(steps).explain(ref, 0)
    assert closeness <= bound
    if exact:
        assert closeness == bound


def test_a_parsed_output_lacking_the_first_row_is_ruled_out_by_its_text() -> None:
    reference = {
        "name": "sparql_query",
        "output": _select_text(["urn:x", "urn:y"]),
        "output_media_type": SPARQL_JSON,
        "required_columns": ["s"],
    }
    ref = prepared_groups([[reference]])[0][0]
    steps = [{"name": "sparql_query", "status": "success", "output": _select_text(["urn:y"] * 3)}]
    scorer = StepScorer(steps)
    scorer.score(_ask_reference(True), 0)  # parses the output
    assert not scorer.may_match(ref, 0)  # "urn:x" is not in the text, parsed or not
    # (enough rows: before the text was read for a parsed output too, this was a "maybe")
    assert StepScorer(steps).score(ref, 0) == 0.0


_ASK_OUTPUTS = st.one_of(
    st.builds(
        lambda value, indent, key: json.dumps({"head": {}, key: value}, indent=indent),
        st.sampled_from([True, False, "true", 1, None]),
        st.sampled_from([None, 2]),
        st.sampled_from(["boolean", "bool\u0065an"]),
    ),
    st.sampled_from(['{"boolean":true}', '{"boolean" : false }', '{"bool\\u0065an": true}']),
    _select().map(json.dumps),
    st.just(json.dumps({"head": {"vars": ["boolean"]}, "results": {"bindings": []}})),
    st.sampled_from(["not json", "true", '{"results": 3}']),
)


def _ask_reference(value: bool) -> Any:
    """A prepared SPARQL ASK reference step of ``value``."""
    reference = {
        "name": "sparql_query",
        "output": json.dumps({"head": {}, "boolean": value}),
        "output_media_type": SPARQL_JSON,
        "required_columns": [],
    }
    return prepared_groups([[reference]])[0][0]


@settings(max_examples=300, deadline=None)
@given(st.booleans(), _ASK_OUTPUTS)
def test_an_ask_step_ruled_out_by_its_text_never_matches(value: bool, output: str) -> None:
    ref = _ask_reference(value)
    steps = [{"name": "sparql_query", "status": "success", "output": output}]
    if not StepScorer(steps).may_match(ref, 0):
        assert StepScorer(steps).score(ref, 0) == 0.0


def test_an_ask_step_is_ruled_out_by_the_key_or_the_value_it_lacks() -> None:
    ref = _ask_reference(True)

    def may(output: str) -> bool:
        steps = [{"name": "sparql_query", "status": "success", "output": output}]
        return StepScorer(steps).may_match(ref, 0)

    assert may('{"head": {}, "boolean": true}')
    assert not may('{"head": {}, "boolean": false}')  # the other value
    assert not may('{"head": {"vars": ["x"]}, "results": {"bindings": []}}')  # a SELECT
    assert may('{"head": {}, "bool\\u0065an": true}')  # escapes: the comparison decides


_IDS = st.sampled_from(["d1", "d2", "d/3", 'd"4', "é5", 6, 6.0])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_IDS, min_size=1, max_size=3),
    st.lists(_IDS, max_size=4),
    st.integers(min_value=1, max_value=4),
    st.booleans(),
)
def test_a_retrieval_step_ruled_out_by_its_signature_never_matches(
    wanted: list[Any], got: list[Any], k: int, ascii_only: bool
) -> None:
    reference = {
        "name": "retrieval",
        "output": json.dumps([{"id": i, "text": "t"} for i in wanted]),
    }
    ref = prepared_groups([[reference]])[0][0]
    output = json.dumps([{"id": i, "text": "t"} for i in got], ensure_ascii=ascii_only)
    steps = [{"name": "retrieval", "status": "success", "args": {"k": k}, "output": output}]
    if not StepScorer(steps).may_match(ref, 0):
        assert StepScorer(steps).score(ref, 0) == 0.0


def _closest_in_full(ref: Any, scorer: StepScorer, in_order: list[int]) -> str:
    """``_closest`` as it was before its bounds: every candidate explained in full, the
    closest shown (the first, latest-first, of equally close ones)."""
    candidates = in_order[::-1][: explain_module._MAX_CANDIDATES]
    best, best_a = -1.0, candidates[0]
    for a in candidates:
        closeness = 1.0 if scorer.would_match(ref, a) > 0.0 else scorer.explain(ref, a)[0]
        if closeness > best:
            best, best_a = closeness, a
    text = explain_module._candidate_text(ref, scorer, best_a, [])
    prefix = f"closest of {len(in_order)} candidates, " if len(in_order) > 1 else ""
    return f"{prefix}{explain_module._label(scorer.actual, best_a)}: {text}"


_RETRIEVAL_OUTPUTS = st.lists(st.sampled_from(["d1", "d2", "d3", "d4"]), max_size=4).map(
    lambda ids: json.dumps([{"id": i} for i in ids])
)


_WHOLE_OUTPUTS = st.sampled_from(['{"a": 1}', '{"a": 2}', '{"b": 1}', "[1]", "not json"])
_ARGS = st.sampled_from([{"q": "x"}, {"q": "y"}, {"q": "x", "k": 1}, {}])
_ARGS_REFERENCE = {"name": "find", "args": {"q": "x"}}


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.tuples(_sparql_reference(), st.lists(_OUTPUTS, min_size=1, max_size=9)),
        st.tuples(
            st.just({"name": "retrieval", "output": json.dumps([{"id": "d1"}, {"id": "d2"}])}),
            st.lists(_RETRIEVAL_OUTPUTS, min_size=1, max_size=9),
        ),
        # Kinds whose explanation is not graded: the closest is picked without bounds.
        st.tuples(
            st.sampled_from(
                [
                    {"name": "get", "output": '{"a": 1}', "output_media_type": "application/json"},
                    {"name": "get", "output": '{"a": 1}'},  # compared as text
                ]
            ),
            st.lists(_WHOLE_OUTPUTS, min_size=1, max_size=9),
        ),
        st.tuples(st.just(_ARGS_REFERENCE), st.lists(_ARGS, min_size=1, max_size=9)),
    )
)
def test_the_closest_candidate_is_the_one_explaining_every_candidate_shows(
    case: tuple[dict[str, Any], list[Any]],
) -> None:
    reference, outputs = case
    ref = prepared_groups([[reference]])[0][0]
    steps = [
        {
            "name": reference["name"],
            "id": f"c{i}",
            "status": "success",
            **(
                {"args": output}
                if isinstance(output, dict)
                else {"output": output, "args": {"k": 2}}
            ),
        }
        for i, output in enumerate(outputs)
    ]
    in_order = list(range(len(steps)))
    scorer = StepScorer(steps)
    for a in in_order:  # as matching leaves them: every candidate scored
        scorer.score(ref, a)
    shown = explain_module._closest(ref, scorer, in_order, [])
    assert shown == _closest_in_full(ref, StepScorer(steps), in_order)


def _select_text(rows: list[str]) -> str:
    bindings = [{"s": {"type": "uri", "value": v}} for v in rows]
    return json.dumps({"head": {"vars": ["s"]}, "results": {"bindings": bindings}})


def test_the_hint_reads_no_column_of_a_result_with_too_few_rows(monkeypatch: Any) -> None:
    rows = ["urn:a", "urn:b", "urn:c"]
    reference = [
        [
            {
                "name": "sparql_query",
                "output": _select_text(rows),
                "output_media_type": SPARQL_JSON,
                "required_columns": ["s"],
            }
        ],
        [{"name": "get_status", "output": '{"ok": true}', "output_media_type": "application/json"}],
    ]
    steps = [
        {"name": "sparql_query", "id": "c0", "status": "success", "output": _select_text(rows)},
        {"name": "sparql_query", "id": "c1", "status": "success", "output": _select_text(rows[:2])},
        {"name": "get_status", "id": "c2", "status": "success", "output": '{"ok": false}'},
    ]
    read: list[int] = []
    real_column = sparql_terms._column

    def counting_column(bindings: Any, var: str) -> Any:
        read.append(len(bindings))
        return real_column(bindings, var)

    monkeypatch.setattr(sparql_terms, "_column", counting_column)
    dataset = [
        {
            "template_id": "t",
            "questions": [{"id": "q", "question_text": "?", "reference_steps": reference}],
        }
    ]
    result = run_evaluation(dataset, [{"question_id": "q", "actual_steps": steps}])[0]
    assert result["reference_steps"][0][0]["mismatch"] == (
        "not evaluated: group 2 has no match, and matching stops there (on its own this step "
        "would match actual step sparql_query [0] (id c0))"
    )
    assert 2 not in read  # the two-row result, latest first, was ruled out by its row count
    assert 3 in read  # the three-row one was compared in full


def test_numbers_the_tolerance_merges_count_once_in_the_row_signature() -> None:
    def result(*values: str) -> str:
        term = {"type": "literal", "datatype": XSD + "decimal"}
        bindings = [{"a": {**term, "value": v}} for v in values]
        return json.dumps({"head": {"vars": ["a"]}, "results": {"bindings": bindings}})

    reference = {
        "name": "sparql_query",
        "output": result("1.0", "1.000000000001"),  # two rows, one value within the tolerance
        "output_media_type": SPARQL_JSON,
        "required_columns": ["a"],
    }
    ref = prepared_groups([[reference]])[0][0]
    steps = [{"name": "sparql_query", "status": "success", "output": result("1.0")}]
    assert StepScorer(steps).score(ref, 0) == 1.0
    assert StepScorer(steps).may_match(ref, 0)


@settings(max_examples=500, deadline=None)
@given(
    st.one_of(
        st.text(max_size=80),
        st.text(alphabet=st.sampled_from(["a", " ", "\t", "\n", "\u00a0", "\u2028", "é"])),
    )
)
def test_a_sparql_value_on_one_short_line_is_shown_as_the_split_and_join_show_it(
    text: str,
) -> None:
    from qa_eval.steps.sparql import explain as sparql_explain

    joined = " ".join(text.split())
    expected = joined if len(joined) <= 60 else joined[:59] + "…"
    assert sparql_explain._shown(text) == expected


def _explain_select_long(
    reference: Any,
    table: Any,
    act_vars: list[str],
    ordered: bool,
    ignore_duplicates: bool,
    parts: list[str],
) -> tuple[float, str]:
    """``_explain_select`` as it was, every text made at once (with the row differences)."""
    ref_cols = reference.columns
    required = reference.required
    kinds = {kind for kind, _ in ref_cols}
    read = sparql_explain._columns_that_matter(kinds, table, act_vars, required)
    act_cols = {v: table.column(v) for v in read}
    tolerant = tolerant_columns(ref_cols, table, act_vars)
    if tolerant is not None:
        ref_cols, table = tolerant
        act_cols = {v: table.column(v) for v in read}
    paired, taken = sparql_explain._pair_columns(ref_cols, act_vars, act_cols, required)
    missing_cols = [required[i] for i in range(len(required)) if i not in paired]
    parts.extend(
        sparql_explain._columns_not_found(
            missing_cols, ref_cols, required, act_vars, act_cols, taken
        )
    )
    found = sorted(paired)
    closeness = 0.5 * len(found) / len(required)
    if found:
        on = " on the columns found" if missing_cols else ""
        ref_rows = list(zip(*[ref_cols[i][1] for i in found]))
        act_rows = list(zip(*[act_cols[paired[i]][1] for i in found]))
        names = [required[i] for i in found]
        kinds = [ref_cols[i][0] for i in found]
        missing, extra, common = sparql_explain._missing_and_extra(
            ref_rows, act_rows, ordered, ignore_duplicates
        )
        listing = sparql_explain._listing
        if missing:
            parts.append(listing(missing, "rows missing", names, kinds, on))
        if extra:
            parts.append(listing(extra, "extra rows", names, kinds, on))
        row = None
        if ordered and not missing and not extra:
            row = next((r for r, (a, b) in enumerate(zip(ref_rows, act_rows)) if a != b), None)
        if row is not None:
            show_row = sparql_explain._show_row
            parts.append(
                f"rows in another order (ordered): row {row + 1} is "
                f"{show_row(act_rows[row], names, kinds)}, "
                f"expected {show_row(ref_rows[row], names, kinds)}"
            )
        elif not ignore_duplicates and (missing or extra) and set(ref_rows) == set(act_rows):
            parts.append("the same rows, repeated a different number of times")
        closeness += 0.5 * common
    return closeness, "; ".join(parts or ["the rows differ"])


@settings(max_examples=400, deadline=None)
@given(_sparql_reference(), _OUTPUTS, st.data())
def test_a_sparql_text_made_when_asked_is_the_text_made_at_once(
    reference: dict[str, Any], output: str, data: Any
) -> None:
    """The SELECT texts ``_closest`` makes only for the candidate shown (after comparing the
    closeness of several) are those made at once, and so is the closeness."""
    ref = prepared_groups([[reference]])[0][0]
    if data.draw(st.booleans()):
        output = _like(reference, data)
    try:
        actual = parse_sparql_json(json.loads(output))
        bindings = actual["results"]["bindings"]
    except (ValueError, KeyError):
        return  # (not a SELECT result: no text left to make later)
    act_vars = list(dict.fromkeys(actual["head"]["vars"]))
    flags = {k: reference[k] for k in ("ordered", "ignore_duplicates") if k in reference}
    sparql = ref.parsed
    if not sparql.rows or not bindings or not sparql.required:
        return
    required = sparql.required
    parts = []
    if len(required) > len(act_vars):  # (as explain_sparql_results words it)
        columns = ", ".join("?" + v for v in act_vars) or "none"
        parts.append(
            f"the actual result has {len(act_vars)} column{'s' if len(act_vars) != 1 else ''} "
            f"({columns}), {len(required)} are required ({', '.join('?' + v for v in required)})"
        )
    options = {"ordered": False, "ignore_duplicates": True, **flags}
    try:
        expected: Any = _explain_select_long(
            sparql, Table(bindings), act_vars, **options, parts=parts
        )
    except TypeError:
        expected = (0.0, "a term's 'value' is not a string")
    except SparqlResultError:
        return  # (a term that is not valid: the scorer reports it as a problem)
    closeness, text = sparql_explanation(sparql, actual, **flags)
    made = text if isinstance(text, str) else text()
    assert (closeness, made) == expected
