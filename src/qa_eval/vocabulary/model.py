"""The metric vocabulary's types: a result key (``Key``), a config option (``Option``) and a
metric family (``Metric``), with the words they use for direction, scale and needs.

This package imports nothing of qa-eval's: every layer may read it. Its classes are frozen
dataclasses whose ``__init__`` is written here (``frozen``), not generated at import.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

from .frozen import Frozen, frozen

# The words below are type aliases written as text (``TypeAlias``, as ``run.execute.Questions``):
# a ``Literal`` made at import costs a fresh process's first run about 0.1 M instructions each.
Direction: TypeAlias = 'Literal["higher", "lower", "none"]'
Scale: TypeAlias = (
    'Literal["0-1", "cosine", "ratio", "count", "tokens", "usd", "seconds", "label", "text"]'
)
"""What a key's values are: ``0-1`` a score from 0 to 1; ``cosine`` a mean cosine, from -1 to 1
(``answer_relevance``: ragas' AnswerRelevancy, below 0 when the questions generated from the
answer point away from the question); ``ratio`` non-negative, not bounded by 1; ``count``,
``tokens``, ``usd``, ``seconds``; ``label`` a class; ``text``."""
Need: TypeAlias = """Literal[
    "question",
    "answer",
    "reference_answer",
    "reference_topics",
    "contexts",
    "steps",
    "judge",
    "embedder",
    "reference_trajectory",
]"""


@frozen
class Key(Frozen):
    """One result key a metric family writes."""

    name: str
    direction: Direction = "none"
    scale: Scale = "text"
    aggregate: bool = False
    """Whether ``compute_aggregates`` summarises it (sum, mean, median, min, max, n)."""
    headline: int = 0
    """Its position among the headline scores of the summary and the report (0: not one)."""
    labels: tuple[str, ...] = ()
    """For a label key: the labels counted first by the aggregates (others follow)."""
    always: bool = False
    """Aggregated even when no question has it (all zeros)."""
    errors: tuple[str, ...] = ()
    """The error keys that mean its value failed (default: ``<key>_error`` when the family
    declares it, else ``<family>_error`` when declared); the aggregates count them as
    ``failed``."""
    own: bool = False
    """qa-eval's own key: graphrag-eval 6.6.1 does not write it (``keys="graphrag-eval"``
    leaves it out; docs/compatibility.md lists it)."""

    def __init__(
        self,
        name: str,
        direction: Direction = "none",
        scale: Scale = "text",
        aggregate: bool = False,
        headline: int = 0,
        labels: tuple[str, ...] = (),
        always: bool = False,
        errors: tuple[str, ...] = (),
        own: bool = False,
    ) -> None:
        # The fields in order, as @dataclass would write them (see qa_eval.vocabulary.frozen);
        # into the instance's dictionary: it is frozen to assignment.
        fields = self.__dict__
        fields["name"] = name
        fields["direction"] = direction
        fields["scale"] = scale
        fields["aggregate"] = aggregate
        fields["headline"] = headline
        fields["labels"] = labels
        fields["always"] = always
        fields["errors"] = errors
        fields["own"] = own


@frozen
class Option(Frozen):
    """A setting of a metric's config block besides ``enabled``; ``check`` names the reader in
    ``config.py`` (``config.CHECKS``) that validates it."""

    name: str
    check: str
    doc: str = ""

    def __init__(self, name: str, check: str, doc: str = "") -> None:
        # The fields in order, as @dataclass would write them (see qa_eval.vocabulary.frozen);
        # into the instance's dictionary: it is frozen to assignment.
        fields = self.__dict__
        fields["name"] = name
        fields["check"] = check
        fields["doc"] = doc


@frozen
class Metric(Frozen):
    """One metric family."""

    name: str
    summary: str
    needs: tuple[Need, ...]
    keys: tuple[Key, ...]
    doc: str
    default: bool = True
    switch: bool = True
    """Whether it is a config switch (``--enable`` / ``--disable``)."""
    groups: tuple[str, ...] = ()
    options: tuple[Option, ...] = ()
    step: str | None = None
    """Its keys are written into the actual steps of this name, not into the result."""
    prefix: bool = True
    """Custom metrics may not use ``<name>`` nor ``<name>_...`` as output names."""
    score: str | None = None
    """``"module:function"`` of its ``async (judge, inputs, options) -> Output`` entry point,
    which ``run.score`` schedules by ``needs`` (see docs/adding-a-metric.md)."""
    aliases: tuple[str, ...] = ()
    """Keys its error is also written under (graphrag-eval's ``answer_eval_error``)."""
    derived: bool = False
    """Computed after the question's other metrics, from their values (``inputs["scores"]``)."""
    calls: int = 1
    """Judge calls it makes per question, for the progress display's estimate."""
    own: bool = False
    """A family graphrag-eval 6.6.1 does not have: every key of it is qa-eval's own."""
    judge_only_for: str = ""
    """When set, the family runs without a judge and asks one only for this (``trajectory``:
    its ``$llm`` comparators): ``"judge"`` stays in ``needs`` so that ``run.score`` schedules
    it with a judge, but ``qa-eval metrics`` does not say it needs one."""

    def __init__(
        self,
        name: str,
        summary: str,
        needs: tuple[Need, ...],
        keys: tuple[Key, ...],
        doc: str,
        default: bool = True,
        switch: bool = True,
        groups: tuple[str, ...] = (),
        options: tuple[Option, ...] = (),
        step: str | None = None,
        prefix: bool = True,
        score: str | None = None,
        aliases: tuple[str, ...] = (),
        derived: bool = False,
        calls: int = 1,
        own: bool = False,
        judge_only_for: str = "",
    ) -> None:
        # The fields in order, as @dataclass would write them (see qa_eval.vocabulary.frozen);
        # into the instance's dictionary: it is frozen to assignment.
        fields = self.__dict__
        fields["name"] = name
        fields["summary"] = summary
        fields["needs"] = needs
        fields["keys"] = keys
        fields["doc"] = doc
        fields["default"] = default
        fields["switch"] = switch
        fields["groups"] = groups
        fields["options"] = options
        fields["step"] = step
        fields["prefix"] = prefix
        fields["score"] = score
        fields["aliases"] = aliases
        fields["derived"] = derived
        fields["calls"] = calls
        fields["own"] = own
        fields["judge_only_for"] = judge_only_for

    @property
    def judged(self) -> bool:
        """Whether it needs the judge."""
        return "judge" in self.needs

    @property
    def offline(self) -> bool:
        """Whether it runs without a judge."""
        return "judge" not in self.needs
