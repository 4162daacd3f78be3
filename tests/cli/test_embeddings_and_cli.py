"""The offline embedding model, and the judge options of the command line, end to end."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml

from qa_eval.cli import main
from qa_eval.judge import embeddings
from qa_eval.judge.embeddings import EmbeddingUnavailable, OfflineEmbedder
from qa_eval.metrics.answer.relevance import cosine

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def offline() -> OfflineEmbedder:
    return OfflineEmbedder()


def test_offline_vectors_are_unit_length_and_deterministic(offline: OfflineEmbedder) -> None:
    texts = ["When was the first Super Bowl?", "The first Super Bowl was held on Jan 15, 1967"]
    first = offline.embed_sync(texts)
    again = offline.embed_sync(list(reversed(texts)))
    assert len(first) == 2 and all(len(v) == 384 for v in first)
    assert all(abs(sum(x * x for x in v) - 1.0) < 1e-5 for v in first)
    assert first[0] == pytest.approx(again[1], abs=1e-6)  # batch order and padding do not matter


def test_offline_similarity_orders_sentences_by_meaning(offline: OfflineEmbedder) -> None:
    question, paraphrase, unrelated = offline.embed_sync(
        [
            "Which transformers are in substation Oslo?",
            "List the transformers located in the Oslo substation.",
            "Bananas are rich in potassium.",
        ]
    )
    assert cosine(question, paraphrase) > 0.7
    assert cosine(question, unrelated) < 0.3


def test_offline_model_file_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embeddings, "OFFLINE_MODEL_SHA256", hashlib.sha256(b"other").hexdigest())
    embeddings._offline_model.cache_clear()  # the model is loaded (and checked) once a process
    try:
        with pytest.raises(EmbeddingUnavailable, match="SHA-256"):
            OfflineEmbedder().embed_sync(["x"])
    finally:
        embeddings._offline_model.cache_clear()


def _config(tmp_path: Path, url: str, extra: str = "") -> Path:
    path = tmp_path / "judge.yaml"
    path.write_text(
        "llm:\n"
        f"  generation: {{provider: openai, model: gpt-4o-mini, base_url: '{url}', api_key: x}}\n"
        f"  embedding: {{provider: openai, model: text-embedding-3-small, base_url: '{url}',"
        " api_key: x}\n" + extra,
        encoding="utf-8",
    )
    return path


def _evaluate(*args: str) -> int:
    return main(
        [
            "evaluate",
            str(EXAMPLES / "reference.yaml"),
            str(EXAMPLES / "responses.jsonl"),
            "-q",
            *args,
        ]
    )


def test_dry_run_prints_the_plan_and_calls_nothing(
    stub, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    out = tmp_path / "results.yaml"
    assert _evaluate("-c", str(_config(tmp_path, stub.url)), "--dry-run", "-o", str(out)) == 0
    printed = capsys.readouterr().out
    assert stub.chat_requests == []
    assert not out.exists()
    total = [line for line in printed.splitlines() if line.startswith("total")]
    assert total and int(total[0].split()[1]) > 0
    assert "answer_correctness" in printed and "no judge call was made" in printed


def test_evaluate_with_a_judge_writes_results_signature_and_costs(
    stub, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    out = tmp_path / "results.json"
    aggregates = tmp_path / "aggregates.yaml"
    config = _config(tmp_path, stub.url)
    assert (
        _evaluate(
            "-c",
            str(config),
            "-o",
            str(out),
            "--aggregates",
            str(aggregates),
            "--disable",
            "answer_relevance",
        )
        == 0
    )
    results = json.loads(out.read_text())
    answered = [r for r in results if r["status"] == "success" and "actual_answer" in r]
    assert answered and all("answer_f1" in r and "llm_cost" in r for r in answered)
    assert not any("answer_relevance" in r for r in results)
    signature = yaml.safe_load((tmp_path / "results.signature.yaml").read_text())
    assert signature["judge"]["model"] == "gpt-4o-mini"
    assert signature["options"]["disabled"] == ["answer_relevance"]
    assert signature["usage"]["total"]["calls"] == len(stub.chat_requests)
    assert "signature" in yaml.safe_load(aggregates.read_text())
    assert not (tmp_path / "results.json.partial.jsonl").exists()
    calls = len(stub.chat_requests)
    assert _evaluate("-c", str(config), "-o", str(out), "--disable", "answer_relevance") == 0
    assert len(stub.chat_requests) == calls  # the second run is answered from the cache
    assert json.loads(out.read_text()) == results


def test_no_judge_is_a_note_not_an_error(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert _evaluate("-o", str(tmp_path / "r.yaml")) == 0
    assert "LLM metrics not computed" in capsys.readouterr().err


def test_bad_config_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    config = tmp_path / "judge.yaml"
    config.write_text("llm:\n  generation: {provider: openai, modle: x}\n", encoding="utf-8")
    assert _evaluate("-c", str(config)) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "llm.generation.modle" in err and str(config) in err


def test_tsv_command_keeps_input_order(stub, tmp_path: Path) -> None:
    rows = [
        ("Who built it?", "Alice", "Alice did"),
        ("When?", "In 1998", ""),
        ("Where?", "Oslo", "In Oslo, Norway"),
    ]
    source = tmp_path / "in.tsv"
    source.write_text(
        "Question\tReference answer\tActual answer\n"
        + "".join(f"{q}\t{r}\t{a}\n" for q, r, a in rows),
        encoding="utf-8",
    )
    target = tmp_path / "out.tsv"
    config = _config(tmp_path, stub.url)
    assert (
        main(
            [
                "answer-correctness",
                "-i",
                str(source),
                "-o",
                str(target),
                "-c",
                str(config),
                "-q",
                "--no-cache",
            ]
        )
        == 0
    )
    lines = target.read_text(encoding="utf-8").splitlines()
    assert lines[0].split("\t") == ["#Reference", "#PTarget", "#Matching", "Reasoning", "Error"]
    assert len(lines) == 4
    assert lines[2].split("\t")[1:4] == ["0", "0", "the answer is empty"]
    assert all(line.split("\t")[0].isdigit() for line in (lines[1], lines[3]))
    assert len(stub.chat_requests) == 2


def test_tsv_command_names_missing_columns(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    source = tmp_path / "in.tsv"
    source.write_text("Question\tReference\nq\tr\n", encoding="utf-8")
    assert main(["answer-correctness", "-i", str(source), "-o", str(tmp_path / "o.tsv")]) == 2
    err = capsys.readouterr().err
    assert "in.tsv" in err and "'Reference answer'" in err
