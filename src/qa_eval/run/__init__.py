"""One evaluation: its options as one value (``options``), the inputs prepared (``prepare``), one
question's deterministic result (``question``), its judged metrics scheduled (``score``), the one
code path of a run (``execute``) with its judge and models (``endpoints``), where its results go
(``sinks``) and its signature (``signature``), its entry points (``evaluation``), progress
(``progress``), streamed files (``stream``), the plan of an evaluation of files and its run
(``plan``, ``files``), the Batch API prefill (``prefill``) and the TSV command (``tsv``); a
run spread over worker processes (``workers``) or shards (``shards``) and the shards merged
(``merge``), and a results file aggregated as a stream (``results``); see docs/scale.md.
"""

from typing import TYPE_CHECKING

from ..extras import lazy_face

if TYPE_CHECKING:
    from .evaluation import EvaluationStream, arun_evaluation, iter_evaluation, run_evaluation
    from .files import EvaluationRun, Observer, evaluate_files, run_plan
    from .merge import merge_shards
    from .options import RunOptions, metric_names
    from .plan import EvaluationPlan, plan_evaluation
    from .prefill import aprefill, prefill
    from .progress import RunProgress
    from .question import NO_RESPONSE, Results, evaluate_question
    from .reflines import JsonLinesReference
    from .signature import NO_JUDGE, reference_fingerprint
    from .stream import JsonLinesResponses, ResultsFile
    from .tsv import evaluate_tsv, run_tsv
    from .workers import evaluate_batch

_NAMES = {
    "EvaluationPlan": "plan",
    "EvaluationRun": "files",
    "EvaluationStream": "evaluation",
    "JsonLinesReference": "reflines",
    "JsonLinesResponses": "stream",
    "NO_JUDGE": "signature",
    "NO_RESPONSE": "question",
    "Observer": "files",
    "Results": "question",
    "ResultsFile": "stream",
    "RunOptions": "options",
    "RunProgress": "progress",
    "aprefill": "prefill",
    "arun_evaluation": "evaluation",
    "evaluate_batch": "workers",
    "evaluate_files": "files",
    "evaluate_question": "question",
    "evaluate_tsv": "tsv",
    "iter_evaluation": "evaluation",
    "merge_shards": "merge",
    "metric_names": "options",
    "plan_evaluation": "plan",
    "prefill": "prefill",
    "reference_fingerprint": "signature",
    "run_evaluation": "evaluation",
    "run_plan": "files",
    "run_tsv": "tsv",
}

__all__ = [
    "NO_JUDGE",
    "NO_RESPONSE",
    "EvaluationPlan",
    "EvaluationRun",
    "EvaluationStream",
    "JsonLinesReference",
    "JsonLinesResponses",
    "Observer",
    "Results",
    "ResultsFile",
    "RunOptions",
    "RunProgress",
    "aprefill",
    "arun_evaluation",
    "evaluate_batch",
    "evaluate_files",
    "evaluate_question",
    "evaluate_tsv",
    "iter_evaluation",
    "merge_shards",
    "metric_names",
    "plan_evaluation",
    "prefill",
    "reference_fingerprint",
    "run_evaluation",
    "run_plan",
    "run_tsv",
]
__getattr__, __dir__ = lazy_face(__name__, _NAMES)
