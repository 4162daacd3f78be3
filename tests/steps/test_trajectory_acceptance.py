# ruff: noqa: E501  (hand tables: one case a line)
"""Acceptance of issue 25 sections 1 and 2 (and the trials of section 4) through the paths a user
takes: ``run_evaluation(reference, responses)`` with ``reference_trajectory`` in the question and
``actual_steps`` in the response, ``qa-eval evaluate`` / ``compare`` / ``metrics``, and ragas' flat
rows. Each test reads one promise of the issue literally (docs/metrics/trajectory.md)."""

from __future__ import annotations

import copy
import itertools
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from openai_stub import StubServer, completion, prompt_text
from qa_eval import compute_aggregates, run_evaluation
from qa_eval.cli import main
from qa_eval.io.flat import flat_to_dataset

SCALARS = (
    "trajectory_match", "trajectory_alternative", "tool_recall", "tool_precision", "tool_f1",
    "tool_args_score", "tool_calls_missing", "tool_calls_extra", "tool_calls_failed",
    "tool_calls_repeated", "tool_calls_ratio",
)  # fmt: skip
FAMILY = (*SCALARS, "trajectory_cost", "trajectory_error", "trajectory_reason", "trajectory_calls")


def S(name: str, status: str = "success", id: str | None = None, **args: Any) -> dict[str, Any]:
    """An actual step."""
    out: dict[str, Any] = {"name": name, "args": args, "status": status}
    if id is not None:
        out["id"] = id
    return out


def C(name: Any, optional: bool = False, **args: Any) -> dict[str, Any]:
    """A reference call."""
    out: dict[str, Any] = {"name": name, "args": args}
    if optional:
        out["optional"] = True
    return out


def dataset(*trajectories: Any) -> list[dict[str, Any]]:
    questions = [
        {"id": f"q{i}", "question_text": "fly", "reference_trajectory": t}
        for i, t in enumerate(trajectories)
    ]
    return [{"template_id": "t", "questions": questions}]


def run(trajectory: Any, steps: Any, **options: Any) -> dict[str, Any]:
    """The result of one question through ``run_evaluation``."""
    response: dict[str, Any] = {"question_id": "q0"}
    if steps is not None:
        response["actual_steps"] = steps
    return run_evaluation(dataset(copy.deepcopy(trajectory)), [response], **options)[0]


def values(result: dict[str, Any]) -> dict[str, Any]:
    return {k: result.get(k) for k in SCALARS}


# --- 1. the reference ---------------------------------------------------------------------------


def test_list_form_is_the_mapping_form_with_the_defaults() -> None:
    calls = [C("search", to="BGO"), C("book", flight="F1")]
    cases = [
        [S("search", to="BGO"), S("book", flight="F1")],
        [S("book", flight="F1"), S("search", to="BGO"), S("other")],  # reordered + extra
        [S("search", to="BGO", extra=1), S("book", flight="F1")],  # extra argument
        [S("search", to="BGO")],
    ]
    explicit = {"match": "superset", "ordered": False, "args": "exact", "calls": calls}
    for steps in cases:
        listed, mapped, bare = run(calls, steps), run(explicit, steps), run({"calls": calls}, steps)
        assert values(listed) == values(mapped) == values(bare)
    # the defaults themselves: superset (extra calls free), unordered, exact arguments
    assert [run(calls, s)["trajectory_match"] for s in cases] == [1.0, 1.0, 0.0, 0.0]


def test_name_as_a_list_means_any_of_these_tools() -> None:
    result = run([C(["search_flights", "find_flights"], to="BGO")], [S("find_flights", to="BGO")])
    assert result["trajectory_match"] == 1.0
    assert result["reference_trajectory"][0]["matches"] == 0
    assert run([C(["a", "b"])], [S("c")])["trajectory_match"] == 0.0


def test_optional_calls_are_not_required_and_when_matched_not_extra() -> None:
    reference = {
        "match": "unordered",
        "calls": [C("search", to="BGO"), C("weather", optional=True, city="BGO")],
    }
    without = run(reference, [S("search", to="BGO")])
    assert (without["trajectory_match"], without["tool_recall"], without["tool_calls_missing"]) == (
        1.0,
        1.0,
        0,
    )
    assert without["reference_trajectory"]["calls"][1]["mismatch"].startswith(
        "optional, not called"
    )
    both = run(reference, [S("weather", city="BGO"), S("search", to="BGO")])
    assert (both["trajectory_match"], both["tool_precision"], both["tool_calls_extra"]) == (
        1.0,
        1.0,
        0,
    )
    assert [c["role"] for c in both["trajectory_calls"]] == ["optional", "matched"]
    # strict and subset too: the matched optional call is neither extra nor unmatched
    for mode in ("strict", "subset"):
        ordered = {
            "match": mode,
            "calls": [C("weather", optional=True, city="BGO"), C("search", to="BGO")],
        }
        assert (
            run(ordered, [S("weather", city="BGO"), S("search", to="BGO")])["trajectory_match"]
            == 1.0
        )
        assert run(ordered, [S("search", to="BGO")])["trajectory_match"] == 1.0


def test_alternatives_chosen_by_match_first_then_f1() -> None:
    reference = {
        "calls": [C("search", to="BGO"), C("book", flight="F1")],
        "alternatives": [
            [C("search", to="BGO"), C("book_with_points", flight="F1")],
            [C("search", to="BGO"), C("book_with_points", flight="F1"), C("pay")],
        ],
    }
    assert (
        run(reference, [S("search", to="BGO"), S("book", flight="F1")])["trajectory_alternative"]
        == 0
    )
    points = run(reference, [S("search", to="BGO"), S("book_with_points", flight="F1")])
    assert (points["trajectory_match"], points["trajectory_alternative"]) == (1.0, 1)
    # the annotations go on the chosen alternative's calls, not on `calls`
    annotated = points["reference_trajectory"]
    assert annotated["alternatives"][0][1]["matches"] == 1
    assert all("matches" not in c and "mismatch" not in c for c in annotated["calls"])
    paid = run(reference, [S("search", to="BGO"), S("book_with_points", flight="F1"), S("pay")])
    assert (paid["trajectory_alternative"], paid["tool_calls_ratio"]) == (2, 1.0)
    # no alternative matches: the best F1 wins (alternative 1 matches 2 of 2 calls made... of 3)
    none = run(reference, [S("book_with_points", flight="F1"), S("pay")])
    assert none["trajectory_match"] == 0.0
    assert none["trajectory_alternative"] == 2  # F1 0.8 (2 of 3 required, 2 of 2 actual) beats 0.5
    assert none["tool_recall"] == pytest.approx(2 / 3) and none["tool_precision"] == 1.0


def test_strict_is_always_ordered_and_ordered_keeps_the_order_of_matched_pairs() -> None:
    calls = [C("a"), C("b")]
    for ordered in (False, True):
        strict = {"match": "strict", "ordered": ordered, "calls": calls}
        assert run(strict, [S("a"), S("b")])["trajectory_match"] == 1.0
        assert run(strict, [S("b"), S("a")])["trajectory_match"] == 0.0
    assert run({"calls": calls}, [S("b"), S("a")])["trajectory_match"] == 1.0
    assert run({"calls": calls, "ordered": True}, [S("b"), S("a")])["trajectory_match"] == 0.0
    assert (
        run({"calls": calls, "ordered": True}, [S("b"), S("a"), S("b")])["trajectory_match"] == 1.0
    )
    subset = {"match": "subset", "ordered": True, "calls": [C("a"), C("b"), C("c")]}
    assert run(subset, [S("a"), S("c")])["trajectory_match"] == 1.0
    assert run(subset, [S("c"), S("a")])["trajectory_match"] == 0.0


# argument modes on nested arguments: reference {q: {city: Oslo, days: 2}}, trajectory_match per
# mode exact, ignore, superset, subset (worked out from the issue's definitions)
NESTED = {"q": {"city": "Oslo", "days": 2}}
ARG_TABLE = [
    ({"q": {"days": 2.0, "city": "Oslo"}}, "1111"),  # key order, 2 == 2.0
    ('{"q": {"city": "Oslo", "days": 2}}', "1111"),  # a JSON string
    ({"q": {"city": "Oslo", "days": 2, "unit": "C"}}, "0110"),  # an extra nested key
    ({"q": {"city": "Oslo"}}, "0101"),  # a nested key left out
    ({"q": {"city": "Bergen", "days": 2}}, "0100"),  # a nested value differs
    ({"q": {"city": "Oslo", "days": 2}, "lang": "no"}, "0110"),  # an extra top-level key
    ({}, "0101"),  # nothing at all
]


@pytest.mark.parametrize(("actual", "expected"), ARG_TABLE)
def test_every_argument_mode_on_nested_arguments(actual: Any, expected: str) -> None:
    got = ""
    for mode in ("exact", "ignore", "superset", "subset"):
        reference = {"args": mode, "calls": [{"name": "f", "args": NESTED}]}
        got += str(int(run(reference, [{"name": "f", "args": actual}])["trajectory_match"]))
    assert got == expected


def test_a_differing_nested_value_is_named_at_its_path() -> None:
    result = run([{"name": "f", "args": NESTED}], [S("f", q={"city": "Bergen", "days": 2})])
    assert (
        result["reference_trajectory"][0]["mismatch"]
        == 'f: args.q.city: reference "Oslo", actual "Bergen"'
    )


# every comparator, inside a nested argument: (comparator, a value that satisfies it, one that does not)
COMPARATORS = [
    ({"$any": True}, "anything", None),
    ({"$regex": "BG[A-Z]"}, "BGO", "xBGO"),
    ({"$number": 10, "abs_tol": 0.5}, 10.4, 10.6),
    ({"$number": 100, "rel_tol": 0.01}, "100.5", 102),
    ({"$date": "2026-12-01", "tolerance": "1d"}, "2026-12-02", "2026-12-03"),
    ({"$date": "2026-12-01", "tolerance": "36h"}, "2026-12-02T11:00:00Z", "2026-12-03"),
    (
        {"$datetime": "2026-12-01T10:00:00Z", "tolerance": "5m"},
        "2026-12-01T12:04:00+02:00",
        "2026-12-01T10:06:00Z",
    ),
    ({"$set": [1, 2, 2]}, [2, 1, 2], [1, 2]),
    ({"$text": "New York!"}, "  new   york", "New Jersey"),
    ({"$one_of": ["BGO", "BERGEN"]}, "BERGEN", "OSL"),
]


@pytest.mark.parametrize(("comparator", "good", "bad"), COMPARATORS)
@pytest.mark.parametrize("mode", ["exact", "superset", "subset"])
def test_every_comparator_overrides_the_mode_in_nested_arguments(
    comparator: dict[str, Any], good: Any, bad: Any, mode: str
) -> None:
    reference = {
        "args": mode,
        "calls": [{"name": "f", "args": {"outer": {"v": comparator, "k": 1}}}],
    }
    assert run(reference, [S("f", outer={"k": 1.0, "v": good})])["trajectory_match"] == 1.0
    actual = {"k": 1} if bad is None else {"k": 1, "v": bad}
    result = run(reference, [S("f", outer=actual)])
    if mode == "subset" and bad is None:
        return  # subset: an actual call may leave a reference argument out
    assert result["trajectory_match"] == 0.0
    assert "args.outer.v" in result["reference_trajectory"]["calls"][0]["mismatch"]


def test_fuzzy_uses_the_rapidfuzz_ratio() -> None:
    pytest.importorskip("rapidfuzz")
    reference = [{"name": "f", "args": {"place": {"$fuzzy": "Bergen airport", "min": 0.9}}}]
    assert run(reference, [S("f", place="Bergen airprot")])["trajectory_match"] == 1.0
    assert run(reference, [S("f", place="Oslo airport")])["trajectory_match"] == 0.0


LLM = [{"name": "search", "args": {"to": {"$llm": "the city of Bergen"}}}]


def test_llm_without_a_judge_is_an_error_never_a_zero() -> None:
    result = run(LLM, [S("search", to="Bergen, Norway")])
    assert (
        "needs a judge" in result["trajectory_error"]
        and "reference_trajectory[0].args.to" in result["trajectory_error"]
    )
    assert not any(k in result for k in SCALARS)
    assert compute_aggregates([result])["micro"]["trajectory_match"]["failed"] == 1


def test_llm_with_the_judge_is_cached_and_costed(tmp_path: Path) -> None:
    pytest.importorskip("openai")

    def script(payload: dict[str, Any], number: int) -> Any:
        return completion(
            json.dumps({"reason": "r", "same": "Bergen, Norway" in prompt_text(payload)})
        )

    steps = [S("search", to="Bergen, Norway")]
    config = {"llm": {"generation": {"base_url": "", "api_key": "x", "model": "gpt-4o-mini"}}}
    cache = tmp_path / "cache"
    with StubServer(script) as server:
        config["llm"]["generation"]["base_url"] = server.url
        first = run(LLM, steps, config=config, cache=str(cache))
        asked = len(server.requests)
        second = run(LLM, steps, config=config, cache=str(cache))
        assert len(server.requests) == asked == 1  # the second run answered from the cache
    assert first["trajectory_match"] == second["trajectory_match"] == 1.0
    assert first["trajectory_cost"] > 0


# --- 2. the metrics -----------------------------------------------------------------------------


def test_recall_counts_required_calls_precision_successful_actual_calls() -> None:
    reference = {"calls": [C("a"), C("b"), C("c", optional=True)]}
    result = run(reference, [S("a"), S("c"), S("x"), S("b", status="error")])
    assert result["tool_recall"] == 0.5  # a of {a, b}; c is optional
    assert result["tool_precision"] == pytest.approx(2 / 3)  # a and c of {a, c, x}; b failed
    assert result["tool_f1"] == pytest.approx(2 * 0.5 * (2 / 3) / (0.5 + 2 / 3))
    assert (
        result["tool_calls_missing"],
        result["tool_calls_extra"],
        result["tool_calls_failed"],
    ) == (1, 1, 1)
    assert result["tool_calls_ratio"] == 1.0  # 3 successful calls / 3 calls in the trajectory
    assert [c["role"] for c in result["trajectory_calls"]] == [
        "matched",
        "optional",
        "extra",
        "failed",
    ]


def test_f1_is_one_when_neither_side_has_calls() -> None:
    for reference in ([], {"match": "strict", "calls": []}, {"calls": [C("a", optional=True)]}):
        result = run(reference, [])
        assert (result["tool_recall"], result["tool_precision"], result["tool_f1"]) == (
            1.0,
            1.0,
            1.0,
        )
        assert result["trajectory_match"] == 1.0
    only_failed = run([], [S("a", status="error")])
    assert only_failed["tool_f1"] == 1.0 and only_failed["tool_calls_failed"] == 1
    # optional calls matching every actual call: P = R = 1, so F1 = 1
    assert run({"calls": [C("a", optional=True)]}, [S("a")])["tool_f1"] == 1.0


def test_args_score_is_the_optimal_one_to_one_partial_credit() -> None:
    # a greedy pass would give s(a=1,b=2) the perfect partner of the first reference call; the
    # optimal assignment gives it the other s: (1 + 1/2 + 0) / 3, t has no same-name partner
    reference = {"match": "unordered", "calls": [C("s", a=1, b=1), C("s", a=1, b=2), C("t", x=1)]}
    result = run(reference, [S("s", a=1, b=1), S("s", a=5, b=2)])
    assert result["tool_args_score"] == pytest.approx(0.5)
    flipped = run(
        {"match": "unordered", "calls": reference["calls"][::-1]},
        [S("s", a=5, b=2), S("s", a=1, b=1)],
    )
    assert flipped["tool_args_score"] == pytest.approx(0.5)
    assert run([C("s", a=1, b=2, c=3)], [S("s", a=1, b=2, c=9)])[
        "tool_args_score"
    ] == pytest.approx(2 / 3)
    assert run([C("s", a=1)], [S("t", a=1)])["tool_args_score"] == 0.0


def test_failed_calls_never_match_and_repeats_are_identical_successful_calls() -> None:
    result = run(
        [C("a", x=1)],
        [
            S("a", status="error", x=1),
            S("a", x=1),
            {"name": "a", "args": '{"x": 1.0}'},
            S("a", x=2),
        ],
    )
    assert result["tool_calls_failed"] == 1
    assert result["tool_calls_repeated"] == 1  # the JSON-text x=1.0 repeats the call before it
    assert [c["repeated"] for c in result["trajectory_calls"]] == [False, False, True, False]
    assert [c["role"] for c in result["trajectory_calls"]] == [
        "failed",
        "matched",
        "extra",
        "extra",
    ]
    only_failed = run([C("a", x=1)], [S("a", status="error", x=1)])
    assert (
        only_failed["trajectory_match"],
        only_failed["tool_calls_extra"],
        only_failed["tool_calls_missing"],
    ) == (0.0, 0, 1)
    assert only_failed["reference_trajectory"][0]["mismatch"] == "not called (a [0] failed)"


def test_matches_give_the_id_else_the_position_and_mismatch_texts_follow_the_issue() -> None:
    reference = {
        "calls": [
            {
                "name": "search_flights",
                "args": {
                    "from": "OSL",
                    "to": "BGO",
                    "date": {"$date": "2026-12-01", "tolerance": "1d"},
                },
            },
            {"name": "book", "args": {"flight": {"$any": True}}},
        ]
    }
    result = run(
        reference,
        [
            S("search_flights", id="call_1", **{"from": "OSL", "to": "BGO", "date": "2026-12-03"}),
            S("book"),
        ],
    )
    calls = result["reference_trajectory"]["calls"]
    assert (
        calls[0]["mismatch"]
        == "search_flights: args.date: 2026-12-03 is 2 days from 2026-12-01 (tolerance 1 day)"
    )
    assert calls[1]["mismatch"] == "book: args.flight: reference any, actual missing"
    good = run(
        reference,
        [
            S("x"),
            S("search_flights", id="call_1", **{"from": "OSL", "to": "BGO", "date": "2026-12-01"}),
            S("book", flight="F1"),
        ],
    )
    assert [c["matches"] for c in good["reference_trajectory"]["calls"]] == ["call_1", 2]
    twice = {
        "match": "unordered",
        "calls": [
            C("search_flights", **{"from": "OSL", "to": "BGO", "class": "Y"}),
            C("search_flights", **{"from": "OSL", "to": "BGO", "class": "C"}),
        ],
    }
    lone = run(
        twice, [S("a"), S("b"), S("search_flights", **{"from": "OSL", "to": "BGO", "class": "Y"})]
    )
    assert (
        lone["reference_trajectory"]["calls"][1]["mismatch"]
        == "not called (closest: search_flights [2], 2 of 3 arguments equal)"
    )


def _random_case(rng: random.Random) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    names = "abc"
    reference = [
        C(rng.choice(names), **{k: rng.randint(0, 1) for k in rng.sample("pq", rng.randint(0, 2))})
        for _ in range(rng.randint(0, 4))
    ]
    actual = [
        S(
            rng.choice(names),
            status=rng.choice(["success"] * 5 + ["error"]),
            **{k: rng.randint(0, 1) for k in rng.sample("pqr", rng.randint(0, 3))},
        )
        for _ in range(rng.randint(0, 5))
    ]
    return reference, actual


def _rich_call(rng: random.Random) -> dict[str, Any]:
    """A reference call with a name list, comparators and optional calls now and then."""
    values = [0, 1, {"$any": True}, {"$one_of": [0, 1]}, {"$number": 1, "abs_tol": 0.5}]
    call = C(
        rng.choice(["a", "b", ["a", "b"], "c"]),
        **{k: rng.choice(values) for k in rng.sample("pqr", rng.randint(0, 3))},
    )
    if rng.random() < 0.25:
        call["optional"] = True
    return call


def _rich_step(rng: random.Random) -> dict[str, Any]:
    args = {k: rng.choice([0, 1, 1.0]) for k in rng.sample("pqrs", rng.randint(0, 3))}
    return S(rng.choice("abc"), status=rng.choice(["success"] * 6 + ["error"]), **args)


def test_unordered_modes_are_invariant_to_permuting_both_lists() -> None:
    rng = random.Random(1)
    questions, responses = [], []
    cases = 300
    for case in range(cases):
        mode, args = (
            rng.choice(["unordered", "superset", "subset"]),
            rng.choice(["exact", "superset", "subset", "ignore"]),
        )
        reference = [_rich_call(rng) for _ in range(rng.randint(0, 5))]
        actual = [_rich_step(rng) for _ in range(rng.randint(0, 6))]
        alternatives = (
            [[_rich_call(rng) for _ in range(rng.randint(0, 3))]] if rng.random() < 0.3 else []
        )
        for k in range(3):
            calls, steps, others = reference[:], actual[:], [a[:] for a in alternatives]
            for items in (calls, steps, *others):
                rng.shuffle(items)
            trajectory = {"match": mode, "args": args, "calls": calls, "alternatives": others}
            questions.append(
                {"id": f"q{case}_{k}", "question_text": "x", "reference_trajectory": trajectory}
            )
            responses.append({"question_id": f"q{case}_{k}", "actual_steps": steps})
    results = run_evaluation([{"template_id": "t", "questions": questions}], responses)
    for case in range(cases):
        seen = [values(r) for r in results[3 * case : 3 * case + 3]]
        assert seen[0] == seen[1] == seen[2], case  # exactly equal, to the last bit


def test_strict_implies_unordered_implies_superset_and_subset_and_dropping_an_extra_never_lowers_precision() -> (
    None
):
    rng = random.Random(7)
    questions, responses, plan = [], [], []
    for case in range(150):
        args = rng.choice(["exact", "superset", "subset", "ignore"])
        reference, actual = _random_case(rng)
        if rng.random() < 0.3:  # often a trajectory that does match
            actual = [S(c["name"], **c["args"]) for c in reference]
            rng.shuffle(actual) if rng.random() < 0.5 else None
        for mode in ("strict", "unordered", "superset", "subset"):
            qid = f"q{case}{mode}"
            questions.append(
                {
                    "id": qid,
                    "question_text": "x",
                    "reference_trajectory": {"match": mode, "args": args, "calls": reference},
                }
            )
            responses.append({"question_id": qid, "actual_steps": actual})
        plan.append((args, reference, actual))
    results = run_evaluation([{"template_id": "t", "questions": questions}], responses)
    drops_q, drops_r = [], []
    for case, (args, reference, actual) in enumerate(plan):
        strict, unordered, superset, subset = (
            r["trajectory_match"] for r in results[4 * case : 4 * case + 4]
        )
        assert strict <= unordered <= min(superset, subset), case
        superset_result = results[4 * case + 2]
        for r in results[4 * case : 4 * case + 4]:
            assert all(
                0.0 <= r[k] <= 1.0
                for k in ("tool_recall", "tool_precision", "tool_f1", "tool_args_score")
            )
        extras = [c["index"] for c in superset_result["trajectory_calls"] if c["role"] == "extra"]
        if extras:
            fewer = [s for i, s in enumerate(actual) if i != extras[0]]
            qid = f"d{case}"
            drops_q.append(
                {
                    "id": qid,
                    "question_text": "x",
                    "reference_trajectory": {"match": "superset", "args": args, "calls": reference},
                }
            )
            drops_r.append(
                (superset_result["tool_precision"], {"question_id": qid, "actual_steps": fewer})
            )
    assert drops_q, "no case with an extra call"
    after = run_evaluation([{"template_id": "t", "questions": drops_q}], [r for _, r in drops_r])
    for (before, _), result in zip(drops_r, after):
        assert result["tool_precision"] >= before


# --- inputs -------------------------------------------------------------------------------------


def test_error_responses_missing_steps_and_questions_without_a_reference_trajectory() -> None:
    error = run([C("a")], None)  # no actual_steps at all
    assert (error["trajectory_match"], error["tool_recall"], error["tool_calls_missing"]) == (
        0.0,
        0.0,
        1,
    )
    failed = run_evaluation(dataset([C("a")]), [{"question_id": "q0", "error": "timeout"}])[0]
    assert not any(k in failed for k in FAMILY)
    plain = [{"template_id": "t", "questions": [{"id": "q0", "question_text": "x"}]}]
    result = run_evaluation(plain, [{"question_id": "q0", "actual_steps": [S("a")]}])[0]
    assert not any(k in result for k in (*FAMILY, "reference_trajectory"))


def _write(
    tmp_path: Path, name: str, reference: Any, responses: list[dict[str, Any]]
) -> tuple[str, str]:
    ref = tmp_path / f"{name}-ref.json"
    ref.write_text(json.dumps(reference))
    resp = tmp_path / f"{name}.jsonl"
    resp.write_text("".join(json.dumps(r) + "\n" for r in responses))
    return str(ref), str(resp)


def test_a_malformed_reference_exits_2_with_one_line_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = dataset({"calls": [C("a"), C("b"), {"name": "c", "args": {"date": {"$date": "soon"}}}]})
    ref, resp = _write(tmp_path, "bad", bad, [{"question_id": "q0", "actual_steps": []}])
    capsys.readouterr()
    assert main(["evaluate", ref, resp, "--no-judge", "-q", "-o", str(tmp_path / "out.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "reference_trajectory.calls[2].args.date" in err and "q0" in err
    for other in (
        {"match": "loose", "calls": []},
        [{"name": 3}],
        {"calls": [], "alternatives": [[{"nam": "a"}]]},
    ):
        ref, resp = _write(tmp_path, "bad2", dataset(other), [{"question_id": "q0"}])
        assert (
            main(["evaluate", ref, resp, "--no-judge", "-q", "-o", str(tmp_path / "out.json")]) == 2
        )
        assert "reference_trajectory" in capsys.readouterr().err


def test_aggregates_compare_and_gates_on_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trajectory = [C("search", to="BGO"), C("book", flight={"$any": True})]
    reference = [
        {
            "template_id": t,
            "questions": [
                {"id": f"{t}{i}", "question_text": "x", "reference_trajectory": trajectory}
                for i in range(4)
            ],
        }
        for t in ("A", "B")
    ]
    good = [S("search", to="BGO"), S("book", flight="F1")]
    bad = [S("search", to="TRD")]
    ids = [f"{t}{i}" for t in "AB" for i in range(4)]
    outputs = {}
    for name, steps_of in (("good", lambda i: good), ("half", lambda i: good if i % 2 else bad)):
        ref, resp = _write(
            tmp_path,
            name,
            reference,
            [{"question_id": q, "actual_steps": steps_of(k)} for k, q in enumerate(ids)],
        )
        out, agg = tmp_path / f"{name}.json", tmp_path / f"{name}-agg.json"
        code = main(
            [
                "evaluate",
                ref,
                resp,
                "--no-judge",
                "-q",
                "-o",
                str(out),
                "--aggregates",
                str(agg),
                "--fail-under",
                "tool_f1=0.8",
            ]
        )
        outputs[name] = (code, out, json.loads(agg.read_text()))
    assert outputs["good"][0] == 0 and outputs["half"][0] != 0
    aggregates = outputs["half"][2]
    for key in (
        "trajectory_match",
        "tool_recall",
        "tool_precision",
        "tool_f1",
        "tool_args_score",
        "tool_calls_missing",
    ):
        assert key in aggregates["micro"] and key in aggregates["macro"]
        assert key in aggregates["per_template"]["A"] and key in aggregates["per_template"]["B"]
    assert aggregates["micro"]["trajectory_match"]["mean"] == 0.5
    assert aggregates["micro"]["tool_calls_missing"]["sum"] == 4 * 2
    capsys.readouterr()
    assert main(
        ["compare", str(outputs["good"][1]), str(outputs["half"][1]), "--format", "json"]
    ) in (0, 1)
    compared = capsys.readouterr().out
    assert "tool_f1" in compared and "trajectory_match" in compared


def test_metrics_listing_says_the_judge_is_only_for_llm(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["metrics", "trajectory"]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert "judge only for $llm" in head and "needs judge" not in head
    assert main(["metrics", "trajectory", "--format", "json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)
    assert entry["judge"] is False and "judge" not in entry["needs"]
    assert entry["judge_only_for"] == "$llm comparators"


def test_a_run_without_a_judge_imports_no_pydantic() -> None:
    code = (
        "import sys\nfrom qa_eval import run_evaluation\n"
        "ref=[{'template_id':'t','questions':[{'id':'q','question_text':'x','reference_trajectory':[{'name':'a'}]}]}]\n"
        "r=run_evaluation(ref,[{'question_id':'q','actual_steps':[{'name':'a'}]}])[0]\n"
        "assert r['trajectory_match']==1.0\nprint('pydantic' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_trials_give_pass_at_k_and_trajectory_consistency() -> None:
    reference = [
        {
            "template_id": "t",
            "questions": [
                {
                    "id": "q0",
                    "question_text": "x",
                    "reference_trajectory": {"calls": [C("a")], "alternatives": [[C("b")]]},
                }
            ],
        }
    ]
    trials = [
        [S("a")],
        [S("b")],
        [S("a")],
        [S("c")],
    ]  # matches 1, 1, 1, 0; alternatives 0, 1, 0, (0)
    responses = [
        {"question_id": "q0", "trial": i + 1, "actual_steps": s} for i, s in enumerate(trials)
    ]
    results = run_evaluation(reference, responses)
    assert [r["trajectory_match"] for r in results] == [1.0, 1.0, 1.0, 0.0]
    trial_block = compute_aggregates(results)["micro"]["trials"]
    assert trial_block["trajectory_match"]["pass_at_k"]["1"] == pytest.approx(0.75)
    assert trial_block["trajectory_match"]["pass_hat_k"]["2"] == pytest.approx(
        3 / 6
    )  # C(3,2)/C(4,2)
    assert trial_block["trajectory_match"]["pass_at_k"]["4"] == 1.0
    assert trial_block["trajectory_consistency"]["mean"] == pytest.approx(3 / 4)
    assert trial_block["n_trials"] == {"min": 4, "max": 4}
    per_template = compute_aggregates(results)["per_template"]["t"]["trials"]
    assert per_template["trajectory_match"]["pass_at_k"]["1"] == pytest.approx(0.75)
    # any metric with a pass threshold: tool_f1 passes at 0.8 in the three matching trials
    gated = compute_aggregates(results, pass_thresholds={"tool_f1": 0.8})["micro"]["trials"][
        "tool_f1"
    ]
    assert gated["threshold"] == 0.8 and gated["pass_hat_k"]["3"] == pytest.approx(
        1 / 4
    )  # C(3,3)/C(4,3)


def test_ragas_reference_tool_calls_become_a_reference_trajectory_with_the_defaults() -> None:
    row = {
        "user_input": [
            {"type": "human", "content": "Weather in Oslo and Bergen?"},
            {
                "type": "ai",
                "content": "",
                "tool_calls": [
                    {"name": "weather", "args": {"city": "Bergen"}},
                    {"name": "weather", "args": {"city": "Oslo"}},
                ],
            },
            {"type": "tool", "content": "rain"},
            {"type": "tool", "content": "sun"},
            {"type": "ai", "content": "", "tool_calls": [{"name": "news", "args": {}}]},
            {"type": "tool", "content": "none"},
            {"type": "ai", "content": "Rain in Bergen, sun in Oslo."},
        ],
        "reference_tool_calls": [
            {"name": "weather", "args": {"city": "Oslo"}},
            {"name": "weather", "args": {"city": "Bergen"}},
        ],
    }
    reference, responses = flat_to_dataset([(1, row)])
    result = run_evaluation(reference, responses)[0]
    # superset (the extra news call is free), unordered, exact arguments
    assert (result["trajectory_match"], result["tool_recall"], result["tool_calls_extra"]) == (
        1.0,
        1.0,
        1,
    )
    assert [c["matches"] for c in result["reference_trajectory"]] == [1, 0]
    wrong = copy.deepcopy(row)
    wrong["reference_tool_calls"][0]["args"] = {"city": "Oslo", "unit": "C"}
    assert run_evaluation(*flat_to_dataset([(1, wrong)]))[0]["trajectory_match"] == 0.0


def test_optional_and_alternative_permutations_of_small_lists_exhaustively() -> None:
    # every order of a reference with a duplicate tool and of the actual calls: one value
    calls = [C("s", a=1), C("s", a=1, b=2), C("t", optional=True)]
    steps = [S("s", a=1, b=2), S("s", a=1, b=3), S("t")]
    seen = set()
    for ref in itertools.permutations(calls):
        for act in itertools.permutations(steps):
            result = run({"args": "superset", "calls": list(ref)}, list(act))
            seen.add(tuple(values(result).items()))
    assert len(seen) == 1
    (only,) = seen
    assert dict(only)["trajectory_match"] == 1.0  # first-fit would miss it in some orders


def test_equal_f1s_of_two_alternatives_tie_and_the_first_wins() -> None:
    # calls: 3 of 5 required matched, 3 of 4 actual (F1 = 2/3); the alternative: A and the
    # optional B matched, 2 of 4 actual (F1 = 2/3 too): rounding must not decide between them
    reference = {
        "match": "unordered",
        "calls": [C(n) for n in "ABCDE"],
        "alternatives": [[C("A"), C("B", optional=True)]],
    }
    result = run(reference, [S("A"), S("B"), S("C"), S("Z")])
    assert result["trajectory_alternative"] == 0
    assert result["tool_f1"] == 2 / 3  # one rounding of 2kq / (kr + qm)


def test_removing_an_extra_call_never_lowers_the_precision_of_an_acceptable_trajectory() -> None:
    # per acceptable trajectory precision only rises; the reported one is the chosen trajectory's,
    # and the choice (by match, then F1, as the issue says) may move to one with a higher F1 and
    # a lower precision (docs/metrics/trajectory.md, "Readings of the issue")
    calls, other = [C(n) for n in "ABCDE"], [C("A")]
    before = [S("A"), S("B"), S("Z")]
    after = before[:2]
    for trajectory in (calls, other):
        single = {"match": "unordered", "calls": trajectory}
        assert run(single, after)["tool_precision"] > run(single, before)["tool_precision"]
    both = {"match": "unordered", "calls": calls, "alternatives": [other]}
    first, second = run(both, before), run(both, after)
    assert (first["trajectory_alternative"], first["tool_precision"]) == (
        0,
        2 / 3,
    )  # F1 1/2 = 1/2: the first
    assert (second["trajectory_alternative"], second["tool_precision"]) == (1, 0.5)  # F1 2/3 > 4/7


def test_args_score_is_the_fraction_of_reference_arguments_satisfied() -> None:
    reference = [C("f", a=1, b=2, c=3)]
    # exact: an extra actual key is no reference argument: 3 of 3 satisfied, yet no match
    extra = run({"args": "exact", "calls": reference}, [S("f", a=1, b=2, c=3, d=4)])
    assert (extra["tool_args_score"], extra["trajectory_match"]) == (1.0, 0.0)
    assert (
        extra["reference_trajectory"]["calls"][0]["mismatch"]
        == "f: args.d: not in the reference, actual 4"
    )
    # one of three differs, whatever the actual call adds
    for mode in ("exact", "superset"):
        wrong = run({"args": mode, "calls": reference}, [S("f", a=1, b=2, c=9, d=4)])
        assert wrong["tool_args_score"] == pytest.approx(2 / 3)
    # subset: a reference argument left out is satisfied (the mode allows it); a wrong one is not
    subset = run({"args": "subset", "calls": reference}, [S("f", a=1, c=9)])
    assert (subset["tool_args_score"], subset["trajectory_match"]) == (pytest.approx(2 / 3), 0.0)
    assert run({"args": "subset", "calls": reference}, [S("f", a=1)])["tool_args_score"] == 1.0
