"""The model endpoints, as ``docs/judge.md`` describes them: where they are (``settings``), their
SDK clients (``clients``), the calls themselves (``calls``: render, cache, re-ask, parse, cost;
``transport``: the request, the concurrency slot, attempts, retries and response modes), what is
sent and read (``replies``), how a failed call is read (``faults``), the reply cache and its SQLite
file (``cache``), usage, prices and the run's ledger (``usage``, ``prices``, ``ledger``), the
provider's Batch API (``batch``), sentence embeddings (``embeddings``) and repeated asks
(``repeats``).

The names load when first used: importing ``qa_eval.judge.settings`` (as the config loader does)
does not import pydantic or the SDK.
"""

from typing import TYPE_CHECKING

from ..errors import BudgetExceeded, Deferred, DryRunSkip, JudgeError, JudgeUnavailable
from ..extras import lazy_face

if TYPE_CHECKING:
    from .batch import BatchError, BatchReport
    from .calls import Judge
    from .embeddings import Embedder, make_embedder
    from .prices import price_of
    from .repeats import judge_noise, score_repeated
    from .settings import DEFAULT_MODEL, EmbeddingConfig, GenerationConfig
    from .usage import Usage, Verdict, total_cost

_NAMES = {
    "BatchError": "batch",
    "BatchReport": "batch",
    "DEFAULT_MODEL": "settings",
    "Embedder": "embeddings",
    "EmbeddingConfig": "settings",
    "GenerationConfig": "settings",
    "Judge": "calls",
    "Usage": "usage",
    "Verdict": "usage",
    "judge_noise": "repeats",
    "make_embedder": "embeddings",
    "price_of": "prices",
    "score_repeated": "repeats",
    "total_cost": "usage",
}

__all__ = [
    "DEFAULT_MODEL",
    "BatchError",
    "BatchReport",
    "BudgetExceeded",
    "Deferred",
    "DryRunSkip",
    "Embedder",
    "EmbeddingConfig",
    "GenerationConfig",
    "Judge",
    "JudgeError",
    "JudgeUnavailable",
    "Usage",
    "Verdict",
    "judge_noise",
    "make_embedder",
    "price_of",
    "score_repeated",
    "total_cost",
]
__getattr__, __dir__ = lazy_face(__name__, _NAMES)
