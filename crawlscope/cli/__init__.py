"""The `crawlscope` command: the TUI by default, a headless crawl, or the demo site.

One module per command, each with `add_parser` and `main`. Building the parsers imports
neither Textual nor the crawler: `--version`, `--help` and a headless crawl never load
the screen, and a command that draws imports it once it is about to."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Sequence
from importlib import metadata

from crawlscope.engine.sites.demo_config import DemoConfig

from . import attach, completion, crawl, demo, export, lecture, replay, serve, tui, why
from .common import EXIT_CLOSED_PIPE, fail, has_terminal, run
from .crawl_plan import add_plan_options
from .options import (
    ConfigFileError,
    OneLineErrors,
    add_config_option,
    parse_command_line,
    subcommands,
    take_roots,
)

NO_TERMINAL = (
    "crawlscope: no terminal, so no TUI: running a headless crawl of the demo site instead "
    "(crawlscope crawl URL for your own)"
)

COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "tui": tui.main,
    "lecture": lecture.main,
    "crawl": crawl.main,
    "replay": replay.main,
    "demo-site": demo.main,
    "attach": attach.main,
    "serve": serve.main,
    "export": export.main,
    "why": why.main,
}


def build_parser() -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = OneLineErrors(  # its subcommands are of its class
        prog="crawlscope",
        description="An asyncio web crawler you can watch think. With no command, "
        "open the live TUI on the built-in demo site.",
    )
    parser.add_argument("--version", action="version", version=f"crawlscope {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in (tui, lecture, crawl, replay, export, why, demo, attach, serve, completion):
        command.add_parser(sub)
    for command_parser in subcommands(parser).values():
        add_config_option(command_parser)
    return parser


def version() -> str:
    try:
        return metadata.version("crawlscope")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    try:
        code = _main(argv)
    except BrokenPipeError:
        code = EXIT_CLOSED_PIPE
    if code == EXIT_CLOSED_PIPE:
        _drop_stdio()
    return code


def _drop_stdio() -> None:
    """A reader of stdout or stderr went away: what is left for them goes nowhere, so the
    interpreter's last flush at exit cannot complain about the closed pipe either."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, OSError, ValueError):
            os.dup2(devnull, stream.fileno())
    os.close(devnull)


def _main(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")):
        # No command: the TUI on the demo site, taking any crawl or demo options given.
        # Without a terminal to draw on (a pipe, CI), the same demo crawl runs headless.
        if has_terminal() or "--screenshot" in argv:
            argv = ["tui", *argv]
        else:
            demo_parser = OneLineErrors(prog="crawlscope", help_command="crawlscope tui")
            add_plan_options(demo_parser, demo=DemoConfig())
            add_config_option(demo_parser)
            try:
                args = parse_command_line(demo_parser, argv)
            except ConfigFileError as exc:
                return fail(str(exc))
            # Said first: a user who typed `crawlscope` in CI or into a pipe expected a
            # screen, and should learn at once why a report comes instead.
            print(NO_TERMINAL, file=sys.stderr, flush=True)
            return run(lambda: crawl.crawl_demo(args))
    parser = build_parser()
    try:
        args = parse_command_line(parser, argv)
    except ConfigFileError as exc:
        return fail(str(exc))
    if hasattr(args, "roots"):
        args.roots = take_roots(args.roots, sys.stderr)
    if args.command == "completion":
        print(completion.completion_script(parser, args.shell), end="")
        return 0
    return COMMANDS[args.command](args)
