"""``import qa_eval`` loads only the face (issue 36): the run, the aggregates, the config, asyncio
and ``importlib.resources`` are imported when a name that needs them is first used. Checked in a
fresh interpreter: what ``import qa_eval`` adds to ``sys.modules`` beyond what the interpreter
had loaded before it."""

from __future__ import annotations

import json
import subprocess
import sys

import qa_eval

NOT_IMPORTED = (
    "qa_eval.run.evaluation",
    "qa_eval.aggregate",
    "qa_eval.config",
    "asyncio",
    "importlib.resources",
)


def _added_by(code: str) -> set[str]:
    """The modules ``code`` adds to a fresh interpreter's ``sys.modules``."""
    program = (
        "import json, sys\n"
        "before = set(sys.modules)\n"
        f"{code}\n"
        "print(json.dumps(sorted(set(sys.modules) - before)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True
    )
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_import_qa_eval_loads_only_the_face() -> None:
    added = _added_by("import qa_eval")
    assert not added & set(NOT_IMPORTED)
    assert {m for m in added if m.startswith("qa_eval")} <= {
        "qa_eval",
        "qa_eval._version",
        "qa_eval.errors",
        "qa_eval.redact",
    }


def test_the_public_names_still_import_and_work() -> None:
    added = _added_by(
        "import qa_eval\n"
        "from qa_eval import run_evaluation, compute_aggregates, read_results\n"
        "results = run_evaluation([{'template_id': 't', 'questions': [{'id': 'q', "
        "'question_text': 'Q?', 'reference_answer': 'A'}]}], [{'question_id': 'q', "
        "'actual_answer': 'A'}])\n"
        "assert compute_aggregates(results)['micro']['number_of_success_samples'] == 1\n"
        "assert qa_eval.arun_evaluation and qa_eval.iter_evaluation and qa_eval.write_data"
    )
    assert "qa_eval.run.evaluation" in added


def test_every_public_name_is_there() -> None:
    for name in qa_eval.__all__:
        assert getattr(qa_eval, name) is not None, name
    assert set(qa_eval.__all__) <= set(dir(qa_eval))


def test_help_builds_the_parser_without_the_commands() -> None:
    added = _added_by(
        "from qa_eval.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass"
    )
    assert not added & {
        *NOT_IMPORTED,
        "qa_eval.cli.commands",
        "qa_eval.cli.evaluation",
        "qa_eval.cli.gates",
        "qa_eval.run.plan",
        "qa_eval.io.files",
        "yaml",
    }
