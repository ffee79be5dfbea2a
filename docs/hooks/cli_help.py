"""The docs' option lists, made from the real parsers: `<!-- help: crawl -->` on a line of its
own becomes `crawlscope crawl --help` as the command prints it, so an option is never typed
twice. `<!-- help: -->` is the top-level help. A name that is no command stops the build."""

from __future__ import annotations

import os
import re
from typing import Any

from crawlscope.cli import build_parser
from crawlscope.cli.options import subcommands

MARKER = re.compile(r"^<!-- help: ([\w-]*) -->$", re.M)
WIDTH = 100  # the help's width whatever terminal builds the docs


def help_text(command: str) -> str:
    parser = build_parser()
    if command:
        commands = subcommands(parser)
        if command not in commands:
            raise KeyError(f"no command {command!r} to document; known: {', '.join(commands)}")
        parser = commands[command]
    # argparse wraps its help to $COLUMNS (shutil.get_terminal_size): pinned for the build.
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(WIDTH)
    try:
        return parser.format_help()
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before


def fill(markdown: str) -> str:
    return MARKER.sub(lambda m: "```text\n" + help_text(m.group(1)).rstrip() + "\n```", markdown)


def on_page_markdown(markdown: str, **_: Any) -> str:
    return fill(markdown)
