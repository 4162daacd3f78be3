"""The agreement panel of the labelling mode: :func:`qa_eval.agreement.agreement` of every run
(a judge) against the labels file, computed again whenever the file has changed.

Each judge is given only its results of the labelled questions (found through the index), which
is all the figures read, so a large run costs no more than its labels."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import InputError
from .index import LOCK, load_result
from .labels import read_rows

__all__ = ["panel"]

_cache: dict[tuple[str, int, int, str], tuple[Mapping[str, Any] | None, str]] = {}


def _labelled_results(run: Any, ids: set[str]) -> list[Mapping[str, Any]]:
    positions: list[int] = []
    with LOCK:
        for qid in ids:
            positions += [
                p for (p,) in run.index.db.execute("SELECT pos FROM q WHERE qid = ?", (qid,))
            ]
    out: list[Mapping[str, Any]] = []
    for pos in sorted(positions):
        result = load_result(run.index, pos)
        if result is not None:
            out.append(result)
    return out


def panel(settings: Any, metric: str) -> tuple[Mapping[str, Any] | None, str]:
    """(the agreement report's ``to_dict()`` restricted to ``metric``, or None; a note saying
    why there is none)."""
    from ..agreement import Judge, agreement, read_labels

    path = settings.labels
    if not metric or not path.exists():
        return None, ""
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns, metric)
    if key in _cache:
        return _cache[key]
    ids = {r.get("question_id", "") for r in read_rows(path) if r.get("metric") == metric}
    if not ids:
        return None, ""
    try:
        labels = read_labels(path)
        judges = [
            Judge(run.label, _labelled_results(run, ids), _model(run.signature), None)
            for run in settings.runs
        ]
        result: tuple[Mapping[str, Any] | None, str] = (
            agreement(judges, labels, metric=metric).to_dict(),
            "",
        )
    except (InputError, ValueError) as e:
        result = (None, f"no agreement figures yet: {e}")
    _cache[key] = result
    return result


def _model(signature: Mapping[str, Any] | None) -> str | None:
    judge = signature.get("judge") if isinstance(signature, Mapping) else None
    model = judge.get("model") if isinstance(judge, Mapping) else None
    return model if isinstance(model, str) else None
