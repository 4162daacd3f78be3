"""iri_discovery: the IRI bound as an IRI in a SPARQL JSON result, or a token of a text output."""

from __future__ import annotations

import json
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from fakes import prepared_groups
from qa_eval.steps.compare import StepScorer
from qa_eval.steps.kinds import ReferenceStep

IRI = "urn:grid:sub/OSLO"


def reference_step(iri: str = IRI) -> ReferenceStep:
    step = {"name": "iri_discovery", "output": iri, "output_media_type": "text/uri"}
    return prepared_groups([[step]])[0][0]


def result(*terms: dict) -> str:
    return json.dumps(
        {"head": {"vars": ["x"]}, "results": {"bindings": [{"x": term} for term in terms]}}
    )


def score(output: object, name: str = "autocomplete_search", iri: str = IRI) -> tuple[float, bool]:
    """The score, and whether the output was parsed."""
    scorer = StepScorer([{"name": name, "status": "success", "output": output}])
    value = scorer.score(reference_step(iri), 0)
    return value, bool(scorer._json)


def test_bound_as_an_iri() -> None:
    assert score(result({"type": "literal", "value": "x"}, {"type": "uri", "value": IRI})) == (
        1.0,
        True,
    )


def test_a_literal_with_the_iri_text_is_not_the_iri() -> None:
    assert score(result({"type": "literal", "value": IRI}))[0] == 0.0


def test_escaped_characters_are_read_as_json_reads_them() -> None:
    # "\/" is a JSON escape for "/": the text does not contain the IRI as written, the result does
    escaped = result({"type": "uri", "value": IRI}).replace("/", "\\/")
    assert IRI not in escaped
    assert score(escaped) == (1.0, True)


def test_an_iri_absent_from_the_text_scores_0_without_parsing() -> None:
    assert score(result({"type": "uri", "value": "urn:grid:sub/BERGEN"})) == (0.0, False)


def test_text_output_needs_the_iri_as_a_whole_token() -> None:
    describe = f"<{IRI}> a <urn:grid:Substation> .\n<{IRI}2> a <urn:grid:Substation> ."
    assert score(describe, name="sparql_query")[0] == 1.0
    assert score(f"<{IRI}2> a <urn:grid:Substation> .", name="sparql_query")[0] == 0.0


def test_other_step_names_never_match() -> None:
    assert score(result({"type": "uri", "value": IRI}), name="retrieval")[0] == 0.0


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 10**6))
def test_skipping_the_parse_never_changes_the_score(seed: int) -> None:
    # Random results and texts around a few IRIs, some escaped: the score with the text check
    # equals the score of the full path (the parse, then a token search for non-JSON text).
    rnd = random.Random(seed)
    pool = [IRI, IRI + "2", "urn:grid:sub/BERGEN", "urn:x", "é:ü/ñ"]
    iri = rnd.choice(pool)
    terms = [
        {"type": rnd.choice(["uri", "literal"]), "value": rnd.choice(pool)}
        for _ in range(rnd.randint(0, 4))
    ]
    text = result(*terms)
    if rnd.random() < 0.3:
        text = text.replace("/", "\\/")
    if rnd.random() < 0.3:
        text = json.dumps(json.loads(text), ensure_ascii=True)
    if rnd.random() < 0.2:
        text = " ".join(f"<{t['value']}>" for t in terms)  # not JSON: a token search
    got, _ = score(text, iri=iri)
    # The full path, by hand.
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if parsed is not None:
        expected = any(
            t["type"] == "uri" and t["value"] == iri
            for b in parsed["results"]["bindings"]
            for t in b.values()
        )
    else:
        expected = f"<{iri}>" in text
    assert got == float(expected)
