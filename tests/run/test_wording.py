"""A wrong kind of file given to the Python API is refused in the API's words (its parameter),
and to ``qa-eval evaluate`` in the command's words, unchanged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from qa_eval import InputError, evaluate_files
from qa_eval.cli import main
from qa_eval.run.plan import plan_evaluation

DEMO = Path(__file__).parents[2] / "examples" / "powergrid"
REF = DEMO / "reference.yaml"
RESP = DEMO / "responses-good.jsonl"

REFERENCE_WANTED = "a reference dataset (a list of templates with questions)"
RESPONSES_WANTED = "responses (records with question_id and actual_answer, actual_steps or error)"


@pytest.fixture(scope="module")
def results_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("wording") / "results.json"
    evaluate_files(REF, RESP, output=path, no_judge=True, cache=False)
    return path


def _refusal(call: Any) -> str:
    with pytest.raises(InputError) as caught:
        call()
    text = str(caught.value)
    assert "\n" not in text
    return text


@pytest.mark.parametrize("entry", [evaluate_files, plan_evaluation])
def test_python_callers_are_told_the_parameter(entry: Any, results_file: Path) -> None:
    text = _refusal(lambda: entry(results_file, RESP, no_judge=True, cache=False))
    assert text.startswith(f"{results_file}: looks like evaluation results")
    assert text.endswith(f"; `reference` expects {REFERENCE_WANTED}")
    assert "qa-eval" not in text and "REFERENCE" not in text

    text = _refusal(lambda: entry(REF, results_file, no_judge=True, cache=False))
    assert text.endswith(f"; `responses` expects {RESPONSES_WANTED}")
    assert "qa-eval" not in text and "RESPONSES" not in text

    systems = {"good": RESP, "old run": results_file}
    text = _refusal(lambda: entry(REF, systems=systems, no_judge=True, cache=False))
    assert text.startswith(f"{results_file}: looks like evaluation results")
    assert text.endswith(f"; `systems['old run']` expects {RESPONSES_WANTED}")

    text = _refusal(lambda: entry(REF, REF, no_judge=True, cache=False))
    assert "looks like a reference dataset" in text
    assert text.endswith(f"; `responses` expects {RESPONSES_WANTED}")


def test_the_command_line_keeps_its_words(results_file: Path, capsys: Any) -> None:
    assert main(["evaluate", str(results_file), str(RESP), "--no-judge"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(f"; `qa-eval evaluate` expects {REFERENCE_WANTED} as REFERENCE"), err
    assert main(["evaluate", str(REF), str(results_file), "--no-judge"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(f"; `qa-eval evaluate` expects {RESPONSES_WANTED} as RESPONSES"), err
    system = ["evaluate", str(REF), "--system", f"a={RESP}", "--system", f"b={results_file}"]
    assert main([*system, "--no-judge"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(f"; `qa-eval evaluate` expects {RESPONSES_WANTED} as RESPONSES"), err
