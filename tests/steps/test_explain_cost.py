"""The explanations' cost follows what they show (issue 36): of several candidates for an unmatched
reference step, only those whose cheap bound (a match, the kind, the columns, the row counts) can
still beat the closest found so far are explained in full, and a SPARQL output whose text lacks
the reference's first row is never parsed for the "on its own this step would match" hint. The
texts stay those the full comparison of every candidate gave (``test_pinned_outputs`` pins the
benchmark mixes, the failing one included)."""

from __future__ import annotations

import json
from typing import Any
from unittest import mock

from qa_eval import run_evaluation
from qa_eval.steps import reading
from qa_eval.steps.compare import StepScorer

SPARQL_JSON = "application/sparql-results+json"


def _select(vars_: list[str], rows: list[list[str]]) -> str:
    bindings = [{v: {"type": "uri", "value": x} for v, x in zip(vars_, row)} for row in rows]
    return json.dumps({"head": {"vars": vars_}, "results": {"bindings": bindings}})


def _step(name: str, i: int, output: str, **more: Any) -> dict[str, Any]:
    return {"name": name, "id": f"c{i}", "status": "success", "output": output, **more}


def _run(groups: list[list[dict[str, Any]]], steps: list[dict[str, Any]]) -> dict[str, Any]:
    reference = [
        {
            "template_id": "t",
            "questions": [{"id": "q", "question_text": "Q?", "reference_steps": groups}],
        }
    ]
    return run_evaluation(reference, [{"question_id": "q", "actual_steps": steps}])[0]


def _counting_explain() -> tuple[Any, list[int]]:
    """A patch counting the candidates explained (``explain`` asks ``explanation`` too)."""
    calls: list[int] = []
    original = StepScorer.explanation

    def explanation(self: StepScorer, ref: Any, act_index: int) -> tuple[float, Any]:
        calls.append(act_index)
        return original(self, ref, act_index)

    return mock.patch.object(StepScorer, "explanation", explanation), calls


def test_only_the_candidate_shown_is_explained_for_outputs_compared_whole() -> None:
    reference = {
        "name": "get_status",
        "output": '{"status": "ok"}',
        "output_media_type": "application/json",
    }
    steps = [
        _step("get_status", i, json.dumps({"status": s})) for i, s in enumerate(["a", "b", "c"])
    ]
    patch, calls = _counting_explain()
    with patch:
        result = _run([[reference]], steps)
    assert result["reference_steps"][0][0]["mismatch"] == (
        "closest of 3 candidates, actual step get_status [2] (id c2): output differs at "
        "$.status: reference ok, actual c"
    )
    assert calls == [2]  # the latest candidate, the one shown; before, all three


def test_sparql_candidates_that_cannot_be_closer_are_not_explained() -> None:
    vars_ = ["s", "o"]
    rows = [[f"urn:s{i}", f"urn:o{i}"] for i in range(4)]
    reference = {
        "name": "sparql_query",
        "output": _select(vars_, rows),
        "output_media_type": SPARQL_JSON,
        "required_columns": vars_,
    }
    steps = [
        _step("sparql_query", 0, _select(["s"], [r[:1] for r in rows])),  # one column: <= 0.75
        _step("sparql_query", 1, json.dumps({"head": {}, "boolean": True})),  # ASK: 0
        _step("sparql_query", 2, _select(vars_, rows[:1])),  # 1 row of 4: at most 0.625
        _step("sparql_query", 3, _select(vars_, rows[1:])),  # 3 rows of 4: 0.875, latest
    ]
    patch, calls = _counting_explain()
    with patch:
        result = _run([[reference]], steps)
    text = result["reference_steps"][0][0]["mismatch"]
    assert text.startswith("closest of 4 candidates, actual step sparql_query [3] (id c3): 1 row ")
    assert calls == [3]  # before, all four were explained in full


def test_the_hint_does_not_parse_a_sparql_output_lacking_the_first_row() -> None:
    vars_ = ["s"]
    rows = [["urn:wanted"]]
    iri_step = {
        "name": "sparql_query",
        "output": _select(vars_, rows),
        "output_media_type": SPARQL_JSON,
        "required_columns": vars_,
    }
    last = {
        "name": "get_status",
        "output": '{"status": "ok"}',
        "output_media_type": "application/json",
    }
    steps = [
        _step("sparql_query", 0, _select(vars_, rows)),  # would match on its own
        _step("sparql_query", 1, _select(vars_, [["urn:other"]])),  # cannot: never parsed
        _step("get_status", 2, '{"status": "down"}'),
    ]
    parsed: list[str] = []
    # Both ways an actual output is parsed: orjson for the usual text, ``loads`` for the rest.
    original, original_orjson = reading.loads, reading._orjson_loads

    def loads(text: Any) -> Any:
        parsed.append(text)
        return original(text)

    def orjson_loads(text: Any) -> Any:
        parsed.append(text)
        return original_orjson(text)

    with (
        mock.patch.object(reading, "loads", loads),
        mock.patch.object(reading, "_orjson_loads", orjson_loads),
    ):
        result = _run([[iri_step], [last]], steps)
    assert result["reference_steps"][0][0]["mismatch"] == (
        "not evaluated: group 2 has no match, and matching stops there (on its own this step "
        "would match actual step sparql_query [0] (id c0))"
    )
    assert steps[0]["output"] in parsed  # (the patches see the parses)
    assert steps[1]["output"] not in parsed
