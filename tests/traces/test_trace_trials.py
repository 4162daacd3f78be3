"""Repeated trials of one question from the tree formats' own metadata: a ``qa_eval.trial``
attribute on the OTLP root span (OpenInference's ``metadata`` JSON), Langfuse's trace
``metadata``, LangSmith's root run ``extra.metadata``; without one, two traces of a question are
refused with advice naming what that format needs. Through ``qa-eval import``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import test_langfuse
import test_langsmith
from otlp_files import OTHER, TRACE, request, span
from test_file_shapes import _import


def _otlp(trial: Any, trace: str, style: str) -> dict[str, Any]:
    root: dict[str, Any]
    if style == "openinference":
        metadata = {"question_id": "q1", **({"trial": trial} if trial is not None else {})}
        root = {"openinference.span.kind": "AGENT", "metadata": json.dumps(metadata)}
    else:
        root = {"gen_ai.operation.name": "invoke_agent", "question_id": "q1"}
        if trial is not None:
            root["qa_eval.trial"] = trial
    tool = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "search",
        "gen_ai.tool.call.id": "call_1",
        "gen_ai.tool.call.arguments": '{"q": "x"}',
        "gen_ai.tool.call.result": "found",
    }
    mark = trace[-1]
    return request(
        span("a" * 15 + mark, None, "agent", root, 0, 9, trace=trace),
        span("b" * 15 + mark, "a" * 15 + mark, "execute_tool search", tool, 1, 2, trace=trace),
    )


def _langfuse(trial: Any, n: int) -> dict[str, Any]:
    text = json.dumps(test_langfuse.export()).replace('"t1"', f'"t-{n}"')
    record = json.loads(text)
    record["metadata"] = {"question_id": "q1", **({"trial": trial} if trial is not None else {})}
    return record  # type: ignore[no-any-return]


def _langsmith(trial: Any, n: int) -> dict[str, Any]:
    text = json.dumps(test_langsmith.tree()).replace("0a000000-", f"0{n}000000-")
    root = json.loads(text)
    metadata = {"question_id": "q1", **({"trial": trial} if trial is not None else {})}
    root["extra"] = {"metadata": metadata}
    return root  # type: ignore[no-any-return]


def _traces(fmt: str, trials: tuple[Any, Any]) -> list[dict[str, Any]]:
    if fmt in ("otlp", "openinference"):
        return [_otlp(t, trace, fmt) for t, trace in zip(trials, (TRACE, OTHER), strict=True)]
    if fmt == "langfuse":
        return [_langfuse(t, n) for n, t in enumerate(trials, start=1)]
    return [_langsmith(t, n) for n, t in enumerate(trials, start=1)]


ADVICE = {
    "otlp": "give each trace's root span a distinct qa_eval.trial attribute",
    "openinference": "give each trace's root span a distinct qa_eval.trial attribute",
    "langfuse": "give each trace a distinct trial in its metadata",
    "langsmith": "give each root run a distinct trial in its extra.metadata",
}


@pytest.mark.parametrize("fmt", sorted(ADVICE))
def test_trials_from_the_formats_own_metadata(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / "traces.jsonl"
    out = tmp_path / "responses.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in _traces(fmt, (1, 2))), "utf-8")
    code, printed = _import(path, out)
    assert code == 0, printed
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [(r["question_id"], r["trial"]) for r in rows] == [("q1", 1), ("q1", 2)]
    path.write_text("".join(json.dumps(t) + "\n" for t in _traces(fmt, (None, None))), "utf-8")
    out.unlink()
    code, printed = _import(path, out)
    assert code == 2 and "question 'q1' is answered by two traces" in printed
    assert ADVICE[fmt] in printed and "metadata.trial" not in printed.replace("extra.", "")
    assert not out.exists()
