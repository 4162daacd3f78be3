"""``failure_map`` is made again when the registry's families or what it is asked change (it
keeps the last map it made): an aggregation after a family is registered counts its errors."""

from __future__ import annotations

import pytest

from qa_eval.aggregate import compute_aggregates, failure_map
from qa_eval.vocabulary import registry
from qa_eval.vocabulary.model import Metric


def _toy(errors: bool) -> Metric:
    keys = [registry.Key("toy", "higher", "0-1", aggregate=True)]
    if errors:
        keys.append(registry.Key("toy_error"))
    return Metric("toy", "a toy", ("answer",), tuple(keys), "docs/adding-a-metric.md")


def test_a_family_registered_later_has_its_errors_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    results = [{"template_id": "t", "toy": 0.5}, {"template_id": "t", "toy_error": "boom"}]
    before = failure_map(["toy", "answer_f1"])
    assert "toy_error" not in before
    assert "toy" not in compute_aggregates(results)["micro"]
    monkeypatch.setitem(registry.METRICS, "toy", _toy(errors=True))
    assert failure_map(["toy", "answer_f1"])["toy_error"] == ("toy",)
    assert compute_aggregates(results)["micro"]["toy"]["failed"] == 1
    assert failure_map(["toy", "answer_f1"])["toy_error"] == ("toy",)  # (the last map made)
    monkeypatch.setitem(registry.METRICS, "toy", _toy(errors=False))  # another declaration
    assert "toy_error" not in failure_map(["toy", "answer_f1"])


def test_the_map_follows_what_it_is_asked() -> None:
    assert failure_map(["answer_f1"]) == {"answer_correctness_error": ("answer_f1",)}
    assert failure_map(["answer_f1"]) == {"answer_correctness_error": ("answer_f1",)}
    assert failure_map(["mine"], {"mine": "custom"}) == {"custom_error": ("mine",)}
    assert failure_map(["mine"], {"mine": "other"}) == {"other_error": ("mine",)}
    assert failure_map(["mine"]) == {}
    made = failure_map(["answer_f1"])
    made.clear()  # (each call gets its own dict)
    assert failure_map(["answer_f1"]) == {"answer_correctness_error": ("answer_f1",)}
