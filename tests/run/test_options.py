"""A run's options are one value, ``RunOptions``: checked when made, frozen, taken by the entry
points as ``options=`` in place of their keywords, held by a plan; no ``ContextVar`` in ``run/``."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest

import qa_eval
from openai_stub import StubServer
from qa_eval import QaEvalError, RunOptions, arun_evaluation, iter_evaluation, run_evaluation
from qa_eval.run import progress
from qa_eval.run.options import LIBRARY_DEFAULT
from qa_eval.run.plan import plan_evaluation

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples" / "powergrid"
REFERENCE = qa_eval.read_reference(DEMO / "reference.yaml")
RESPONSES = list(qa_eval.read_responses(DEMO / "responses-good.jsonl"))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"fingerprint": "sha256:12"}, "fingerprint must be 'sha256:' and 64 hex digits"),
        ({"keys": "ragas"}, "keys must be one of 'qa-eval', 'graphrag-eval', not 'ragas'"),
        ({"disable": ["faithfullness"]}, "unknown metric to disable: faithfullness"),
        ({"enable": ["graphrag", "nope"]}, "unknown metric to enable: nope"),
    ],
)
def test_options_are_checked_when_made_in_the_words_runs_used(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises(QaEvalError, match=message):
        RunOptions.of(**options)
    with pytest.raises(QaEvalError, match=message):  # the entry points, as before
        run_evaluation(REFERENCE, RESPONSES, **options)


def test_options_are_frozen_and_name_the_switches() -> None:
    options = RunOptions.of(concurrency=3, enable=["graphrag"], disable=["faithfulness"])
    assert options.config.source == LIBRARY_DEFAULT and options.config.generation is None
    assert options.concurrency == 3
    assert "context_recall" in options.enabled and "faithfulness" not in options.enabled
    assert options.disabled == {"faithfulness"} and options.disable == ("faithfulness",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.max_cost = 1.0  # type: ignore[misc]
    with pytest.raises(QaEvalError, match="unknown metric to enable"):
        dataclasses.replace(options, enable=("x",))  # a changed copy is checked again
    with pytest.raises(TypeError, match="config must be an EvalConfig"):
        RunOptions("judge.yaml")  # type: ignore[arg-type]


def test_the_entry_points_take_the_options_as_one_value() -> None:
    keywords = {"disable": ["answer_relevance"], "reference_source": "ref.yaml"}
    options = RunOptions.of(**keywords)  # type: ignore[arg-type]
    plain = run_evaluation(REFERENCE, RESPONSES, **keywords)
    given = run_evaluation(REFERENCE, RESPONSES, options=options)
    assert list(given) == list(plain)
    assert given.signature["options"] == plain.signature["options"]
    with iter_evaluation(REFERENCE, RESPONSES, options=options) as stream:
        assert list(stream) == list(plain)
    with pytest.raises(TypeError, match="give the options once: options= or max_cost"):
        run_evaluation(REFERENCE, RESPONSES, options=options, max_cost=1.0)
    with pytest.raises(TypeError, match="options must be a RunOptions"):
        run_evaluation(REFERENCE, RESPONSES, options={"cache": False})

    async def twice() -> Any:
        return await arun_evaluation(REFERENCE, RESPONSES, options=options)

    assert list(asyncio.run(twice())) == list(plain)


def test_a_stream_checks_its_options_on_its_run_as_before() -> None:
    stream = iter_evaluation(REFERENCE, RESPONSES, disable=["nope"])  # no error yet
    with pytest.raises(QaEvalError, match="unknown metric to disable: nope"), stream:
        next(stream)


def test_a_plan_holds_its_runs_options() -> None:
    plan = plan_evaluation(
        DEMO / "reference.yaml",
        DEMO / "responses-good.jsonl",
        no_judge=True,
        cache=False,
        disable=["answer_relevance"],
        keys="graphrag-eval",
    )
    assert isinstance(plan.options, RunOptions)
    assert plan.keys == "graphrag-eval" and plan.cache is False
    assert plan.disable == ("answer_relevance",) and plan.config is plan.options.config
    assert plan.reference_source == str(DEMO / "reference.yaml")
    (system,) = plan.systems
    run = plan.system_options(system, fingerprint=None)
    assert run.responses_source == system.source and run.keys == "qa-eval"
    assert run.disabled == {"answer_relevance"}


def test_each_question_counts_its_own_asks(
    stub: StubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    finished: list[int | None] = []
    real = progress.Tracker.finished

    def spy(self: Any, asks: int | None, expected: int = 0) -> None:
        finished.append(asks)
        real(self, asks, expected)

    monkeypatch.setattr(progress.Tracker, "finished", spy)
    endpoint = {"provider": "openai", "base_url": stub.url, "api_key": "x"}
    config = {"llm": {"generation": {**endpoint, "model": "gpt-4o-mini"}, "concurrency": 2}}
    results = run_evaluation(
        REFERENCE,
        RESPONSES,
        config=config,
        cache=tmp_path / "cache.sqlite3",
        disable=["answer_relevance"],
        on_progress=lambda status: None,
    )
    asks = [a for a in finished if a is not None]
    assert asks and all(a >= 1 for a in asks)
    assert sum(asks) == results.signature["usage"]["total"]["calls"]


def test_no_state_travels_in_a_context_variable_in_run() -> None:
    for path in (ROOT / "src" / "qa_eval" / "run").glob("*.py"):
        assert "contextvars" not in path.read_text(encoding="utf-8"), path


def test_the_run_keywords_are_written_once_and_an_unknown_one_is_refused() -> None:
    """``arun_evaluation`` and ``RunOptions.of`` take one list of keywords (``RunKeywords``): each
    of them reaches the options, and a misspelt one is a ``TypeError`` naming it, never ignored."""
    from qa_eval.run.options import RunKeywords

    fields = {f.name for f in dataclasses.fields(RunOptions) if f.init}
    # shared_budget: set by qa_eval.ray on the options it makes, not a keyword of a run.
    expected = (fields - {"config", "pass_thresholds", "shared_budget"}) | {"concurrency"}
    assert set(RunKeywords.__annotations__) == expected
    options = RunOptions.of(
        None,
        concurrency=3,
        max_cost=1.5,
        dry_run=True,
        keys="graphrag-eval",
        disable=["trajectory"],
    )
    assert (options.concurrency, options.max_cost, options.dry_run) == (3, 1.5, True)
    assert options.keys == "graphrag-eval" and options.disable == ("trajectory",)
    with pytest.raises(TypeError, match="'concurency'"):
        RunOptions.of(None, concurency=3)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="'concurency'"):
        run_evaluation([], [], concurency=3)
    with pytest.raises(TypeError, match="'concurency'"):
        asyncio.run(arun_evaluation([], [], concurency=3))  # type: ignore[call-arg]


def test_evaluate_files_passes_plan_evaluation_s_keywords_written_once() -> None:
    """``evaluate_files`` takes ``plan_evaluation``'s keyword options through one list
    (``PlanKeywords``), which stays equal to them; a misspelt one is a ``TypeError`` naming it."""
    import inspect

    from qa_eval import evaluate_files
    from qa_eval.run.plan import PlanKeywords

    keyword_only = {
        name
        for name, p in inspect.signature(plan_evaluation).parameters.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    }
    assert set(PlanKeywords.__annotations__) == keyword_only - {"check_config", "spell"}
    with pytest.raises(TypeError, match="'concurency'"):
        evaluate_files(DEMO / "reference.yaml", DEMO / "responses-good.jsonl", concurency=2)
