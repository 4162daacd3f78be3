"""``--verbalize llm``: the judge rewrites each template question in a style (``plain``,
``conversational``, ``terse``, ``misspelled``: ragas' query styles), and a round trip checks the
rewrite: a second call, without the query, is shown the rewritten question and the true query
among up to three distractors of the same shape that differ from it in one entity or one
property, and must pick the true one. A rewrite that fails (or drops an entity's name, or
repeats another question) is tried once more, then the template question is kept; the verdict
is stored per question. Calls go through the run's ``Judge``: cached, costed, planned by a dry
run, bounded by ``max_cost``.

``--batch`` (:func:`aprefill_wording`): the rewording runs in planning passes, as a ``--batch``
evaluation does (``run.prefill``): each pass gets as far as the cache and the collected batches
take it and records the next requests, so round 1 holds every rewrite, round 2 every round trip,
round 3 the retries' rewrites and round 4 their round trips (cached replies are not submitted);
then the rewording runs once more with the judge that reads the batches' replies, and gives what
a synchronous run with the same replies gives."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import BaseModel

from ..errors import BudgetExceeded, DryRunSkip, JudgeError
from ..prompts import delimit, render
from .candidates import Candidate
from .engine import Generation, Question
from .entities import Named
from .wording import render_query

__all__ = [
    "STYLES",
    "Pick",
    "Rewrite",
    "WordingBatch",
    "WordingCounts",
    "aprefill_wording",
    "averbalize",
    "verbalize",
]

STYLES = {
    "plain": "a clear, neutral question, as a person would type it.",
    "conversational": "a friendly, conversational question, as in a chat with an assistant.",
    "terse": "a terse question of few words, like a search query.",
    "misspelled": "the question as a hurried person types it, with one or two realistic typos "
    "(the entity names may be misspelled slightly, but must stay recognisable).",
}
REWRITE = "generate_rewrite"
ROUND_TRIP = "generate_round_trip"


class Rewrite(BaseModel):
    """The judge's rewritten question."""

    question: str


class Pick(BaseModel):
    """The judge's pick in the round trip: the id of a query."""

    choice: str


@dataclass
class WordingCounts:
    """What the rewording did, for the report."""

    styles: Counter[str] = field(default_factory=Counter)
    verdicts: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, Any]:
        """Plain data."""
        return {
            "styles": dict(sorted(self.styles.items())),
            "verdicts": dict(sorted(self.verdicts.items())),
        }


def _fold(text: str) -> str:
    return " ".join(text.casefold().split())


def _distractors(
    question: Question, generation: Generation, rng: random.Random
) -> list[tuple[str, list[Named]]]:
    """Up to three queries of the same shape that differ from the question's in one entity (another
    of the same class named in the set) or one property (another of the same class and kind)."""
    candidate = question.candidate
    schema = generation.schema
    named_by_class: dict[str, list[Named]] = {}
    for other in generation.questions:
        for n in other.candidate.named:
            named_by_class.setdefault(n.cls, []).append(n)
    variants: list[tuple[Candidate, list[Named]]] = []
    for named in candidate.named:
        others = sorted(
            {n.iri: n for n in named_by_class.get(named.cls, []) if n.iri != named.iri}.values(),
            key=lambda n: n.iri,
        )
        if others:
            swap = rng.choice(others)
            body = [line.replace(f"<{named.iri}>", f"<{swap.iri}>") for line in candidate.body]
            names = [swap if n.iri == named.iri else n for n in candidate.named]
            variants.append((replace(candidate, body=body), names))
    uses = {u.property: u for u in schema.uses}
    for prop in candidate.signature[1:]:
        use = uses.get(prop)
        if use is None:
            continue
        same = sorted(
            {
                u.property
                for u in schema.uses_of(use.subject_class)
                if u.kind == use.kind and u.property != prop
            }
        )
        if same:
            swap_p = rng.choice(same)
            body = [line.replace(f"<{prop}>", f"<{swap_p}>") for line in candidate.body]
            variants.append((replace(candidate, body=body), list(candidate.named)))
    rng.shuffle(variants)
    out: list[tuple[str, list[Named]]] = []
    seen = {question.query}
    for variant, names in variants:
        text = render_query(variant, schema)
        if text not in seen:
            seen.add(text)
            out.append((text, names))
    return out[:3]


def _option(letter: str, query: str, names: Sequence[Named]) -> str:
    """One option of the round trip: the query (IRIs cannot hold ``<`` or ``>``, so it cannot
    close its block) and the names of its entities (graph text: delimited)."""
    legend = "".join(f"\n# {n.iri} is named {delimit(repr(n.label))}" for n in names)
    return f'<query id="{letter}">\n{query}{legend}\n</query>'


class _Wording:
    def __init__(
        self, generation: Generation, judge: Any, styles: Sequence[str], seed: int
    ) -> None:
        self.generation = generation
        self.judge = judge
        self.styles = list(styles)
        self.seed = seed
        self.counts = WordingCounts()

    def _messages(self, name: str, **values: str) -> list[dict[str, str]]:
        trusted = {
            k: v for k, v in values.items() if k in ("style", "language", "attempt", "options")
        }
        untrusted = {k: v for k, v in values.items() if k not in trusted}
        return [{"role": "user", "content": render(name, trusted=trusted, **untrusted)}]

    def _round_trip_messages(
        self, text: str, question: Question, rng: random.Random
    ) -> tuple[list[dict[str, str]], str] | None:
        distractors = _distractors(question, self.generation, rng)
        if not distractors:
            return None
        options = [(question.query, list(question.candidate.named)), *distractors]
        order = list(range(len(options)))
        rng.shuffle(order)
        letters = "ABCD"
        blocks = []
        truth = ""
        for position, index in enumerate(order):
            blocks.append(_option(letters[position], *options[index]))
            if index == 0:
                truth = letters[position]
        return self._messages(
            "generate/round_trip", options="\n".join(blocks), question=text
        ), truth

    async def word(self, question: Question) -> None:
        rng = random.Random(f"{self.seed}:{question.id}")
        style = rng.choice(self.styles)
        names = [n.label for n in question.candidate.named]
        attempts = ("", "A first rewrite changed the meaning; this time keep it exactly.")
        for attempt in attempts:
            messages = self._messages(
                "generate/rewrite",
                style=STYLES[style],
                language=self.generation.language,
                attempt=attempt,
                names=", ".join(names) or "(none)",
                question=question.template_text,
            )
            reply = await self._ask(question, REWRITE, messages, Rewrite)
            if reply is None:
                if self.judge.dry_run:  # plan the round trip too, on the template's text
                    planned = self._round_trip_messages(question.template_text, question, rng)
                    if planned is not None:
                        self.judge.plan_call(ROUND_TRIP, planned[0], Pick)
                return
            rewrite = reply.question.strip()
            if not rewrite or (
                style != "misspelled" and not all(n.casefold() in rewrite.casefold() for n in names)
            ):
                continue
            planned = self._round_trip_messages(rewrite, question, rng)
            if planned is None:
                self._take(question, rewrite, style, "not checked: no distractor")
                return
            picked = await self._ask(question, ROUND_TRIP, planned[0], Pick)
            if picked is None:
                return
            if picked.choice.strip().upper()[:1] == planned[1]:
                self._take(question, rewrite, style, "passed" if not attempt else "passed on retry")
                return
        self._keep(question, "failed: template kept")

    async def _ask(
        self, question: Question, metric: str, messages: list[dict[str, str]], schema: Any
    ) -> Any:
        """The judge's reply, or None when there is none: a dry run's planned call, the
        budget reached or a judge error (the template is kept, and the verdict says why)."""
        try:
            return (await self.judge.ask(metric, messages, schema)).value
        except DryRunSkip:
            self.counts.verdicts["dry run"] += 1
        except BudgetExceeded:
            self._keep(question, "budget exceeded: template kept")
        except JudgeError:
            self._keep(question, "judge error: template kept")
        return None

    def _take(self, question: Question, text: str, style: str, verdict: str) -> None:
        question.text = text
        question.wording = style
        question.round_trip = verdict
        self.counts.styles[style] += 1
        self.counts.verdicts[verdict] += 1

    def _keep(self, question: Question, verdict: str) -> None:
        question.round_trip = verdict
        self.counts.verdicts[verdict] += 1


async def averbalize(
    generation: Generation, judge: Any, styles: Sequence[str] = tuple(STYLES)
) -> WordingCounts:
    """Reword every question of a generation with the judge (see the module docstring)."""
    for style in styles:
        if style not in STYLES:
            raise ValueError(f"unknown style {style!r} (known: {', '.join(STYLES)})")
    wording = _Wording(generation, judge, styles, generation.seed)
    await asyncio.gather(*(wording.word(q) for q in generation.questions))
    texts: set[str] = set()
    for question in generation.questions:  # a rewrite that repeats another question's text
        if _fold(question.text) in texts and question.text != question.template_text:
            wording.counts.verdicts[str(question.round_trip)] -= 1
            wording.counts.styles[question.wording] -= 1
            question.text, question.wording = question.template_text, "template"
            question.round_trip = "duplicate text: template kept"
            wording.counts.verdicts[question.round_trip] += 1
        texts.add(_fold(question.text))
    wording.counts.verdicts += Counter()  # drop zero counts
    wording.counts.styles += Counter()
    return wording.counts


def verbalize(
    generation: Generation, judge: Any, styles: Sequence[str] = tuple(STYLES)
) -> WordingCounts:
    """``averbalize`` run to completion."""
    return asyncio.run(averbalize(generation, judge, styles))


@dataclass(frozen=True)
class WordingBatch:
    """``--batch`` for ``--verbalize llm``: the judge's config, the cache that holds the
    batches, ``--no-wait``, the poll interval and where the batch lines go."""

    config: Any
    cache: str | bool | None = True
    no_wait: bool = False
    poll: float = 1.0
    report: Callable[[str], None] | None = None


async def aprefill_wording(
    generation: Generation, batch: WordingBatch, styles: Sequence[str] = tuple(STYLES)
) -> Any:
    """Fill the reply cache through the Batch API for :func:`averbalize` of ``generation``
    (the module docstring says how); returns the ``BatchReport``. The questions are left as
    they were."""
    from ..run.prefill import abatch_rounds

    async def plan(planner: Any) -> None:
        saved = [(q.text, q.wording, q.round_trip) for q in generation.questions]
        try:
            await averbalize(generation, planner, styles)
        finally:
            for question, (text, wording, verdict) in zip(generation.questions, saved):
                question.text, question.wording, question.round_trip = text, wording, verdict

    return await abatch_rounds(
        plan,
        config=batch.config,
        cache=batch.cache,
        no_wait=batch.no_wait,
        poll=batch.poll,
        report=batch.report,
    )
