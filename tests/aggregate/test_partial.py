"""Partial aggregates merge exactly: any split of the results, parts merged in any order (sent
through pickle, as workers send them, or through the JSON of a shard file), give
``compute_aggregates`` of the whole, byte for byte (as JSON, where 1 and 1.0, 0.0 and -0.0 and
the order of every key show)."""

from __future__ import annotations

import itertools
import json
import pickle
import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from qa_eval.aggregate import compute_aggregates
from qa_eval.aggregate.compute import AggregateSpec
from qa_eval.aggregate.partial import PartialAggregates
from qa_eval.aggregate.portable import from_data, to_data
from qa_eval.aggregate.spill import Spilled
from qa_eval.aggregate.summaries import plain

NUMBERS = st.one_of(
    st.sampled_from([0, 1, 1.0, 0.0, -0.0, 2, 2.0, 0.5, -1, 10**20, 2**53, 2.0**53, 3]),
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([None, "x", True, float("nan"), float("inf"), 1e308]),
)
STEP = st.fixed_dictionaries(
    {"name": st.sampled_from(["sparql_query", "retrieval", "search", "iri_discovery"])},
    optional={
        "status": st.sampled_from(["success", "error"]),
        "output": st.sampled_from(['{"results": {"bindings": []}}', "[]", "x"]),
        "retrieval_answer_recall": NUMBERS,
        "retrieval_context_recall": NUMBERS,
        "retrieval_answer_recall_error": st.just("no chunks"),
    },
)
RESULT = st.fixed_dictionaries(
    {
        "template_id": st.sampled_from(["t1", "t2", 3, "t4"]),
        "question_id": st.sampled_from(["a", "b", "c", "d", "e", 7]),
    },
    optional={
        "status": st.sampled_from(["success", "error"]),
        "question_type": st.sampled_from(["lookup", "count", 1, 1.0, None, ["x"]]),
        "answer_f1": NUMBERS,
        "steps_score": NUMBERS,
        "input_tokens": NUMBERS,
        "elapsed_sec": NUMBERS,
        "answer_correctness_error": st.just("no reply"),
        "answer_class": st.sampled_from(["CORRECT", "WRONG", "ODD", "OTHER"]),
        "factual_accuracy_grade": st.sampled_from(["A", "B", "Z"]),
        "actual_steps": st.lists(STEP, max_size=3),
        "trajectory_match": NUMBERS,
    },
)


def with_trials(results: list[dict[str, Any]], trials: bool) -> list[dict[str, Any]]:
    """Results of questions with trials: every result of a question id carries one."""
    if not trials:
        return results
    count: dict[Any, int] = {}
    out = []
    for result in results:
        key = (result["template_id"], result["question_id"])
        count[key] = count.get(key, 0) + 1
        out.append({**result, "trial": count[key]})
    return out


def dumped(aggregates: dict[str, Any]) -> str:
    return json.dumps(plain(aggregates), default=repr)  # (per_template read back whole)


@settings(max_examples=200, deadline=None)
@given(
    results=st.lists(RESULT, max_size=30),
    parts=st.integers(min_value=1, max_value=5),
    seed=st.integers(min_value=0, max_value=2**32),
    trials=st.booleans(),
)
def test_any_split_in_any_order_is_the_whole(
    results: list[dict[str, Any]], parts: int, seed: int, trials: bool
) -> None:
    results = with_trials(results, trials)
    spec = AggregateSpec.of(pass_thresholds={"answer_f1": 0.5})
    whole = compute_aggregates(results, pass_thresholds={"answer_f1": 0.5})
    chance = random.Random(seed)
    owner = [chance.randrange(parts) for _ in results]
    partials = []
    for part in range(parts):
        positions = [i for i, o in enumerate(owner) if o == part]
        partial = PartialAggregates(spec)
        # a part added in several calls, as a worker adds its batches
        cut = chance.randint(0, len(positions))
        for chunk in (positions[:cut], positions[cut:]):
            partial.add([results[i] for i in chunk], chunk)
        if chance.random() < 0.5:
            partials.append(pickle.loads(pickle.dumps(partial)))  # as a worker sends it
        else:  # as a shard file stores it
            partials.append(from_data(json.loads(json.dumps(to_data(partial))), spec))
    chance.shuffle(partials)
    merged = partials[0]
    for other in partials[1:]:
        merged.merge(other)
    assert dumped(merged.finish()) == dumped(whole)


@settings(max_examples=200, deadline=None)
@given(
    results=st.lists(RESULT, max_size=30),
    cuts=st.lists(st.integers(min_value=0, max_value=30), max_size=5),
    trials=st.booleans(),
)
def test_consecutive_parts_merged_in_order_keep_no_positions_and_are_the_whole(
    results: list[dict[str, Any]], cuts: list[int], trials: bool
) -> None:
    """A run's batches, merged in order into ``in_order`` aggregates (values kept without their
    positions, as a run writing JSON Lines keeps them), give the whole's aggregates."""
    results = with_trials(results, trials)
    spec = AggregateSpec.of(pass_thresholds={"answer_f1": 0.5})
    whole = compute_aggregates(results, pass_thresholds={"answer_f1": 0.5})
    bounds = sorted({0, len(results), *(min(c, len(results)) for c in cuts)})
    merged = PartialAggregates(spec, in_order=True)
    for start, end in itertools.pairwise(bounds):
        part = PartialAggregates(spec)
        part.add(results[start:end], range(start, end))
        merged.merge(pickle.loads(pickle.dumps(part)))
    columns = [c for p in merged.templates.values() for c in p.series.values()]
    assert all(column.order is None for column in columns)
    assert dumped(merged.finish()) == dumped(whole)


def test_in_order_aggregates_write_their_values_to_a_temporary_file() -> None:
    """A run's batches of ints and floats: every template's and tag value's values are in the
    temporary file (a few chunks each, adjacent ones joined), and the aggregates are the
    whole's."""
    results = [
        {
            "template_id": f"t{i // 3}",
            "question_id": str(i),
            "steps_score": i % 3 * 0.5,
            "input_tokens": i,
            "question_type": "ab"[i % 2],
        }
        for i in range(20)
    ]
    spec = AggregateSpec.of()
    merged = PartialAggregates(spec, in_order=True)
    for start in range(0, 20, 7):
        part = PartialAggregates(spec)
        part.add(results[start : start + 7], range(start, min(start + 7, 20)))
        merged.merge(part)
    spill = merged.spill
    assert spill is not None
    cold = [spill.load(*merged.cold_at[3 * n : 3 * n + 2]) for n in merged.cold.values()]
    assert len(cold) == 4 and len(merged.templates) == 3  # (t4, t5 and t6 in the last batch)
    groups = [*merged.templates.values(), *cold, *merged.tagged["question_type"].values()]
    columns = [c for group in groups for c in group.series.values()]
    assert columns and all(isinstance(c.values, Spilled) for c in columns)
    assert sum(len(c.values) for c in columns) == 2 * 2 * 20  # 2 metrics, 2 groups a result
    assert dumped(merged.finish()) == dumped(compute_aggregates(results))
    assert dumped(merged.finish()) == dumped(compute_aggregates(results))  # (read again)


def test_a_part_merged_out_of_order_into_in_order_aggregates_is_refused() -> None:
    spec = AggregateSpec.of()
    results = [{"template_id": "t", "question_id": str(i), "steps_score": i} for i in range(4)]
    merged = PartialAggregates(spec, in_order=True)
    late, early = PartialAggregates(spec), PartialAggregates(spec)
    late.add(results[2:], [2, 3])
    early.add(results[:2], [0, 1])
    merged.merge(late)
    try:
        merged.merge(early)
    except ValueError as e:
        assert "before" in str(e)
    else:
        raise AssertionError("merged out of order without a word")


INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
FINITE = st.floats(allow_nan=False, allow_infinity=False, width=64)


@settings(max_examples=300, deadline=None)
@given(
    values=st.one_of(
        st.lists(INT64, max_size=40),
        st.lists(st.sampled_from([0, 1, 2, 2**62, -(2**63)]), max_size=40),
        st.lists(FINITE, max_size=40),
        st.lists(st.sampled_from([0.0, -0.0, 1.0, 1e308, -1e308, 0.5]), max_size=40),
    ),
    zeros=st.booleans(),
    skipped=st.integers(min_value=0, max_value=2),
)
def test_describe_array_is_describe(values: list[Any], zeros: bool, skipped: int) -> None:
    """The statistics of an array of ints or of floats (8 bytes a value) are ``describe``'s of
    their list, bit for bit (sums past 64 bits, float overflow, ties of 0.0 and -0.0)."""
    from array import array

    from qa_eval.aggregate.stats import describe, describe_array

    kind = "d" if any(isinstance(v, float) for v in values) else "q"
    values = [float(v) for v in values] if kind == "d" else values
    expected = describe(values, skipped, zeros)
    assert dumped(describe_array(array(kind, values), skipped, zeros)) == dumped(expected)
    mine = array(kind, values)  # (sorted where it is: the same statistics)
    assert dumped(describe_array(mine, skipped, zeros, mine=True)) == dumped(expected)
    assert mine.tolist() == sorted(values)


@settings(max_examples=300, deadline=None)
@given(
    values=st.one_of(
        st.lists(INT64, max_size=40),
        st.lists(st.sampled_from([0, 1, 2, 2**62, -(2**63), 2**63 - 1]), max_size=40),
        st.lists(FINITE, max_size=40),
        st.lists(st.sampled_from([0.0, -0.0, 1.0, -1.0, 1e308, -1e308, 0.5, 5e-324]), max_size=40),
    ),
    cuts=st.lists(st.integers(min_value=0, max_value=40), max_size=6),
    size=st.integers(min_value=1, max_value=7),
    zeros=st.booleans(),
)
def test_describe_blocks_is_describe(
    values: list[Any], cuts: list[int], size: int, zeros: bool
) -> None:
    """Values written to the spill file in chunks (as a run's batches write them) and
    summarised block by block, never all at once: ``describe``'s statistics of their list, bit
    for bit (the median found by counting keys; ties of 0.0 and -0.0 in their order)."""
    from array import array

    from qa_eval.aggregate.select import describe_blocks
    from qa_eval.aggregate.spill import Spill
    from qa_eval.aggregate.stats import describe

    kind = "d" if any(isinstance(v, float) for v in values) else "q"
    values = [float(v) for v in values] if kind == "d" else values
    expected = dumped(describe(values, 1, zeros, 2))
    spill = Spill()
    spill.write(b"x" * 8)  # (values anywhere in the file)
    joined = None
    for start, end in itertools.pairwise(
        sorted({0, len(values), *(min(c, len(values)) for c in cuts)})
    ):
        spilled = spill.put(array(kind, values[start:end]))
        spill.write(b"y" * 8)  # (chunks apart)
        joined = spilled if joined is None else (joined.extend(spilled) or joined)
    if joined is None:
        assert dumped(describe_blocks(lambda: iter(()), 0, 1, zeros, 2)) == expected
        return

    def blocks() -> Any:
        return joined.blocks(size)

    assert dumped(describe_blocks(blocks, len(values), 1, zeros, 2)) == expected
    again = joined.compact()
    assert len(again.chunks) == 2 and again.read().tolist() == joined.read().tolist()
    assert dumped(describe_blocks(again.blocks, len(values), 1, zeros, 2)) == expected
