"""Explanations reuse what matching computed: the same texts as from scratch, no pair compared
twice, no SPARQL column read twice; and a finished run is never written out for asyncio."""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakes import prepared_groups
from qa_eval import run_evaluation
from qa_eval.steps.compare import StepScorer
from qa_eval.steps.explain import explain_unmatched
from qa_eval.steps.matching import match_steps
from qa_eval.steps.outputs import iri_excluded, iri_found, iri_token, shown
from qa_eval.steps.sparql import terms as sparql_terms
from qa_eval.steps.sparql.explain import _distinct, _shared
from qa_eval.steps.sparql.terms import IRI as IRI_KIND
from qa_eval.steps.sparql.terms import MIXED, NUMBER

IRI = "urn:x:oslo"


def sparql(vars_: list[str], rows: list[list[str]]) -> str:
    """A SELECT result of plain literals, indented as tool outputs usually are."""
    bindings = [{v: {"type": "literal", "value": x} for v, x in zip(vars_, row)} for row in rows]
    return json.dumps({"head": {"vars": vars_}, "results": {"bindings": bindings}}, indent=2)


ROWS = [["a", "1"], ["b", "2"], ["c", "3"]]
REFERENCE = [
    [{"name": "iri_discovery", "output": IRI, "output_media_type": "text/uri"}],
    [
        {
            "name": "sparql_query",
            "output": sparql(["s", "n"], ROWS),
            "output_media_type": "application/sparql-results+json",
            "required_columns": ["s", "n"],
        },
        {"name": "get_status", "output": '{"ok": true}', "output_media_type": "application/json"},
    ],
]
AUTOCOMPLETE = {
    "name": "autocomplete_search",
    "status": "success",
    "output": json.dumps(
        {
            "head": {"vars": ["iri"]},
            "results": {"bindings": [{"iri": {"type": "uri", "value": IRI}}]},
        }
    ),
}

# Actual steps for the second group that leave something unmatched, each differently.
CASES: dict[str, list[dict[str, Any]]] = {
    "row missing": [
        {"name": "sparql_query", "status": "success", "output": sparql(["x", "y"], ROWS[:2])},
        {"name": "get_status", "status": "success", "output": '{"ok": true}'},
    ],
    "column wrong": [
        {"name": "sparql_query", "status": "success", "output": sparql(["x", "y"], ROWS)},
        {
            "name": "sparql_query",
            "id": "q2",
            "status": "success",
            "output": sparql(["x", "z"], [[s, "9"] for s, _ in ROWS]),
        },
        {"name": "get_status", "status": "success", "output": '{"ok": false}'},
    ],
    "failed and missing": [
        {"name": "sparql_query", "status": "error", "error": "timeout"},
    ],
    "out of order": [
        {"name": "get_status", "status": "success", "output": '{"ok": true}'},
        {"name": "sparql_query", "status": "success", "output": sparql(["x", "y"], ROWS)},
    ],
}


def scenario(name: str) -> tuple[Any, list[dict[str, Any]]]:
    steps = [AUTOCOMPLETE, *CASES[name]]
    if name == "out of order":
        steps = [*CASES[name], AUTOCOMPLETE]
    return prepared_groups(REFERENCE), steps


@pytest.mark.parametrize("name", sorted(CASES))
def test_explanations_are_those_of_a_scorer_that_starts_from_scratch(name: str) -> None:
    groups, steps = scenario(name)
    scorer = StepScorer(steps)
    matches, _ = match_steps(groups, scorer)
    reused = explain_unmatched(groups, scorer, matches)
    fresh = explain_unmatched(groups, StepScorer(steps), matches)
    assert reused  # every case leaves a step unmatched
    assert reused == fresh


@pytest.mark.parametrize("name", sorted(CASES))
def test_no_pair_is_compared_and_no_column_read_twice(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    groups, steps = scenario(name)
    compared: Counter[tuple[int, int, int]] = Counter()
    columns: Counter[tuple[int, str]] = Counter()
    real_compare = StepScorer._compare
    real_column = sparql_terms._column

    def counting_compare(self: StepScorer, ref: Any, act_index: int) -> float:
        compared[(ref.group, ref.index, act_index)] += 1
        return real_compare(self, ref, act_index)

    def counting_column(bindings: Any, var: str) -> Any:
        columns[(id(bindings), var)] += 1
        return real_column(bindings, var)

    monkeypatch.setattr(StepScorer, "_compare", counting_compare)
    monkeypatch.setattr(sparql_terms, "_column", counting_column)
    scorer = StepScorer(steps)
    matches, _ = match_steps(groups, scorer)
    explain_unmatched(groups, scorer, matches)
    explain_unmatched(groups, scorer, matches)  # asked again: everything is known by now
    assert compared and max(compared.values()) == 1
    assert not columns or max(columns.values()) == 1


class _Counted(dict):  # type: ignore[type-arg]
    formatted = 0

    def __repr__(self) -> str:
        _Counted.formatted += 1
        return super().__repr__()


def test_asyncio_run_of_the_results_never_formats_them() -> None:
    reference = [{"template_id": "t", "questions": [{"id": "q", "question_text": "?"}]}]
    results = run_evaluation(reference, [{"question_id": "q", "actual_answer": "x"}])
    results.append(_Counted(question_id="extra"))

    async def main() -> Any:
        return await results

    assert asyncio.run(results) is results  # type: ignore[arg-type]
    assert asyncio.run(main()) is results
    assert repr(results) == "<Results of 2 questions>"
    assert _Counted.formatted == 0
    assert str(results) == str(list(results))  # print() shows the list, as the original's
    assert _Counted.formatted == 2  # once for each side


@given(st.text(alphabet=st.sampled_from("ab \t\n\u00a0\u2028\u3000é"), max_size=12))
def test_shown_takes_its_shortcut_only_where_the_long_way_agrees(value: str) -> None:
    words = " ".join(value.split()) if value.strip() else repr(value)
    assert shown(value, 8) == (words if len(words) <= 8 else words[:7] + "…")


class _Level(int):  # an int subclass: not the shortcut's exact int, the long way decides
    def __repr__(self) -> str:
        return f"Level({int(self)})"


@given(
    st.one_of(
        st.integers(min_value=-(2**80), max_value=2**80),
        st.booleans(),
        st.integers(min_value=0, max_value=9).map(_Level),
    ),
    st.integers(min_value=2, max_value=30),
)
def test_shown_of_a_number_is_its_json_text_or_its_repr(value: int, limit: int) -> None:
    # The shortcut for an exact int (its digits) against the long way: orjson's JSON text,
    # or repr when orjson refuses (beyond 64 bits); booleans and subclasses take the long way.
    try:
        text = orjson.dumps(value).decode()
    except (TypeError, orjson.JSONEncodeError):
        text = repr(value)
    assert shown(value, limit) == (text if len(text) <= limit else text[: limit - 1] + "…")
    if type(value) is bool:
        assert shown(value) == ("true" if value else "false")


_TOKEN_TEXT = st.text(alphabet=st.sampled_from("ab:/<>\"'(),[] \t\n\x1c\u3000"), max_size=16)


@given(_TOKEN_TEXT, st.text(alphabet=st.sampled_from("ab:/"), min_size=1, max_size=4))
def test_iri_token_is_the_whole_token_pattern(text: str, iri: str) -> None:
    pattern = r"(?<![^\s<\"'(,\[])" + re.escape(iri) + r"(?![^\s>\"'),\]])"
    assert iri_token(text, iri) == (re.search(pattern, text) is not None)


@given(
    st.lists(
        st.tuples(st.sampled_from(["uri", "literal"]), st.text("ab:/<> \\", max_size=5)),
        max_size=4,
    ),
    st.text(alphabet=st.sampled_from("ab:/"), min_size=1, max_size=4),
    st.booleans(),
)
def test_an_iri_excluded_from_the_text_is_never_found(
    terms: list[tuple[str, str]], iri: str, as_json: bool
) -> None:
    rows = [{"x": {"type": kind, "value": value}} for kind, value in terms]
    result = {"head": {"vars": ["x"]}, "results": {"bindings": rows}}
    text = json.dumps(result, indent=1) if as_json else " ".join(v for _, v in terms)
    parsed = result if as_json else None
    if iri_excluded(text, iri, is_json=as_json):
        assert not iri_found(iri, parsed, text)
    if iri_excluded(text, iri):  # not told whether it is JSON
        assert not iri_found(iri, parsed, text)


def _old_pairs(kind: Any, values: list[Any]) -> set[Any]:
    return set(values) if kind == MIXED else {(kind, v) for v in values}


_KINDS = st.sampled_from([IRI_KIND, NUMBER, ("lang", "en")])
_COLUMN = st.one_of(
    st.tuples(_KINDS, st.lists(st.sampled_from([1, 1.0, 2, "a", "b"]), min_size=1, max_size=6)),
    st.tuples(
        st.just(MIXED),
        st.lists(st.tuples(_KINDS, st.sampled_from([1, 2.0, "a"])), min_size=1, max_size=6),
    ),
)


@given(_COLUMN, _COLUMN)
def test_shared_terms_are_those_of_kind_value_pairs(a: Any, b: Any) -> None:
    expected = len(_old_pairs(*a) & _old_pairs(*b))
    assert _shared(_distinct(*a), _distinct(*b)) == expected
    assert len(_distinct(*a)[1]) == len(_old_pairs(*a))


_ALERT = [[{"name": "send_alert", "args": {"to": "a", "level": 2}}]]
_DIFFERS = "arguments differ at args.level: reference 2, actual"


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [
        # Two steps of the name (looked up at once), the failed ones apart or not: every
        # split of the two between the successful and the failed steps.
        (
            ["error", "other", "success"],
            "the actual step send_alert [0] (id c0) has status error: down; "
            f"actual step send_alert [2] (id c2): {_DIFFERS} 7",
        ),
        (
            ["success", "error", "other"],
            "the actual step send_alert [1] (id c1) has status error: down; "
            f"actual step send_alert [0] (id c0): {_DIFFERS} 5",
        ),
        (
            ["success", "other:error", "success"],
            f"closest of 2 candidates, actual step send_alert [2] (id c2): {_DIFFERS} 7",
        ),
        (
            ["error", "error", "other"],
            "the actual step send_alert [1] (id c1) has status error: down (and 1 more such steps)",
        ),
        (
            ["success", "success", "other"],
            f"closest of 2 candidates, actual step send_alert [1] (id c1): {_DIFFERS} 6",
        ),
        # Three of the name: the pass over the positions.
        (
            ["success", "error", "success", "success"],
            "the actual step send_alert [1] (id c1) has status error: down; "
            f"closest of 3 candidates, actual step send_alert [3] (id c3): {_DIFFERS} 8",
        ),
    ],
)
def test_the_steps_of_a_name_are_found_however_many_and_whichever_failed(
    statuses: list[str], expected: str
) -> None:
    steps = []
    for i, spec in enumerate(statuses):
        name = "other" if spec.startswith("other") else "send_alert"
        status = spec.rpartition(":")[2] if ":" in spec or name != "other" else "success"
        step = {"name": name, "id": f"c{i}", "status": status, "args": {"to": "a", "level": i + 5}}
        if status != "success":
            step["error"] = "down"
        steps.append(step)
    groups = prepared_groups(_ALERT)
    scorer = StepScorer(steps)
    matches, _ = match_steps(groups, scorer)
    assert explain_unmatched(groups, scorer, matches) == {(0, 0): expected}
