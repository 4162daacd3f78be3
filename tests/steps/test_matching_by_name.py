"""Matching scores a reference step only against the actual steps of a name that can match it
(``StepScorer.named``; issue 36): the matches, the scores and the problems recorded are those
of scoring it against every successful step, in the same order."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from fakes import prepared_groups
from qa_eval.steps.compare import StepScorer
from qa_eval.steps.matching import greedy_matches, upper_bound

IRI = "urn:x:oslo"
SELECT = json.dumps(
    {"head": {"vars": ["s"]}, "results": {"bindings": [{"s": {"type": "uri", "value": IRI}}]}}
)
REFERENCE_STEPS = [
    {"name": "iri_discovery", "output": IRI, "output_media_type": "text/uri"},
    {
        "name": "sparql_query",
        "output": SELECT,
        "output_media_type": "application/sparql-results+json",
        "required_columns": ["s"],
    },
    {"name": "get_status", "output": '{"ok": true}', "output_media_type": "application/json"},
    {"name": "read_meter", "output": "12 kW"},
    {"name": "send_alert", "args": {"to": "a"}},
]
NAMES = ["autocomplete_search", "sparql_query", "get_status", "read_meter", "send_alert"]
OUTPUTS = [SELECT, '{"ok": true}', '{"ok": false}', "12 kW", "not json", '{"results": 1}', None]


@st.composite
def _case(draw: Any) -> tuple[Any, list[dict[str, Any]]]:
    groups = draw(
        st.lists(
            st.lists(st.sampled_from(REFERENCE_STEPS), min_size=1, max_size=2),
            min_size=1,
            max_size=3,
        )
    )
    steps = []
    for i in range(draw(st.integers(min_value=0, max_value=8))):
        step: dict[str, Any] = {
            "name": draw(st.sampled_from(NAMES)),
            "id": f"c{i}",
            "status": draw(st.sampled_from(["success", "success", "error"])),
            "args": draw(st.sampled_from([{"to": "a"}, {"to": "b"}])),
        }
        output = draw(st.sampled_from(OUTPUTS))
        if output is not None:
            step["output"] = output
        steps.append(step)
    return prepared_groups(groups), steps


@settings(max_examples=300, deadline=None)
@given(_case())
def test_scoring_by_name_gives_the_matches_and_problems_of_scoring_every_step(
    case: tuple[Any, list[dict[str, Any]]],
) -> None:
    groups, steps = case
    by_name, every = StepScorer(steps), StepScorer(steps)
    # A copy of the candidates: matching then scores every successful step, as before.
    assert greedy_matches(groups, by_name, by_name.successful()) == greedy_matches(
        groups, every, list(every.successful())
    )
    assert upper_bound(groups, by_name, by_name.successful()) == upper_bound(
        groups, every, list(every.successful())
    )
    assert list(by_name.problems.items()) == list(every.problems.items())
