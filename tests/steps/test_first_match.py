"""``StepScorer.first_match`` (issue 36 §6): the explanations' one call for the first candidate
a reference step would match. It compares whole texts, arguments and JSON values itself, so it
is checked here against asking ``would_match`` of each candidate in turn, over values Python's
equality mixes up (1, 1.0, True), outputs that are missing or not JSON, and other names."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from fakes import prepared_groups
from qa_eval.steps.compare import StepScorer

_VALUES = st.sampled_from([1, 1.0, True, 0, False, None, "a", [1], [True], {"k": 1}, {"k": 1.0}])
_REFERENCES = st.one_of(
    _VALUES.map(lambda v: {"name": "get", "output": json.dumps(v)}),  # whole text
    _VALUES.map(lambda v: {"name": "get", "args": {"v": v}}),  # arguments
    _VALUES.map(
        lambda v: {"name": "get", "output": json.dumps(v), "output_media_type": "application/json"}
    ),
    st.just({"name": "iri_discovery", "output": "urn:x", "output_media_type": "text/uri"}),
)
_OUTPUTS = st.one_of(
    _VALUES.map(json.dumps), _VALUES, st.sampled_from(["not json", "urn:x", ' "a"'])
)
_STEPS = st.builds(
    lambda name, output, args: {"name": name, "status": "success", "output": output, "args": args},
    st.sampled_from(["get", "other", "sparql_query"]),
    _OUTPUTS,
    st.one_of(st.none(), _VALUES.map(lambda v: {"v": v})),
)


@settings(max_examples=300, deadline=None)
@given(_REFERENCES, st.lists(_STEPS, max_size=5), st.data())
def test_first_match_is_the_first_candidate_would_match_says_matches(
    reference: dict[str, Any], steps: list[dict[str, Any]], data: Any
) -> None:
    ref = prepared_groups([[reference]])[0][0]
    candidates = data.draw(st.permutations(range(len(steps))))
    one_by_one = StepScorer(steps)
    expected = next((a for a in candidates if one_by_one.would_match(ref, a) > 0.0), None)
    scorer = StepScorer(steps)
    if data.draw(st.booleans()):  # some scores known already, as after matching
        for a in candidates[: data.draw(st.integers(0, len(candidates)))]:
            scorer.score(ref, a)
    assert scorer.first_match(ref, candidates) == expected
