"""One generation: the shapes' quotas from ``--mix``, the seeded draw of candidates, every query
executed, the quality controls applied (answerable, unambiguous, no duplicate query or question
text, entity uses), the questions written in graphrag-eval's reference format with a
``generated`` mapping each, and the report of what was made and what ran out."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import InputError
from .candidates import Candidate, Draw, Exhausted, Slot
from .canonical import canonical_query
from .entities import Entities
from .languages import phrases
from .measures import MEASURE_SHAPES
from .report import GenerationReport, ShapeReport
from .schema import PropertyUse, Schema, local_name
from .shapes import ENTITY_SHAPES
from .source import Graph
from .wording import AnswerProblem, answer_iris, answer_text, question_text, render_query

__all__ = [
    "SHAPES",
    "GenerateOptions",
    "Generation",
    "Question",
    "generate",
    "parse_mix",
    "quotas",
    "template_id",
]

SHAPES = (
    "lookup",
    "reverse_lookup",
    "two_hop",
    "three_hop",
    "count",
    "aggregate",
    "superlative",
    "comparison",
    "boolean",
    "filter",
    "intersection",
    "list",
    "unanswerable",
)
"""Every shape, in the order of the report and the output."""
_BUILDERS = {**ENTITY_SHAPES, **MEASURE_SHAPES}
_ATTEMPTS_PER_QUESTION = 25


@dataclass
class GenerateOptions:
    """A generation's options (the CLI's flags)."""

    n: int
    seed: int = 0
    shapes: Sequence[str] = SHAPES
    mix: Mapping[str, float] | None = None
    max_answers: int = 10
    max_uses_per_entity: int = 3


@dataclass
class Question:
    """One accepted question: its candidate, texts, query, result and canonical forms."""

    candidate: Candidate
    text: str
    query: str
    canonical: str
    result: dict[str, Any]
    answer: str
    id: str
    template_id: str
    wording: str = "template"
    round_trip: str | None = None
    template_text: str = ""


@dataclass
class Generation:
    """What a generation made: the questions in order and the report."""

    questions: list[Question]
    report: GenerationReport
    seed: int
    language: str
    schema: Schema = field(repr=False)
    batch: Any = None
    """The ``BatchReport`` of ``--batch`` (``--verbalize llm``), when it ran."""


def parse_mix(text: str | None, shapes: Sequence[str]) -> dict[str, float]:
    """``shape=weight,...`` -> weights (shapes not named get 0 when a mix is given)."""
    if not text:
        return {s: 1.0 for s in shapes}
    weights = {s: 0.0 for s in shapes}
    for part in text.split(","):
        name, eq, value = part.strip().partition("=")
        if name not in SHAPES:
            raise InputError(f"--mix: unknown shape {name!r} (known: {', '.join(SHAPES)})")
        if name not in shapes:
            raise InputError(f"--mix: shape {name!r} is not among --shapes")
        try:
            weight = float(value) if eq else float("nan")
        except ValueError:
            weight = float("nan")
        if not weight >= 0:
            raise InputError(f"--mix: {part.strip()!r} must be shape=weight, weight >= 0")
        weights[name] = weight
    if not sum(weights.values()) > 0:
        raise InputError("--mix: every weight is 0")
    return weights


def quotas(n: int, weights: Mapping[str, float]) -> dict[str, int]:
    """``n`` divided in proportion to the weights (largest remainders, ties in shape order)."""
    total = sum(weights.values())
    exact = {s: n * w / total for s, w in weights.items()}
    out = {s: int(v) for s, v in exact.items()}
    order = sorted(exact, key=lambda s: (-(exact[s] - out[s]), SHAPES.index(s)))
    for s in order[: n - sum(out.values())]:
        out[s] += 1
    return out


def template_id(candidate: Candidate) -> str:
    """The shape and its class/property signature, e.g. ``count__Substation__operator``."""
    return "__".join([candidate.shape, *(local_name(i) for i in candidate.signature)])


def _fold(text: str) -> str:
    return " ".join(text.casefold().split())


class _Run:
    """The state of one generation."""

    def __init__(self, graph: Graph, schema: Schema, options: GenerateOptions) -> None:
        self.graph = graph
        self.schema = schema
        self.options = options
        self.entities = Entities(graph, schema, options.seed)
        self.draw = Draw(
            schema, self.entities, options.seed, options.max_uses_per_entity, options.max_answers
        )
        self.queries: set[str] = set()
        self.texts: set[str] = set()
        self.questions: list[Question] = []
        self.labels_named: dict[str, int] = {}

    def check(self, candidate: Candidate) -> Question | str:
        """Execute a candidate and apply the controls: the question, or why it was turned
        away."""
        for named in candidate.named:
            if self.draw.uses[named.iri] >= self.options.max_uses_per_entity:
                return "entity named in max_uses_per_entity questions already"
        query = render_query(candidate, self.schema)
        canonical = canonical_query(query)
        if canonical in self.queries:
            return "duplicate query"
        text = question_text(candidate, self.schema.language)
        if _fold(text) in self.texts:
            return "duplicate question text"
        result = self.graph.run(query)
        problem = self._answerable(candidate, result)
        if problem:
            return problem
        labels = self.entities.labels(answer_iris(candidate, result))
        try:
            answer = answer_text(candidate, result, labels, self.schema.language)
        except AnswerProblem as e:
            return str(e)
        digest = hashlib.sha1(canonical.encode("utf-8")).hexdigest()[:12]
        return Question(
            candidate=candidate,
            text=text,
            query=query,
            canonical=canonical,
            result=result,
            answer=answer,
            id=f"{candidate.shape}-{digest}",
            template_id=template_id(candidate),
            template_text=text,
        )

    def _answerable(self, candidate: Candidate, result: Mapping[str, Any]) -> str | None:
        if candidate.select == "ASK":
            if bool(result.get("boolean")) != candidate.expected:
                return "yes/no answer not as drawn"
            return None
        rows = result["results"]["bindings"]
        low, high = candidate.rows or (1, None)
        if high is None:
            high = self.options.max_answers
        if len(rows) < low:
            return "empty result" if not rows else "fewer answers than the shape asks"
        if len(rows) > high:
            if candidate.control:
                return "control not empty"
            if high == self.options.max_answers:
                return "more answers than max_answers"
            if candidate.shape == "comparison":
                return "a tie"
            return "several answers (a list question)" if high == 1 else "too many answers"
        if candidate.answer == "count" and rows and rows[0].get("count", {}).get("value") == "0":
            return "empty result"
        return None

    def accept(self, question: Question) -> None:
        """Record an accepted question and what it used."""
        self.questions.append(question)
        self.queries.add(question.canonical)
        self.texts.add(_fold(question.text))
        for named in question.candidate.named:
            self.draw.uses[named.iri] += 1
            self.labels_named[named.qualified] = self.labels_named.get(named.qualified, 0) + 1
        if question.candidate.expected is not None:
            self.draw.truths[question.candidate.expected] += 1


def _try(run: _Run, shape: str, slots: list[Slot], report: ShapeReport) -> bool:
    """One attempt at a question of ``shape``: whether one was made."""
    build = _BUILDERS[shape][1]
    slot = run.draw.pick_slot(slots)
    if slot is None:
        report.ran_out = report.ran_out or _why_none(slots)
        return False
    report.attempts += 1
    try:
        made = build(run.draw, slot)
    except Exhausted:
        slot.dead = True
        return False
    checked = run.check(made) if isinstance(made, Candidate) else made
    if isinstance(checked, str):
        report.rejected[checked] += 1
        return False
    run.accept(checked)
    report.made += 1
    return True


def _why_none(slots: list[Slot]) -> str:
    if not slots:
        return "the schema has no class and property this shape fits"
    return "every entity that fits was tried or used max_uses_per_entity times"


def generate(graph: Graph, schema: Schema, options: GenerateOptions) -> Generation:
    """Generate up to ``options.n`` verified questions (fewer when the graph runs out)."""
    started = time.perf_counter()
    for shape in options.shapes:
        if shape not in SHAPES:
            raise InputError(f"unknown shape {shape!r} (known: {', '.join(SHAPES)})")
    weights = dict(options.mix) if options.mix else {s: 1.0 for s in options.shapes}
    wanted = quotas(options.n, weights)
    run = _Run(graph, schema, options)
    worded, unworded = _worded(schema)
    slots = {s: _BUILDERS[s][0](worded) for s in options.shapes}
    reports = {s: ShapeReport(wanted=wanted.get(s, 0)) for s in options.shapes}
    _fill(run, slots, reports, {s: wanted.get(s, 0) for s in options.shapes})
    short = options.n - len(run.questions)
    if short > 0:  # what one shape could not make goes to the others, in proportion
        open_shapes = {
            s: weights[s] for s in options.shapes if reports[s].ran_out is None and weights[s] > 0
        }
        if open_shapes:
            extra = quotas(short, open_shapes)
            _fill(run, slots, reports, {s: reports[s].made + extra[s] for s in open_shapes})
    report = GenerationReport(
        requested=options.n,
        seed=options.seed,
        shapes=reports,
        graph=graph.name,
        triples=graph.triples,
        let_through=dict(graph.let_through),
    )
    report.unworded = unworded
    report.labels.update(run.labels_named)
    report.entity_limit_skips = run.draw.skipped
    report.queries = graph.queries
    report.seconds = time.perf_counter() - started
    return Generation(run.questions, report, options.seed, schema.language, schema)


def _worded(schema: Schema) -> tuple[Schema, list[str]]:
    """The schema the shapes draw from: in a language other than English with templates
    (``languages``), without the properties whose word, or whose class's word, is a local name
    (no label in the language), so no question mixes languages; and those left out."""
    if schema.language.lower().split("-")[0] == "en" or phrases(schema.language) is None:
        return schema, []
    out = schema.unworded

    def named(u: PropertyUse) -> set[str]:
        return {u.property, u.subject_class, *([u.object_class] if u.object_class else [])}

    kept = [u for u in schema.uses if not named(u) & out]
    left = sorted({schema.short(i) for u in schema.uses for i in named(u) & out})
    classes = {c: info for c, info in schema.classes.items() if c not in out}
    return replace(schema, uses=kept, classes=classes), left


def _fill(
    run: _Run, slots: dict[str, list[Slot]], reports: dict[str, ShapeReport], target: dict[str, int]
) -> None:
    """Draw round-robin over the shapes until each has ``target`` questions or runs out."""
    active = [s for s in SHAPES if s in target and reports[s].made < target[s]]
    budget = {
        s: reports[s].attempts + _ATTEMPTS_PER_QUESTION * (target[s] - reports[s].made) + 20
        for s in active
    }
    while active:
        for shape in list(active):
            report = reports[shape]
            _try(run, shape, slots[shape], report)
            if report.made >= target[shape] or report.ran_out is not None:
                active.remove(shape)
            elif report.attempts >= budget[shape]:
                report.ran_out = (
                    f"{report.attempts} candidates tried, the controls turned away the rest"
                )
                active.remove(shape)
