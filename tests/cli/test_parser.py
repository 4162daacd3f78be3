"""The parser of ``qa-eval``: every command is listed with a help line, prints its own ``--help``
and has a handler."""

from __future__ import annotations

import argparse

import pytest

from qa_eval.cli import main
from qa_eval.cli.parser import build_parser


def _commands() -> dict[str, argparse.ArgumentParser]:
    """The sub-parsers of ``qa-eval``, by command name."""
    (action,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def _help_lines() -> dict[str, str]:
    """The one-line help of each command, as the top-level ``--help`` lists it."""
    (action,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return {choice.dest: choice.help or "" for choice in action._choices_actions}


def test_every_command_has_a_help_line_and_a_handler() -> None:
    commands = _commands()
    assert "evaluate" in commands and "compare" in commands
    helps = _help_lines()
    assert set(helps) == set(commands)
    for name, parser in commands.items():
        assert helps[name].strip(), f"{name} has no help line"
        assert callable(parser.get_default("handler")), f"{name} has no handler"


def test_top_level_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    for name in _commands():
        assert f"\n    {name} " in out, f"{name} is not listed"


@pytest.mark.parametrize("name", sorted(_commands()))
def test_every_command_prints_its_help(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main([name, "--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: qa-eval {name} ")
    assert "-h, --help" in out
