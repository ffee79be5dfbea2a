"""`crawlscope completion SHELL`: the shell's completion script, by shtab."""

from __future__ import annotations

import argparse

from .options import subcommands


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    completion = sub.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh or fish)",
        description="Print the completion script for SHELL; docs/crawling.md says where it goes.",
    )
    completion.add_argument("shell", choices=("bash", "zsh", "fish"), metavar="SHELL")


def completion_script(parser: argparse.ArgumentParser, shell: str) -> str:
    """The shell's completion script for every command and option, by shtab."""
    import shtab

    for command in [parser, *subcommands(parser).values()]:
        for action in command._actions:
            if action.metavar in ("FILE", "PATH"):  # complete them as file names
                action.complete = shtab.FILE  # type: ignore[attr-defined]
    return shtab.complete(parser, shell=shell)
