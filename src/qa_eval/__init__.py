"""qa-eval: evaluate question-answering systems and LLM agents.

The compatible API is ``run_evaluation(reference_qas, chat_responses)`` (and its async twin
``arun_evaluation``) followed by ``compute_aggregates(results)``.
"""

from .aggregate import compute_aggregates
from .errors import InputError, QaEvalError
from .io import read_reference, read_responses, read_results, write_data
from .runner import arun_evaluation, iter_evaluation, run_evaluation

__version__ = "0.1.0"

__all__ = [
    "InputError",
    "QaEvalError",
    "__version__",
    "arun_evaluation",
    "compute_aggregates",
    "iter_evaluation",
    "read_reference",
    "read_responses",
    "read_results",
    "run_evaluation",
    "write_data",
]
