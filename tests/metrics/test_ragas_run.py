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
    if marker == "sql-equivalence":
        # equivalent when the two queries name the same table (after FROM) and the schema has it
        assert "CREATE TABLE users" in _tagged(text, "schema")
        tables = [
            re.search(r"FROM (\w+)", _tagged(text, t))
            for t in ("generated_query", "reference_query")
        ]
        same = all(tables) and tables[0].group(1) == tables[1].group(1)  # type: ignore[union-attr]
        return {"response_explanation": "a", "reference_explanation": "b", "equivalent": same}
    if marker == "rubric-score":
        levels = sorted(int(n) for n in re.findall(r"score(\d+)_description", text))
        top = "<reference>" in text  # the reference is judged too: the top level
        return {
            "feedback": f"fits level {'top' if top else 'one'}",
            "score": levels[-1 if top else 0],
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


def _class_value(url: str, name: str, **settings: Any) -> Any:
    """What the metric's collections class gives on the same inputs (its value)."""
    return _class_result(url, name, **settings).value


def _class_result(url: str, name: str, **settings: Any) -> Any:
    """What the metric's collections class gives on the same inputs (``settings``: its
    constructor arguments)."""
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
    embeddings = embedding_factory("openai", model="text-embedding-3-small", client=client)
    made: dict[str, tuple[Any, tuple[str, ...]]] = {
        "answer_accuracy": (c.AnswerAccuracy, ("user_input", "response", "reference")),
        "factual_correctness": (c.FactualCorrectness, ("response", "reference")),
        "response_groundedness": (c.ResponseGroundedness, ("response", "retrieved_contexts")),
        "context_entity_recall": (c.ContextEntityRecall, ("reference", "retrieved_contexts")),
        "context_relevance": (c.ContextRelevance, ("user_input", "retrieved_contexts")),
        "noise_sensitivity": (
            c.NoiseSensitivity,
            ("user_input", "response", "reference", "retrieved_contexts"),
        ),
        "ragas_answer_correctness": (
            lambda **kw: c.AnswerCorrectness(embeddings=embeddings, **kw),
            ("user_input", "response", "reference"),
        ),
    }
    if name == "summary_score":
        summary = c.SummaryScore(llm=llm, **settings)
        return asyncio.run(summary.ascore(reference_contexts=CONTEXTS, response=ANSWER))
    make, keys = made[name]
    return asyncio.run(make(llm=llm, **settings).ascore(**{k: row[k] for k in keys}))


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
def test_a_run_writes_the_value_and_reason_the_class_gives(server: Any, name: str) -> None:
    result = _run(server.url, [name])
    expected = _class_result(server.url, name)
    assert expected.value is not None
    assert result[name] == pytest.approx(expected.value, abs=1e-12)
    assert result[f"{name}_reason"] == expected.reason  # built in one place for both
    # from the verdicts: counts of the judged items, or the raters' ratings
    assert re.search(r"\d+ of \d+|rated \d|TP \d|ratings \(0-2\)", expected.reason)
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
    costs = [v for k, v in results[0].items() if k.endswith("_cost") and k != "llm_cost"]
    assert "rubrics_score_cost" in results[0]  # the rubric metric of the group ran too
    assert results[0]["llm_cost"] == pytest.approx(sum(costs))


def test_a_question_without_retrieval_gets_only_the_metrics_it_can(server: Any) -> None:
    reference, responses = _dataset()
    responses[0]["actual_steps"] = []
    (result,) = run_evaluation(
        reference, responses, config=_config(server.url), enable=["ragas"], cache=False
    )
    assert "answer_accuracy" in result and "factual_correctness" in result
    for name in ("context_relevance", "noise_sensitivity", "response_groundedness"):
        assert name not in result


# --- the metrics registered with ragas' question fields, and ragas' options -------------------


def _one(
    url: str,
    enable: list[str],
    question: dict[str, Any] | None = None,
    response: dict[str, Any] | None = None,
    config: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One question's result with ``question`` / ``response`` keys over the default dataset."""
    reference, responses = _dataset()
    reference[0]["questions"][0].update(question or {})
    responses[0].update(response or {})
    (result,) = run_evaluation(
        reference, responses, config={**_config(url), **(config or {})}, enable=enable, cache=False
    )
    return result


def _llm(url: str) -> Any:
    from qa_eval.llms import llm_factory

    return llm_factory("gpt-4o-mini", client=AsyncOpenAI(base_url=url, api_key="x"), cache=False)


SCHEMA = ["CREATE TABLE users (id INT, name TEXT)", "CREATE TABLE orders (id INT)"]


@pytest.mark.parametrize(
    ("answer", "expected"),
    [("SELECT name FROM users WHERE id = 1", 1.0), ("SELECT id FROM orders", 0.0)],
)
def test_sql_semantic_equivalence_reads_the_schema_from_the_question(
    server: Any, answer: str, expected: float
) -> None:
    from qa_eval.metrics.collections import SQLSemanticEquivalence

    reference_sql = "SELECT u.name FROM users u WHERE u.id = 1"
    question = {"reference_answer": reference_sql, "reference_contexts": SCHEMA}
    result = _one(server.url, ["sql_semantic_equivalence"], question, {"actual_answer": answer})
    assert result["sql_semantic_equivalence"] == expected
    assert result["reference_contexts"] == SCHEMA  # copied into the result
    same = asyncio.run(
        SQLSemanticEquivalence(llm=_llm(server.url)).ascore(
            response=answer, reference=reference_sql, reference_contexts=SCHEMA
        )
    )
    assert (result["sql_semantic_equivalence"], result["sql_semantic_equivalence_reason"]) == (
        same.value,
        same.reason,
    )
    # not in the ragas group: a text QA run does not judge its answers as SQL
    assert "sql_semantic_equivalence" not in _one(server.url, ["ragas"], question)


def test_rubrics_scores_follow_the_config_and_the_question(server: Any) -> None:
    from qa_eval.metrics.collections import DomainSpecificRubrics, InstanceSpecificRubrics

    default = _one(server.url, ["rubrics_score"])
    assert default["rubrics_score"] == 1.0  # ragas' default 1-5 rubric, without the reference
    assert "instance_specific_rubrics" not in default  # the question has no rubrics
    rubrics = {"score0_description": "wrong", "score7_description": "right"}
    block = {"rubrics_score": {"enabled": True, "rubrics": rubrics, "with_reference": True}}
    configured = _one(server.url, [], config=block)
    assert configured["rubrics_score"] == 7.0  # the config's rubric; the reference judged
    own = _one(server.url, ["instance_specific_rubrics"], {"rubrics": rubrics})
    assert own["instance_specific_rubrics"] == 7.0
    assert own["instance_specific_rubrics_reason"] == "fits level top"
    llm = _llm(server.url)
    same = asyncio.run(
        InstanceSpecificRubrics(llm=llm).ascore(
            user_input=QUESTION,
            response=ANSWER,
            reference=REFERENCE,
            rubrics=rubrics,
        )
    )
    assert same.value == own["instance_specific_rubrics"]
    plain = asyncio.run(DomainSpecificRubrics(llm=llm).ascore(user_input=QUESTION, response=ANSWER))
    assert (plain.value, plain.reason) == (1.0, default["rubrics_score_reason"])


def _tool_steps(*calls: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"name": n, "args": a, "status": "success", "output": "ok"} for n, a in calls]


S_A, S_B, L_1 = ("search", {"q": "a"}), ("search", {"q": "b"}), ("lookup", {"id": 1})
TOOL_CASES = [
    # (actual calls, reference calls)
    ([S_A, L_1], [S_A, L_1]),
    ([L_1, S_A], [S_A, L_1]),  # another order: 1 unless strict
    ([S_B, L_1], [S_A, L_1]),  # one argument differs
    ([S_A], [S_A, L_1]),  # one call missing
    ([], [S_A]),
    ([S_A, S_A], [S_A]),  # a call repeated: one set element
]


@pytest.mark.parametrize(("actual", "expected"), TOOL_CASES)
@pytest.mark.parametrize("strict", [True, False])
def test_tool_call_metrics_are_the_classes_on_the_steps(
    server: Any, actual: Any, expected: Any, strict: bool
) -> None:
    from qa_eval.messages import AIMessage, ToolCall
    from qa_eval.metrics.collections import ToolCallAccuracy, ToolCallF1

    question = {"reference_tool_calls": [{"name": n, "args": a} for n, a in expected]}
    config = {"tool_call_accuracy": {"enabled": True, "strict_order": strict}}
    result = _one(
        server.url,
        ["tool_call_f1"],
        question,
        {"actual_steps": _tool_steps(*actual)},
        config=config,
    )
    conversation = [AIMessage(content="", tool_calls=[ToolCall(name=n, args=a) for n, a in actual])]
    reference = [ToolCall(name=n, args=a) for n, a in expected]
    accuracy = ToolCallAccuracy(strict_order=strict).score(
        user_input=conversation, reference_tool_calls=reference
    )
    f1 = ToolCallF1().score(user_input=conversation, reference_tool_calls=reference)
    assert (result["tool_call_accuracy"], result["tool_call_accuracy_reason"]) == (
        accuracy.value,
        accuracy.reason,
    )
    assert (result["tool_call_f1"], result["tool_call_f1_reason"]) == (f1.value, f1.reason)


def test_tool_call_metrics_skip_a_question_without_reference_calls(server: Any) -> None:
    result = _one(server.url, ["tool_call_accuracy", "tool_call_f1"])
    assert not any(k.startswith("tool_call") for k in result)


def test_quoted_spans_alignment_runs_on_the_answer_and_the_contexts(server: Any) -> None:
    from qa_eval.metrics.collections import QuotedSpansAlignment

    answer = 'It says "founded in 1976 by Steve Jobs" and "based in Paris, France today".'
    result = _one(server.url, ["ragas-text"], response={"actual_answer": answer})
    same = QuotedSpansAlignment().score(response=answer, retrieved_contexts=CONTEXTS)
    assert result["quoted_spans_alignment"] == same.value == 0.5
    assert result["quoted_spans_alignment_reason"] == same.reason
    block = {"quoted_spans_alignment": {"enabled": True, "min_span_words": 6}}
    longer = _one(server.url, [], response={"actual_answer": answer}, config=block)
    assert longer["quoted_spans_alignment"] == 1.0  # only the 6-word span counts; it matches


def test_datacompy_score_needs_its_extra_and_names_it(server: Any) -> None:
    table = "a,b\n1,2\n3,4\n"
    question = {"reference_answer": table}
    result = _one(server.url, ["datacompy_score"], question, {"actual_answer": "a,b\n1,2\n3,5\n"})
    try:
        import datacompy  # noqa: F401
    except ImportError:
        assert "datacompy_score" not in result
        assert "pip install 'qa-eval[datacompy]'" in result["datacompy_score_error"]
        return
    assert result["datacompy_score"] == 0.5  # one of two rows matches: P = R = 1/2
    assert "Precision: 0.5000" in result["datacompy_score_reason"]


@pytest.mark.parametrize(
    ("name", "block", "settings"),
    [
        ("factual_correctness", {"mode": "precision"}, {"mode": "precision"}),
        ("factual_correctness", {"mode": "recall", "coverage": "high"}, {"mode": "recall",
                                                                         "coverage": "high"}),
        ("factual_correctness", {"beta": 2}, {"beta": 2.0}),
        ("noise_sensitivity", {"mode": "irrelevant"}, {"mode": "irrelevant"}),
        ("summary_score", {"coeff": 0.2}, {"coeff": 0.2}),
        ("summary_score", {"length_penalty": False}, {"length_penalty": False}),
        ("answer_accuracy", {"max_retries": 1}, {"max_retries": 1}),
        ("ragas_answer_correctness", {"weights": [0.5, 0.5]}, {"weights": [0.5, 0.5]}),
    ],
)  # fmt: skip
def test_a_config_option_is_the_class_argument(
    server: Any, name: str, block: dict[str, Any], settings: dict[str, Any]
) -> None:
    result = _one(server.url, [], config={name: {"enabled": True, **block}})
    expected = _class_result(server.url, name, **settings)
    assert result[name] == pytest.approx(expected.value, abs=1e-12)
    assert result[f"{name}_reason"] == expected.reason
    default = _class_result(server.url, name)
    if name != "answer_accuracy":  # the retries change nothing when every reply is usable
        assert expected.reason != default.reason  # the option reached the engine


@pytest.mark.parametrize(
    ("block", "field"),
    [
        ({"factual_correctness": {"mode": "accuracy"}}, "factual_correctness.mode"),
        ({"factual_correctness": {"beta": 0}}, "factual_correctness.beta"),
        ({"noise_sensitivity": {"mode": "all"}}, "noise_sensitivity.mode"),
        ({"summary_score": {"coeff": 1.5}}, "summary_score.coeff"),
        ({"ragas_answer_correctness": {"weights": [0, 0]}}, "ragas_answer_correctness.weights"),
        ({"rubrics_score": {"rubrics": {"score1_description": 3}}}, "rubrics_score.rubrics"),
        ({"datacompy_score": {"metric": "auc"}}, "datacompy_score.metric"),
        ({"tool_call_accuracy": {"strict_order": "yes"}}, "tool_call_accuracy.strict_order"),
    ],
)
def test_a_bad_option_is_refused_naming_its_field(block: dict[str, Any], field: str) -> None:
    from qa_eval.config import parse_config
    from qa_eval.errors import InputError

    with pytest.raises(InputError, match=re.escape(field)):
        parse_config({"llm": {"generation": {"api_key": "x"}}, **block}, "cfg.yaml")


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"reference_tool_calls": {"name": "x"}}, "reference_tool_calls"),
        ({"reference_tool_calls": [{"args": {}}]}, "reference_tool_calls[0]"),
        ({"reference_contexts": "CREATE TABLE t"}, "reference_contexts"),
        ({"rubrics": ["good", "bad"]}, "rubrics"),
    ],
)
def test_a_bad_question_field_is_refused_naming_the_question(
    fields: dict[str, Any], named: str
) -> None:
    from qa_eval.errors import QaEvalError

    reference, responses = _dataset()
    reference[0]["questions"][0].update(fields)
    with pytest.raises(QaEvalError) as caught:
        run_evaluation(reference, responses)
    assert "q1" in str(caught.value) and named in str(caught.value)


@pytest.mark.parametrize(
    ("args", "value"),
    [({"a": 1}, 1.0), ('{"a": 1}', 1.0), ("a=1, not JSON", 0.0), (None, 0.0)],
)
def test_tool_call_accuracy_reads_argument_text_as_a_trace_import_keeps_it(
    args: Any, value: float
) -> None:
    from qa_eval.metrics.ragas.entries import tool_call_accuracy_entry

    inputs = {
        "reference_tool_calls": [{"name": "f", "args": {"a": 1}}],
        "steps": [{"name": "f", "args": args}],
    }
    output = asyncio.run(tool_call_accuracy_entry(None, inputs, {}))
    assert output.values["tool_call_accuracy"] == value
