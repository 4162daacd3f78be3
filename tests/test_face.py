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


DEFERRED = (
    "asyncio",
    "concurrent.futures",
    "multiprocessing",
    "sqlite3",
    "openai",
    "httpx",
    "pydantic",
    "yaml",
    "dateutil",
    "fractions",
    "qa_eval.aggregate",
    "qa_eval.config.load",
    "qa_eval.judge.calls",
    "qa_eval.judge.cache",
    "qa_eval.judge.transport",
    "qa_eval.metrics.agents.trajectory_match",
    "qa_eval.run.score",
    "qa_eval.run.stream",
    "qa_eval.run.workers",
    "qa_eval.steps.trajectory",
    "qa_eval.steps.timeseries",
    "qa_eval.steps.explain",
    "qa_eval.steps.sparql.explain",
    "qa_eval.prompts",
    "qa_eval.run.keywords",
    "qa_eval.metrics",
    "qa_eval.run.shards",
    "qa_eval.vocabulary.registry",
    "qa_eval.vocabulary.model",
    "qa_eval.vocabulary.lookup",
    "qa_eval.digest",
    "_sha256",
    "_sha2",
    "array",
    "zlib",
    "_blake2",
)
"""What a judge-free ``run_evaluation`` of plain steps never uses: the event loop and worker
processes, the judge and its reply cache, the config file reader, the aggregates, the
trajectory reader, the time-series parser for what ``fromisoformat`` reads; nor, for a step that
is not a retrieval step, any metric (the trial key is ``io.keysets``'), nor without shards their
module, ``array``, ``zlib`` and BLAKE2b; nor, without a time series step, ``steps.timeseries``;
nor, when every reference step matches, the explanations of unmatched steps; nor the prompts
(their hashes are ``qa_eval.prompt_hashes``'); nor, given no keyword, the keywords'
``TypedDict``; nor the metric registry (what the run reads of it is
``qa_eval.vocabulary.switch_table``'s, checked against it in ``test_switch_table``); nor, as the
reference is hashed only when the signature is read, the hash modules."""

_ONE_SPARQL_QUESTION = """
import json
from qa_eval import run_evaluation

def table(names, rows):
    return json.dumps({"head": {"vars": names}, "results": {"bindings": [
        {n: {"type": "uri", "value": f"urn:v:{v}"} for n, v in zip(names, row)} for row in rows
    ]}})

rows = [(i, i + 1, i + 2) for i in range(20)]
step = {"name": "sparql_query", "args": {"query": "SELECT ..."}}
reference = [{"template_id": "t", "questions": [{"id": "q", "question_text": "Q?",
    "reference_steps": [[{**step, "output": table(["a", "b"], [r[:2] for r in rows]),
                          "output_media_type": "application/sparql-results+json",
                          "required_columns": ["a", "b"]}]]}]}]
responses = [{"question_id": "q", "actual_steps": [
    {**step, "id": "c1", "status": "success", "output": table(["x", "y", "z"], rows)}]}]
results = run_evaluation(reference, responses)
assert results[0]["steps_score"] == 1.0, results[0]
"""


def test_a_judge_free_first_call_loads_only_what_it_scores_with() -> None:
    """Issue 36: the import cost of ``import qa_eval`` must not just move into the first call.
    A fresh process's first ``run_evaluation`` without a judge (one SPARQL step) loads no
    event loop, judge, cache, config reader, aggregates or trajectory reader; of the judge
    package only its endpoint settings (the config's dataclasses)."""
    added = _added_by(_ONE_SPARQL_QUESTION)
    assert "qa_eval.run.evaluation" in added and "qa_eval.steps.sparql.match" in added
    inside = tuple(f"{d}." for d in DEFERRED)
    assert sorted(m for m in added if m in DEFERRED or m.startswith(inside)) == []
    assert {m for m in added if m.startswith("qa_eval.judge.")} <= {"qa_eval.judge.settings"}


def test_a_judge_free_first_call_reads_no_prompt_file() -> None:
    """The signature of a run without a judge takes the prompts' hashes from the table
    (``qa_eval.prompt_hashes``, checked against the files in ``test_prompts_files``): a fresh
    process's first call opens none of the prompt files, and records the hashes of their texts."""
    program = (
        "import builtins, json\n"
        "opened = []\n"
        "real_open = builtins.open\n"
        "def spy(file, *args, **kwargs):\n"
        "    opened.append(str(file))\n"
        "    return real_open(file, *args, **kwargs)\n"
        "builtins.open = spy\n"
        f"{_ONE_SPARQL_QUESTION}\n"
        "found = json.dumps(opened)\n"
        "from qa_eval import prompts as p\n"
        "texts = {n: p.prompt_hash(p.prompt_text(n)) for n in p.prompt_names()}\n"
        "assert results.signature['prompts'] == texts, results.signature['prompts']\n"
        "print(found)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True
    )
    opened = json.loads(done.stdout.splitlines()[-1])
    assert [f for f in opened if f.endswith(".md")] == []
