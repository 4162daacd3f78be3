"""A run's signature (``run_signature``): versions, judge, prompts, options, usage, the
reference's fingerprint (``reference_fingerprint``), the responses left out and the metric values
skipped; and the note a run without a judge carries (``NO_JUDGE``)."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import orjson

from ..config import EvalConfig
from .options import LIBRARY_DEFAULT, RunOptions
from .prepare.records import Question
from .prepare.responses import Unknown

if TYPE_CHECKING:  # the judge side (pydantic, the metrics) is imported only when a run uses it
    from ..judge.calls import Judge
    from ..judge.embeddings import Embedder
    from .score import AnswerScorer
if TYPE_CHECKING:
    from .endpoints import Endpoints

__all__ = [
    "NO_JUDGE",
    "PendingFingerprint",
    "digests_fingerprint",
    "question_digest",
    "reference_fingerprint",
    "run_signature",
]


NO_JUDGE = (
    "LLM metrics not computed: no judge is configured (set OPENAI_API_KEY, or pass a config "
    "with llm.generation)"
)
NO_JUDGE_LIBRARY = (
    "LLM metrics not computed: no judge is configured (pass a config with llm.generation; "
    "without a config run_evaluation calls no judge, as graphrag-eval does)"
)


def _signature(
    settings: EvalConfig,
    judge: Judge | None,
    embedder: Embedder | None,
    options: dict[str, Any],
    note: str | None,
) -> dict[str, Any]:
    from .._version import __version__

    prompts = _prompt_hashes()
    if settings.answer_correctness_prompt is not None or settings.examples:
        from ..prompts import examples_block, prompt_hash
    if settings.answer_correctness_prompt is not None:
        prompts["answer_correctness (config)"] = prompt_hash(settings.answer_correctness_prompt)
    for metric, examples in sorted(settings.examples.items()):  # few-shot examples from labels
        prompts[f"{metric} (examples)"] = prompt_hash(examples_block(examples))
    signature: dict[str, Any] = {
        "qa_eval_version": __version__,
        "judge": judge.signature() if judge else None,
        "embedding": embedder.name if embedder else None,
        "prompts": prompts,
        "options": {**settings.public(), **options},
    }
    if judge is not None:
        signature["usage"] = {
            "total": judge.total.as_dict(),
            "per_metric": {m: u.as_dict() for m, u in judge.usage.items()},
            "peak_concurrency": judge.peak_in_flight,
        }
    if note:
        signature["llm_metrics"] = note
    return signature


def _prompt_hashes() -> dict[str, str]:
    """Every prompt file's hash, by name (``prompts.prompt_hashes``). A process that never
    imported the prompts package read no prompt: the table in ``qa_eval.prompt_hashes`` is then
    every hash, and a run without a judge does not import the package for it."""
    prompts = sys.modules.get("qa_eval.prompts")
    if prompts is None:
        from ..prompt_hashes import HASHES

        return dict(HASHES)
    return prompts.prompt_hashes()  # type: ignore[no-any-return]


def run_signature(
    options: RunOptions,
    endpoints: Endpoints,
    questions: list[Question] | Any,
    unknown: Unknown,
    scorer: AnswerScorer | None,
    needs_judge: bool,
    defer_fingerprint: bool = False,
) -> dict[str, Any]:
    """The run's signature: versions, judge, prompts, options, usage, the reference's
    fingerprint, the responses left out and the metric values skipped (``defer_fingerprint``:
    a reference held in memory gets a :class:`PendingFingerprint`, hashed when first read)."""
    run: dict[str, Any] = {
        "max_cost": options.max_cost,
        "dry_run": options.dry_run,
        "disabled": sorted(options.disabled),
        "enabled": sorted(options.enabled),
        "cache": None if endpoints.store is None else str(endpoints.store.path),
    }
    if options.pass_thresholds:
        run["pass_thresholds"] = dict(options.pass_thresholds)
    if endpoints.bertscorer is not None:
        run["bertscore"] = endpoints.bertscorer.info()
    if options.original_keys:
        run["keys"] = options.keys
    settings = options.config
    note = NO_JUDGE_LIBRARY if settings.source == LIBRARY_DEFAULT else NO_JUDGE
    signature = _signature(
        settings, endpoints.judge, endpoints.embedder, run, note if needs_judge else None
    )
    if isinstance(questions, list):
        fingerprint: str | PendingFingerprint | None = options.fingerprint
        if not fingerprint:
            pending = PendingFingerprint(questions)
            fingerprint = pending if defer_fingerprint else pending()
        # Counted when first read too (a set of every question's template id: ~270
        # instructions a question that most API runs never read).
        templates = functools.partial(template_count, questions)
        signature["reference"] = {
            "fingerprint": fingerprint,
            "templates": templates if defer_fingerprint else templates(),
            "questions": len(questions),
        }
    else:  # a run.reflines.StreamedReference: counted and fingerprinted as it was checked
        signature["reference"] = {
            "fingerprint": options.fingerprint or questions.fingerprint,
            "templates": questions.templates,
            "questions": len(questions),
        }
    if options.left_out and endpoints.judge is not None:
        signature["metrics_left_out"] = dict(options.left_out)
    if unknown.count:
        signature["ignored_responses"] = unknown.as_dict()
    if scorer is not None and scorer.skipped:
        # metric values whose judge call was not made, by typed reason (budget, dry_run, ...)
        signature["skipped_metric_values"] = dict(sorted(scorer.skipped.items()))
    spread: dict[str, Any] = {}  # how the run was spread (its results do not depend on it)
    if options.shard is not None:
        spread["shard"] = f"{options.shard[0]}/{options.shard[1]}"
    if options.workers > 1:
        spread["workers"] = options.workers
    if spread:
        signature["spread"] = spread
    return signature


def template_count(questions: Iterable[Question]) -> int:
    """How many distinct template ids the questions have."""
    return len({q.template_id for q in questions})


class PendingFingerprint:
    """A reference's fingerprint not computed yet: ``run_evaluation``'s results hash their
    reference when their ``signature`` is first read (``Results.signature``), so a run whose
    signature nobody reads (most API runs) does not hash its whole reference."""

    __slots__ = ("questions",)

    def __init__(self, questions: list[Question]) -> None:
        self.questions = questions

    def __call__(self) -> str:
        """The fingerprint: :func:`reference_fingerprint` of the questions."""
        return reference_fingerprint(self.questions)


def reference_fingerprint(questions: Iterable[Question]) -> str:
    """A stable hash of a reference dataset's content: ``sha256:`` and 64 hex digits.

    Each question (its template id and every key it has: text, reference answer, reference steps,
    tags) is written as JSON with sorted keys and hashed; the sorted hashes are hashed again. So
    the fingerprint does not depend on key order, template order or question order, or on the
    file format (YAML or JSON), and changes with any change to a question's content."""
    from ..digest import bulk_sha256

    hasher, hashed, digests = _sha256(), 0, []
    for question in questions:
        data = _sorted_json([question.template_id, question.raw])
        digests.append(hasher(data).digest())
        if hashed < _BULK:  # a large reference is hashed by OpenSSL (the same digests)
            hashed += len(data)
            if hashed >= _BULK:
                hasher = bulk_sha256()
    digests.sort()
    return "sha256:" + hasher(b"".join(digests)).hexdigest()


_BULK = 1 << 19
"""Bytes of a reference hashed by the interpreter's SHA-256 before ``bulk_sha256`` pays."""


def question_digest(template_id: Any, raw: Any) -> bytes:
    """The SHA-256 of one question (its template id and record) that the fingerprint sorts."""
    return _sha256()(_sorted_json([template_id, raw])).digest()


@functools.cache
def _sha256() -> Any:
    """``digest.sha256``, imported when a reference is first hashed (a run whose fingerprint
    is never read loads no hash module)."""
    from ..digest import sha256

    return sha256


def digests_fingerprint(digests: bytes | bytearray) -> str:
    """:func:`reference_fingerprint` from every question's :func:`question_digest`, given
    concatenated in any order (sorted here in byte order, as 32-byte rows: in place when given
    a ``bytearray``, which is left sorted, so that no copy of them is made)."""
    import numpy as np

    rows = digests if isinstance(digests, bytearray) else bytearray(digests)
    np.frombuffer(rows, dtype="S32").sort()  # fixed-width bytes compare in byte order
    return "sha256:" + _sha256()(rows).hexdigest()


_SORTED = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS


def _sorted_json(value: Any) -> bytes:
    """JSON of ``value`` with sorted keys; what orjson refuses (an integer beyond 64 bits or
    deep nesting, which the API may be given) is written by the standard library instead."""
    try:  # the usual record, text keys and JSON values only: orjson's faster path, same bytes
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:
        pass
    try:
        return orjson.dumps(value, option=_SORTED, default=str)
    except orjson.JSONEncodeError:
        text = json.dumps(_str_keys(value), sort_keys=True, default=str, ensure_ascii=False)
        return text.encode("utf-8", "surrogatepass")


def _str_keys(value: Any) -> Any:
    """``value`` with every mapping key made text (so keys of mixed types sort)."""
    if isinstance(value, dict):
        return {str(key): _str_keys(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_str_keys(item) for item in value]
    return value
