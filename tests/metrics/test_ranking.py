"""Ranking metrics: hand-computed tables, and trec_eval (pytrec_eval) as an oracle."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from qa_eval.metrics.retrieval.ranking import (
    average_precision,
    compute_ranking_metric,
    hit_rate_at_k,
    ndcg_at_k,
    parse_metric_name,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
    spec_recall_at_k,
)

REL = [1, 3, 5, 6]
RET = [1, 4, 3, 5, 7]


def test_spec_examples() -> None:
    # README: "recall_at_k(relevant_docs={1, 3, 5, 6}, retrieved_docs=[1, 4, 3, 5, 7], k=5) => 0.75"
    assert spec_recall_at_k(REL, RET, 5) == 0.75
    assert recall_at_k(REL, RET, 5) == 0.75
    # The README's AP formula divides by the number of relevant items: (1 + 2/3 + 3/4) / 4.
    assert average_precision(REL, RET) == pytest.approx((1 + 2 / 3 + 3 / 4) / 4)


@pytest.mark.parametrize(
    ("function", "relevant", "retrieved", "k", "expected"),
    [
        (spec_recall_at_k, [1, 2, 3], [1, 2], 2, 1.0),  # only the first k relevant ids count
        (spec_recall_at_k, [1, 2, 3], [3, 9], 2, 0.0),
        (spec_recall_at_k, [], [1], 3, 0.0),
        (spec_recall_at_k, [1, 1], [1], 2, 1.0),
        (recall_at_k, [1, 2, 3], [1, 2], 2, 2 / 3),
        (recall_at_k, [1, 2], [], 5, 0.0),
        (recall_at_k, [], [1, 2], 5, 0.0),
        (recall_at_k, [1], [1, 1, 1], 1, 1.0),
        (precision_at_k, [1, 2], [1, 9], 2, 0.5),
        (precision_at_k, [1, 2], [1], 4, 0.25),  # divided by k, as trec_eval's P_k
        (precision_at_k, [1], [1, 1], 2, 0.5),  # a repeated id counts once
        (hit_rate_at_k, [5], [1, 2, 5], 2, 0.0),
        (hit_rate_at_k, [5], [1, 2, 5], 3, 1.0),
        (ndcg_at_k, [1], [1], 1, 1.0),
        (ndcg_at_k, [2], [1, 2], 2, 1 / math.log2(3)),
        (ndcg_at_k, [1, 2], [2, 9, 1], 3, (1 + 1 / 2) / (1 + 1 / math.log2(3))),
        (ndcg_at_k, [], [1], 3, 0.0),
    ],
)
def test_table(function, relevant, retrieved, k, expected) -> None:  # type: ignore[no-untyped-def]
    assert function(relevant, retrieved, k) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("relevant", "retrieved", "k", "ap", "rr"),
    [
        ([1, 3], [1, 2, 3], None, (1 + 2 / 3) / 2, 1.0),
        ([1, 3], [1, 2, 3], 2, 1 / 2, 1.0),
        ([3], [1, 2, 3], None, 1 / 3, 1 / 3),
        ([3], [1, 2, 3], 2, 0.0, 0.0),
        ([], [1], None, 0.0, 0.0),
        ([1], [], None, 0.0, 0.0),
        ([2], [1, 1, 2], None, 1 / 2, 1 / 2),  # the repeat of 1 is dropped: 2 is at rank 2
    ],
)
def test_ap_and_rr(relevant: list, retrieved: list, k: int | None, ap: float, rr: float) -> None:
    assert average_precision(relevant, retrieved, k) == pytest.approx(ap)
    assert reciprocal_rank(relevant, retrieved, k) == pytest.approx(rr)


def test_graded_ndcg() -> None:
    gains = {"a": 3.0, "b": 1.0, "c": 0.0}
    dcg = 1.0 / 1 + 3.0 / math.log2(3)
    ideal = 3.0 / 1 + 1.0 / math.log2(3)
    assert ndcg_at_k([], ["b", "a"], 2, gains=gains) == pytest.approx(dcg / ideal)


@pytest.mark.parametrize("k", [0, -1, 1.5, True, None])
def test_bad_k(k: object) -> None:
    for function in (spec_recall_at_k, recall_at_k, precision_at_k, ndcg_at_k, hit_rate_at_k):
        with pytest.raises(ValueError, match="k must be a positive integer"):
            function([1], [1], k)


@pytest.mark.parametrize(
    ("name", "parsed"),
    [
        ("recall@5", ("recall", 5)),
        ("P@3", ("precision", 3)),
        ("ndcg@10", ("ndcg", 10)),
        ("map", ("ap", None)),
        ("AP@10", ("ap", 10)),
        ("mrr", ("rr", None)),
        ("hit_rate@5", ("hit_rate", 5)),
        ("success@1", ("hit_rate", 1)),
    ],
)
def test_parse_metric_name(name: str, parsed: tuple) -> None:
    assert parse_metric_name(name) == parsed


@pytest.mark.parametrize("name", ["recall", "foo@3", "ndcg@0", "p@x", ""])
def test_parse_metric_name_rejects(name: str) -> None:
    with pytest.raises(ValueError):
        parse_metric_name(name)


def test_compute_by_name() -> None:
    assert compute_ranking_metric("recall@5", REL, RET) == 0.75
    assert compute_ranking_metric("map", REL, RET) == average_precision(REL, RET)


def test_against_trec_eval() -> None:
    """pytrec_eval on 300 random queries. Each has at least one relevant and one retrieved id
    (trec_eval leaves out queries without either), and retrieved ids get strictly decreasing
    scores, so trec_eval's ranking is the list order."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rnd = random.Random(7)
    cut = 5
    qrels, runs, cases = {}, {}, {}
    for q in range(300):
        pool = [f"d{i}" for i in range(30)]
        relevant = rnd.sample(pool, rnd.randint(1, 15))
        retrieved = rnd.sample(pool, rnd.randint(1, 20))
        qid = f"q{q}"
        qrels[qid] = {doc: 1 for doc in relevant}
        runs[qid] = {doc: float(len(retrieved) - i) for i, doc in enumerate(retrieved)}
        cases[qid] = (relevant, retrieved)
    measures = {
        f"P.{cut}",
        f"recall.{cut}",
        "map",
        f"map_cut.{cut}",
        "recip_rank",
        f"ndcg_cut.{cut}",
        f"success.{cut}",
    }
    oracle = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(runs)
    for qid, (relevant, retrieved) in cases.items():
        expected = oracle[qid]
        ours = {
            f"P_{cut}": precision_at_k(relevant, retrieved, cut),
            f"recall_{cut}": recall_at_k(relevant, retrieved, cut),
            "map": average_precision(relevant, retrieved),
            f"map_cut_{cut}": average_precision(relevant, retrieved, cut),
            "recip_rank": reciprocal_rank(relevant, retrieved),
            f"ndcg_cut_{cut}": ndcg_at_k(relevant, retrieved, cut),
            f"success_{cut}": hit_rate_at_k(relevant, retrieved, cut),
        }
        for measure, value in ours.items():
            assert value == pytest.approx(expected[measure], abs=1e-9), (qid, measure)


ids = st.lists(st.integers(0, 20), max_size=15)


@given(ids, ids, st.integers(1, 20))
def test_all_in_unit_interval_and_recall_monotone(relevant: list, retrieved: list, k: int) -> None:
    for function in (recall_at_k, precision_at_k, ndcg_at_k, hit_rate_at_k, spec_recall_at_k):
        assert 0.0 <= function(relevant, retrieved, k) <= 1.0 + 1e-12
    assert 0.0 <= average_precision(relevant, retrieved, k) <= 1.0 + 1e-12
    assert recall_at_k(relevant, retrieved, k) <= recall_at_k(relevant, retrieved, k + 1)
