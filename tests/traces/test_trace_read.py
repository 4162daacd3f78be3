"""Reading trace files: detection, linking, question matching, duplicates, bad input and
``strict``, through :func:`qa_eval.traces.read_traces`."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from qa_eval.errors import InputError, QaEvalError
from qa_eval.io import kinds
from qa_eval.traces import TraceLossError, is_trace_file, read_traces
from qa_eval.traces.formats import FORMATS, detect_format, load

DATA = Path(__file__).parent / "data"
REFERENCE = DATA / "reference.yaml"


def _write(path: Path, data: Any, lines: bool = False) -> Path:
    if lines:
        path.write_text("".join(json.dumps(r) + "\n" for r in data), encoding="utf-8")
    else:
        path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _chat(question: str = "Who wrote Solaris?", **top: Any) -> dict[str, Any]:
    return {
        **top,
        "messages": [
            {"role": "user", "content": question},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "search", "arguments": '{"q": "Solaris"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "Stanislaw Lem"},
            {"role": "assistant", "content": "Stanislaw Lem."},
        ],
    }


# Detection -------------------------------------------------------------------------------------
SAMPLES = {
    "openai-chat": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}],
    "openai-responses": {
        "input": "hi",
        "output": [{"type": "message", "role": "assistant", "content": "yo"}],
    },
    "anthropic": {"system": "be brief", "messages": [{"role": "user", "content": "hi"}]},
    "ragas": {"user_input": [{"type": "human", "content": "hi"}, {"type": "ai", "content": "yo"}]},
}


@pytest.mark.parametrize("fmt", sorted(SAMPLES))
def test_each_format_is_detected_on_its_first_record(fmt: str) -> None:
    assert detect_format(SAMPLES[fmt]) == fmt
    assert detect_format([SAMPLES[fmt]]) == fmt  # a list of traces
    assert kinds.detect(SAMPLES[fmt]).kind == kinds.TRACES


def test_qa_eval_files_are_not_traces(tmp_path: Path) -> None:
    responses = [{"question_id": "q1", "actual_answer": "x", "actual_steps": []}]
    flat = [{"user_input": "question?", "response": "answer"}]
    for data in (responses, flat):
        assert detect_format(data) is None and detect_format(data[0]) is None
    assert not is_trace_file(_write(tmp_path / "r.jsonl", responses, lines=True))
    assert not is_trace_file(REFERENCE)
    assert is_trace_file(_write(tmp_path / "t.jsonl", [_chat()], lines=True))


def test_an_imported_response_with_step_errors_is_still_a_response(tmp_path: Path) -> None:
    trace = _chat()
    trace["messages"][1]["tool_calls"][0]["function"]["arguments"] = '{"q": '
    (response,), _ = read_traces(_write(tmp_path / "t.json", trace))
    assert response["step_errors"]
    assert kinds.detect([response]).kind == kinds.RESPONSES


def test_format_forced_unknown_or_missing(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.json", _chat())
    (response,), _ = read_traces(path, format="openai-chat")
    assert response["actual_answer"] == "Stanislaw Lem."
    with pytest.raises(InputError, match="unknown trace format 'nope'"):
        read_traces(path, format="nope")
    with pytest.raises(InputError, match="not a ragas MultiTurnSample"):
        read_traces(path, format="ragas")
    missing = [name for name in FORMATS if load(name, required=False) is None]
    for name in missing:  # formats whose module is not on this branch: one line
        with pytest.raises(InputError, match="not available"):
            read_traces(path, format=name)


def test_not_a_trace_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a trace file of a known format") as e:
        read_traces(_write(tmp_path / "x.json", {"hello": "world"}))
    assert "\n" not in str(e.value)


# Linking ---------------------------------------------------------------------------------------
def test_results_link_by_id_and_unlinked_results_are_counted(tmp_path: Path) -> None:
    trace = _chat()
    trace["messages"].insert(3, {"role": "tool", "tool_call_id": "ghost", "content": "?"})
    (response,), report = read_traces(_write(tmp_path / "t.json", trace))
    assert response["actual_steps"][0]["output"] == "Stanislaw Lem"
    assert report.fidelity.losses["unlinked_result"] == 1


def test_repeated_call_ids_link_in_order(tmp_path: Path) -> None:
    call = {"id": "same", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "tool_calls": [call, call]},
        {"role": "tool", "tool_call_id": "same", "content": "first"},
        {"role": "tool", "tool_call_id": "same", "content": "second"},
        {"role": "tool", "tool_call_id": "same", "content": "third"},
    ]
    (response,), report = read_traces(_write(tmp_path / "t.json", messages))
    assert [s["output"] for s in response["actual_steps"]] == ["first", "second"]
    assert report.fidelity.losses["unlinked_result"] == 1


def test_legacy_function_call_links_by_name(tmp_path: Path) -> None:
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "function_call": {"name": "f", "arguments": '{"a": 1}'}},
        {"role": "function", "name": "f", "content": "out"},
    ]
    (response,), _ = read_traces(_write(tmp_path / "t.json", messages))
    assert response["actual_steps"] == [
        {"name": "f", "args": {"a": 1}, "output": "out", "lost": ["status"]}
    ]


def test_invalid_arguments_are_kept_raw_with_the_reason(tmp_path: Path) -> None:
    trace = _chat()
    trace["messages"][1]["tool_calls"][0]["function"]["arguments"] = '{"q": "Solaris" "x"}'
    (response,), report = read_traces(_write(tmp_path / "t.json", trace))
    step = response["actual_steps"][0]
    assert step["args"] == '{"q": "Solaris" "x"}'
    assert step["lost"] == ["args_invalid", "status"]
    assert response["step_errors"] == [
        "step 1 (search): arguments are not valid JSON: Expecting ',' delimiter at 1:17; raw "
        "text kept"
    ]
    assert report.fidelity.losses["args_invalid"] == 1


def test_a_call_without_a_result_and_arguments_too_deep(tmp_path: Path) -> None:
    deep = "[" * 300 + "]" * 300
    messages = [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "a", "function": {"name": "f", "arguments": json.dumps({"x": 1})}},
                {"id": "b", "function": {"name": "g", "arguments": '{"d": ' + deep + "}"}},
            ],
        },
    ]
    (response,), report = read_traces(_write(tmp_path / "t.json", messages))
    first, second = response["actual_steps"]
    assert first["lost"] == ["output", "status"]
    assert isinstance(second["args"], str) and "cannot be kept" in response["step_errors"][0]
    assert report.fidelity.losses["output"] == 2


def test_anthropic_is_error_makes_a_failed_step(tmp_path: Path) -> None:
    trace = {
        "messages": [
            {"role": "user", "content": "q"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}}],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": "boom",
                        "is_error": True,
                    }
                ],
            },
        ]
    }
    (response,), _ = read_traces(_write(tmp_path / "t.json", trace))
    assert response["actual_steps"] == [
        {
            "name": "f",
            "args": {"a": 1},
            "output": "boom",
            "status": "error",
            "error": "boom",
            "id": "t1",
        }
    ]


# Questions -------------------------------------------------------------------------------------
def test_questions_by_id_by_text_and_by_trace_id(tmp_path: Path) -> None:
    traces = [
        _chat("  who WROTE\n solaris? "),  # by text, whitespace and case normalised
        _chat("What else?", metadata={"question_id": "q1"}),  # by explicit id
        _chat("Unknown question", id="trace-7"),  # by its trace id, with a warning
    ]
    responses, report = read_traces(_write(tmp_path / "t.jsonl", traces, lines=True), REFERENCE)
    assert [r["question_id"] for r in responses] == ["q2", "q1", "trace-7"]
    assert report.matched == {"text": 1, "id": 1, "trace id": 1}
    lines = report.lines()
    assert any(line.startswith("warning: 1 trace with no question id") for line in lines)
    assert "traces with no question in the reference: 1 (first: 'trace-7')" in lines
    assert report.missing_count == 0


def test_questions_with_no_trace_are_counted(tmp_path: Path) -> None:
    _, report = read_traces(_write(tmp_path / "t.json", _chat()), REFERENCE)
    assert report.missing == ["q1"] and report.missing_count == 1
    assert "questions with no trace: 1 (first: 'q1')" in report.lines()


def test_an_integer_question_id_given_as_text_matches(tmp_path: Path) -> None:
    reference = [{"template_id": "t", "questions": [{"id": 7, "question_text": "x"}]}]
    (response,), report = read_traces(
        _write(tmp_path / "t.json", _chat(question_id="7")), reference
    )
    assert response["question_id"] == 7 and report.unmatched_count == 0


def test_two_traces_for_one_question_name_both_unless_trials(tmp_path: Path) -> None:
    same = [_chat(question_id="q2"), _chat(question_id="q2")]
    with pytest.raises(
        InputError,
        match=r"t\.jsonl:record 2: question 'q2' is answered by two "
        r"traces, here and in .*t\.jsonl:record 1",
    ):
        read_traces(_write(tmp_path / "t.jsonl", same, lines=True))
    trials = [_chat(question_id="q2", metadata={"trial": n}) for n in (1, 2)]
    responses, _ = read_traces(_write(tmp_path / "u.jsonl", trials, lines=True))
    assert [r["trial"] for r in responses] == [1, 2]


# Files and bad input -----------------------------------------------------------------------------
def test_gzip_and_json_lines_of_messages(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as file:
        for message in _chat()["messages"]:
            file.write(json.dumps(message) + "\n")
    (response,), _ = read_traces(path)
    assert response["actual_answer"] == "Stanislaw Lem."


@pytest.mark.parametrize(
    ("name", "raw", "where"),
    [
        ("t.json", b'{"messages": [{"role": "user", "content": "x"', "line 1, column"),
        ("t.jsonl", b'{"messages": []}\n{"messages": [\n', "line 2"),
        ("t.jsonl", b'[{"role": "user", "content": "\xff"}]\n', "line 1"),
        ("t.jsonl.gz", gzip.compress(b'[{"role": "user", "content": "x"}]\n')[:-9], "cannot read"),
        ("t.json", b'{"messages": [1, 2]}', "messages[0]: a message must be an object"),
        (
            "t.json",
            b'{"messages": [{"role": "user", "content": "x"}], "usage": 1, "usage": 2}',
            "duplicate key",
        ),
    ],
)
def test_bad_files_are_one_line_naming_the_place(
    tmp_path: Path, name: str, raw: bytes, where: str
) -> None:
    path = tmp_path / name
    path.write_bytes(raw)
    with pytest.raises(QaEvalError) as e:
        read_traces(path, format="openai-chat")
    message = str(e.value)
    assert "\n" not in message and str(path) in message and where in message


HOSTILE = [
    "<script>alert(1)</script>",
    "{{question}} ${HOME} `rm -rf /`",
    "\u2028line\u2029sep\x00nul\x1b[31m",
    "__import__('os').system('echo pwned')",
    "\ud83d\ude00 " + "x" * 10_000,
]


def test_hostile_text_round_trips_as_data(tmp_path: Path) -> None:
    text = HOSTILE[0] + HOSTILE[1] + HOSTILE[2] + HOSTILE[3]
    messages = [
        {"role": "user", "content": text},
        {
            "role": "assistant",
            "tool_calls": [
                {"id": text, "function": {"name": text, "arguments": json.dumps({text: text})}}
            ],
        },
        {"role": "tool", "tool_call_id": text, "content": text},
        {"role": "assistant", "content": text},
    ]
    (response,), _ = read_traces(_write(tmp_path / "t.json", messages))
    assert response["actual_answer"] == text
    assert response["actual_steps"][0] == {
        "name": text,
        "args": {text: text},
        "output": text,
        "id": text,
        "lost": ["status"],
    }


# strict --------------------------------------------------------------------------------------
def test_strict_fails_on_any_loss_and_passes_a_lossless_trace(tmp_path: Path) -> None:
    with pytest.raises(
        TraceLossError, match="strict: the traces lost something: 1 calls without a status"
    ):
        read_traces(_write(tmp_path / "t.json", _chat()), strict=True)
    lossless = {
        "messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": [{"type": "text", "text": "a"}]},
        ],
        "system": "s",
    }
    responses, report = read_traces(_write(tmp_path / "a.json", lossless), strict=True)
    assert report.fidelity.lossless and responses[0]["actual_steps"] == []


def test_the_signature_report_keeps_the_first_lossy_traces_and_counts_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from qa_eval.traces import read as pipeline

    monkeypatch.setattr(pipeline, "PER_TRACE_LIMIT", 2)
    traces = [_chat(question_id=f"q{n}") for n in range(5)]
    _, report = read_traces(_write(tmp_path / "t.jsonl", traces, lines=True))
    recorded = report.as_dict()
    assert recorded["lossy_traces"] == 5 and list(recorded["per_trace"]) == ["q0", "q1"]
    assert recorded["losses"] == {"status": 5} and recorded["tool_calls"] == 5
    assert report.summary() == (
        "traces: 5 read (openai-chat 5), 5 tool calls; lost: 5 calls without a status"
    )


@pytest.mark.parametrize("fmt", sorted(SAMPLES))
def test_kinds_of_the_wrong_type_are_unknown_kinds_not_crashes(tmp_path: Path, fmt: str) -> None:
    odd = {"role": ["user"], "type": {"a": 1}, "status": [1], "content": [{"type": ["text"]}]}
    trace = json.loads(json.dumps(SAMPLES[fmt]))
    messages = (
        trace
        if isinstance(trace, list)
        else (trace.get("messages") or trace.get("user_input") or trace.get("output"))
    )
    messages.append(odd)
    responses, report = read_traces(_write(tmp_path / "t.json", trace), format=fmt)
    assert len(responses) == 1 and report.fidelity.traces == 1
