"""The context ids of retrieval steps, as ``StepScorer`` compares and explains them.

A retrieval output is a JSON list of contexts, each an object with an ``id`` (a string or a
number). A retrieval reference step scores graphrag-eval's recall@k against an actual step
(``metrics.retrieval.ranking.spec_recall_at_k``): the share of the reference's first k ids
(a set) among the actual step's first k (``k`` = the actual ``args.k``). The scorer keeps the
reference's first-k set and the actual step's first k ids (a list the set reads: no set made
per actual step) once, and the recall, the closeness of an explanation and its text are read
from them here.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Any

from .kinds import CONTEXT_ID_TYPES
from .outputs import shown

__all__ = ["context_ids", "ids_closeness", "ids_may_be_in", "missing_ids_text"]


def context_ids(contexts: Any) -> list[Any] | None:
    """The ids of a retrieval output's contexts, ``None`` unless it is a list of objects each
    with an ``id`` that is a string or a number."""
    if not isinstance(contexts, list):
        return None
    ids: list[Any] = []
    append = ids.append
    try:
        for context in contexts:  # (one loop: fewer calls than passes of map and all)
            if type(context) is not dict and not isinstance(context, dict):
                return None
            found = context["id"]
            if type(found) is not str and not isinstance(found, CONTEXT_ID_TYPES):
                return None  # (a string id, the usual one, is told by its type alone)
            append(found)
    except KeyError:
        return None
    return ids


def ids_may_be_in(ids: Any, output: Any) -> bool:
    """False when none of a retrieval reference's ``ids`` can be among the ids of ``output``:
    a JSON text without escapes spells each string id it holds between quotes. True when that
    cannot be told so (an id that is a number, an output that is not text or has escapes)."""
    if type(output) is not str or "\\" in output or not isinstance(ids, list):
        return True
    for wanted in ids:  # noqa: SIM110 (any() over a generator costs a generator per call)
        if type(wanted) is not str or f'"{wanted}"' in output:
            return True
    return False


def ids_closeness(wanted: set[Any], top: Iterable[Any]) -> float:
    """How close an actual step's first k ids (``top``) come to a reference's (``wanted``):
    the share of ``wanted`` among them, 1 when ``wanted`` is empty (the closeness of
    ``missing_ids_text``, from the sizes of the sets)."""
    size = len(wanted)
    absent = size - len(wanted.intersection(top)) if size else 0
    return 1.0 - absent / max(size, 1)


def missing_ids_text(
    reference: Sequence[Any], k: int, wanted: set[Any], top: Collection[Any]
) -> tuple[float, str]:
    """The closeness and the text of a retrieval explanation: the reference's first ``k`` ids
    (in order, each once; ``wanted``: their set) not among an actual step's first k (``top``),
    the first three shown."""
    first = reference if len(reference) <= k else reference[:k]  # (only read)
    if len(wanted) != len(first):  # (an id repeated)
        first = list(dict.fromkeys(first))
    if wanted.isdisjoint(top):
        absent = first
    else:
        found = set(top)  # (read by hash, as the recall reads them)
        absent = [i for i in first if i not in found]
    missing = len(absent)
    if missing > 3:  # (the first three, written out: no slice, map and join)
        shown_ids = (
            f"{shown(absent[0])}, {shown(absent[1])}, {shown(absent[2])} and {missing - 3} more"
        )
    else:
        shown_ids = ", ".join(map(shown, absent))
    return 1.0 - missing / (len(first) or 1), f"reference ids not in the top {k}: {shown_ids}"
