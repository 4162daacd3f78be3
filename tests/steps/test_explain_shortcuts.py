"""The explanations' shortcuts give the texts the long way gives (issue 36): each is checked
against the long way, kept here as it was, over many generated inputs."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from fakes import prepared_groups
from qa_eval.steps import explain as explain_module
from qa_eval.steps.compare import StepScorer
from qa_eval.steps.explain import explain_unmatched
from qa_eval.steps.kinds import COMPARE_IRI
from qa_eval.steps.matching import match_steps
from qa_eval.steps.outputs import _json_kind, json_difference, json_equal, shown


def _json_difference_long(reference: Any, actual: Any, path: str = "$") -> str | None:
    """``json_difference`` as it was: every key and item compared by recursion."""
    if json_equal(reference, actual):
        return None
    if isinstance(reference, dict) and isinstance(actual, dict):
        for key in reference:
            if key not in actual:
                return f"{path}: key {shown(key)} missing"
        for key in actual:
            if key not in reference:
                return f"{path}: extra key {shown(key)}"
        for key, value in reference.items():
            found = _json_difference_long(value, actual[key], f"{path}.{key}")
            if found is not None:
                return found
    if isinstance(reference, list) and isinstance(actual, list):
        for i, (ref_item, act_item) in enumerate(zip(reference, actual)):
            found = _json_difference_long(ref_item, act_item, f"{path}[{i}]")
            if found is not None:
                return found
        return f"{path}: {len(actual)} items, expected {len(reference)}"
    if _json_kind(reference) != _json_kind(actual):
        return f"{path}: {_json_kind(actual)}, expected {_json_kind(reference)}"
    return f"{path}: reference {shown(reference)}, actual {shown(actual)}"


# Values Python's equality mixes up and JSON does not (1, 1.0, True; 0, False), big integers,
# NaN, strings: in lists and objects sharing keys, so that most pairs differ in one place.
_SCALARS = st.sampled_from(
    [0, 1, 1.0, 2, True, False, None, "a", "b", "", 2**70, 2.0**70, float("nan")]
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3),
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(_JSON, _JSON, st.data())
def test_json_difference_is_the_difference_the_recursion_finds(
    reference: Any, actual: Any, data: Any
) -> None:
    if data.draw(st.booleans()) and isinstance(reference, (dict, list)):
        # A near copy: the same container with one item or key's value replaced.
        actual = (dict if isinstance(reference, dict) else list)(reference)
        if actual:
            key = data.draw(
                st.sampled_from(sorted(actual) if isinstance(actual, dict) else range(len(actual)))
            )
            actual[key] = data.draw(_JSON)
    assert json_difference(reference, actual) == _json_difference_long(reference, actual)
    assert json_difference(reference, actual, "args") == _json_difference_long(
        reference, actual, "args"
    )


# explain_unmatched as it was (its shortcuts: no actual steps, one text without parts), kept to
# compare with; the closest candidate is picked by _closest, checked against explaining every
# candidate in test_explain_signatures.
def _explain_unmatched_long(
    groups: Any, scorer: StepScorer, matches: Any, response_error: Any
) -> dict[tuple[int, int], str]:
    stop = len(groups) - 1
    out: dict[tuple[int, int], str] = {}
    counts = [0] * len(groups)
    partial = []
    for g, i, a, score in matches:
        counts[g] += 1
        if score < explain_module._WHOLE:
            partial.append((g, i, a))
    while stop >= 0 and counts[stop] >= len(groups[stop]):
        stop -= 1
    steps = scorer.actual
    for g, i, a in partial:
        _, text = scorer.explain(groups[g][i], a)
        out[(g, i)] = f"partly matched by {explain_module._label(steps, a)}: {text}"
    if stop < 0:
        return out
    matched = {(g, i) for g, i, _, _ in matches if g <= stop}
    after = [a for g, _, a, _ in matches if g == stop + 1]
    upto = min(after) if after else len(steps)
    successful = scorer.successful()
    names_of = [step.get("name") for step in steps]
    header = explain_module._header(stop, counts[stop], len(groups[stop]))
    for g in range(stop):
        for ref in groups[g]:
            if (g, ref.index) in matched:
                continue
            names = _IRI_STEPS if ref.kind == COMPARE_IRI else (ref.name,)
            text = header
            for a in successful[::-1]:
                if names_of[a] in names and scorer.would_match(ref, a) > 0.0:
                    label = explain_module._label(steps, a)
                    text = header + f" (on its own this step would match {label})"
                    break
            out[(g, ref.index)] = text
    for ref in groups[stop]:
        if (stop, ref.index) in matched:
            continue
        if response_error is not None and not steps:
            text = f"the response is an error ({shown(response_error)}) with no actual steps"
        elif not steps:
            text = f"the response has no actual steps (expected a {shown(ref.name)} step)"
        else:
            text = _explain_step_long(ref, scorer, set(successful), upto, matches, stop, names_of)
        out[(stop, ref.index)] = text
    return out


def _explain_step_long(
    ref: Any,
    scorer: StepScorer,
    successful: set[int],
    upto: int,
    matches: Any,
    group: int,
    names_of: list[Any],
) -> str:
    names = _IRI_STEPS if ref.kind == COMPARE_IRI else (ref.name,)
    failed = [a for a, name in enumerate(names_of) if name in names and a not in successful]
    ok = [a for a, name in enumerate(names_of) if name in names and a in successful]
    in_order = [a for a in ok if a < upto]
    if not ok and not failed:
        if ref.kind == COMPARE_IRI:
            return "no actual step named autocomplete_search or sparql_query"
        return f"no actual step named {shown(ref.name)}"
    parts: list[str] = []
    if failed:
        more = f" (and {len(failed) - 1} more such steps)" if len(failed) > 1 else ""
        parts.append(explain_module._step_error(scorer.actual, failed[-1]) + more)
    if ok and not in_order:
        positions = ", ".join(str(a) for a in ok)
        parts.append(
            f"the actual {shown(ref.name)} steps [{positions}] come after the steps matched to "
            f"group {group + 2}, and a step of group {group + 1} must come before them"
        )
    if in_order:
        parts.append(explain_module._closest(ref, scorer, in_order, matches))
    return "; ".join(parts)


_IRI_STEPS = ("autocomplete_search", "sparql_query")
_REFERENCE_STEPS = st.sampled_from(
    [
        {"name": "get", "output": '{"a": 1}', "output_media_type": "application/json"},
        {"name": "get", "output": "text"},
        {"name": "find", "args": {"q": "x"}},
        {"name": "iri_discovery", "output": "urn:x", "output_media_type": "text/uri"},
        {
            "name": "retrieval",
            "args": {"k": 2},
            "output": json.dumps([{"id": "d1"}, {"id": "d2"}]),
        },
    ]
)
_SELECT = json.dumps(
    {"head": {"vars": ["s"]}, "results": {"bindings": [{"s": {"type": "uri", "value": "urn:x"}}]}}
)
_ACTUAL_STEPS = st.fixed_dictionaries(
    {
        "name": st.sampled_from(["get", "find", "retrieval", "sparql_query", "other"]),
        "id": st.sampled_from(["c1", "c2", None, 3]),
        "status": st.sampled_from(["success", "success", "error"]),
        "error": st.sampled_from([None, "timeout"]),
        "args": st.sampled_from([{"q": "x"}, {"q": "y"}, {"k": 2}]),
        "output": st.sampled_from(
            ['{"a": 1}', '{"a": 2}', "text", _SELECT, json.dumps([{"id": "d1"}]), None]
        ),
    }
)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.lists(_REFERENCE_STEPS, min_size=1, max_size=2), min_size=1, max_size=3),
    st.lists(_ACTUAL_STEPS, max_size=6),
    st.sampled_from([None, "the server failed"]),
)
def test_explanations_are_those_the_long_way_gives(
    reference: list[list[dict[str, Any]]], steps: list[dict[str, Any]], error: Any
) -> None:
    groups = prepared_groups(reference)
    texts = []
    for explain in (explain_unmatched, _explain_unmatched_long):
        scorer = StepScorer(steps)
        matches, _ = match_steps(groups, scorer)
        texts.append(explain(groups, scorer, matches, error))
    assert texts[0] == texts[1]


def _text_difference_long(reference: str, actual: Any) -> str:
    """``text_difference`` as it was: every line compared in one loop."""
    if not isinstance(actual, str):
        return f"the output is {_json_kind(actual)}, expected text"
    ref_lines, act_lines = reference.splitlines(), actual.splitlines()
    for number, (ref_line, act_line) in enumerate(zip(ref_lines, act_lines), start=1):
        if ref_line != act_line:
            return f"line {number}: reference {shown(ref_line)}, actual {shown(act_line)}"
    if len(ref_lines) != len(act_lines):
        return f"the output has {len(act_lines)} lines, the reference {len(ref_lines)}"
    return "the outputs differ in line endings or white space at the end"


_TEXTS = st.text(alphabet=st.sampled_from(["a", "b", " ", "\n", "\r", "\u2028", "\t"]), max_size=8)


@settings(max_examples=300, deadline=None)
@given(_TEXTS, st.one_of(_TEXTS, st.sampled_from([None, 1, ["a"]])))
def test_text_difference_is_the_difference_the_line_loop_finds(reference: str, actual: Any) -> None:
    from qa_eval.steps.outputs import text_difference

    assert text_difference(reference, actual) == _text_difference_long(reference, actual)
