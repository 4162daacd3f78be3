"""What a run's judge calls will be before it runs: a dry run's count per metric
(``JudgeCallPlan``) and a sample's scaled to the whole run (``JudgeEstimate``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    pass

__all__ = ["JudgeCallPlan", "JudgeEstimate"]


@dataclass(frozen=True)
class JudgeCallPlan:
    """The judge calls a run makes (a dry run's count), per metric: calls to make, replies
    already cached, estimated prompt and completion tokens; costs at the judge's price (at batch
    rates with ``batch``), None when its price is unknown."""

    system: str | None
    model: str
    price: Mapping[str, float] | None
    calls: Mapping[str, int]
    cached: Mapping[str, int]
    prompt_tokens: Mapping[str, int]
    completion_tokens: Mapping[str, int]
    batch: bool = False

    @classmethod
    def of(cls, judge: Any, system: str | None = None, batch: bool = False) -> JudgeCallPlan:
        """The plan a dry-run :class:`~qa_eval.judge.calls.Judge` recorded."""
        plan = judge.plan
        return cls(
            system,
            judge.gen.model,
            judge.price,
            dict(plan.calls),
            dict(plan.cached),
            dict(plan.prompt_tokens),
            dict(plan.completion_tokens),
            batch,
        )

    @property
    def metrics(self) -> list[str]:
        """The metrics that call the judge, sorted."""
        return sorted(set(self.calls) | set(self.cached))

    @property
    def total_calls(self) -> int:
        """The calls to make (cached replies not counted)."""
        return sum(self.calls.values())

    def cost(self, metric: str | None = None) -> float | None:
        """The estimated cost in US dollars of one metric's calls (all with None)."""
        from ..judge.prices import usd

        if metric is None:
            p, c = sum(self.prompt_tokens.values()), sum(self.completion_tokens.values())
        else:
            p, c = self.prompt_tokens.get(metric, 0), self.completion_tokens.get(metric, 0)
        return usd(self.price, p, c, batch=self.batch)


@dataclass(frozen=True)
class JudgeEstimate:
    """The judge calls and cost of a whole run, from a dry run of its first ``sampled`` of
    ``questions`` questions scaled to all (cached replies not counted)."""

    model: str
    provider: str
    sampled: int
    questions: int
    sample_calls: int
    sample_cost: float | None

    @property
    def calls(self) -> int:
        """The estimated judge calls of the whole run."""
        return round(self.sample_calls * self._scale)

    @property
    def cost(self) -> float | None:
        """The estimated cost of the whole run in US dollars (None: no price known)."""
        return None if self.sample_cost is None else self.sample_cost * self._scale

    @property
    def _scale(self) -> float:
        return self.questions / self.sampled if self.sampled else 0.0
