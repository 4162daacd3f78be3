"""Context entity recall: the share of the reference's named entities that the retrieved contexts
also name.

Source: ragas 0.4.3 ``ContextEntityRecall`` (``ragas.metrics.collections``). The judge lists the
entities of the reference, then those of the contexts joined by newlines (two calls); with RE the
set of the reference's entities and CE the set of the contexts',

    context_entity_recall = |RE ∩ CE| / (|RE| + 1e-8)

Entities match as exact strings, as in ragas. The 1e-8 is ragas' own guard against an empty RE,
kept so that the same entities give ragas' number to the last digit (one recalled entity of one
scores 0.99999999).

Policy: a reference that names no entity leaves nothing to recall. ragas returns 0.0 there;
qa-eval says the value is not computed (``None``) and why, so an aggregate leaves it out.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from ...prompts import render

__all__ = ["EPSILON", "EntitiesReply", "EntityRecall", "entity_recall", "entity_recall_score"]

METRIC = "context_entity_recall"
EPSILON = 1e-8
NO_ENTITIES = "the reference names no entities"


class EntitiesReply(BaseModel):
    """The judge's entities of one text."""

    entities: list[str]


@dataclass(frozen=True)
class EntityRecall:
    """The entities found and the recall computed from them (``None``: not computed)."""

    value: float | None
    reference_entities: tuple[str, ...]
    context_entities: tuple[str, ...]

    @property
    def recalled(self) -> tuple[str, ...]:
        """The reference's entities the contexts also name, in the reference's order."""
        found = set(self.context_entities)
        return tuple(e for e in dict.fromkeys(self.reference_entities) if e in found)


def entity_recall_score(reference: Sequence[str], contexts: Sequence[str]) -> float | None:
    """|reference ∩ contexts| / (|reference| + 1e-8) over sets; ``None`` without entities."""
    wanted = set(reference)
    if not wanted:
        return None
    return len(wanted & set(contexts)) / (len(wanted) + EPSILON)


async def _entities(judge: Any, text: str) -> list[str]:
    messages = [{"role": "user", "content": render("entities", text=text)}]
    verdict = await judge.ask(METRIC, messages, EntitiesReply)
    return list(verdict.value.entities)


async def entity_recall(judge: Any, reference: str, contexts: Sequence[str]) -> EntityRecall:
    """Ask for the entities of ``reference`` and of the joined ``contexts`` (both calls at once)
    and compute the recall; ``JudgeError`` when a call gives no usable reply."""
    # both asks finish before a failure is raised: no call is left running unawaited
    wanted, found = await asyncio.gather(
        _entities(judge, reference), _entities(judge, "\n".join(contexts)), return_exceptions=True
    )
    for reply in (wanted, found):
        if isinstance(reply, BaseException):
            raise reply
    assert isinstance(wanted, list) and isinstance(found, list)
    return EntityRecall(entity_recall_score(wanted, found), tuple(wanted), tuple(found))
