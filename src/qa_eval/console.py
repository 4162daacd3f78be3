"""Terminal output with rich: the run's progress display and tables that fit the terminal.

- :class:`ProgressDisplay`: judge calls done of planned (with tokens and cost so far) and questions
  done, each with its rate's time left, redrawn in place on a terminal; the columns it shows are
  chosen so that every line fits the terminal's width. It draws nothing when its stream is not a
  terminal.
- :func:`render_table`: a plain-text table (no colours) that fits a width: columns whose cells are
  all empty and rows with no value are left out; when the columns do not fit side by side, they
  go into several blocks one under the other, each repeating the first column (cells fold only
  when one column alone is wider than the terminal). Without a width, the table keeps its natural
  width (output to a file or a pipe).
"""

from __future__ import annotations

import io
import shutil
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.measure import Measurement
from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from .runner import RunProgress

__all__ = ["ProgressDisplay", "render_table", "terminal_width"]

_RULE = box.Box("    \n    \n -  \n    \n    \n    \n    \n    \n", ascii=True)
"""A header underlined with dashes, columns two spaces apart, nothing else."""
_GAP = 3
"""Columns are 3 characters apart (a space of padding on each side and the rule's gap)."""


def terminal_width(stream: TextIO) -> int | None:
    """The width of the terminal ``stream`` writes to; None when it is not a terminal."""
    try:
        if not stream.isatty():
            return None
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return None
    return shutil.get_terminal_size().columns


def _text(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 100 else f"{value:.1f}"
    return str(value)


def render_table(
    headers: Sequence[str], rows: Sequence[Sequence[Any]], width: int | None = None
) -> str:
    """A plain-text table of ``rows`` under ``headers``, numbers right-aligned, None shown as
    ``-``; fits ``width`` columns when given (see the module docstring)."""
    keep = [0] + [
        c for c in range(1, len(headers)) if not rows or any(r[c] is not None for r in rows)
    ]
    kept_rows = [r for r in rows if len(keep) == 1 or any(r[c] is not None for c in keep[1:])]
    cells = [[_text(r[c]) for c in keep] for r in kept_rows]
    names = [headers[c] for c in keep]
    widest = [max((cell_len(row[i]) for row in cells), default=0) for i in range(len(names))]
    natural = [max(widest[i], cell_len(names[i])) for i in range(len(names))]
    # The header may wrap at its spaces; a value never folds unless one column alone is too wide.
    compact = [
        max(widest[i], *(cell_len(word) for word in names[i].split() or [""]))
        for i in range(len(names))
    ]
    blocks = [list(range(1, len(names)))]
    sizes = list(natural)
    if width is not None and natural[0] + sum(w + _GAP for w in natural[1:]) > width:
        sizes = list(compact)
        sizes[0] = min(natural[0], max(compact[0], 8), max(8, width // 3))
        blocks = []
        current: list[int] = []
        used = sizes[0]
        for i in range(1, len(names)):
            if current and used + _GAP + compact[i] > width:
                blocks.append(current)
                current, used = [], sizes[0]
            current.append(i)
            used += _GAP + compact[i]
        blocks.append(current)
        for block in blocks:  # room left in a block: headers on fewer lines
            spare = width - sizes[0] - sum(sizes[i] + _GAP for i in block)
            for i in block:
                grow = min(spare, natural[i] - sizes[i])
                if grow > 0:
                    sizes[i] += grow
                    spare -= grow
    out = io.StringIO()
    console = Console(
        file=out,
        width=width or 100_000,  # without a width, the natural width: nothing is folded
        color_system=None,
        force_terminal=False,
        legacy_windows=False,
        emoji=False,
        highlight=False,
        markup=False,
    )
    for number, block in enumerate(blocks):
        table = Table(box=_RULE, show_edge=False, pad_edge=False, padding=(0, 1), header_style="")
        table.add_column(names[0], overflow="fold", width=sizes[0])
        for i in block:
            table.add_column(names[i], justify="right", overflow="fold", width=sizes[i])
        for row in cells:
            table.add_row(*(row[i] for i in (0, *block)))
        if number:
            console.print()
        console.print(table)
    return "\n".join(line.rstrip() for line in out.getvalue().rstrip("\n").split("\n"))


class _Count(ProgressColumn):
    """``done/total`` with thousands separators."""

    def render(self, task: Task) -> Text:
        total = f"{task.total:,.0f}" if task.total is not None else "?"
        return Text(f"{task.completed:,.0f}/{total}", justify="right")


class _Detail(ProgressColumn):
    """The task's ``detail`` field (tokens and cost, for the judge's row)."""

    def render(self, task: Task) -> Text:
        return Text(str(task.fields.get("detail", "")))


class _FittingProgress(Progress):
    """A rich ``Progress`` whose columns are the richest set whose table fits the console."""

    def __init__(self, layouts: list[tuple[ProgressColumn | str, ...]], console: Console) -> None:
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
        if console is None and enabled is not False:
            if terminal_width(stream) is None:
                enabled = False
            else:
                console = Console(file=stream)
        self.enabled = enabled is not False and console is not None
        self.console = console
        self.delay = delay
        self.label = label
        self.start = time.monotonic()
        self._progress: _FittingProgress | None = None
        self._calls: Any = None
        self._questions: Any = None

    def _begin(self, judge: bool) -> None:
        assert self.console is not None

        def name() -> TextColumn:
            return TextColumn("{task.description}")

        def eta() -> tuple[TextColumn, TimeRemainingColumn]:
            return TextColumn("ETA"), TimeRemainingColumn()

        layouts: list[tuple[ProgressColumn | str, ...]] = [
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
