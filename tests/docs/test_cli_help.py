"""The docs' option lists are the parsers' own --help (docs/hooks/cli_help.py)."""

from __future__ import annotations

import pytest
from docs_support import DOCS, hook

from crawlscope.cli import build_parser
from crawlscope.cli.options import subcommands

cli_help = hook("cli_help")

KNOWN = {
    "crawl": "--max-pages N",
    "tui": "--fps N",
    "lecture": "--headless",
    "replay": "FILE",
    "export": "--trace OUT",
    "why": "URL",
    "demo-site": "--port",
    "attach": "--read-only",
    "serve": "--max-viewers N",
    "completion": "SHELL",
}


def test_every_command_has_a_known_option_here() -> None:
    assert set(KNOWN) == set(subcommands(build_parser()))


@pytest.mark.parametrize("command", sorted(KNOWN))
def test_a_commands_help_is_its_parsers(command: str) -> None:
    text = cli_help.help_text(command)
    assert text.startswith(f"usage: crawlscope {command}")
    assert KNOWN[command] in text
    # The width is the build's, not the terminal's that runs it.
    assert max(len(line) for line in text.splitlines()) <= cli_help.WIDTH


def test_every_command_is_on_a_page() -> None:
    pages = "\n".join(page.read_text() for page in DOCS.glob("*.md"))
    assert set(cli_help.MARKER.findall(pages)) >= set(KNOWN)


def test_a_marker_becomes_the_help_and_an_unknown_command_stops_the_build() -> None:
    filled = cli_help.fill("before\n<!-- help: crawl -->\nafter\n")
    assert "```text\nusage: crawlscope crawl" in filled and "<!--" not in filled
    with pytest.raises(KeyError, match="no command 'crawlz'"):
        cli_help.fill("<!-- help: crawlz -->\n")
