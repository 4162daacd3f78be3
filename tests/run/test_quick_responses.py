"""The responses' fast path (``run.prepare.responses._quick``) against the full checks: the same
prepared responses, and the same problems (it must never accept a response they refuse)."""

from __future__ import annotations

import math
from typing import Any, ClassVar
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qa_eval.errors import InputError
from qa_eval.run.prepare import Problems, Question, Unknown, prepare_responses
from qa_eval.run.prepare import responses as module

KNOWN = ["q0", "q1", 7]
QUESTIONS = [Question("t", qid, {}, None, f"q {qid!r}") for qid in KNOWN]

# Values that pass some checks and fail others: every type the checks tell apart.
ODD = st.sampled_from(
    [
        None,
        True,
        False,
        0,
        -1,
        3,
        2**70,
        -(2**70),
        0.0,
        -0.0,
        1.5,
        -2.5,
        math.inf,
        -math.inf,
        math.nan,
        1e308,
        "",
        "x",
        "success",
        "error",
        "q0",
        [],
        ["a"],
        [1],
        {},
        {"a": 1},
    ]
)
IDS = st.sampled_from(["q0", "q1", 7, "nope", True, 7.0, None])
STEP = (
    st.dictionaries(
        st.sampled_from(["name", "status", "args", "id", "error", "lost", "output"]),
        st.one_of(ODD, st.sampled_from(["search", "success", "failed"])),
    ).map(lambda step: {"name": "search", **step})
    | ODD
)
RESPONSE = st.dictionaries(
    st.sampled_from(
        [
            "question_id",
            "trial",
            "status",
            "actual_answer",
            "error",
            "input_tokens",
            "output_tokens",
            "total_tokens",
            "elapsed_sec",
            "actual_steps",
        ]
    ),
    st.one_of(ODD, IDS, st.lists(STEP, max_size=4)),
)


def _prepared(data: Any, quick: bool) -> Any:
    """What ``prepare_responses`` gives (each response as its fields), or its error's
    problems; ``quick``: with the fast path, else with the full checks only."""
    with mock.patch.object(module, "_quick", module._quick if quick else lambda *args: None):
        unknown = Unknown()
        try:
            prepared = prepare_responses(data, QUESTIONS, "r.json", unknown)
        except InputError as e:
            return "error", str(e), e.problems  # type: ignore[attr-defined]
    kept = [
        (qid, [(r.question_id, r.raw is _given(data, r), r.place, r.is_error, r.successful)])
        for qid, rs in prepared.items()
        for r in rs
    ]
    return kept, unknown.as_dict()


def _given(data: Any, response: Any) -> Any:
    """The response given at the prepared response's place."""
    return data[response.place[1]]


@settings(max_examples=400, deadline=None)
@given(st.lists(RESPONSE, max_size=5))
def test_quick_gives_what_the_checks_give(responses: list[dict[str, Any]]) -> None:
    for response in responses:  # most responses name a known question
        response.setdefault("question_id", "q0")
    assert _prepared(responses, True) == _prepared(responses, False)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(IDS.filter(lambda q: q is not None), RESPONSE, max_size=4))
def test_quick_keyed_by_question_id(responses: dict[Any, dict[str, Any]]) -> None:
    assert _prepared(responses, True) == _prepared(responses, False)


@pytest.mark.parametrize(
    "response",
    [
        {"question_id": "q0", "input_tokens": True},
        {"question_id": "q0", "elapsed_sec": math.nan},
        {"question_id": "q0", "elapsed_sec": math.inf},
        {"question_id": "q0", "input_tokens": -1},
        {"question_id": "q0", "output_tokens": -1},
        {"question_id": "q0", "total_tokens": -1},
        {"question_id": "q0", "elapsed_sec": -0.5},
        {"question_id": "q0", "status": "done"},
        {"question_id": "q0", "error": 3},
        {"question_id": "q0", "actual_steps": None},
        {"question_id": "q0", "actual_steps": [{"name": "s", "lost": [1]}]},
        {"question_id": "q0", "actual_steps": [{"name": "s", "id": True}]},
        {"question_id": "q0", "actual_steps": [{"name": "s", "status": 1}]},
        # no name (the fast path's KeyError), first or after a usual step
        {"question_id": "q0", "actual_steps": [{"id": "s1", "args": {}}]},
        {"question_id": "q0", "actual_steps": [{"name": "s"}, {"status": "success"}]},
        {"question_id": "q0", "actual_steps": [{"name": "s", "args": 1}]},
        {"question_id": "q0", "actual_steps": [{"name": "s", "id": 1.5}]},
        {"question_id": "q0", "actual_steps": [{"name": "s", "error": ["x"]}]},
        {"question_id": True},
        {"question_id": "q0", "trial": 1.5},
    ],
)
def test_quick_refuses_what_the_checks_refuse(response: dict[str, Any]) -> None:
    """Each of these has a problem: the fast path leaves it to the checks, which word it."""
    known = set(KNOWN)
    assert module._quick(("response", 0), None, response, known, module.Seen()) is None
    problems = Problems("r.json")
    module._check(("response", 0), None, response, problems, known, module.Seen())
    assert problems.items


def test_step_without_name_through_prepare() -> None:
    """A step without a name, which the fast path leaves to the checks: the same problem as
    with the full checks only."""
    responses = [{"question_id": "q0", "actual_steps": [{"name": "s"}, {"id": "c1"}]}]
    quick, full = _prepared(responses, True), _prepared(responses, False)
    assert quick == full
    assert quick[0] == "error" and "actual_steps[1].name: missing" in quick[1]


def test_plain_only_from_the_fast_path() -> None:
    """The fast path notes that a response has no trial and no lost step (the run then skips
    its own tests); the full checks (a trial, a lost step) note nothing."""
    plain = {"question_id": "q0", "actual_steps": [{"name": "s"}]}
    trial = {"question_id": "q1", "trial": 1, "actual_steps": [{"name": "s"}]}
    lost = {"question_id": 7, "actual_steps": [{"name": "s", "lost": ["output"]}]}
    prepared = prepare_responses([plain, trial, lost], QUESTIONS)
    assert [prepared[q][0].plain for q in KNOWN] == [True, False, False]


def test_quick_huge_integer_count() -> None:
    """An integer count too large for a float, beside a float time: accepted, as the checks
    accept it."""
    response = {"question_id": "q0", "input_tokens": 10**400, "elapsed_sec": 1.5}
    prepared = prepare_responses([response], QUESTIONS)
    assert prepared["q0"][0].raw is response


def test_line_numbers_past_their_end() -> None:
    """JSON lines whose line numbers end early fail as before (IndexError at that line)."""

    class Lines(list):  # type: ignore[type-arg]
        line_numbers: ClassVar[list[int]] = [3]

    with pytest.raises(IndexError):
        prepare_responses(Lines([{"question_id": "q0"}, {"question_id": "q1"}]), QUESTIONS)
    lines = Lines([{"question_id": "q0"}])
    assert prepare_responses(lines, QUESTIONS)["q0"][0].place == ("line", 3)


def test_results_copy_the_counts_timed_or_not() -> None:
    """A result copies the counts and time its response has: all four at once when the fast
    path found them (``timed``), else each tested (some missing, an int time, a trial)."""
    from qa_eval import run_evaluation

    counts = {"input_tokens": 5, "output_tokens": 2, "total_tokens": 7, "elapsed_sec": 1.5}
    reference = [
        {
            "template_id": "t",
            "questions": [{"id": f"q{i}", "question_text": "?"} for i in range(4)],
        }
    ]
    responses = [
        {"question_id": "q0", **counts},
        {"question_id": "q1", "input_tokens": 5, "elapsed_sec": 1.5},
        {"question_id": "q2", **counts, "elapsed_sec": 2},
        {"question_id": "q3", "trial": 1, **counts},
    ]
    prepared = prepare_responses(
        responses, [Question("t", f"q{i}", {}, None, "r") for i in range(4)]
    )
    assert [prepared[f"q{i}"][0].timed for i in range(4)] == [True, False, False, False]
    results = run_evaluation(reference, responses)
    keys = list(counts)
    assert [[k for k in result if k in counts] for result in results] == [
        keys,
        ["input_tokens", "elapsed_sec"],
        keys,
        keys,
    ]
    assert [result["elapsed_sec"] for result in results] == [1.5, 1.5, 2, 1.5]
