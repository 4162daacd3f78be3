"""The run's progress on a terminal (rich), redrawn in place.

:class:`ProgressDisplay` shows judge calls done of planned (with tokens and cost so far) and
questions done, each with its rate's time left; the columns it shows are chosen so that every line
fits the terminal's width. It draws nothing when its stream is not a terminal. :class:`Progress`
is the callback a run takes (``progress=`` and ``on_progress=``).

rich is imported when the display starts drawing (half a second into a run, on a terminal), not
when a run starts: a judge's first request leaves without it.
"""

from __future__ import annotations

import functools
import shutil
import time
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from rich.console import Console

    from ..run.progress import RunProgress

__all__ = ["Progress", "ProgressDisplay", "terminal_width"]


def terminal_width(stream: TextIO) -> int | None:
    """The width of the terminal ``stream`` writes to; None when it is not a terminal."""
    try:
        if not stream.isatty():
            return None
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return None
    return shutil.get_terminal_size().columns


@functools.cache
def _rich_parts() -> tuple[Any, Any, Any]:
    """The display's own rich classes (``_Count``, ``_Detail``, ``_FittingProgress``), made
    when it first draws."""
    from rich.measure import Measurement
    from rich.progress import Progress as RichProgress
    from rich.progress import ProgressColumn, Task
    from rich.table import Table
    from rich.text import Text

    class _Count(ProgressColumn):
        """``done/total`` with thousands separators."""

        def render(self, task: Task) -> Text:
            total = f"{task.total:,.0f}" if task.total is not None else "?"
            return Text(f"{task.completed:,.0f}/{total}", justify="right")

    class _Detail(ProgressColumn):
        """The task's ``detail`` field (tokens and cost, for the judge's row)."""

        def render(self, task: Task) -> Text:
            return Text(str(task.fields.get("detail", "")))

    class _FittingProgress(RichProgress):
        """A rich ``Progress`` whose columns are the richest set whose table fits the
        console."""

        def __init__(self, layouts: list[tuple[ProgressColumn | str, ...]], console: Any) -> None:
            self.layouts = layouts
            self._target = console
            super().__init__(*layouts[0], console=console, refresh_per_second=8)

        def make_tasks_table(self, tasks: Any) -> Table:
            tasks = list(tasks)
            console = self._target
            width = console.width
            for layout in self.layouts:
                self.columns = layout
                table = super().make_tasks_table(tasks)
                unbounded = console.options.update(max_width=100_000)
                if Measurement.get(console, unbounded, table).maximum <= width:
                    return table
            return table

    return _Count, _Detail, _FittingProgress


def _tokens(n: int) -> str:
    if n < 10_000:
        return f"{n:,}"
    if n < 10_000_000:
        return f"{n / 1000:,.0f}k"
    return f"{n / 1e6:,.1f}M"


class ProgressDisplay:
    """Redraws a run's progress in place on a terminal (rich); nothing when ``stream`` is not a
    terminal or ``enabled`` is False. The display starts once the run has lasted ``delay``
    seconds, so short runs print nothing."""

    def __init__(
        self,
        stream: TextIO,
        *,
        label: str = "questions",
        enabled: bool | None = None,
        console: Console | None = None,
        delay: float = 0.5,
    ) -> None:
        if console is None and enabled is not False and terminal_width(stream) is None:
            enabled = False
        self.enabled = enabled is not False
        self.console = console
        self.stream = stream
        self.delay = delay
        self.label = label
        self.start = time.monotonic()
        self._progress: Any = None
        self._calls: Any = None
        self._questions: Any = None

    def _begin(self, judge: bool) -> None:
        from rich.progress import BarColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        if self.console is None:
            from rich.console import Console

            self.console = Console(file=self.stream)
        _Count, _Detail, _FittingProgress = _rich_parts()

        def name() -> TextColumn:
            return TextColumn("{task.description}")

        def eta() -> tuple[TextColumn, TimeRemainingColumn]:
            return TextColumn("ETA"), TimeRemainingColumn()

        layouts: list[tuple[Any, ...]] = [
            (name(), BarColumn(bar_width=24), _Count(), _Detail(), TimeElapsedColumn(), *eta()),
            (name(), BarColumn(bar_width=12), _Count(), _Detail(), *eta()),
            (name(), _Count(), _Detail(), *eta()),
            (name(), BarColumn(bar_width=10), _Count(), *eta()),
            (name(), _Count(), *eta()),
            (name(), _Count(), TimeRemainingColumn()),
            (_Count(),),
        ]
        self._progress = _FittingProgress(layouts, self.console)
        if judge:
            self._calls = self._progress.add_task("judge calls", total=None, detail="")
        self._questions = self._progress.add_task(self.label, total=None, detail="")

    def update(self, status: RunProgress) -> None:
        """Show what the run has done so far."""
        if not self.enabled:
            return
        starting = self._progress is None
        if starting:
            if time.monotonic() - self.start < self.delay:
                return
            self._begin(bool(status.judge))
        progress = self._progress
        assert progress is not None
        if self._calls is not None:
            detail = f"{_tokens(status.prompt_tokens + status.completion_tokens)} tokens"
            if status.cost is not None:
                detail += f", ${status.cost:.4f}"
            if status.cached:
                detail += f", {status.cached:,} cached"
            progress.update(
                self._calls,
                completed=status.calls_done,
                total=max(status.calls_planned, status.calls_done, 1),
                detail=detail,
            )
        progress.update(
            self._questions,
            completed=status.questions_done,
            total=max(status.questions_total, 1),
        )
        if starting:
            progress.start()

    def close(self) -> None:
        """Stop redrawing; the last state stays on the screen."""
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


class Progress:
    """The run's progress on a terminal, redrawn in place (rich): judge calls done of planned with
    tokens and cost so far, questions done, time elapsed and left; every line fits the terminal.
    Silent when the stream is not a terminal (or ``enabled`` is False)."""

    def __init__(
        self,
        stream: TextIO,
        label: str = "questions",
        enabled: bool | None = None,
        console: Any = None,
    ) -> None:
        self.display = ProgressDisplay(stream, label=label, enabled=enabled, console=console)

    def __call__(self, done: int, total: int) -> None:
        """Show ``done`` of ``total`` questions (the ``progress`` callback of a run)."""
        from ..run.progress import RunProgress

        self.display.update(RunProgress(done, total))

    def update(self, status: Any) -> None:
        """Show a ``RunProgress`` (the ``on_progress`` callback of a run)."""
        self.display.update(status)

    def close(self) -> None:
        """Stop redrawing; the last state stays on the screen."""
        self.display.close()
