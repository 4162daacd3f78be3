"""The ranges users read are the registry's (issue 36): ``answer_relevance`` is a mean cosine
(-1 to 1, as ragas' AnswerRelevancy: it can be negative), ``qa-eval metrics`` says so, and the
README names every aggregated key whose values are not on 0-1 instead of claiming that every
score is."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from qa_eval.cli import main
from qa_eval.metrics.answer.relevance import answer_relevancy
from qa_eval.vocabulary.registry import METRICS

README = Path(__file__).resolve().parents[1] / "README.md"
NOT_SCORES = ("0-1", "usd", "tokens", "seconds")


def test_answer_relevance_is_a_cosine_that_can_be_negative(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert answer_relevancy([1.0, 0.0], [[-1.0, 0.1], [-0.5, -0.5]], [0, 0]) < 0
    assert main(["metrics", "answer_relevance", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    families = data if isinstance(data, list) else [data]
    keys = {k["name"]: k for f in families for k in f["keys"]}
    assert keys["answer_relevance"]["scale"] == "cosine"


def test_the_readme_names_every_score_not_on_0_1() -> None:
    text = " ".join(README.read_text(encoding="utf-8").split())
    assert "every score is stored on 0–1" not in text
    sentence = re.search(r"Each key's range is its scale in the registry.*?\)\.", text)
    assert sentence is not None
    for metric in METRICS.values():
        for key in metric.keys:
            if key.aggregate and key.scale not in NOT_SCORES:
                short = "`_" + key.name.removeprefix("tool_calls_") + "`"  # (tool_calls_extra...)
                assert key.name in sentence.group(0) or short in sentence.group(0), key.name
