"""What a run reports while it works: questions done, judge asks done and planned, tokens, cost.

``RunProgress`` is what ``on_progress`` receives; ``Tracker`` counts and estimates, and a
``CountingJudge``, one question's view of the run's judge, counts the asks of its metrics (for the
question, and in all).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeAlias

from ..vocabulary.frozen import Mutable, mutable

if TYPE_CHECKING:  # the judge side (pydantic, the metrics) is imported only when a run uses it
    from ..judge.calls import AskContext, Judge

__all__ = ["ProgressCallback", "ResultCallback", "RunProgress", "StatusCallback"]

# The callbacks' types are aliases written as text (``TypeAlias``): a ``Callable[...]`` made at
# import costs a fresh process's first run about 0.08 M instructions each.
ProgressCallback: TypeAlias = "Callable[[int, int], None]"
"""Called as ``progress(done, total)`` after each question."""
ResultCallback: TypeAlias = "Callable[[dict[str, Any]], None]"
"""Called with each question's finished result, in the order questions finish."""


@mutable
class RunProgress(Mutable):
    """What a run has done so far, as ``on_progress`` receives it (about ten times a second, and
    at the end). Judge calls are counted as asks (a cached reply counts; a retried or re-asked
    call counts once); ``calls_planned`` is an estimate, refined as questions are scheduled and
    finished (never below the asks already started)."""

    questions_done: int
    questions_total: int
    calls_done: int = 0
    calls_planned: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    judge: bool = False

    def __init__(
        self,
        questions_done: int,
        questions_total: int,
        calls_done: int = 0,
        calls_planned: int = 0,
        cached: int = 0,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        cost: float | None = None,
        judge: bool = False,
    ) -> None:
        # The fields in order, as @dataclass would write it (see qa_eval.vocabulary.frozen).
        self.questions_done = questions_done
        self.questions_total = questions_total
        self.calls_done = calls_done
        self.calls_planned = calls_planned
        self.cached = cached
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens
        self.cost = cost
        self.judge = judge


StatusCallback: TypeAlias = "Callable[[RunProgress], None]"


class Tracker:
    """Counts the finished questions and the judge's asks, and estimates the asks to come: each
    question sent to the scorer is expected to ask once per judge metric that applies to it
    (``AnswerScorer.expected_asks``), the questions not read yet as many as those read so far on
    average, all of it scaled by how many asks the finished questions made for what they were
    expected to (re-asks, shared duplicate calls, metrics that needed no call)."""

    def __init__(
        self,
        judge: Judge | None,
        progress: ProgressCallback | None,
        on_progress: StatusCallback | None,
    ) -> None:
        self.judge = judge
        self.progress = progress
        self.on_progress = on_progress
        self.total = 0
        self.done = 0
        self.produced = 0
        self.expected = 0
        self.finished_expected = 0
        self.finished_asks = 0
        self.asks_started = 0
        self.asks_done = 0
        self.last = 0.0

    def finished(self, asks: int | None, expected: int = 0) -> None:
        self.done += 1
        if asks is not None:
            self.finished_asks += asks
            self.finished_expected += expected
        if self.progress is not None:
            self.progress(self.done, self.total)
        if self.on_progress is not None:
            now = time.monotonic()
            if now - self.last >= 0.1 or self.done == self.total:
                self.report(now)

    def planned(self) -> int:
        if not self.produced:
            return self.asks_started
        expected = self.expected + (self.total - self.produced) * self.expected / self.produced
        if self.finished_expected:
            expected *= self.finished_asks / self.finished_expected
        return max(self.asks_started, round(expected))

    def report(self, now: float | None = None) -> None:
        if self.on_progress is None:
            return
        self.last = time.monotonic() if now is None else now
        status = RunProgress(self.done, self.total)
        judge = self.judge
        if judge is not None:
            total = judge.total
            status.judge = True
            status.calls_done = self.asks_done
            status.calls_planned = self.planned()
            status.cached = total.cached
            status.prompt_tokens = total.prompt_tokens
            status.completion_tokens = total.completion_tokens
            status.cost = total.cost if total.cost_known else None
        self.on_progress(status)


class CountingJudge:
    """The run's judge as one question's metrics see it: every ask counted, for the question
    (``question_asks``) and for the progress display (the tracker's); everything else is the
    judge's own."""

    def __init__(self, judge: Judge, tracker: Tracker) -> None:
        self._judge = judge
        self._tracker = tracker
        self.question_asks = 0
        """The asks this question's metrics made."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self._judge, name)

    async def ask(
        self,
        metric: str,
        messages: list[dict[str, str]],
        schema: Any,
        context: AskContext | None = None,
    ) -> Any:
        """``Judge.ask`` (in ``context``, if given), counted."""
        self.question_asks += 1
        self._tracker.asks_started += 1
        try:
            if context is None:
                return await self._judge.ask(metric, messages, schema)
            return await self._judge.ask(metric, messages, schema, context)
        finally:
            self._tracker.asks_done += 1
