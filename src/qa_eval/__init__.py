"""qa-eval: evaluate question-answering systems and LLM agents.

The compatible API is ``run_evaluation(reference_qas, chat_responses)`` (and its async twin
``arun_evaluation``) followed by ``compute_aggregates(results)``. ``evaluate_files`` is the
``qa-eval evaluate`` command as a function (files in; results, signature and aggregates written;
systems compared); ``plan_evaluation`` checks and reads its inputs without running.

Every name but the version and the two errors is imported when first used (PEP 562
``__getattr__``), so ``import qa_eval`` loads nothing else: not the run, the aggregates, the
config, asyncio nor ``importlib.resources`` (``tests/test_face.py`` holds it).
"""

import sys
from importlib.machinery import ModuleSpec
from typing import TYPE_CHECKING, Any

from ._version import __version__
from .errors import InputError, QaEvalError

if TYPE_CHECKING:
    from .aggregate.compute import compute_aggregates
    from .compare.runs import compare_runs
    from .config import EvalConfig, load_config
    from .io.files import read_reference, read_responses, read_results, write_data
    from .io.flat import read_flat
    from .report import Run, build_report
    from .run.evaluation import arun_evaluation, iter_evaluation, run_evaluation
    from .run.files import EvaluationRun, evaluate_files, run_plan
    from .run.options import RunOptions
    from .run.plan import EvaluationPlan, plan_evaluation

_LAZY = {
    "EvalConfig": "config",
    "arun_evaluation": "run.evaluation",
    "compute_aggregates": "aggregate.compute",
    "iter_evaluation": "run.evaluation",
    "read_reference": "io.files",
    "read_responses": "io.files",
    "read_results": "io.files",
    "run_evaluation": "run.evaluation",
    "write_data": "io.files",
    "EvaluationPlan": "run.plan",
    "EvaluationRun": "run.files",
    "Run": "report",
    "RunOptions": "run.options",
    "build_report": "report",
    "compare_runs": "compare.runs",
    "evaluate_files": "run.files",
    "load_config": "config",
    "plan_evaluation": "run.plan",
    "read_flat": "io.flat",
    "run_plan": "run.files",
}

__all__ = [
    "EvalConfig",
    "EvaluationPlan",
    "EvaluationRun",
    "InputError",
    "QaEvalError",
    "Run",
    "RunOptions",
    "__version__",
    "arun_evaluation",
    "build_report",
    "compare_runs",
    "compute_aggregates",
    "evaluate_files",
    "iter_evaluation",
    "load_config",
    "plan_evaluation",
    "read_flat",
    "read_reference",
    "read_responses",
    "read_results",
    "run_evaluation",
    "run_plan",
    "write_data",
]


# Import paths documented before the modules moved into packages by layer; each still imports
# the module that now holds those names (the same module object under both names).
_MOVED = {
    "qa_eval.batch": "qa_eval.run.prefill",
    "qa_eval.cache": "qa_eval.judge.cache",
    "qa_eval.console": "qa_eval.cli.console",
    "qa_eval.evaluate": "qa_eval.run.files",
    "qa_eval.filekind": "qa_eval.io.kinds",
    "qa_eval.flat": "qa_eval.io.flat",
    "qa_eval.metrics.agent": "qa_eval.metrics.agents.multi_turn",
    "qa_eval.metrics.agent_inputs": "qa_eval.metrics.agents.judge_inputs",
    "qa_eval.metrics.bertscore": "qa_eval.metrics.textual.bertscore",
    "qa_eval.metrics.classify": "qa_eval.metrics.answer.classify",
    "qa_eval.metrics.composite": "qa_eval.metrics.retrieval.composite",
    "qa_eval.metrics.context": "qa_eval.metrics.retrieval.step_context",
    "qa_eval.metrics.context_quality": "qa_eval.metrics.retrieval.flat_context",
    "qa_eval.metrics.context_relevance": "qa_eval.metrics.ragas.context_relevance",
    "qa_eval.metrics.correctness": "qa_eval.metrics.answer.correctness",
    "qa_eval.metrics.entity_recall": "qa_eval.metrics.ragas.entity_recall",
    "qa_eval.metrics.factual_correctness": "qa_eval.metrics.ragas.factual_correctness",
    "qa_eval.metrics.faithfulness": "qa_eval.metrics.retrieval.faithfulness",
    "qa_eval.metrics.geval": "qa_eval.metrics.answer.geval",
    "qa_eval.metrics.goal_accuracy": "qa_eval.metrics.agents.goal_accuracy",
    "qa_eval.metrics.noise_sensitivity": "qa_eval.metrics.ragas.noise_sensitivity",
    "qa_eval.metrics.ragas_judged": "qa_eval.metrics.ragas.judged",
    "qa_eval.metrics.ragas_run": "qa_eval.metrics.ragas.entries",
    "qa_eval.metrics.ranking": "qa_eval.metrics.retrieval.ranking",
    "qa_eval.metrics.relevance": "qa_eval.metrics.answer.relevance",
    "qa_eval.metrics.rubric": "qa_eval.metrics.answer.direct_assessment",
    "qa_eval.metrics.rubric_scores": "qa_eval.metrics.ragas.rubrics",
    "qa_eval.metrics.similarity": "qa_eval.metrics.answer.similarity",
    "qa_eval.metrics.sql_equivalence": "qa_eval.metrics.ragas.sql_equivalence",
    "qa_eval.metrics.statement_correctness": "qa_eval.metrics.ragas.statement_correctness",
    "qa_eval.metrics.summary": "qa_eval.metrics.ragas.summary",
    "qa_eval.metrics.tables": "qa_eval.metrics.textual.tables",
    "qa_eval.metrics.text": "qa_eval.metrics.textual.strings",
    "qa_eval.metrics.toolcalls": "qa_eval.metrics.agents.toolcalls",
    "qa_eval.metrics.trajectory": "qa_eval.metrics.agents.trajectory_match",
    "qa_eval.metrics.trajectory_judgement": "qa_eval.metrics.agents.trajectory_judgement",
    "qa_eval.metrics.trials": "qa_eval.metrics.agents.trials",
    "qa_eval.metrics.two_raters": "qa_eval.metrics.ragas.two_raters",
    "qa_eval.stream": "qa_eval.run.stream",
}


class _MovedModules:
    """Finds the old import paths of ``_MOVED``; loading one returns the module it moved to."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        """A spec for an old path, else ``None`` (the normal finders carry on)."""
        if fullname not in _MOVED:
            return None
        loader: Any = self  # a loader by its methods (importlib.abc would load importlib.resources)
        return ModuleSpec(fullname, loader)

    def create_module(self, spec: Any) -> Any:
        """The module the old path moved to, imported under its new name."""
        from importlib import import_module

        module = import_module(_MOVED[spec.name])
        spec.loader_state = module.__spec__
        return module

    def exec_module(self, module: Any) -> None:
        """Nothing runs (the module ran under its new name); the import system set the old
        path's spec on it, and the module keeps its own."""
        module.__spec__ = module.__spec__.loader_state


sys.meta_path.append(_MovedModules())


def __getattr__(name: str) -> Any:
    """The names of ``_LAZY``, imported from their module when first used."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
