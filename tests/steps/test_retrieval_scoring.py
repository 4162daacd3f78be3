"""Retrieval steps scored from id sets kept per step (issue 36 §6).

``StepScorer`` keeps each actual retrieval step's first k ids (a list, read by the reference's
set) and each reference step's first k ids as a set, and scores recall@k from them: the score
is ``spec_recall_at_k``'s. ``closeness_bound`` of a retrieval step is the closeness ``explain``
gives (the share of the reference's first k ids among the actual step's first k), exact, so
``_closest`` explains only the candidate it shows."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fakes import prepared_groups
from qa_eval.metrics.retrieval.ranking import spec_recall_at_k
from qa_eval.steps.compare import StepScorer
from qa_eval.steps.kinds import APPLICATION_JSON, COMPARE_JSON, ReferenceStep
from qa_eval.steps.outputs import shown

# Few ids, so that the lists share some; 1 and 1.0 are the same id in a set.
_IDS = st.sampled_from(["a", "b", "c", "d", 'q"x', 1, 1.0, 2])
_REFERENCE_IDS = st.lists(_IDS, min_size=0, max_size=6)
_K = st.one_of(st.integers(1, 7), st.sampled_from([0, -1, True, "3", None]))


def _output(ids: list[Any]) -> str:
    return json.dumps([{"id": i, "text": "t"} for i in ids])


_ACTUAL_OUTPUTS = st.one_of(
    st.builds(_output, st.lists(_IDS, max_size=8)),
    st.sampled_from(["{not json", '{"id": "a"}', '[{"id": "a"}, {"x": 1}]', '[{"id": null}]']),
)


def _reference(ids: list[Any]) -> Any:
    return prepared_groups([[{"name": "retrieval", "args": {"k": 5}, "output": _output(ids)}]])[0][
        0
    ]


def _steps(output: str, k: Any, name: str = "retrieval") -> list[dict[str, Any]]:
    return [{"name": name, "status": "success", "args": {"k": k}, "output": output}]


@settings(max_examples=400, deadline=None)
@given(_REFERENCE_IDS, _ACTUAL_OUTPUTS, _K, st.sampled_from(["retrieval", "search"]), st.booleans())
def test_the_retrieval_bound_is_the_closeness(
    reference: list[Any], output: str, k: Any, name: str, scored_first: bool
) -> None:
    ref = _reference(reference)
    steps = _steps(output, k, name)
    scorer = StepScorer(steps)
    if scored_first:  # (the sets kept by a comparison, or made by the bound itself)
        scorer.score(ref, 0)
    bound, exact = scorer.closeness_bound(ref, 0)
    closeness, _ = StepScorer(steps).explain(ref, 0)
    assert closeness <= bound
    if exact:
        assert closeness == bound


@settings(max_examples=400, deadline=None)
@given(_REFERENCE_IDS, st.lists(_IDS, max_size=8), st.integers(1, 7))
def test_the_retrieval_score_is_spec_recall_at_k(
    reference: list[Any], actual: list[Any], k: int
) -> None:
    ref = _reference(reference)
    scorer = StepScorer(_steps(_output(actual), k))
    expected = spec_recall_at_k(reference, actual, k)
    assert scorer.score(ref, 0) == expected
    # Against a second reference step, from the same actual step's kept set.
    other = prepared_groups(
        [
            [{"name": "retrieval", "output": _output(["a"])}],
            [{"name": "retrieval", "output": _output(reference[::-1])}],
        ]
    )[1][0]
    assert scorer.score(other, 0) == spec_recall_at_k(reference[::-1], actual, k)


@settings(max_examples=300, deadline=None)
@given(_REFERENCE_IDS, st.lists(_IDS, max_size=8), st.integers(1, 7))
def test_the_text_names_the_first_three_reference_ids_not_in_the_top_k(
    reference: list[Any], actual: list[Any], k: int
) -> None:
    # The reference's first k ids, each once, that the actual step's first k lack: the
    # first three shown (then how many more), the closeness their share.
    first = list(dict.fromkeys(reference[:k]))
    absent = [i for i in first if i not in set(actual[:k])]
    more = f" and {len(absent) - 3} more" if len(absent) > 3 else ""
    closeness, text = StepScorer(_steps(_output(actual), k)).explain(_reference(reference), 0)
    assert text == (f"reference ids not in the top {k}: {', '.join(map(shown, absent[:3]))}{more}")
    assert closeness == 1.0 - len(absent) / max(len(first), 1)


def test_only_the_candidate_shown_is_explained() -> None:
    # Three candidates none of which matches: their closeness comes from the bounds, and only
    # the one shown (the first of the closest, here the latest) gets a text.
    ref = _reference(["a", "b", "c"])
    steps = [
        {"name": "retrieval", "id": f"c{i}", "args": {"k": 3}, "output": _output(ids)}
        for i, ids in enumerate([["x"], ["y", "z"], ["x", "y"]])
    ]
    explained: list[int] = []

    class Counting(StepScorer):
        def explanation(self, ref: Any, act_index: int) -> Any:
            explained.append(act_index)
            return super().explanation(ref, act_index)

    from qa_eval.steps.explain import explain_unmatched
    from qa_eval.steps.matching import match_steps

    counting = Counting(steps)
    matches, total = match_steps([[ref]], counting)
    assert total == 0.0
    texts = explain_unmatched([[ref]], counting, matches, None)
    assert texts[(0, 0)] == (
        "closest of 3 candidates, actual step retrieval [2] (id c2): reference ids not in the "
        "top 3: a, b, c"
    )
    assert explained == [2]


@pytest.mark.parametrize("output", ["{not json", '[{"id": "a"}]', [{"id": "a"}], None, 5])
def test_an_output_parsed_before_scores_and_explains_as_one_read_first_by_retrieval(
    output: Any,
) -> None:
    # A retrieval step reads its output itself (orjson, at once) unless a comparison parsed
    # it before or it is no JSON text: then ``_parsed`` reads it, with the same result.
    ref = _reference(["a", "b"])
    steps = [{"name": "retrieval", "status": "success", "args": {"k": 2}, "output": output}]
    fresh = StepScorer(steps)
    expected = (fresh.score(ref, 0), fresh.explain(ref, 0))
    as_json = ReferenceStep(0, 1, {"name": "retrieval"}, "retrieval", APPLICATION_JSON, [])
    as_json.kind = COMPARE_JSON
    read_before = StepScorer(steps)
    read_before.score(as_json, 0)  # (keeps the parsed output, or its error)
    assert (read_before.score(ref, 0), read_before.explain(ref, 0)) == expected
    assert expected[0] == (0.5 if output in ('[{"id": "a"}]', [{"id": "a"}]) else 0.0)


@pytest.mark.parametrize("k", [True, False, 0, -2, 2.0, "2", None])
def test_a_k_that_is_no_positive_int_is_a_problem_of_the_step(k: Any) -> None:
    # An int above 0 is told by its type; anything else (a bool, an int is not) is checked
    # in full, and recorded as the step's problem.
    ref = _reference(["a", "b"])
    scorer = StepScorer(_steps(_output(["a", "c"]), k))
    assert scorer.score(ref, 0) == 0.0
    assert scorer.problems == {0: f"actual_steps[0]: args.k: must be a positive integer, got {k!r}"}
    assert StepScorer(_steps(_output(["a", "c"]), 2)).score(ref, 0) == 0.5
