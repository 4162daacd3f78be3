"""A streamed run's per-template summaries kept in a temporary file (``aggregate.summaries``): a
read-only mapping, and the aggregates file written with them spliced in, the bytes
``write_data`` writes for the same aggregates held whole (JSON, YAML, JSON Lines; odd template
ids; the documents that must be written whole); in-order aggregates whose templates are not
consecutive write their parts to the spill file and read them back, with the whole's result."""

from __future__ import annotations

import itertools
import json
import pickle
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qa_eval.aggregate import compute_aggregates
from qa_eval.aggregate.compute import AggregateSpec, Macro
from qa_eval.aggregate.keys import ALWAYS_PRESENT
from qa_eval.aggregate.partial import PartialAggregates
from qa_eval.aggregate.stats import describe
from qa_eval.aggregate.summaries import TemplateSummaries, plain, write_aggregates
from qa_eval.io.files import write_data

SUFFIXES = (".json", ".yaml", ".yml", ".jsonl")


def _summary(i: int) -> dict[str, Any]:
    return {
        "number_of_error_samples": i % 2,
        "number_of_success_samples": 3,
        "steps": {"total": {"sparql_query": 3, f"tool ü {i}": 1}},
        "steps_score": {"sum": 1.5, "mean": 0.5, "median": 0.5, "min": 0.0, "max": -0.0, "n": 3},
        "input_tokens": {"sum": 10**15, "mean": 1 / 3, "median": 7, "min": 1, "max": 9, "n": 3},
        "answer_class": {"counts": {"CORRECT": 1, "WRONG": 0}, "n": 1},
        "note": "a long text " * 12 + "with: a colon, # a hash and a 'quote'\nand a new line",
    }


TEMPLATE_IDS: list[Any] = [
    "t-0",
    7,
    "1",
    1.5,
    "ünïcödé ✓",
    "x" * 150,  # (a YAML key over 128 characters is written as a complex key)
    "true",
    "",
    "- dash: colon",
]


def _aggregates(ids: list[Any]) -> dict[str, Any]:
    return {
        "per_template": {tid: _summary(i) for i, tid in enumerate(ids)},
        "micro": _summary(99),
        "macro": {"steps_score": {"mean": 0.5, "n": len(ids)}},
        "per_tag": {"question_type": {"lookup": _summary(5), 3: _summary(6)}},
        "signature": {"reference": {"fingerprint": "abc"}, "options": {"by": ["a", "b"]}},
        "system": "sys",
    }


def _kept(aggregates: dict[str, Any]) -> dict[str, Any]:
    """The aggregates with their per_template in a :class:`TemplateSummaries`."""
    summaries = TemplateSummaries()
    for tid, summary in aggregates["per_template"].items():
        summaries[tid] = summary
    return {**aggregates, "per_template": summaries}


def test_the_summaries_are_a_mapping_read_back_from_the_file() -> None:
    whole = _aggregates(TEMPLATE_IDS)["per_template"]
    kept = _kept(_aggregates(TEMPLATE_IDS))["per_template"]
    assert isinstance(kept, TemplateSummaries) and kept.file is not None
    assert len(kept) == len(whole) and list(kept) == list(whole)
    assert list(kept.items()) == list(whole.items()) and list(kept.values()) == list(whole.values())
    assert kept == whole and dict(kept) == whole
    assert kept[7] == whole[7] and kept["x" * 150] == whole["x" * 150] and 1.5 in kept
    assert "missing" not in kept and kept.get("missing") is None
    assert pickle.loads(pickle.dumps(kept)) == whole  # (pickled as a dict)
    assert plain({"per_template": kept, "micro": {}}) == {"per_template": whole, "micro": {}}
    kept.close()
    assert len(kept) == 0 and kept.file is None


@pytest.mark.parametrize("suffix", SUFFIXES)
@pytest.mark.parametrize("count", [0, 1, 2, len(TEMPLATE_IDS)])
def test_the_aggregates_file_is_the_bytes_of_the_whole(
    tmp_path: Path, suffix: str, count: int
) -> None:
    aggregates = _aggregates(TEMPLATE_IDS[:count])
    write_data(tmp_path / f"whole{suffix}", aggregates)
    write_aggregates(tmp_path / f"kept{suffix}", _kept(aggregates))
    assert (tmp_path / f"kept{suffix}").read_bytes() == (tmp_path / f"whole{suffix}").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"kept{suffix}", f"whole{suffix}"]


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_documents_that_cannot_be_spliced_are_written_whole(tmp_path: Path, suffix: str) -> None:
    """An int beyond 64 bits (orjson refuses it: the standard library writes the whole
    document), one object twice (YAML anchors are numbered over the whole document)."""
    shared = {"sum": 1, "n": 1}
    cases = [
        {**_aggregates(TEMPLATE_IDS[:3]), "micro": {"steps_score": {"sum": 2**70}}},
        {
            **_aggregates(TEMPLATE_IDS[:3]),
            "per_template": {
                "a": {"steps_score": {"sum": 2**70, "mean": "ü"}},
                "b": _summary(2),
            },
        },
        {**_aggregates(TEMPLATE_IDS[:2]), "per_template": {"a": {"x": shared, "y": shared}}},
        {**_aggregates(TEMPLATE_IDS[:2]), "macro": {"x": shared, "y": shared}},
    ]
    for number, aggregates in enumerate(cases):
        write_data(tmp_path / f"whole{suffix}", aggregates)
        write_aggregates(tmp_path / f"kept{suffix}", _kept(aggregates))
        kept, whole = (tmp_path / f"{name}{suffix}" for name in ("kept", "whole"))
        assert kept.read_bytes() == whole.read_bytes(), number
    assert not list(tmp_path.glob(".*"))  # (no file left beside it)


def test_in_order_aggregates_let_cold_templates_go_and_read_them_back() -> None:
    """Templates whose results are not consecutive (each comes back after others): their
    parts go to the spill file between their results, come back when more of them come, and
    the aggregates are the whole's, per_template kept in a file."""
    results = [
        {
            "template_id": ("a", "b", "a", 3, "c", "b", "a", 3)[i % 8],
            "question_id": str(i),
            "steps_score": i % 3 * 0.5,
            "input_tokens": i,
            "elapsed_sec": -0.0 if i % 4 else 0.0,
            "question_type": "xy"[i % 2],
        }
        for i in range(40)
    ]
    spec = AggregateSpec.of()
    for size in (1, 3, 5):
        merged = PartialAggregates(spec, in_order=True)
        cold = 0
        for start in range(0, len(results), size):
            part = PartialAggregates(spec)
            part.add(results[start : start + size], range(start, start + size))
            merged.merge(part)
            cold = max(cold, len(merged.cold))
            assert not set(merged.cold) & set(merged.templates)
        assert cold and len(merged.cold) + len(merged.templates) == 4, size
        out = merged.finish()
        assert isinstance(out["per_template"], TemplateSummaries)
        assert _dumped(plain(out)) == _dumped(compute_aggregates(results)), size
        assert list(out["per_template"]) == ["a", "b", 3, "c"]
    # added (not merged) in order too
    merged = PartialAggregates(spec, in_order=True)
    for start, end in itertools.pairwise([0, 5, 6, 17, 40]):
        merged.add(results[start:end], range(start, end))
    assert _dumped(plain(merged.finish())) == _dumped(compute_aggregates(results))


def _dumped(aggregates: dict[str, Any]) -> str:
    return json.dumps(aggregates)  # (-0.0 and 0.0, 1 and 1.0 told apart)


MEANS = st.one_of(
    st.none(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, -0.0, 1, 1.0, 2**53 + 1, 10**400]),
)


@settings(max_examples=200, deadline=None)
@given(
    blocks=st.lists(
        st.dictionaries(
            st.sampled_from(["steps_score", "input_tokens", "answer_f1", "elapsed_sec", "x"]),
            st.fixed_dictionaries({"mean": MEANS, "n": st.integers(min_value=0, max_value=3)}),
        ),
        max_size=12,
    )
)
def test_macro_keeps_the_means_compactly_and_gives_the_mean_of_their_list(
    blocks: list[dict[str, Any]],
) -> None:
    """``Macro`` (9 bytes a template and metric) gives the mean of the templates' means as
    ``describe`` of their list gives it (ints, floats, ints past 2**53 and past the float
    range, none)."""
    metrics = ["steps_score", "input_tokens", "answer_f1", "elapsed_sec"]
    macro = Macro(metrics)
    for summary in blocks:
        macro.add(summary)
    expected: dict[str, Any] = {}
    for metric in metrics:
        gathered = [s[metric] for s in blocks if metric in s]
        means = [b["mean"] for b in gathered if b["n"] and b["mean"] is not None]
        if means:
            expected[metric] = {"mean": describe(means)["mean"], "n": len(means)}
        elif metric in ALWAYS_PRESENT:
            expected[metric] = {"mean": 0, "n": 0}
        elif gathered:
            expected[metric] = {"mean": None, "n": 0}
    assert repr(macro.result()) == repr(expected)


def test_temporary_files_close_with_their_owner_without_a_warning() -> None:
    """A run's summaries and spilled values let go (the run's aggregates dropped) close their
    temporary files: no ``ResourceWarning: unclosed file`` reaches the user."""
    import gc
    import warnings
    from array import array

    from qa_eval.aggregate.spill import Spill

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        summaries = TemplateSummaries()
        summaries.add("t1", {"n": 1})
        spill = Spill()
        spill.put(array("d", [1.0, 2.0]))
        assert summaries.file is not None and spill.file is not None
        del summaries, spill
        gc.collect()
    assert [str(w.message) for w in caught if w.category is ResourceWarning] == []
