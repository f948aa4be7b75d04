"""Every option of every subcommand has help text, and the help names the default when there is one
(issue 21, item 3): walks the argparse parsers that ``rebalance-lab`` builds, so a new option without help
fails here."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from rebalance_lab.cli import build_parser


def _options(parser: argparse.ArgumentParser, command: str = "rebalance-lab") -> Iterator[tuple[str, argparse.Action]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _options(sub, f"{command} {name}")
        elif not isinstance(action, argparse._HelpAction):
            yield command, action


def _has_default(action: argparse.Action) -> bool:
    """A value used when the option is not given (a flag's False or a list's [] is not one to name)."""
    if isinstance(action, argparse._StoreConstAction | argparse._AppendAction) and not action.default:
        return False
    return action.default not in (None, False, argparse.SUPPRESS)


def test_the_walk_sees_every_subcommand() -> None:
    commands = {command for command, _ in _options(build_parser())}
    assert {"rebalance-lab serve", "rebalance-lab demo", "rebalance-lab diff", "rebalance-lab export",
            "rebalance-lab replay"} <= commands


def test_every_option_of_every_subcommand_has_help_text_naming_its_default() -> None:
    missing, no_default = [], []
    for command, action in _options(build_parser()):
        name = "/".join(action.option_strings) or action.dest
        if not action.help or action.help == argparse.SUPPRESS:
            missing.append(f"{command} {name}")
        elif _has_default(action) and "default" not in action.help.lower():
            no_default.append(f"{command} {name} (default {action.default!r})")
    assert not missing, f"options without help: {missing}"
    assert not no_default, f"help that does not name the default: {no_default}"
