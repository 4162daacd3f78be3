"""What several commands share: the program name, the CI gates' outcome and the checks of the
files they write."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError

if TYPE_CHECKING:  # (the parser reads PROG here: ``--help`` loads no gate)
    from . import gates as quality

__all__ = ["PROG", "check_report_paths", "gate_outcome", "print_notes"]

PROG = "qa-eval"


def check_report_paths(args: Any) -> None:
    """Fail before a long run on a JUnit or Markdown path that cannot be written."""
    for path in (getattr(args, "junit", None), getattr(args, "summary_md", None)):
        if path is None:
            continue
        file = Path(path)
        if file.is_dir():
            raise InputError("is a directory, not a file", source=path)
        if not file.parent.is_dir():
            raise InputError("the folder does not exist", source=path)


def gate_outcome(gates: Sequence[quality.Gate], quiet: bool) -> int:
    """Print each gate (failed ones even when quiet) on stderr; 3 when one failed, else 0."""
    for gate in gates:
        if not gate.passed or not quiet:
            print(gate.line(), file=sys.stderr)
    failed = sum(not gate.passed for gate in gates)
    if failed:
        print(f"{PROG}: {failed} of {len(gates)} quality gate(s) failed", file=sys.stderr)
        return 3
    return 0


def print_notes(notes: Sequence[str]) -> None:
    """Each note on stderr, after a command succeeded."""
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
