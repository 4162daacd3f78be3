"""CI gates and exit codes: --fail-under, --fail-on-regression, --strict, --junit, --summary-md,
each end to end through the command (exit 0 / 2 / 3 / 130 / 1), with the files checked."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml

from openai_stub import StubServer, completion, error, oracle_content, prompt_text
from qa_eval import cli
from qa_eval.cli import main
from qa_eval.cli.gates import Gate, problems_of, question_checks, strict_gate
from qa_eval.cli.junit import junit_xml
from qa_eval.cli.summary import markdown_compare, markdown_evaluate, md

N = 30


def reference(n: int = N) -> list[dict[str, Any]]:
    """n questions in 3 templates; each has one reference step compared by its text output."""
    templates: dict[str, list[dict[str, Any]]] = {}
    for i in range(n):
        templates.setdefault(f"t{i % 3}", []).append(
            {
                "id": f"q{i}",
                "question_text": f"What is item {i}?",
                "reference_answer": f"Item {i} is a transformer.",
                "difficulty": "hard" if i % 2 else "easy",
                "reference_steps": [[{"name": "search", "args": {"q": str(i)}, "output": f"o{i}"}]],
            }
        )
    return [{"template_id": t, "questions": qs} for t, qs in templates.items()]


def responses(
    n: int = N, wrong: set[int] | frozenset[int] = frozenset(), missing: set[int] = frozenset()
) -> list[dict[str, Any]]:
    """A response per question: the right step output, except for ``wrong``; none for
    ``missing``."""
    return [
        {
            "question_id": f"q{i}",
            "actual_answer": f"Item {i} is a transformer.",
            "actual_steps": [
                {
                    "name": "search",
                    "args": {"q": str(i)},
                    "status": "success",
                    "output": "nothing" if i in wrong else f"o{i}",
                }
            ],
        }
        for i in range(n)
        if i not in missing
    ]


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    ref = tmp_path / "reference.yaml"
    ref.write_text(yaml.safe_dump(reference()), encoding="utf-8")
    return {
        "reference": str(ref),
        "good": write_jsonl(tmp_path / "good.jsonl", responses()),
        "bad": write_jsonl(tmp_path / "bad.jsonl", responses(wrong=set(range(20)))),
        "missing": write_jsonl(tmp_path / "missing.jsonl", responses(missing={4})),
    }


def evaluate(files: dict[str, str], which: str, *args: str) -> int:
    return main(["evaluate", files["reference"], files[which], "-q", *args])


def junit(path: Path) -> ET.Element:
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    return root


def suite(root: ET.Element, name: str) -> ET.Element:
    (found,) = [s for s in root.iter("testsuite") if s.get("name") == name]
    return found


# ------------------------------------------------------------------------------- --fail-under


def test_fail_under_passes_at_or_above_the_bar(files: dict[str, str], capsys: Any) -> None:
    assert evaluate(files, "good", "--fail-under", "steps_score=1") == 0
    assert "gate" not in capsys.readouterr().err  # -q: passing gates are not printed
    assert evaluate(files, "bad", "--fail-under", "steps_score=0.33") == 0  # 10/30 = 0.333


def test_fail_under_below_the_bar_exits_3_after_writing_everything(
    files: dict[str, str], tmp_path: Path, capsys: Any
) -> None:
    out, agg = tmp_path / "r.json", tmp_path / "agg.yaml"
    xml, summary = tmp_path / "junit.xml", tmp_path / "summary.md"
    code = evaluate(
        files,
        "bad",
        *("-o", str(out), "--aggregates", str(agg), "--junit", str(xml)),
        *("--summary-md", str(summary), "--fail-under", "steps_score=0.5"),
    )
    assert code == 3
    err = capsys.readouterr().err
    assert "gate FAILED: fail-under steps_score >= 0.5: micro mean 0.3333 < 0.5 (n = 30)" in err
    assert "1 of 1 quality gate(s) failed" in err
    assert len(json.loads(out.read_text())) == N  # results, signature, aggregates still written
    assert (tmp_path / "r.signature.yaml").is_file() and agg.is_file()
    root = junit(xml)
    gates = suite(root, "qa-eval evaluate gates")
    assert (gates.get("tests"), gates.get("failures")) == ("1", "1")
    questions = suite(root, "qa-eval evaluate questions")
    assert (questions.get("tests"), questions.get("failures")) == ("30", "20")
    assert root.get("tests") == "31" and root.get("failures") == "21"
    text = summary.read_text()
    assert "❌ 1 of 1 gates failed" in text and "steps\\_score" in text


def test_fail_under_unknown_metric_is_refused_before_the_run(
    files: dict[str, str], tmp_path: Path, capsys: Any
) -> None:
    out = tmp_path / "r.yaml"
    assert evaluate(files, "good", "-o", str(out), "--fail-under", "steps_scor=0.5") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "--fail-under steps_scor: unknown metric" in err and "steps_score" in err
    assert not out.exists()


def test_fail_under_a_metric_with_no_values_fails(files: dict[str, str], capsys: Any) -> None:
    # answer_f1 needs a judge; none is configured, so no question has a value
    assert evaluate(files, "good", "--fail-under", "answer_f1=0.1") == 3
    assert "no question has a value of answer_f1" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("items", "message"),
    [
        (["steps_score"], "takes METRIC=VALUE"),
        (["=0.5"], "takes METRIC=VALUE"),
        (["steps_score=high"], "is not a number"),
        (["steps_score=nan"], "finite number"),
        (["steps_score=0.5", "steps_score=0.6"], "given twice"),
    ],
)
def test_fail_under_bad_values(
    files: dict[str, str], items: list[str], message: str, capsys: Any
) -> None:
    assert evaluate(files, "good", "--fail-under", *items) == 2
    assert message in capsys.readouterr().err


def test_fail_under_checks_each_system(files: dict[str, str], tmp_path: Path, capsys: Any) -> None:
    xml = tmp_path / "j.xml"
    args = ["evaluate", files["reference"], "--system", f"good={files['good']}"]
    args += ["--system", f"bad={files['bad']}", "-q", "--junit", str(xml)]
    assert main([*args, "--fail-under", "steps_score=0.9"]) == 3
    err = capsys.readouterr().err
    assert "FAILED: fail-under steps_score >= 0.9 [bad]" in err and "[good]" not in err
    root = junit(xml)
    assert [s.get("name") for s in root] == [
        "qa-eval evaluate gates",
        "qa-eval evaluate questions [good]",
        "qa-eval evaluate questions [bad]",
    ]
    cases = {c.get("name"): c for c in suite(root, "qa-eval evaluate gates")}
    assert cases["fail-under steps_score >= 0.9 [good]"].find("failure") is None
    assert cases["fail-under steps_score >= 0.9 [bad]"].find("failure") is not None


def test_fail_under_on_evaluate_flat(tmp_path: Path, capsys: Any) -> None:
    rows = tmp_path / "rows.jsonl"
    write_jsonl(rows, [{"question": "Q?", "answer": "A.", "ground_truth": "A."}])
    # no judge: answer_f1 has no value, so the gate fails; steps_score does not exist here
    assert main(["evaluate-flat", str(rows), "-q", "--fail-under", "answer_f1=0.5"]) == 3
    assert "no question has a value of answer_f1" in capsys.readouterr().err


# ------------------------------------------------------------------------------- regressions


@pytest.fixture
def runs(files: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """Results of three runs: good, good again (same responses) and bad (20 of 30 wrong)."""
    paths = {}
    for name, which in (("good", "good"), ("again", "good"), ("bad", "bad")):
        paths[name] = str(tmp_path / f"{name}.json")
        assert evaluate(files, which, "-o", paths[name]) == 0
    return paths


def compare(runs: dict[str, str], a: str, b: str, *args: str) -> int:
    return main(["compare", runs[a], runs[b], "--format", "json", *args])


def test_regression_gate_fails_on_a_large_drop(
    runs: dict[str, str], tmp_path: Path, capsys: Any
) -> None:
    xml, summary = tmp_path / "c.xml", tmp_path / "c.md"
    out = tmp_path / "comparison.yaml"
    code = compare(
        runs,
        "good",
        "bad",
        *("--fail-on-regression", "steps_score", "-o", str(out)),
        *("--junit", str(xml), "--summary-md", str(summary)),
    )
    assert code == 3
    captured = capsys.readouterr()
    assert json.loads(captured.out)["labels"] == {"a": "good", "b": "bad"}  # stdout stays JSON
    assert "gate FAILED: fail-on-regression steps_score [good vs bad]" in captured.err
    assert "bad is significantly worse than good" in captured.err
    assert out.is_file()
    root = junit(xml)
    (case,) = root.iter("testcase")
    assert case.find("failure") is not None and root.get("failures") == "1"
    assert "**bad worse**" in summary.read_text()


@pytest.mark.parametrize(
    ("a", "b", "spec", "code"),
    [
        ("bad", "good", "steps_score", 0),  # B better: no regression
        ("good", "again", "steps_score", 0),  # the same answers
        ("good", "bad", "steps_score:0.9", 0),  # worse by 0.667, within the margin
        ("good", "bad", "steps_score:0.5", 3),  # beyond it
    ],
)
def test_regression_gate_outcomes(
    runs: dict[str, str], a: str, b: str, spec: str, code: int, capsys: Any
) -> None:
    assert compare(runs, a, b, "--fail-on-regression", spec) == code
    err = capsys.readouterr().err
    assert ("gate passed" in err) == (code == 0)


def test_regression_gate_unknown_metric_lists_the_metrics(
    runs: dict[str, str], capsys: Any
) -> None:
    assert compare(runs, "good", "bad", "--fail-on-regression", "steps_scor") == 2
    err = capsys.readouterr().err
    assert "--fail-on-regression steps_scor: no such metric in these runs" in err
    assert "metrics: steps_score" in err


def test_regression_gate_and_explicit_metric_list(runs: dict[str, str], capsys: Any) -> None:
    # a gated metric that is also listed is compared once
    code = compare(
        runs, "good", "bad", "--metric", "steps_score", "--fail-on-regression", "steps_score"
    )
    assert code == 3
    data = json.loads(capsys.readouterr().out)
    assert [m["metric"] for m in data["metrics"]] == ["steps_score"]
    # a listed metric the runs do not have is refused, gate or not
    code = compare(
        runs, "good", "bad", "--metric", "elapsed_sec", "--fail-on-regression", "steps_score"
    )
    assert code == 2
    assert "elapsed_sec" in capsys.readouterr().err


@pytest.mark.parametrize("spec", ["steps_score:", "steps_score:-0.1", "steps_score:x", ":0.1"])
def test_regression_gate_bad_specs(runs: dict[str, str], spec: str) -> None:
    assert compare(runs, "good", "bad", "--fail-on-regression", spec) == 2


def test_evaluate_systems_regression_gate(files: dict[str, str], capsys: Any) -> None:
    base = ["evaluate", files["reference"], "-q", "--system", f"good={files['good']}"]
    assert main([*base, "--system", f"bad={files['bad']}", "--fail-on-regression", "steps_score"])
    assert "[good vs bad]" in capsys.readouterr().err
    same = [*base, "--system", f"again={files['good']}", "--fail-on-regression", "steps_score"]
    assert main(same) == 0
    one = ["evaluate", files["reference"], files["good"], "--fail-on-regression", "steps_score"]
    assert main(one) == 2
    assert "give two systems or more" in capsys.readouterr().err


# ------------------------------------------------------------------------------- --strict


def test_strict_passes_on_a_complete_run(files: dict[str, str]) -> None:
    assert evaluate(files, "good", "--strict") == 0
    assert evaluate(files, "bad", "--strict") == 0  # wrong answers are scored, not incomplete


def test_strict_fails_on_a_question_without_response(
    files: dict[str, str], tmp_path: Path, capsys: Any
) -> None:
    out = tmp_path / "r.yaml"
    assert evaluate(files, "missing", "--strict", "-o", str(out)) == 3
    err = capsys.readouterr().err
    assert "gate FAILED: strict" in err and "1 question with no response ('q4')" in err
    assert len(yaml.safe_load(out.read_text())) == N


def test_strict_fails_on_steps_that_could_not_be_compared(tmp_path: Path, capsys: Any) -> None:
    step = {
        "name": "sparql_query",
        "args": {"query": "SELECT ?x {}"},
        "output": json.dumps({"head": {"vars": ["x"]}, "results": {"bindings": []}}),
        "output_media_type": "application/sparql-results+json",
        "required_columns": ["x"],
    }
    ref = tmp_path / "ref.json"
    ref.write_text(
        json.dumps(
            [
                {
                    "template_id": "t",
                    "questions": [{"id": "q1", "question_text": "?", "reference_steps": [[step]]}],
                }
            ]
        )
    )
    actual = {"name": "sparql_query", "status": "success", "output": "not json"}
    resp = write_jsonl(tmp_path / "r.jsonl", [{"question_id": "q1", "actual_steps": [actual]}])
    xml = tmp_path / "j.xml"
    assert main(["evaluate", str(ref), resp, "-q", "--strict", "--junit", str(xml)]) == 3
    assert "1 question with steps that could not be compared" in capsys.readouterr().err
    (question,) = suite(junit(xml), "qa-eval evaluate questions")
    assert question.find("error") is not None  # incomplete: an error, not a failure
    assert "step not compared" in (question.find("error").text or "")


HOSTILE = "judge said <script>alert(1)</script> & ]]> | **x** \x00\x1b\x07 [l](http://e)"


def _failing_for(question_marker: str) -> Any:
    """A judge that answers like the oracle but refuses answer correctness for some questions
    with a hostile error message."""

    def script(request: dict[str, Any], number: int) -> Any:
        text = prompt_text(request)
        if "[qa-eval:answer-correctness]" in text and question_marker in text:
            return error(400, HOSTILE)
        return completion(oracle_content(request), prompt_tokens=100, completion_tokens=20)

    return script


def test_strict_fails_on_metric_errors_and_the_reports_hold_hostile_text(
    files: dict[str, str], tmp_path: Path, capsys: Any
) -> None:
    with StubServer(_failing_for("item 7?")) as server:
        config = tmp_path / "judge.yaml"
        config.write_text(
            "llm:\n  generation: {provider: openai, model: gpt-4o-mini, "
            f"base_url: '{server.url}', api_key: x}}\n",
            encoding="utf-8",
        )
        xml, summary = tmp_path / "j.xml", tmp_path / "s.md"
        code = evaluate(
            files,
            "good",
            *("-c", str(config), "--disable", "answer_relevance", "--strict"),
            *("--junit", str(xml), "--summary-md", str(summary), "-o", str(tmp_path / "r.json")),
        )
    assert code == 3
    err = capsys.readouterr().err
    assert "1 metric value not computed (answer_correctness_error 1" in err
    results = json.loads((tmp_path / "r.json").read_text())
    assert sum("answer_correctness_error" in r for r in results) == 1
    root = junit(xml)
    questions = suite(root, "qa-eval evaluate questions")
    assert (questions.get("tests"), questions.get("errors")) == ("30", "1")
    (bad,) = [c for c in questions if c.get("name") == "q7"]
    message = bad.find("error").get("message")
    assert "<script>alert(1)</script> & ]]>" in message  # escaped in the file, intact when read
    assert "\\u0000" in message and "\x00" not in message
    text = summary.read_text()
    assert "<script>" not in text and "&lt;script&gt;" in text
    problem = next(line for line in text.splitlines() if "answer\\_correctness\\_error" in line)
    assert "\\[l\\]\\(http\\:" in problem and "\\*\\*x\\*\\*" in problem


def test_strict_fails_when_the_budget_stops_the_judge(
    files: dict[str, str], tmp_path: Path, stub: StubServer, capsys: Any
) -> None:
    config = tmp_path / "judge.yaml"
    config.write_text(
        "llm:\n  generation: {provider: openai, model: gpt-4o-mini, "
        f"base_url: '{stub.url}', api_key: x}}\n",
        encoding="utf-8",
    )
    common = ["-c", str(config), "--disable", "answer_relevance", "--concurrency", "1"]
    assert evaluate(files, "good", *common, "--strict", "--no-cache") == 0  # no budget: complete
    capsys.readouterr()
    budget = ["--max-cost", "0.0000001", "--no-cache", "--strict"]
    assert evaluate(files, "good", *common, *budget) == 3
    err = capsys.readouterr().err
    assert "gate FAILED: strict" in err and "answer_correctness_error" in err
    assert "budget exceeded" in err


# ------------------------------------------------------------------------------- exit codes


def test_interrupt_is_130_and_unexpected_failure_is_1(
    files: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr("qa_eval.run.files.run_evaluation", interrupted)
    assert evaluate(files, "good") == 130
    monkeypatch.setattr("qa_eval.run.files.run_evaluation", broken)
    assert evaluate(files, "good") == 1
    assert "unexpected error: RuntimeError: boom" in capsys.readouterr().err


def test_exit_code_table_is_in_the_readme_and_the_module() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    for text in (readme, cli.__doc__ or ""):
        for code in ("0", "1", "2", "3", "130"):
            assert re.search(rf"^\|? *{code} *[|\s]", text, re.M), (code, text[:80])


# ------------------------------------------------------------------------------- the writers


def _hostile_result(i: int) -> dict[str, Any]:
    return {
        "template_id": "t<&>\"'\x01",
        "question_id": f"q{i}\ud800\x0b]]>",
        "status": "error",
        "error": "boom </failure><x/>\x00\ufffe",
        "answer_correctness_error": "bad & <b>",
        "steps_score": 0.0,
    }


def test_junit_is_valid_xml_with_hostile_text_and_counts_add_up() -> None:
    gates = [
        Gate("fail-under", "x >= 1", False, "a < b & \x1f c", "sys<1>"),
        Gate("strict", "(all)", True, "fine"),
    ]
    good = {"template_id": "t", "question_id": "ok", "status": "success", "steps_score": 1.0}
    wrong = {"template_id": "t", "question_id": "w", "status": "success", "steps_score": 0.5}
    data = junit_xml(gates, [("s\x02", [_hostile_result(1), good, wrong])])
    root = ET.fromstring(data)  # parses: nothing XML 1.0 forbids got through
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("5", "2", "1")
    gate_suite, questions = list(root)
    assert gate_suite.get("failures") == "1"
    assert questions.get("name") == "qa-eval questions [s\\u0002]"
    hostile = questions[0]
    assert hostile.get("classname") == "t<&>\"'\\u0001"
    assert hostile.get("name") == "q1\\ud800\\u000b]]>"
    element = hostile.find("error")
    assert element is not None and hostile.find("failure") is None
    body = element.text or ""
    assert "answer_correctness_error: bad & <b>" in body
    assert "error response: boom </failure><x/>\\u0000\\ufffe" in body
    assert "steps_score 0 < 1" in body
    assert questions[1].find("failure") is None and questions[1].find("error") is None
    assert "steps_score 0.5 < 1" in (questions[2].find("failure").get("message") or "")


def test_question_checks_sort_errors_from_failures() -> None:
    result = {
        "status": "error",
        "error": "no response for this question",
        "answer_correctness_error": "judge down",
        "answer_eval_error": "judge down",  # qa-eval writes graphrag-eval's name as well
        "actual_steps": [{"name": "retrieval", "retrieval_context_recall_error": "timeout"}],
        "step_errors": ["actual_steps[0]: output: not JSON"],
    }
    errors, failures = question_checks(result)
    assert errors == [
        "answer_correctness_error: judge down",
        "retrieval_context_recall_error: timeout",
        "step not compared: actual_steps[0]: output: not JSON",
    ]
    assert failures == ["no response for this question"]
    graphrag_eval = {"question_id": "g", "answer_eval_error": "judge down"}  # its name only
    assert question_checks(graphrag_eval) == (["answer_eval_error: judge down"], [])
    problems = problems_of([result, graphrag_eval])
    assert problems.no_response == [None] and problems.metric_error_count == 3
    assert len(problems.step_errors) == 1
    gate = strict_gate(problems)
    assert not gate.passed and "3 metric values not computed" in gate.detail
    assert strict_gate(problems_of([{"question_id": "ok", "status": "success"}])).passed


def test_markdown_escapes_untrusted_text() -> None:
    evil = "<img src=x onerror=alert(1)> | *b* `c` [l](u)\nnext line"
    assert md(evil) == (
        "&lt;img src=x onerror=alert\\(1\\)&gt; \\| \\*b\\* \\`c\\` \\[l\\]\\(u\\) next line"
    )
    result = {"template_id": "t", "question_id": evil, "status": "error", "error": evil}
    aggregates = {"micro": {"steps_score": {"mean": 0.5, "n": 1}}, "per_template": {"t": {}}}
    gate = Gate("fail-under", "steps_score >= 1", False, evil, evil)
    text = markdown_evaluate([(evil, [result], aggregates)], [gate])
    comparison = {
        "labels": {"a": evil, "b": "b"},
        "questions": {},
        "metrics": [
            {"metric": evil, "overall": {"n": 3, "delta": -0.5, "better": "a"}},
            {"metric": "m2", "overall": {"n": 2, "delta": 0.1, "p_value": 0.5, "p_adjusted": 1.0,
                                         "testable": False, "better": None}},
        ],
    }  # fmt: skip
    compared = markdown_compare(comparison, [gate], [evil])
    assert "| adjusted p |" in compared and "| too few questions to test |" in compared
    assert "| 0.500 | 1.000 |" in compared
    text += compared
    assert "<img" not in text and "`c`" not in text
    tables: list[list[str]] = []
    previous = ""
    for line in text.splitlines():
        if line.startswith("|"):
            if not previous.startswith("|"):
                tables.append([])
            tables[-1].append(line)
        previous = line
    assert len(tables) == 4  # evaluate: metrics, gates; compare: metrics, gates
    for rows in tables:  # every row has as many unescaped pipes as the header: no cell broke out
        widths = {len(re.findall(r"(?<!\\)\|", row)) for row in rows}
        assert len(widths) == 1, rows
