"""A command's function named by its module, imported when the command runs: building the
parser (``qa-eval --help``) imports no command."""

from __future__ import annotations

import argparse
from importlib import import_module

__all__ = ["Handler"]


class Handler:
    """A command's function, named by its module and imported when the command runs: building
    the parser (``qa-eval --help``) imports no command."""

    def __init__(self, module: str, name: str) -> None:
        self.module = module
        self.name = name

    def __call__(self, args: argparse.Namespace) -> int:
        """Run the command."""
        function = getattr(import_module(f"{__package__}.{self.module}"), self.name)
        return int(function(args))

    def __repr__(self) -> str:
        return f"<command {self.module}.{self.name}>"
