"""``ToolCallAccuracy`` gives ragas 0.4.3's ``UserWarning``s with its texts (no predicted calls, no
reference calls, lists of different lengths), besides the same values;
``tests/integration/test_ragas_deterministic_parity.py`` compares them with ragas' own on random
conversations."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

pytest.importorskip("pydantic")

from qa_eval.messages import AIMessage, HumanMessage, ToolCall
from qa_eval.metrics.collections import ToolCallAccuracy, ToolCallF1


def _said(metric: Any, user_input: list[Any], reference: list[Any]) -> tuple[float, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = metric.score(user_input=user_input, reference_tool_calls=reference)
    return result.value, [str(w.message) for w in caught if w.category is UserWarning]


def _ai(*names: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[ToolCall(name=n, args={"q": n}) for n in names])


@pytest.mark.parametrize("strict_order", [True, False])
def test_tool_call_accuracy_warns_as_ragas(strict_order: bool) -> None:
    metric = ToolCallAccuracy(strict_order=strict_order)
    reference = [ToolCall(name="search", args={"q": "search"})]
    assert _said(metric, [HumanMessage(content="hi"), AIMessage(content="x")], reference) == (
        0.0,
        ["No tool calls found in the user input"],
    )
    assert _said(metric, [_ai("search")], []) == (
        0.0,
        ["Reference tool calls are empty but predictions exist"],
    )
    value, said = _said(metric, [_ai("search", "lookup")], reference)
    assert said == [
        "Length mismatch: predicted tool calls (2) vs reference tool calls (1). Only the first 1 "
        "tool calls will be compared."
    ]
    assert value == 0.0
    assert _said(metric, [_ai("search")], reference) == (1.0, [])
    assert _said(metric, [HumanMessage(content="hi")], []) == (1.0, [])


def test_tool_call_f1_gives_no_warning_as_in_ragas() -> None:
    assert _said(ToolCallF1(), [HumanMessage(content="hi")], [ToolCall(name="a", args={})])[1] == []
