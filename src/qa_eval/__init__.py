"""qa-eval: evaluate question-answering systems and LLM agents.

The compatible API is ``run_evaluation(reference_qas, chat_responses)`` (and its async twin
``arun_evaluation``) followed by ``compute_aggregates(results)``. ``evaluate_files`` is the
``qa-eval evaluate`` command as a function (files in; results, signature and aggregates written;
systems compared); ``plan_evaluation`` checks and reads its inputs without running.

The names below the first group are imported when first used, so ``import qa_eval`` stays light
(no judge SDK, no numpy).
"""

from typing import TYPE_CHECKING, Any

from ._version import __version__
from .aggregate import compute_aggregates
from .errors import InputError, QaEvalError
from .io.files import read_reference, read_responses, read_results, write_data
from .run.evaluation import arun_evaluation, iter_evaluation, run_evaluation

if TYPE_CHECKING:
    from .compare.runs import compare_runs
    from .config import EvalConfig, load_config
    from .run.files import EvaluationRun, evaluate_files, run_plan
    from .io.flat import read_flat
    from .run.plan import EvaluationPlan, plan_evaluation
    from .report import Run, build_report

_LAZY = {
    "EvalConfig": "config",
    "EvaluationPlan": "plan",
    "EvaluationRun": "evaluate",
    "Run": "report",
    "build_report": "report",
    "compare_runs": "compare",
    "evaluate_files": "evaluate",
    "load_config": "config",
    "plan_evaluation": "plan",
    "read_flat": "flat",
    "run_plan": "evaluate",
}

__all__ = [
    "EvalConfig",
    "EvaluationPlan",
    "EvaluationRun",
    "InputError",
    "QaEvalError",
    "Run",
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
