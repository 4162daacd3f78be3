"""The cheap signatures of every non-SPARQL kind never say no to a step that matches (issue 36).

``StepScorer.may_match`` rules a candidate out before the "on its own this step would match"
hint compares it in full: IRI discovery (the IRI in the text), text (the outputs equal), arguments
and JSON (Python's equality, looser than ``json_equal``), time series and data points (ids, limit,
aggregates' count, start and end). Each kind is checked over every pair of small reference and
actual steps, chosen around the comparison's edges (escapes, key order, 1 against 1.0 and true,
a string against a list of one, the same instant spelled twice, relative times within the
tolerance): wherever it says no, the full comparison scores 0; the pairs include matches, and
some are ruled out. The same check finds the pairs a plausible but unsound signature gets wrong.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

import pytest

from fakes import prepared_groups
from qa_eval import run_evaluation
from qa_eval.steps.compare import SIGNED, StepScorer
from qa_eval.steps.kinds import (
    COMPARE_ARGS,
    COMPARE_DATA_POINTS,
    COMPARE_IRI,
    COMPARE_JSON,
    COMPARE_TEXT,
    COMPARE_TIME_SERIES,
)

Signature = Callable[[StepScorer, Any, int], bool]


def _select(*iris: str) -> str:
    bindings = [{"s": {"type": "uri", "value": v}} for v in iris]
    return json.dumps({"head": {"vars": ["s"]}, "results": {"bindings": bindings}})


_MISSING = object()


def _actual(name: str, output: Any = _MISSING, args: Any = _MISSING, **more: Any) -> dict:
    step: dict[str, Any] = {"name": name, "status": "success", **more}
    if output is not _MISSING:
        step["output"] = output
    if args is not _MISSING:
        step["args"] = args
    return step


_IRI_REFERENCES = [
    {"name": "iri_discovery", "output": iri, "output_media_type": "text/uri"}
    for iri in ("urn:x", "http://e.org/a b")
]
_IRI_ACTUALS = [
    _actual(name, output)
    for name in ("autocomplete_search", "sparql_query")
    for output in (
        _select("urn:x"),
        _select("urn:x", "urn:y"),
        _select("urn:xy"),
        _select("http://e.org/a b"),
        _select("urn:x").replace("urn:x", "urn\\u003ax"),  # the IRI written with an escape
        json.dumps({"head": {"vars": ["s"]}, "results": {"bindings": [{"s": "urn:x"}]}}),
        "urn:x",
        "see <urn:x>.",
        "urn:xy",
        "not json",
        None,
    )
]

_TEXT_REFERENCES = [{"name": "read", "output": text} for text in ("a", "line 1\nline 2", "")]
_TEXT_ACTUALS = [
    _actual("read", output)
    for output in ("a", "A", "a ", "line 1\nline 2", "line 1\r\nline 2", "", None, 1, ["a"])
]

_ARGS_REFERENCES = [
    {"name": "send", "args": args}
    for args in ({"to": "x", "level": 1}, {"to": "x", "level": True}, {"n": [1, 2.0]}, {})
]
_ARGS_ACTUALS = [
    _actual("send", args=args)
    for args in (
        {"to": "x", "level": 1},
        {"level": 1, "to": "x"},  # another key order
        {"to": "x", "level": 1.0},  # the same JSON number
        {"to": "x", "level": True},  # equal in Python, not in JSON
        {"to": "x", "level": 2},
        {"to": "x"},
        {"n": [1.0, 2]},
        {"n": [2, 1]},
        {},
        None,
        "to=x",
    )
] + [_actual("send")]

_JSON_REFERENCES = [
    {"name": "get", "output": text, "output_media_type": "application/json"}
    for text in ('{"a": 1, "b": [1, "x"]}', '{"a": true, "c": "x y"}', '["x y", 1]', "[]", '"s"')
]
_JSON_ACTUALS = [
    _actual("get", output)
    for output in (
        '{"a": 1, "b": [1, "x"]}',
        '{\n  "b": [1.0, "x"],\n  "a": 1.0\n}',
        '{"\\u0061": 1, "b": [1, "\\u0078"]}',  # escapes
        '{"a": 1, "b": [1, "y"]}',
        '{"a": true}',
        '{"a": true, "c": "x y"}',
        '{"c": "x\\u0020y", "a": true}',
        '[ "x y" , 1.0 ]',
        '["x\\u0020y", 1]',
        '["x y"]',
        '{"a": 1}',
        "[]",
        '"s"',
        "s",  # not JSON
        None,
        {"a": True},  # a value already
    )
]

_SERIES_REFERENCES = [
    {"name": "retrieve_time_series", "args": args}
    for args in (
        {"mrid": "m1"},
        {"mrid": "m1", "limit": 5},
        {"mrid": ["m2", "m1"]},
        {"mrid": ["m1"]},
        {"limit": 3},
        {"mrid": ""},
        {},
    )
]
_SERIES_ACTUALS = [
    _actual("retrieve_time_series", args=args)
    for mrid in ("m1", ["m1"], ["m1", "m2"], ["m1", "m1"], "m2", [], "", None, 7)
    for limit in (None, 5, 3)
    for args in ({"mrid": mrid, "limit": limit},)
] + [
    _actual("retrieve_time_series", args={}),
    _actual("retrieve_time_series", args={"limit": 3}),
    _actual("retrieve_time_series", args="mrid=m1"),
    _actual("retrieve_time_series"),
]

_POINTS_ARGS = {"granularity": "1d", "aggregates": ["average", "max"]}
_POINTS_REFERENCES = [
    {"name": "retrieve_data_points", "args": {**_POINTS_ARGS, **args}}
    for args in (
        {
            "external_id": external_id,
            "start": start,
            "end": end,
            **({"limit": limit} if limit else {}),
        }
        for external_id in ("e1", ["e2", "e1"])
        for start in ("2025-01-01T00:00:00Z", "1d-ago", "now", "someday")
        for end in (None, "2025-02-01T00:00:00+00:00")
        for limit in (None, 10)
    )
]
_POINTS_ACTUALS = [
    _actual(
        "retrieve_data_points",
        args={
            "granularity": granularity,
            "external_id": external_id,
            "aggregates": aggregates,
            "start": start,
            "end": end,
            "limit": limit,
        },
        execution_timestamp="2025-01-02T00:00:00Z",
    )
    for granularity, external_id, aggregates, start, end, limit in itertools.product(
        ("1day", "1h"),
        ("e1", ["e1"], ["e1", "e2"], "e2", None),
        (["max", "average"], ["average"]),
        (
            "2025-01-01T00:00:00Z",
            "2025-01-01T00:00:00+00:00",  # the same instant, spelled otherwise
            "2025-01-01",
            "2025-01-01T00:00:30Z",  # within the tolerance of a relative reference time
            "2025-01-02T00:00:00Z",
            "1d-ago",
            "24h-ago",
            "now",
            "someday",
            None,
        ),
        (None, "2025-02-01T00:00:00Z"),
        (None, 10),
    )
] + [
    _actual("retrieve_data_points", args={**_POINTS_ARGS, "external_id": "e1", "start": "now"}),
    _actual("retrieve_data_points", args=None),
]

CASES = {
    COMPARE_IRI: (_IRI_REFERENCES, _IRI_ACTUALS),
    COMPARE_TEXT: (_TEXT_REFERENCES, _TEXT_ACTUALS),
    COMPARE_ARGS: (_ARGS_REFERENCES, _ARGS_ACTUALS),
    COMPARE_JSON: (_JSON_REFERENCES, _JSON_ACTUALS),
    COMPARE_TIME_SERIES: (_SERIES_REFERENCES, _SERIES_ACTUALS),
    COMPARE_DATA_POINTS: (_POINTS_REFERENCES, _POINTS_ACTUALS),
}


def _check(kind: str, signature: Signature) -> tuple[list[tuple[Any, Any]], int, int]:
    """Every pair of ``CASES[kind]``: the pairs ``signature`` rules out that match (unsound),
    the number of pairs that match and the number ruled out."""
    references, actuals = CASES[kind]
    unsound, matching, ruled_out = [], 0, 0
    for reference in references:
        ref = prepared_groups([[reference]])[0][0]
        assert ref.kind == kind
        for step in actuals:
            for parsed_first in (False, True):
                steps = [step]
                scorer = StepScorer(steps)
                if parsed_first:  # (as a comparison with another step leaves the output)
                    scorer.would_match(prepared_groups([[_JSON_REFERENCES[0]]])[0][0], 0)
                may = signature(scorer, ref, 0)
                assert not scorer.problems  # (the signature never records a problem)
                score = StepScorer(steps).score(ref, 0)
                matching += score > 0.0
                if not may:
                    ruled_out += 1
                    if score > 0.0:
                        unsound.append((reference, step))
    return unsound, matching, ruled_out


def _may_match(scorer: StepScorer, ref: Any, a: int) -> bool:
    return scorer.may_match(ref, a)


@pytest.mark.parametrize("kind", sorted(CASES))
def test_a_step_ruled_out_by_its_signature_never_matches(kind: str) -> None:
    unsound, matching, ruled_out = _check(kind, _may_match)
    assert unsound == []
    assert matching > 0  # (the cases hold matches: a signature saying no to all would fail)
    assert ruled_out > 0  # (and the signature rules some out)


def _json_text_equal(scorer: StepScorer, ref: Any, a: int) -> bool:
    """A tempting signature: the canonical JSON texts (key order, 1 and 1.0 apart)."""
    step = scorer.actual[a]
    if ref.kind == COMPARE_ARGS:
        return json.dumps(ref.raw.get("args"), sort_keys=True) == json.dumps(
            step.get("args"), sort_keys=True
        )
    output = step.get("output")
    try:
        value = json.loads(output) if isinstance(output, str) else output
    except ValueError:
        return False
    return json.dumps(ref.parsed, sort_keys=True) == json.dumps(value, sort_keys=True)


def _json_text_unescaped(scorer: StepScorer, ref: Any, a: int) -> bool:
    """A tempting signature: the reference's strings between quotes in the text (escapes
    aside)."""
    values = ref.parsed.values() if isinstance(ref.parsed, dict) else [ref.parsed]
    text = str(scorer.actual[a].get("output"))
    return all(f'"{v}"' in text for v in values if isinstance(v, str))


def _raw_values_equal(scorer: StepScorer, ref: Any, a: int) -> bool:
    """A tempting signature: every argument the reference sets equal as written."""
    got = scorer.actual[a].get("args")
    if not isinstance(got, dict):
        return False
    return all(got.get(key) == value for key, value in ref.raw["args"].items())


def _iri_unescaped(scorer: StepScorer, ref: Any, a: int) -> bool:
    """A tempting signature: the IRI between quotes in the text (escapes and tokens aside)."""
    return f'"{ref.parsed}"' in str(scorer.actual[a].get("output"))


def _text_stripped(scorer: StepScorer, ref: Any, a: int) -> bool:
    """An unsound text signature: the first characters of the outputs equal."""
    output = scorer.actual[a].get("output")
    return isinstance(output, str) and output[:1] == ref.raw["output"][:1] != ""


@pytest.mark.parametrize(
    ("kind", "signature"),
    [
        (COMPARE_IRI, _iri_unescaped),
        (COMPARE_TEXT, _text_stripped),
        (COMPARE_ARGS, _json_text_equal),
        (COMPARE_JSON, _json_text_equal),
        (COMPARE_JSON, _json_text_unescaped),
        (COMPARE_TIME_SERIES, _raw_values_equal),
        (COMPARE_DATA_POINTS, _raw_values_equal),
    ],
)
def test_the_check_finds_what_an_unsound_signature_gets_wrong(
    kind: str, signature: Signature
) -> None:
    unsound, _, _ = _check(kind, signature)
    assert unsound


def test_every_kind_is_signed() -> None:
    """The hint asks ``may_match`` of every kind (explain.py skips the others)."""
    assert set(CASES) | {"sparql", "retrieval"} <= SIGNED


def _dataset(groups: list[list[dict]]) -> list[dict]:
    question = {"id": "q", "question_text": "?", "reference_steps": groups}
    return [{"template_id": "t", "questions": [question]}]


def test_the_hint_names_the_latest_step_that_matches_past_those_ruled_out() -> None:
    """Through ``run_evaluation``: of three ``retrieve_time_series`` steps the hint skips the
    two whose ids differ (ruled out without a comparison) and names the one that matches."""
    groups = [
        [{"name": "retrieve_time_series", "args": {"mrid": "m1", "limit": 5}}],
        [{"name": "get", "output": '{"a": 1}', "output_media_type": "application/json"}],
    ]
    steps = [
        _actual("retrieve_time_series", args={"mrid": ["m1"], "limit": 5}, id="c0"),
        _actual("retrieve_time_series", args={"mrid": ["m1", "m2"], "limit": 5}, id="c1"),
        _actual("retrieve_time_series", args={"mrid": "m2", "limit": 5}, id="c2"),
        _actual("get", '{"a": 2}', id="c3"),
    ]
    result = run_evaluation(_dataset(groups), [{"question_id": "q", "actual_steps": steps}])[0]
    assert result["reference_steps"][0][0]["mismatch"] == (
        "not evaluated: group 2 has no match, and matching stops there (on its own this step "
        "would match actual step retrieve_time_series [0] (id c0))"
    )
