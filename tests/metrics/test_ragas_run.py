"""The ``ragas`` group of the registry end to end over the scripted judge (``openai_stub``): a run
with ``enable=["ragas"]`` (or one of its metrics) writes, for each question, the value its
``qa_eval.metrics.collections`` class gives on the same inputs and the same verdicts, with a
reason and a cost, and ``compute_aggregates`` summarises it."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest

pytest.importorskip("openai")
pytest.importorskip("pydantic")

from openai import AsyncOpenAI

from openai_stub import Reply, StubServer, asked_text, completion
from qa_eval import compute_aggregates, run_evaluation

QUESTION = "Who founded Apple, and when?"
ANSWER = "Apple was founded by Steve Jobs in 1976. It sells cars. It is based in Cupertino."
REFERENCE = "Apple was founded in 1976 by Steve Jobs, Steve Wozniak and Ronald Wayne."
CONTEXTS = [
    "Apple was founded in 1976 by Steve Jobs and Steve Wozniak.",
    "The company is based in Cupertino, California.",
    "Ronald Wayne sold his share early.",
]


def _tagged(text: str, tag: str) -> str:
    found = re.search(rf"<{tag}>\n(.*?)\n</{tag}>", text, re.S)
    assert found, f"no <{tag}> in the prompt"
    return found.group(1)


def _numbered(text: str, tag: str) -> list[str]:
    return re.findall(rf'<{tag} id="\d+">\n(.*?)\n</{tag}>', text, re.S)


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=\.)\s+", text.strip()) if s]


def _names(text: str) -> list[str]:
    return re.findall(r"\b[A-Z][a-z]+\b", text)


def _holds(statement: str, text: str) -> bool:
    """The scripted judge's one rule: a statement holds in a text naming all its numbers and
    capitalised words."""
    words = re.findall(r"\b(?:[A-Z][a-z]+|\d+)\b", statement)
    return bool(words) and all(w in text for w in words)


def reply_to(text: str) -> Any:
    """The scripted judge's reply to a prompt, by its marker; a function of the prompt alone."""
    kind = re.search(r"\[qa-eval:([\w-]+)\]", text)
    assert kind, text[:80]
    marker = kind.group(1)
    if marker.startswith(("answer-accuracy-rater", "groundedness-rater", "context-rating-")):
        top = 4 if marker.startswith("answer") else 2
        return {"rating": top if marker.endswith(("1", "direct")) else top // 2}
    if marker in ("entities", "summary-keyphrases"):
        names = list(dict.fromkeys(_names(_tagged(text, "text"))))
        return {"entities": names} if marker == "entities" else {"keyphrases": names}
    if marker == "claim-decomposition":
        return {"claims": _sentences(_tagged(text, "text"))}
    if marker == "faithfulness-statements":
        return {"statements": _sentences(_tagged(text, "answer"))}
    if marker == "faithfulness-verdicts":
        context = _tagged(text, "context")
        statements = _numbered(text, "statement")
        return {
            "verdicts": [
                {"statement": i, "reason": "r", "verdict": int(_holds(s, context))}
                for i, s in enumerate(statements, 1)
            ]
        }
    if marker == "statements-support":
        chunks = _numbered(text, "chunk")
        statements = _numbered(_tagged(text, "statements"), "statement")
        verdicts = [
            {
                "statement": i,
                "reason": "r",
                "chunks": [k for k, c in enumerate(chunks, 1) if _holds(s, c)],
            }
            for i, s in enumerate(statements, 1)
        ]
        return {"verdicts": verdicts}
    if marker == "correctness-classification":
        answer = _numbered(_tagged(text, "answer_statements"), "statement")
        truth = _numbered(_tagged(text, "reference_statements"), "statement")
        return {
            side: [
                {"statement": i, "reason": "r", "verdict": int("1976" in s)}
                for i, s in enumerate(items, 1)
            ]
            for side, items in (("answer", answer), ("reference", truth))
        }
    if marker == "summary-questions":
        keyphrases = re.findall(r"- (.+)", _tagged(text, "keyphrases"))
        return {"questions": [f"Does the text name {k}?" for k in keyphrases]}
    if marker == "summary-answers":
        summary = _tagged(text, "summary")
        questions = _numbered(_tagged(text, "questions"), "question")
        return {
            "verdicts": [
                {"question": i, "verdict": int(q.split()[-1].rstrip("?") in summary)}
                for i, q in enumerate(questions, 1)
            ]
        }
    raise AssertionError(f"unexpected prompt {marker}")


def script(request: dict[str, Any], number: int) -> Reply:
    """The stub's handler: every prompt answered by :func:`reply_to`."""
    return completion(json.dumps(reply_to(asked_text(request))))


@pytest.fixture(scope="module")
def server() -> Any:
    with StubServer(script) as stub:
        yield stub


def _dataset(answer: str = ANSWER) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    reference = [
        {
            "template_id": "t",
            "questions": [{"id": "q1", "question_text": QUESTION, "reference_answer": REFERENCE}],
        }
    ]
    step = {
        "name": "retrieval",
        "args": {"query": QUESTION},
        "output": json.dumps([{"text": c} for c in CONTEXTS]),
        "status": "success",
    }
    responses = [{"question_id": "q1", "actual_answer": answer, "actual_steps": [step]}]
    return reference, responses


def _config(url: str) -> dict[str, Any]:
    return {
        "llm": {
            "generation": {"base_url": url, "api_key": "x", "model": "gpt-4o-mini"},
            "embedding": {"provider": "openai", "base_url": url, "api_key": "x"},
        },
        "answer_correctness": False,
        "answer_relevance": False,
        "retrieval_answer": False,
        "retrieval_context": False,
    }


def _run(url: str, enable: list[str]) -> dict[str, Any]:
    reference, responses = _dataset()
    (result,) = run_evaluation(
        reference, responses, config=_config(url), enable=enable, cache=False
    )
    return result


def _class_value(url: str, name: str) -> Any:
    """What the metric's collections class gives on the same inputs."""
    from qa_eval.embeddings import embedding_factory
    from qa_eval.llms import llm_factory
    from qa_eval.metrics import collections as c

    client = AsyncOpenAI(base_url=url, api_key="x")
    llm = llm_factory("gpt-4o-mini", client=client, cache=False)
    row = {
        "user_input": QUESTION,
        "response": ANSWER,
        "reference": REFERENCE,
        "retrieved_contexts": CONTEXTS,
    }
    made: dict[str, tuple[Any, tuple[str, ...]]] = {
        "answer_accuracy": (c.AnswerAccuracy(llm=llm), ("user_input", "response", "reference")),
        "factual_correctness": (c.FactualCorrectness(llm=llm), ("response", "reference")),
        "response_groundedness": (
            c.ResponseGroundedness(llm=llm),
            ("response", "retrieved_contexts"),
        ),
        "context_entity_recall": (
            c.ContextEntityRecall(llm=llm),
            ("reference", "retrieved_contexts"),
        ),
        "context_relevance": (c.ContextRelevance(llm=llm), ("user_input", "retrieved_contexts")),
        "noise_sensitivity": (
            c.NoiseSensitivity(llm=llm),
            ("user_input", "response", "reference", "retrieved_contexts"),
        ),
        "ragas_answer_correctness": (
            c.AnswerCorrectness(
                llm=llm,
                embeddings=embedding_factory(
                    "openai", model="text-embedding-3-small", client=client
                ),
            ),
            ("user_input", "response", "reference"),
        ),
    }
    if name == "summary_score":
        result = asyncio.run(
            c.SummaryScore(llm=llm).ascore(reference_contexts=CONTEXTS, response=ANSWER)
        )
        return result.value
    metric, keys = made[name]
    result = asyncio.run(metric.ascore(**{k: row[k] for k in keys}))
    return result.value


RAGAS = (
    "answer_accuracy",
    "factual_correctness",
    "response_groundedness",
    "context_entity_recall",
    "context_relevance",
    "noise_sensitivity",
    "summary_score",
    "ragas_answer_correctness",
)


@pytest.mark.parametrize("name", RAGAS)
def test_a_run_writes_the_value_the_class_gives(server: Any, name: str) -> None:
    result = _run(server.url, [name])
    expected = _class_value(server.url, name)
    assert expected is not None
    assert result[name] == pytest.approx(expected, abs=1e-12)
    assert result[f"{name}_reason"]
    assert f"{name}_error" not in result
    assert result[f"{name}_cost"] is not None
    assert not any(k in result for k in RAGAS if k != name)  # only what was enabled


def test_the_values_follow_the_scripted_verdicts(server: Any) -> None:
    result = _run(server.url, ["ragas"])
    assert result["answer_accuracy"] == (4 / 4 + 2 / 4) / 2
    assert result["response_groundedness"] == (2 / 2 + 1 / 2) / 2
    assert result["context_relevance"] == (2 / 2 + 1 / 2) / 2
    # reference entities Apple, Steve, Jobs, Wozniak, Ronald, Wayne: all named by the contexts
    assert result["context_entity_recall"] == pytest.approx(6 / (6 + 1e-8), abs=1e-15)
    # answer claims: 1976/Jobs holds, cars does not, Cupertino does not (tp 1, fp 2); reference
    # claim: Wozniak and Wayne are not in the answer (fn 1): P 1/3, R 1/2, F1 0.4
    assert result["factual_correctness"] == 0.4
    # "It sells cars." is wrong but no chunk supports it; Cupertino is wrong (not in the
    # reference) and supported only by a chunk that supports no reference statement
    assert result["noise_sensitivity"] == 0.0


def test_the_group_is_opt_in_and_aggregated(server: Any) -> None:
    reference, responses = _dataset()
    plain = run_evaluation(reference, responses, config=_config(server.url), cache=False)
    assert not any(k in plain[0] for k in RAGAS)
    results = run_evaluation(
        reference, responses, config=_config(server.url), enable=["ragas"], cache=False
    )
    aggregates = compute_aggregates(results)
    for name in RAGAS:
        assert aggregates["micro"][name]["mean"] == pytest.approx(results[0][name])
    assert results[0]["llm_cost"] == pytest.approx(sum(results[0][f"{n}_cost"] for n in RAGAS))


def test_a_question_without_retrieval_gets_only_the_metrics_it_can(server: Any) -> None:
    reference, responses = _dataset()
    responses[0]["actual_steps"] = []
    (result,) = run_evaluation(
        reference, responses, config=_config(server.url), enable=["ragas"], cache=False
    )
    assert "answer_accuracy" in result and "factual_correctness" in result
    for name in ("context_relevance", "noise_sensitivity", "response_groundedness"):
        assert name not in result
